package mysqlproxy_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mycached/mycached/mysqlproxy"
)

// TestRestartKeepsCoWrites: what the follower learned of a table's
// trigger is kept in --state-dir. After a restart that resumes from the
// saved position, a first write through the sidecar to that table, with
// the follower held back, bumps what the trigger writes at once and no
// more: another table's entry stays cached. DDL made while the sidecar
// was down (a second trigger) is read again from the position, and makes
// the table unseen: the first write after that restart waits for the
// follower, then invalidates the whole database, and the new trigger's
// table is not served stale.
func TestRestartKeepsCoWrites(t *testing.T) {
	m := privateDB(t)
	name := m.NewDatabase(t)
	fwd := startForwarder(t, m.Addr)
	direct := openDB(t, rootDSN(m.Addr, name, ""))
	for _, q := range []string{
		"CREATE TABLE t (id INT PRIMARY KEY, v INT)",
		"CREATE TABLE audit (id INT AUTO_INCREMENT PRIMARY KEY, n INT)",
		"CREATE TABLE audit2 (id INT AUTO_INCREMENT PRIMARY KEY, n INT)",
		"CREATE TABLE other (id INT PRIMARY KEY, v INT)",
		"INSERT INTO t VALUES (1, 1)",
		"INSERT INTO other VALUES (1, 1)",
		"CREATE TRIGGER t_au AFTER UPDATE ON t FOR EACH ROW INSERT INTO audit (n) VALUES (NEW.v)",
	} {
		mustExec(t, direct, q)
	}
	// The follower is held for a whole write: it must still count as
	// current for the write to take the first write's path.
	cfg := withBinlog(mysqlproxy.Config{Backend: fwd.addr(), StateDir: t.TempDir(), MaxStaleness: time.Minute})
	start := func() (*proxy, *sql.DB) {
		t.Helper()
		p := startProxy(t, cfg)
		via := openDB(t, rootDSN(p.addr, name, ""))
		if err := p.srv.WaitBinlog(context.Background()); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, "the follower to be current", func() bool {
			ms, ok := mycachedStatus(t, via)["Binlog_staleness_ms"]
			return ok && ms < 1000
		})
		return p, via
	}
	stop := func(p *proxy, via *sql.DB) {
		t.Helper()
		via.Close()
		if err := p.srv.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// writeHeld writes through a session of via with the follower held,
	// and reads qs through other sessions of via before the follower
	// hears of the write (the writer's own reads wait for it).
	writeHeld := func(via *sql.DB, qs ...string) (hitsAfter int64, got, want []string) {
		t.Helper()
		ctx := context.Background()
		w, err := via.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		fwd.hold()
		defer fwd.release()
		if _, err := w.ExecContext(ctx, "UPDATE t SET v = v + 1 WHERE id = 1"); err != nil {
			t.Fatal(err)
		}
		before := hits(t, via)
		for _, q := range qs {
			got = append(got, dump(t, via, q))
			want = append(want, dump(t, direct, q))
		}
		return hits(t, via) - before, got, want
	}

	// The first run learns what a write to t writes.
	p, via := start()
	mustExec(t, direct, "UPDATE t SET v = v + 1 WHERE id = 1")
	if err := p.srv.WaitBinlog(context.Background()); err != nil {
		t.Fatal(err)
	}
	stop(p, via)

	p, via = start()
	qOther, qAudit := "SELECT v FROM other WHERE id = 1", "SELECT COUNT(*), MAX(n) FROM audit"
	warmOn(t, via, via, qOther)
	warmOn(t, via, via, qAudit)
	n, got, want := writeHeld(via, qAudit, qOther)
	if got[0] != want[0] {
		t.Errorf("%s after a write to t through the restarted sidecar: %s, want %s (stale)", qAudit, got[0], want[0])
	}
	if n != 1 {
		t.Errorf("after the restart, a write to t invalidated %s (%d hits of 2 reads, want 1): what t's writes write was not kept", qOther, n)
	}
	stop(p, via)

	// Down: a second trigger on t. The restart reads it again.
	mustExec(t, direct, "CREATE TRIGGER t_au2 AFTER UPDATE ON t FOR EACH ROW INSERT INTO audit2 (n) VALUES (NEW.v)")
	p, via = start()
	defer stop(p, via)
	qAudit2 := "SELECT COUNT(*), MAX(n) FROM audit2"
	warmOn(t, via, via, qAudit2)
	_, got, want = writeHeld(via, qAudit2)
	if got[0] != want[0] {
		t.Errorf("%s after a write to t, whose second trigger was created while the sidecar was down: %s, want %s (stale)", qAudit2, got[0], want[0])
	}
}

