package mysqlproxy_test

import (
	"errors"
	"fmt"
	"testing"

	mysqlc "github.com/go-mysql-org/go-mysql/mysql"

	"github.com/mycached/mycached/mysqlproxy"
)

// TestInitConnectRunsUnseen: the server runs init_connect after the login
// of every account without the privilege to skip it, before the client's
// first statement and without a word to mycached. A one-shot isolation
// level set there (directly, or by a procedure it calls) is the first
// read's; a transaction opened there holds a snapshot from the login.
// Neither may fill the cache or be answered from it. An init_connect
// that only sets variables costs nothing: the first read of a session
// still hits.
func TestInitConnectRunsUnseen(t *testing.T) {
	t.Parallel()
	m := privateDB(t)
	db := m.NewDatabase(t)
	m.Exec(t, "CREATE TABLE "+db+".t (id INT PRIMARY KEY, v INT)")
	m.Exec(t, "INSERT INTO "+db+".t VALUES (1, 0), (2, 0), (3, 0), (4, 0)")
	m.Exec(t, "CREATE PROCEDURE "+db+".next_ru() SET TRANSACTION ISOLATION LEVEL READ UNCOMMITTED")
	m.Exec(t, "CREATE USER app@'%' IDENTIFIED BY 'apppw'")
	m.Exec(t, "GRANT ALL ON "+db+".* TO app@'%'")
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr})
	root := openDB(t, rootDSN(m.Addr, db, ""))
	admin := openDB(t, rootDSN(p.addr, db, ""))
	q := func(id int) string { return fmt.Sprintf("SELECT v FROM t WHERE id = %d", id) }
	// read logs app in, at addr, and returns the first read's answer.
	read := func(addr, sql string) string {
		c := dialRaw(t, addr, "app", "apppw", db, false)
		defer c.Close()
		r, err := c.Execute(sql)
		if err != nil {
			t.Fatalf("%s as app at %s: %v", sql, addr, err)
		}
		v, _ := r.GetString(0, 0)
		return v
	}
	// warm reads sql in app's sessions until a session's first read hits.
	warm := func(sql string) {
		c := dialRaw(t, p.addr, "app", "apppw", db, false)
		defer c.Close()
		for range 3 {
			if _, err := c.Execute(sql); err != nil {
				t.Fatal(err)
			}
		}
		before := hits(t, admin)
		c2 := dialRaw(t, p.addr, "app", "apppw", db, false)
		defer c2.Close()
		if _, err := c2.Execute(sql); err != nil {
			t.Fatal(err)
		}
		if _, err := c2.Execute(sql); err != nil {
			t.Fatal(err)
		}
		if hits(t, admin) == before {
			t.Fatalf("%s is not served from the cache; the test proves nothing", sql)
		}
	}

	id := 0
	for _, initConnect := range []string{
		"SET TRANSACTION ISOLATION LEVEL READ UNCOMMITTED",
		"CALL " + db + ".next_ru()",
	} {
		id++
		t.Run("one-shot/"+initConnect, func(t *testing.T) {
			m.Exec(t, "SET GLOBAL init_connect = '"+initConnect+"'")
			warm(q(id))
			w := conn(t, root)
			execOn(t, w, "BEGIN")
			execOn(t, w, fmt.Sprintf("UPDATE t SET v = 99 WHERE id = %d", id))
			want := read(m.Addr, q(id))
			if want != "99" {
				t.Fatalf("directly, the first read gave %s: init_connect did not make it READ UNCOMMITTED", want)
			}
			if got := read(p.addr, q(id)); got != want {
				t.Errorf("the first read through mycached gave %s, want %s as directly", got, want)
			}
			execOn(t, w, "ROLLBACK")
			for range 2 {
				if got := read(p.addr, q(id)); got != "0" {
					t.Errorf("after the rollback, a read through mycached gave %s, want 0: the uncommitted value was stored", got)
				}
			}
		})
	}

	id++
	t.Run("snapshot-at-login", func(t *testing.T) {
		m.Exec(t, "SET GLOBAL init_connect = 'START TRANSACTION WITH CONSISTENT SNAPSHOT'")
		s1 := dialRaw(t, p.addr, "app", "apppw", db, false)
		mustExec(t, openDB(t, rootDSN(p.addr, db, "")), fmt.Sprintf("UPDATE t SET v = 5 WHERE id = %d", id))
		r, err := s1.Execute(q(id))
		if err != nil {
			t.Fatal(err)
		}
		if v, _ := r.GetString(0, 0); v != "0" {
			t.Fatalf("the session's snapshot gave %s, want 0 from before the write", v)
		}
		for range 2 {
			if got, want := read(p.addr, q(id)), read(m.Addr, q(id)); got != want {
				t.Errorf("a new session's read gave %s, want %s as directly: an old snapshot was stored", got, want)
			}
		}
	})

	// What else init_connect leaves that no variable shows: the
	// database, a temporary table, table locks, the session's clock.
	// Each read was cached before, by the same account without it.
	other := m.NewDatabase(t)
	m.Exec(t, "CREATE TABLE "+other+".t (id INT PRIMARY KEY, v INT)")
	m.Exec(t, "INSERT INTO "+other+".t VALUES (1, 1001), (2, 1002), (3, 1003), (4, 1004)")
	m.Exec(t, "GRANT ALL ON "+other+".* TO app@'%'")
	m.Exec(t, "CREATE TABLE "+db+".tm (id INT PRIMARY KEY, tm TIME)")
	m.Exec(t, "INSERT INTO "+db+".tm VALUES (1, '10:00:00')")
	for _, c := range []struct{ name, initConnect, q string }{
		{"use", "USE " + other, q(1)},
		{"temporary-table", "CREATE TEMPORARY TABLE " + db + ".t (id INT PRIMARY KEY, v INT)", q(2)},
		{"lock-tables", "LOCK TABLES " + db + ".tm READ", q(3)},
		{"timestamp", "SET timestamp = 1000000000", "SELECT CAST(tm AS DATETIME) FROM tm WHERE id = 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m.Exec(t, "SET GLOBAL init_connect = ''")
			warm(c.q)
			m.Exec(t, "SET GLOBAL init_connect = '"+c.initConnect+"'")
			for range 2 {
				got, want := readAll(t, p.addr, "app", "apppw", db, c.q), readAll(t, m.Addr, "app", "apppw", db, c.q)
				if got != want {
					t.Errorf("%s after init_connect %q: got %s, want %s as directly", c.q, c.initConnect, got, want)
				}
			}
		})
	}

	// An init_connect that fails ends the session: its first statement
	// gets the server's error 1184, and the next finds it closed.
	t.Run("fails", func(t *testing.T) {
		m.Exec(t, "SET GLOBAL init_connect = 'SET @@session.no_such_variable = 1'")
		for _, addr := range []string{m.Addr, p.addr} {
			c := dialRaw(t, addr, "app", "apppw", db, false)
			_, err := c.Execute(q(4))
			var me *mysqlc.MyError
			if !errors.As(err, &me) || me.Code != 1184 {
				t.Errorf("at %s: the first statement got %v, want error 1184", addr, err)
			}
			if _, err := c.Execute(q(4)); err == nil {
				t.Errorf("at %s: the session went on after init_connect failed", addr)
			}
		}
	})

	t.Run("variables-only", func(t *testing.T) {
		m.Exec(t, "SET GLOBAL init_connect = 'SET time_zone = ''+05:00'''")
		if got := read(m.Addr, "SELECT @@time_zone"); got != "+05:00" {
			t.Fatalf("init_connect did not run: time_zone %s", got)
		}
		warm(q(4))
	})
}

// readAll logs user in at addr, runs q and returns its rows, or its
// error, as text.
func readAll(t *testing.T, addr, user, pass, db, q string) string {
	t.Helper()
	c := dialRaw(t, addr, user, pass, db, false)
	defer c.Close()
	r, err := c.Execute(q)
	if err != nil {
		var me *mysqlc.MyError
		if errors.As(err, &me) {
			return fmt.Sprintf("error %d", me.Code)
		}
		t.Fatalf("%s at %s: %v", q, addr, err)
	}
	out := ""
	for i := range r.RowNumber() {
		for j := range r.ColumnNumber() {
			v, _ := r.GetString(i, j)
			out += v + "|"
		}
		out += "\n"
	}
	return out
}
