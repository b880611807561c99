package mysqlproxy_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http/httptest"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	mysqlc "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-sql-driver/mysql"

	"github.com/mycached/mycached/cachepolicy"
	"github.com/mycached/mycached/mysqlproxy"
	"github.com/mycached/mycached/mysqlproxy/internal/testenv"
)

// fixedPolicy caches every cacheable SELECT with one decision.
type fixedPolicy struct{ d cachepolicy.Decision }

func (p fixedPolicy) Cache(q *cachepolicy.Query) (cachepolicy.Decision, bool) {
	if !q.Cacheable || q.Kind != "select" {
		return cachepolicy.Decision{}, false
	}
	return p.d, true
}

func (fixedPolicy) Invalidate(*cachepolicy.Write) []string { return nil }

// querier is what *sql.DB, *sql.Conn and *sql.Tx have in common.
type querier interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
	QueryRowContext(context.Context, string, ...any) *sql.Row
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}

// counted runs q on c and returns what it returned and how many SELECTs
// MariaDB executed meanwhile.
func counted(t testing.TB, m *testenv.MariaDB, c querier, q string) (string, int64) {
	t.Helper()
	before := m.GlobalStatus(t, "Com_select")
	got, err := queryDump(context.Background(), c, q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return got, m.GlobalStatus(t, "Com_select") - before
}

func conn(t testing.TB, db *sql.DB) *sql.Conn {
	t.Helper()
	c, err := db.Conn(context.Background())
	if err != nil {
		t.Fatalf("conn: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func execOn(t testing.TB, c querier, q string) {
	t.Helper()
	if _, err := c.ExecContext(context.Background(), q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// heapInuse returns the heap in use after a collection.
func heapInuse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// peakHeap samples the heap in use until stop is closed and returns the
// highest value seen.
func peakHeap(stop <-chan struct{}) <-chan uint64 {
	out := make(chan uint64, 1)
	go func() {
		var peak uint64
		var ms runtime.MemStats
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
			select {
			case <-stop:
				out <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return out
}

// TestCacheLargeJSONChunked: a 2 MiB JSON document is cached in a
// memcached whose item limit is 1 MiB, and served from it byte for byte.
func TestCacheLargeJSONChunked(t *testing.T) {
	t.Parallel()
	m := privateDB(t)
	mc := privateMemcached(t) // memcached's default -I 1m
	db := m.NewDatabase(t)
	m.Exec(t, "CREATE TABLE "+db+".docs (id INT PRIMARY KEY, doc LONGTEXT)")
	img := make([]byte, 1536<<10)
	_, _ = rand.Read(img)
	doc := `{"name":"photo.png","image":"` + base64.StdEncoding.EncodeToString(img) + `"}`
	if len(doc) < 2<<20 {
		t.Fatalf("document is %d bytes, want at least 2 MiB", len(doc))
	}
	m.Exec(t, "INSERT INTO "+db+".docs VALUES (1, ?)", doc)
	// A 2 MiB value takes several memcached round trips each way: under a
	// loaded machine the default 50 ms bound would turn it into a miss.
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr, CacheMemory: -1, Memcached: []string{mc.Addr}, MemcachedTimeout: 5 * time.Second})
	c := openDB(t, rootDSN(p.addr, db, ""))
	c.SetMaxOpenConns(1)
	const q = "SELECT id, doc FROM docs WHERE id = 1"
	read := func() string {
		var id int
		var got []byte
		if err := c.QueryRow(q).Scan(&id, &got); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return string(got)
	}
	if got := read(); got != doc {
		t.Fatalf("first read: got %d bytes, want the %d-byte document", len(got), len(doc))
	}
	storesSettled(t, c)
	before := m.GlobalStatus(t, "Com_select")
	got := read()
	if after := m.GlobalStatus(t, "Com_select"); after != before {
		t.Errorf("second read: Com_select moved %d -> %d, want a memcached hit", before, after)
	}
	if got != doc {
		t.Errorf("second read: got %d bytes, want the %d-byte document, identical", len(got), len(doc))
	}
	if st := mycachedStatus(t, c); st["Hits_memcached"] == 0 {
		t.Errorf("Hits_memcached: got 0, want > 0")
	}
}

// TestCacheLargeResultStreamsUncached: a 200,000-row result over
// MaxResultBytes reaches the client whole, is not cached, and the proxy's
// heap stays bounded while it streams. It runs alone, since it measures
// the process's heap.
func TestCacheLargeResultStreamsUncached(t *testing.T) {
	m := privateDB(t)
	db := m.NewDatabase(t)
	m.Exec(t, "CREATE TABLE "+db+".big (id INT PRIMARY KEY, pad CHAR(60))")
	m.Exec(t, "INSERT INTO "+db+".big SELECT seq, REPEAT(CHAR(97 + seq % 26), 60) FROM "+db+".seq_1_to_200000")
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr, MaxResultBytes: 1 << 20})
	c := openDB(t, rootDSN(p.addr, db, ""))
	c.SetMaxOpenConns(1)
	const q = "SELECT id, pad FROM big ORDER BY id"
	base := heapInuse()
	for run := 0; run < 2; run++ {
		before := m.GlobalStatus(t, "Com_select")
		stop := make(chan struct{})
		peak := peakHeap(stop)
		rows, err := c.Query(q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		n, sum := 0, 0
		var id int
		var pad sql.RawBytes
		for rows.Next() {
			if err := rows.Scan(&id, &pad); err != nil {
				t.Fatal(err)
			}
			n++
			sum += id
			if len(pad) != 60 {
				t.Fatalf("row %d: pad is %d bytes, want 60", id, len(pad))
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		rows.Close()
		close(stop)
		if n != 200000 || sum != 200000*200001/2 {
			t.Errorf("run %d: got %d rows (id sum %d), want 200000 (id sum %d)", run, n, sum, 200000*200001/2)
		}
		if got := m.GlobalStatus(t, "Com_select") - before; got != 1 {
			t.Errorf("run %d: MariaDB executed %d SELECTs, want 1 (uncached)", run, got)
		}
		// About 13 MB of rows passed through; a proxy that buffered them
		// would grow by at least that.
		grew := int64(<-peak) - int64(base)
		t.Logf("run %d: peak heap in use %d MiB above the baseline", run, grew>>20)
		if grew > 64<<20 {
			t.Errorf("run %d: heap in use grew by %d MiB while streaming, want < 64 MiB", run, grew>>20)
		}
	}
	if st := mycachedStatus(t, c); st["Stores"] != 0 || st["L1_entries"] != 0 {
		t.Errorf("after an oversized result: Stores = %d, L1_entries = %d; want 0, 0", st["Stores"], st["L1_entries"])
	}
	if body := metricsText(t, p); !strings.Contains(body, `mycached_cache_bypass_total{reason="too-large"} 2`) {
		t.Errorf("/metrics lacks mycached_cache_bypass_total{reason=\"too-large\"} 2:\n%s", grepLines(body, "bypass"))
	}
}

// TestCacheTTL: past its ttl an entry is gone; past its soft ttl it is
// served once more while one refresh runs; an empty result is cached only
// when the policy says cache_empty.
func TestCacheTTL(t *testing.T) {
	t.Parallel()
	setup := func(t *testing.T, cfg mysqlproxy.Config) (*testenv.MariaDB, *sql.DB, string) {
		m := privateDB(t)
		db := m.NewDatabase(t)
		m.Exec(t, "CREATE TABLE "+db+".t (id INT PRIMARY KEY, v VARCHAR(20))")
		m.Exec(t, "INSERT INTO "+db+".t VALUES (1, 'old')")
		cfg.Backend = m.Addr
		p := startProxy(t, cfg)
		c := openDB(t, rootDSN(p.addr, db, ""))
		c.SetMaxOpenConns(1)
		return m, c, db
	}
	const read = "SELECT v FROM t WHERE id = 1"

	t.Run("ttl", func(t *testing.T) {
		t.Parallel()
		m, c, _ := setup(t, mysqlproxy.Config{DefaultTTL: 2 * time.Second})
		counted(t, m, c, read)
		if _, n := counted(t, m, c, read); n != 0 {
			t.Fatalf("read within the ttl: MariaDB executed %d SELECTs, want 0", n)
		}
		time.Sleep(2200 * time.Millisecond) // wait out the ttl under test
		if _, n := counted(t, m, c, read); n != 1 {
			t.Errorf("read past the ttl: MariaDB executed %d SELECTs, want 1", n)
		}
	})

	t.Run("soft-ttl", func(t *testing.T) {
		t.Parallel()
		policy := fixedPolicy{cachepolicy.Decision{TTL: 10 * time.Second, SoftTTL: 2 * time.Second, CacheEmpty: true}}
		m, c, db := setup(t, mysqlproxy.Config{PolicyEngine: policy})
		old, _ := counted(t, m, c, read)
		// A change behind the proxy's back shows which reads come from
		// the entry and which from MySQL.
		m.Exec(t, "UPDATE "+db+".t SET v = 'new' WHERE id = 1")
		if got, n := counted(t, m, c, read); n != 0 || got != old {
			t.Fatalf("read within the soft ttl: got %s with %d SELECTs, want the cached %s with 0", got, n, old)
		}
		time.Sleep(2200 * time.Millisecond) // wait out the soft ttl under test
		// The first read past it reads afresh, and its fill replaces the
		// entry; reads that come meanwhile are still served the entry.
		if got, n := counted(t, m, c, read); n != 1 || !strings.Contains(got, "new") {
			t.Errorf("first read past the soft ttl: got %s with %d SELECTs, want the fresh row 'new' with 1", got, n)
		}
		storesSettled(t, c)
		for i := 0; i < 3; i++ {
			if got, n := counted(t, m, c, read); n != 0 || !strings.Contains(got, "new") {
				t.Errorf("read %d after the refresh: got %s with %d SELECTs, want 'new' with 0", i, got, n)
			}
		}
	})

	t.Run("cache-empty-false", func(t *testing.T) {
		t.Parallel()
		policy := fixedPolicy{cachepolicy.Decision{TTL: time.Minute, CacheEmpty: false}}
		m, c, _ := setup(t, mysqlproxy.Config{PolicyEngine: policy})
		const empty = "SELECT v FROM t WHERE id = 999"
		for i := 0; i < 2; i++ {
			if _, n := counted(t, m, c, empty); n != 1 {
				t.Errorf("empty result, run %d: MariaDB executed %d SELECTs, want 1 (not cached)", i, n)
			}
		}
		counted(t, m, c, read)
		if _, n := counted(t, m, c, read); n != 0 {
			t.Errorf("non-empty result, second run: MariaDB executed %d SELECTs, want 0", n)
		}
	})
}

// TestCacheSessionStateInKey: connections whose settings change a result
// get their own entries; connections set up alike share one.
func TestCacheSessionStateInKey(t *testing.T) {
	t.Parallel()
	m := privateDB(t)
	db := m.NewDatabase(t)
	m.Exec(t, "CREATE TABLE "+db+".t (id INT PRIMARY KEY, ts TIMESTAMP NULL, s VARCHAR(20) CHARACTER SET utf8mb4)")
	m.Exec(t, "INSERT INTO "+db+".t VALUES (1, '2024-01-01 12:00:00', 'café')")
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr})

	for _, tc := range []struct {
		name, query string
		a, b        string // the two settings
	}{
		{"time_zone", "SELECT ts FROM t WHERE id = 1", "SET time_zone = '+00:00'", "SET time_zone = '+05:00'"},
		{"names", "SELECT s FROM t WHERE id = 1", "SET NAMES utf8mb4", "SET NAMES latin1"},
		{"sql_mode", "SELECT id || 0 AS x FROM t WHERE id = 1", "SET sql_mode = ''", "SET sql_mode = 'PIPES_AS_CONCAT'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Pools of the subtest's own: a pooled connection keeps the
			// settings an earlier subtest made on it.
			proxied := openDB(t, rootDSN(p.addr, db, ""))
			direct := openDB(t, rootDSN(m.Addr, db, ""))
			want := map[string]string{}
			for _, set := range []string{tc.a, tc.b} {
				d := conn(t, direct)
				execOn(t, d, set)
				s, err := queryDump(context.Background(), d, tc.query)
				if err != nil {
					t.Fatal(err)
				}
				want[set] = s
			}
			if want[tc.a] == want[tc.b] {
				t.Fatalf("setup: %q and %q give the same result %s", tc.a, tc.b, want[tc.a])
			}
			stores0 := mycachedStatus(t, proxied)["Stores"]
			// a fills, b must not get a's entry, and a second b-like
			// connection shares b's entry.
			for i, set := range []string{tc.a, tc.b, tc.b, tc.a} {
				c := conn(t, proxied)
				execOn(t, c, set)
				got, n := counted(t, m, c, tc.query)
				if got != want[set] {
					t.Errorf("connection %d after %q: got %s, want %s", i, set, got, want[set])
				}
				wantN := int64(1)
				if i >= 2 {
					wantN = 0 // set up like an earlier connection
				}
				if n != wantN {
					t.Errorf("connection %d after %q: MariaDB executed %d SELECTs, want %d", i, set, n, wantN)
				}
				if i < 2 {
					// The proxy stores a fill after the client has its
					// reply; the next connection must find it stored.
					waitFor(t, 5*time.Second, "the fill to be stored", func() bool {
						return mycachedStatus(t, c)["Stores"] == int64(i+1)+stores0
					})
				}
			}
		})
	}
}

// TestCacheMaxAllowedPacketInKey: a session's max_allowed_packet, set
// from the global one when it connects and read-only after, changes what
// string functions return: past it, NULL and warning 1301. A session that
// connected after SET GLOBAL max_allowed_packet does not get the full
// string a session from before cached.
func TestCacheMaxAllowedPacketInKey(t *testing.T) {
	t.Parallel()
	m := privateDB(t)
	db := m.NewDatabase(t)
	m.Exec(t, "CREATE TABLE "+db+".t (id INT PRIMARY KEY, v INT)")
	m.Exec(t, "INSERT INTO "+db+".t VALUES (1, 1)")
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr})
	q := "SELECT id, REPEAT('x', 5000) AS r FROM t WHERE id = 1"
	before := openDB(t, rootDSN(p.addr, db, ""))
	warmOn(t, before, before, q)
	m.Exec(t, "SET GLOBAL max_allowed_packet = 1024")
	t.Cleanup(func() {
		if a := m.AdminDB(); a != nil {
			_, _ = a.Exec("SET GLOBAL max_allowed_packet = DEFAULT")
		}
	})
	direct := openDB(t, rootDSN(m.Addr, db, ""))
	after := openDB(t, rootDSN(p.addr, db, ""))
	want := dump(t, direct, q)
	if want == dump(t, before, q) {
		t.Fatalf("setup: %s gives the same result under both max_allowed_packet values: %s", q, want)
	}
	if got := dump(t, after, q); got != want {
		t.Errorf("%s in a session opened after SET GLOBAL max_allowed_packet = 1024: got %s, want %s", q, got, want)
	}
}

// TestCacheSessionSwitch: SET @mycached_cache turns caching off and on for
// one session, and never reaches MariaDB.
func TestCacheSessionSwitch(t *testing.T) {
	t.Parallel()
	m := privateDB(t)
	db := m.NewDatabase(t)
	m.Exec(t, "CREATE TABLE "+db+".t (id INT PRIMARY KEY, v INT)")
	m.Exec(t, "INSERT INTO "+db+".t VALUES (1, 1)")
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr})
	pool := openDB(t, rootDSN(p.addr, db, ""))
	c := conn(t, pool)
	other := conn(t, pool)
	const read = "SELECT v FROM t WHERE id = 1"
	counted(t, m, c, read)
	if _, n := counted(t, m, c, read); n != 0 {
		t.Fatalf("setup: second read executed %d SELECTs, want 0", n)
	}
	setOpt := m.GlobalStatus(t, "Com_set_option")
	execOn(t, c, "SET @mycached_cache = 0")
	for i := 0; i < 2; i++ {
		if _, n := counted(t, m, c, read); n != 1 {
			t.Errorf("read %d with caching off: MariaDB executed %d SELECTs, want 1", i, n)
		}
	}
	if _, n := counted(t, m, other, read); n != 0 {
		t.Errorf("another session's read: MariaDB executed %d SELECTs, want 0 (its cache is on)", n)
	}
	execOn(t, c, "SET @mycached_cache = 1")
	if _, n := counted(t, m, c, read); n != 0 {
		t.Errorf("read with caching back on: MariaDB executed %d SELECTs, want 0", n)
	}
	_ = setOpt
	// The user variable is the server's too: a client reads back what it
	// set, as it would without mycached.
	var v sql.NullInt64
	if err := c.QueryRowContext(context.Background(), "SELECT @mycached_cache").Scan(&v); err != nil {
		t.Fatal(err)
	}
	if !v.Valid || v.Int64 != 1 {
		t.Errorf("MariaDB's @mycached_cache: got %v, want 1", v)
	}
	// Any other value is the server's business; the switch stays as it was.
	execOn(t, c, "SET @mycached_cache = 7")
	if _, n := counted(t, m, c, read); n != 0 {
		t.Errorf("read after SET @mycached_cache = 7: MariaDB executed %d SELECTs, want 0", n)
	}
}