// TestRestartAfterResetMaster: a sidecar stopped with its position saved,
// then RESET MASTER, a write, and enough transactions for the server's new
// numbering to pass the saved position. Following on from that position
// would skip the write: the restarted sidecar finds that its binlog does
// not hold the saved position where it was read, invalidates everything,
// and follows from the server's. The read cached in memcached before the
// stop is not served stale. A restart with nothing of the kind between
// keeps the cache.
func TestRestartAfterResetMaster(t *testing.T) {
	m := privateDB(t)
	mc := privateMemcached(t)
	name := m.NewDatabase(t)
	direct := openDB(t, rootDSN(m.Addr, name, ""))
	mustExec(t, direct, "CREATE TABLE t (id INT PRIMARY KEY, v INT)")
	mustExec(t, direct, "CREATE TABLE filler (id INT AUTO_INCREMENT PRIMARY KEY)")
	mustExec(t, direct, "INSERT INTO t VALUES (1, 1)")
	cfg := withBinlog(mysqlproxy.Config{Backend: m.Addr, Memcached: []string{mc.Addr}, StateDir: t.TempDir(), MemcachedTimeout: 5 * time.Second})
	const q = "SELECT v FROM t WHERE id = 1"
	run := func(check func(via *sql.DB)) {
		t.Helper()
		p := startProxy(t, cfg)
		via := openDB(t, rootDSN(p.addr, name, ""))
		if err := p.srv.WaitBinlog(context.Background()); err != nil {
			t.Fatal(err)
		}
		check(via)
		via.Close()
		if err := p.srv.Close(); err != nil {
			t.Fatal(err)
		}
	}
	run(func(via *sql.DB) {
		warmOn(t, via, via, q)
		// No transaction has been read since the start: the server's
		// heartbeats say where the position lies.
		waitFor(t, 10*time.Second, "the position to be saved with its place in the binlog", func() bool {
			b, _ := os.ReadFile(filepath.Join(cfg.StateDir, "binlog-position"))
			return strings.Contains(string(b), " at ")
		})
	})
	run(func(via *sql.DB) {
		before := hits(t, via)
		if got := dump(t, via, q); got != dump(t, direct, q) {
			t.Fatalf("after a plain restart: %s, want %s", got, dump(t, direct, q))
		}
		if hits(t, via) == before {
			t.Error("a plain restart did not keep the cached read")
		}
	})
	var seq int
	if err := direct.QueryRow("SELECT SUBSTRING_INDEX(@@gtid_binlog_pos, '-', -1)").Scan(&seq); err != nil {
		t.Fatal(err)
	}
	mustExec(t, direct, "RESET MASTER")
	mustExec(t, direct, "UPDATE t SET v = 2 WHERE id = 1")
	for range seq + 3 {
		mustExec(t, direct, "INSERT INTO filler VALUES ()")
	}
	run(func(via *sql.DB) {
		if got, want := dump(t, via, q), dump(t, direct, q); got != want {
			t.Errorf("after RESET MASTER while the sidecar was down, and %d transactions: %s, want %s (stale)", seq+4, got, want)
		}
		if n := mycachedStatus(t, via)["Binlog_lost_positions"]; n < 1 {
			t.Errorf("Binlog_lost_positions = %d, want the lost position counted", n)
		}
	})
	// A saved position that cannot be read is lost too: the follower
	// runs, from the server's position, and everything is invalidated.
	run(func(via *sql.DB) { warmOn(t, via, via, q) })
	mustExec(t, direct, "UPDATE t SET v = 3 WHERE id = 1")
	for _, junk := range []string{"0-1-abc at bin.000001:4", "\x00\xff garbage"} {
		if err := os.WriteFile(filepath.Join(cfg.StateDir, "binlog-position"), []byte(junk), 0o600); err != nil {
			t.Fatal(err)
		}
		run(func(via *sql.DB) {
			if got, want := dump(t, via, q), dump(t, direct, q); got != want {
				t.Errorf("after a write while the sidecar was down, and a saved position %q: %s, want %s (stale)", junk, got, want)
			}
			// And the follower runs: a later write is seen.
			warmOn(t, via, via, q)
			mustExec(t, direct, "UPDATE t SET v = v + 1 WHERE id = 1")
			waitFor(t, 10*time.Second, "a direct write to be seen", func() bool { return dump(t, via, q) == dump(t, direct, q) })
		})
	}
	// RESET MASTER and as many transactions as before while the sidecar
	// is down: the server is back at the saved position, at the same
	// place of a binlog file of the same name. The server's count of
	// RESET statements, saved with the position, tells.
	const k = 3
	mustExec(t, direct, "INSERT INTO t VALUES (2, 0)")
	run(func(via *sql.DB) {
		mustExec(t, direct, "RESET MASTER")
		for range k {
			mustExec(t, direct, "UPDATE t SET v = v + 1 WHERE id = 2")
		}
		caughtUp := func() bool {
			b, _ := os.ReadFile(filepath.Join(cfg.StateDir, "binlog-position"))
			return strings.Contains(string(b), " at ") && strings.Contains(string(b), " resets ") &&
				strings.HasPrefix(string(b), m.QueryString(t, "SELECT @@gtid_binlog_pos")+" ")
		}
		waitFor(t, 10*time.Second, "the position after RESET MASTER to be saved with the count of RESET statements", caughtUp)
		time.Sleep(time.Second) // the reset's invalidation, made again once settled
		warmOn(t, via, via, q)
		waitFor(t, 10*time.Second, "the position to be saved again", caughtUp)
	})
	// resetWhileDown runs RESET MASTER (then between, when not nil) and k
	// transactions while the sidecar is down, and checks the read after
	// it starts again.
	resetWhileDown := func(what string, between func()) {
		t.Helper()
		saved, _ := os.ReadFile(filepath.Join(cfg.StateDir, "binlog-position"))
		mustExec(t, direct, "RESET MASTER")
		if between != nil {
			between()
		}
		for range k {
			mustExec(t, direct, "UPDATE t SET v = v + 1 WHERE id = 1")
		}
		t.Logf("saved %q; the server at %s", saved, m.QueryString(t, "SELECT @@gtid_binlog_pos"))
		run(func(via *sql.DB) {
			if got, want := dump(t, via, q), dump(t, direct, q); got != want {
				t.Errorf("after RESET MASTER%s while the sidecar was down, and %d transactions to the same position: %s, want %s (stale)", what, k, got, want)
			}
			if between != nil {
				if n := mycachedStatus(t, via)["Binlog_lost_positions"]; n < 1 {
					t.Errorf("Binlog_lost_positions = %d, want the lost position counted", n)
				}
			}
		})
	}
	resetWhileDown("", nil)
	// The same with a restart of the server after each RESET MASTER,
	// which starts the count of RESET statements again: the server is
	// back at the saved position, at the same place of a binlog file of
	// the same name, created at the restart. The file's creation time,
	// saved with the position, tells.
	restart := func(dbs ...*sql.DB) {
		t.Helper()
		if err := m.Restart(); err != nil {
			t.Fatal(err)
		}
		for _, db := range dbs {
			// Their connections died with the server.
			db.SetMaxIdleConns(0)
			db.SetMaxIdleConns(2)
		}
	}
	run(func(via *sql.DB) {
		mustExec(t, direct, "RESET MASTER")
		restart(direct, via)
		for range k {
			mustExec(t, direct, "UPDATE t SET v = v + 1 WHERE id = 2")
		}
		caughtUp := func() bool {
			b, _ := os.ReadFile(filepath.Join(cfg.StateDir, "binlog-position"))
			return strings.Contains(string(b), " born ") &&
				strings.HasPrefix(string(b), m.QueryString(t, "SELECT @@gtid_binlog_pos")+" ")
		}
		waitFor(t, 20*time.Second, "the position after the restart to be saved with its file's creation time", caughtUp)
		time.Sleep(time.Second) // the restart's invalidation, made again once settled
		warmOn(t, via, via, q)
		waitFor(t, 10*time.Second, "the position to be saved again", caughtUp)
	})
	resetWhileDown(" and a restart of the server", func() { restart(direct) })
}

