package mysqlproxy_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mycached/mycached/mysqlproxy"
	"github.com/mycached/mycached/mysqlproxy/internal/testenv"
)

// cuttable is a TCP relay to a backend that a test can cut and restore,
// to take a server away from one client while others still reach it.
type cuttable struct {
	ln     net.Listener
	target string
	// up copies what a client sends to the backend.
	up func(dst io.Writer, src io.Reader)

	mu    sync.Mutex // protects cut and conns
	cut   bool
	conns map[net.Conn]bool
}

func newCuttable(t testing.TB, target string) *cuttable {
	t.Helper()
	return newRelay(t, target, func(dst io.Writer, src io.Reader) { _, _ = io.Copy(dst, src) })
}

// newRelay is newCuttable with up copying what clients send.
func newRelay(t testing.TB, target string, up func(dst io.Writer, src io.Reader)) *cuttable {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &cuttable{ln: ln, target: target, up: up, conns: map[net.Conn]bool{}}
	t.Cleanup(func() { ln.Close(); c.setCut(true) })
	go c.serve()
	return c
}

// holdEach is a relay's upstream copy that holds each chunk it reads for
// as long as hold says before it passes it on.
func holdEach(hold func(chunk []byte) time.Duration) func(dst io.Writer, src io.Reader) {
	return func(dst io.Writer, src io.Reader) {
		buf := make([]byte, 64<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				time.Sleep(hold(buf[:n]))
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}
}

func (c *cuttable) addr() string { return c.ln.Addr().String() }

func (c *cuttable) serve() {
	for {
		in, err := c.ln.Accept()
		if err != nil {
			return
		}
		c.mu.Lock()
		if c.cut {
			c.mu.Unlock()
			in.Close()
			continue
		}
		out, err := net.Dial("tcp", c.target)
		if err != nil {
			c.mu.Unlock()
			in.Close()
			continue
		}
		c.conns[in], c.conns[out] = true, true
		c.mu.Unlock()
		go func() { c.up(out, in); out.Close() }()
		go func() { _, _ = io.Copy(in, out); in.Close() }()
	}
}

// setCut cuts (closing every connection) or restores the relay.
func (c *cuttable) setCut(cut bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cut = cut
	if cut {
		for conn := range c.conns {
			conn.Close()
		}
		clear(c.conns)
	}
}

// followerConns returns the connection ids of the binlog followers'
// dumps on m.
func followerConns(t testing.TB, m *testenv.MariaDB) []int64 {
	t.Helper()
	rows, err := m.AdminDB().Query("SELECT id FROM information_schema.processlist WHERE command LIKE 'Binlog Dump%' AND user = ?", testenv.BinlogUser)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// TestFollowerResumesAfterKill: the server kills the followers' dump
// connections; they connect again from where they were, and a write made
// meanwhile is seen.
func TestFollowerResumesAfterKill(t *testing.T) {
	m := privateDB(t)
	f := startFleet(t, m, mysqlproxy.Config{})
	q := f.warmRow(t)
	ids := followerConns(t, m)
	if len(ids) != 2 {
		t.Fatalf("found %d follower connections on the server, want 2", len(ids))
	}
	for _, id := range ids {
		m.Exec(t, "KILL ?", id)
	}
	mustExec(t, f.direct, "UPDATE t SET v = 2 WHERE id = 1")
	waitFor(t, 20*time.Second, "the followers to reconnect", func() bool { return len(followerConns(t, m)) == 2 })
	f.sync(t)
	f.fresh(t, q)
	for _, db := range []*sql.DB{f.viaA, f.viaB} {
		if n := mycachedStatus(t, db)["Binlog_reconnects"]; n < 1 {
			t.Errorf("Binlog_reconnects = %d after the kill, want at least 1", n)
		}
	}
}

// TestFollowerSequenceWentBack: gtid_seq_no set by hand makes a domain's
// sequence numbers go back (5, then 3), which a server without
// gtid_strict_mode logs. The followers apply both; when their dumps are
// killed, the server refuses to stream from the GTID position they hold
// (go-mysql asks for strict mode, and the position is a "hole"). They
// follow on from their place in the binlog instead: writes are seen
// again, and nothing was invalidated for a lost position.
func TestFollowerSequenceWentBack(t *testing.T) {
	m := privateDB(t)
	f := startFleet(t, m, mysqlproxy.Config{})
	q := f.warmRow(t)
	for _, seq := range []int{5, 3} {
		mustExec(t, f.direct, fmt.Sprintf("SET SESSION gtid_domain_id = 7, gtid_seq_no = %d; UPDATE t SET v = v + 1 WHERE id = 1; SET SESSION gtid_domain_id = 0", seq))
	}
	f.syncFresh(t, q)
	f.warm(t, q)
	lost := func(db *sql.DB) int64 { return mycachedStatus(t, db)["Binlog_lost_positions"] }
	lostA, lostB := lost(f.viaA), lost(f.viaB)
	for _, id := range followerConns(t, m) {
		m.Exec(t, "KILL ?", id)
	}
	mustExec(t, f.direct, "UPDATE t SET v = 10 WHERE id = 1")
	waitFor(t, 20*time.Second, "the followers to reconnect", func() bool { return len(followerConns(t, m)) == 2 })
	f.sync(t)
	f.fresh(t, q)
	if a, b := lost(f.viaA), lost(f.viaB); a != lostA || b != lostB {
		t.Errorf("Binlog_lost_positions went from %d, %d to %d, %d: the followers' place in the binlog was there", lostA, lostB, a, b)
	}
	// Once more, and a write in the domain whose numbers went back.
	f.warm(t, q)
	for _, id := range followerConns(t, m) {
		m.Exec(t, "KILL ?", id)
	}
	mustExec(t, f.direct, "SET SESSION gtid_domain_id = 7; UPDATE t SET v = 11 WHERE id = 1; SET SESSION gtid_domain_id = 0")
	waitFor(t, 20*time.Second, "the followers to reconnect", func() bool { return len(followerConns(t, m)) == 2 })
	f.syncFresh(t, q)
	for i, db := range []*sql.DB{f.viaA, f.viaB} {
		if st := dump(t, db, "SHOW MYCACHED STATUS LIKE 'Binlog_follower'"); !strings.Contains(st, "running") {
			t.Errorf("sidecar %c: %s", 'A'+i, st)
		}
	}
}

// TestFollowerSequenceWentBackWhileApplying: a poll of the server's
// position that comes while the follower applies the transaction whose
// number went back (5, then 3) finds the server behind what the follower
// applied. The server's binlog still holds the follower's place, and no
// RESET ran: nothing is invalidated for a lost position. The followers'
// bumps are slowed (memcached behind a relay that holds each incr for a
// second), so that the poll comes while they apply.
func TestFollowerSequenceWentBackWhileApplying(t *testing.T) {
	m := privateDB(t)
	slowIncr := holdEach(func(chunk []byte) time.Duration {
		if bytes.HasPrefix(chunk, []byte("incr ")) {
			return time.Second
		}
		return 0
	})
	f := startFleetVia(t, m, mysqlproxy.Config{}, func(addr string) string { return newRelay(t, addr, slowIncr).addr() })
	q := f.warmRow(t)
	lost := func(db *sql.DB) int64 { return mycachedStatus(t, db)["Binlog_lost_positions"] }
	lostA, lostB := lost(f.viaA), lost(f.viaB)
	for _, seq := range []int{5, 3} {
		mustExec(t, f.direct, fmt.Sprintf("SET SESSION gtid_domain_id = 7, gtid_seq_no = %d; UPDATE t SET v = v + 1 WHERE id = 1; SET SESSION gtid_domain_id = 0", seq))
	}
	f.syncFresh(t, q)
	if a, b := lost(f.viaA), lost(f.viaB); a != lostA || b != lostB {
		t.Errorf("Binlog_lost_positions went from %d, %d to %d, %d: the followers' place in the binlog was there", lostA, lostB, a, b)
	}
}

// TestFollowerServerRestart: MariaDB restarts onto a new binlog file; the
// followers carry on from their position and see writes made after. The
// restart emptied a MEMORY table, which the binlog says only once
// something opens it: its cached rows are gone before anything does.
func TestFollowerServerRestart(t *testing.T) {
	m := privateDB(t)
	f := startFleet(t, m, mysqlproxy.Config{})
	mustExec(t, f.direct, "CREATE TABLE t (id INT PRIMARY KEY, v INT)")
	mustExec(t, f.direct, "INSERT INTO t VALUES (1, 1)")
	mustExec(t, f.direct, "CREATE TABLE mem (id INT PRIMARY KEY, v INT) ENGINE=MEMORY")
	mustExec(t, f.direct, "INSERT INTO mem VALUES (1, 1), (2, 2)")
	f.sync(t)
	q := "SELECT v FROM t WHERE id = 1"
	f.warm(t, q)
	qm := "SELECT COUNT(*) FROM mem"
	f.warm(t, qm)
	if err := m.Restart(); err != nil {
		t.Fatal(err)
	}
	for _, db := range []*sql.DB{f.direct, f.viaA, f.viaB} {
		// Their connections died with the server.
		db.SetMaxIdleConns(0)
		db.SetMaxIdleConns(2)
	}
	mustExec(t, f.direct, "UPDATE t SET v = 2 WHERE id = 1")
	waitFor(t, 30*time.Second, "the followers to reconnect", func() bool { return len(followerConns(t, m)) == 2 })
	f.sync(t)
	for i, db := range []*sql.DB{f.viaA, f.viaB} {
		if n := readInt(t, db, qm); n != 0 {
			t.Errorf("%s through sidecar %c after the restart: %d rows, want the 0 the restart left", qm, 'A'+i, n)
		}
		// Counted, so that an operator sees why everything was invalidated.
		if n := mycachedStatus(t, db)["Binlog_unlogged_changes"]; n < 1 {
			t.Errorf("Binlog_unlogged_changes through sidecar %c after the restart: %d, want at least 1", 'A'+i, n)
		}
	}
	f.fresh(t, q)
}

// TestFollowerBackWithServer: while MariaDB is down, the followers wait
// longer and longer between attempts to connect again (up to seconds).
// The first session that reaches the server once it is back has them try
// at once: the writes clients make then are seen within milliseconds,
// not after the rest of a wait.
func TestFollowerBackWithServer(t *testing.T) {
	m := privateDB(t)
	f := startFleet(t, m, mysqlproxy.Config{})
	q := f.warmRow(t)
	if err := m.Stop(); err != nil {
		t.Fatal(err)
	}
	// Long enough for the waits between attempts to reach their bound
	// (5 s): without the sessions' nudge, the followers would come back
	// 0 to 5 s after the server.
	time.Sleep(7 * time.Second)
	if err := m.Restart(); err != nil {
		t.Fatal(err)
	}
	for _, db := range []*sql.DB{f.direct, f.viaA, f.viaB} {
		db.SetMaxIdleConns(0) // their connections died with the server
		db.SetMaxIdleConns(2)
		if got := readInt(t, db, "SELECT 1"); got != 1 {
			t.Fatalf("SELECT 1: %d", got)
		}
	}
	waitFor(t, 2500*time.Millisecond, "the followers to follow again once sessions reached the server", func() bool { return len(followerConns(t, m)) == 2 })
	mustExec(t, f.direct, "UPDATE t SET v = 2 WHERE id = 1")
	f.sync(t)
	f.fresh(t, q)
}

// TestFollowerPurgedPosition: a sidecar stops, writes go on directly, and
// the binlog holding its saved position is purged. When it starts again
// it cannot know what changed, and invalidates everything rather than
// serve what memcached still holds from before.
func TestFollowerPurgedPosition(t *testing.T) {
	m := privateDB(t)
	mc := privateMemcached(t)
	name := m.NewDatabase(t)
	m.Exec(t, "CREATE TABLE "+name+".t (id INT PRIMARY KEY, v INT)")
	m.Exec(t, "INSERT INTO "+name+".t VALUES (1, 1)")
	cfg := withBinlog(mysqlproxy.Config{Backend: m.Addr, Memcached: []string{mc.Addr}, StateDir: t.TempDir()})
	q := "SELECT v FROM t WHERE id = 1"
	direct := openDB(t, rootDSN(m.Addr, name, ""))
	for _, purge := range []bool{false, true} {
		p := startProxy(t, cfg)
		via := openDB(t, rootDSN(p.addr, name, ""))
		if err := p.srv.WaitBinlog(context.Background()); err != nil {
			t.Fatal(err)
		}
		dump(t, via, q)
		via.Close()
		if err := p.srv.Close(); err != nil {
			t.Fatal(err)
		}
		mustExec(t, direct, "UPDATE t SET v = v + 1 WHERE id = 1")
		if purge {
			m.Exec(t, "FLUSH BINARY LOGS")
			waitFor(t, 10*time.Second, "the stopped follower's dump to end", func() bool { return len(followerConns(t, m)) == 0 })
			// The server keeps a binlog until the engines have flushed what
			// it holds (its binlog checkpoint), so the purge is retried.
			waitFor(t, 30*time.Second, "the old binary logs to be purged", func() bool {
				var file, pos, doDB, ignoreDB string
				if err := m.AdminDB().QueryRow("SHOW MASTER STATUS").Scan(&file, &pos, &doDB, &ignoreDB); err != nil {
					t.Fatal(err)
				}
				m.Exec(t, "PURGE BINARY LOGS TO '"+file+"'")
				return binaryLogs(t, m) == 1
			})
		}
		p2 := startProxy(t, cfg)
		via2 := openDB(t, rootDSN(p2.addr, name, ""))
		if got, want := dump(t, via2, q), dump(t, direct, q); got != want {
			t.Errorf("purged=%v: after the restart the sidecar served %s, want %s (stale)", purge, got, want)
		}
		lost := mycachedStatus(t, via2)["Binlog_lost_positions"]
		if purge && lost < 1 {
			t.Errorf("purged: Binlog_lost_positions = %d, want at least 1", lost)
		}
		if !purge && lost != 0 {
			t.Errorf("not purged: Binlog_lost_positions = %d, want 0: the saved position should have been resumed", lost)
		}
		via2.Close()
		_ = p2.srv.Close()
	}
}

// TestFollowerMemcachedDown: memcached is down while a follower applies a
// direct write; the bump stays pending, and reads of what it names go to
// MariaDB until it lands.
func TestFollowerMemcachedDown(t *testing.T) {
	m := privateDB(t)
	f := startFleet(t, m, mysqlproxy.Config{})
	q := f.warmRow(t)
	if err := f.mc.Stop(); err != nil {
		t.Fatal(err)
	}
	mustExec(t, f.direct, "UPDATE t SET v = 2 WHERE id = 1")
	f.sync(t)
	f.fresh(t, q)
	if n := mycachedStatus(t, f.viaA)["Pending_bumps"]; n == 0 {
		t.Errorf("Pending_bumps = 0 with memcached down after a write, want some")
	}
	if err := f.mc.Restart(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the pending bumps to land", func() bool {
		return mycachedStatus(t, f.viaA)["Pending_bumps"] == 0 && mycachedStatus(t, f.viaB)["Pending_bumps"] == 0
	})
	f.fresh(t, q)
}

// TestFollowerCoversCutSidecar: sidecar A is cut off from memcached while
// a client writes through it. Its bump stays pending, but sidecar B, and
// memcached, learn of the write from B's own follower.
func TestFollowerCoversCutSidecar(t *testing.T) {
	m := privateDB(t)
	mc := privateMemcached(t)
	cut := newCuttable(t, mc.Addr)
	name := m.NewDatabase(t)
	m.Exec(t, "CREATE TABLE "+name+".t (id INT PRIMARY KEY, v INT)")
	m.Exec(t, "INSERT INTO "+name+".t VALUES (1, 1)")
	a := startProxy(t, withBinlog(mysqlproxy.Config{Backend: m.Addr, Memcached: []string{cut.addr()}}))
	b := startProxy(t, withBinlog(mysqlproxy.Config{Backend: m.Addr, Memcached: []string{mc.Addr}}))
	direct := openDB(t, rootDSN(m.Addr, name, ""))
	viaA := openDB(t, rootDSN(a.addr, name, ""))
	viaB := openDB(t, rootDSN(b.addr, name, ""))
	q := "SELECT v FROM t WHERE id = 1"
	for _, db := range []*sql.DB{viaA, viaB, viaB} {
		dump(t, db, q)
	}
	cut.setCut(true)
	mustExec(t, viaA, "UPDATE t SET v = 2 WHERE id = 1")
	if n := mycachedStatus(t, viaA)["Pending_bumps"]; n == 0 {
		t.Fatalf("Pending_bumps = 0 on the cut sidecar after its write, want some")
	}
	if err := b.srv.WaitBinlog(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := dump(t, direct, q)
	for _, db := range []*sql.DB{viaA, viaB} {
		if got := dump(t, db, q); got != want {
			t.Errorf("after a write through the cut sidecar: got %s, want %s (stale)", got, want)
		}
	}
}

// TestRestartWithPendingBumps: a sidecar whose write could not be bumped
// in memcached stops before the bump lands, and memcached comes back. On
// its next start it must not serve the entry memcached still holds: with
// a state directory the journal replays the bump, and without one the
// start invalidates everything. No follower runs here: this is the parse
// path's own guarantee.
func TestRestartWithPendingBumps(t *testing.T) {
	for _, withState := range []bool{true, false} {
		name := "no-state-dir"
		if withState {
			name = "state-dir"
		}
		t.Run(name, func(t *testing.T) {
			m := testenv.Shared(t).DB
			mc := privateMemcached(t)
			cut := newCuttable(t, mc.Addr)
			db := m.NewDatabase(t)
			m.Exec(t, "CREATE TABLE "+db+".t (id INT PRIMARY KEY, v INT)")
			m.Exec(t, "INSERT INTO "+db+".t VALUES (1, 1)")
			cfg := mysqlproxy.Config{Backend: m.Addr, Memcached: []string{cut.addr()}, CacheMemory: -1}
			if withState {
				cfg.StateDir = t.TempDir()
			}
			q := "SELECT v FROM t WHERE id = 1"
			p := startProxy(t, cfg)
			via := openDB(t, rootDSN(p.addr, db, ""))
			dump(t, via, q)
			cut.setCut(true)
			mustExec(t, via, "UPDATE t SET v = 2 WHERE id = 1")
			via.Close()
			_ = p.srv.Close()
			cut.setCut(false)
			p2 := startProxy(t, cfg)
			via2 := openDB(t, rootDSN(p2.addr, db, ""))
			direct := openDB(t, rootDSN(m.Addr, db, ""))
			if got, want := dump(t, via2, q), dump(t, direct, q); got != want {
				t.Errorf("after the restart: got %s, want %s (stale)", got, want)
			}
		})
	}
}

// binaryLogs counts the server's binary log files.
func binaryLogs(t testing.TB, m *testenv.MariaDB) int {
	t.Helper()
	rows, err := m.AdminDB().Query("SHOW BINARY LOGS")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		n++
	}
	return n
}

// TestFollowerGlobalOnlyVariables: SET GLOBAL ft_boolean_syntax changes
// what every session's boolean full-text search returns at once, and the
// binlog does not log it; the followers' polls see it and invalidate.
func TestFollowerGlobalOnlyVariables(t *testing.T) {
	m := privateDB(t)
	f := startFleet(t, m, mysqlproxy.Config{})
	mustExec(t, f.direct, "CREATE TABLE ft (id INT PRIMARY KEY, s TEXT, FULLTEXT (s)) ENGINE=MyISAM")
	mustExec(t, f.direct, "INSERT INTO ft VALUES (1, 'apple'), (2, 'apple banana'), (3, 'cherry'), (4, 'plum'), (5, 'pear')")
	f.sync(t)
	q := "SELECT COUNT(*) FROM ft WHERE MATCH (s) AGAINST ('+apple -banana' IN BOOLEAN MODE)"
	f.warm(t, q)
	// '+' and '-' swapped: now "apple" is excluded and "banana" required.
	mustExec(t, f.direct, `SET GLOBAL ft_boolean_syntax = '- +><()~*:""&|'`)
	t.Cleanup(func() { _, _ = f.direct.Exec("SET GLOBAL ft_boolean_syntax = DEFAULT") })
	want := readInt(t, f.direct, q)
	waitFor(t, 10*time.Second, "both sidecars to answer as the server does", func() bool {
		return readInt(t, f.viaA, q) == want && readInt(t, f.viaB, q) == want
	})
	// Set through a sidecar, it is seen before its OK, by both.
	for _, set := range []string{"SET GLOBAL ft_boolean_syntax = DEFAULT", `SET @@global.ft_boolean_syntax = '- +><()~*:""&|'`} {
		f.warm(t, q)
		mustExec(t, f.viaA, set)
		want := readInt(t, f.direct, q)
		if a, b := readInt(t, f.viaA, q), readInt(t, f.viaB, q); a != want || b != want {
			t.Errorf("right after %s through A: A read %d, B %d, MariaDB %d", set, a, b, want)
		}
	}
}

// TestFollowerSlowStreamStart: MariaDB finds a follower's GTID position by
// reading the binlog file that holds it from its start, and sends nothing
// meanwhile, not even a heartbeat: on a large binlog that takes longer
// than the read timeout that tells a dead stream. A relay here holds each
// binlog dump request back for longer than that timeout. The follower
// waits for the stream's first event, and follows, instead of giving up,
// connecting again, and giving up again for ever.
func TestFollowerSlowStreamStart(t *testing.T) {
	m := privateDB(t)
	const hold = 3 * time.Second // the read timeout is 3 heartbeats: 1.5 s
	relay := newRelay(t, m.Addr, func(dst io.Writer, src io.Reader) {
		// Packets: a 3-byte length, a sequence id, then the payload; a
		// command is a packet of sequence 0, COM_BINLOG_DUMP is 0x12.
		var hdr [4]byte
		for {
			if _, err := io.ReadFull(src, hdr[:]); err != nil {
				return
			}
			p := make([]byte, int(hdr[0])|int(hdr[1])<<8|int(hdr[2])<<16)
			if _, err := io.ReadFull(src, p); err != nil {
				return
			}
			if hdr[3] == 0 && len(p) > 0 && p[0] == 0x12 {
				time.Sleep(hold)
			}
			if _, err := dst.Write(append(hdr[:], p...)); err != nil {
				return
			}
		}
	})
	p := startProxy(t, withBinlog(mysqlproxy.Config{Backend: relay.addr(), MaxStaleness: time.Second}))
	name := m.NewDatabase(t)
	direct := openDB(t, rootDSN(m.Addr, name, ""))
	via := openDB(t, rootDSN(p.addr, name, ""))
	mustExec(t, direct, "CREATE TABLE t (id INT PRIMARY KEY, v INT)")
	mustExec(t, direct, "INSERT INTO t VALUES (1, 1)")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.srv.WaitBinlog(ctx); err != nil {
		t.Fatalf("the follower never caught up: %v\n%s", err, dump(t, via, "SHOW MYCACHED STATUS LIKE 'Binlog%'"))
	}
	const q = "SELECT v FROM t WHERE id = 1"
	warmOn(t, via, via, q)
	mustExec(t, direct, "UPDATE t SET v = 2 WHERE id = 1")
	waitFor(t, 5*time.Second, "the direct write to show", func() bool { return readInt(t, via, q) == 2 })
	if n := mycachedStatus(t, via)["Binlog_reconnects"]; n != 0 {
		t.Errorf("the follower connected %d more times: it gave up on a stream that was starting", n)
	}
}

// TestLostPositionForgetsTables: while a sidecar's follower is cut off,
// a table's primary key moves to another column and RESET MASTER empties
// the binlog, so the follower never sees the ALTER. What the sidecar had
// learned of the table no longer holds: once it knows the position is
// lost, it learns the table again, and a read keyed by the old key is not
// served after a write to its row.
func TestLostPositionForgetsTables(t *testing.T) {
	m := privateDB(t)
	name := m.NewDatabase(t)
	mc := privateMemcached(t)
	cut := newCuttable(t, m.Addr)
	p := startProxy(t, withBinlog(mysqlproxy.Config{Backend: cut.addr(), Memcached: []string{mc.Addr}}))
	direct := openDB(t, rootDSN(m.Addr, name, ""))
	via := openDB(t, rootDSN(p.addr, name, ""))
	mustExec(t, direct, "CREATE TABLE t (id INT PRIMARY KEY, a INT NOT NULL, v INT)")
	mustExec(t, direct, "INSERT INTO t VALUES (1, 10, 1), (2, 20, 2)")
	mustExec(t, direct, "CREATE TABLE other (id INT PRIMARY KEY)")
	if err := p.srv.WaitBinlog(context.Background()); err != nil {
		t.Fatal(err)
	}
	q := "SELECT v FROM t WHERE id = 1"
	dump(t, via, q) // the sidecar learns that id is t's key

	cut.setCut(true)
	waitFor(t, 10*time.Second, "the follower's dump to end", func() bool { return len(followerConns(t, m)) == 0 })
	// a is the key now, and the first column, where id was.
	mustExec(t, direct, "ALTER TABLE t DROP PRIMARY KEY, MODIFY a INT NOT NULL FIRST, ADD PRIMARY KEY (a)")
	m.Exec(t, "RESET MASTER")
	cut.setCut(false)
	via.SetMaxIdleConns(0) // its connections died with the cut
	via.SetMaxIdleConns(2)
	waitFor(t, 30*time.Second, "the follower to find its position lost", func() bool {
		return mycachedStatus(t, via)["Binlog_lost_positions"] >= 2
	})
	// Once the follower has applied a write, it follows the new binlog:
	// what it invalidates on reading its start is behind it.
	mustExec(t, direct, "INSERT INTO other VALUES (1)")
	if err := p.srv.WaitBinlog(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The position lost invalidates everything once more when it has
	// settled, and again when the poll reads the server's count of RESET
	// statements: the read is cached once those are behind it.
	waitFor(t, 10*time.Second, q+" served from the cache before the write", func() bool {
		dump(t, via, q)
		h := hits(t, via)
		return dump(t, via, q) != "" && hits(t, via) == h+1
	})
	mustExec(t, direct, "UPDATE t SET v = 5 WHERE a = 10")
	if err := p.srv.WaitBinlog(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, want := dump(t, via, q), dump(t, direct, q); got != want {
		t.Errorf("%s after the follower lost a key change: served %s, want %s (stale)", q, got, want)
	}
}

// TestSemiSyncTurnedOnWhileFollowing: with semi-sync waiting after the
// sync, a commit is in the binlog before it is visible, for up to the
// semi-sync timeout when no replica acknowledges. Turned on while the
// sidecar runs, the follower learns it at its next poll, and bumps each
// transaction again once it is surely visible: a read that refilled the
// old row while the commit waited does not stay cached.
func TestSemiSyncTurnedOnWhileFollowing(t *testing.T) {
	m := privateDB(t)
	name := m.NewDatabase(t)
	direct := openDB(t, rootDSN(m.Addr, name, ""))
	mustExec(t, direct, "CREATE TABLE t (id INT PRIMARY KEY, v INT)")
	mustExec(t, direct, "INSERT INTO t VALUES (1, 1)")
	p := startProxy(t, withBinlog(mysqlproxy.Config{Backend: m.Addr}))
	via := openDB(t, rootDSN(p.addr, name, ""))
	if err := p.srv.WaitBinlog(context.Background()); err != nil {
		t.Fatal(err)
	}
	mustExec(t, direct, "SET GLOBAL rpl_semi_sync_master_timeout = 1500, rpl_semi_sync_master_wait_point = AFTER_SYNC, rpl_semi_sync_master_enabled = ON")
	t.Cleanup(func() { m.Exec(t, "SET GLOBAL rpl_semi_sync_master_enabled = OFF") })
	// A few polls for the follower to read the settings.
	time.Sleep(500 * time.Millisecond)
	const q = "SELECT v FROM t WHERE id = 1"
	warmOn(t, via, via, q)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		// Reads that refill the entry while the commit waits.
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			_, _ = queryDump(context.Background(), via, q)
		}
	}()
	mustExec(t, direct, "UPDATE t SET v = 2 WHERE id = 1") // waits for the semi-sync timeout
	time.Sleep(3 * time.Second)
	close(stop)
	wg.Wait()
	if got, want := dump(t, via, q), dump(t, direct, q); got != want {
		t.Errorf("3 s after a commit that waited for semi-sync: %s, want %s (stale)", got, want)
	}
}

// TestServerRestartedWithBinlogFilter: a server restarted with a binlog
// filter while the sidecar follows it logs no change of the databases the
// filter leaves out. The follower reads the server's settings again when
// it sees the restart: their reads stop being cached, and a direct write
// to one is not hidden behind an entry cached before.
func TestServerRestartedWithBinlogFilter(t *testing.T) {
	m := privateDB(t)
	const db = "filtered_out"
	m.Exec(t, "CREATE DATABASE "+db)
	m.Exec(t, "CREATE TABLE "+db+".t (id INT PRIMARY KEY, v INT)")
	m.Exec(t, "INSERT INTO "+db+".t VALUES (1, 1)")
	p := startProxy(t, withBinlog(mysqlproxy.Config{Backend: m.Addr}))
	via := openDB(t, rootDSN(p.addr, db, ""))
	direct := openDB(t, rootDSN(m.Addr, db, ""))
	if err := p.srv.WaitBinlog(context.Background()); err != nil {
		t.Fatal(err)
	}
	const q = "SELECT v FROM t WHERE id = 1"
	warmOn(t, via, via, q)
	if err := m.RestartWith("--binlog-ignore-db=" + db); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the follower to see the restart", func() bool {
		ms, ok := mycachedStatus(t, via)["Binlog_staleness_ms"]
		return ok && ms < 1000 && mycachedStatus(t, via)["Binlog_reconnects"] > 0
	})
	for i := range 3 {
		mustExec(t, direct, fmt.Sprintf("UPDATE t SET v = %d WHERE id = 1", 10+i))
		// Unlogged: no follower can tell; only not caching is right.
		time.Sleep(300 * time.Millisecond)
		if got, want := dump(t, via, q), dump(t, direct, q); got != want {
			t.Errorf("write %d to a database the restarted server's binlog leaves out: %s, want %s", i, got, want)
		}
	}
}