// metricsText fetches /metrics from p's admin handler.
func metricsText(t testing.TB, p *proxy) string {
	t.Helper()
	hs := httptest.NewServer(p.srv.AdminHandler())
	defer hs.Close()
	resp, err := hs.Client().Get(hs.URL + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("GET /metrics: status %d", resp.StatusCode)
	}
	return string(b)
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestCacheAdmin: the admin pseudo-queries and /metrics.
func TestCacheAdmin(t *testing.T) {
	t.Parallel()
	m := privateDB(t)
	db := m.NewDatabase(t)
	m.Exec(t, "CREATE TABLE "+db+".t (id INT PRIMARY KEY, v INT)")
	m.Exec(t, "INSERT INTO "+db+".t VALUES (1, 1)")
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr})
	c := openDB(t, rootDSN(p.addr, db, ""))
	c.SetMaxOpenConns(1)
	const read = "SELECT v FROM t WHERE id = 1"

	t.Run("status", func(t *testing.T) {
		counted(t, m, c, read)
		before := mycachedStatus(t, c)
		for _, name := range []string{"Hits_l1", "Hits_memcached", "Misses", "Stores", "Invalidations", "L1_bytes", "L1_entries", "Pending_bumps"} {
			if _, ok := before[name]; !ok {
				t.Errorf("SHOW MYCACHED STATUS lacks %s", name)
			}
		}
		if _, n := counted(t, m, c, read); n != 0 {
			t.Fatalf("second read: MariaDB executed %d SELECTs, want 0", n)
		}
		if after := mycachedStatus(t, c); after["Hits_l1"] != before["Hits_l1"]+1 {
			t.Errorf("Hits_l1 after a hit: got %d, want %d", after["Hits_l1"], before["Hits_l1"]+1)
		}
		// LIKE picks rows, as in SHOW STATUS.
		if got := dump(t, c, "SHOW MYCACHED STATUS LIKE 'hits%'"); !strings.Contains(got, "Hits_l1") || !strings.Contains(got, "Hits_memcached") || strings.Contains(got, "Misses") {
			t.Errorf("SHOW MYCACHED STATUS LIKE 'hits%%': %s", got)
		}
		if _, err := c.Exec("SHOW MYCACHED STATUS WHERE 1"); err == nil || !strings.Contains(err.Error(), "LIKE") {
			t.Errorf("SHOW MYCACHED STATUS WHERE 1: %v, want an error that names LIKE", err)
		}
	})

	t.Run("queries", func(t *testing.T) {
		for i := 0; i < 2; i++ {
			dump(t, c, "SELECT NOW(), v FROM t")
		}
		rows, err := c.Query("SHOW MYCACHED QUERIES")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		found := false
		var all []string
		for rows.Next() {
			var digest, hits, misses, bypasses, why, adm, admWhy string
			if err := rows.Scan(&digest, &hits, &misses, &bypasses, &why, &adm, &admWhy); err != nil {
				t.Fatal(err)
			}
			all = append(all, strings.Join([]string{digest, hits, misses, bypasses, why}, " | "))
			if strings.Contains(strings.ToLower(digest), "now") && why == "nondeterministic:now" && bypasses == "2" {
				found = true
			}
		}
		if !found {
			t.Errorf("SHOW MYCACHED QUERIES: no row for SELECT NOW() with 2 bypasses and reason nondeterministic:now; got\n%s", strings.Join(all, "\n"))
		}
	})

	for _, purge := range []string{"MYCACHED INVALIDATE TABLE " + db + ".t", "MYCACHED INVALIDATE TABLE `" + db + "`.`t`",
		"MYCACHED INVALIDATE TABLE t", "MYCACHED FLUSH"} {
		t.Run(purge, func(t *testing.T) {
			counted(t, m, c, read)
			if _, n := counted(t, m, c, read); n != 0 {
				t.Fatalf("before %s: MariaDB executed %d SELECTs, want 0", purge, n)
			}
			mustExec(t, c, purge)
			if _, n := counted(t, m, c, read); n != 1 {
				t.Errorf("read after %s: MariaDB executed %d SELECTs, want 1", purge, n)
			}
			if _, n := counted(t, m, c, read); n != 0 {
				t.Errorf("second read after %s: MariaDB executed %d SELECTs, want 0", purge, n)
			}
		})
	}

	t.Run("a name that is not a table's", func(t *testing.T) {
		_, err := c.ExecContext(context.Background(), "MYCACHED INVALIDATE TABLE "+db+".t.x")
		if err == nil || mysqlErr(t, err).Number != 1103 {
			t.Errorf("MYCACHED INVALIDATE TABLE %s.t.x: %v, want error 1103", db, err)
		}
	})

	t.Run("non-admin", func(t *testing.T) {
		user := "plain" + strings.ReplaceAll(db, "_", "")
		m.Exec(t, fmt.Sprintf("CREATE USER '%s'@'%%' IDENTIFIED BY 'pw'", user))
		m.Exec(t, fmt.Sprintf("GRANT SELECT ON %s.* TO '%s'@'%%'", db, user))
		u := conn(t, openDB(t, testenv.DSNFor(p.addr, user, "pw", db, "")))
		for _, q := range []string{"SHOW MYCACHED STATUS", "SHOW MYCACHED QUERIES", "MYCACHED FLUSH", "MYCACHED INVALIDATE TABLE " + db + ".t"} {
			// Without mycached these are syntax errors, and so they are
			// for anyone outside --admin-users.
			_, err := u.ExecContext(context.Background(), q)
			if err == nil {
				t.Errorf("%s as %s: no error, want 1064", q, user)
				continue
			}
			if e := mysqlErr(t, err); e.Number != 1064 {
				t.Errorf("%s as %s: got %d %s, want 1064", q, user, e.Number, e.Message)
			}
		}
		if got := readInt(t, u, read); got != 1 {
			t.Errorf("the denied user's connection afterwards: got %d, want 1", got)
		}
	})

	t.Run("metrics", func(t *testing.T) {
		body := metricsText(t, p)
		for _, want := range []string{
			`mycached_cache_hits_total{tier="l1"}`,
			`mycached_cache_misses_total`,
			`mycached_cache_bypass_total{reason="not-cacheable"}`,
			`mycached_l1_bytes`,
			`mycached_pending_bumps`,
		} {
			if !strings.Contains(body, want) {
				t.Errorf("/metrics lacks %s", want)
			}
		}
		if t.Failed() {
			t.Logf("/metrics:\n%s", body)
		}
	})
}

// TestCacheInTransactions: the --cache-in-transactions modes, and a
// session with autocommit off as ORMs run it.
func TestCacheInTransactions(t *testing.T) {
	t.Parallel()
	const read = "SELECT v FROM t WHERE id = 1"
	setup := func(t *testing.T, mode mysqlproxy.CacheInTransactions, params string) (*testenv.MariaDB, *sql.Conn, *sql.Conn) {
		m := privateDB(t)
		db := m.NewDatabase(t)
		m.Exec(t, "CREATE TABLE "+db+".t (id INT PRIMARY KEY, v INT)")
		m.Exec(t, "INSERT INTO "+db+".t VALUES (1, 1)")
		p := startProxy(t, mysqlproxy.Config{Backend: m.Addr, CacheInTransactions: mode})
		c := conn(t, openDB(t, rootDSN(p.addr, db, params)))
		other := conn(t, openDB(t, rootDSN(p.addr, db, "")))
		return m, c, other
	}

	t.Run("until-write", func(t *testing.T) {
		t.Parallel()
		m, c, other := setup(t, mysqlproxy.CacheUntilWrite, "")
		counted(t, m, c, read)
		execOn(t, c, "BEGIN")
		if got, n := counted(t, m, c, read); n != 0 || !strings.Contains(got, `"1"`) {
			t.Errorf("read in a transaction before a write: got %s with %d SELECTs, want 1 with 0", got, n)
		}
		execOn(t, c, "UPDATE t SET v = 2 WHERE id = 1")
		for i := 0; i < 2; i++ {
			if got, n := counted(t, m, c, read); n != 1 || !strings.Contains(got, `"2"`) {
				t.Errorf("read %d after the transaction wrote: got %s with %d SELECTs, want its own write 2 with 1", i, got, n)
			}
		}
		if got, _ := counted(t, m, other, read); !strings.Contains(got, `"1"`) {
			t.Errorf("another session during the transaction: got %s, want the committed 1", got)
		}
		execOn(t, c, "COMMIT")
		if got, _ := counted(t, m, other, read); !strings.Contains(got, `"2"`) {
			t.Errorf("another session after COMMIT: got %s, want 2", got)
		}
		if got, n := counted(t, m, c, read); n != 0 || !strings.Contains(got, `"2"`) {
			t.Errorf("read after COMMIT, once refilled: got %s with %d SELECTs, want 2 with 0", got, n)
		}
	})

	t.Run("never", func(t *testing.T) {
		t.Parallel()
		m, c, _ := setup(t, mysqlproxy.CacheNever, "")
		counted(t, m, c, read)
		if _, n := counted(t, m, c, read); n != 0 {
			t.Fatalf("autocommit read: MariaDB executed %d SELECTs, want 0", n)
		}
		execOn(t, c, "BEGIN")
		for i := 0; i < 2; i++ {
			if _, n := counted(t, m, c, read); n != 1 {
				t.Errorf("read %d in a transaction: MariaDB executed %d SELECTs, want 1", i, n)
			}
		}
		execOn(t, c, "COMMIT")
		if _, n := counted(t, m, c, read); n != 0 {
			t.Errorf("autocommit read after COMMIT: MariaDB executed %d SELECTs, want 0", n)
		}
	})

	// after-first-read: the read that begins a transaction (autocommit
	// off) and the one that takes its snapshot run on the server, so the
	// session is in a transaction as it would be, and the reads the
	// server runs later in it see that snapshot; later reads hit.
	for _, start := range []string{"autocommit-0", "begin"} {
		t.Run("after-first-read/"+start, func(t *testing.T) {
			t.Parallel()
			m, c, other := setup(t, mysqlproxy.CacheAfterFirstRead, "")
			counted(t, m, c, read)
			if _, n := counted(t, m, c, read); n != 0 {
				t.Fatalf("autocommit read: MariaDB executed %d SELECTs, want 0", n)
			}
			if start == "begin" {
				execOn(t, c, "BEGIN")
			} else {
				execOn(t, c, "SET autocommit = 0")
			}
			if _, n := counted(t, m, c, read); n != 1 {
				t.Errorf("first read of the transaction: MariaDB executed %d SELECTs, want 1", n)
			}
			if got, _ := counted(t, m, c, "SELECT @@in_transaction"); !strings.Contains(got, `"1"`) {
				t.Errorf("@@in_transaction after the first read: got %s, want 1", got)
			}
			if _, n := counted(t, m, c, read); n != 0 {
				t.Errorf("second read of the transaction: MariaDB executed %d SELECTs, want 0", n)
			}
			execOn(t, other, "UPDATE t SET v = 5 WHERE id = 1")
			if got, _ := counted(t, m, c, "SELECT v, @nothing FROM t WHERE id = 1"); !strings.Contains(got, `"1"`) {
				t.Errorf("a read the server runs after another session's write: got %s, want the snapshot's 1", got)
			}
			execOn(t, c, "COMMIT")
		})
	}

	t.Run("autocommit-off", func(t *testing.T) {
		t.Parallel()
		m, c, other := setup(t, mysqlproxy.CacheUntilWrite, "autocommit=0")
		counted(t, m, c, read)
		for i := 0; i < 2; i++ {
			if _, n := counted(t, m, c, read); n != 0 {
				t.Errorf("read %d with autocommit off, before a write: MariaDB executed %d SELECTs, want 0", i, n)
			}
		}
		execOn(t, c, "UPDATE t SET v = 3 WHERE id = 1")
		if got, n := counted(t, m, c, read); n != 1 || !strings.Contains(got, `"3"`) {
			t.Errorf("read after the write: got %s with %d SELECTs, want its own write 3 with 1", got, n)
		}
		execOn(t, c, "COMMIT")
		if got, _ := counted(t, m, other, read); !strings.Contains(got, `"3"`) {
			t.Errorf("another session after COMMIT: got %s, want 3", got)
		}
		// A new implicit transaction has not written: hits again.
		if got, n := counted(t, m, c, read); n != 0 || !strings.Contains(got, `"3"`) {
			t.Errorf("read in the next transaction: got %s with %d SELECTs, want 3 with 0", got, n)
		}
	})
}