// TestRestartKnowsForeignKeys: a parent's write cascades to its foreign-
// key children without a binlog event of theirs, so the follower bumps
// the children it knows of. A sidecar restarted with its state resumes
// the binlog where it stopped, and knows the children from before the
// stop: a cascade the restarted follower applies before anything has
// read or written the child again still invalidates the child's entries
// kept in memcached.
func TestRestartKnowsForeignKeys(t *testing.T) {
	m := privateDB(t)
	mc := privateMemcached(t)
	name := m.NewDatabase(t)
	direct := openDB(t, rootDSN(m.Addr, name, ""))
	for _, q := range []string{
		"CREATE TABLE p (id INT PRIMARY KEY)",
		"CREATE TABLE c (id INT PRIMARY KEY, p INT, FOREIGN KEY (p) REFERENCES p (id) ON DELETE CASCADE ON UPDATE CASCADE)",
		"INSERT INTO p VALUES (1), (2), (3)",
		"INSERT INTO c VALUES (10, 1), (20, 2), (30, 3)",
	} {
		mustExec(t, direct, q)
	}
	cfg := withBinlog(mysqlproxy.Config{Backend: m.Addr, Memcached: []string{mc.Addr}, StateDir: t.TempDir(), MemcachedTimeout: 5 * time.Second})
	reads := []string{"SELECT * FROM c", "SELECT p FROM c WHERE id = 20"}
	run := func(check func(p *proxy, via *sql.DB)) {
		t.Helper()
		p := startProxy(t, cfg)
		via := openDB(t, rootDSN(p.addr, name, ""))
		if err := p.srv.WaitBinlog(context.Background()); err != nil {
			t.Fatal(err)
		}
		check(p, via)
		via.Close()
		if err := p.srv.Close(); err != nil {
			t.Fatal(err)
		}
	}
	run(func(_ *proxy, via *sql.DB) {
		for _, q := range reads {
			warmOn(t, via, via, q)
		}
		// Saved with the position, at the next heartbeat; the stale read
		// below tells if they were not.
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if b, _ := os.ReadFile(filepath.Join(cfg.StateDir, "co-writes")); strings.Contains(string(b), `"children"`) {
				break
			}
		}
	})
	for _, write := range []string{"DELETE FROM p WHERE id = 1", "UPDATE p SET id = 22 WHERE id = 2"} {
		run(func(p *proxy, via *sql.DB) {
			mustExec(t, direct, write)
			if err := p.srv.WaitBinlog(context.Background()); err != nil {
				t.Fatal(err)
			}
			for _, q := range reads {
				if got, want := dump(t, via, q), dump(t, direct, q); got != want {
					t.Errorf("after a restart, then %s: %s gave %s, want %s (stale)", write, q, got, want)
				}
				warmOn(t, via, via, q)
			}
		})
	}
}

