package mysqlproxy_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mycached/mycached/mysqlproxy"
	"github.com/mycached/mycached/mysqlproxy/internal/testenv"
)

// privateDB starts a MariaDB of the test's own, so that its status
// counters move only with what the test does.
func privateDB(t testing.TB, extraArgs ...string) *testenv.MariaDB {
	t.Helper()
	m, err := testenv.StartMariaDB(testenv.MariaDBOptions{ExtraArgs: extraArgs})
	if err != nil {
		t.Fatalf("StartMariaDB: %v", err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// tiers are the cache configurations every hit test runs against.
func tiers(t *testing.T) map[string]func(backend string) mysqlproxy.Config {
	return map[string]func(string) mysqlproxy.Config{
		"l1": func(b string) mysqlproxy.Config { return mysqlproxy.Config{Backend: b} },
		"memcached-only": func(b string) mysqlproxy.Config {
			// A loaded machine can make memcached miss the default
			// deadline; mycached then fails open, and a hit these tests
			// count on is a miss. The deadline has tests of its own.
			return mysqlproxy.Config{Backend: b, CacheMemory: -1, Memcached: []string{privateMemcached(t).Addr},
				MemcachedTimeout: 10 * time.Second}
		},
	}
}

func privateMemcached(t testing.TB) *testenv.Memcached {
	t.Helper()
	mc, err := testenv.StartMemcached(testenv.MemcachedOptions{})
	if err != nil {
		t.Fatalf("StartMemcached: %v", err)
	}
	t.Cleanup(func() { _ = mc.Close() })
	return mc
}

func mustExec(t testing.TB, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func dump(t testing.TB, db *sql.DB, q string, args ...any) string {
	t.Helper()
	s, err := queryDump(context.Background(), db, q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return s
}

const heavy = "SELECT g, COUNT(*), SUM(v) FROM t GROUP BY g ORDER BY g"

func loadHeavy(t testing.TB, m *testenv.MariaDB, db string) {
	t.Helper()
	m.Exec(t, "CREATE TABLE "+db+".t (id INT PRIMARY KEY AUTO_INCREMENT, g INT, v INT, doc TEXT)")
	var b strings.Builder
	b.WriteString("INSERT INTO " + db + ".t (g, v) VALUES ")
	for i := 0; i < 2000; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "(%d,%d)", i%7, i)
	}
	m.Exec(t, b.String())
}

// TestHitsDoNotTouchMySQL: the second run of a cacheable query gives the
// client the same rows, and MariaDB does not execute it.
func TestHitsDoNotTouchMySQL(t *testing.T) {
	for name, cfg := range tiers(t) {
		t.Run(name, func(t *testing.T) {
			m := privateDB(t)
			db := m.NewDatabase(t)
			loadHeavy(t, m, db)
			p := startProxy(t, cfg(m.Addr))
			for _, mode := range []string{"", "interpolateParams=true"} {
				c := openDB(t, rootDSN(p.addr, db, mode))
				c.SetMaxOpenConns(1)
				// Text protocol, and server-side prepared statements (a
				// query with an argument and no interpolation).
				first := dump(t, c, heavy)
				storesSettled(t, c)
				before := m.GlobalStatus(t, "Com_select")
				second := dump(t, c, heavy)
				if after := m.GlobalStatus(t, "Com_select"); after != before {
					t.Errorf("%s text hit: Com_select moved %d -> %d", mode, before, after)
				}
				if first != second {
					t.Errorf("%s text hit: got %s, want %s", mode, second, first)
				}
				q := "SELECT g, COUNT(*) FROM t WHERE g >= ? GROUP BY g ORDER BY g"
				first = dump(t, c, q, 3)
				storesSettled(t, c)
				before = m.GlobalStatus(t, "Com_select")
				stmtBefore := m.GlobalStatus(t, "Com_stmt_execute")
				second = dump(t, c, q, 3)
				if after := m.GlobalStatus(t, "Com_select"); after != before {
					t.Errorf("%s prepared hit: Com_select moved %d -> %d", mode, before, after)
				}
				if after := m.GlobalStatus(t, "Com_stmt_execute"); after != stmtBefore {
					t.Errorf("%s prepared hit: Com_stmt_execute moved %d -> %d", mode, stmtBefore, after)
				}
				if first != second {
					t.Errorf("%s prepared hit: got %s, want %s", mode, second, first)
				}
				if other := dump(t, c, q, 5); other == first {
					t.Errorf("%s: another parameter value got the cached rows", mode)
				}
			}
		})
	}
}

// TestPreparedHitAcrossStatementIDs: a client whose statement id differs
// from the one that filled the entry gets correct results.
func TestPreparedHitAcrossStatementIDs(t *testing.T) {
	m := privateDB(t)
	db := m.NewDatabase(t)
	loadHeavy(t, m, db)
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr})
	a := openDB(t, rootDSN(p.addr, db, ""))
	b := openDB(t, rootDSN(p.addr, db, ""))
	// b prepares other statements first, so its ids differ.
	for i := 0; i < 3; i++ {
		s, err := b.Prepare(fmt.Sprintf("SELECT %d FROM t LIMIT 1", i))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
	}
	q := "SELECT id, g, v FROM t WHERE id IN (?, ?) ORDER BY id"
	want := dump(t, a, q, 5, 9)
	before := m.GlobalStatus(t, "Com_stmt_execute")
	got := dump(t, b, q, 5, 9)
	if after := m.GlobalStatus(t, "Com_stmt_execute"); after != before {
		t.Errorf("Com_stmt_execute moved %d -> %d: not a hit", before, after)
	}
	if got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// TestNoStaleReadsAfterWrites: for every write shape, a cached read is
// invalidated by a write through the proxy, in autocommit and in a
// transaction.
func TestNoStaleReadsAfterWrites(t *testing.T) {
	m := testenv.Shared(t).DB
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr})
	shapes := []struct {
		name, write string
	}{
		{"insert", "INSERT INTO a VALUES (100, 'x')"},
		{"insert-select", "INSERT INTO a SELECT id+1000, v FROM b"},
		{"update", "UPDATE a SET v = 'changed' WHERE id = 1"},
		{"update-join", "UPDATE a JOIN b ON a.id = b.id SET a.v = b.v"},
		{"delete", "DELETE FROM a WHERE id = 2"},
		{"delete-multi", "DELETE a, b FROM a JOIN b ON a.id = b.id WHERE a.id = 1"},
		{"replace", "REPLACE INTO a VALUES (1, 'replaced')"},
		{"upsert", "INSERT INTO a VALUES (1, 'x') ON DUPLICATE KEY UPDATE v = 'upserted'"},
		{"truncate", "TRUNCATE TABLE a"},
		{"alter", "ALTER TABLE a ADD COLUMN extra INT DEFAULT 7"},
		{"drop-recreate", "DROP TABLE a"},
		{"rename", "RENAME TABLE a TO a_old, b TO a"},
		{"create-select", "CREATE TABLE c SELECT * FROM b"},
	}
	for _, mode := range []string{"autocommit", "transaction"} {
		for _, sh := range shapes {
			t.Run(mode+"/"+sh.name, func(t *testing.T) {
				db := m.NewDatabase(t)
				m.Exec(t, "CREATE TABLE "+db+".a (id INT PRIMARY KEY, v VARCHAR(20))")
				m.Exec(t, "CREATE TABLE "+db+".b (id INT PRIMARY KEY, v VARCHAR(20))")
				m.Exec(t, "INSERT INTO "+db+".a VALUES (1,'one'),(2,'two')")
				m.Exec(t, "INSERT INTO "+db+".b VALUES (1,'bee')")
				c := openDB(t, rootDSN(p.addr, db, ""))
				c.SetMaxOpenConns(1)
				direct := openDB(t, rootDSN(m.Addr, db, ""))
				read := "SELECT * FROM a ORDER BY id"
				if sh.name == "create-select" {
					read = "SELECT * FROM c ORDER BY id"
					m.Exec(t, "CREATE TABLE "+db+".c (id INT)")
					dump(t, c, read)
					m.Exec(t, "DROP TABLE "+db+".c") // behind the proxy's back; the write recreates it
				}
				readDump := func(db *sql.DB) string {
					s, err := queryDump(context.Background(), db, read)
					if err != nil {
						return "error: " + err.Error()
					}
					return s
				}
				readDump(c)
				readDump(c) // cached now
				if mode == "transaction" && sh.name != "truncate" && sh.name != "alter" && sh.name != "drop-recreate" && sh.name != "rename" && sh.name != "create-select" {
					tx, err := c.Begin()
					if err != nil {
						t.Fatal(err)
					}
					if _, err := tx.Exec(sh.write); err != nil {
						t.Fatalf("%s: %v", sh.write, err)
					}
					if err := tx.Commit(); err != nil {
						t.Fatal(err)
					}
				} else {
					mustExec(t, c, sh.write)
				}
				if got, want := readDump(c), readDump(direct); got != want {
					t.Errorf("after %s: got %s, want %s", sh.write, got, want)
				}
			})
		}
	}
}