// TestCacheL1MemoryBound fills an 8 MiB L1 with 30 MiB of distinct
// results: it holds no more than its bound, and the heap does not keep
// the rest. It runs alone, since it measures the process's heap.
func TestCacheL1MemoryBound(t *testing.T) {
	m := testenvShared(t)
	db := m.NewDatabase(t)
	m.Exec(t, "CREATE TABLE "+db+".blobs (id INT PRIMARY KEY, b MEDIUMBLOB)")
	m.Exec(t, "INSERT INTO "+db+".blobs SELECT seq, REPEAT(CHAR(65 + seq % 26), 102400) FROM "+db+".seq_1_to_300")
	const bound = 8 << 20
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr, CacheMemory: bound})
	c := openDB(t, rootDSN(p.addr, db, ""))
	c.SetMaxOpenConns(4)
	base := heapInuse()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := 1 + w; id <= 300; id += 4 {
				var b []byte
				if err := c.QueryRow(fmt.Sprintf("SELECT b FROM blobs WHERE id = %d", id)).Scan(&b); err != nil {
					errs <- err
					return
				}
				if len(b) != 102400 || !bytes.Equal(b[:1], []byte{byte(65 + id%26)}) {
					errs <- fmt.Errorf("id %d: got %d bytes starting %q, want 102400 of %c", id, len(b), b[:min(1, len(b))], 65+id%26)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	st := mycachedStatus(t, c)
	if st["L1_bytes"] > bound+bound/8 {
		t.Errorf("L1_bytes after 30 MiB of distinct results: got %d, want <= %d (+1/8 slack)", st["L1_bytes"], bound)
	}
	if st["L1_entries"] == 0 || st["L1_entries"] >= 300 {
		t.Errorf("L1_entries: got %d, want some of the 300 results but not all", st["L1_entries"])
	}
	grew := int64(heapInuse()) - int64(base)
	t.Logf("L1_bytes %d, L1_entries %d, heap in use grew %d MiB", st["L1_bytes"], st["L1_entries"], grew>>20)
	if grew > 48<<20 {
		t.Errorf("heap in use grew by %d MiB, want < 48 MiB for an 8 MiB cache", grew>>20)
	}
}

// TestCacheL1AdmitsLargeEntry: a result well under both MaxResultBytes
// and the L1 bound is cached in L1 even when it exceeds one shard's share
// of the bound (here 8 MiB / 64 shards = 128 KiB).
func TestCacheL1AdmitsLargeEntry(t *testing.T) {
	t.Parallel()
	m := privateDB(t)
	db := m.NewDatabase(t)
	m.Exec(t, "CREATE TABLE "+db+".blobs (id INT PRIMARY KEY, b MEDIUMBLOB)")
	m.Exec(t, "INSERT INTO "+db+".blobs VALUES (1, REPEAT('x', 300 * 1024))")
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr, CacheMemory: 8 << 20})
	c := openDB(t, rootDSN(p.addr, db, ""))
	c.SetMaxOpenConns(1)
	const q = "SELECT b FROM blobs WHERE id = 1"
	want, _ := counted(t, m, c, q)
	got, n := counted(t, m, c, q)
	if n != 0 || got != want {
		t.Errorf("second read of a 300 KiB result with an 8 MiB L1: MariaDB executed %d SELECTs (same rows: %v), want 0", n, got == want)
	}
	if st := mycachedStatus(t, c); st["Stores"] != st["L1_entries"] {
		t.Errorf("SHOW MYCACHED STATUS: Stores = %d but L1_entries = %d; a store that L1 dropped is counted as stored", st["Stores"], st["L1_entries"])
	}
}

// TestHitTakesSessionFlags: a hit carries the reading session's status
// flags that describe the session, not the filling one's. A procedure that
// sets NO_BACKSLASH_ESCAPES and restores sql_mode leaves the flag set on
// its session (clients choose how to escape strings by it); another
// session's hit must not carry it.
func TestHitTakesSessionFlags(t *testing.T) {
	t.Parallel()
	m := testenvShared(t)
	db := m.NewDatabase(t)
	m.Exec(t, "CREATE TABLE "+db+".t (id INT PRIMARY KEY)")
	m.Exec(t, "INSERT INTO "+db+".t VALUES (1)")
	m.Exec(t, "CREATE PROCEDURE "+db+".nbe() BEGIN SET @@sql_mode = 'NO_BACKSLASH_ESCAPES'; END")
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr})
	const q = "SELECT id FROM t WHERE id = 1"
	status := func(c *rawConn, sql string) uint16 {
		t.Helper()
		_, last := c.exchange(t, append([]byte{0x03}, sql...)...)
		if last[0] == 0xff {
			t.Fatalf("%s: %s", sql, last)
		}
		return c.endStatus(last)
	}
	for _, eof := range []bool{false, true} {
		filler := dialRaw(t, p.addr, "root", rootPass, db, eof)
		status(filler, "CALL nbe()")
		for range 3 {
			if st := status(filler, q); st&mysqlc.SERVER_STATUS_NO_BACKSLASH_ESCAPED == 0 {
				t.Fatalf("deprecate EOF %v: the filling session's flags %#x lack NO_BACKSLASH_ESCAPES", eof, st)
			}
		}
		c := openDB(t, rootDSN(p.addr, db, ""))
		before := hits(t, c)
		reader := dialRaw(t, p.addr, "root", rootPass, db, eof)
		if st := status(reader, q); st&mysqlc.SERVER_STATUS_NO_BACKSLASH_ESCAPED != 0 {
			t.Errorf("deprecate EOF %v: another session's read got status %#x, with NO_BACKSLASH_ESCAPES", eof, st)
		}
		if hits(t, c) == before {
			t.Errorf("deprecate EOF %v: the read was not a hit; the test proves nothing", eof)
		}
	}
}

// TestHiddenSetNamesCollate: the collation result columns are described
// in, which SET NAMES x COLLATE y sets and no variable shows, is part of
// the key however it was set: by EXECUTE IMMEDIATE as well as in plain
// text.
func TestHiddenSetNamesCollate(t *testing.T) {
	t.Parallel()
	m := testenvShared(t)
	db := m.NewDatabase(t)
	m.Exec(t, "CREATE TABLE "+db+".t (id INT PRIMARY KEY, s VARCHAR(10) CHARACTER SET utf8mb4)")
	m.Exec(t, "INSERT INTO "+db+".t VALUES (1, 'x')")
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr})
	const q = "SELECT s FROM t WHERE id = 1"
	// charset returns the character set number of the result's column.
	charset := func(c *rawConn, setup ...string) uint16 {
		t.Helper()
		for _, sql := range append(setup, q) {
			pkts, _ := c.exchange(t, append([]byte{0x03}, sql...)...)
			if sql != q {
				continue
			}
			col, _ := hex.DecodeString(pkts[1])
			rest := col
			for range 6 { // catalog, schema, table, org_table, name, org_name
				n, _, k := mysqlc.LengthEncodedInt(rest)
				rest = rest[k+int(n):]
			}
			return uint16(rest[1]) | uint16(rest[2])<<8
		}
		return 0
	}
	for _, tc := range [][2]string{
		{"EXECUTE IMMEDIATE 'SET NAMES utf8mb4 COLLATE utf8mb4_bin'", "SET collation_connection = utf8mb4_bin"},
		{"SET collation_connection = utf8mb4_bin", "EXECUTE IMMEDIATE 'SET NAMES utf8mb4 COLLATE utf8mb4_bin'"},
		{"SET NAMES utf8mb4 COLLATE utf8mb4_bin", "SET NAMES utf8mb4 COLLATE utf8mb4_bin; EXECUTE IMMEDIATE 'SET NAMES utf8mb4'"},
	} {
		for i, setup := range tc {
			for range 3 {
				direct := charset(dialRaw(t, m.Addr, "root", rootPass, db, false), setup)
				if got := charset(dialRaw(t, p.addr, "root", rootPass, db, false), setup); got != direct {
					t.Errorf("after %q (%d of %q): column charset %d, want %d", setup, i, tc, got, direct)
				}
			}
		}
	}
}

// TestHitAfterCursor: an execute the server runs closes the cursor an
// earlier execute of the statement opened. A hit never reaches the
// server, so after a cursor the statement's executes are relayed until
// one closes it: a COM_STMT_FETCH then fails as it does directly.
func TestHitAfterCursor(t *testing.T) {
	t.Parallel()
	m := testenvShared(t)
	db := m.NewDatabase(t)
	m.Exec(t, "CREATE TABLE "+db+".t (id INT PRIMARY KEY)")
	m.Exec(t, "INSERT INTO "+db+".t VALUES (1), (2), (3)")
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr})
	run := func(addr string) string {
		c := dialRaw(t, addr, "root", rootPass, db, false)
		st, err := c.Prepare("SELECT id FROM t WHERE id > ? ORDER BY id")
		if err != nil {
			t.Fatal(err)
		}
		id := binary.LittleEndian.AppendUint32(nil, st.ID)
		execute := func(flags byte) {
			t.Helper()
			// One LONGLONG parameter, 0.
			pkt := append(append([]byte{mysqlc.COM_STMT_EXECUTE}, id...), flags, 1, 0, 0, 0, 0, 1, mysqlc.MYSQL_TYPE_LONGLONG, 0)
			c.exchange(t, append(pkt, make([]byte, 8)...)...)
		}
		fetch := func() string {
			t.Helper()
			if err := c.command(append(append([]byte{mysqlc.COM_STMT_FETCH}, id...), 1, 0, 0, 0)...); err != nil {
				t.Fatal(err)
			}
			raw, err := c.readResponse(true)
			if err != nil {
				t.Fatal(err)
			}
			if last, _ := hex.DecodeString(raw[len(raw)-1]); last[0] == 0xff {
				return fmt.Sprintf("error %d", binary.LittleEndian.Uint16(last[1:]))
			}
			return fmt.Sprintf("%d packets", len(raw))
		}
		for range 3 {
			execute(0) // warm
		}
		execute(1) // CURSOR_TYPE_READ_ONLY
		out := "fetch " + fetch()
		execute(0)
		out += "; after a plain execute, fetch " + fetch()
		return out
	}
	want := run(m.Addr)
	if got := run(p.addr); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	c := openDB(t, rootDSN(p.addr, db, ""))
	if hits(t, c) == 0 {
		t.Error("no hit: the test proves nothing")
	}
}

// TestSerializableReadsLock: at SERIALIZABLE, a read inside a transaction
// (or with autocommit off) takes shared locks on what it reads, which
// keep other sessions' writes waiting until it ends. A hit takes none, so
// such reads go to the server: a write from elsewhere then waits, as it
// does directly, instead of being lost under the reader's next update.
func TestSerializableReadsLock(t *testing.T) {
	t.Parallel()
	m := testenvShared(t)
	db := m.NewDatabase(t)
	m.Exec(t, "CREATE TABLE "+db+".t (id INT PRIMARY KEY, v INT) ENGINE=InnoDB")
	m.Exec(t, "INSERT INTO "+db+".t VALUES (3, 3)")
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr})
	const q = "SELECT v FROM t WHERE id = 3"
	warm := openDB(t, rootDSN(p.addr, db, ""))
	for range 3 {
		var v int
		if err := warm.QueryRow(q).Scan(&v); err != nil {
			t.Fatal(err)
		}
	}
	if hits(t, warm) == 0 {
		t.Fatal("the read is not cached; the test proves nothing")
	}
	ctx := context.Background()
	for _, c := range [][2]string{
		{"SET SESSION TRANSACTION ISOLATION LEVEL SERIALIZABLE", "BEGIN"},
		{"SET SESSION TRANSACTION ISOLATION LEVEL SERIALIZABLE", "SET autocommit = 0"},
		// MariaDB's trackers do not report an unscoped SET @@name.
		{"SET @@tx_isolation = 'SERIALIZABLE'", "BEGIN"},
		{"SET @@tx_isolation = 'SERIALIZABLE'", "SET autocommit = 0"},
		{"SET @@tx_isolation = 'SERIALIZABLE'", "START TRANSACTION READ ONLY"},
	} {
		set, begin := c[0], c[1]
		z := conn(t, openDB(t, rootDSN(p.addr, db, "")))
		execConn(t, z, set)
		execConn(t, z, begin)
		var v int
		if err := z.QueryRowContext(ctx, q).Scan(&v); err != nil {
			t.Fatal(err)
		}
		y := conn(t, openDB(t, rootDSN(m.Addr, db, "")))
		execConn(t, y, "SET SESSION innodb_lock_wait_timeout = 1")
		_, err := y.ExecContext(ctx, "UPDATE t SET v = v + 10 WHERE id = 3")
		if me, ok := errors.AsType[*mysql.MySQLError](err); !ok || me.Number != 1205 {
			t.Errorf("%s; %s; then a read: another session's update got %v, want error 1205 (lock wait)", set, begin, err)
		}
		execConn(t, z, "ROLLBACK")
		z.Close()
		y.Close()
	}
}

func execConn(t *testing.T, c *sql.Conn, q string) {
	t.Helper()
	if _, err := c.ExecContext(context.Background(), q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// TestInitDBAfterHit: COM_INIT_DB leaves the warnings as they were (none
// here), and ROW_COUNT() at 0, as it does directly: a hit before it is not run again
// in the new database to make the diagnostics, and mycached's own read of
// the grants there does not show.
func TestInitDBAfterHit(t *testing.T) {
	t.Parallel()
	m := testenvShared(t)
	db, db2 := m.NewDatabase(t), m.NewDatabase(t)
	m.Exec(t, "CREATE TABLE "+db+".t (id INT PRIMARY KEY, v INT)")
	m.Exec(t, "INSERT INTO "+db+".t VALUES (1, 1)")
	m.Exec(t, "CREATE TABLE "+db2+".t (id VARCHAR(10) PRIMARY KEY, v INT)")
	m.Exec(t, "INSERT INTO "+db2+".t VALUES ('x', 1), ('y', 2)")
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr})
	run := func(addr string) string {
		c := dialRaw(t, addr, "root", rootPass, db, false)
		for range 3 {
			if _, err := c.Execute("SELECT v FROM t WHERE id = 1"); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.UseDB(db2); err != nil {
			t.Fatal(err)
		}
		w, err := c.Execute("SHOW WARNINGS")
		if err != nil {
			t.Fatal(err)
		}
		if err := c.UseDB(db); err != nil {
			t.Fatal(err)
		}
		rc, err := c.Execute("SELECT ROW_COUNT()")
		if err != nil {
			t.Fatal(err)
		}
		n, _ := rc.GetInt(0, 0)
		return fmt.Sprintf("%d warnings; ROW_COUNT() %d", w.RowNumber(), n)
	}
	want := run(m.Addr)
	if got := run(p.addr); got != want {
		t.Errorf("after COM_INIT_DB: got %s, want %s", got, want)
	}
	if hits(t, openDB(t, rootDSN(p.addr, db, ""))) == 0 {
		t.Error("no hit: the test proves nothing")
	}
}

// TestStoredCodeDDLRunsNothingOwn: DDL that stores code or names a
// database (views, routines, databases) runs none, so mycached does not
// read the session's variables, grants or temporary tables again after
// it, on the client's session: the session's own counters move through
// mycached as they do directly.
func TestStoredCodeDDLRunsNothingOwn(t *testing.T) {
	t.Parallel()
	m := testenvShared(t)
	db := m.NewDatabase(t)
	m.Exec(t, "CREATE TABLE "+db+".t (id INT PRIMARY KEY, v INT)")
	m.Exec(t, "INSERT INTO "+db+".t VALUES (1, 1)")
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr})
	const counters = "SHOW SESSION STATUS WHERE Variable_name IN " +
		"('Com_show_grants', 'Com_show_create_table', 'Com_show_variables', 'Com_do')"
	run := func(addr, tag string) string {
		c := dialRaw(t, addr, "root", rootPass, db, false)
		defer c.Close()
		exec := func(q string) *mysqlc.Result {
			r, err := c.Execute(q)
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			return r
		}
		read := func() map[string]int64 {
			r := exec(counters)
			out := map[string]int64{}
			for i := range r.RowNumber() {
				k, _ := r.GetString(i, 0)
				v, _ := r.GetInt(i, 1)
				out[k] = v
			}
			return out
		}
		exec("SELECT v FROM t WHERE id = 1")
		before := read()
		for _, q := range []string{
			"CREATE VIEW v" + tag + " AS SELECT v FROM t",
			"CREATE OR REPLACE VIEW v" + tag + " AS SELECT id, v FROM t",
			"DROP VIEW v" + tag,
			"CREATE PROCEDURE p" + tag + "() SELECT 1",
			"DROP PROCEDURE p" + tag,
			"CREATE DATABASE " + db + tag,
			"ALTER DATABASE " + db + tag + " CHARACTER SET utf8mb4",
			"DROP DATABASE " + db + tag,
		} {
			exec(q)
			exec("SELECT v FROM t WHERE id = 1")
		}
		after := read()
		var b strings.Builder
		for _, k := range []string{"Com_show_grants", "Com_show_create_table", "Com_show_variables", "Com_do"} {
			fmt.Fprintf(&b, "%s +%d; ", k, after[k]-before[k])
		}
		return b.String()
	}
	want := run(m.Addr, "d")
	if got := run(p.addr, "m"); got != want {
		t.Errorf("the session's counters moved otherwise through mycached:\n got %s\nwant %s", got, want)
	}
}

