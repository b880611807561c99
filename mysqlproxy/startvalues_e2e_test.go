package mysqlproxy_test

import (
	"bytes"
	"context"
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/mycached/mycached/mysqlproxy"
)

// TestStartValuesFromSnapshot: a session's set-up reads the values it
// starts with by setting each to itself, and takes the rest (which no
// session can set) from the session before it, checked by the server in
// the statement that turns the trackers on. The server lists its
// variables (SHOW VARIABLES) only for a session whose check fails: after
// a SET GLOBAL of one of the rest, or while init_connect is set. The
// values read either way make the same cache keys.
func TestStartValuesFromSnapshot(t *testing.T) {
	t.Parallel()
	m := privateDB(t)
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr})
	name := m.NewDatabase(t)
	direct := openDB(t, rootDSN(m.Addr, name, ""))
	for _, s := range []string{
		"CREATE TABLE t (id INT PRIMARY KEY, v INT)", "INSERT INTO t VALUES (1, 10)",
		"CREATE USER plain@'%' IDENTIFIED BY 'pw'", "GRANT SELECT ON " + name + ".* TO plain@'%'",
	} {
		mustExec(t, direct, s)
	}
	t.Cleanup(func() {
		for _, s := range []string{"SET GLOBAL init_connect = ''", "SET GLOBAL div_precision_increment = DEFAULT",
			"SET GLOBAL max_allowed_packet = DEFAULT", "SET GLOBAL session_track_system_variables = DEFAULT",
			"SET GLOBAL session_track_state_change = DEFAULT", "SET GLOBAL session_track_schema = DEFAULT"} {
			_, _ = direct.Exec(s)
		}
	})
	ctx := context.Background()
	global := func(v string) int64 {
		t.Helper()
		var n string
		var x int64
		if err := direct.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE '"+v+"'").Scan(&n, &x); err != nil {
			t.Fatal(err)
		}
		return x
	}
	listed := func() int64 { return global("Com_show_variables") }
	const q = "SELECT v / 3 FROM t WHERE id = 1"
	// read opens a session through the sidecar as user, with the
	// handshake collation cs, and reads q there; it reports whether the
	// read was a hit, and checks the rows against a direct read.
	read := func(user, cs string) bool {
		t.Helper()
		// The handshake's collation: the driver sends no SET NAMES.
		params := "collation=" + cs
		dsn := rootDSN(p.addr, name, params)
		ddsn := rootDSN(m.Addr, name, params)
		if user != "root" {
			dsn = "plain:pw@tcp(" + p.addr + ")/" + name + "?" + params
			ddsn = "plain:pw@tcp(" + m.Addr + ")/" + name + "?" + params
		}
		via := openDB(t, dsn)
		via.SetMaxOpenConns(1)
		defer via.Close()
		before := global("Com_select")
		got := dump(t, via, q)
		hit := global("Com_select") == before
		if want := dump(t, openDB(t, ddsn), q); got != want {
			t.Fatalf("%s as %s, charset %s: got %s, want %s", q, user, cs, got, want)
		}
		return hit
	}
	// A session that lists the variables fills an entry, which the next
	// session, which does not, hits: the two ways read the same values,
	// in each handshake charset. A value no session sets, changed and
	// changed back, has the filling session list them.
	for _, cs := range []string{"utf8mb4_general_ci", "latin1_swedish_ci", "binary"} {
		for _, user := range []string{"root", "plain"} {
			mustExec(t, direct, "SET GLOBAL max_allowed_packet = "+strconv.Itoa(8<<20))
			read(user, cs)
			mustExec(t, direct, "SET GLOBAL max_allowed_packet = DEFAULT")
			before := listed()
			read(user, cs)
			if n := listed() - before; n != 1 {
				t.Fatalf("a session after max_allowed_packet changed back listed the variables %d times, want 1", n)
			}
			before = listed()
			if !read(user, cs) {
				t.Errorf("%s as %s, charset %s: not a hit of the entry a session that listed the variables filled", q, user, cs)
			}
			if n := listed() - before; n != 0 {
				t.Errorf("as %s, charset %s: the next session listed the variables %d times, want 0", user, cs, n)
			}
		}
	}
	// A value set to itself is the session's own: a new global value is
	// read, and keys other entries.
	mustExec(t, direct, "SET GLOBAL div_precision_increment = 9")
	before := listed()
	if read("plain", "utf8mb4_general_ci") {
		t.Errorf("%s after SET GLOBAL div_precision_increment: a hit of an entry of the old value", q)
	}
	if n := listed() - before; n != 0 {
		t.Errorf("a session after SET GLOBAL div_precision_increment listed the variables %d times, want 0", n)
	}
	// A value no session sets, changed: the check fails, and the session
	// lists them; the next does not.
	for _, change := range []string{
		"SET GLOBAL max_allowed_packet = " + strconv.Itoa(8<<20),
		"SET GLOBAL session_track_system_variables = 'autocommit,time_zone'",
		"SET GLOBAL session_track_state_change = ON",
		"SET GLOBAL session_track_schema = OFF",
	} {
		mustExec(t, direct, change)
		for i, want := range []int64{1, 0} {
			before := listed()
			read("plain", "utf8mb4_general_ci")
			if n := listed() - before; n != want {
				t.Errorf("session %d after %s listed the variables %d times, want %d", i+1, change, n, want)
			}
		}
	}
	// init_connect may set what no check sees: every session lists them.
	mustExec(t, direct, "SET GLOBAL init_connect = 'SET @x = 1'")
	for i := range 2 {
		before := listed()
		read("plain", "utf8mb4_general_ci")
		if n := listed() - before; n != 1 {
			t.Errorf("session %d with init_connect set listed the variables %d times, want 1", i+1, n)
		}
	}
	mustExec(t, direct, "SET GLOBAL init_connect = ''")
	read("plain", "utf8mb4_general_ci")
	before = listed()
	read("plain", "utf8mb4_general_ci")
	if n := listed() - before; n != 0 {
		t.Errorf("a session after init_connect was emptied listed the variables %d times, want 0", n)
	}
}

