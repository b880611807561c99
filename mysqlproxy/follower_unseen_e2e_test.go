package mysqlproxy_test

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mycached/mycached/mysqlproxy"
	"github.com/mycached/mycached/mysqlproxy/internal/testenv"
)

// TestFollowerOnUnloggedReplica: sidecars in front of a replica that does
// not write what it replicates to its own binlog (log_slave_updates=OFF,
// MariaDB's default) see the writes made on its primary, which reach the
// replica and never its binlog. Directly, the replica serves them once it
// has applied them; through the sidecars, so do the cached reads, within
// the followers' poll, in both consistency modes.
func TestFollowerOnUnloggedReplica(t *testing.T) {
	t.Parallel()
	primary := privateDB(t)
	replica, err := testenv.StartMariaDB(testenv.MariaDBOptions{ExtraArgs: []string{"--server-id=2", "--skip-log-slave-updates"}})
	if err != nil {
		t.Fatalf("StartMariaDB: %v", err)
	}
	t.Cleanup(func() { _ = replica.Close() })
	// Both datadirs are copies of one template: the replica starts from
	// the primary's position now.
	replica.Exec(t, "SET GLOBAL gtid_slave_pos = ?", primary.QueryString(t, "SELECT @@gtid_binlog_pos"))
	replica.Exec(t, fmt.Sprintf("CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=%d, MASTER_USER='%s', MASTER_PASSWORD='%s', MASTER_USE_GTID=slave_pos",
		primary.Port, primary.RootUser, primary.RootPassword))
	replica.Exec(t, "START SLAVE")
	t.Cleanup(func() {
		if db := replica.AdminDB(); db != nil {
			_, _ = db.Exec("STOP SLAVE")
		}
	})
	applied := func(t *testing.T) {
		t.Helper()
		pos := primary.QueryString(t, "SELECT @@gtid_binlog_pos")
		if got := replica.QueryString(t, "SELECT MASTER_GTID_WAIT(?, 30)", pos); got != "0" {
			t.Fatalf("the replica did not apply %s: MASTER_GTID_WAIT gave %s\n%s", pos, got,
				replica.QueryString(t, "SELECT CONCAT_WS(' ', Last_IO_Error, Last_SQL_Error) FROM information_schema.SLAVE_STATUS"))
		}
	}
	applied(t)
	if got := replica.QueryString(t, "SELECT @@log_slave_updates"); got != "0" {
		t.Fatalf("log_slave_updates is %s on the replica, want 0", got)
	}

	for _, consistency := range []mysqlproxy.Consistency{mysqlproxy.ConsistencyStrict, mysqlproxy.ConsistencyBounded} {
		t.Run(string(consistency), func(t *testing.T) {
			db := primary.NewDatabase(t)
			primary.Exec(t, "CREATE TABLE "+db+".t (id INT PRIMARY KEY, v INT)")
			primary.Exec(t, "INSERT INTO "+db+".t VALUES (1, 1), (2, 2)")
			applied(t)
			mc := privateMemcached(t)
			cfg := withBinlog(mysqlproxy.Config{
				Backend: replica.Addr, Memcached: []string{mc.Addr}, MemcachedTimeout: 5 * time.Second,
				Consistency: consistency, MaxStaleness: time.Second,
			})
			a, b := startProxy(t, cfg), startProxy(t, cfg)
			direct := openDB(t, rootDSN(replica.Addr, db, ""))
			onPrimary := openDB(t, rootDSN(primary.Addr, db, ""))
			vias := []*sql.DB{openDB(t, rootDSN(a.addr, db, "")), openDB(t, rootDSN(b.addr, db, ""))}
			reads := []string{"SELECT v FROM t WHERE id = 1", "SELECT COUNT(*), SUM(v) FROM t"}
			// Warm: each read is served from the cache through both
			// sidecars, after the first invalidation a follower makes
			// on a replica.
			for _, q := range reads {
				for i, via := range vias {
					waitFor(t, 10*time.Second, fmt.Sprintf("%s served from sidecar %c's cache", q, 'A'+i), func() bool {
						before := hits(t, via)
						if got, want := dump(t, via, q), dump(t, direct, q); got != want {
							t.Fatalf("%s before the write: got %s, want %s", q, got, want)
						}
						return hits(t, via) > before
					})
				}
			}
			for round, w := range []string{
				"UPDATE t SET v = v + 10 WHERE id = 1",
				"INSERT INTO t VALUES (3, 3)",
				"DELETE FROM t WHERE id = 2",
			} {
				mustExec(t, onPrimary, w)
				applied(t)
				for _, q := range reads {
					want := dump(t, direct, q)
					for i, via := range vias {
						got := dump(t, via, q)
						for start := time.Now(); got != want && time.Since(start) < 5*time.Second; got = dump(t, via, q) {
							time.Sleep(20 * time.Millisecond)
						}
						if got != want {
							t.Errorf("round %d: 5 s after %q on the primary, %s through sidecar %c gave %s, want %s (stale)", round, w, q, 'A'+i, got, want)
						}
					}
				}
			}
			if n := mycachedStatus(t, vias[0])["Binlog_unlogged_changes"]; n == 0 {
				t.Errorf("Binlog_unlogged_changes is 0 on sidecar A")
			}
		})
	}
}