// TestMaintenanceKeepsOtherEntries: table maintenance statements the
// parser does not know (CHECK, CHECKSUM, REPAIR, ANALYZE ... PERSISTENT
// FOR) are read for what they are: a REPAIR invalidates the tables it
// names, and none of them invalidates anything else, as a write of
// anything would.
func TestMaintenanceKeepsOtherEntries(t *testing.T) {
	t.Parallel()
	m := testenvShared(t)
	db := m.NewDatabase(t)
	m.Exec(t, "CREATE TABLE "+db+".t (id INT PRIMARY KEY, v INT) ENGINE=MyISAM")
	m.Exec(t, "CREATE TABLE "+db+".u (id INT PRIMARY KEY, v INT)")
	m.Exec(t, "INSERT INTO "+db+".t VALUES (1, 1)")
	m.Exec(t, "INSERT INTO "+db+".u VALUES (1, 1)")
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr})
	via := openDB(t, rootDSN(p.addr, db, ""))
	via.SetMaxOpenConns(1)
	const readT, readU = "SELECT v FROM t WHERE id = 1", "SELECT v FROM u WHERE id = 1"
	dump(t, via, readT)
	dump(t, via, readU)
	hit := func(q string) bool {
		before := hits(t, via)
		dump(t, via, q)
		return hits(t, via) > before
	}
	for _, stmt := range []string{
		"CHECK TABLE t FOR UPGRADE",
		"CHECK TABLE t, u QUICK",
		"CHECKSUM TABLE t EXTENDED",
		"ANALYZE TABLE t PERSISTENT FOR ALL",
		"REPAIR NO_WRITE_TO_BINLOG TABLE t QUICK",
	} {
		mustExec(t, via, stmt)
		if !hit(readU) {
			t.Errorf("after %s: %s missed", stmt, readU)
		}
		repair := strings.HasPrefix(stmt, "REPAIR")
		if got := hit(readT); got == repair {
			t.Errorf("after %s: %s hit %v, want %v", stmt, readT, got, !repair)
		}
	}
}

// TestMariaDBWrites: INSERT, REPLACE and DELETE with MariaDB's RETURNING
// clause, and CREATE OR REPLACE TABLE, invalidate what they write, and
// only that: the parser does not know these forms, and a text it refuses
// would be a write of anything. A clause that may run code stays one.
func TestMariaDBWrites(t *testing.T) {
	t.Parallel()
	m := testenvShared(t)
	db := m.NewDatabase(t)
	m.Exec(t, "CREATE TABLE "+db+".t (id INT PRIMARY KEY AUTO_INCREMENT, v INT)")
	m.Exec(t, "CREATE TABLE "+db+".u (id INT PRIMARY KEY, v INT)")
	m.Exec(t, "INSERT INTO "+db+".t VALUES (1, 1), (2, 2)")
	m.Exec(t, "INSERT INTO "+db+".u VALUES (1, 1)")
	m.Exec(t, "CREATE FUNCTION "+db+".f(x INT) RETURNS INT DETERMINISTIC RETURN x + 1")
	m.Exec(t, "CREATE TABLE "+db+".r (id INT PRIMARY KEY, v INT)")
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr})
	via := openDB(t, rootDSN(p.addr, db, ""))
	via.SetMaxOpenConns(1)
	direct := openDB(t, rootDSN(m.Addr, db, ""))
	reads := []string{"SELECT COUNT(*), SUM(v) FROM t", "SELECT v FROM t WHERE id = 2", "SELECT v FROM t WHERE id = 7",
		"SELECT COUNT(*), SUM(v) FROM r"}
	const other = "SELECT v FROM u WHERE id = 1"
	warm := func() {
		for _, q := range append(reads, other) {
			dump(t, via, q)
			dump(t, via, q)
		}
	}
	for _, w := range []struct {
		sql    string
		anyway bool // a write of anything
	}{
		{"INSERT INTO t (v) VALUES (10) RETURNING id, v", false},
		{"INSERT INTO t (id, v) VALUES (7, 70) RETURNING t.*", false},
		{"REPLACE INTO t (id, v) VALUES (7, 71) RETURNING id AS k, `v` val", false},
		{"DELETE FROM t WHERE id = 2 RETURNING *", false},
		{"CREATE OR REPLACE TABLE r (id INT PRIMARY KEY, v INT) AS SELECT id, v FROM t", false},
		{"INSERT INTO t (v) VALUES (20) RETURNING f(id)", true},
		{"ANALYZE UPDATE t SET v = v + 1 WHERE id = 7", false},
		{"ANALYZE FORMAT=JSON DELETE FROM t WHERE id = 7", false},
		{"ANALYZE SELECT f(v) FROM t", true},
	} {
		warm()
		if _, err := via.Exec(w.sql); err != nil {
			t.Fatalf("%s: %v", w.sql, err)
		}
		for _, q := range reads {
			if got, want := dump(t, via, q), dump(t, direct, q); got != want {
				t.Errorf("after %s: %s gave %s, want %s", w.sql, q, got, want)
			}
		}
		h := hits(t, via)
		dump(t, via, other)
		if hit := hits(t, via) > h; hit == w.anyway {
			t.Errorf("after %s: %s hit %v, want %v", w.sql, other, hit, !w.anyway)
		}
	}
}

// TestHarmlessRefusedStatements: statements the parser refuses that
// change no row (ANALYZE of a read, HANDLER, key caches, diagnostics,
// backup stages, FLUSH of caches and statistics) invalidate nothing, and
// answer as they do directly.
func TestHarmlessRefusedStatements(t *testing.T) {
	t.Parallel()
	m := testenvShared(t)
	db := m.NewDatabase(t)
	m.Exec(t, "CREATE TABLE "+db+".t (id INT PRIMARY KEY, v INT) ENGINE=MyISAM")
	m.Exec(t, "INSERT INTO "+db+".t VALUES (1, 1), (2, 2)")
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr})
	reader := openDB(t, rootDSN(p.addr, db, ""))
	const q = "SELECT v FROM t WHERE id = 1"
	waitFor(t, 10*time.Second, q+" cached", func() bool {
		before := hits(t, reader)
		dump(t, reader, q)
		return hits(t, reader) > before
	})
	via, direct := conn(t, openDB(t, rootDSN(p.addr, db, ""))), conn(t, openDB(t, rootDSN(m.Addr, db, "")))
	for _, s := range []string{
		"ANALYZE SELECT v FROM t WHERE id > 0",
		"ANALYZE FORMAT=JSON SELECT COUNT(*) FROM t",
		"HANDLER t OPEN",
		"HANDLER t READ `PRIMARY` = (2)",
		"HANDLER t READ `PRIMARY` NEXT",
		"HANDLER t CLOSE",
		"CACHE INDEX t IN DEFAULT",
		"LOAD INDEX INTO CACHE t",
		"GET DIAGNOSTICS @n = NUMBER",
		"FLUSH QUERY CACHE",
		"FLUSH USER_RESOURCES",
	} {
		got, want := connDump(via, s), connDump(direct, s)
		if strings.HasPrefix(s, "ANALYZE") {
			// The plan's timings differ from run to run.
			got, want = fmt.Sprint(len(got) > 0), fmt.Sprint(len(want) > 0)
		}
		if got != want {
			t.Errorf("%s: got %s, want %s", s, got, want)
		}
		before := hits(t, reader)
		dump(t, reader, q)
		if hits(t, reader) == before {
			t.Errorf("%s missed after %s", q, s)
		}
	}
}

// connDump is queryDump on c, with an error as its text.
func connDump(c *sql.Conn, q string) string {
	s, err := queryDump(context.Background(), c, q)
	if err != nil {
		return "error: " + err.Error()
	}
	return s
}

// TestSetStatementReads: SET STATEMENT max_statement_time=N FOR a read
// is cached as the read, and invalidates nothing; FOR a write, it
// invalidates what the write writes, and only that.
func TestSetStatementReads(t *testing.T) {
	t.Parallel()
	m := testenvShared(t)
	db := m.NewDatabase(t)
	m.Exec(t, "CREATE TABLE "+db+".t (id INT PRIMARY KEY, v INT)")
	m.Exec(t, "CREATE TABLE "+db+".u (id INT PRIMARY KEY, v INT)")
	m.Exec(t, "INSERT INTO "+db+".t VALUES (1, 1), (2, 2)")
	m.Exec(t, "INSERT INTO "+db+".u VALUES (1, 1)")
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr})
	via := openDB(t, rootDSN(p.addr, db, ""))
	via.SetMaxOpenConns(1)
	direct := openDB(t, rootDSN(m.Addr, db, ""))
	const read = "SET STATEMENT max_statement_time=10 FOR SELECT v FROM t WHERE id = 1"
	const other = "SELECT v FROM u WHERE id = 1"
	hit := func(q string) bool {
		before := hits(t, via)
		if got, want := dump(t, via, q), dump(t, direct, q); got != want {
			t.Errorf("%s gave %s, want %s", q, got, want)
		}
		return hits(t, via) > before
	}
	// A miss is stored off the client's path: the next read may come
	// first.
	waitFor(t, 10*time.Second, other+" cached", func() bool { return hit(other) })
	waitFor(t, 10*time.Second, read+" cached", func() bool { return hit(read) })
	if !hit(other) {
		t.Errorf("%s missed after %s", other, read)
	}
	mustExec(t, via, "SET STATEMENT max_statement_time=10, lock_wait_timeout=5 FOR UPDATE t SET v = 10 WHERE id = 1")
	if hit(read) {
		t.Errorf("%s hit after the update of its row", read)
	}
	if !hit(other) {
		t.Errorf("%s missed after the update of another table", other)
	}
	// Under variables that change results, a read is relayed, and
	// invalidates nothing; the session's own settings stay in force.
	const all = "SELECT v FROM t ORDER BY id"
	waitFor(t, 10*time.Second, all+" cached", func() bool { return hit(all) })
	for _, q := range []string{
		"SET STATEMENT sql_select_limit=1 FOR " + all,
		"SET STATEMENT sql_mode='ANSI_QUOTES', max_statement_time=10 FOR SELECT \"v\" FROM t WHERE id = 1",
		"SET STATEMENT div_precision_increment=1 FOR SELECT v / 3 FROM t WHERE id = 1",
	} {
		for range 2 {
			if hit(q) {
				t.Errorf("%s was served from the cache", q)
			}
		}
		if !hit(other) {
			t.Errorf("%s missed after %s", other, q)
		}
		if !hit(all) {
			t.Errorf("%s missed after %s", all, q)
		}
	}
}

// TestNoHitOnKilledSession: a read right after the server killed the
// session gets the error it gets directly, not a cached answer, however
// soon after the KILL it comes, whether mycached speaks TLS to the server
// or not.
func TestNoHitOnKilledSession(t *testing.T) {
	t.Parallel()
	for _, backend := range []struct {
		name  string
		start func(testing.TB) *testenv.MariaDB
	}{{"plain", testenvShared}, {"tls", tlsMariaDB}} {
		t.Run(backend.name, func(t *testing.T) {
			t.Parallel()
			m := backend.start(t)
			db := m.NewDatabase(t)
			m.Exec(t, "CREATE TABLE "+db+".t (id INT PRIMARY KEY, v INT)")
			m.Exec(t, "INSERT INTO "+db+".t VALUES (1, 1)")
			p := startProxy(t, mysqlproxy.Config{Backend: m.Addr})
			const q = "SELECT v FROM t WHERE id = 1"
			root := openDB(t, rootDSN(m.Addr, db, ""))
			for i := range 6 {
				c := dialRaw(t, p.addr, "root", rootPass, db, false)
				for range 3 {
					if _, err := c.Execute(q); err != nil {
						t.Fatal(err)
					}
				}
				r, err := c.Execute("SELECT CONNECTION_ID(), (SELECT VARIABLE_VALUE FROM information_schema.SESSION_STATUS WHERE VARIABLE_NAME = 'Ssl_cipher')")
				if err != nil {
					t.Fatal(err)
				}
				id, _ := r.GetInt(0, 0)
				if cipher, _ := r.GetString(0, 1); (cipher != "") != (backend.name == "tls") {
					t.Fatalf("the session's Ssl_cipher is %q", cipher)
				}
				switch i % 3 {
				case 1:
					// Long enough for the watcher to wait on the backend:
					// the close reaches the session through it, not
					// through a peek.
					time.Sleep(100 * time.Millisecond)
				case 2:
					// The session kills itself: the server's answer is
					// the error, and it closes at once.
					if _, err := c.Execute("KILL CONNECTION_ID()"); err == nil {
						t.Fatal("KILL CONNECTION_ID() succeeded")
					}
				}
				if i%3 != 2 {
					mustExec(t, root, fmt.Sprintf("KILL %d", id))
				}
				// The KILL returns before the killed thread closes its socket.
				waitFor(t, 5*time.Second, "the killed session to end", func() bool {
					return readInt(t, root, fmt.Sprintf("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = %d", id)) == 0
				})
				if _, err := c.Execute(q); err == nil {
					t.Errorf("try %d: a read right after KILL was answered", i)
				}
			}
			if hits(t, openDB(t, rootDSN(p.addr, db, ""))) == 0 {
				t.Error("no hit: the test proves nothing")
			}
		})
	}
}

// sameAsDirect runs run against MariaDB directly and through mycached,
// fails t when the two differ, and returns what MariaDB gave.
func sameAsDirect(t *testing.T, direct, via string, run func(addr string) string) string {
	t.Helper()
	want := run(direct)
	if got := run(via); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	return want
}

// stmtProbe drives prepared statements over the raw protocol and notes
// what each command got: an error code, or the packet count, the last
// row and the final status flags.
type stmtProbe struct {
	t   *testing.T
	c   *rawConn
	out []string
}

func newStmtProbe(t *testing.T, addr, db string) *stmtProbe {
	return &stmtProbe{t: t, c: dialRaw(t, addr, "root", rootPass, db, false)}
}

// lastID names the statement prepared last, as MariaDB reads it.
var lastID = []byte{0xff, 0xff, 0xff, 0xff}

// execHdr is an execute's flags (no cursor) and iteration count.
var execHdr = []byte{0, 1, 0, 0, 0}

