package mysqlproxy_test

import (
	"bytes"
	"context"
	"database/sql"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bradfitz/gomemcache/memcache"
	"github.com/go-mysql-org/go-mysql/client"
	mysqlc "github.com/go-mysql-org/go-mysql/mysql"

	"github.com/mycached/mycached/mysqlproxy"
	"github.com/mycached/mycached/mysqlproxy/internal/testenv"
)

// kvRows runs a kv SELECT and returns its key=value pairs.
func kvRows(t testing.TB, q interface {
	Query(string, ...any) (*sql.Rows, error)
}, query string, args ...any) []string {
	t.Helper()
	rows, err := q.Query(query, args...)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	if strings.Join(cols, ",") != "key,value" {
		t.Fatalf("%s: columns %v, want key,value", query, cols)
	}
	var out []string
	for rows.Next() {
		var k, v []byte
		if err := rows.Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		out = append(out, string(k)+"="+string(v))
	}
	return out
}

// TestKVForms: all seven forms from go-sql-driver in text, prepared and
// interpolated modes, against L1 and against memcached.
func TestKVForms(t *testing.T) {
	m := testenv.Shared(t).DB
	for name, cfg := range map[string]mysqlproxy.Config{
		"l1":        {Backend: m.Addr, KVUsers: []string{"root"}},
		"memcached": {Backend: m.Addr, Memcached: []string{privateMemcached(t).Addr}, KVPrefix: "kvf:", KVUsers: []string{"root"}},
	} {
		t.Run(name, func(t *testing.T) {
			p := startProxy(t, cfg)
			for _, mode := range []string{"", "interpolateParams=true"} {
				db := openDB(t, rootDSN(p.addr, "", mode))
				db.SetMaxOpenConns(1)
				checkKVForms(t, db, mode, false)
			}
		})
	}
}

// checkKVForms runs every kv form on db, which speaks to a kv-enabled
// listener with interpolation mode as in its DSN, and checks the replies.
// On the main listener (kvOnly false) a prepared SELECT ? is SQL.
func checkKVForms(t *testing.T, db *sql.DB, mode string, kvOnly bool) {
	t.Helper()
	mustExec(t, db, `DROP`)
	mustExec(t, db, `INSERT "a" = "1"`)
	mustExec(t, db, `insert 'b' = 'two' TTL 60;`)
	if got := kvRows(t, db, `SELECT "a"`); strings.Join(got, " ") != "a=1" {
		t.Errorf("%s SELECT a: got %v, want a=1", mode, got)
	}
	if got := kvRows(t, db, `SELECT "a", "b", "missing"`); strings.Join(got, " ") != "a=1 b=two" {
		t.Errorf("%s SELECT a,b: got %v, want a=1 b=two", mode, got)
	}
	// Arguments: prepared by mycached, or interpolated.
	if _, err := db.Exec("INSERT ? = ?", "c", "x\x00y\"z"); err != nil {
		t.Fatalf("%s INSERT ? = ?: %v", mode, err)
	}
	if _, err := db.Exec("INSERT ? = ? TTL ?", "d", "dee", 30); err != nil {
		t.Fatalf("%s INSERT ? = ? TTL ?: %v", mode, err)
	}
	// An interpolating driver turns SELECT ? into SELECT 'c', which is SQL;
	// and on the main listener a prepared SELECT ? is SQL too, whose
	// PREPARE told the client it has one column.
	if mode == "" && kvOnly {
		if got := kvRows(t, db, "SELECT ?", "c"); strings.Join(got, " ") != "c=x\x00y\"z" {
			t.Errorf("prepared SELECT ?: got %q", got)
		}
	}
	if mode == "" && !kvOnly {
		var v string
		if err := db.QueryRow("SELECT ?", "c").Scan(&v); err != nil || v != "c" {
			t.Errorf("prepared SELECT ? on the main listener: got %q, %v; want MySQL's answer", v, err)
		}
	}
	if got := kvRows(t, db, `SELECT *`); strings.Join(got, " ") != "a=1 b=two c=x\x00y\"z d=dee" {
		t.Errorf("%s SELECT *: got %q", mode, got)
	}
	for i, del := range []string{"DELETE ?", `DELETE "a"`, "DELETE ?"} {
		var args []any
		if strings.Contains(del, "?") {
			args = append(args, "a")
		}
		res, err := db.Exec(del, args...)
		if err != nil {
			t.Fatalf("%s %s: %v", mode, del, err)
		}
		want := int64(0)
		if i == 0 {
			want = 1
		}
		if n, _ := res.RowsAffected(); n != want {
			t.Errorf("%s %s (#%d): affected %d, want %d", mode, del, i+1, n, want)
		}
	}
	res, err := db.Exec(`DROP;`)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 3 {
		t.Errorf("%s DROP: affected %d, want 3", mode, n)
	}
	if got := kvRows(t, db, `SELECT *`); len(got) != 0 {
		t.Errorf("%s after DROP: got %v, want nothing", mode, got)
	}
}