// TestStartValuesReadLate: a session whose set-up answer reaches the
// sidecar seconds after the server read its clock (a loaded machine) did
// not freeze its clock: it keys its reads as the others do, and hits
// their entries. The server's answers that name @@timestamp are held
// back 3 s on their way to the sidecar.
func TestStartValuesReadLate(t *testing.T) {
	t.Parallel()
	m := privateDB(t)
	slow := holdBack(t, m.Addr, []byte("timestamp"), 3*time.Second)
	p := startProxy(t, mysqlproxy.Config{Backend: slow})
	name := m.NewDatabase(t)
	direct := openDB(t, rootDSN(m.Addr, name, ""))
	mustExec(t, direct, "CREATE TABLE t (id INT PRIMARY KEY, v INT)")
	mustExec(t, direct, "INSERT INTO t VALUES (1, 10)")
	const q = "SELECT v FROM t WHERE id = 1"
	for i := range 3 {
		// A new pool each time: a new session, set up anew.
		via := openDB(t, rootDSN(p.addr, name, ""))
		via.SetMaxOpenConns(1)
		_, n := counted(t, m, via, q)
		via.Close()
		if i > 0 && n != 0 {
			t.Errorf("session %d: MariaDB executed %d SELECTs, want 0 (a hit of the first session's entry)", i+1, n)
		}
	}
}

// holdBack relays each connection to backend, holding back for d each
// chunk the backend sends that contains mark.
func holdBack(t *testing.T, backend string, mark []byte, d time.Duration) string {
	t.Helper()
	return relayDown(t, backend, func(dst io.Writer, src io.Reader) {
		buf := make([]byte, 64<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				if bytes.Contains(buf[:n], mark) {
					time.Sleep(d)
				}
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	})
}