func (sp *stmtProbe) send(id []byte, cmd byte, rest ...byte) {
	sp.t.Helper()
	pkt := append(append([]byte{cmd}, id...), rest...)
	if cmd == mysqlc.COM_STMT_SEND_LONG_DATA || cmd == mysqlc.COM_STMT_CLOSE {
		if err := sp.c.command(pkt...); err != nil { // no answer
			sp.t.Fatal(err)
		}
		return
	}
	raw, last := sp.c.exchange(sp.t, pkt...)
	switch {
	case last[0] == 0xff:
		sp.out = append(sp.out, fmt.Sprintf("error %d", binary.LittleEndian.Uint16(last[1:])))
	case len(raw) < 2:
		sp.out = append(sp.out, fmt.Sprintf("%d packets", len(raw)))
	default:
		// The last row: the packet before the EOF, and the EOF's
		// status flags.
		sp.out = append(sp.out, fmt.Sprintf("%d packets, %q, status %#x", len(raw), raw[len(raw)-2], binary.LittleEndian.Uint16(last[3:])))
	}
}

// query runs each statement as a COM_QUERY and notes what it got.
func (sp *stmtProbe) query(stmts ...string) {
	sp.t.Helper()
	for _, q := range stmts {
		raw, last := sp.c.exchange(sp.t, append([]byte{mysqlc.COM_QUERY}, q...)...)
		switch {
		case last[0] == 0xff:
			sp.out = append(sp.out, fmt.Sprintf("%s: error %d", q, binary.LittleEndian.Uint16(last[1:])))
		case len(raw) < 2:
			sp.out = append(sp.out, fmt.Sprintf("%s: %d packets", q, len(raw)))
		default:
			sp.out = append(sp.out, fmt.Sprintf("%s: %d packets, %q", q, len(raw), raw[len(raw)-2]))
		}
	}
}

func (sp *stmtProbe) prep(q string) []byte {
	sp.t.Helper()
	st, err := sp.c.Prepare(q)
	if err != nil {
		sp.t.Fatal(err)
	}
	return binary.LittleEndian.AppendUint32(nil, st.ID)
}

func (sp *stmtProbe) String() string { return strings.Join(sp.out, "\n") }

// TestRefusedExecuteKeepsStatement: an execute the server refuses before
// running it (1210, 1835) leaves the long data for the next execute, and
// the parameter types bound before when it could not read the new ones,
// or the new ones when it read them but not the values. mycached does
// not guess which: it relays the statement's executes as they are, and
// serves no cached rows, until one sends types again.
func TestRefusedExecuteKeepsStatement(t *testing.T) {
	t.Parallel()
	m := testenvShared(t)
	db := m.NewDatabase(t)
	m.Exec(t, "CREATE TABLE "+db+".t (id INT PRIMARY KEY, v VARCHAR(10))")
	m.Exec(t, "INSERT INTO "+db+".t VALUES (1, 'a'), (2, 'b'), (3, 'c')")
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr})
	run := func(addr string) string {
		sp := newStmtProbe(t, addr, db)
		hdr := execHdr
		// Types refused: the ones bound before stay.
		id := sp.prep("SELECT ? AS x FROM t WHERE id = 1")
		sp.send(id, mysqlc.COM_STMT_EXECUTE, append(hdr, 0, 1, 0xfe, 0, 1, 'a')...)
		sp.send(id, mysqlc.COM_STMT_EXECUTE, append(hdr, 0, 1, 0xff, 0x89, 1, 'b')...)
		sp.send(id, mysqlc.COM_STMT_EXECUTE, append(hdr, 0, 0, 1, 'c')...)
		// Types read, values missing: the new types stay.
		id = sp.prep("SELECT ? AS x FROM t WHERE id = 2")
		sp.send(id, mysqlc.COM_STMT_EXECUTE, append(hdr, 0, 1, 0x08, 0, 5, 0, 0, 0, 0, 0, 0, 0)...)
		sp.send(id, mysqlc.COM_STMT_EXECUTE, append(hdr, 0, 1, 0x08, 0, 5, 0, 0, 0, 0, 0, 0, 0)...)
		sp.send(id, mysqlc.COM_STMT_EXECUTE, append(hdr, 0, 1, 0xfe, 0)...)
		sp.send(id, mysqlc.COM_STMT_EXECUTE, append(hdr, 0, 0, 8, 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h')...)
		// An execute by it without types, which MariaDB refuses though
		// the statement was given types: through mycached too, which
		// must not add the types it remembers nor answer from the cache.
		sp.send(lastID, mysqlc.COM_STMT_EXECUTE, append(hdr, 0, 0, 8, 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h')...)
		// Long data before a refused execute: it stays for the next.
		id = sp.prep("SELECT id FROM t WHERE v = ?")
		for range 3 {
			sp.send(id, mysqlc.COM_STMT_EXECUTE, append(hdr, 0, 1, 0xfe, 0, 1, 'a')...)
		}
		sp.send(id, mysqlc.COM_STMT_SEND_LONG_DATA, 0, 0, 'b')
		sp.send(id, mysqlc.COM_STMT_EXECUTE, append(hdr, 0, 1)...) // types announced, none sent
		sp.send(id, mysqlc.COM_STMT_EXECUTE, append(hdr, 0, 1, 0xfe, 0, 1, 'a')...)
		return sp.String()
	}
	sameAsDirect(t, m.Addr, p.addr, run)
}

// TestLastStatementID: MariaDB reads the statement id 0xffffffff as the
// statement prepared last, in every command. mycached reads it so too:
// long data, types, a cursor or a close sent by it are those of that
// statement, and no session gets rows cached for other long data.
func TestLastStatementID(t *testing.T) {
	t.Parallel()
	m := testenvShared(t)
	db := m.NewDatabase(t)
	m.Exec(t, "CREATE TABLE "+db+".t (id INT PRIMARY KEY, v VARCHAR(10))")
	m.Exec(t, "INSERT INTO "+db+".t VALUES (1, 'a'), (2, 'b'), (3, 'c')")
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr})
	hdr := execHdr
	run := func(addr string) string {
		var out []string
		// Two sessions send the same execute after different long data.
		for _, secret := range []string{"alice", "bob"} {
			sp := newStmtProbe(t, addr, db)
			id := sp.prep("SELECT ? AS v FROM t WHERE id = 1")
			sp.send(lastID, mysqlc.COM_STMT_SEND_LONG_DATA, append([]byte{0, 0}, secret...)...)
			sp.send(id, mysqlc.COM_STMT_EXECUTE, append(hdr, 0, 1, 0xfc, 0)...)
			out = append(out, sp.String())
		}
		sp := newStmtProbe(t, addr, db)
		// Types sent by it.
		id := sp.prep("SELECT ? AS v FROM t WHERE id = 2")
		sp.send(id, mysqlc.COM_STMT_EXECUTE, append(hdr, 0, 1, 0x08, 0, 5, 0, 0, 0, 0, 0, 0, 0)...)
		sp.send(id, mysqlc.COM_STMT_EXECUTE, append(hdr, 0, 1, 0x08, 0, 5, 0, 0, 0, 0, 0, 0, 0)...)
		sp.send(lastID, mysqlc.COM_STMT_EXECUTE, append(hdr, 0, 1, 0xfe, 0, 1, 'x')...)
		sp.send(id, mysqlc.COM_STMT_EXECUTE, append(hdr, 0, 0, 8, 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h')...)
		// By it without types after it was prepared, and after an
		// execute by its own id gave it types: MariaDB refuses both, and
		// takes the same execute by its own id.
		id = sp.prep("SELECT ? AS v FROM t WHERE id = 3")
		sp.send(lastID, mysqlc.COM_STMT_EXECUTE, append(hdr, 0, 0, 8, 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h')...)
		sp.send(id, mysqlc.COM_STMT_EXECUTE, append(hdr, 0, 1, 0x08, 0, 5, 0, 0, 0, 0, 0, 0, 0)...)
		sp.send(lastID, mysqlc.COM_STMT_EXECUTE, append(hdr, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0)...)
		sp.send(id, mysqlc.COM_STMT_EXECUTE, append(hdr, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0)...)
		sp.send(lastID, mysqlc.COM_STMT_EXECUTE, append(hdr, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0)...)
		// A cursor opened by it: the next plain execute closes it.
		id = sp.prep("SELECT id FROM t ORDER BY id")
		sp.send(id, mysqlc.COM_STMT_EXECUTE, hdr...)
		sp.send(id, mysqlc.COM_STMT_EXECUTE, hdr...)
		sp.send(lastID, mysqlc.COM_STMT_EXECUTE, 1, 1, 0, 0, 0)
		sp.send(id, mysqlc.COM_STMT_EXECUTE, hdr...)
		sp.send(id, mysqlc.COM_STMT_FETCH, 10, 0, 0, 0)
		// A close by it.
		sp.send(id, mysqlc.COM_STMT_EXECUTE, hdr...)
		sp.send(lastID, mysqlc.COM_STMT_CLOSE)
		sp.send(id, mysqlc.COM_STMT_EXECUTE, hdr...)
		// The flag that says the server prepared the statement again is
		// the execute's own, not the one of the execute that filled.
		other := openDB(t, rootDSN(addr, db, ""))
		id = sp.prep("SELECT * FROM t WHERE id = 3")
		sp.send(id, mysqlc.COM_STMT_EXECUTE, hdr...)
		mustExec(t, other, "ALTER TABLE t ADD COLUMN w INT")
		for range 3 {
			sp.send(id, mysqlc.COM_STMT_EXECUTE, hdr...)
		}
		mustExec(t, other, "ALTER TABLE t DROP COLUMN w")
		return strings.Join(append(out, sp.String()), "\n")
	}
	sameAsDirect(t, m.Addr, p.addr, run)
}

// TestMultiStatementsTrailingComment: a text that ends in ";" and a
// comment is one statement to a session without multi-statements, and
// two (the second empty) to a session with them. A hit must not give one
// the other's answer.
func TestMultiStatementsTrailingComment(t *testing.T) {
	t.Parallel()
	m := testenvShared(t)
	db := m.NewDatabase(t)
	m.Exec(t, "CREATE TABLE "+db+".t (id INT PRIMARY KEY, v INT)")
	m.Exec(t, "INSERT INTO "+db+".t VALUES (1, 10)")
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr})
	const q = "SELECT v FROM t WHERE id = 1; -- trailing"
	results := func(addr string, multi bool) string {
		c, err := client.Connect(addr, "root", rootPass, db, func(c *client.Conn) error {
			if multi {
				return c.SetCapability(mysqlc.CLIENT_MULTI_STATEMENTS)
			}
			c.UnsetCapability(mysqlc.CLIENT_MULTI_STATEMENTS)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		out := ""
		if _, err := c.ExecuteMultiple(q, func(r *mysqlc.Result, err error) {
			switch {
			case err != nil:
				out += "[" + err.Error() + "]"
			case r.Resultset != nil:
				out += fmt.Sprintf("[%d rows]", len(r.Values))
			default:
				out += "[ok]"
			}
		}); err != nil {
			return err.Error()
		}
		return out
	}
	run := func(addr string) string {
		out := ""
		for range 3 { // fills, then hits
			out += results(addr, false) + " "
		}
		return out + results(addr, true)
	}
	want := sameAsDirect(t, m.Addr, p.addr, run)
	if !strings.HasSuffix(want, "[1 rows][0 rows]") {
		t.Errorf("MariaDB answered %s: the case proves nothing", want)
	}
}

// TestQueryLimitedAccountIsNotCached: MAX_QUERIES_PER_HOUR has the server
// count an account's every statement and refuse them past the limit
// (error 1226). A hit, which the server never sees, would let the
// account read past it: its reads are not served from the cache.
func TestQueryLimitedAccountIsNotCached(t *testing.T) {
	t.Parallel()
	m := testenvShared(t)
	db := m.NewDatabase(t)
	user := "lq_" + db
	m.Exec(t, "CREATE TABLE "+db+".t (id INT PRIMARY KEY, v INT)")
	m.Exec(t, "INSERT INTO "+db+".t VALUES (1, 1)")
	m.Exec(t, fmt.Sprintf("CREATE USER '%s'@'%%' IDENTIFIED BY 'pw' WITH MAX_QUERIES_PER_HOUR 40", user))
	m.Exec(t, fmt.Sprintf("GRANT SELECT ON %s.* TO '%s'@'%%'", db, user))
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr})
	c := conn(t, openDB(t, testenv.DSNFor(p.addr, user, "pw", db, "")))
	refused := 0
	for range 60 {
		if _, err := queryDump(context.Background(), c, "SELECT v FROM t WHERE id = 1"); err != nil {
			if mysqlErr(t, err).Number != 1226 {
				t.Fatalf("got %v, want rows or error 1226", err)
			}
			refused++
		}
	}
	if refused == 0 {
		t.Error("60 reads of an account limited to 40 queries an hour all returned rows: hits went past the server's limit")
	}
}

// TestNoSchemaClientNamesItsOwnDatabase: a client that sets
// CLIENT_NO_SCHEMA has the server read db.t as t in the session's
// database. Its reads must not be cached under the table its text names,
// nor answer another client's same text; its writes must invalidate the
// table the server wrote.
func TestNoSchemaClientNamesItsOwnDatabase(t *testing.T) {
	t.Parallel()
	m := testenvShared(t)
	d1, d2 := m.NewDatabase(t), m.NewDatabase(t)
	for i, d := range []string{d1, d2} {
		m.Exec(t, "CREATE TABLE "+d+".pub (id INT PRIMARY KEY, v INT)")
		m.Exec(t, fmt.Sprintf("INSERT INTO %s.pub VALUES (1, %d)", d, 10*(i+1)))
	}
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr})
	noSchema, err := client.ConnectWithDialer(context.Background(), "tcp", p.addr, "root", rootPass, d1,
		dialWithCaps(mysqlc.CLIENT_NO_SCHEMA))
	if err != nil {
		t.Fatal(err)
	}
	defer noSchema.Close()
	read := func(q string) string {
		t.Helper()
		r, err := noSchema.Execute(q)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		v, _ := r.GetInt(0, 0)
		return strconv.FormatInt(v, 10)
	}
	pdb := openDB(t, rootDSN(p.addr, d1, ""))
	plain := conn(t, pdb)
	other := "SELECT v FROM " + d2 + ".pub WHERE id = 1"
	own := "SELECT v FROM " + d1 + ".pub WHERE id = 1"
	warmOn(t, pdb, plain, own)

	// The server reads d1.pub for the client's d2.pub.
	for range 3 {
		if got := read(other); got != "10" {
			t.Fatalf("%s without schemas: got %s, want d1's 10", other, got)
		}
	}
	// Another client's same text reads d2.pub.
	if got, want := dumpOn(t, plain, other), dump(t, m.AdminDB(), other); got != want {
		t.Fatalf("%s from a client with schemas: got %s, want d2's %s", other, got, want)
	}
	// A write to d1.pub invalidates what the client read.
	execOn(t, plain, "UPDATE "+d1+".pub SET v = 11 WHERE id = 1")
	if got := read(other); got != "11" {
		t.Fatalf("%s after d1.pub changed: got %s, want 11", other, got)
	}
	// The client's write to "d2.pub" is a write to d1.pub.
	warmOn(t, pdb, plain, own)
	if _, err := noSchema.Execute("UPDATE " + d2 + ".pub SET v = 12 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	if got, want := dumpOn(t, plain, own), dump(t, m.AdminDB(), own); got != want || !strings.Contains(want, "12") {
		t.Fatalf("%s after the client without schemas wrote it: got %s, want %s with 12", own, got, want)
	}
	if got := m.QueryString(t, "SELECT v FROM "+d2+".pub WHERE id = 1"); got != "20" {
		t.Fatalf("d2.pub changed: %s", got)
	}

	// State the client changes unseen is read back on its session too.
	const div = "SELECT v / 7 FROM pub WHERE id = 1"
	for range 3 {
		if _, err := noSchema.Execute(div); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := noSchema.Execute("SET @@div_precision_increment = 9"); err != nil {
		t.Fatal(err)
	}
	r, err := noSchema.Execute(div)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := r.GetString(0, 0); got != "1.714285714" {
		t.Fatalf("%s at div_precision_increment 9: got %s, want 1.714285714", div, got)
	}
}

// dialWithCaps returns a dialer whose connection adds caps to the
// capabilities of the client's handshake response, its first write: for
// flags go-mysql's client does not set.
func dialWithCaps(caps uint32) client.Dialer {
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, address)
		if err != nil {
			return nil, err
		}
		return &capsConn{Conn: c, caps: caps}, nil
	}
}