// TestKVLookalikeSQLReachesMySQL: statements that look like kv but are
// SQL go to MariaDB.
func TestKVLookalikeSQLReachesMySQL(t *testing.T) {
	m := privateDB(t)
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr, Passthrough: true, KVUsers: []string{"root"}})
	db := openDB(t, rootDSN(p.addr, "", ""))
	db.SetMaxOpenConns(1)
	for _, q := range []string{`SELECT 'x'`, `SELECT "x" AS y`, `SELECT 1`, `SELECT "x" FROM DUAL`} {
		before := m.GlobalStatus(t, "Com_select")
		var v string
		if err := db.QueryRow(q).Scan(&v); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if got := m.GlobalStatus(t, "Com_select") - before; got != 1 {
			t.Errorf("%s: MariaDB ran %d SELECTs, want 1", q, got)
		}
	}
	before := m.GlobalStatus(t, "Com_select")
	kvRows(t, db, `SELECT "x"`)
	if got := m.GlobalStatus(t, "Com_select") - before; got != 0 {
		t.Errorf(`SELECT "x" (kv): MariaDB ran %d SELECTs, want 0`, got)
	}
}

// TestKVUnderANSIQuotesSetUnseen: SET @@sql_mode with no scope is a
// change MariaDB's trackers do not report, and EXECUTE IMMEDIATE one the
// text does not show. Under ANSI_QUOTES so set, SELECT "x" names a
// column, and gets MariaDB's error, as directly; once the mode is back,
// it is kv again.
func TestKVUnderANSIQuotesSetUnseen(t *testing.T) {
	m := privateDB(t)
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr, KVUsers: []string{"root"}})
	for _, set := range []string{`SET @@sql_mode = "ANSI_QUOTES"`, `SET @a = 1, @@SQL_MODE := CONCAT(@@sql_mode, ",ANSI_QUOTES")`,
		`SET @@sql_mode = 'ORACLE'`, `EXECUTE IMMEDIATE 'SET sql_mode = ''ANSI_QUOTES'''`} {
		via, direct := conn(t, openDB(t, rootDSN(p.addr, "", ""))), conn(t, openDB(t, rootDSN(m.Addr, "", "")))
		for _, c := range []*sql.Conn{via, direct} {
			if _, err := c.ExecContext(context.Background(), set); err != nil {
				t.Fatalf("%s: %v", set, err)
			}
		}
		_, want := queryDump(context.Background(), direct, `SELECT "x"`)
		got, err := queryDump(context.Background(), via, `SELECT "x"`)
		if want == nil || err == nil || mysqlErr(t, err).Number != mysqlErr(t, want).Number {
			t.Errorf(`after %s, SELECT "x": got %s, %v; want %v as directly`, set, got, err, want)
		}
		if _, err := via.ExecContext(context.Background(), "SET @@sql_mode = DEFAULT"); err != nil {
			t.Fatal(err)
		}
		if _, err := queryDump(context.Background(), via, `SELECT "x"`); err != nil {
			t.Errorf(`after %s and SET @@sql_mode = DEFAULT, SELECT "x" (kv): %v`, set, err)
		}
	}
}