// TestServerRestartedWithoutBinlog: the server runs a while without its
// binary log, then with it again. Meanwhile the follower says once that
// the log is off, and not that it follows each time the server accepts
// its dump and fails it; a write made then is read fresh. Once the log is
// back, the follower says why it follows from the server's position (not
// a purge), follows again at once, and sees the writes made after.
func TestServerRestartedWithoutBinlog(t *testing.T) {
	m := privateDB(t)
	m.Exec(t, "CREATE DATABASE unlogged")
	m.Exec(t, "CREATE TABLE unlogged.t (id INT PRIMARY KEY, v INT)")
	m.Exec(t, "INSERT INTO unlogged.t VALUES (1, 1)")
	p := startProxy(t, withBinlog(mysqlproxy.Config{Backend: m.Addr}))
	via := openDB(t, rootDSN(p.addr, "unlogged", ""))
	direct := openDB(t, rootDSN(m.Addr, "unlogged", ""))
	const q = "SELECT v FROM t WHERE id = 1"
	warmOn(t, via, via, q)
	following := func() int { return strings.Count(p.logs.String(), `msg="binlog: following"`) }
	if err := m.RestartWith("--skip-log-bin"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the follower to find the binary log off", func() bool {
		return strings.Contains(p.logs.String(), "binary log is off")
	})
	said := following()
	mustExec(t, direct, "UPDATE t SET v = 2 WHERE id = 1")
	if got, want := dump(t, via, q), dump(t, direct, q); got != want {
		t.Errorf("a write made while the binary log is off: %s, want %s", got, want)
	}
	// Its tries: 0.1 s apart at first, doubling.
	time.Sleep(3 * time.Second)
	if n := following() - said; n != 0 {
		t.Errorf("the follower said %d times that it follows while the binary log is off, want 0", n)
	}
	if err := m.RestartWith("--log-bin=mariadb-bin"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "the follower to follow again", func() bool { return following() > said })
	// The server's position, while its binary log is off, is empty: no
	// RESET, nor a lost position, and the follower's holds.
	for _, wrong := range []string{"went back", "purged past it", `from=""`} {
		if logs := p.logs.String(); strings.Contains(logs, wrong) {
			t.Errorf("the log says %q of a server that ran without its binary log", wrong)
		}
	}
	mustExec(t, direct, "UPDATE t SET v = 3 WHERE id = 1")
	waitFor(t, 10*time.Second, "the write after the binary log came back", func() bool {
		return dump(t, via, q) == dump(t, direct, q)
	})
}