type capsConn struct {
	net.Conn
	caps uint32
	sent bool
}

func (c *capsConn) Write(b []byte) (int, error) {
	if !c.sent && len(b) >= 8 {
		c.sent = true
		b = bytes.Clone(b)
		binary.LittleEndian.PutUint32(b[4:], binary.LittleEndian.Uint32(b[4:])|c.caps)
	}
	return c.Conn.Write(b)
}

// TestPreparedBeforeDDLSeesNewColumns: the server prepares a statement
// again when what it reads changed, and says so in the execute's status
// (METADATA_CHANGED), so that the client reads the new columns with the
// rows. An execute of a statement prepared before DDL is not answered
// from an entry that another statement, prepared after it, filled.
func TestPreparedBeforeDDLSeesNewColumns(t *testing.T) {
	t.Parallel()
	m := testenvShared(t)
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr})
	const q = "SELECT * FROM mc WHERE id = ?"
	// prepare and execute speak the binary protocol with no cursor, as
	// the MariaDB C library does.
	prepare := func(c *rawConn) uint32 {
		t.Helper()
		if err := c.command(append([]byte{mysqlc.COM_STMT_PREPARE}, q...)...); err != nil {
			t.Fatal(err)
		}
		ok, err := c.ReadPacket()
		if err != nil || len(ok) < 12 || ok[0] != 0 {
			t.Fatalf("prepare %s: %x %v", q, ok, err)
		}
		cols, params := binary.LittleEndian.Uint16(ok[5:]), binary.LittleEndian.Uint16(ok[7:])
		for _, n := range []uint16{params, cols} {
			if n == 0 {
				continue
			}
			for range int(n) + 1 { // the definitions and their EOF
				if _, err := c.ReadPacket(); err != nil {
					t.Fatal(err)
				}
			}
		}
		return binary.LittleEndian.Uint32(ok[1:])
	}
	execute := func(c *rawConn, id uint32) (status uint16, columns int) {
		t.Helper()
		pkt := []byte{mysqlc.COM_STMT_EXECUTE, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, mysqlc.MYSQL_TYPE_LONGLONG, 0, 1, 0, 0, 0, 0, 0, 0, 0}
		binary.LittleEndian.PutUint32(pkt[1:], id)
		pkts, last := c.exchange(t, pkt...)
		first, _ := hex.DecodeString(pkts[0])
		return c.endStatus(last), int(first[0])
	}
	var db string
	flags := func(addr string) (before, after uint16) {
		db = m.NewDatabase(t)
		m.Exec(t, "CREATE TABLE "+db+".mc (id INT PRIMARY KEY, a INT)")
		m.Exec(t, "INSERT INTO "+db+".mc VALUES (1, 10)")
		x, y := dialRaw(t, addr, "root", rootPass, db, false), dialRaw(t, addr, "root", rootPass, db, false)
		old := prepare(x)
		before, _ = execute(x, old)
		if _, err := y.Execute("ALTER TABLE mc ADD COLUMN c INT DEFAULT 7"); err != nil {
			t.Fatal(err)
		}
		fresh := prepare(y)
		for range 3 {
			execute(y, fresh)
		}
		after, cols := execute(x, old)
		if cols != 3 {
			t.Fatalf("%s after ADD COLUMN: %d columns, want 3", q, cols)
		}
		return before, after
	}
	db0, db1 := flags(m.Addr)
	if db1&mysqlc.SERVER_STATUS_METADATA_CHANGED == 0 {
		t.Fatalf("MariaDB did not flag the changed metadata: %#x", db1)
	}
	p0, p1 := flags(p.addr)
	if p0 != db0 || p1 != db1 {
		t.Fatalf("status through mycached %#x then %#x, directly %#x then %#x", p0, p1, db0, db1)
	}
	// Each of the five executes is counted once in its shape's row, the
	// one relayed for its DDL too.
	r := shapeRow(t, openDB(t, rootDSN(p.addr, db, "")), "from `mc` where `id`")
	if n := r.hits + r.misses + r.bypasses; n != 5 || r.bypasses < 1 || r.reason != "prepared-before-ddl" {
		t.Errorf("SHOW MYCACHED QUERIES: %+v; want 5 executes counted, the last a bypass for prepared-before-ddl", r)
	}
}

// TestHitQueryWasSlowIsTheSessions: the server flags a read that took
// longer than the session's long_query_time (SERVER_QUERY_WAS_SLOW). A
// hit's flag is the reading session's, whoever filled the entry.
func TestHitQueryWasSlowIsTheSessions(t *testing.T) {
	t.Parallel()
	m := testenvShared(t)
	db := m.NewDatabase(t)
	m.Exec(t, "CREATE TABLE "+db+".s (id INT PRIMARY KEY)")
	m.Exec(t, "INSERT INTO "+db+".s VALUES (1)")
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr})
	// status reads q three times on a new session that first ran set,
	// and returns the status of the last answer.
	status := func(addr, set, q string) uint16 {
		t.Helper()
		c := dialRaw(t, addr, "root", rootPass, db, false)
		if set != "" {
			if _, err := c.Execute(set); err != nil {
				t.Fatal(err)
			}
		}
		var st uint16
		for range 3 {
			_, last := c.exchange(t, append([]byte{mysqlc.COM_QUERY}, q...)...)
			st = c.endStatus(last)
		}
		return st
	}
	pdb := openDB(t, rootDSN(p.addr, db, ""))
	for i, c := range []struct{ filler, reader string }{
		{"SET long_query_time = 0", ""},
		{"", "SET long_query_time = 0"},
		{"", "SET log_slow_query_time = 0"}, // its other name
		{"", "SET @@long_query_time = 0"},   // which no tracker reports
	} {
		q := fmt.Sprintf("SELECT id FROM s WHERE id = %d", i+1)
		status(p.addr, c.filler, q)
		before := hits(t, pdb)
		got, want := status(p.addr, c.reader, q), status(m.Addr, c.reader, q)
		if hits(t, pdb) == before {
			t.Fatalf("%s was not served from the cache", q)
		}
		if got != want {
			t.Errorf("%s filled after %q, read after %q: status %#x, directly %#x", q, c.filler, c.reader, got, want)
		}
	}
	// A read run with SET STATEMENT long_query_time = 0 leaves the
	// session's own value for the hits after it.
	const q = "SELECT id FROM s WHERE id = 1 /* set statement */"
	status(p.addr, "", q)
	var got, want uint16
	for i, addr := range []string{p.addr, m.Addr} {
		c := dialRaw(t, addr, "root", rootPass, db, true)
		for _, s := range []string{q, "SET STATEMENT long_query_time = 0 FOR " + q, q} {
			_, last := c.exchange(t, append([]byte{mysqlc.COM_QUERY}, s...)...)
			if i == 0 {
				got = c.endStatus(last)
			} else {
				want = c.endStatus(last)
			}
		}
	}
	if got != want {
		t.Errorf("%s after a SET STATEMENT long_query_time = 0 FOR it: status %#x, directly %#x", q, got, want)
	}
}

// TestWarningsOfAnExecuteAfterDDL: an execute that goes to the server
// after DDL, right after a hit, leaves its own warnings, which SHOW
// WARNINGS then shows, not the hit's.
func TestWarningsOfAnExecuteAfterDDL(t *testing.T) {
	t.Parallel()
	m := testenvShared(t)
	db := m.NewDatabase(t)
	m.Exec(t, "CREATE TABLE "+db+".w (id INT PRIMARY KEY, s VARCHAR(10))")
	m.Exec(t, "INSERT INTO "+db+".w VALUES (1, '1x')")
	m.Exec(t, "CREATE TABLE "+db+".other (id INT PRIMARY KEY)")
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr})
	pdb := openDB(t, rootDSN(p.addr, db, ""))
	const hit = "SELECT id FROM w WHERE id = 1"
	run := func(sdb *sql.DB, ddl string) string {
		c := conn(t, sdb)
		st, err := c.PrepareContext(context.Background(), "SELECT CAST(s AS SIGNED) FROM w WHERE id = ?")
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if sdb == pdb {
			warmOn(t, pdb, c, hit)
		}
		execOn(t, conn(t, sdb), ddl)
		dumpOn(t, c, hit)
		rows, err := st.QueryContext(context.Background(), 1)
		if err != nil {
			t.Fatal(err)
		}
		rows.Close()
		return dumpOn(t, c, "SHOW WARNINGS")
	}
	want := run(openDB(t, m.RootDSN(db)), "ALTER TABLE "+db+".other ADD COLUMN a INT")
	if !strings.Contains(want, "1292") {
		t.Fatalf("directly, SHOW WARNINGS gave %s", want)
	}
	if got := run(pdb, "ALTER TABLE "+db+".other ADD COLUMN b INT"); got != want {
		t.Errorf("SHOW WARNINGS after the execute: got %s, want %s", got, want)
	}
}

// TestRoutineWritesInRefusedReads: reads the parser refuses (SELECT ...
// INTO @v, VALUES (...)) that call a stored function invalidate what the
// function may have written, as SELECT f() does, on a sidecar with no
// binlog follower: another session does not read the old rows.
func TestRoutineWritesInRefusedReads(t *testing.T) {
	t.Parallel()
	// A server of its own: its CREATE FUNCTION would make the followers
	// of tests sharing a server invalidate everything.
	m := privateDB(t)
	db := m.NewDatabase(t)
	m.Exec(t, "CREATE TABLE "+db+".t (id INT PRIMARY KEY, v INT)")
	m.Exec(t, "INSERT INTO "+db+".t VALUES (1, 0), (2, 0)")
	m.Exec(t, "CREATE FUNCTION "+db+".f() RETURNS INT DETERMINISTIC MODIFIES SQL DATA BEGIN UPDATE t SET v = v + 1 WHERE v >= 0; RETURN 1; END")
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr})
	reader := openDB(t, rootDSN(p.addr, db, ""))
	writer := openDB(t, rootDSN(p.addr, db, ""))
	direct := openDB(t, rootDSN(m.Addr, db, ""))
	reads := []string{"SELECT v FROM t WHERE id = 1", "SELECT SUM(v) FROM t"}
	for _, w := range []string{
		"SELECT f() INTO @v",
		"SELECT 1 INTO @v FROM dual WHERE f() = 1",
		"SELECT f() INTO @a FOR UPDATE",
		"VALUES (f())",
		"SELECT * FROM (VALUES (f())) d",
		"VALUES (2) UNION VALUES (f())",
	} {
		for _, q := range reads {
			waitFor(t, 10*time.Second, q+" cached", func() bool {
				before := hits(t, reader)
				dump(t, reader, q)
				return hits(t, reader) > before
			})
		}
		rows, err := writer.Query(w)
		if err != nil {
			t.Fatalf("%s: %v", w, err)
		}
		rows.Close()
		for _, q := range reads {
			if got, want := dump(t, reader, q), dump(t, direct, q); got != want {
				t.Errorf("after %s: %s gave %s, want %s (stale)", w, q, got, want)
			}
		}
	}
}

// TestRoutineWritesSeenAtOnce: a stored function called through a
// sidecar with no follower to apply what it wrote: what it may have
// written is invalidated all the same, at once where others see it at
// once. On a server that keeps no binlog no GTID tells whether it wrote,
// for a sidecar with no follower or one whose follower cannot run, as
// the startup warning says it serves then (the second also knows views:
// one that calls the function writes too). Inside a transaction, a write
// to a MyISAM table is seen by others at once, and is invalidated at
// once, with or without a binlog; the rest when the transaction ends.
func TestRoutineWritesSeenAtOnce(t *testing.T) {
	t.Parallel()
	for _, server := range []struct {
		name string
		args []string
	}{{"binlog", nil}, {"no binlog", []string{"--skip-log-bin"}}} {
		t.Run(server.name, func(t *testing.T) {
			t.Parallel()
			m := privateDB(t, server.args...)
			db := m.NewDatabase(t)
			m.Exec(t, "CREATE TABLE "+db+".t (id INT PRIMARY KEY, v INT)")
			m.Exec(t, "INSERT INTO "+db+".t VALUES (1, 0), (2, 0)")
			m.Exec(t, "CREATE TABLE "+db+".mt (id INT PRIMARY KEY, v INT) ENGINE=MyISAM")
			m.Exec(t, "INSERT INTO "+db+".mt VALUES (1, 0)")
			m.Exec(t, "CREATE FUNCTION "+db+".f() RETURNS INT DETERMINISTIC MODIFIES SQL DATA BEGIN UPDATE t SET v = v + 1 WHERE id = 1; RETURN 1; END")
			m.Exec(t, "CREATE FUNCTION "+db+".g() RETURNS INT DETERMINISTIC MODIFIES SQL DATA BEGIN UPDATE mt SET v = v + 1 WHERE id = 1; RETURN 1; END")
			m.Exec(t, "CREATE VIEW "+db+".vw AS SELECT id, "+db+".f() AS w FROM "+db+".t")
			direct := openDB(t, rootDSN(m.Addr, db, ""))
			sidecars := []struct {
				name   string
				cfg    mysqlproxy.Config
				writes []string
			}{{"no follower", mysqlproxy.Config{Backend: m.Addr}, []string{"DO f()", "SELECT f()", "SELECT f() FROM t WHERE id = 2",
				"BEGIN; DO f(); COMMIT", "BEGIN; DO g(); COMMIT"}}}
			if server.args != nil {
				sidecars = append(sidecars, sidecars[0])
				sidecars[1].name, sidecars[1].cfg = "follower off", withBinlog(sidecars[0].cfg)
				sidecars[1].writes = []string{"DO f()", "SELECT f()", "SELECT w FROM vw WHERE id = 2",
					"BEGIN; SELECT f(); COMMIT", "BEGIN; SELECT g(); COMMIT"}
			}
			for _, sc := range sidecars {
				t.Run(sc.name, func(t *testing.T) { checkRoutineWrites(t, direct, startUnwaited(t, sc.cfg), db, sc.writes) })
			}
		})
	}
}