// TestKVEscapesAfterARoutineSetsSQLMode: a stored procedure that sets
// sql_mode leaves the session's NO_BACKSLASH_ESCAPES status flag as it set
// it, and restores sql_mode itself when it returns. A kv literal is read
// under the sql_mode in force, as the server reads a string, not under the
// flag: "a\nb" is a newline without NO_BACKSLASH_ESCAPES, and backslash n
// with it.
func TestKVEscapesAfterARoutineSetsSQLMode(t *testing.T) {
	m := privateDB(t)
	mc := privateMemcached(t)
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr, Memcached: []string{mc.Addr}, KVUsers: []string{"root"}})
	name := m.NewDatabase(t)
	direct := openDB(t, rootDSN(m.Addr, name, ""))
	mustExec(t, direct, "CREATE PROCEDURE set_nbe() SET SESSION sql_mode = 'NO_BACKSLASH_ESCAPES'")
	mustExec(t, direct, "CREATE PROCEDURE set_empty() SET SESSION sql_mode = ''")
	c := memcache.New(mc.Addr)
	for i, tc := range []struct {
		mode, call string
	}{
		{"DEFAULT", "set_nbe"},
		{"'NO_BACKSLASH_ESCAPES'", "set_empty"},
	} {
		via := conn(t, openDB(t, rootDSN(p.addr, name, "")))
		for _, q := range []string{"SET SESSION sql_mode = " + tc.mode, "CALL " + tc.call + "()"} {
			if _, err := via.ExecContext(context.Background(), q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		var mode string
		if err := via.QueryRowContext(context.Background(), "SELECT @@sql_mode").Scan(&mode); err != nil {
			t.Fatal(err)
		}
		key := "esc" + strconv.Itoa(i)
		if _, err := via.ExecContext(context.Background(), `INSERT "`+key+`" = "a\nb"`); err != nil {
			t.Fatal(err)
		}
		it, err := c.Get("kv:" + key)
		if err != nil {
			t.Fatal(err)
		}
		// What the server makes of the same literal in the same session.
		var lit string
		if err := via.QueryRowContext(context.Background(), `SELECT 'a\nb'`).Scan(&lit); err != nil {
			t.Fatal(err)
		}
		if string(it.Value) != lit {
			t.Errorf("sql_mode %s, CALL %s (sql_mode now %q): the pair holds %q; the server reads the literal as %q", tc.mode, tc.call, mode, it.Value, lit)
		}
	}
}

// TestKVAccountKeepsWarnings: after a CALL, mycached reads the session's
// sql_mode again before it takes a text for kv, and that reading takes
// the server's warnings. It reads it only for a text that is kv: for a
// kv account, SHOW WARNINGS after a CALL shows the procedure's notes, as
// directly.
func TestKVAccountKeepsWarnings(t *testing.T) {
	m := privateDB(t)
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr, KVUsers: []string{"root"}})
	name := m.NewDatabase(t)
	direct := openDB(t, rootDSN(m.Addr, name, ""))
	mustExec(t, direct, "CREATE TABLE t (a INT)")
	mustExec(t, direct, "CREATE PROCEDURE p() CREATE TABLE IF NOT EXISTS t (a INT)")
	warnings := func(db *sql.DB) string {
		c := conn(t, db)
		if _, err := c.ExecContext(context.Background(), "CALL p()"); err != nil {
			t.Fatal(err)
		}
		got, err := queryDump(context.Background(), c, "SHOW WARNINGS")
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	want := warnings(direct)
	if !strings.Contains(want, "1050") {
		t.Fatalf("directly: %s", want)
	}
	if got := warnings(openDB(t, rootDSN(p.addr, name, ""))); got != want {
		t.Errorf("SHOW WARNINGS after CALL: got %s, want %s", got, want)
	}
}