// TestServerRestartedWhileTheFleetWasDown: a MEMORY table read through
// the cache, then every sidecar stopped, the server restarted (which
// empties the table, and logs nothing of it until something opens it),
// and the sidecar started again from its saved position. The follower
// took the first format event it read, the new run's, for the run it
// knew: the restart went unseen, and the emptied table's rows were served
// from memcached. The saved position now says which run of the server it
// was read in.
func TestServerRestartedWhileTheFleetWasDown(t *testing.T) {
	m := privateDB(t)
	mc := privateMemcached(t)
	name := m.NewDatabase(t)
	direct := openDB(t, rootDSN(m.Addr, name, ""))
	mustExec(t, direct, "CREATE TABLE mem (id INT PRIMARY KEY, v INT) ENGINE=MEMORY")
	mustExec(t, direct, "INSERT INTO mem VALUES (1, 1), (2, 2)")
	cfg := withBinlog(mysqlproxy.Config{Backend: m.Addr, Memcached: []string{mc.Addr}, StateDir: t.TempDir(), MemcachedTimeout: 5 * time.Second})
	const q = "SELECT id, v FROM mem ORDER BY id"
	p := startProxy(t, cfg)
	via := openDB(t, rootDSN(p.addr, name, ""))
	warmOn(t, via, via, q)
	waitFor(t, 10*time.Second, "the position to be saved", func() bool {
		b, _ := os.ReadFile(filepath.Join(cfg.StateDir, "binlog-position"))
		return strings.Contains(string(b), " at ")
	})
	via.Close()
	if err := p.srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Restart(); err != nil {
		t.Fatal(err)
	}
	direct = openDB(t, rootDSN(m.Addr, name, ""))
	p = startProxy(t, cfg)
	via = openDB(t, rootDSN(p.addr, name, ""))
	// Strict reads go to the server until the follower is current: the
	// read is checked once it is, when a hit could be served.
	waitFor(t, 10*time.Second, "the follower to be current", func() bool {
		return metricValue(t, p, "mycached_binlog_staleness_seconds") < 5
	})
	if got, want := dump(t, via, q), dump(t, direct, q); got != want {
		t.Errorf("after the server restarted while the sidecar was down: %s, want %s (stale)", got, want)
	}
}