// checkRoutineWrites runs each of writes (statements separated by "; ",
// on one connection) through p twice, each time after the reads it may
// change were served from p's cache, and checks those reads against
// direct's after each statement.
func checkRoutineWrites(t *testing.T, direct *sql.DB, p *proxy, db string, writes []string) {
	reader := openDB(t, rootDSN(p.addr, db, ""))
	writer := openDB(t, rootDSN(p.addr, db, ""))
	reads := []string{"SELECT v FROM t WHERE id = 1", "SELECT v FROM mt WHERE id = 1"}
	for _, w := range writes {
		for range 2 {
			for _, q := range reads {
				waitFor(t, 10*time.Second, q+" cached", func() bool {
					before := hits(t, reader)
					dump(t, reader, q)
					return hits(t, reader) > before
				})
			}
			conn, err := writer.Conn(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			for _, st := range strings.Split(w, "; ") {
				rows, err := conn.QueryContext(context.Background(), st)
				if err != nil {
					t.Fatalf("%s: %v", st, err)
				}
				rows.Close()
				for _, q := range reads {
					if got, want := dump(t, reader, q), dump(t, direct, q); got != want {
						t.Fatalf("after %s of %s: %s gave %s, want %s (stale)", st, w, q, got, want)
					}
				}
			}
			conn.Close()
		}
	}
}

// TestRowCountsAfterAHitAndUse: USE leaves FOUND_ROWS() as the read
// before it made it, and sets ROW_COUNT() to 0, whether that read was a
// hit or not and whichever database USE names; so do SET, DO and BEGIN
// for ROW_COUNT(). Each sequence runs on a new session directly and
// through mycached, and their answers are compared. A USE after a hit
// costs the server no read: a statement of as many rows as the hit's
// makes FOUND_ROWS() when a later one reads it. (The test's name, which
// its databases' names take, holds none of the words that make a text
// read as one that reads the diagnostics.)
func TestRowCountsAfterAHitAndUse(t *testing.T) {
	t.Parallel()
	m := testenvShared(t)
	db, other := m.NewDatabase(t), m.NewDatabase(t)
	m.Exec(t, "CREATE TABLE "+db+".t (id INT PRIMARY KEY)")
	m.Exec(t, "INSERT INTO "+db+".t VALUES (1), (2), (3), (4)")
	// An account of no privilege beyond the two databases, as an
	// application's.
	m.Exec(t, "CREATE USER 'diag_app'@'%' IDENTIFIED BY 'pw'")
	m.Exec(t, "GRANT ALL ON "+db+".* TO 'diag_app'@'%'")
	m.Exec(t, "GRANT ALL ON "+other+".* TO 'diag_app'@'%'")
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr})
	stmts := map[string]string{
		"R": "SELECT id FROM " + db + ".t WHERE id <= 3", "F": "SELECT FOUND_ROWS(), ROW_COUNT()", "X": "SELECT 1",
		"U": "USE " + db, "O": "USE " + other, "S": "SET @z = 1", "D": "DO 1", "B": "BEGIN", "C": "COMMIT",
		"W": "SHOW WARNINGS", "E": "SHOW COUNT(*) ERRORS", "N": "SHOW TABLES",
	}
	run := func(addr, seq string) string {
		c := conn(t, openDB(t, testenv.DSNFor(addr, "diag_app", "pw", db, "")))
		defer c.Close()
		var out []string
		for _, k := range strings.Split(seq, ",") {
			rows, err := c.QueryContext(context.Background(), stmts[k])
			got := outcome(rows, err)
			if k == "F" {
				out = append(out, got)
			}
		}
		return strings.Join(out, " ")
	}
	// R is a hit from here on: each sequence is about what a hit
	// leaves.
	root := openDB(t, rootDSN(p.addr, "", ""))
	before := hits(t, root)
	waitFor(t, 15*time.Second, "the read to be served from the cache", func() bool {
		run(p.addr, "R")
		return hits(t, root) > before
	})
	for _, seq := range []string{"R,R,U,F", "R,X,R,U,F", "R,R,R,O,F", "X,R,U,F", "R,F,R,U,F", "X,R,U,X,F",
		"X,R,S,F", "X,R,D,F", "X,R,B,F,C", "X,R,S,S,F", "X,R,O,U,F", "X,R,O,O,X,F", "X,R,O,D,F", "R,O,S,F,F", "R,O,W,F", "R,O,W,W,F", "R,W,F", "R,O,E,F", "R,O,N,F"} {
		before := hits(t, root)
		if got, want := run(p.addr, seq), run(m.Addr, seq); got != want {
			t.Errorf("%s: got %s, want %s", seq, got, want)
		}
		if hits(t, root) == before {
			t.Errorf("%s: no read was served from the cache", seq)
		}
	}
	// The USE after a hit costs no read on the server.
	c := conn(t, openDB(t, testenv.DSNFor(p.addr, "diag_app", "pw", db, "")))
	selects := func() int {
		var name string
		var n int
		if err := c.QueryRowContext(context.Background(), "SHOW SESSION STATUS LIKE 'Com_select'").Scan(&name, &n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	ran := func(seq ...string) int {
		was := selects()
		for _, k := range seq {
			if _, err := c.ExecContext(context.Background(), stmts[k]); err != nil {
				t.Fatal(err)
			}
		}
		return selects() - was
	}
	// (The hit first: a read after a USE may first read the grants in
	// force there.)
	first := ran("R")
	if after, alone := ran("R", "O"), ran("O"); after != alone {
		t.Errorf("USE ran %d SELECTs on the server after a hit, %d alone (and the hit alone %d)", after, alone, first)
	}
}

// TestBypassReasonOfUnknownIsolation: a read after a statement that may
// have set the next transaction's isolation level unseen (an EXECUTE of
// a text mycached does not see) bypasses the cache as isolation-unknown;
// one at READ UNCOMMITTED as read-uncommitted. A read the parser refuses
// (LIMIT ROWS EXAMINED is MariaDB's alone) runs no such code.
func TestBypassReasonOfUnknownIsolation(t *testing.T) {
	t.Parallel()
	m := testenvShared(t)
	db := m.NewDatabase(t)
	m.Exec(t, "CREATE TABLE "+db+".t (id INT PRIMARY KEY, v INT)")
	m.Exec(t, "INSERT INTO "+db+".t VALUES (1, 1), (2, 2)")
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr})
	c := openDB(t, rootDSN(p.addr, db, ""))
	c.SetMaxOpenConns(1)
	execOn(t, c, "SELECT 1 FROM t WHERE id = 1 LIMIT ROWS EXAMINED 10")
	readInt(t, c, "SELECT v FROM t WHERE id = 2")
	if r := shapeRow(t, c, "select `v` from `t` where `id`"); r.bypasses != 0 {
		t.Errorf("the read after a refused read: %+v, want no bypass", r)
	}
	execOn(t, c, "EXECUTE IMMEDIATE CONCAT('DO ', '1')")
	readInt(t, c, "SELECT v FROM t WHERE id = 2")
	if r := shapeRow(t, c, "select `v` from `t` where `id`"); r.bypasses != 1 || r.reason != "isolation-unknown" {
		t.Errorf("the read after an unread statement: %+v, want 1 bypass for isolation-unknown", r)
	}
	execOn(t, c, "SET SESSION TRANSACTION ISOLATION LEVEL READ UNCOMMITTED")
	readInt(t, c, "SELECT v FROM t WHERE id = 2")
	if r := shapeRow(t, c, "select `v` from `t` where `id`"); r.bypasses != 2 || r.reason != "read-uncommitted" {
		t.Errorf("the read at READ UNCOMMITTED: %+v, want a second bypass, for read-uncommitted", r)
	}
}

// TestLongDataAfterAHit: the server reads long data by the parameter
// types it holds for the statement: a value sent for a parameter last
// bound as an integer is dropped when the next execute binds a string.
// An execute answered from the cache never showed the server its types;
// before the client's long data mycached has the server hold them, as it
// would directly, in a transaction or with autocommit off too, and the
// execute after returns the rows it returns directly. An execute too
// large to run again then is not answered from the cache.
func TestLongDataAfterAHit(t *testing.T) {
	t.Parallel()
	m := testenvShared(t)
	db := m.NewDatabase(t)
	m.Exec(t, "CREATE TABLE "+db+".t (id BIGINT PRIMARY KEY, v INT)")
	m.Exec(t, "INSERT INTO "+db+".t VALUES (5, 50), (6, 60)")
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr})
	via := openDB(t, rootDSN(p.addr, db, ""))
	hdr := execHdr
	const q = "SELECT id, v FROM t WHERE id = ? OR id = ? ORDER BY id"
	// Both parameters bound as BIGINT: 5 and 6.
	ints := append(append([]byte(nil), hdr...), 0, 1, 0x08, 0, 0x08, 0, 5, 0, 0, 0, 0, 0, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0)
	// The first as a string, its value sent as long data; the second 5.
	strLong := append(append([]byte(nil), hdr...), 0, 1, 0xfe, 0, 0x08, 0, 5, 0, 0, 0, 0, 0, 0, 0)
	// The first as a string of 70,000 bytes that reads as 5, the second 6.
	five := strings.Repeat("0", 69999) + "5"
	strBig := append(append([]byte(nil), hdr...), 0, 1, 0xfe, 0, 0x08, 0, 0xfd)
	strBig = append(strBig, byte(len(five)), byte(len(five)>>8), byte(len(five)>>16))
	strBig = append(append(strBig, five...), 6, 0, 0, 0, 0, 0, 0, 0)
	// No types: the ones the server holds; the second parameter 5.
	untypedLong := append(append([]byte(nil), hdr...), 0, 0, 5, 0, 0, 0, 0, 0, 0, 0)
	for _, tc := range []struct {
		name                   string
		warm, first, hit, last []byte
		before, between        []string
		isHit                  bool
		// hitUnlike: the hit's status differs as the README says: with
		// autocommit off, a hit begins no transaction.
		hitUnlike bool
	}{
		{name: "autocommit", warm: ints, hit: ints, last: strLong, isHit: true},
		{name: "in-a-transaction", warm: ints, hit: ints, last: strLong, before: []string{"BEGIN"}, isHit: true},
		{name: "autocommit-off", warm: ints, hit: ints, last: strLong, before: []string{"SET autocommit = 0"}, isHit: true, hitUnlike: true},
		{name: "transaction-begun-after-the-hit", warm: ints, hit: ints, last: strLong, between: []string{"BEGIN"}, isHit: true},
		{name: "consistent-snapshot", warm: ints, hit: ints, last: strLong, before: []string{"START TRANSACTION WITH CONSISTENT SNAPSHOT"}, isHit: true},
		// The server ran ints; the hit would bind a string of 70,000
		// bytes, then long data for it, then an execute without types.
		{name: "large-execute", warm: strBig, first: ints, hit: strBig, last: untypedLong},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var hitsAt []int64
			run := func(addr string) string {
				warm := newStmtProbe(t, addr, db)
				id := warm.prep(q)
				for range 3 {
					warm.send(id, mysqlc.COM_STMT_EXECUTE, tc.warm...)
				}
				sp := newStmtProbe(t, addr, db)
				id = sp.prep(q)
				sp.query(tc.before...)
				if tc.first != nil {
					sp.send(id, mysqlc.COM_STMT_EXECUTE, tc.first...)
				}
				before := hits(t, via)
				sp.send(id, mysqlc.COM_STMT_EXECUTE, tc.hit...)
				if addr == p.addr {
					hitsAt = append(hitsAt, hits(t, via)-before)
				}
				if tc.hitUnlike {
					sp.out = sp.out[:len(sp.out)-1]
				}
				sp.query(tc.between...)
				sp.send(id, mysqlc.COM_STMT_SEND_LONG_DATA, 0, 0, '6')
				sp.send(id, mysqlc.COM_STMT_EXECUTE, tc.last...)
				sp.query("SELECT @@in_transaction", "ROLLBACK", "SET autocommit = 1")
				return warm.String() + "\n" + sp.String()
			}
			sameAsDirect(t, m.Addr, p.addr, run)
			if tc.isHit && (len(hitsAt) != 1 || hitsAt[0] != 1) {
				t.Errorf("the second session's execute was not a hit (%v): the test proves nothing", hitsAt)
			}
		})
	}
}

// TestNotesAfterAnUnchangedSchemaReport: MariaDB reports the session's
// schema, unchanged, in the OK of some statements that use none (CREATE
// USER after a read of mysql.user, a CALL of a procedure of another
// database). mycached re-reads the grants only when the schema moved:
// reading them here took the statement's notes from SHOW WARNINGS, which
// mysqltest and other clients read after any statement that had some.
// The mariadb CLI shows it; the Go driver's session did not. A procedure
// that drops the session's database moves it to none, which fixes no
// privilege: the grants are read later, and its notes stay too.
func TestNotesAfterAnUnchangedSchemaReport(t *testing.T) {
	t.Parallel()
	m := testenvShared(t)
	db := m.NewDatabase(t)
	user := "notes_" + db
	m.Exec(t, "CREATE USER "+user)
	t.Cleanup(func() { m.Exec(t, "DROP USER IF EXISTS "+user) })
	m.Exec(t, "CREATE TABLE "+db+".t (a INT)")
	m.Exec(t, "CREATE PROCEDURE "+db+".p() CREATE TABLE IF NOT EXISTS t (a INT)")
	// A procedure that drops the session's database, which leaves a note.
	gone := db + "_gone"
	m.Exec(t, "CREATE PROCEDURE "+db+".pdrop() DROP DATABASE "+gone)
	for _, passthrough := range []bool{false, true} {
		p := startProxy(t, mysqlproxy.Config{Backend: m.Addr, Passthrough: passthrough})
		warnings := func(addr string) string {
			host, port, _ := net.SplitHostPort(addr)
			out, err := exec.Command("mariadb", "-h", host, "-P", port, "-uroot", "-p"+rootPass, "--batch", "mysql", "-e",
				"SELECT user FROM mysql.user WHERE user = '"+user+"'; CREATE USER IF NOT EXISTS "+user+"; SHOW WARNINGS; "+
					"CALL "+db+".p(); SHOW WARNINGS; "+
					"CREATE DATABASE "+gone+"; USE "+gone+"; CALL "+db+".pdrop(); SHOW WARNINGS; SELECT DATABASE()").CombinedOutput()
			if err != nil {
				t.Fatalf("mariadb: %v: %s", err, out)
			}
			return string(out)
		}
		want := warnings(m.Addr)
		if !strings.Contains(want, "1973") || !strings.Contains(want, "1050") || !strings.Contains(want, "1049") {
			t.Fatalf("directly: %s", want)
		}
		if got := warnings(p.addr); got != want {
			t.Errorf("passthrough %v: got %q, want %q", passthrough, got, want)
		}
	}
}