// TestKVBytesSharedWithMemcachedClients: what SQL writes, memcached
// clients read byte for byte, and the other way round.
func TestKVBytesSharedWithMemcachedClients(t *testing.T) {
	m := testenv.Shared(t).DB
	mc := privateMemcached(t)
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr, Memcached: []string{mc.Addr}, KVUsers: []string{"root"}})
	db := openDB(t, rootDSN(p.addr, "", ""))
	val := []byte("{\"json\": \"\u00e9\", \"bin\": \"\x00\x01\xff\"}")
	if _, err := db.Exec("INSERT ? = ?", "page:/home", val); err != nil {
		t.Fatal(err)
	}
	c := memcache.New(mc.Addr)
	it, err := c.Get("kv:page:/home")
	if err != nil {
		t.Fatalf("memcached get: %v", err)
	}
	if !bytes.Equal(it.Value, val) {
		t.Errorf("memcached holds %q, want %q", it.Value, val)
	}
	if err := c.Set(&memcache.Item{Key: "kv:from-mc", Value: []byte("set\r\nby mc")}); err != nil {
		t.Fatal(err)
	}
	if got := kvRows(t, db, `SELECT "from-mc"`); len(got) != 1 || got[0] != "from-mc=set\r\nby mc" {
		t.Errorf("SELECT from-mc: got %q", got)
	}
}

// TestKVErrors: each bad input gets a clear error, and the connection
// goes on working.
func TestKVErrors(t *testing.T) {
	m := testenv.Shared(t).DB
	mc := privateMemcached(t)
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr, Memcached: []string{mc.Addr}, KVMaxBytes: 2 << 20, KVUsers: []string{"root"}})
	db := openDB(t, rootDSN(p.addr, "", ""))
	db.SetMaxOpenConns(1)
	const errs, inserts, selects = "mycached_kv_errors_total", `mycached_kv_statements_total{op="insert"}`, `mycached_kv_statements_total{op="select"}`
	errs0, inserts0 := metricValue(t, p, errs), metricValue(t, p, inserts)
	for _, c := range []struct {
		q    string
		args []any
		want string
	}{
		{`INSERT "" = "v"`, nil, "key"},
		{`INSERT "has space" = "v"`, nil, "key"},
		{`INSERT "` + strings.Repeat("k", 300) + `" = "v"`, nil, "key"},
		{`INSERT "big" = ?`, []any{strings.Repeat("v", 3<<20)}, "kv-max-bytes"},
		{`INSERT "overitem" = ?`, []any{strings.Repeat("v", 1536<<10)}, "-I"},
		{`INSERT "k" = `, nil, "syntax"},
		{`INSERT "k" = "v" TTL soon`, nil, "TTL"},
		// Prepared, with a value no pair holds.
		{`INSERT "f" = ?`, []any{1.5}, "strings or integers"},
		{`INSERT "n" = ?`, []any{nil}, "NULL"},
	} {
		_, err := db.Exec(c.q, c.args...)
		if err == nil {
			t.Errorf("%.40s: no error", c.q)
			continue
		}
		if e := mysqlErr(t, err); !strings.Contains(strings.ToLower(e.Message), strings.ToLower(c.want)) {
			t.Errorf("%.40s: got %d %q, want a message about %q", c.q, e.Number, e.Message, c.want)
		}
		if err := db.Ping(); err != nil {
			t.Fatalf("after %.40s the connection broke: %v", c.q, err)
		}
	}
	// Each error shows, those that did not parse too; the inserts that
	// parsed ran, and failed.
	if got := metricValue(t, p, errs) - errs0; got != 9 {
		t.Errorf("%s grew by %v, want 9", errs, got)
	}
	if got := metricValue(t, p, inserts) - inserts0; got != 5 {
		t.Errorf("%s grew by %v, want 5", inserts, got)
	}
	selects0 := metricValue(t, p, selects)
	if got := kvRows(t, db, `SELECT "big", "overitem"`); len(got) != 0 {
		t.Errorf("a refused value was written: %q", got)
	}
	if got := metricValue(t, p, selects) - selects0; got != 1 {
		t.Errorf("%s grew by %v, want 1", selects, got)
	}
	errs1, inserts1 := metricValue(t, p, errs), metricValue(t, p, inserts)
	// A user without kv rights.
	db2 := m.NewDatabase(t)
	user := "nokv" + strings.ReplaceAll(db2, "_", "")
	m.Exec(t, "CREATE USER '"+user+"'@'%' IDENTIFIED BY 'pw'")
	t.Cleanup(func() { m.Exec(t, "DROP USER '"+user+"'@'%'") })
	u := openDB(t, testenv.DSNFor(p.addr, user, "pw", "", ""))
	// For an account outside --kv-users every statement is SQL: the
	// server answers it as it would without mycached.
	_, err := u.Exec(`INSERT "k" = "v"`)
	if err == nil || mysqlErr(t, err).Number != 1064 {
		t.Errorf("user without kv rights: got %v, want the server's error 1064", err)
	}
	var s string
	if err := u.QueryRow(`SELECT "plain sql"`).Scan(&s); err != nil || s != "plain sql" {
		t.Errorf(`SELECT "plain sql" for a non-kv user: got %q, %v; want MySQL's answer`, s, err)
	}
	if metricValue(t, p, errs) != errs1 || metricValue(t, p, inserts) != inserts1 {
		t.Errorf("SQL of an account outside --kv-users counted as kv")
	}
}