// TestStalenessMetricWithoutFollower: /metrics says the local view's
// staleness is unbounded while no follower has been current, so an alert
// on it fires for a follower that never started (a wrong password, a
// missing grant), and is finite once one has caught up.
func TestStalenessMetricWithoutFollower(t *testing.T) {
	t.Parallel()
	m := privateDB(t)
	staleness := func(p *proxy) string {
		for _, l := range strings.Split(metricsText(t, p), "\n") {
			if v, ok := strings.CutPrefix(l, "mycached_binlog_staleness_seconds "); ok {
				return v
			}
		}
		t.Fatal("/metrics has no mycached_binlog_staleness_seconds")
		return ""
	}
	// A follower whose password is wrong never starts (startProxy would
	// wait for it).
	cfg := withBinlog(mysqlproxy.Config{Backend: m.Addr})
	cfg.BinlogPassword = "wrong"
	wrong := startUnwaited(t, cfg)
	srv := wrong.srv
	waitFor(t, 10*time.Second, "the follower to fail", func() bool { return srv.WaitBinlog(context.Background()) != nil })
	for _, p := range []*proxy{startProxy(t, mysqlproxy.Config{Backend: m.Addr}), wrong} {
		if got := staleness(p); got != "+Inf" {
			t.Errorf("with no follower running: mycached_binlog_staleness_seconds %s, want +Inf", got)
		}
	}
	p := startProxy(t, withBinlog(mysqlproxy.Config{Backend: m.Addr}))
	if err := p.srv.WaitBinlog(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "a finite staleness once the follower caught up", func() bool { return staleness(p) != "+Inf" })
}

