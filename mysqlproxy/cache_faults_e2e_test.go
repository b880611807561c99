package mysqlproxy_test

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mycached/mycached/mysqlproxy"
)

// mycachedStatus returns the numeric rows of SHOW MYCACHED STATUS through
// db as a map.
// storesSettled waits until the proxy behind db has written every entry
// it stored to memcached (the writes run off the clients' path).
func storesSettled(t testing.TB, db interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}) {
	t.Helper()
	waitFor(t, 10*time.Second, "the stores to reach memcached", func() bool {
		return mycachedStatus(t, db)["Stores_queued"] == 0
	})
}

func mycachedStatus(t testing.TB, db interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}) map[string]int64 {
	t.Helper()
	rows, err := db.QueryContext(context.Background(), "SHOW MYCACHED STATUS")
	if err != nil {
		t.Fatalf("SHOW MYCACHED STATUS: %v", err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var name, val string
		if err := rows.Scan(&name, &val); err != nil {
			t.Fatalf("SHOW MYCACHED STATUS: %v", err)
		}
		if n, err := strconv.ParseInt(val, 10, 64); err == nil {
			out[name] = n
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("SHOW MYCACHED STATUS: %v", err)
	}
	return out
}

// readInt runs a one-value query and returns the value.
func readInt(t testing.TB, db interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, q string) int64 {
	t.Helper()
	var v int64
	if err := db.QueryRowContext(context.Background(), q).Scan(&v); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return v
}

// TestCacheFaultMemcachedKilledUnderLoad kills memcached while clients
// read and write through the proxy: no client sees an error, and every
// read sees the client's own latest write.
func TestCacheFaultMemcachedKilledUnderLoad(t *testing.T) {
	t.Parallel()
	m := testenvShared(t)
	mc := privateMemcached(t)
	db := m.NewDatabase(t)
	const workers = 8
	m.Exec(t, "CREATE TABLE "+db+".t (id INT PRIMARY KEY, v INT)")
	for w := 1; w <= workers; w++ {
		m.Exec(t, fmt.Sprintf("INSERT INTO %s.t VALUES (%d, 0)", db, w))
	}
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr, Memcached: []string{mc.Addr}})
	c := openDB(t, rootDSN(p.addr, db, ""))
	c.SetMaxOpenConns(workers)

	// The load runs for a fixed span with the kill in its middle; the
	// span only sets how much load there is, nothing is timed.
	stop := make(chan struct{})
	var reads, errs, stale atomic.Int64
	var wg sync.WaitGroup
	for w := 1; w <= workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			want := int64(0)
			read := fmt.Sprintf("SELECT v FROM t WHERE id = %d", w)
			for i := 1; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if i%5 == 0 {
					if _, err := c.Exec(fmt.Sprintf("UPDATE t SET v = %d WHERE id = %d", i, w)); err != nil {
						errs.Add(1)
						t.Errorf("worker %d: UPDATE: %v", w, err)
						return
					}
					want = int64(i)
				}
				var v int64
				if err := c.QueryRow(read).Scan(&v); err != nil {
					errs.Add(1)
					t.Errorf("worker %d: %s: %v", w, read, err)
					return
				}
				reads.Add(1)
				if v != want {
					stale.Add(1)
					t.Errorf("worker %d: %s: got %d, want %d", w, read, v, want)
				}
			}
		}()
	}
	time.Sleep(1500 * time.Millisecond)
	if err := mc.Kill(); err != nil {
		t.Fatalf("kill memcached: %v", err)
	}
	killedAt := reads.Load()
	time.Sleep(1500 * time.Millisecond)
	close(stop)
	wg.Wait()
	if errs.Load() != 0 || stale.Load() != 0 {
		t.Errorf("with memcached killed under load: got %d client errors and %d stale reads, want 0 and 0", errs.Load(), stale.Load())
	}
	if after := reads.Load() - killedAt; after == 0 {
		t.Errorf("no reads completed after memcached was killed")
	}
	if st := mycachedStatus(t, c); st["Memcached_errors"] == 0 {
		t.Errorf("Memcached_errors after the kill: got 0, want > 0")
	}
}

// TestCacheFaultMemcachedRestartsEmpty: an entry cached in A's L1 is not
// served after memcached restarts empty and another sidecar writes: the
// recreated generation is time-seeded, so it never equals the old one.
func TestCacheFaultMemcachedRestartsEmpty(t *testing.T) {
	t.Parallel()
	m := testenvShared(t)
	mc := privateMemcached(t)
	db := m.NewDatabase(t)
	m.Exec(t, "CREATE TABLE "+db+".t (id INT PRIMARY KEY, v VARCHAR(20))")
	m.Exec(t, "INSERT INTO "+db+".t VALUES (1, 'before')")
	cfg := mysqlproxy.Config{Backend: m.Addr, Memcached: []string{mc.Addr}}
	a := startProxy(t, cfg)
	b := startProxy(t, cfg)
	ca := openDB(t, rootDSN(a.addr, db, ""))
	cb := openDB(t, rootDSN(b.addr, db, ""))
	const read = "SELECT v FROM t WHERE id = 1"
	// A lookup that times out on a loaded machine fails open to the
	// server: the read is tried again until it is a hit.
	waitFor(t, 15*time.Second, read+" to be an L1 hit through A (setup)", func() bool {
		var v string
		if err := ca.QueryRow(read).Scan(&v); err != nil || v != "before" {
			t.Fatalf("read through A: got %q, %v; want %q", v, err, "before")
		}
		return mycachedStatus(t, ca)["Hits_l1"] > 0
	})
	if err := mc.Restart(); err != nil {
		t.Fatalf("restart memcached: %v", err)
	}
	// B's first statement after the restart may find its pooled
	// connections dead; the client must not notice.
	mustExec(t, cb, "UPDATE t SET v = 'after' WHERE id = 1")
	// Whether or not B's bump has landed yet, A must not serve its old
	// entry: the generations it finds now were created after the restart.
	for i := 0; i < 3; i++ {
		var v string
		if err := ca.QueryRow(read).Scan(&v); err != nil {
			t.Fatalf("read %d through A after the restart: %v", i, err)
		}
		if v != "after" {
			t.Errorf("read %d through A after memcached restarted and B wrote: got %q, want %q", i, v, "after")
		}
	}
}