// TestKVTwoSidecarsAgree: SELECT * and DROP see the pairs of every
// sidecar sharing memcached.
func TestKVTwoSidecarsAgree(t *testing.T) {
	m := testenv.Shared(t).DB
	mc := privateMemcached(t)
	cfg := mysqlproxy.Config{Backend: m.Addr, Memcached: []string{mc.Addr}, KVUsers: []string{"root"}}
	a := openDB(t, rootDSN(startProxy(t, cfg).addr, "", ""))
	b := openDB(t, rootDSN(startProxy(t, cfg).addr, "", ""))
	mustExec(t, a, `INSERT "x" = "1"`)
	mustExec(t, b, `INSERT "y" = "2"`)
	ga, gb := kvRows(t, a, `SELECT *`), kvRows(t, b, `SELECT *`)
	if strings.Join(ga, " ") != "x=1 y=2" || strings.Join(gb, " ") != "x=1 y=2" {
		t.Errorf("SELECT *: A got %v, B got %v; want x=1 y=2 on both", ga, gb)
	}
	res, err := b.Exec(`DROP`)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 2 {
		t.Errorf("DROP through B: affected %d, want 2", n)
	}
	if got := kvRows(t, a, `SELECT *`); len(got) != 0 {
		t.Errorf("after DROP through B, A sees %v", got)
	}
}