// TestFollowerStartsOnceGranted: a follower whose account lacks
// REPLICATION SLAVE when the sidecar starts is refused, says so, and
// starts once the grant is given. What was cached before it ran, parse
// based, is not trusted: a direct write made then is seen.
func TestFollowerStartsOnceGranted(t *testing.T) {
	t.Parallel()
	m := privateDB(t)
	account := "'" + testenv.BinlogUser + "'@'" + m.Host + "'"
	m.Exec(t, "REVOKE REPLICATION SLAVE ON *.* FROM "+account)
	cfg := withBinlog(mysqlproxy.Config{Backend: m.Addr})
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	p := startUnwaited(t, cfg)
	srv := p.srv
	var refused error
	waitFor(t, 20*time.Second, "the follower to be refused", func() bool {
		refused = srv.WaitBinlog(context.Background())
		return refused != nil && strings.Contains(refused.Error(), "REPLICATION SLAVE")
	})
	name := m.NewDatabase(t)
	direct := openDB(t, rootDSN(m.Addr, name, ""))
	via := openDB(t, rootDSN(p.addr, name, ""))
	mustExec(t, direct, "CREATE TABLE t (id INT PRIMARY KEY, v INT)")
	mustExec(t, direct, "INSERT INTO t VALUES (1, 1)")
	q := "SELECT v FROM t WHERE id = 1"
	want := dump(t, direct, q)
	dump(t, via, q)
	before := hits(t, via)
	if got := dump(t, via, q); got != want {
		t.Fatalf("%s: got %s, want %s", q, got, want)
	}
	if hits(t, via) == before {
		t.Fatalf("%s was not served from the cache; the test proves nothing", q)
	}
	mustExec(t, direct, "UPDATE t SET v = 2 WHERE id = 1")
	m.Exec(t, "GRANT REPLICATION SLAVE ON *.* TO "+account)
	waitFor(t, 20*time.Second, "the follower to start once granted", func() bool { return srv.WaitBinlog(context.Background()) == nil })
	if got, want := dump(t, via, q), dump(t, direct, q); got != want {
		t.Errorf("%s after the follower started: got %s, want %s (stale)", q, got, want)
	}
	if st := dump(t, via, "SHOW MYCACHED STATUS"); !strings.Contains(st, "running") || strings.Contains(st, "REPLICATION SLAVE") {
		t.Errorf("SHOW MYCACHED STATUS once granted:\n%s\nwant the follower running", st)
	}
}

