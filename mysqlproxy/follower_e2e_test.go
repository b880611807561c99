package mysqlproxy_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/mycached/mycached/mysqlproxy"
	"github.com/mycached/mycached/mysqlproxy/internal/testenv"
)

// fleet is two sidecars sharing one memcached in front of one MariaDB,
// each following the binlog, with a database of the test's own.
type fleet struct {
	m          *testenv.MariaDB
	mc         *testenv.Memcached
	a, b       *proxy
	name       string  // the test's database
	direct     *sql.DB // root on MariaDB
	viaA, viaB *sql.DB // root through each sidecar
}

// startFleet starts the two sidecars with cfg (Backend, Memcached and the
// follower filled in) in front of m.
func startFleet(t *testing.T, m *testenv.MariaDB, cfg mysqlproxy.Config) *fleet {
	t.Helper()
	return startFleetVia(t, m, cfg, nil)
}

// startFleetVia is startFleet with the sidecars reaching memcached at the
// address via returns for its own (nil: directly).
func startFleetVia(t *testing.T, m *testenv.MariaDB, cfg mysqlproxy.Config, via func(addr string) string) *fleet {
	t.Helper()
	f := &fleet{m: m, mc: privateMemcached(t)}
	cfg.Backend = m.Addr
	cfg.Memcached = []string{f.mc.Addr}
	if via != nil {
		cfg.Memcached = []string{via(f.mc.Addr)}
	}
	if cfg.MemcachedTimeout == 0 {
		// On a loaded machine a 50 ms lookup may time out and fail open,
		// which is right for the application and wrong for a test that
		// checks what was served from the cache.
		cfg.MemcachedTimeout = 5 * time.Second
	}
	f.a = startProxy(t, withBinlog(cfg))
	f.b = startProxy(t, withBinlog(cfg))
	f.name = m.NewDatabase(t)
	params := "multiStatements=true"
	f.direct = openDB(t, rootDSN(m.Addr, f.name, params))
	f.viaA = openDB(t, rootDSN(f.a.addr, f.name, params))
	f.viaB = openDB(t, rootDSN(f.b.addr, f.name, params))
	return f
}

// hits returns a sidecar's hits so far.
func hits(t testing.TB, db *sql.DB) int64 {
	st := mycachedStatus(t, db)
	return st["Hits_l1"] + st["Hits_memcached"]
}

// warm reads q through both sidecars until each serves it from its cache,
// checking every answer against MariaDB's.
func (f *fleet) warm(t *testing.T, q string) {
	t.Helper()
	want := dump(t, f.direct, q)
	for _, db := range []*sql.DB{f.viaA, f.viaB} {
		if got := dump(t, db, q); got != want {
			t.Fatalf("%s before the write: got %s, want %s", q, got, want)
		}
		// A policy hook killed at its deadline on a loaded machine, or
		// a follower catching up after a cut, sends a read to the
		// server: it is read again, for a while.
		for start, pause := time.Now(), 10*time.Millisecond; ; pause = min(2*pause, 500*time.Millisecond) {
			before := hits(t, db)
			if got := dump(t, db, q); got != want {
				t.Fatalf("%s before the write: got %s, want %s", q, got, want)
			}
			if hits(t, db) > before {
				break
			}
			if time.Since(start) > 15*time.Second {
				t.Fatalf("%s was not served from the cache before the write; the test proves nothing\n%s", q, dump(t, db, "SHOW MYCACHED QUERIES"))
			}
			time.Sleep(pause)
		}
	}
}

// warmAll is warm for each of qs.
// warmRow creates table t with the row (1, 1), waits for the followers,
// and warms the row's lookup on both sidecars, which it returns.
func (f *fleet) warmRow(t *testing.T) string {
	t.Helper()
	mustExec(t, f.direct, "CREATE TABLE t (id INT PRIMARY KEY, v INT)")
	mustExec(t, f.direct, "INSERT INTO t VALUES (1, 1)")
	f.sync(t)
	q := "SELECT v FROM t WHERE id = 1"
	f.warm(t, q)
	return q
}

func (f *fleet) warmAll(t *testing.T, qs ...string) {
	t.Helper()
	for _, q := range qs {
		f.warm(t, q)
	}
}

// syncFresh waits for the followers, then checks each of qs is fresh.
func (f *fleet) syncFresh(t *testing.T, qs ...string) {
	t.Helper()
	f.sync(t)
	for _, q := range qs {
		f.fresh(t, q)
	}
}

// sync waits until both followers have applied everything committed.
func (f *fleet) sync(t *testing.T) {
	t.Helper()
	// The shared server's binlog carries every parallel test's writes,
	// which a loaded machine's followers may take a while to apply.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i, p := range []*proxy{f.a, f.b} {
		if err := p.srv.WaitBinlog(ctx); err != nil {
			t.Fatalf("WaitBinlog of sidecar %c: %v\n%s", 'A'+i, err, dump(t, []*sql.DB{f.viaA, f.viaB}[i], "SHOW MYCACHED STATUS"))
		}
	}
}

