package mysqlproxy_test

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mycached/mycached/mysqlproxy"
	"github.com/mycached/mycached/mysqlproxy/internal/testenv"
)

// statusValue returns one row of SHOW MYCACHED STATUS as text.
func statusValue(t testing.TB, db *sql.DB, name string) string {
	t.Helper()
	rows, err := db.Query("SHOW MYCACHED STATUS")
	if err != nil {
		t.Fatalf("SHOW MYCACHED STATUS: %v", err)
	}
	defer rows.Close()
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		if k == name {
			return v
		}
	}
	t.Fatalf("SHOW MYCACHED STATUS has no %s", name)
	return ""
}

// unlogged runs stmts on one connection with sql_log_bin off, so that no
// binlog follower ever sees them: only the sidecar that relays them can
// tell the others.
func unlogged(t *testing.T, db *sql.DB, stmts ...string) {
	t.Helper()
	ctx := context.Background()
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, s := range append([]string{"SET SESSION sql_log_bin = 0"}, stmts...) {
		if _, err := c.ExecContext(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// TestPeersStrictHits: with --peer-listen (and a shared secret, so that
// the links authenticate each other), strict hits are checked
// against the sidecar's own view, with no memcached round trip, and a
// write through one sidecar is seen through the other as soon as its
// client has the OK. The writes are kept out of the binlog, so only the
// writer's word can have reached the other sidecar; and a sidecar that
// takes no part makes the others check memcached again.
func TestPeersStrictHits(t *testing.T) {
	m := privateDB(t)
	f := startFleet(t, m, mysqlproxy.Config{PeerListen: "127.0.0.1:0", PeerSecret: []byte("fleet-secret-0123456789"), MaxStaleness: time.Hour})
	for _, db := range []*sql.DB{f.viaA, f.viaB} {
		waitFor(t, 10*time.Second, "the peers to link", func() bool { return statusValue(t, db, "Peer_trusted") == "ON" })
	}
	mustExec(t, f.direct, "CREATE TABLE t (id INT PRIMARY KEY, v INT)")
	mustExec(t, f.direct, "INSERT INTO t VALUES (1, 0), (2, 0)")
	f.sync(t)
	qs := []string{"SELECT v FROM t WHERE id = 1", "SELECT SUM(v) FROM t"}
	for _, q := range qs {
		f.warm(t, q)
	}
	for i, db := range []*sql.DB{f.viaA, f.viaB} {
		// A machine loaded enough to hold a lease's renewal back for
		// 400 ms sends hits to memcached meanwhile, rightly: one of
		// three rounds must have sent none.
		var sent []int64
		for range 3 {
			gets, h := mycachedStatus(t, db)["Memcached_gets"], hits(t, db)
			for range 20 {
				dump(t, db, qs[0])
			}
			if hits(t, db)-h < 20 {
				t.Fatalf("the reads were not hits: %d", hits(t, db)-h)
			}
			if sent = append(sent, mycachedStatus(t, db)["Memcached_gets"]-gets); sent[len(sent)-1] == 0 {
				break
			}
		}
		if sent[len(sent)-1] != 0 {
			t.Errorf("sidecar %c: rounds of 20 strict hits with linked peers sent %v gets to memcached, want 0", 'A'+i, sent)
		}
	}
	for i := 1; i <= 20; i++ {
		writer, reader := f.viaA, f.viaB
		if i%2 == 0 {
			writer, reader = reader, writer
		}
		unlogged(t, writer, fmt.Sprintf("UPDATE t SET v = %d WHERE id = 1", i))
		if got := readInt(t, reader, qs[0]); got != int64(i) {
			t.Fatalf("round %d: the other sidecar read %d right after the write's OK, want %d", i, got, i)
		}
		if got := readInt(t, reader, qs[1]); got != int64(i) {
			t.Fatalf("round %d: the other sidecar read a sum of %d right after the write's OK, want %d", i, got, i)
		}
		readInt(t, reader, qs[0]) // cached again, for the next round
	}

	// A sidecar that takes no part, sharing the memcached.
	cfg := withBinlog(mysqlproxy.Config{Backend: m.Addr, Memcached: []string{f.mc.Addr}, MemcachedTimeout: 5 * time.Second, MaxStaleness: time.Hour})
	c := startProxy(t, cfg)
	viaC := openDB(t, rootDSN(c.addr, f.name, "multiStatements=true"))
	for _, db := range []*sql.DB{f.viaA, f.viaB} {
		waitFor(t, 10*time.Second, "the peers to see the unlinked sidecar", func() bool { return statusValue(t, db, "Peer_trusted") == "OFF" })
	}
	readInt(t, f.viaB, qs[0])
	unlogged(t, viaC, "UPDATE t SET v = 100 WHERE id = 1")
	if got := readInt(t, f.viaB, qs[0]); got != 100 {
		t.Fatalf("after a write through a sidecar that takes no part: read %d, want 100", got)
	}
}

// freezer relays TCP to a target, and can stop forwarding without
// closing anything: a peer whose process hangs, or whose network drops
// every packet.
type freezer struct {
	ln     net.Listener
	target string
	frozen atomic.Bool
}

func startFreezer(t *testing.T, target string) *freezer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &freezer{ln: ln, target: target}
	testenv.AcceptAll(t, ln, func(c net.Conn) []net.Conn {
		b, err := net.Dial("tcp", target)
		if err != nil {
			c.Close()
			return nil
		}
		go f.pipe(b, c)
		go f.pipe(c, b)
		return []net.Conn{c, b}
	})
	return f
}

func (f *freezer) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		for f.frozen.Load() {
			time.Sleep(2 * time.Millisecond)
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			dst.Close()
			return
		}
	}
}