// TestKVCLIAndPyMySQL: the mariadb client and PyMySQL use the language.
func TestKVCLIAndPyMySQL(t *testing.T) {
	m := testenv.Shared(t).DB
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr, KVPrefix: "kvcli:", KVUsers: []string{"root"}})
	host, port, _ := strings.Cut(p.addr, ":")
	cli := exec.Command("mariadb", "-h", host, "-P", port, "-uroot", "-p"+rootPass, "--batch", "-e",
		`INSERT "k1" = 'one'; INSERT "k2" = "two" TTL 60; SELECT "k1"; SELECT "k1", "k2"; DELETE "k1"; SELECT *; DROP;`)
	out, err := cli.CombinedOutput()
	if err != nil {
		t.Fatalf("mariadb: %v\n%s", err, out)
	}
	want := "key\tvalue\nk1\tone\nkey\tvalue\nk1\tone\nk2\ttwo\nkey\tvalue\nk2\ttwo\n"
	if string(out) != want {
		t.Errorf("mariadb output:\ngot  %q\nwant %q", out, want)
	}
	py := exec.Command("/usr/bin/python3", "-c", `
import pymysql, sys
c = pymysql.connect(host=sys.argv[1], port=int(sys.argv[2]), user="root", password=sys.argv[3])
cur = c.cursor()
cur.execute('INSERT %s = %s', ("pk", "pv"))
cur.execute('SELECT "pk"')
print(cur.fetchall())
cur.execute('DELETE %s', ("pk",))
print(cur.rowcount)
cur.execute("INSERT %s = X'00ff80'", ("pb",))
cur.execute('SELECT "pb"')
print(cur.fetchall())
cur.execute('SELECT "pb", "pk"')
print(cur.fetchall())
`, host, port, rootPass)
	out, err = py.CombinedOutput()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	// A value that is not UTF-8 is labelled binary, as MariaDB labels
	// X'00ff80': PyMySQL gives it as bytes, where decoding it as text
	// raised and broke the connection.
	if got := string(out); got != "(('pk', 'pv'),)\n1\n(('pb', b'\\x00\\xff\\x80'),)\n(('pb', b'\\x00\\xff\\x80'),)\n" {
		t.Errorf("PyMySQL output: got %q", got)
	}
}

var _ = context.Background

// TestKVPreparedReexecute: a driver sends a kv statement's parameter
// types with its first execute only, and may name the statement it just
// prepared by the id 0xffffffff; both work as on any prepared statement.
func TestKVPreparedReexecute(t *testing.T) {
	m := testenv.Shared(t).DB
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr, KVUsers: []string{"root"}})
	sp := newStmtProbe(t, p.addr, "")
	str := func(s string) []byte { return append([]byte{byte(len(s))}, s...) }
	exec := func(types bool, vals ...string) []byte {
		b := append(slices.Clone(execHdr), 0) // null bitmap
		if types {
			b = append(b, 1)
			for range vals {
				b = append(b, mysqlc.MYSQL_TYPE_VAR_STRING, 0)
			}
		} else {
			b = append(b, 0)
		}
		for _, v := range vals {
			b = append(b, str(v)...)
		}
		return b
	}
	if _, err := sp.c.Execute("DROP"); err != nil {
		t.Fatal(err)
	}
	id := sp.prep("INSERT ? = ?")
	sp.send(id, mysqlc.COM_STMT_EXECUTE, exec(true, "k1", "v1")...)
	sp.send(id, mysqlc.COM_STMT_EXECUTE, exec(false, "k2", "v2")...)
	sp.prep("DELETE ?")
	sp.send(lastID, mysqlc.COM_STMT_EXECUTE, exec(true, "k1")...)
	for _, out := range sp.out {
		if strings.HasPrefix(out, "error") {
			t.Errorf("executes: %s", sp)
			break
		}
	}
	db := openDB(t, rootDSN(p.addr, "", ""))
	if got := kvRows(t, db, `SELECT "k1", "k2"`); strings.Join(got, " ") != "k2=v2" {
		t.Errorf(`SELECT "k1", "k2": got %v, want k2=v2`, got)
	}
}

