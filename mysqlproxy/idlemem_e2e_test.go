package mysqlproxy_test

import (
	"context"
	"database/sql"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/mycached/mycached/mysqlproxy"
	"github.com/mycached/mycached/mysqlproxy/internal/wire"
)

// TestIdleSessionsHoldNoBuffers: sessions that wait for their clients
// give three of their four 64 KiB buffers back (the backend's reader
// stays), so a pool's idle connections cost less memory, after a pause
// or after a burst of commands; and each still answers at once when
// used, and is closed when the server ends it.
func TestIdleSessionsHoldNoBuffers(t *testing.T) {
	m := privateDB(t)
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr})
	db := openDB(t, rootDSN(p.addr, "", ""))
	const n = 200
	db.SetMaxIdleConns(n)
	db.SetMaxOpenConns(n)
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapInuse
	}
	before, buffersBefore := heap(), wire.BuffersHeld()
	ctx := context.Background()
	conns := make([]*sql.Conn, n)
	for i := range conns {
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// A client that pauses before a command (1 ms: peekAfter) has
		// its session's buffers given back while it waits for the next.
		// (A first command may reach the session before it has read
		// the grants after the login: it did not wait for it.)
		for range 2 {
			time.Sleep(2 * time.Millisecond)
			if err := c.PingContext(ctx); err != nil {
				t.Fatal(err)
			}
		}
		conns[i] = c
	}
	time.Sleep(300 * time.Millisecond) // the watchers wait on the backends
	// Holding their buffers, 200 sessions would hold 800, 50 MiB; the
	// backend's readers, which the watchers read into, 200. (The heap,
	// which the test's clients and the collector's pace share, is only
	// logged.)
	buffers := wire.BuffersHeld() - buffersBefore
	grew := int64(heap()) - int64(before)
	t.Logf("%d idle sessions: %d buffers held, heap grew by %d KiB", n, buffers, grew>>10)
	if buffers > n+n/10 {
		t.Errorf("%d idle sessions hold %d buffers, want about %d (the backends' readers)", n, buffers, n)
	}
	for i, c := range conns {
		var got int
		if err := c.QueryRowContext(ctx, "SELECT ?", i).Scan(&got); err != nil || got != i {
			t.Fatalf("session %d after its idle wait: %d, %v", i, got, err)
		}
	}
	// A pool's connection after a burst: its last command came right
	// after the one before, and its session waits for the next holding
	// its buffers, until it has waited a second (and the server's sweep,
	// once a second, comes by).
	var lastID int64
	if err := conns[n-1].QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&lastID); err != nil {
		t.Fatal(err)
	}
	for _, c := range conns {
		for range 4 {
			if err := c.PingContext(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	busy := wire.BuffersHeld() - buffersBefore
	waitFor(t, 10*time.Second, "the sessions idle after a burst to give their buffers back", func() bool {
		return wire.BuffersHeld()-buffersBefore <= n+n/10
	})
	t.Logf("after a burst: %d buffers held at once, %d after a sweep", busy, wire.BuffersHeld()-buffersBefore)
	// The server ends a session the sweep woke: its client's connection
	// is closed.
	m.Exec(t, "KILL "+strconv.FormatInt(lastID, 10))
	waitFor(t, 5*time.Second, "the killed session's client to see it end, after a sweep", func() bool {
		return conns[n-1].PingContext(ctx) != nil
	})
	_ = conns[n-1].Close()
	conns = conns[:n-1]
	for i, c := range conns {
		var got int
		if err := c.QueryRowContext(ctx, "SELECT ?", i).Scan(&got); err != nil || got != i {
			t.Fatalf("session %d after its wait after a burst: %d, %v", i, got, err)
		}
	}
	// The server ends an idle session: its client's connection is closed.
	var id int64
	if err := conns[0].QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	m.Exec(t, "KILL "+strconv.FormatInt(id, 10))
	waitFor(t, 5*time.Second, "the killed session's client to see it end", func() bool {
		return conns[0].PingContext(ctx) != nil
	})
	for _, c := range conns {
		_ = c.Close()
	}
}