// TestFollowerBinlogFilters: a server whose binlog leaves a database out
// (binlog_ignore_db) never tells the followers of writes to its tables:
// reads of them are not cached, so a write straight to the server shows
// through both sidecars at once. Reads of the databases it logs are
// cached and invalidated as usual.
func TestFollowerBinlogFilters(t *testing.T) {
	t.Parallel()
	m := privateDB(t, "--binlog-ignore-db=scratch")
	m.Exec(t, "CREATE DATABASE scratch")
	m.Exec(t, "CREATE TABLE scratch.s (id INT PRIMARY KEY, v INT)")
	m.Exec(t, "INSERT INTO scratch.s VALUES (1, 1)")
	f := startFleet(t, m, mysqlproxy.Config{})
	mustExec(t, f.direct, "CREATE TABLE t (id INT PRIMARY KEY, v INT)")
	mustExec(t, f.direct, "INSERT INTO t VALUES (1, 1)")
	mustExec(t, f.direct, "CREATE VIEW sv AS SELECT v FROM scratch.s")
	f.sync(t)
	const logged = "SELECT v FROM t WHERE id = 1"
	f.warm(t, logged)
	filtered := []string{"SELECT v FROM scratch.s WHERE id = 1", "SELECT COUNT(*), SUM(v) FROM scratch.s", "SELECT v FROM sv"}
	for _, q := range filtered {
		f.uncached(t, q)
	}
	// Written straight to the server, from a session in each database.
	mustExec(t, f.direct, "UPDATE scratch.s SET v = 2 WHERE id = 1")
	c := conn(t, f.direct)
	execOn(t, c, "USE scratch")
	execOn(t, c, "INSERT INTO s VALUES (2, 2)")
	for _, q := range filtered {
		f.fresh(t, q)
	}
	mustExec(t, f.direct, "UPDATE t SET v = 2 WHERE id = 1")
	f.sync(t)
	f.fresh(t, logged)
}

// TestRemoteEngineUncached: a FEDERATED table's rows live on another
// server, and change with no write to the table, so no binlog event and
// no write through a sidecar tells of it: reads of it are not cached.
// Here it reads a table of the same server, written straight to it.
func TestRemoteEngineUncached(t *testing.T) {
	t.Parallel()
	m := privateDB(t)
	m.Exec(t, "INSTALL SONAME 'ha_federatedx'")
	f := startFleet(t, m, mysqlproxy.Config{})
	mustExec(t, f.direct, "CREATE TABLE r (id INT PRIMARY KEY, v INT)")
	mustExec(t, f.direct, "INSERT INTO r VALUES (1, 1)")
	mustExec(t, f.direct, fmt.Sprintf("CREATE TABLE fed (id INT PRIMARY KEY, v INT) ENGINE=FEDERATED CONNECTION='mysql://%s:%s@127.0.0.1:%d/%s/r'",
		m.RootUser, m.RootPassword, m.Port, f.name))
	mustExec(t, f.direct, "CREATE VIEW fv AS SELECT v FROM fed")
	f.sync(t)
	reads := []string{"SELECT v FROM fed WHERE id = 1", "SELECT COUNT(*), SUM(v) FROM fed", "SELECT v FROM fv"}
	for _, q := range reads {
		f.uncached(t, q)
	}
	mustExec(t, f.direct, "UPDATE r SET v = 2 WHERE id = 1")
	mustExec(t, f.direct, "INSERT INTO r VALUES (2, 2)")
	f.sync(t)
	for _, q := range reads {
		f.fresh(t, q)
	}
}