// TestPeersFrozenLink: when a sidecar stops acknowledging, a write
// through another waits until the silent one's lease has ended, so that
// a read through it right after the write's OK checks memcached and sees
// the write; once the link thaws, it is owed the write and trusted again.
func TestPeersFrozenLink(t *testing.T) {
	m := privateDB(t)
	mc := privateMemcached(t)
	base := withBinlog(mysqlproxy.Config{Backend: m.Addr, Memcached: []string{mc.Addr}, MemcachedTimeout: 5 * time.Second, MaxStaleness: time.Hour})
	cfgA := base
	cfgA.PeerListen = "127.0.0.1:0"
	a := startProxy(t, cfgA)
	// B listens on a port of its own, and the others reach it through
	// the freezer.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	bAddr := ln.Addr().String()
	ln.Close()
	fz := startFreezer(t, bAddr)
	cfgB := base
	cfgB.PeerListen, cfgB.PeerAdvertise = bAddr, fz.ln.Addr().String()
	b := startProxy(t, cfgB)
	name := m.NewDatabase(t)
	direct := openDB(t, rootDSN(m.Addr, name, ""))
	viaA := openDB(t, rootDSN(a.addr, name, ""))
	viaB := openDB(t, rootDSN(b.addr, name, ""))
	for _, db := range []*sql.DB{viaA, viaB} {
		waitFor(t, 10*time.Second, "the peers to link", func() bool { return statusValue(t, db, "Peer_trusted") == "ON" })
	}
	mustExec(t, direct, "CREATE TABLE t (id INT PRIMARY KEY, v INT)")
	mustExec(t, direct, "INSERT INTO t VALUES (1, 0)")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, p := range []*proxy{a, b} {
		if err := p.srv.WaitBinlog(ctx); err != nil {
			t.Fatal(err)
		}
	}
	q := "SELECT v FROM t WHERE id = 1"
	// Strict reads go to the server until B's follower has caught up,
	// which on a loaded machine takes a while after it started.
	waitFor(t, 15*time.Second, "the read to be a hit through B", func() bool {
		h := hits(t, viaB)
		return readInt(t, viaB, q) == 0 && hits(t, viaB) > h
	})

	fz.frozen.Store(true)
	start := time.Now()
	unlogged(t, viaA, "UPDATE t SET v = 1 WHERE id = 1")
	took := time.Since(start)
	if got := readInt(t, viaB, q); got != 1 {
		t.Fatalf("through the silent sidecar right after the write's OK (%v): read %d, want 1", took, got)
	}
	if statusValue(t, viaA, "Peer_notify_failures") == "0" {
		t.Error("no notify failure counted")
	}
	if took < 100*time.Millisecond || took > 3*time.Second {
		t.Errorf("the write took %v; it should wait for the acknowledgement, then the lease", took)
	}
	t.Logf("the write waited %v", took)
	if statusValue(t, viaB, "Peer_trusted") != "OFF" {
		t.Error("the silent sidecar still trusts its view")
	}

	fz.frozen.Store(false)
	waitFor(t, 10*time.Second, "B to be trusted again", func() bool { return statusValue(t, viaB, "Peer_trusted") == "ON" })
	if got := readInt(t, viaB, q); got != 1 {
		t.Fatalf("after the thaw: read %d, want 1", got)
	}
	unlogged(t, viaA, "UPDATE t SET v = 2 WHERE id = 1")
	if got := readInt(t, viaB, q); got != 2 {
		t.Fatalf("after the thaw, a new write: read %d, want 2", got)
	}
}