// TestUserIsolation: bob, who may not read a table, gets MariaDB's
// permission error for the text alice cached, never her rows.
func TestUserIsolation(t *testing.T) {
	m := testenv.Shared(t).DB
	db := m.NewDatabase(t)
	m.Exec(t, "CREATE TABLE "+db+".secret (v VARCHAR(20))")
	m.Exec(t, "INSERT INTO "+db+".secret VALUES ('alice-only')")
	suffix := strings.ReplaceAll(db, "_", "")
	alice, bob := "alice"+suffix, "bob"+suffix
	for _, u := range []string{alice, bob} {
		m.Exec(t, fmt.Sprintf("CREATE USER '%s'@'%%' IDENTIFIED BY 'pw'", u))
		t.Cleanup(func() { m.Exec(t, fmt.Sprintf("DROP USER '%s'@'%%'", u)) })
	}
	m.Exec(t, fmt.Sprintf("GRANT SELECT ON %s.secret TO '%s'@'%%'", db, alice))
	m.Exec(t, fmt.Sprintf("GRANT USAGE ON *.* TO '%s'@'%%'", bob))
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr})
	a := openDB(t, testenv.DSNFor(p.addr, alice, "pw", "", ""))
	b := openDB(t, testenv.DSNFor(p.addr, bob, "pw", "", ""))
	q := "SELECT * FROM " + db + ".secret"
	dump(t, a, q)
	dump(t, a, q)
	_, err := queryDump(context.Background(), b, q)
	if err == nil {
		t.Fatalf("bob read %s through the proxy; want a permission error", q)
	}
	if e := mysqlErr(t, err); e.Number != 1142 {
		t.Errorf("bob's error: got %d %s, want 1142", e.Number, e.Message)
	}
}