// TestFilesChangedOutsideTheServer: a CSV table's rows are a file that
// other programs write; the server reads the file afresh after FLUSH
// TABLES. Reads of it are not cached. A MyISAM table's files copied in
// take effect at FLUSH TABLES too, which the binlog logs: the tables it
// names, or every table, are invalidated, whether it ran through a
// sidecar or straight on the server.
func TestFilesChangedOutsideTheServer(t *testing.T) {
	t.Parallel()
	m := privateDB(t)
	f := startFleet(t, m, mysqlproxy.Config{})
	mustExec(t, f.direct, "CREATE TABLE c (id INT NOT NULL, v INT NOT NULL) ENGINE=CSV")
	mustExec(t, f.direct, "INSERT INTO c VALUES (1, 1)")
	mustExec(t, f.direct, "CREATE TABLE m1 (id INT PRIMARY KEY, v INT) ENGINE=MyISAM")
	mustExec(t, f.direct, "CREATE TABLE m2 (id INT PRIMARY KEY, v INT) ENGINE=MyISAM")
	f.sync(t)
	f.uncached(t, "SELECT v FROM c WHERE id = 1")
	f.uncached(t, "SELECT COUNT(*) FROM c")
	csv := filepath.Join(m.DataDir, f.name, "c.CSV")
	fh, err := os.OpenFile(csv, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = fh.WriteString("2,2\n")
	if cerr := fh.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, f.direct, "FLUSH TABLES c")
	f.uncached(t, "SELECT COUNT(*) FROM c")

	// m2's files copied over m1's, each time with other rows, then FLUSH
	// TABLES, named or not, through a sidecar or not.
	for i, flush := range []struct {
		on  *sql.DB
		sql string
	}{{f.direct, "FLUSH TABLES m1"}, {f.viaA, "FLUSH TABLE m1, m2"}, {f.direct, "FLUSH TABLES"}, {f.viaB, "FLUSH NO_WRITE_TO_BINLOG TABLES"}} {
		mustExec(t, f.direct, "TRUNCATE m1")
		mustExec(t, f.direct, fmt.Sprintf("INSERT INTO m1 VALUES (1, %d)", 10*i))
		mustExec(t, f.direct, "TRUNCATE m2")
		mustExec(t, f.direct, fmt.Sprintf("INSERT INTO m2 VALUES (1, %d), (2, %d)", 10*i+1, 10*i+1))
		f.sync(t)
		reads := []string{"SELECT v FROM m1 WHERE id = 1", "SELECT COUNT(*), SUM(v) FROM m1"}
		for _, q := range reads {
			f.warm(t, q)
		}
		mustExec(t, f.direct, "FLUSH TABLES m1, m2 WITH READ LOCK")
		for _, ext := range []string{".MYD", ".MYI"} {
			b, err := os.ReadFile(filepath.Join(m.DataDir, f.name, "m2"+ext))
			if err == nil {
				err = os.WriteFile(filepath.Join(m.DataDir, f.name, "m1"+ext), b, 0o660)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		mustExec(t, f.direct, "UNLOCK TABLES")
		mustExec(t, flush.on, flush.sql)
		if flush.on == f.direct {
			f.sync(t)
		}
		t.Run(flush.sql, func(t *testing.T) {
			for _, q := range reads {
				f.fresh(t, q)
			}
		})
	}
}

// TestFollowerResetMaster: after RESET MASTER the server numbers its
// transactions from 1 again, below the position the followers applied.
// A write numbered there is seen, and so are the ones after it, though
// the server goes on past the old position before the followers' old
// streams end.
func TestFollowerResetMaster(t *testing.T) {
	t.Parallel()
	m := privateDB(t)
	f := startFleet(t, m, mysqlproxy.Config{})
	mustExec(t, f.direct, "CREATE TABLE t (id INT PRIMARY KEY, v INT)")
	mustExec(t, f.direct, "CREATE TABLE other (id INT PRIMARY KEY AUTO_INCREMENT)")
	mustExec(t, f.direct, "INSERT INTO t VALUES (1, 1), (2, 2)")
	for range 20 {
		mustExec(t, f.direct, "INSERT INTO other VALUES ()")
	}
	f.sync(t)
	reads := []string{"SELECT v FROM t WHERE id = 1", "SELECT v FROM t WHERE id = 2"}
	f.warmAll(t, reads...)
	old, seq := binlogSeq(t, m)
	mustExec(t, f.direct, "RESET MASTER")
	mustExec(t, f.direct, "UPDATE t SET v = 10 WHERE id = 1") // transaction 1
	// Long enough for a poll of the server's position, and short of the
	// time the old streams take to fail.
	time.Sleep(300 * time.Millisecond)
	for range seq + 5 {
		mustExec(t, f.direct, "INSERT INTO other VALUES ()")
	}
	mustExec(t, f.direct, "UPDATE t SET v = 20 WHERE id = 2")
	t.Logf("position %s before RESET MASTER, %s after", old, m.QueryString(t, "SELECT @@gtid_binlog_pos"))
	f.syncFresh(t, reads...)
	// Later writes are seen one by one again.
	f.warmAll(t, reads...)
	mustExec(t, f.direct, "UPDATE t SET v = 30 WHERE id = 1")
	f.syncFresh(t, reads...)
}

// TestFollowerResetMasterNumberedPast: RESET MASTER, then a transaction
// numbered past the position the followers applied (SET gtid_seq_no).
// The followers' streams wait on the old binlog, and a new stream from
// their position would skip every transaction up to it: they find the
// server's binlog no longer holds their position, and invalidate
// everything. Later writes are seen one by one again.
func TestFollowerResetMasterNumberedPast(t *testing.T) {
	t.Parallel()
	m := privateDB(t)
	f := startFleet(t, m, mysqlproxy.Config{})
	mustExec(t, f.direct, "CREATE TABLE t (id INT PRIMARY KEY, v INT)")
	mustExec(t, f.direct, "INSERT INTO t VALUES (1, 1), (2, 2)")
	f.sync(t)
	reads := []string{"SELECT v FROM t WHERE id = 1", "SELECT v FROM t WHERE id = 2"}
	f.warmAll(t, reads...)
	old, seq := binlogSeq(t, m)
	w := conn(t, f.direct)
	execOn(t, w, "RESET MASTER")
	execOn(t, w, fmt.Sprintf("SET gtid_seq_no = %d", seq+1000))
	execOn(t, w, "UPDATE t SET v = 10 WHERE id = 1")
	t.Logf("position %s before RESET MASTER, %s after", old, m.QueryString(t, "SELECT @@gtid_binlog_pos"))
	f.syncFresh(t, reads...)
	f.warmAll(t, reads...)
	mustExec(t, f.direct, "UPDATE t SET v = 20 WHERE id = 2")
	f.syncFresh(t, reads...)
}

// TestFollowerResetMasterToSamePosition: RESET MASTER, then as many
// transactions as the followers had applied since the last one. The
// server is back at the position the followers hold, and its new binlog
// holds it at the same offset of a file of the same name: neither the
// position nor the file tells that the followers' streams read a binlog
// that is gone. The server's count of RESET statements does.
func TestFollowerResetMasterToSamePosition(t *testing.T) {
	t.Parallel()
	m := privateDB(t)
	f := startFleet(t, m, mysqlproxy.Config{})
	mustExec(t, f.direct, "CREATE TABLE t (id INT PRIMARY KEY, v INT)")
	mustExec(t, f.direct, "INSERT INTO t VALUES (1, 0), (2, 0)")
	const k = 3
	w := conn(t, f.direct)
	execOn(t, w, "RESET MASTER")
	for range k {
		execOn(t, w, "UPDATE t SET v = v + 1 WHERE id = 2")
	}
	f.sync(t)
	reads := []string{"SELECT v FROM t WHERE id = 1", "SELECT v FROM t WHERE id = 2"}
	f.warmAll(t, reads...)
	old := m.QueryString(t, "SELECT @@gtid_binlog_pos")
	execOn(t, w, "RESET MASTER")
	for range k {
		execOn(t, w, "UPDATE t SET v = v + 1 WHERE id = 1")
	}
	t.Logf("position %s before RESET MASTER, %s after", old, m.QueryString(t, "SELECT @@gtid_binlog_pos"))
	time.Sleep(1500 * time.Millisecond) // a reading of the count of RESET statements
	f.syncFresh(t, reads...)
	// Later writes are seen one by one again.
	f.warmAll(t, reads...)
	execOn(t, w, "UPDATE t SET v = 30 WHERE id = 2")
	f.syncFresh(t, reads...)
}

// binlogSeq returns the server's binlog position and its sequence number
// (of its one domain).
func binlogSeq(t *testing.T, m *testenv.MariaDB) (string, int) {
	t.Helper()
	pos := m.QueryString(t, "SELECT @@gtid_binlog_pos")
	var seq int
	if _, err := fmt.Sscanf(pos[strings.LastIndex(pos, "-")+1:], "%d", &seq); err != nil {
		t.Fatalf("position %q: %v", pos, err)
	}
	return pos, seq
}

// uncached checks that q, read three times through each sidecar, gives
// what MariaDB gives and is never served from the cache.
func (f *fleet) uncached(t *testing.T, q string) {
	t.Helper()
	for i, via := range []*sql.DB{f.viaA, f.viaB} {
		before := hits(t, via)
		for range 3 {
			if got, want := dump(t, via, q), dump(t, f.direct, q); got != want {
				t.Fatalf("%s through sidecar %c: got %s, want %s", q, 'A'+i, got, want)
			}
		}
		if hits(t, via) > before {
			t.Errorf("%s was served from sidecar %c's cache", q, 'A'+i)
		}
	}
}

// TestGeneratedColumnsThatVary: MariaDB lets a VIRTUAL column call NOW(),
// RAND() or CONNECTION_ID(). Its values change with no write at all, so
// neither the table nor a view over it is cached. A table whose generated
// columns are deterministic still is, however its definition is quoted.
func TestGeneratedColumnsThatVary(t *testing.T) {
	t.Parallel()
	m := privateDB(t)
	f := startFleet(t, m, mysqlproxy.Config{})
	mustExec(t, f.direct, "CREATE TABLE g (id INT PRIMARY KEY, a INT, n DATETIME(6) AS (NOW(6)) VIRTUAL, c BIGINT AS (CONNECTION_ID()) VIRTUAL)")
	mustExec(t, f.direct, "CREATE TABLE r (id INT PRIMARY KEY, x DOUBLE AS (RAND() * `id`) VIRTUAL)")
	mustExec(t, f.direct, "CREATE VIEW gv AS SELECT id, n FROM g")
	mustExec(t, f.direct, "CREATE TABLE k (id INT PRIMARY KEY, a INT, "+
		"b INT AS (a + 1) VIRTUAL INVISIBLE COMMENT 'now() ) VIRTUAL', "+
		"s VARCHAR(20) AS (CONCAT('rand()', a, ')')) STORED)")
	mustExec(t, f.direct, "INSERT INTO g (id, a) VALUES (1, 1)")
	mustExec(t, f.direct, "INSERT INTO r (id) VALUES (1)")
	mustExec(t, f.direct, "INSERT INTO k (id, a) VALUES (1, 1)")
	f.sync(t)
	for _, q := range []string{"SELECT n, c FROM g WHERE id = 1", "SELECT a FROM g WHERE id = 1", "SELECT n FROM gv", "SELECT x FROM r"} {
		for i, via := range []*sql.DB{f.viaA, f.viaB} {
			before := hits(t, via)
			seen := map[string]bool{}
			for range 3 {
				got := dump(t, via, q)
				if seen[got] && !strings.HasPrefix(q, "SELECT a ") {
					t.Errorf("%s through sidecar %c gave %s twice", q, 'A'+i, got)
				}
				seen[got] = true
				time.Sleep(2 * time.Millisecond)
			}
			if hits(t, via) > before {
				t.Errorf("%s was served from sidecar %c's cache\n%s", q, 'A'+i, dump(t, via, "SHOW MYCACHED QUERIES"))
			}
		}
	}
	f.warm(t, "SELECT b, s FROM k WHERE id = 1")
}

// TestStoredFunctionsNamedLikeBuiltins: MariaDB calls a stored function of
// the session's database where a built-in's name is spaced from its "("
// (count (1), mid ('abc', 1, 1)), and wherever the name is a built-in of
// MySQL or of later MariaDB versions only (regexp_like, format_bytes).
// Such reads are relayed, never cached, and a write through a sidecar that
// calls one takes a stored function's path: what it wrote is fresh at once.
func TestStoredFunctionsNamedLikeBuiltins(t *testing.T) {
	t.Parallel()
	m := privateDB(t)
	f := startFleet(t, m, mysqlproxy.Config{})
	mustExec(t, f.direct, "CREATE TABLE src (v INT)")
	mustExec(t, f.direct, "INSERT INTO src VALUES (1)")
	mustExec(t, f.direct, "CREATE TABLE log (id INT AUTO_INCREMENT PRIMARY KEY, n INT)")
	for _, fn := range []string{"count", "mid", "regexp_like", "format_bytes"} {
		mustExec(t, f.direct, "CREATE FUNCTION `"+fn+"`(a INT) RETURNS INT READS SQL DATA RETURN (SELECT v + a FROM src LIMIT 1)")
	}
	mustExec(t, f.direct, "CREATE FUNCTION `adddate`(a INT, b INT) RETURNS INT MODIFIES SQL DATA DETERMINISTIC BEGIN INSERT INTO log (n) VALUES (a); RETURN a + b; END")
	// A view over such calls reads what they read.
	mustExec(t, f.direct, "CREATE VIEW vf AS SELECT format_bytes(1) AS f, count (2) AS c")
	f.sync(t)
	reads := []string{"SELECT count (1)", "SELECT mid (1)", "SELECT `count`(1)", "SELECT regexp_like(1)", "SELECT format_bytes(1)", "SELECT * FROM vf"}
	for _, q := range reads {
		f.uncached(t, q)
	}
	mustExec(t, f.direct, "UPDATE src SET v = v + 1")
	f.sync(t)
	for _, q := range reads {
		f.fresh(t, q)
	}
	// A write through A by a function that writes: the log's count is
	// read through B before any follower applies it.
	qLog := "SELECT COUNT(*) FROM log"
	f.warm(t, qLog)
	mustExec(t, f.viaA, "DO adddate (7, 1)")
	f.fresh(t, qLog)
}

// TestNamesWithDots: a database or table name may hold a dot. The table b
// of database x.a and the table a.b of database x are two tables, with
// other keys; a write to one invalidates its own reads, whether the
// sidecar learned the other first or not, and a view named like a table
// of another database reads its own base table.
func TestNamesWithDots(t *testing.T) {
	t.Parallel()
	m := privateDB(t)
	f := startFleet(t, m, mysqlproxy.Config{})
	other := "`" + f.name + ".a`"
	for _, q := range []string{
		"CREATE DATABASE " + other,
		"CREATE TABLE `a.b` (id INT PRIMARY KEY, v INT)",
		"INSERT INTO `a.b` VALUES (1, 10), (2, 20)",
		"CREATE TABLE " + other + ".b (v INT, id INT, PRIMARY KEY (id))",
		"INSERT INTO " + other + ".b VALUES (100, 1), (200, 2)",
		"CREATE TABLE " + other + ".d (id INT PRIMARY KEY, v INT)",
		"INSERT INTO " + other + ".d VALUES (1, 1)",
		"CREATE TABLE vx (id INT PRIMARY KEY, v INT)",
		"INSERT INTO vx VALUES (1, 100)",
		"CREATE VIEW `a.d` AS SELECT id, v FROM vx",
	} {
		mustExec(t, f.direct, q)
	}
	f.sync(t)
	reads := []string{
		"SELECT * FROM `a.b` WHERE id = 2", "SELECT * FROM " + other + ".b WHERE id = 2",
		"SELECT * FROM " + other + ".d", "SELECT * FROM `a.d`", "SELECT * FROM `a.d` WHERE id = 1",
	}
	for _, q := range reads {
		f.warm(t, q)
	}
	for _, w := range []struct {
		name string
		run  func()
	}{
		{"direct write to x.a.b", func() { mustExec(t, f.direct, "UPDATE "+other+".b SET v = v + 1 WHERE id = 2") }},
		{"write to x.a.b through A", func() { mustExec(t, f.viaA, "UPDATE "+other+".b SET v = v + 1 WHERE id = 2") }},
		{"direct write to x.`a.b`", func() { mustExec(t, f.direct, "UPDATE `a.b` SET v = v + 1 WHERE id = 2") }},
		{"direct write under the view", func() { mustExec(t, f.direct, "UPDATE vx SET v = v + 1 WHERE id = 1") }},
		{"write under the view through A", func() { mustExec(t, f.viaA, "UPDATE vx SET v = v + 1 WHERE id = 1") }},
	} {
		t.Run(w.name, func(t *testing.T) {
			for _, q := range reads {
				dump(t, f.viaA, q)
				dump(t, f.viaB, q)
			}
			w.run()
			f.sync(t)
			for _, q := range reads {
				f.fresh(t, q)
			}
		})
	}
}

// TestCreateTableReadWithItsQuotes: what SHOW CREATE TABLE says of a
// table (its engine, its foreign keys, a MERGE table's union, its
// generated columns) is read outside quoted names and strings, which may
// hold anything: a column `p)`, a comment ") ENGINE=InnoDB" or
// "UNION=(x)", a name with a newline.
func TestCreateTableReadWithItsQuotes(t *testing.T) {
	t.Parallel()
	m := privateDB(t)
	f := startFleet(t, m, mysqlproxy.Config{})
	for _, q := range []string{
		"CREATE TABLE fp (id INT PRIMARY KEY)",
		"CREATE TABLE fc (id INT PRIMARY KEY, `p)` INT, FOREIGN KEY (`p)`) REFERENCES fp (id) ON DELETE CASCADE)",
		"INSERT INTO fp VALUES (1), (2)", "INSERT INTO fc VALUES (10, 1), (20, 2)",
		"CREATE TABLE ma (id INT, v INT) ENGINE=MyISAM", "INSERT INTO ma VALUES (1, 1)",
		"CREATE TABLE me (id INT, v INT COMMENT ') ENGINE=InnoDB') ENGINE=MERGE UNION=(ma)",
		"CREATE TABLE mu (id INT, v INT COMMENT 'UNION=(`mz`)') ENGINE=MERGE UNION=(ma)",
		"CREATE TABLE gn (id INT PRIMARY KEY, `g\nx` DOUBLE AS (RAND()) VIRTUAL)", "INSERT INTO gn (id) VALUES (1)",
	} {
		mustExec(t, f.direct, q)
	}
	f.sync(t)
	reads := []string{"SELECT * FROM fc", "SELECT * FROM fc WHERE id = 10", "SELECT * FROM me", "SELECT * FROM mu"}
	for _, q := range reads {
		f.warm(t, q)
	}
	mustExec(t, f.direct, "DELETE FROM fp WHERE id = 1")
	mustExec(t, f.direct, "UPDATE ma SET v = v + 1")
	f.sync(t)
	for _, q := range reads {
		f.fresh(t, q)
	}
	// Its values change at every read: never served from the cache.
	for i, via := range []*sql.DB{f.viaA, f.viaB} {
		before := hits(t, via)
		for range 3 {
			dump(t, via, "SELECT * FROM gn")
		}
		if hits(t, via) > before {
			t.Errorf("SELECT * FROM gn, whose column is RAND(), was served from sidecar %c's cache", 'A'+i)
		}
	}
}