// TestPeersNoStaleUnderLoad: writers through each sidecar, kept out of
// the binlog, and readers through the other one. A read that began
// after a write's OK never returns a value older than that write's.
// Each table is written through one sidecar and read through the other.
func TestPeersNoStaleUnderLoad(t *testing.T) {
	m := privateDB(t)
	f := startFleet(t, m, mysqlproxy.Config{PeerListen: "127.0.0.1:0", MaxStaleness: time.Hour})
	for _, db := range []*sql.DB{f.viaA, f.viaB} {
		waitFor(t, 10*time.Second, "the peers to link", func() bool { return statusValue(t, db, "Peer_trusted") == "ON" })
	}
	for _, tb := range []string{"ta", "tb"} {
		mustExec(t, f.direct, "CREATE TABLE "+tb+" (id INT PRIMARY KEY, v INT)")
		mustExec(t, f.direct, "INSERT INTO "+tb+" VALUES (1, 0), (2, 0)")
	}
	f.sync(t)
	type pair struct {
		table          string
		writer, reader *sql.DB
		acked          atomic.Int64
	}
	pairs := []*pair{{table: "ta", writer: f.viaA, reader: f.viaB}, {table: "tb", writer: f.viaB, reader: f.viaA}}
	deadline := time.Now().Add(3 * time.Second)
	var wg sync.WaitGroup
	var reads atomic.Int64
	errs := make(chan string, 100)
	h0 := hits(t, f.viaA) + hits(t, f.viaB)
	for _, p := range pairs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			c, err := p.writer.Conn(ctx)
			if err != nil {
				errs <- err.Error()
				return
			}
			defer c.Close()
			if _, err := c.ExecContext(ctx, "SET SESSION sql_log_bin = 0"); err != nil {
				errs <- err.Error()
				return
			}
			for i := int64(1); time.Now().Before(deadline); i++ {
				if _, err := c.ExecContext(ctx, fmt.Sprintf("UPDATE %s SET v = %d WHERE id = 1", p.table, i)); err != nil {
					errs <- err.Error()
					return
				}
				p.acked.Store(i)
				time.Sleep(5 * time.Millisecond) // let the readers hit between writes
			}
		}()
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				q := "SELECT v FROM " + p.table + " WHERE id = 1"
				for time.Now().Before(deadline) {
					before := p.acked.Load()
					var v int64
					if err := p.reader.QueryRow(q).Scan(&v); err != nil {
						errs <- err.Error()
						return
					}
					reads.Add(1)
					if v < before {
						select {
						case errs <- fmt.Sprintf("%s: read %d after the write of %d was acknowledged", p.table, v, before):
						default:
						}
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	hitsSeen := hits(t, f.viaA) + hits(t, f.viaB) - h0
	t.Logf("%d reads, %d hits, %d and %d writes", reads.Load(), hitsSeen, pairs[0].acked.Load(), pairs[1].acked.Load())
	if hitsSeen == 0 {
		t.Error("no read was a hit; the test proves nothing")
	}
}