// TestNeverCached: statements on the never-cached list reach MySQL every
// time.
func TestNeverCached(t *testing.T) {
	m := privateDB(t)
	db := m.NewDatabase(t)
	m.Exec(t, "CREATE TABLE "+db+".t (id INT PRIMARY KEY, v INT)")
	m.Exec(t, "INSERT INTO "+db+".t VALUES (1, 1)")
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr})
	c := openDB(t, rootDSN(p.addr, db, "multiStatements=true"))
	c.SetMaxOpenConns(1)
	mustExec(t, c, "CREATE TEMPORARY TABLE tmp (id INT)")
	for _, q := range []string{
		"SELECT NOW(), v FROM t",
		"SELECT RAND() FROM t",
		"SELECT @x, v FROM t",
		"SELECT @@version, v FROM t",
		"SELECT v FROM t WHERE id = 1 FOR UPDATE",
		"SELECT COUNT(*) FROM information_schema.tables",
		"SELECT * FROM tmp",
		"SELECT v FROM t; SELECT v FROM t",
		"SELECT SQL_NO_CACHE v FROM t",
		"SELECT /*+ no_cache */ v FROM t",
	} {
		runs := int64(2)
		if strings.Count(q, "SELECT") == 2 {
			runs = 4
		}
		before := m.GlobalStatus(t, "Com_select")
		for i := 0; i < 2; i++ {
			rows, err := c.Query(q)
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			for rows.Next() {
			}
			for rows.NextResultSet() {
				for rows.Next() {
				}
			}
			rows.Close()
		}
		if got := m.GlobalStatus(t, "Com_select") - before; got != runs {
			t.Errorf("%q twice: MariaDB executed %d SELECTs, want %d", q, got, runs)
		}
	}
}

// TestSingleFlight: concurrent misses of one heavy query run it once.
func TestSingleFlight(t *testing.T) {
	m := privateDB(t)
	db := m.NewDatabase(t)
	loadHeavy(t, m, db)
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr})
	c := openDB(t, rootDSN(p.addr, db, ""))
	c.SetMaxOpenConns(50)
	// Open the connections first, so their setup is not in the count.
	var conns []*sql.Conn
	for i := 0; i < 50; i++ {
		cn, err := c.Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, cn)
	}
	q := "SELECT g, SUM(v), SLEEP(0) FROM t GROUP BY g" // SLEEP makes it uncacheable: use a plain heavy read instead
	q = "SELECT a.g, COUNT(*) FROM t a JOIN t b ON a.g = b.g GROUP BY a.g ORDER BY a.g"
	before := m.GlobalStatus(t, "Com_select")
	var wg sync.WaitGroup
	results := make([]string, len(conns))
	for i, cn := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rows, err := cn.QueryContext(context.Background(), q)
			if err != nil {
				results[i] = err.Error()
				return
			}
			defer rows.Close()
			results[i], _ = dumpRows(rows)
		}()
	}
	wg.Wait()
	if got := m.GlobalStatus(t, "Com_select") - before; got != 1 {
		t.Errorf("50 concurrent misses: MariaDB executed %d SELECTs, want 1", got)
	}
	for i, r := range results {
		if r != results[0] {
			t.Errorf("client %d got %q, want %q", i, r, results[0])
		}
	}
	for _, cn := range conns {
		cn.Close()
	}
}