// TestTriggersWithoutFollower: with the follower kept from running (here
// its account lacks REPLICATION SLAVE; a binlog_format other than ROW
// does the same), nothing shows what a trigger wrote. A write through
// the sidecar to a table that mycached knows has triggers (its account
// has TRIGGER) invalidates everything, so that the trigger's write is
// fresh at once, in a transaction too; a write to a table with none
// invalidates no more than before.
func TestTriggersWithoutFollower(t *testing.T) {
	t.Parallel()
	m := privateDB(t)
	account := "'" + testenv.BinlogUser + "'@'" + m.Host + "'"
	m.Exec(t, "REVOKE REPLICATION SLAVE ON *.* FROM "+account)
	m.Exec(t, "GRANT TRIGGER ON *.* TO "+account)
	cfg := withBinlog(mysqlproxy.Config{Backend: m.Addr})
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	p := startUnwaited(t, cfg)
	waitFor(t, 20*time.Second, "the follower to be refused", func() bool {
		err := p.srv.WaitBinlog(context.Background())
		return err != nil && strings.Contains(err.Error(), "REPLICATION SLAVE")
	})
	name := m.NewDatabase(t)
	direct := openDB(t, rootDSN(m.Addr, name, ""))
	via := openDB(t, rootDSN(p.addr, name, ""))
	for _, s := range []string{
		"CREATE TABLE t (id INT PRIMARY KEY, v INT)", "INSERT INTO t VALUES (1, 1)",
		"CREATE TABLE lg (id INT PRIMARY KEY, c INT)", "INSERT INTO lg VALUES (1, 0)",
		"CREATE TRIGGER t_upd AFTER UPDATE ON t FOR EACH ROW UPDATE lg SET c = c + 1 WHERE id = 1",
		"CREATE VIEW tv AS SELECT id, v FROM t",
		"CREATE TABLE plain (id INT PRIMARY KEY, v INT)", "INSERT INTO plain VALUES (1, 1)",
	} {
		mustExec(t, direct, s)
	}
	const logRead = "SELECT c FROM lg WHERE id = 1"
	warm := func(q string) {
		t.Helper()
		dump(t, via, q)
		before := hits(t, via)
		if got, want := dump(t, via, q), dump(t, direct, q); got != want {
			t.Fatalf("%s: got %s, want %s", q, got, want)
		}
		if hits(t, via) == before {
			t.Fatalf("%s was not served from the cache; the test proves nothing", q)
		}
	}
	for _, w := range []string{
		"UPDATE t SET v = v + 1 WHERE id = 1",
		"UPDATE tv SET v = v + 1 WHERE id = 1",
		"BEGIN; UPDATE t SET v = v + 1 WHERE id = 1; COMMIT",
	} {
		warm(logRead)
		for _, s := range strings.Split(w, "; ") {
			mustExec(t, via, s)
		}
		if got, want := dump(t, via, logRead), dump(t, direct, logRead); got != want {
			t.Errorf("after %s through the sidecar: %s got %s, want %s (stale)", w, logRead, got, want)
		}
	}
	// No trigger: the log's entry stays.
	warm(logRead)
	mustExec(t, via, "UPDATE plain SET v = v + 1 WHERE id = 1")
	before := hits(t, via)
	dump(t, via, logRead)
	if hits(t, via) == before {
		t.Errorf("a write to a table with no trigger invalidated %s", logRead)
	}
}