// fresh checks that q through each sidecar gives what MariaDB gives.
func (f *fleet) fresh(t *testing.T, q string) {
	t.Helper()
	want := dump(t, f.direct, q)
	for i, db := range []*sql.DB{f.viaA, f.viaB} {
		if got := dump(t, db, q); got != want {
			t.Errorf("%s through sidecar %c after the write: got %s, want %s (stale)", q, 'A'+i, got, want)
		}
	}
}

// bypassCase is a write that a sidecar's parse of what it relays does not
// (or cannot) see, and a cached read whose result it changes.
type bypassCase struct {
	name  string
	setup []string // run directly, in the test's database
	reads []string
	write func(t *testing.T, f *fleet)
}

func direct(stmts ...string) func(*testing.T, *fleet) {
	return func(t *testing.T, f *fleet) {
		for _, s := range stmts {
			mustExec(t, f.direct, s)
		}
	}
}

func throughA(stmts ...string) func(*testing.T, *fleet) {
	return func(t *testing.T, f *fleet) {
		for _, s := range stmts {
			mustExec(t, f.viaA, s)
		}
	}
}

// oneSession runs stmts on one connection straight to MariaDB, for
// session settings such as binlog_format.
func oneSession(stmts ...string) func(*testing.T, *fleet) {
	return func(t *testing.T, f *fleet) {
		ctx := context.Background()
		c, err := f.direct.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		for _, s := range stmts {
			if _, err := c.ExecContext(ctx, s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
	}
}

func init() {
	mysql.RegisterReaderHandler("follower-load", func() io.Reader { return strings.NewReader("1\t77\n") })
}

var bypassCases = []bypassCase{
	{
		name:  "direct update",
		setup: []string{"CREATE TABLE t (id INT PRIMARY KEY, v INT)", "INSERT INTO t VALUES (1, 1), (2, 2)"},
		reads: []string{"SELECT v FROM t WHERE id = 1", "SELECT SUM(v) FROM t"},
		write: direct("UPDATE t SET v = 10 WHERE id = 1"),
	},
	{
		name:  "direct insert and delete",
		setup: []string{"CREATE TABLE t (id INT PRIMARY KEY AUTO_INCREMENT, v INT)", "INSERT INTO t VALUES (1, 1)"},
		reads: []string{"SELECT v FROM t WHERE id = 2", "SELECT v FROM t WHERE id = 1", "SELECT COUNT(*) FROM t"},
		write: direct("INSERT INTO t (v) VALUES (2)", "DELETE FROM t WHERE id = 1"),
	},
	{
		// The parser refuses MariaDB's WAIT clause; the words of the text
		// are read instead.
		name:  "DDL the parser refuses, naming a column locked",
		setup: []string{"CREATE TABLE t (id INT PRIMARY KEY, v INT)", "INSERT INTO t VALUES (1, 1)"},
		reads: []string{"SELECT * FROM t WHERE id = 1", "SELECT * FROM t"},
		write: direct("ALTER TABLE t WAIT 5 ADD COLUMN locked INT DEFAULT 7"),
	},
	{
		name: "trigger",
		setup: []string{
			"CREATE TABLE t (id INT PRIMARY KEY, v INT)", "CREATE TABLE audit (id INT PRIMARY KEY, n INT)",
			"INSERT INTO audit VALUES (1, 0)",
			"CREATE TRIGGER tr AFTER INSERT ON t FOR EACH ROW UPDATE audit SET n = n + 1 WHERE id = 1",
		},
		reads: []string{"SELECT n FROM audit WHERE id = 1", "SELECT * FROM audit"},
		write: throughA("INSERT INTO t VALUES (1, 1)"),
	},
	{
		name: "foreign key on delete cascade",
		setup: []string{
			"CREATE TABLE p (id INT PRIMARY KEY)",
			"CREATE TABLE c (id INT PRIMARY KEY, pid INT, FOREIGN KEY (pid) REFERENCES p (id) ON DELETE CASCADE)",
			"INSERT INTO p VALUES (1), (2)", "INSERT INTO c VALUES (10, 1), (20, 2)",
		},
		reads: []string{"SELECT * FROM c ORDER BY id", "SELECT pid FROM c WHERE id = 10"},
		write: throughA("DELETE FROM p WHERE id = 1"),
	},
	{
		// A key to the table itself: the binlog lists the row deleted,
		// not the rows its cascade deleted or set to NULL.
		name: "self-referencing foreign key cascade",
		setup: []string{
			"CREATE TABLE sr (id INT PRIMARY KEY, parent INT, FOREIGN KEY (parent) REFERENCES sr (id) ON DELETE CASCADE)",
			"CREATE TABLE sn (id INT PRIMARY KEY, parent INT, FOREIGN KEY (parent) REFERENCES sn (id) ON DELETE SET NULL)",
			"INSERT INTO sr VALUES (1, NULL), (2, 1), (3, 2)", "INSERT INTO sn VALUES (1, NULL), (2, 1)",
		},
		reads: []string{"SELECT * FROM sr WHERE id = 2", "SELECT * FROM sr WHERE id = 3", "SELECT parent FROM sn WHERE id = 2"},
		write: direct("DELETE FROM sr WHERE id = 1", "DELETE FROM sn WHERE id = 1"),
	},
	{
		name: "self-referencing foreign key cascade, through a sidecar",
		setup: []string{
			"CREATE TABLE sr (id INT PRIMARY KEY, parent INT, FOREIGN KEY (parent) REFERENCES sr (id) ON DELETE CASCADE)",
			"INSERT INTO sr VALUES (1, NULL), (2, 1)",
		},
		reads: []string{"SELECT * FROM sr WHERE id = 2"},
		write: throughA("DELETE FROM sr WHERE id = 1"),
	},
	{
		name: "cycle of foreign key cascades",
		setup: []string{
			"CREATE TABLE ca (id INT PRIMARY KEY, b INT)",
			"CREATE TABLE cb (id INT PRIMARY KEY, a INT, FOREIGN KEY (a) REFERENCES ca (id) ON DELETE CASCADE)",
			"ALTER TABLE ca ADD FOREIGN KEY (b) REFERENCES cb (id) ON DELETE CASCADE",
			"INSERT INTO ca VALUES (1, NULL), (2, NULL)", "INSERT INTO cb VALUES (10, 1)", "UPDATE ca SET b = 10 WHERE id = 2",
		},
		reads: []string{"SELECT * FROM ca WHERE id = 2", "SELECT * FROM cb WHERE id = 10"},
		write: direct("DELETE FROM ca WHERE id = 1"),
	},
	{
		name: "foreign key on update cascade, written directly",
		setup: []string{
			"CREATE TABLE p (id INT PRIMARY KEY)",
			"CREATE TABLE c (id INT PRIMARY KEY, pid INT, FOREIGN KEY (pid) REFERENCES p (id) ON UPDATE CASCADE)",
			"INSERT INTO p VALUES (1)", "INSERT INTO c VALUES (10, 1)",
		},
		reads: []string{"SELECT pid FROM c WHERE id = 10"},
		write: direct("UPDATE p SET id = 5 WHERE id = 1"),
	},
	{
		// The session logs statements, not rows: the text names the
		// table it writes, not what its trigger, the function it calls
		// or LOAD DATA wrote.
		name: "statement-format binlog for one session",
		setup: []string{
			"CREATE TABLE src (id INT PRIMARY KEY, v INT)", "CREATE TABLE dst (id INT PRIMARY KEY, v INT)",
			"INSERT INTO src VALUES (1, 0)", "INSERT INTO dst VALUES (1, 0)",
			"CREATE TRIGGER trg AFTER UPDATE ON src FOR EACH ROW UPDATE dst SET v = NEW.v WHERE id = NEW.id",
			"CREATE TABLE w (id INT PRIMARY KEY, v INT)", "INSERT INTO w VALUES (1, 0)",
			"CREATE FUNCTION fw() RETURNS INT MODIFIES SQL DATA BEGIN UPDATE w SET v = v + 1 WHERE id = 1; RETURN 1; END",
			"CREATE TABLE ld (id INT PRIMARY KEY, v INT)", "INSERT INTO ld VALUES (1, 0)",
		},
		reads: []string{"SELECT v FROM dst WHERE id = 1", "SELECT v FROM w WHERE id = 1", "SELECT v FROM ld WHERE id = 1"},
		write: oneSession(
			"SET SESSION binlog_format = MIXED", "UPDATE src SET v = 5 WHERE id = 1",
			"SET SESSION binlog_format = STATEMENT", "SELECT fw()",
			"LOAD DATA LOCAL INFILE 'Reader::follower-load' REPLACE INTO TABLE ld"),
	},
	{
		// DDL mycached cannot map to tables makes it forget what it
		// knew of them, but not the foreign keys it learned.
		name: "foreign key cascade after an unrelated database is created",
		setup: []string{
			"CREATE TABLE p (id INT PRIMARY KEY)",
			"CREATE TABLE c (id INT PRIMARY KEY, pid INT, FOREIGN KEY (pid) REFERENCES p (id) ON DELETE CASCADE)",
			"INSERT INTO p VALUES (1), (2)", "INSERT INTO c VALUES (10, 1), (20, 2)",
		},
		reads: []string{"SELECT * FROM c ORDER BY id", "SELECT pid FROM c WHERE id = 10"},
		write: direct("CREATE DATABASE IF NOT EXISTS mc_follower_unrelated", "DELETE FROM p WHERE id = 1",
			"DROP DATABASE mc_follower_unrelated"),
	},
	{
		name: "foreign key cascade after the parent is renamed",
		setup: []string{
			"CREATE TABLE p (id INT PRIMARY KEY)",
			"CREATE TABLE c (id INT PRIMARY KEY, pid INT, FOREIGN KEY (pid) REFERENCES p (id) ON DELETE CASCADE ON UPDATE CASCADE)",
			"INSERT INTO p VALUES (1), (2)", "INSERT INTO c VALUES (10, 1), (20, 2)",
		},
		reads: []string{"SELECT * FROM c ORDER BY id", "SELECT pid FROM c WHERE id = 20"},
		write: direct("RENAME TABLE p TO p2", "DELETE FROM p2 WHERE id = 1", "UPDATE p2 SET id = 22 WHERE id = 2"),
	},
	{
		name:  "view",
		setup: []string{"CREATE TABLE t (id INT PRIMARY KEY, v INT)", "INSERT INTO t VALUES (1, 1)", "CREATE VIEW v AS SELECT id, v * 2 AS w FROM t"},
		reads: []string{"SELECT * FROM v", "SELECT w FROM v WHERE id = 1"},
		write: throughA("UPDATE t SET v = 7 WHERE id = 1"),
	},
	{
		name: "procedure",
		setup: []string{
			"CREATE TABLE t (id INT PRIMARY KEY, v INT)", "INSERT INTO t VALUES (1, 1)",
			"CREATE PROCEDURE p() UPDATE t SET v = v + 1 WHERE id = 1",
		},
		reads: []string{"SELECT v FROM t WHERE id = 1"},
		write: throughA("CALL p()"),
	},
	{
		name: "function that writes, by DO and by SELECT",
		setup: []string{
			"CREATE TABLE t (id INT PRIMARY KEY, v INT)", "INSERT INTO t VALUES (1, 1)",
			"CREATE FUNCTION f() RETURNS INT MODIFIES SQL DATA BEGIN UPDATE t SET v = v + 1 WHERE id = 1; RETURN 1; END",
		},
		reads: []string{"SELECT v FROM t WHERE id = 1"},
		write: throughA("DO f()", "SELECT f()"),
	},
	{
		name:  "sequence",
		setup: []string{"CREATE SEQUENCE s NOCACHE"},
		reads: []string{"SELECT next_not_cached_value FROM s"},
		write: throughA("SELECT NEXTVAL(s)", "SELECT NEXTVAL(s)"),
	},
	{
		name: "merge table",
		setup: []string{
			"CREATE TABLE t1 (id INT PRIMARY KEY) ENGINE=MyISAM", "CREATE TABLE t2 (id INT PRIMARY KEY) ENGINE=MyISAM",
			"CREATE TABLE m (id INT PRIMARY KEY) ENGINE=MERGE UNION=(t1, t2) INSERT_METHOD=LAST",
			"INSERT INTO t1 VALUES (1)",
		},
		reads: []string{"SELECT COUNT(*) FROM m", "SELECT COUNT(*) FROM t2"},
		write: throughA("INSERT INTO t1 VALUES (2)", "INSERT INTO m VALUES (3)"),
	},
	{
		name:  "executable comments",
		setup: []string{"CREATE TABLE t (id INT PRIMARY KEY, v INT)", "INSERT INTO t VALUES (1, 1), (3, 3)"},
		reads: []string{"SELECT v FROM t WHERE id = 1", "SELECT v FROM t WHERE id = 3", "SELECT SUM(v) FROM t"},
		write: throughA("/*M! UPDATE t SET v = 10 WHERE id = 1 */", "/*!50000 UPDATE t SET v = 11 WHERE id = 1 */",
			"UPDATE t SET v = 30 WHERE id = 3 /*M! OR id = 1 */"),
	},
	{
		name:  "multi-statement with a tail mycached cannot parse",
		setup: []string{"CREATE TABLE t (id INT PRIMARY KEY, v INT)", "INSERT INTO t VALUES (1, 1)"},
		reads: []string{"SELECT v FROM t WHERE id = 1", "SELECT COUNT(*) FROM t"},
		write: throughA("SELECT 1; DELETE FROM t WHERE id = 1 RETURNING id"),
	},
	{
		name:  "XA COMMIT from another session",
		setup: []string{"CREATE TABLE t (id INT PRIMARY KEY, v INT)", "INSERT INTO t VALUES (1, 1)"},
		reads: []string{"SELECT v FROM t WHERE id = 1"},
		write: func(t *testing.T, f *fleet) {
			ctx := context.Background()
			c1, err := f.direct.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			id := connID(t, c1)
			for _, s := range []string{"XA START 'fx1'", "UPDATE t SET v = 42 WHERE id = 1", "XA END 'fx1'", "XA PREPARE 'fx1'"} {
				if _, err := c1.ExecContext(ctx, s); err != nil {
					t.Fatalf("%s: %v", s, err)
				}
			}
			_ = c1.Raw(func(any) error { return errBadConn }) // drop the connection; the transaction stays prepared
			c1.Close()
			waitFor(t, 10*time.Second, "the preparing session to end", func() bool { return !processExists(t, f.m, id) })
			mustExec(t, f.viaB, "XA COMMIT 'fx1'")
		},
	},
	{
		name:  "event",
		setup: []string{"CREATE TABLE t (id INT PRIMARY KEY, v INT)", "INSERT INTO t VALUES (1, 1)"},
		reads: []string{"SELECT v FROM t WHERE id = 1"},
		write: func(t *testing.T, f *fleet) {
			mustExec(t, f.direct, "CREATE EVENT e ON SCHEDULE AT CURRENT_TIMESTAMP DO UPDATE t SET v = 99 WHERE id = 1")
			waitFor(t, 20*time.Second, "the event to run", func() bool {
				return readInt(t, f.direct, "SELECT v FROM t WHERE id = 1") == 99
			})
		},
	},
}

// TestFollowerSeesBypassingWrites: every kind of write that a sidecar's
// parse does not see is seen by every sidecar once the followers have
// applied it, with the binlog's row metadata full and minimal, and with
// its events compressed.
func TestFollowerSeesBypassingWrites(t *testing.T) {
	for _, v := range []struct {
		name string
		args []string
	}{
		{"row-metadata-FULL", []string{"--binlog-row-metadata=FULL"}},
		{"row-metadata-NO_LOG", []string{"--binlog-row-metadata=NO_LOG"}},
		// MariaDB's compressed query and row events.
		{"compressed", []string{"--log-bin-compress=ON", "--log-bin-compress-min-len=10"}},
	} {
		t.Run(v.name, func(t *testing.T) {
			m, err := testenv.StartMariaDB(testenv.MariaDBOptions{ExtraArgs: append(v.args,
				"--event-scheduler=ON", "--log-bin-trust-function-creators=1")})
			if err != nil {
				t.Fatalf("StartMariaDB: %v", err)
			}
			t.Cleanup(func() { _ = m.Close() })
			for _, c := range bypassCases {
				t.Run(c.name, func(t *testing.T) {
					f := startFleet(t, m, mysqlproxy.Config{})
					for _, s := range c.setup {
						mustExec(t, f.direct, s)
					}
					f.sync(t)
					for _, q := range c.reads {
						f.warm(t, q)
					}
					c.write(t, f)
					f.sync(t)
					for _, q := range c.reads {
						f.fresh(t, q)
					}
				})
			}
		})
	}
}

// TestFollowerOwnWritesThroughRoutines: a session that writes through a
// sidecar by a function, a procedure or a trigger reads its own write at
// once, though the sidecar learns what those wrote only from the binlog.
func TestFollowerOwnWritesThroughRoutines(t *testing.T) {
	t.Parallel()
	m := privateDB(t, "--log-bin-trust-function-creators=1")
	for _, consistency := range []mysqlproxy.Consistency{mysqlproxy.ConsistencyStrict, mysqlproxy.ConsistencyBounded} {
		t.Run(string(consistency), func(t *testing.T) {
			f := startFleet(t, m, mysqlproxy.Config{Consistency: consistency})
			for _, s := range []string{
				"CREATE TABLE t (id INT PRIMARY KEY, v INT)", "INSERT INTO t VALUES (1, 0)",
				"CREATE TABLE src (id INT PRIMARY KEY)",
				"CREATE TRIGGER tr AFTER INSERT ON src FOR EACH ROW UPDATE t SET v = v + 1 WHERE id = 1",
				"CREATE FUNCTION f() RETURNS INT MODIFIES SQL DATA BEGIN UPDATE t SET v = v + 1 WHERE id = 1; RETURN 1; END",
				"CREATE PROCEDURE p() UPDATE t SET v = v + 1 WHERE id = 1",
			} {
				mustExec(t, f.direct, s)
			}
			f.sync(t)
			c := conn(t, f.viaA)
			const q = "SELECT v FROM t WHERE id = 1"
			var want int64
			stale := 0
			for i := range 30 {
				// Read until the cache answers: after the last round's
				// write, that waits for the follower.
				before := hits(t, f.viaA)
				for start := time.Now(); hits(t, f.viaA) == before; {
					if got := readInt(t, c, q); got != want {
						t.Fatalf("round %d: read %d before the write, want %d", i, got, want)
					}
					if time.Since(start) > 10*time.Second {
						t.Fatalf("round %d: no read was served from the cache in 10 s; the round proves nothing", i)
					}
				}
				switch i % 3 {
				case 0:
					execOn(t, c, "DO f()")
				case 1:
					execOn(t, c, "CALL p()")
				default:
					execOn(t, c, fmt.Sprintf("INSERT INTO src VALUES (%d)", i))
				}
				want++
				if got := readInt(t, c, q); got != want {
					stale++
					t.Errorf("round %d: the session read %d right after its own write, want %d", i, got, want)
				}
			}
			if stale > 0 {
				t.Logf("%d of 30 reads after the session's own write were stale", stale)
			}
		})
	}
}

// errBadConn makes database/sql drop a connection.
var errBadConn = driver.ErrBadConn

// TestFollowerBounded: in bounded mode a hit costs no memcached round trip
// while the follower is current, and a direct write still shows through
// both sidecars within --max-staleness.
func TestFollowerBounded(t *testing.T) {
	m := privateDB(t)
	f := startFleet(t, m, mysqlproxy.Config{Consistency: mysqlproxy.ConsistencyBounded, MaxStaleness: 2 * time.Second})
	q := f.warmRow(t)
	// The sidecar polls memcached for unlogged bumps every 100 ms, so a
	// get may fall between two readings of the counter on a loaded
	// machine: each hit is read alone, and at least half must send none.
	free := 0
	for range 20 {
		gets := mycachedStatus(t, f.viaA)["Memcached_gets"]
		dump(t, f.viaA, q)
		if mycachedStatus(t, f.viaA)["Memcached_gets"] == gets {
			free++
		}
	}
	if free < 10 {
		t.Errorf("%d of 20 bounded hits sent no get to memcached, want all but the unlogged watch's polls", free)
	}
	mustExec(t, f.direct, "UPDATE t SET v = 2 WHERE id = 1")
	start := time.Now()
	for i, db := range []*sql.DB{f.viaA, f.viaB} {
		waitFor(t, 2*time.Second, "the direct write to show", func() bool {
			return readInt(t, db, q) == 2
		})
		t.Logf("sidecar %c showed the write after %v", 'A'+i, time.Since(start))
	}
}

// TestFollowerRevoke: privileges revoked on the server take effect at
// once through every sidecar: a user who loses SELECT gets the server's
// error, not rows cached while they could read.
func TestFollowerRevoke(t *testing.T) {
	m := privateDB(t)
	f := startFleet(t, m, mysqlproxy.Config{})
	mustExec(t, f.direct, "CREATE TABLE t (id INT PRIMARY KEY, v INT)")
	mustExec(t, f.direct, "INSERT INTO t VALUES (1, 1)")
	mustExec(t, f.direct, "CREATE USER 'rv'@'127.0.0.1' IDENTIFIED BY 'rvpw'")
	mustExec(t, f.direct, "GRANT SELECT ON "+f.name+".t TO 'rv'@'127.0.0.1'")
	f.sync(t)
	q := "SELECT v FROM t WHERE id = 1"
	var users []*sql.DB
	for _, p := range []*proxy{f.a, f.b} {
		db := openDB(t, testenv.DSNFor(p.addr, "rv", "rvpw", f.name, ""))
		// A strict read goes to the server while the follower catches
		// up, which on a loaded machine takes a while.
		waitFor(t, 15*time.Second, "the user's read to be served from the cache", func() bool {
			before := hits(t, f.viaA) + hits(t, f.viaB)
			dump(t, db, q)
			return hits(t, f.viaA)+hits(t, f.viaB) > before
		})
		users = append(users, db)
	}
	mustExec(t, f.direct, "REVOKE SELECT ON "+f.name+".t FROM 'rv'@'127.0.0.1'")
	f.sync(t)
	for i, db := range users {
		_, err := queryDump(context.Background(), db, q)
		if me := mysqlErr(t, err); me.Number != 1142 {
			t.Errorf("sidecar %c after REVOKE: got %v, want error 1142", 'A'+i, err)
		}
	}
}

// TestMetadataReadsNeverWaitOnClientLocks: a dump's import locks each
// table, and alters it (DISABLE KEYS) before its inserts. The follower
// learns a table again after DDL on it; that read waited for the client's
// lock, the client's next statements queued behind it until the read
// timed out (5 s each), and the server could take the client's ALTER for
// a deadlock's victim. The sidecar's reads now never wait on a lock, and
// the table is learned once the lock is gone.
func TestMetadataReadsNeverWaitOnClientLocks(t *testing.T) {
	t.Parallel()
	m := testenvShared(t)
	f := startFleet(t, m, mysqlproxy.Config{})
	mustExec(t, f.direct, "CREATE TABLE t (id INT PRIMARY KEY, v INT)")
	f.sync(t)
	ctx := context.Background()
	c, err := f.viaA.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waiting := func() {
		t.Helper()
		// The server is shared with other tests, whose sidecars run as
		// the same account: only sessions on this test's database count.
		// A read that gives up at once (lock_wait_timeout 0) may show
		// the waiting state for an instant: a session counts when it
		// still waits, in the same statement, 200 ms later.
		const ours = "SELECT ID, INFO FROM information_schema.PROCESSLIST WHERE USER = ? AND STATE LIKE 'Waiting for%' AND (DB = ? OR INFO LIKE CONCAT('%', ?, '%')) ORDER BY ID"
		first := dump(t, f.direct, ours, testenv.BinlogUser, f.name, f.name)
		if strings.Count(first, "\n") < 2 { // the columns' line alone
			return
		}
		time.Sleep(200 * time.Millisecond)
		if again := dump(t, f.direct, ours, testenv.BinlogUser, f.name, f.name); again == first {
			t.Fatalf("sidecars' sessions wait on the client's lock:\n%s", again)
		}
	}
	for _, q := range []string{"LOCK TABLES t WRITE", "ALTER TABLE t DISABLE KEYS"} {
		if _, err := c.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// The followers read the ALTER within milliseconds; a read of theirs
	// that waits would show for seconds.
	for range 20 {
		waiting()
		time.Sleep(50 * time.Millisecond)
	}
	for _, q := range []string{"INSERT INTO t VALUES (1, 1), (2, 2)", "ALTER TABLE t ENABLE KEYS", "UNLOCK TABLES"} {
		if _, err := c.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	waiting()
	f.sync(t)
	f.warm(t, "SELECT v FROM t WHERE id = 2")
}

// TestSnapshotMissStoredWhenCurrent: a miss in a REPEATABLE READ
// transaction, which is how ORMs read, is stored once the follower proves
// the transaction's snapshot current, and another session's read of it is
// then a hit. A snapshot older than a write, made through the other
// sidecar or straight to MariaDB, seen by the follower before the read or
// not, is never stored under the write's generations.
func TestSnapshotMissStoredWhenCurrent(t *testing.T) {
	t.Parallel()
	m := testenvShared(t)
	// Every read admitted: adaptive admission would rightly reject a
	// shape read once per row, with writes between.
	f := startFleet(t, m, mysqlproxy.Config{Policy: []string{writePolicy(t, t.TempDir(), "admit.lua",
		"function cache(q, next)\n  local d = next(q)\n  if d then d.admit = \"always\" end\n  return d\nend\n")}})
	mustExec(t, f.direct, "CREATE TABLE s (id INT PRIMARY KEY, v INT)")
	mustExec(t, f.direct, "INSERT INTO s VALUES (1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (6, 6)")
	f.sync(t)
	row := func(id int) string { return fmt.Sprintf("SELECT v FROM s WHERE id = %d", id) }
	outcomes := func() [3]int64 {
		st := mycachedStatus(t, f.viaB)
		return [3]int64{st["Snapshot_stores"], st["Snapshot_stores_changed"], st["Snapshot_stores_dropped"]}
	}
	// readDecided reads q in c, whose answer must be want, until the miss
	// is stored or refused, and returns how. A read may not reach the
	// store at all on a shared server (a bypass while another test's
	// global bump is read, a memcached timeout): it is read again, in the
	// same snapshot.
	readDecided := func(c *sql.Conn, q string, want int64) string {
		t.Helper()
		for start := time.Now(); time.Since(start) < 30*time.Second; {
			before := outcomes()
			if got := readInt(t, c, q); got != want {
				t.Errorf("%s in the transaction: got %d, want %d (its snapshot)", q, got, want)
			}
			for wait := time.Now(); time.Since(wait) < 3*time.Second; time.Sleep(20 * time.Millisecond) {
				now := outcomes()
				for i, name := range []string{"stored", "changed", "dropped"} {
					if now[i] != before[i] {
						return name
					}
				}
			}
		}
		t.Fatalf("%s: the snapshot miss was neither stored nor refused in 30 s", q)
		return ""
	}
	// begin opens a transaction through B whose snapshot the server takes
	// at once: a read the cache answers would take none.
	begin := func() *sql.Conn {
		t.Helper()
		c := conn(t, f.viaB)
		execOn(t, c, "START TRANSACTION WITH CONSISTENT SNAPSHOT")
		return c
	}

	// Nothing changed since the snapshot: stored, then a hit elsewhere.
	// Another test's global bump on the shared server may refuse the
	// store, or invalidate the entry before it is read: tried again.
	served := false
	for attempt := 0; attempt < 5 && !served; attempt++ {
		c := begin()
		how := readDecided(c, row(2), 2)
		execOn(t, c, "COMMIT")
		c.Close()
		if how != "stored" {
			t.Logf("attempt %d: a snapshot miss with nothing changed since the snapshot was %s", attempt, how)
			continue
		}
		h := hits(t, f.viaB)
		if got := readInt(t, f.viaB, row(2)); got != 2 {
			t.Fatalf("%s after the transaction: got %d, want 2", row(2), got)
		}
		served = hits(t, f.viaB) > h
	}
	if !served {
		t.Errorf("%s: no snapshot miss was stored and then served as a hit in 5 transactions", row(2))
	}

	// A write after the snapshot: the transaction reads its snapshot, and
	// nothing stores it.
	id := 2
	for _, w := range []struct {
		name    string
		through *sql.DB
		sync    bool
	}{
		{"through-A-seen", f.viaA, true},
		{"directly-seen", f.direct, true},
		{"through-A-unseen", f.viaA, false},
		{"directly-unseen", f.direct, false},
	} {
		id++
		q := row(id)
		c := begin()
		mustExec(t, w.through, fmt.Sprintf("UPDATE s SET v = v + 100 WHERE id = %d", id))
		if w.sync {
			f.sync(t)
		}
		how := readDecided(c, q, int64(id))
		if w.sync && how == "stored" {
			t.Errorf("%s: a snapshot miss older than a write the follower had applied was stored", w.name)
		}
		execOn(t, c, "COMMIT")
		c.Close()
		f.sync(t)
		f.fresh(t, q)
		h := hits(t, f.viaB)
		if got := readInt(t, f.viaB, q); got != int64(id+100) {
			t.Errorf("%s: %s through B after the write: got %d, want %d", w.name, q, got, id+100)
		} else if hits(t, f.viaB) != h {
			t.Logf("%s: the read after the write was a hit (the snapshot miss was stored under the old generations)", w.name)
		}
	}
}

// TestIdleFollowerPollsSlowly: a sidecar nobody reads through reads the
// server's binlog position twice per staleness bound, not ten times, and
// the first read after the quiet spell is still a bounded hit; while
// reads come, it reads the position at the full rate again.
func TestIdleFollowerPollsSlowly(t *testing.T) {
	m := privateDB(t)
	f := startFleet(t, m, mysqlproxy.Config{Consistency: mysqlproxy.ConsistencyBounded, MaxStaleness: time.Second})
	q := f.warmRow(t)
	polls := func(d time.Duration, during func()) int64 {
		before := m.GlobalStatus(t, "Com_show_variables")
		for end := time.Now().Add(d); time.Now().Before(end); {
			during()
		}
		return m.GlobalStatus(t, "Com_show_variables") - before
	}
	time.Sleep(time.Second) // the warm-up's reads are past
	idle := polls(3*time.Second, func() { time.Sleep(50 * time.Millisecond) })
	// Two followers at 100 ms read it about 60 times in 3 s; at 500 ms,
	// about 12.
	if idle > 24 {
		t.Errorf("two idle followers read the server's position %d times in 3s, want at most 24", idle)
	}
	before := hits(t, f.viaA)
	if got := readInt(t, f.viaA, q); got != 1 {
		t.Fatalf("%s after the quiet spell: got %d, want 1", q, got)
	}
	if hits(t, f.viaA) == before {
		t.Errorf("the first read after the quiet spell was not a hit: the follower did not look current")
	}
	busy := polls(3*time.Second, func() { readInt(t, f.viaA, q); time.Sleep(10 * time.Millisecond) })
	if busy < idle+12 {
		t.Errorf("with reads coming, the followers read the server's position %d times in 3s (idle: %d), want the busy one at its full rate", busy, idle)
	}
	t.Logf("position reads in 3s: idle %d, one sidecar busy %d", idle, busy)
}

// TestIdleFollowerResetMaster: RESET MASTER and a direct write made while
// the bounded sidecars were idle (their followers reading the server's
// position at the idle rate) show through both within --max-staleness.
func TestIdleFollowerResetMaster(t *testing.T) {
	m := privateDB(t)
	f := startFleet(t, m, mysqlproxy.Config{Consistency: mysqlproxy.ConsistencyBounded, MaxStaleness: time.Second})
	q := f.warmRow(t)
	for round := 2; round <= 4; round++ {
		time.Sleep(2 * time.Second) // idle
		m.Exec(t, "RESET MASTER")
		mustExec(t, f.direct, fmt.Sprintf("UPDATE t SET v = %d WHERE id = 1", round))
		wrote := time.Now()
		for i, db := range []*sql.DB{f.viaA, f.viaB} {
			for {
				got := readInt(t, db, q)
				if got == int64(round) {
					break
				}
				if late := time.Since(wrote); late > 1500*time.Millisecond {
					t.Fatalf("round %d: sidecar %c served %d %v after the direct write that followed RESET MASTER, want %d within the 1s bound", round, 'A'+i, got, late, round)
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
}

// TestPartitionDDLMovesRows: DDL that moves rows between tables (a
// partition exchanged with a table, a partition made a table, a table
// made a partition) changes what reads of both tables return, by whole
// tables and by primary key, whether it runs through a sidecar or
// straight on the server.
func TestPartitionDDLMovesRows(t *testing.T) {
	m := testenvShared(t)
	f := startFleet(t, m, mysqlproxy.Config{})
	for i, tc := range []struct{ name, ddl string }{
		{"exchange", "ALTER TABLE p%[1]d EXCHANGE PARTITION p0 WITH TABLE x%[1]d"},
		{"partition to table", "ALTER TABLE p%[1]d CONVERT PARTITION p1 TO TABLE y%[1]d"},
		{"table to partition", "ALTER TABLE p%[1]d CONVERT TABLE z%[1]d TO PARTITION p2 VALUES LESS THAN (30)"},
	} {
		for j, via := range []string{"direct", "sidecar"} {
			t.Run(tc.name+"/"+via, func(t *testing.T) {
				n := 2*i + j
				for _, q := range []string{
					"CREATE TABLE p%[1]d (id INT PRIMARY KEY, v INT) PARTITION BY RANGE (id) " +
						"(PARTITION p0 VALUES LESS THAN (10), PARTITION p1 VALUES LESS THAN (20))",
					"INSERT INTO p%[1]d VALUES (1, 1), (11, 11)",
					"CREATE TABLE x%[1]d (id INT PRIMARY KEY, v INT)",
					"INSERT INTO x%[1]d VALUES (1, 100), (2, 200)",
					"CREATE TABLE z%[1]d (id INT PRIMARY KEY, v INT)",
					"INSERT INTO z%[1]d VALUES (25, 250)",
				} {
					mustExec(t, f.direct, fmt.Sprintf(q, n))
				}
				f.sync(t)
				var reads []string
				for _, q := range []string{
					"SELECT SUM(v) FROM p%[1]d", "SELECT v FROM p%[1]d WHERE id = 1", "SELECT v FROM p%[1]d WHERE id = 25",
					"SELECT SUM(v) FROM x%[1]d", "SELECT v FROM x%[1]d WHERE id = 1", "SELECT v FROM x%[1]d WHERE id = 2",
				} {
					reads = append(reads, fmt.Sprintf(q, n))
				}
				f.warmAll(t, reads...)
				if via == "direct" {
					mustExec(t, f.direct, fmt.Sprintf(tc.ddl, n))
					f.syncFresh(t, reads...)
					return
				}
				mustExec(t, f.viaA, fmt.Sprintf(tc.ddl, n))
				for _, q := range reads {
					f.fresh(t, q) // strict: seen at once through both
				}
			})
		}
	}
}