// TestTwoSidecarsShareMemcached: a write through A is seen by the next read
// through B, under concurrent interleaved writes and reads.
func TestTwoSidecarsShareMemcached(t *testing.T) {
	m := testenv.Shared(t).DB
	mc := privateMemcached(t)
	db := m.NewDatabase(t)
	m.Exec(t, "CREATE TABLE "+db+".kv (k INT PRIMARY KEY, v INT)")
	m.Exec(t, "INSERT INTO "+db+".kv VALUES (1,0),(2,0),(3,0),(4,0)")
	cfg := mysqlproxy.Config{Backend: m.Addr, Memcached: []string{mc.Addr}}
	a := startProxy(t, cfg)
	b := startProxy(t, cfg)
	wa := openDB(t, rootDSN(a.addr, db, ""))
	rb := openDB(t, rootDSN(b.addr, db, ""))
	const pairs = 2500 // per worker; 4 workers make 10,000 pairs
	var wg sync.WaitGroup
	var mu sync.Mutex
	stale := 0
	for w := 1; w <= 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 1; i <= pairs; i++ {
				if _, err := wa.Exec("UPDATE kv SET v = ? WHERE k = ?", i, w); err != nil {
					t.Error(err)
					return
				}
				var v int
				if err := rb.QueryRow("SELECT v FROM kv WHERE k = ?", w).Scan(&v); err != nil {
					t.Error(err)
					return
				}
				if v != i {
					mu.Lock()
					stale++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if stale != 0 {
		t.Errorf("stale reads through B after writes through A: got %d, want 0", stale)
	}
}

// TestStaleSetNeverServed reproduces the race of a read that starts before
// a write and stores after it: the entry it stores must never be served.
func TestStaleSetNeverServed(t *testing.T) {
	m := testenv.Shared(t).DB
	db := m.NewDatabase(t)
	m.Exec(t, "CREATE TABLE "+db+".t (id INT PRIMARY KEY, v VARCHAR(10))")
	m.Exec(t, "INSERT INTO "+db+".t VALUES (1, 'old')")
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr})
	reader := openDB(t, rootDSN(p.addr, db, ""))
	writer := openDB(t, rootDSN(p.addr, db, ""))
	// The read's snapshot of generations is taken before it runs; SLEEP
	// keeps it running while the write commits. SLEEP would make the
	// statement uncacheable, so the delay comes from a lock instead.
	locker := openDB(t, rootDSN(m.Addr, db, ""))
	tx, err := locker.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("LOCK TABLES t WRITE"); err != nil {
		t.Skip("LOCK TABLES inside a transaction not supported here")
	}
	done := make(chan string)
	go func() {
		var v string
		if err := reader.QueryRow("SELECT v FROM t WHERE id = 1").Scan(&v); err != nil {
			v = err.Error()
		}
		done <- v
	}()
	time.Sleep(300 * time.Millisecond) // let the read start and block on the lock
	if _, err := tx.Exec("UPDATE t SET v = 'mid' WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	// The write goes behind the proxy's back while the read waits; then a
	// write through the proxy bumps the generation while the read is
	// still in flight.
	wdone := make(chan error)
	go func() {
		_, err := writer.Exec("UPDATE t SET v = 'new' WHERE id = 1")
		wdone <- err
	}()
	time.Sleep(300 * time.Millisecond)
	if _, err := tx.Exec("UNLOCK TABLES"); err != nil {
		t.Fatal(err)
	}
	_ = tx.Commit()
	<-done
	if err := <-wdone; err != nil {
		t.Fatal(err)
	}
	var v string
	if err := reader.QueryRow("SELECT v FROM t WHERE id = 1").Scan(&v); err != nil {
		t.Fatal(err)
	}
	if v != "new" {
		t.Errorf("after the write: got %q, want %q", v, "new")
	}
}

// TestSysbenchPreparedHits: libmysqlclient sends parameter types with the
// first execute of a statement only. When that execute is a hit, the
// backend never sees them, and the next miss must still carry them.
func TestSysbenchPreparedHits(t *testing.T) {
	m := testenv.Shared(t).DB
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr})
	db := m.NewDatabase(t)
	args := func(addr string) []string {
		host, port := hostPort(t, addr)
		return []string{"oltp_point_select", "--db-driver=mysql", "--mysql-host=" + host, "--mysql-port=" + port,
			"--mysql-user=root", "--mysql-password=" + rootPass, "--mysql-db=" + db,
			"--tables=1", "--table-size=10000", "--db-ps-mode=auto",
			// The same seed makes each thread of the second run start with
			// the id it started with in the first: a hit.
			"--rand-seed=7"}
	}
	runTool(t, nil, false, "sysbench", append(args(m.Addr), "prepare")...)
	for i := 0; i < 2; i++ { // the second run starts with many keys cached, and misses others
		out, _ := runTool(t, nil, false, "sysbench", append(args(p.addr), "--threads=8", "--time=3", "--report-interval=0", "run")...)
		if n := sysbenchCount(t, out, "ignored errors"); n != 0 {
			t.Errorf("run %d: %d errors:\n%s", i, n, out)
		}
		if n := sysbenchCount(t, out, "transactions"); n == 0 {
			t.Errorf("run %d: no transactions:\n%s", i, out)
		}
	}
}