// TestDiagnosticsAroundAHitsRerun: after a hit, the server has not run
// the hit; mycached makes what the hit would have left (FOUND_ROWS(),
// its empty warnings) before a statement that reads it. That making must
// not take what a later statement left: the warnings of a DO 1/0 or of a
// refused read after the hit, or the FOUND_ROWS() of a later read of no
// table. And a read the parser refuses (MariaDB's CAST(x AS INT)) runs
// no hidden code, so the session's variables are not read again, which
// took its warnings from the next CALL or EXECUTE.
func TestDiagnosticsAroundAHitsRerun(t *testing.T) {
	t.Parallel()
	m := testenvShared(t)
	db := m.NewDatabase(t)
	m.Exec(t, "CREATE TABLE "+db+".ro (id INT PRIMARY KEY, n INT)")
	m.Exec(t, "INSERT INTO "+db+".ro VALUES (1, 10), (2, 20)")
	hit := "SELECT * FROM ro WHERE id < 3"
	// Past the 1,000 rows a UNION of constants once stopped at.
	m.Exec(t, "CREATE TABLE "+db+".rob (id INT PRIMARY KEY)")
	m.Exec(t, "INSERT INTO "+db+".rob SELECT seq FROM "+db+".seq_1_to_4000")
	bigHit := "SELECT id FROM rob"
	// And a response of more than the 64 KiB a session keeps of a hit.
	padHit := "SELECT id, REPEAT('x', 30) AS pad FROM rob"
	cases := []string{
		bigHit + "; DO 1/0; SELECT FOUND_ROWS(); SHOW WARNINGS; SELECT @@warning_count",
		bigHit + "; DROP TABLE IF EXISTS nosuch_t; SELECT FOUND_ROWS(); SHOW WARNINGS",
		padHit + "; DO 1/0; SELECT FOUND_ROWS(); SHOW WARNINGS; SELECT @@warning_count",
		hit + "; DO 1/0; SELECT FOUND_ROWS(); SHOW WARNINGS; SELECT @@warning_count",
		hit + "; DO 1/0; SELECT FOUND_ROWS(), @@warning_count",
		hit + "; DROP TABLE IF EXISTS nosuch_t; SELECT FOUND_ROWS(); SHOW WARNINGS LIMIT 1",
		hit + "; SELECT * FROM nosuch_t; SELECT FOUND_ROWS(); GET DIAGNOSTICS @n = NUMBER; SELECT @n",
		hit + "; SELECT NOW() IS NOT NULL; GET DIAGNOSTICS @n = NUMBER; SELECT FOUND_ROWS()",
		hit + "; SELECT 1 UNION SELECT 2 UNION SELECT 3; SHOW WARNINGS; SELECT FOUND_ROWS()",
		"DO 1/0; " + hit + "; SELECT 1 UNION SELECT 2 UNION SELECT 3; SHOW WARNINGS; SELECT FOUND_ROWS()",
		"SELECT CAST('1x' AS INT); EXECUTE IMMEDIATE 'SHOW WARNINGS'",
		"SELECT CAST(n AS INT) FROM ro WHERE id < 3; DO 1; SELECT FOUND_ROWS()",
		hit + "; SHOW ERRORS LIMIT 1; EXECUTE IMMEDIATE 'SELECT FOUND_ROWS()'",
		"DO 1/0; SHOW WARNINGS LIMIT 1; EXECUTE IMMEDIATE 'SHOW WARNINGS'",
	}
	run := func(addr, script string) string {
		host, port, _ := net.SplitHostPort(addr)
		out, _ := exec.Command("mariadb", "-h", host, "-P", port, "-uroot", "-p"+rootPass, "--batch", "--force", db, "-e", script).CombinedOutput()
		return string(out)
	}
	for _, passthrough := range []bool{false, true} {
		p := startProxy(t, mysqlproxy.Config{Backend: m.Addr, Passthrough: passthrough})
		via := openDB(t, rootDSN(p.addr, db, ""))
		for _, script := range cases {
			h := hit
			for _, x := range []string{bigHit, padHit} {
				if strings.HasPrefix(script, x) {
					h = x
				}
			}
			// Warm again: an EXECUTE of a case before may have written
			// anything, as far as the sidecar knows.
			for start := time.Now(); !passthrough; {
				before := hits(t, via)
				run(p.addr, h) // the CLI's session: its charset is in the key
				if hits(t, via) > before {
					break
				}
				if time.Since(start) > 10*time.Second {
					t.Fatalf("%s is not served from the cache; the test proves nothing", h)
				}
				time.Sleep(20 * time.Millisecond)
			}
			want := run(m.Addr, script)
			before := int64(0)
			if !passthrough {
				before = hits(t, via)
			}
			if got := run(p.addr, script); got != want {
				// The rows the big hit prints are the same: the end differs.
				tail := func(s string) string { return s[max(0, len(s)-300):] }
				t.Errorf("passthrough %v: %s:\ngot  ...%q\nwant ...%q", passthrough, script, tail(got), tail(want))
			}
			if !passthrough && strings.HasPrefix(script, h) && hits(t, via) == before {
				t.Errorf("%s: the first statement was not a hit; the case proves nothing", script)
			}
		}
	}
}

// TestRoutineTurnsTheTrackersOff: a procedure that turns every session
// tracker off leaves no report of it, nor of what the session's later
// statements change: a SET sql_select_limit after it went unseen, and a
// read got the rows cached under the old limit. The trackers are read
// again after stored code, and mycached's turned back on. A client that
// does not track state reads its own trackers, as the server has them
// for it.
func TestRoutineTurnsTheTrackersOff(t *testing.T) {
	t.Parallel()
	m := testenvShared(t)
	db := m.NewDatabase(t)
	m.Exec(t, "CREATE TABLE "+db+".ts (id INT PRIMARY KEY, n INT)")
	m.Exec(t, "INSERT INTO "+db+".ts VALUES (1, 1), (2, 2), (3, 3)")
	m.Exec(t, "CREATE PROCEDURE "+db+".poff() BEGIN SET SESSION session_track_state_change = OFF; "+
		"SET SESSION session_track_system_variables = ''; END")
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr})
	q := "SELECT id FROM ts ORDER BY id"
	warm := openDB(t, rootDSN(p.addr, db, ""))
	for start := time.Now(); ; {
		before := hits(t, warm)
		dump(t, warm, q)
		if hits(t, warm) > before {
			break
		}
		if time.Since(start) > 10*time.Second {
			t.Fatalf("%s is not served from the cache; the test proves nothing", q)
		}
		time.Sleep(20 * time.Millisecond)
	}
	run := func(addr string) string {
		c := conn(t, openDB(t, rootDSN(addr, db, "")))
		var out []string
		// The Go driver does not ask to track state: it reads the
		// server's trackers as they are for it, not mycached's.
		for _, s := range []string{"SELECT @@session_track_system_variables, @@session_track_state_change",
			"CALL poff()", "SELECT n FROM ts WHERE id = 2", "SET sql_select_limit = 1", q,
			"SELECT @@session_track_state_change"} {
			out = append(out, query(c, "text", s))
		}
		return strings.Join(out, "\n")
	}
	sameAsDirect(t, m.Addr, p.addr, run)
}

// TestNotesOfACallAcrossAPing: a CALL whose procedure set a user variable
// (a change no tracker shows) has the session's state read back before
// the next statement, which would take the CALL's notes from SHOW
// WARNINGS: it waits past the commands that leave them (a ping, a SELECT
// of constants).
func TestNotesOfACallAcrossAPing(t *testing.T) {
	t.Parallel()
	m := testenvShared(t)
	db := m.NewDatabase(t)
	m.Exec(t, "CREATE PROCEDURE "+db+".pw() BEGIN SET @a = 1; DO 1/0; END")
	for _, passthrough := range []bool{false, true} {
		p := startProxy(t, mysqlproxy.Config{Backend: m.Addr, Passthrough: passthrough})
		run := func(addr string) string {
			c := conn(t, openDB(t, rootDSN(addr, db, "")))
			ctx := context.Background()
			if _, err := c.ExecContext(ctx, "CALL pw()"); err != nil {
				t.Fatal(err)
			}
			if err := c.PingContext(ctx); err != nil {
				t.Fatal(err)
			}
			// A pool's check, and a DO of constants, leave them too.
			out := query(c, "text", "SELECT 1")
			if _, err := c.ExecContext(ctx, "DO 1, 2 + 3"); err != nil {
				t.Fatal(err)
			}
			return out + query(c, "text", "SHOW WARNINGS")
		}
		if want := sameAsDirect(t, m.Addr, p.addr, run); !strings.Contains(want, "1365") {
			t.Fatalf("directly: %s", want)
		}
	}
}

// TestFoundRowsAcrossInitDB: COM_INIT_DB (a driver's select_db, the
// CLI's use) keeps FOUND_ROWS() as USE does; after a hit, the server has
// not run the hit, and mycached makes its count, small or large, without
// running it in the new database.
func TestFoundRowsAcrossInitDB(t *testing.T) {
	t.Parallel()
	m, db, other, p, via := foundRowsSetup(t, 20000)
	for _, q := range []string{"SELECT id FROM fr WHERE id <= 20", "SELECT id FROM fr WHERE id <= 12000", "SELECT id, REPEAT('x', 30) FROM fr WHERE id <= 3000"} {
		useOther := func(c *client.Conn) error { return c.UseDB(other) }
		if got, want := foundRowsAfterHit(t, m.Addr, p.addr, via, db, q, useOther); got != want {
			t.Errorf("%s, COM_INIT_DB, SELECT FOUND_ROWS(): %s through a hit, want %s", q, got, want)
		}
	}
}

// foundRowsSetup makes a database with table fr of ids 1 to rows,
// another database, and a sidecar in front of the shared server.
func foundRowsSetup(t *testing.T, rows int) (m *testenv.MariaDB, db, other string, p *proxy, via *sql.DB) {
	t.Helper()
	m = testenvShared(t)
	db, other = m.NewDatabase(t), m.NewDatabase(t)
	m.Exec(t, "CREATE TABLE "+db+".fr (id INT PRIMARY KEY)")
	m.Exec(t, fmt.Sprintf("INSERT INTO %s.fr SELECT seq FROM %s.seq_1_to_%d", db, db, rows))
	p = startProxy(t, mysqlproxy.Config{Backend: m.Addr})
	return m, db, other, p, openDB(t, rootDSN(p.addr, db, ""))
}

// foundRowsAfterHit runs q, then between, then SELECT FOUND_ROWS() on a
// new connection, directly (want) and through the proxy at addr until q
// is a hit there (got, or the test fails after 10 s).
func foundRowsAfterHit(t *testing.T, direct, addr string, via *sql.DB, db, q string, between func(c *client.Conn) error) (got, want string) {
	t.Helper()
	run := func(addr string) string {
		c, err := client.Connect(addr, "root", rootPass, db)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Execute(q); err != nil {
			t.Fatal(err)
		}
		if err := between(c); err != nil {
			t.Fatal(err)
		}
		r, err := c.Execute("SELECT FOUND_ROWS()")
		if err != nil {
			t.Fatal(err)
		}
		n, _ := r.GetInt(0, 0)
		return strconv.FormatInt(n, 10)
	}
	want = run(direct)
	for start := time.Now(); ; {
		before := hits(t, via)
		got = run(addr)
		if hits(t, via) > before {
			return got, want
		}
		if time.Since(start) > 10*time.Second {
			t.Fatalf("%s is not served from the cache; the test proves nothing", q)
		}
	}
}

// TestFoundRowsAfterOffsetHit: FOUND_ROWS() after a read with an OFFSET
// counts the rows skipped too, and after a UNION, INTERSECT or EXCEPT
// with a LIMIT the rows before the limit: neither is the count of the
// rows a hit sent. After a hit of such a read, the count is the server's.
func TestFoundRowsAfterOffsetHit(t *testing.T) {
	t.Parallel()
	m, db, other, p, via := foundRowsSetup(t, 12000)
	for _, q := range []string{
		"SELECT id FROM fr WHERE id < 200 LIMIT 90, 5",
		"SELECT id FROM fr WHERE id < 200 LIMIT 5 OFFSET 90",
		"SELECT id FROM fr WHERE id < 12000 LIMIT 10500, 5",
		"SELECT id FROM fr WHERE id < 30 UNION SELECT 5 LIMIT 2",
		"SELECT id FROM fr WHERE id < 30 INTERSECT SELECT id FROM fr WHERE id < 40 LIMIT 3",
		"SELECT id FROM fr WHERE id < 30 EXCEPT SELECT id FROM fr WHERE id < 20 LIMIT 3",
		"(SELECT id FROM fr LIMIT 5) UNION ALL (SELECT id FROM fr LIMIT 5) LIMIT 3",
	} {
		for _, between := range []string{"", "DO 1", "USE"} {
			step := func(c *client.Conn) error {
				switch between {
				case "USE":
					return c.UseDB(other)
				case "":
					return nil
				}
				_, err := c.Execute(between)
				return err
			}
			if got, want := foundRowsAfterHit(t, m.Addr, p.addr, via, db, q, step); got != want {
				t.Errorf("%s, %q, SELECT FOUND_ROWS(): %s through a hit, want %s", q, between, got, want)
			}
		}
	}
}

// TestWarningsAfterAHitAcrossUseAndPing: USE and COM_INIT_DB leave the
// warnings and errors as they were, and COM_PING sets ROW_COUNT() to 0.
// A hit, which the server did not run, cleared the warnings of the
// statement before it and set ROW_COUNT() to -1: after it, and either of
// those, a session reads what it reads directly.
func TestWarningsAfterAHitAcrossUseAndPing(t *testing.T) {
	t.Parallel()
	m := testenvShared(t)
	db, other := m.NewDatabase(t), m.NewDatabase(t)
	m.Exec(t, "CREATE TABLE "+db+".t (id INT PRIMARY KEY)")
	m.Exec(t, "CREATE TABLE "+db+".w (c CHAR(3), x TINYINT)")
	m.Exec(t, "INSERT INTO "+db+".t VALUES (1), (2), (3), (4)")
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr})
	type step func(c *client.Conn) (*mysqlc.Result, error)
	exec := func(q string) step { return func(c *client.Conn) (*mysqlc.Result, error) { return c.Execute(q) } }
	steps := map[string]step{
		"R": exec("SELECT id FROM " + db + ".t WHERE id <= 3"),
		"I": exec("INSERT INTO " + db + ".w VALUES ('abcdef', 1000)"), // two warnings
		"E": exec("SELECT * FROM " + db + ".nosuch"),
		"U": exec("USE " + other),
		"G": func(c *client.Conn) (*mysqlc.Result, error) { return nil, c.UseDB(db) },
		"P": func(c *client.Conn) (*mysqlc.Result, error) { return nil, c.Ping() },
		"D": exec("DO 1"),
		"W": exec("SHOW WARNINGS"),
		"F": exec("SELECT ROW_COUNT(), FOUND_ROWS(), @@warning_count, @@error_count"),
		"N": exec("GET DIAGNOSTICS CONDITION 1 @m = MESSAGE_TEXT"),
		"M": exec("SELECT @m"),
	}
	run := func(addr, seq string) string {
		c, err := client.Connect(addr, "root", rootPass, db)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Execute("SET sql_mode = ''"); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, k := range strings.Split(seq, ",") {
			r, err := steps[k](c)
			switch {
			case err != nil:
				out = append(out, k+": "+err.Error())
			case r != nil && r.Resultset != nil && k != "R":
				var rows []string
				for _, row := range r.Values {
					var vals []string
					for _, v := range row {
						vals = append(vals, v.String())
					}
					rows = append(rows, strings.Join(vals, "|"))
				}
				out = append(out, fmt.Sprintf("%s: %v", k, rows))
			case r != nil:
				out = append(out, fmt.Sprintf("%s: %d warnings", k, r.Warnings))
			}
		}
		return strings.Join(out, "; ")
	}
	root := openDB(t, rootDSN(p.addr, "", ""))
	before := hits(t, root)
	waitFor(t, 15*time.Second, "the read to be served from the cache", func() bool {
		run(p.addr, "R")
		return hits(t, root) > before
	})
	for _, seq := range []string{
		"R,I,R,U,W", "R,I,R,G,W", "R,I,R,U,F", "R,E,R,G,F", "R,E,R,U,W", "R,I,R,G,N,M", "R,I,R,U,U,W",
		"R,I,R,U,R,W", "R,I,R,G,D,F", "R,R,P,F", "R,I,R,P,F", "R,I,R,P,W", "R,R,P,D,F", "R,R,G,F", "R,R,U,F",
	} {
		before := hits(t, root)
		if got, want := run(p.addr, seq), run(m.Addr, seq); got != want {
			t.Errorf("%s:\ngot  %s\nwant %s", seq, got, want)
		}
		if hits(t, root) == before {
			t.Errorf("%s: no read was served from the cache", seq)
		}
	}
}