// TestStrictHitsWaitForTheFollower: a strict hit checks the generations
// in memcached, which are only as current as the followers bumping them.
// Followers that cannot reconnect (their account's password rotated)
// leave every sidecar behind the server: a write made directly must not
// be served old, as it is not in bounded mode, from the moment their
// streams were cut (a restart's unlogged changes, as a MEMORY table
// emptied, come in that moment).
func TestStrictHitsWaitForTheFollower(t *testing.T) {
	m := privateDB(t)
	f := startFleet(t, m, mysqlproxy.Config{})
	q := f.warmRow(t)
	account := "'" + testenv.BinlogUser + "'@'" + m.Host + "'"
	// Unlogged: a logged change of grants invalidates everything, and
	// waiting for the followers to apply it needs the account's old
	// password for a connection of their own, which the pool may not
	// still hold.
	m.Exec(t, "SET STATEMENT sql_log_bin = 0 FOR ALTER USER "+account+" IDENTIFIED BY 'rotated'")
	t.Cleanup(func() { m.Exec(t, "SET PASSWORD FOR "+account+" = PASSWORD('"+testenv.BinlogPassword+"')") })
	for _, id := range followerConns(t, m) {
		m.Exec(t, "KILL ?", id)
	}
	for _, p := range []*proxy{f.a, f.b} {
		waitFor(t, 5*time.Second, "the follower to see its stream cut", func() bool {
			return metricValue(t, p, "mycached_binlog_follower_up") == 0
		})
	}
	mustExec(t, f.direct, "UPDATE t SET v = 2 WHERE id = 1")
	f.fresh(t, q)
	for _, p := range []*proxy{f.a, f.b} {
		if n := metricValue(t, p, "mycached_strict_fallbacks_total"); n < 1 {
			t.Errorf("mycached_strict_fallbacks_total = %v, want at least 1", n)
		}
	}
}