// TestCacheFaultBumpPending: a write while memcached is down leaves its
// bump pending; until it lands the table is served from MySQL only, and
// fresh. Once memcached is back the bump lands and reads are cached again.
func TestCacheFaultBumpPending(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		l1   int64
	}{
		{"memcached-only", -1},
		{"l1+memcached", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := privateDB(t)
			mc := privateMemcached(t)
			db := m.NewDatabase(t)
			m.Exec(t, "CREATE TABLE "+db+".t (id INT PRIMARY KEY, v INT)")
			m.Exec(t, "INSERT INTO "+db+".t VALUES (1, 0)")
			p := startProxy(t, mysqlproxy.Config{Backend: m.Addr, Memcached: []string{mc.Addr}, CacheMemory: tc.l1})
			c := openDB(t, rootDSN(p.addr, db, ""))
			c.SetMaxOpenConns(1)
			const read = "SELECT v FROM t WHERE id = 1"
			readInt(t, c, read)
			storesSettled(t, c)
			before := m.GlobalStatus(t, "Com_select")
			if v := readInt(t, c, read); v != 0 {
				t.Fatalf("cached read: got %d, want 0", v)
			}
			if after := m.GlobalStatus(t, "Com_select"); after != before {
				t.Fatalf("second read: Com_select moved %d -> %d; want a hit (setup)", before, after)
			}

			if err := mc.Kill(); err != nil {
				t.Fatalf("kill memcached: %v", err)
			}
			mustExec(t, c, "UPDATE t SET v = 1 WHERE id = 1")
			if n := mycachedStatus(t, c)["Pending_bumps"]; n == 0 {
				t.Fatalf("after a write with memcached down: Pending_bumps = 0, want > 0")
			}
			for i := 0; i < 3; i++ {
				before := m.GlobalStatus(t, "Com_select")
				if v := readInt(t, c, read); v != 1 {
					t.Errorf("read %d with the bump pending: got %d, want 1", i, v)
				}
				if got := m.GlobalStatus(t, "Com_select") - before; got != 1 {
					t.Errorf("read %d with the bump pending: MariaDB executed %d SELECTs, want 1", i, got)
				}
			}

			if err := mc.Restart(); err != nil {
				t.Fatalf("restart memcached: %v", err)
			}
			waitFor(t, 15*time.Second, "Pending_bumps to reach 0", func() bool {
				return mycachedStatus(t, c)["Pending_bumps"] == 0
			})
			// The first reads after the restart fill the entry (a pooled
			// connection may be found dead first); then they are hits.
			waitFor(t, 10*time.Second, "a read served from the cache", func() bool {
				readInt(t, c, read)
				before := m.GlobalStatus(t, "Com_select")
				v := readInt(t, c, read)
				return v == 1 && m.GlobalStatus(t, "Com_select") == before
			})
			if v := readInt(t, c, read); v != 1 {
				t.Errorf("cached read after the bump landed: got %d, want 1", v)
			}
		})
	}
}

// TestWriteOKWaitsForASlowBump: sidecar A's link to memcached holds what
// A sends for 300 ms, past its 50 ms memcached timeout, while memcached
// itself answers. An UPDATE through A must not be acknowledged before its
// bump lands: sidecar B, which reads the generations in memcached, must
// not serve the old row to a read made right after the OK.
func TestWriteOKWaitsForASlowBump(t *testing.T) {
	t.Parallel()
	db := testenvShared(t)
	mc := privateMemcached(t)
	var delay atomic.Int64
	link := newRelay(t, mc.Addr, holdEach(func([]byte) time.Duration { return time.Duration(delay.Load()) }))
	a := startProxy(t, mysqlproxy.Config{Backend: db.Addr, Memcached: []string{link.addr()}, MemcachedTimeout: 50 * time.Millisecond})
	b := startProxy(t, mysqlproxy.Config{Backend: db.Addr, Memcached: []string{mc.Addr}, MemcachedTimeout: 5 * time.Second})
	name := db.NewDatabase(t)
	viaA := openDB(t, rootDSN(a.addr, name, ""))
	viaB := openDB(t, rootDSN(b.addr, name, ""))
	mustExec(t, viaA, "CREATE TABLE t (id INT PRIMARY KEY, v INT)")
	mustExec(t, viaA, "INSERT INTO t VALUES (1, 1)")
	q := "SELECT v FROM t WHERE id = 1"
	dump(t, viaB, q)
	storesSettled(t, viaB)
	before := hits(t, viaB)
	old := dump(t, viaB, q)
	if hits(t, viaB) == before {
		t.Fatalf("%s was not served from the cache; the test proves nothing", q)
	}
	delay.Store(int64(300 * time.Millisecond))
	mustExec(t, viaA, "UPDATE t SET v = 2 WHERE id = 1")
	if got := dump(t, viaB, q); got == old {
		t.Errorf("%s through B right after the UPDATE's OK through A: got the old row %s", q, got)
	}
	delay.Store(0)
	if n := metricValue(t, a, "mycached_bumps_late"); n < 1 {
		t.Errorf("mycached_bumps_late = %v, want at least 1", n)
	}
}