// TestKVAnswerStatusIsItsOwn: a kv answer's status keeps the session's
// transaction flags but not SESSION_STATE_CHANGED, which said that the
// server's last answer carried state changes: a kv answer carries none.
func TestKVAnswerStatusIsItsOwn(t *testing.T) {
	t.Parallel()
	m := testenvShared(t)
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr, KVUsers: []string{"root"}})
	c, err := client.Connect(p.addr, "root", rootPass, "", func(c *client.Conn) error {
		c.SetCapability(mysqlc.CLIENT_DEPRECATE_EOF)
		return c.SetCapability(mysqlc.CLIENT_SESSION_TRACK)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rc := &rawConn{Conn: c, deprecateEOF: true}
	_, ok := rc.exchange(t, append([]byte{mysqlc.COM_QUERY}, "SET autocommit = 0"...)...)
	if rc.endStatus(ok)&mysqlc.SERVER_SESSION_STATE_CHANGED == 0 {
		t.Fatalf("the server reported no state change for SET autocommit = 0: %x", ok)
	}
	_, last := rc.exchange(t, append([]byte{mysqlc.COM_QUERY}, `SELECT "k"`...)...)
	st := rc.endStatus(last)
	if st&mysqlc.SERVER_SESSION_STATE_CHANGED != 0 || st&mysqlc.SERVER_STATUS_AUTOCOMMIT != 0 {
		t.Errorf("kv answer status %#x: want no SESSION_STATE_CHANGED, and autocommit off", st)
	}
	// A full scan: the server flags its answer NO_INDEX_USED, which
	// says nothing of the next statement.
	_, scan := rc.exchange(t, append([]byte{mysqlc.COM_QUERY}, "SELECT * FROM mysql.global_priv"...)...)
	if rc.endStatus(scan)&mysqlc.SERVER_STATUS_NO_INDEX_USED == 0 {
		t.Fatalf("the server did not flag a full scan NO_INDEX_USED: %x", scan)
	}
	_, last = rc.exchange(t, append([]byte{mysqlc.COM_QUERY}, `SELECT "k"`...)...)
	if st := rc.endStatus(last); st&^(mysqlc.SERVER_STATUS_IN_TRANS|mysqlc.SERVER_STATUS_AUTOCOMMIT) != 0 {
		t.Errorf("kv answer after a full scan: status %#x, want only the session's flags", st)
	}
}

// TestKVTooLargeForMemory: with no memcached, a value the in-process
// cache cannot hold gets an error that names --cache-memory, not
// memcached's item size.
func TestKVTooLargeForMemory(t *testing.T) {
	t.Parallel()
	m := testenvShared(t)
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr, CacheMemory: 1 << 20, KVUsers: []string{"root"}})
	db := openDB(t, rootDSN(p.addr, "", ""))
	_, err := db.Exec(`INSERT "big" = "` + strings.Repeat("v", 2<<20) + `"`)
	if err == nil || !strings.Contains(err.Error(), "--cache-memory") || strings.Contains(err.Error(), "memcached") {
		t.Errorf("a 2 MB value with 1 MiB of --cache-memory and no memcached: %v; want an error naming --cache-memory", err)
	}
}

// TestKVAccountMultibyteSQL: in sjis, big5 and gbk a character may end
// in 0x5C. The kv parser read it as a backslash, so SELECT "ソ" AS x (in
// sjis, 0x83 0x5C) was answered as kv, with an error, and INSERT "k" =
// "v" of such characters stored other bytes than the client sent. Such a
// text goes to the server, which reads it as SQL.
func TestKVAccountMultibyteSQL(t *testing.T) {
	t.Parallel()
	m := testenv.Shared(t).DB
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr, KVUsers: []string{"root"}})
	name := m.NewDatabase(t)
	for _, cs := range []struct{ name, char string }{{"sjis", "\x83\x5c"}, {"big5", "\xa5\x5c"}, {"gbk", "\x81\x5c"}} {
		run := func(addr string) string {
			c := conn(t, openDB(t, rootDSN(addr, name, "charset="+cs.name)))
			var out []string
			for _, q := range []string{
				`SELECT "` + cs.char + `" AS x -- "` + "\n",
				`SELECT HEX("` + cs.char + `"), 1 #"` + "\n",
				`INSERT "z` + cs.char + `abc" = "v"`,
			} {
				out = append(out, query(c, "text", q))
			}
			return strings.Join(out, "\n")
		}
		if want := sameAsDirect(t, m.Addr, p.addr, run); !strings.Contains(want, "1064") {
			t.Errorf("%s directly: %s", cs.name, want)
		}
	}
}