// startUnwaited starts a sidecar with cfg as startProxy does, without
// waiting for its follower, which the test expects not to start.
func startUnwaited(t testing.TB, cfg mysqlproxy.Config) *proxy {
	t.Helper()
	srv, err := mysqlproxy.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return &proxy{srv: srv, addr: ln.Addr().String()}
}

// TestFollowerThatCannotLogInAtStart: a sidecar started while its binlog
// account's password is not the one it was given (rotated while it was
// down) has no follower; it relied on the parse of the writes it relays,
// and served a row written directly on the server from its cache for as
// long as the entry lived. Like a follower that cannot reconnect, it now
// sends strict reads to the server until the follower runs.
func TestFollowerThatCannotLogInAtStart(t *testing.T) {
	t.Parallel()
	m := testenvShared(t)
	cfg := withBinlog(mysqlproxy.Config{Backend: m.Addr})
	cfg.BinlogPassword = "not-" + cfg.BinlogPassword
	logs := &testenv.LogBuffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	p := startUnwaited(t, cfg)
	name := m.NewDatabase(t)
	direct := openDB(t, rootDSN(m.Addr, name, ""))
	via := openDB(t, rootDSN(p.addr, name, ""))
	mustExec(t, direct, "CREATE TABLE t (id INT PRIMARY KEY, v INT)")
	mustExec(t, direct, "INSERT INTO t VALUES (1, 1)")
	q := "SELECT v FROM t WHERE id = 1"
	before := hits(t, via)
	for range 3 {
		if got, want := dump(t, via, q), dump(t, direct, q); got != want {
			t.Fatalf("got %s, want %s", got, want)
		}
	}
	mustExec(t, direct, "UPDATE t SET v = 2 WHERE id = 1")
	if got, want := dump(t, via, q), dump(t, direct, q); got != want {
		t.Errorf("after a write on the server: got %s, want %s", got, want)
	}
	if n := hits(t, via) - before; n != 0 {
		t.Errorf("%d hits while the follower cannot log in", n)
	}
	if !strings.Contains(logs.String(), "strict reads go to the server") {
		t.Errorf("the log does not say why nothing is cached:\n%s", logs.String())
	}
}

// TestServerLogsAdvice: a sidecar in front of a server that logs the
// statements it runs, in its general log or its audit plugin, says that
// the reads its cache answers are not in those logs.
func TestServerLogsAdvice(t *testing.T) {
	t.Parallel()
	args := []string{"--general-log=1"}
	_, err := os.Stat("/usr/lib/mysql/plugin/server_audit.so")
	audit := err == nil
	if audit {
		args = append(args, "--plugin-load-add=server_audit", "--server-audit-logging=ON")
	}
	m := privateDB(t, args...)
	p := startProxy(t, withBinlog(mysqlproxy.Config{Backend: m.Addr}))
	want := []string{"general_log is ON: a read answered from the cache never reaches the server"}
	if audit {
		want = append(want, "the server_audit plugin logs reads")
	} else {
		t.Log("no server_audit plugin here: the general log alone is checked")
	}
	for _, w := range want {
		waitFor(t, 30*time.Second, "the sidecar's log to say "+w, func() bool { return strings.Contains(p.logs.String(), w) })
	}
}