// TestServersApartInSharedMemcached: sidecars in front of different
// servers (shards, or staging and production) that share a memcached
// never serve one server's rows for the other's, though the database,
// table, account, grants and statement are the same.
func TestServersApartInSharedMemcached(t *testing.T) {
	t.Parallel()
	mc := privateMemcached(t)
	var vias []*sql.DB
	for i, m := range []*testenv.MariaDB{privateDB(t), privateDB(t)} {
		m.Exec(t, "CREATE DATABASE shard")
		m.Exec(t, "CREATE TABLE shard.t (id INT PRIMARY KEY, v VARCHAR(20))")
		m.Exec(t, fmt.Sprintf("INSERT INTO shard.t VALUES (1, 'server %d')", i+1))
		p := startProxy(t, mysqlproxy.Config{Backend: m.Addr, Memcached: []string{mc.Addr}})
		vias = append(vias, openDB(t, rootDSN(p.addr, "shard", "")))
	}
	const q = "SELECT v FROM t WHERE id = 1"
	for range 3 {
		if got := dump(t, vias[0], q); got != dump(t, vias[0], q) {
			t.Fatalf("%s through the first server's sidecar: %s", q, got)
		}
	}
	if hits(t, vias[0]) == 0 {
		t.Fatal("the read is not cached; the test proves nothing")
	}
	for range 3 {
		var v string
		if err := vias[1].QueryRow(q).Scan(&v); err != nil {
			t.Fatal(err)
		}
		if v != "server 2" {
			t.Fatalf("%s through the second server's sidecar: %q, want %q (the other server's row)", q, v, "server 2")
		}
	}
}

// TestSmallMaxPacket: --max-packet bounds the client's commands, not the
// server's answers to the statements mycached runs on a session (its
// variables, its grants), which are larger than 1 KiB: sessions log in
// and read, and a command past the bound is refused.
func TestSmallMaxPacket(t *testing.T) {
	t.Parallel()
	m := testenvShared(t)
	// An account whose grants are a row longer than 1 KiB.
	name := m.NewDatabase(t)
	var cols []string
	for i := range 40 {
		cols = append(cols, fmt.Sprintf("a_rather_long_column_name_%02d", i))
	}
	m.Exec(t, "CREATE TABLE "+name+".t ("+strings.Join(cols, " INT, ")+" INT)")
	m.Exec(t, "CREATE USER '"+name+"'@'%' IDENTIFIED BY 'pw'")
	m.Exec(t, "GRANT SELECT ("+strings.Join(cols, ", ")+") ON "+name+".t TO '"+name+"'@'%'")
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr, MaxPacket: 1024})
	db := openDB(t, testenv.DSNFor(p.addr, name, "pw", name, ""))
	if got := readInt(t, db, "SELECT 1"); got != 1 {
		t.Fatalf("SELECT 1: %d", got)
	}
	if _, err := db.Exec("DO '" + strings.Repeat("x", 2000) + "'"); err == nil {
		t.Error("a 2 KB command went through a 1 KiB --max-packet")
	}
}
