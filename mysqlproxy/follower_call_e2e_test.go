package mysqlproxy_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/mycached/mycached/mysqlproxy"
)

// warmOn reads q on c, a session of the sidecar that db reaches, until
// the sidecar answers it from its cache.
func warmOn(t *testing.T, db *sql.DB, c querier, q string) {
	t.Helper()
	// As fleet.warm: a loaded machine can keep a read going to the
	// server for a while after a DDL or a follower's catch-up.
	deadline := time.Now().Add(15 * time.Second)
	for {
		before := hits(t, db)
		_, _ = queryDump(context.Background(), c, q)
		if hits(t, db) > before {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("gave up after 15s waiting for %s to be served from the cache\n%s", q, dump(t, db, "SHOW MYCACHED QUERIES"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestCallWrites: a CALL's writes are unknown to its text. With the
// follower, a procedure that only reads leaves the cache in place, and
// one that writes invalidates what the follower applied for it; either
// way, the next read of what it wrote is fresh on another session of the
// same sidecar, with no wait, whether its writes were logged or not.
func TestCallWrites(t *testing.T) {
	m := privateDB(t)
	f := startFleet(t, m, mysqlproxy.Config{})
	for _, s := range []string{
		"CREATE TABLE t (id INT PRIMARY KEY, v INT)", "INSERT INTO t VALUES (1, 1)",
		"CREATE TABLE u (id INT PRIMARY KEY, v INT)", "INSERT INTO u VALUES (1, 1)",
		"CREATE PROCEDURE only_reads() SELECT v FROM u WHERE id = 1",
		"CREATE PROCEDURE reads_in_tx() BEGIN START TRANSACTION; SELECT v FROM u; COMMIT; END",
		"CREATE PROCEDURE rolls_back() BEGIN START TRANSACTION; UPDATE t SET v = v + 100 WHERE id = 1; ROLLBACK; END",
		"CREATE PROCEDURE writes() BEGIN UPDATE t SET v = v + 1 WHERE id = 1; SELECT v FROM u WHERE id = 1; END",
		"CREATE PROCEDURE writes_unlogged() BEGIN SET sql_log_bin = 0; UPDATE t SET v = v + 1 WHERE id = 1; SET sql_log_bin = 1; END",
		// No tracker reports an unscoped SET in stored code.
		"CREATE PROCEDURE log_off() SET @@sql_log_bin = 0",
		"CREATE PROCEDURE log_on() SET @@sql_log_bin = 1",
		// Off and on again inside, unseen; directly or by another
		// procedure.
		"CREATE PROCEDURE writes_unlogged_at() BEGIN SET @@sql_log_bin = 0; UPDATE t SET v = v + 1 WHERE id = 1; SET @@sql_log_bin = 1; END",
		"CREATE PROCEDURE set_log(x INT) SET @@sql_log_bin = x",
		"CREATE PROCEDURE writes_nested() BEGIN CALL set_log(0); UPDATE t SET v = v + 1 WHERE id = 1; CALL set_log(1); END",
		"CREATE PROCEDURE writes_later() BEGIN START TRANSACTION; UPDATE t SET v = v + 1 WHERE id = 1; END",
		"CREATE TABLE w (id INT PRIMARY KEY, v INT)", "INSERT INTO w VALUES (1, 1)",
		"CREATE PROCEDURE writes_twice() BEGIN UPDATE t SET v = v + 1 WHERE id = 1; UPDATE w SET v = v + 1 WHERE id = 1; END",
		"CREATE FUNCTION writes_f() RETURNS INT DETERMINISTIC MODIFIES SQL DATA BEGIN UPDATE t SET v = v + 1 WHERE id = 1; RETURN 1; END",
	} {
		mustExec(t, f.direct, s)
	}
	f.sync(t)
	const q = "SELECT v FROM t WHERE id = 1"
	caller, other := conn(t, f.viaA), conn(t, f.viaA)
	warm := func() { t.Helper(); warmOn(t, f.viaA, other, q) }
	call := func(stmt string) {
		t.Helper()
		if _, err := queryDump(context.Background(), caller, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}

	call("PREPARE ps_read FROM 'SELECT v FROM u WHERE id = 1'")
	call("PREPARE ps_write FROM 'UPDATE t SET v = v + 1 WHERE id = ?'")
	call("SET @one = 1")
	// What commits nothing invalidates nothing: a read, EXECUTE of one,
	// and what the server refused because the procedure or prepared
	// statement it names does not exist (any account can send those).
	// (EXECUTE IMMEDIATE of an expression, whose text may turn
	// sql_log_bin off unseen, invalidates everything.)
	for _, stmt := range []string{"CALL only_reads()", "CALL reads_in_tx()", "CALL rolls_back()",
		"EXECUTE ps_read", "EXECUTE IMMEDIATE 'SELECT v FROM u WHERE id = 1'",
		"CALL nosuch()", "CALL " + f.name + ".nosuch(1)", "EXECUTE nosuch", "EXECUTE nosuch USING @one"} {
		warm()
		_, _ = queryDump(context.Background(), caller, stmt)
		want := dump(t, f.direct, q)
		got, selects := counted(t, m, other, q)
		if got != want {
			t.Fatalf("after %s: %s, want %s", stmt, got, want)
		}
		if selects != 0 {
			t.Errorf("after %s, which committed nothing, the read went to the server: it invalidated the cache", stmt)
		}
	}

	// A CALL that wrote bumps what the follower applied for it, once its
	// client has the answer: what it wrote is fresh at once, through
	// two transactions as through one, and the rest stays cached.
	const qw, qu = "SELECT v FROM w WHERE id = 1", "SELECT v FROM u WHERE id = 1"
	// So does a statement whose stored function wrote.
	// So do EXECUTE and EXECUTE IMMEDIATE of a write.
	for _, stmt := range []string{"CALL writes()", "CALL writes_twice()", "DO writes_f()", "SELECT writes_f()",
		"EXECUTE ps_write USING @one", "EXECUTE IMMEDIATE 'UPDATE t SET v = v + 1 WHERE id = 1'", "EXECUTE IMMEDIATE 'CALL writes_twice()'"} {
		warm()
		for _, q := range []string{qw, qu} {
			connDump(other, q)
		}
		call(stmt)
		for _, q := range []string{q, qw} {
			if got, want := connDump(other, q), dump(t, f.direct, q); got != want {
				t.Errorf("right after %s, another session read %s: %s, want %s (stale)", stmt, q, got, want)
			}
		}
		if got, selects := counted(t, m, other, qu); selects != 0 {
			t.Errorf("after %s, which did not write u, %s went to the server (%s): it invalidated more than it wrote", stmt, qu, got)
		}
	}
	// A client on classic EOF packets, whose result's end carries no
	// state changes.
	classic := dialRaw(t, f.a.addr, "root", rootPass, f.name, false)
	for _, stmt := range []string{"SELECT writes_f()", "SELECT writes_f() FROM u"} {
		warm()
		if _, err := classic.Execute(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
		if got, want := connDump(other, q), dump(t, f.direct, q); got != want {
			t.Errorf("right after %s from a client on classic EOF, another session read %s, want %s (stale)", stmt, got, want)
		}
	}

	for _, stmts := range [][]string{
		{"CALL writes()"},
		{"CALL writes_unlogged()"},
		{"CALL writes_unlogged_at()"},
		{"CALL writes_nested()"},
		{"EXECUTE IMMEDIATE 'CALL writes_unlogged_at()'"},
		{"EXECUTE IMMEDIATE CONCAT('CALL writes_unlog', 'ged_at()')"},
		{"PREPARE ps_call FROM 'CALL writes_unlogged_at()'", "EXECUTE ps_call"},
		// Off before the CALL: nothing it writes is logged.
		{"SET sql_log_bin = 0", "CALL writes()", "SET sql_log_bin = 1"},
		{"SET @@sql_log_bin = 0", "CALL writes()", "SET @@sql_log_bin = 1"},
		{"SET @@session.sql_log_bin = 0; CALL writes()", "SET @@sql_log_bin = 1"},
		{"SET STATEMENT sql_log_bin = 0 FOR CALL writes()"},
		// Committed by the next statement, not by the CALL.
		{"CALL writes_later()", "COMMIT"},
		// Off by an earlier CALL, which the trackers do not show; and it
		// stays off.
		{"CALL log_off()", "CALL writes()"},
		{"CALL writes()"},
		{"UPDATE t SET v = v + 1 WHERE id = 1"},
		{"CALL log_on()", "CALL writes()"},
	} {
		warm()
		for _, s := range stmts {
			call(s)
		}
		if got, want := connDump(other, q), dump(t, f.direct, q); got != want {
			t.Errorf("right after %q, another session read %s, want %s (stale)", stmts, got, want)
		}
	}

	// The same off on a fresh session, whose state no CALL has hidden
	// yet: an unscoped SET @@sql_log_bin is reported by no tracker.
	for _, stmts := range [][]string{
		{"SET @@sql_log_bin = 0", "CALL writes()"},
		{"SET @@SQL_LOG_BIN := 0", "SELECT writes_f()"},
		{"SET @@sql_log_bin = 0", "DO writes_f()"},
	} {
		warm()
		fresh := conn(t, f.viaA)
		for _, s := range stmts {
			if _, err := queryDump(context.Background(), fresh, s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
		if got, want := connDump(other, q), dump(t, f.direct, q); got != want {
			t.Errorf("right after %q on a fresh session, another session read %s, want %s (stale)", stmts, got, want)
		}
		if _, err := queryDump(context.Background(), fresh, "SET @@sql_log_bin = 1"); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRoutineWritesWithoutFollower: on a sidecar with no binlog follower,
// a statement that runs a stored function which writes (SELECT f(), DO
// f()) invalidates what it may have written, as a CALL does, once the
// write is committed; one whose functions only read invalidates nothing.
func TestRoutineWritesWithoutFollower(t *testing.T) {
	// A server of its own: its CREATE FUNCTIONs would make the followers
	// of tests sharing a server invalidate everything.
	m := privateDB(t)
	db := m.NewDatabase(t)
	for _, s := range []string{
		"CREATE TABLE t (id INT PRIMARY KEY, v INT)", "INSERT INTO t VALUES (1, 1)",
		"CREATE FUNCTION bump() RETURNS INT DETERMINISTIC MODIFIES SQL DATA BEGIN UPDATE t SET v = v + 1 WHERE id = 1; RETURN 1; END",
		"CREATE FUNCTION peek() RETURNS INT READS SQL DATA RETURN (SELECT v FROM t WHERE id = 1)",
	} {
		m.Exec(t, "USE "+db+"; "+s)
	}
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr})
	via := openDB(t, rootDSN(p.addr, db, ""))
	direct := openDB(t, rootDSN(m.Addr, db, ""))
	caller, other := conn(t, via), conn(t, via)
	const q = "SELECT v FROM t WHERE id = 1"
	warm := func() { t.Helper(); warmOn(t, via, other, q) }
	for _, stmts := range [][]string{
		{"DO bump()"},
		{"SELECT bump()"},
		{"BEGIN", "DO bump()", "COMMIT"},
		{"SET autocommit = 0", "SELECT bump()", "COMMIT", "SET autocommit = 1"},
	} {
		warm()
		for _, s := range stmts {
			execOn(t, caller, s)
		}
		if got, want := connDump(other, q), dump(t, direct, q); got != want {
			t.Errorf("right after %q, another session read %s, want %s (stale)", stmts, got, want)
		}
	}
	for _, stmts := range [][]string{
		{"SELECT peek()"},
		{"BEGIN", "SELECT peek()", "COMMIT"},
		{"BEGIN", "DO bump()", "ROLLBACK"},
	} {
		warm()
		for _, s := range stmts {
			execOn(t, caller, s)
		}
		// The sidecar's hits say where the read was answered.
		before := hits(t, via)
		if got, want := connDump(other, q), dump(t, direct, q); got != want {
			t.Fatalf("after %q: %s, want %s", stmts, got, want)
		}
		if hits(t, via) == before {
			t.Errorf("after %q, which committed nothing, the read went to the server", stmts)
		}
	}
}

// TestTriggerWritesSeenAtOnce: what a trigger wrote is fresh through every
// sidecar right after the OK of the write that fired it, as the written
// table is. A sidecar learns from its follower what a statement on a
// table writes, triggers included, even when a trigger wrote nothing that
// time (a trigger is not visible otherwise to an account without the
// TRIGGER privilege); the first write to a table not learned yet, alone
// or in a transaction, and the first after a CREATE TRIGGER, wait for the
// follower. Each write comes right after a large transaction that keeps
// the followers busy. The tables a trigger writes, written on their own,
// do not invalidate the table whose trigger writes them.
func TestTriggerWritesSeenAtOnce(t *testing.T) {
	m := privateDB(t)
	f := startFleet(t, m, mysqlproxy.Config{})
	for _, s := range []string{
		"CREATE TABLE t (id INT PRIMARY KEY, v INT)",
		"CREATE TABLE audit (id INT PRIMARY KEY, n INT)", "INSERT INTO audit VALUES (1, 0)",
		"CREATE TABLE big (id INT PRIMARY KEY, v INT)", "INSERT INTO big VALUES (1, 0)",
		"CREATE TRIGGER t_ai AFTER INSERT ON t FOR EACH ROW UPDATE audit SET n = n + 1 WHERE id = 1",
		"CREATE TRIGGER t_au AFTER UPDATE ON t FOR EACH ROW BEGIN IF NEW.v > 100 THEN UPDATE big SET v = NEW.v WHERE id = 1; END IF; END",
		// One statement of each kind, as an application would have run
		// before: the second fires a trigger that writes nothing.
		"INSERT INTO t VALUES (0, 0)", "UPDATE t SET v = 1 WHERE id = 0",
		"CREATE TABLE filler (id INT PRIMARY KEY, pad CHAR(100))",
		"CREATE TABLE first (id INT PRIMARY KEY)",
		"CREATE TABLE audit2 (id INT PRIMARY KEY, n INT)", "INSERT INTO audit2 VALUES (1, 0)",
		"CREATE TRIGGER first_ai AFTER INSERT ON first FOR EACH ROW UPDATE audit2 SET n = n + 1 WHERE id = 1",
		"CREATE TABLE firsttx (id INT PRIMARY KEY)",
		"CREATE TABLE audit3 (id INT PRIMARY KEY, n INT)", "INSERT INTO audit3 VALUES (1, 0)",
		"CREATE TRIGGER firsttx_ai AFTER INSERT ON firsttx FOR EACH ROW UPDATE audit3 SET n = n + 1 WHERE id = 1",
	} {
		mustExec(t, f.direct, s)
	}
	f.sync(t)

	// The first write to a table through a sidecar, before its follower
	// has seen any: it waits for the follower to apply it.
	const q2 = "SELECT n FROM audit2 WHERE id = 1"
	f.warm(t, q2)
	mustExec(t, f.direct, "INSERT INTO filler SELECT seq, 'x' FROM seq_1_to_50000")
	mustExec(t, f.viaA, "INSERT INTO first VALUES (1)")
	f.fresh(t, q2)
	// In a transaction, its COMMIT waits.
	const q3 = "SELECT n FROM audit3 WHERE id = 1"
	f.sync(t)
	time.Sleep(300 * time.Millisecond) // the bumps made again a moment later
	f.warm(t, q3)
	mustExec(t, f.direct, "INSERT INTO filler SELECT seq, 'x' FROM seq_50001_to_250000")
	w := conn(t, f.viaA)
	for _, s := range []string{"START TRANSACTION", "INSERT INTO firsttx VALUES (1)", "COMMIT"} {
		execOn(t, w, s)
	}
	f.fresh(t, q3)
	if t.Failed() {
		t.FailNow()
	}

	const qa, qb = "SELECT n FROM audit WHERE id = 1", "SELECT v FROM big WHERE id = 1"
	for i := 1; i <= 3; i++ {
		f.sync(t)
		f.warm(t, qa)
		f.warm(t, qb)
		// A large transaction just before keeps the followers busy
		// while the writes below are made and read: without what the
		// sidecar learned, the reads beat the followers to the triggers'
		// writes.
		mustExec(t, f.direct, fmt.Sprintf("INSERT INTO filler SELECT seq, 'x' FROM seq_%d_to_%d", i*1000000, i*1000000+99999))
		mustExec(t, f.viaA, fmt.Sprintf("INSERT INTO t VALUES (%d, 1)", i))
		mustExec(t, f.viaA, fmt.Sprintf("UPDATE t SET v = %d WHERE id = 0", 100+i))
		f.fresh(t, qa)
		f.fresh(t, qb)
		if t.Failed() {
			t.Fatalf("stale after round %d", i)
		}
	}

	// A trigger created since: learned again, by the next write waiting.
	mustExec(t, f.direct, "CREATE TABLE audit4 (id INT PRIMARY KEY, n INT)")
	mustExec(t, f.direct, "INSERT INTO audit4 VALUES (1, 0)")
	mustExec(t, f.direct, "CREATE TRIGGER t_bi BEFORE INSERT ON t FOR EACH ROW UPDATE audit4 SET n = n + 1 WHERE id = 1")
	const q4 = "SELECT n FROM audit4 WHERE id = 1"
	f.sync(t)
	time.Sleep(300 * time.Millisecond)
	f.warm(t, q4)
	mustExec(t, f.direct, "INSERT INTO filler SELECT seq, 'x' FROM seq_10000000_to_10099999")
	mustExec(t, f.viaA, "INSERT INTO t VALUES (100, 1)")
	f.fresh(t, q4)

	const qt = "SELECT v FROM t WHERE id = 0"
	f.sync(t) // the followers' own bumps of t are behind
	c := conn(t, f.viaA)
	warmOn(t, f.viaA, c, qt)
	mustExec(t, f.viaA, "UPDATE audit SET n = n + 1 WHERE id = 1")
	mustExec(t, f.viaA, "UPDATE big SET v = v + 1 WHERE id = 1")
	f.sync(t)
	if got, selects := counted(t, m, c, qt); selects != 0 {
		t.Errorf("after writes to the tables t's triggers write, %s went to the server (%s)", qt, got)
	}
}

// TestTriggerWritesWithFollowerLate: the first write through a sidecar to
// a table whose triggers' tables it has not learned, while its follower
// is further behind than --max-staleness (or more than the 250 ms such a
// write waits), cannot learn them in time: it bumps the global
// generation, since a trigger may write any database, in autocommit and
// in a transaction alike. No session reads what the trigger wrote stale.
func TestTriggerWritesWithFollowerLate(t *testing.T) {
	m := privateDB(t)
	f := startFleet(t, m, mysqlproxy.Config{MaxStaleness: 100 * time.Millisecond})
	other := f.name + "_other"
	mustExec(t, f.direct, "CREATE DATABASE "+other)
	t.Cleanup(func() { _, _ = f.direct.Exec("DROP DATABASE " + other) })
	for _, s := range []string{
		"CREATE TABLE filler (id INT PRIMARY KEY, pad CHAR(200))",
		"CREATE TABLE " + other + ".audit (id INT PRIMARY KEY, n INT)", "INSERT INTO " + other + ".audit VALUES (1, 0), (2, 0)",
		"CREATE TABLE w1 (id INT PRIMARY KEY)", "CREATE TABLE w2 (id INT PRIMARY KEY)",
		"CREATE TRIGGER w1_ai AFTER INSERT ON w1 FOR EACH ROW UPDATE " + other + ".audit SET n = n + 1 WHERE id = 1",
		"CREATE TRIGGER w2_ai AFTER INSERT ON w2 FOR EACH ROW UPDATE " + other + ".audit SET n = n + 1 WHERE id = 2",
	} {
		mustExec(t, f.direct, s)
	}
	f.sync(t)
	next := 0
	for _, c := range []struct {
		table string
		tx    bool
	}{{"w1", false}, {"w2", true}} {
		q := fmt.Sprintf("SELECT n FROM %s.audit WHERE id = %s", other, c.table[1:])
		f.warm(t, q)
		// A transaction large enough to keep the followers busy.
		mustExec(t, f.direct, fmt.Sprintf("INSERT INTO filler SELECT seq, 'x' FROM seq_%d_to_%d", next+1, next+300000))
		next += 300000
		w := conn(t, f.viaA)
		stmts := []string{"INSERT INTO " + c.table + " VALUES (1)"}
		if c.tx {
			stmts = []string{"START TRANSACTION", stmts[0], "COMMIT"}
		}
		for _, s := range stmts {
			execOn(t, w, s)
		}
		f.fresh(t, q)
	}
}

// TestRoutineWritesWithFollowerLate: a statement whose stored function
// wrote, run while the follower is too far behind to say in time what it
// wrote, bumps the global generation, as a CALL does, in autocommit and
// in a transaction alike. No session reads what the function wrote stale.
func TestRoutineWritesWithFollowerLate(t *testing.T) {
	m := privateDB(t)
	f := startFleet(t, m, mysqlproxy.Config{MaxStaleness: 100 * time.Millisecond})
	for _, s := range []string{
		"CREATE TABLE filler (id INT PRIMARY KEY, pad CHAR(200))",
		"CREATE TABLE t (id INT PRIMARY KEY, v INT)", "INSERT INTO t VALUES (1, 0)",
		"CREATE FUNCTION bump() RETURNS INT DETERMINISTIC MODIFIES SQL DATA BEGIN UPDATE t SET v = v + 1 WHERE id = 1; RETURN 1; END",
	} {
		mustExec(t, f.direct, s)
	}
	f.sync(t)
	const q = "SELECT v FROM t WHERE id = 1"
	next := 0
	for _, stmts := range [][]string{
		{"SELECT bump()"},
		{"DO bump()"},
		{"SELECT bump() FROM filler WHERE id = 1"},
		{"START TRANSACTION", "SELECT bump()", "COMMIT"},
	} {
		f.sync(t)
		time.Sleep(300 * time.Millisecond) // the bumps made again a moment later
		f.warm(t, q)
		// A transaction large enough to keep the followers busy.
		mustExec(t, f.direct, fmt.Sprintf("INSERT INTO filler SELECT seq, 'x' FROM seq_%d_to_%d", next+1, next+300000))
		next += 300000
		w := conn(t, f.viaA)
		for _, s := range stmts {
			if _, err := queryDump(context.Background(), w, s); err != nil {
				t.Fatalf("%s: %v", s, err)
			}
		}
		f.fresh(t, q)
	}
}

// TestTriggerWritesPerEvent: a statement maps the tables of its own
// event's triggers only. What a sidecar learned from UPDATEs of a table
// does not stand for its INSERT or DELETE triggers: the first write of
// each other kind waits for the follower, and what its trigger wrote is
// fresh right after its OK, the followers busy meanwhile.
func TestTriggerWritesPerEvent(t *testing.T) {
	m := privateDB(t)
	f := startFleet(t, m, mysqlproxy.Config{})
	for _, s := range []string{
		"CREATE TABLE filler (id INT PRIMARY KEY, pad CHAR(100))",
		"CREATE TABLE pe (id INT PRIMARY KEY, v INT)", "INSERT INTO pe VALUES (1, 0), (2, 0)",
		"CREATE TABLE pi (id INT PRIMARY KEY, n INT)", "INSERT INTO pi VALUES (1, 0)",
		"CREATE TABLE pu (id INT PRIMARY KEY, n INT)", "INSERT INTO pu VALUES (1, 0)",
		"CREATE TABLE pd (id INT PRIMARY KEY, n INT)", "INSERT INTO pd VALUES (1, 0)",
		"CREATE TRIGGER pe_ai AFTER INSERT ON pe FOR EACH ROW UPDATE pi SET n = n + 1 WHERE id = 1",
		"CREATE TRIGGER pe_au AFTER UPDATE ON pe FOR EACH ROW UPDATE pu SET n = n + 1 WHERE id = 1",
		"CREATE TRIGGER pe_ad AFTER DELETE ON pe FOR EACH ROW UPDATE pd SET n = n + 1 WHERE id = 1",
	} {
		mustExec(t, f.direct, s)
	}
	f.sync(t)
	// Learned from UPDATEs through the sidecar.
	for range 2 {
		mustExec(t, f.viaA, "UPDATE pe SET v = v + 1 WHERE id = 1")
		f.sync(t)
	}
	time.Sleep(300 * time.Millisecond) // the bumps made again a moment later
	next := 0
	for _, c := range []struct{ write, read string }{
		{"INSERT INTO pe VALUES (10, 0)", "SELECT n FROM pi WHERE id = 1"},
		{"DELETE FROM pe WHERE id = 10", "SELECT n FROM pd WHERE id = 1"},
		{"INSERT INTO pe VALUES (2, 0) ON DUPLICATE KEY UPDATE v = v + 1", "SELECT n FROM pu WHERE id = 1"},
		{"REPLACE INTO pe VALUES (2, 5)", "SELECT n FROM pd WHERE id = 1"},
		{"INSERT INTO pe VALUES (11, 0)", "SELECT n FROM pi WHERE id = 1"},
	} {
		f.sync(t)
		time.Sleep(300 * time.Millisecond)
		f.warm(t, c.read)
		mustExec(t, f.direct, fmt.Sprintf("INSERT INTO filler SELECT seq, 'x' FROM seq_%d_to_%d", next+1, next+200000))
		next += 200000
		mustExec(t, f.viaA, c.write)
		f.fresh(t, c.read)
		if t.Failed() {
			t.Fatalf("stale after %s", c.write)
		}
	}
}

// TestCoWritesLearnedRight: what the follower learns of a table's
// triggers from the binlog stands for later writes only where it holds.
// Each case learns from writes through a sidecar, then writes again
// while the followers are busy: what its trigger or function wrote is
// fresh right after the OK.
func TestCoWritesLearnedRight(t *testing.T) {
	m := privateDB(t)
	f := startFleet(t, m, mysqlproxy.Config{})
	other := f.name + "_other"
	mustExec(t, f.direct, "CREATE DATABASE "+other)
	t.Cleanup(func() { _, _ = f.direct.Exec("DROP DATABASE " + other) })
	mustExec(t, f.direct, "CREATE TABLE filler (id INT PRIMARY KEY, pad CHAR(100))")
	mustExec(t, f.direct, "SET GLOBAL log_bin_trust_function_creators = 1")
	next := 0
	for _, c := range []struct {
		name                      string
		setup, learn, write, then []string
		read                      string
	}{{
		// A REPLACE that updates in place maps no UPDATE trigger.
		name: "replace-in-place",
		setup: []string{
			"CREATE TABLE rq (id INT PRIMARY KEY, v INT)", "INSERT INTO rq VALUES (1, 0), (2, 0)",
			"CREATE TABLE rqu (id INT PRIMARY KEY, n INT)", "INSERT INTO rqu VALUES (1, 0)",
			"CREATE TRIGGER rq_au AFTER UPDATE ON rq FOR EACH ROW UPDATE rqu SET n = n + 1 WHERE id = 1",
		},
		learn: []string{"REPLACE INTO rq VALUES (1, 7)", "REPLACE INTO rq VALUES (1, 8)"},
		write: []string{"UPDATE rq SET v = v + 1 WHERE id = 2"},
		read:  "SELECT n FROM rqu WHERE id = 1",
	}, {
		name: "same-name-other-database",
		setup: []string{
			"CREATE TABLE xd (id INT PRIMARY KEY, v INT)", "INSERT INTO xd VALUES (1, 0), (2, 0)",
			"CREATE TABLE " + other + ".xd (id INT PRIMARY KEY, v INT)", "INSERT INTO " + other + ".xd VALUES (1, 0)",
			"CREATE TRIGGER xd_au AFTER UPDATE ON xd FOR EACH ROW UPDATE " + other + ".xd SET v = v + 1 WHERE id = 1",
		},
		learn: []string{"UPDATE xd SET v = v + 1 WHERE id = 1", "UPDATE xd SET v = v + 1 WHERE id = 1"},
		write: []string{"UPDATE xd SET v = v + 1 WHERE id = 2"},
		read:  "SELECT v FROM " + other + ".xd WHERE id = 1",
	}, {
		// The MyISAM and the InnoDB writes are logged apart.
		name: "myisam-writes-innodb",
		setup: []string{
			"CREATE TABLE mq (id INT PRIMARY KEY, v INT) ENGINE=MyISAM", "INSERT INTO mq VALUES (1, 0), (2, 0)",
			"CREATE TABLE mqx (id INT PRIMARY KEY, n INT) ENGINE=InnoDB", "INSERT INTO mqx VALUES (1, 0)",
			"CREATE TRIGGER mq_au AFTER UPDATE ON mq FOR EACH ROW UPDATE mqx SET n = n + 1 WHERE id = 1",
		},
		learn: []string{"UPDATE mq SET v = v + 1 WHERE id = 1", "UPDATE mq SET v = v + 1 WHERE id = 1"},
		write: []string{"UPDATE mq SET v = v + 1 WHERE id = 2"},
		read:  "SELECT n FROM mqx WHERE id = 1",
	}, {
		// The written table's name is part of the statement's table's.
		name: "name-within-a-name",
		setup: []string{
			"CREATE TABLE ms1xsrc (id INT PRIMARY KEY, v INT)", "INSERT INTO ms1xsrc VALUES (1, 0), (2, 0)",
			"CREATE TABLE ms1x (id INT PRIMARY KEY, n INT) ENGINE=MyISAM", "INSERT INTO ms1x VALUES (1, 0)",
			"CREATE TRIGGER ms1xsrc_au AFTER UPDATE ON ms1xsrc FOR EACH ROW UPDATE ms1x SET n = n + 1 WHERE id = 1",
		},
		learn: []string{"UPDATE ms1xsrc SET v = v + 1 WHERE id = 1", "UPDATE ms1xsrc SET v = v + 1 WHERE id = 1"},
		write: []string{"UPDATE ms1xsrc SET v = v + 1 WHERE id = 2"},
		read:  "SELECT n FROM ms1x WHERE id = 1",
	}, {
		// Others see a function's MyISAM write before the COMMIT.
		name: "function-writes-myisam-in-a-transaction",
		setup: []string{
			"CREATE TABLE fmx (id INT PRIMARY KEY, n INT) ENGINE=MyISAM", "INSERT INTO fmx VALUES (1, 0)",
			"CREATE FUNCTION fmf() RETURNS INT MODIFIES SQL DATA BEGIN UPDATE fmx SET n = n + 1 WHERE id = 1; RETURN 1; END",
		},
		write: []string{"BEGIN", "SELECT fmf()"},
		then:  []string{"COMMIT"},
		read:  "SELECT n FROM fmx WHERE id = 1",
	}} {
		t.Run(c.name, func(t *testing.T) {
			for _, s := range c.setup {
				mustExec(t, f.direct, s)
			}
			f.sync(t)
			for _, s := range c.learn {
				mustExec(t, f.viaA, s)
				f.sync(t)
			}
			time.Sleep(300 * time.Millisecond) // the bumps made again a moment later
			f.warm(t, c.read)
			mustExec(t, f.direct, fmt.Sprintf("INSERT INTO filler SELECT seq, 'x' FROM seq_%d_to_%d", next+1, next+200000))
			next += 200000
			w := conn(t, f.viaA)
			for _, s := range c.write {
				if _, err := queryDump(context.Background(), w, s); err != nil {
					t.Fatalf("%s: %v", s, err)
				}
			}
			f.fresh(t, c.read)
			for _, s := range c.then {
				execOn(t, w, s)
			}
			f.fresh(t, c.read)
		})
	}
}

// TestViewCallsWritingFunction: a read of a view that calls a stored
// function which writes is a write, as SELECT f() is: the session reads
// its own write at once, in a transaction too, and another sidecar reads
// no old row after the read's answer.
func TestViewCallsWritingFunction(t *testing.T) {
	m := privateDB(t)
	f := startFleet(t, m, mysqlproxy.Config{})
	for _, s := range []string{
		"CREATE TABLE t (id INT PRIMARY KEY, v INT)", "INSERT INTO t VALUES (1, 0)",
		"CREATE FUNCTION bump() RETURNS INT DETERMINISTIC MODIFIES SQL DATA BEGIN UPDATE t SET v = v + 1 WHERE id = 1; RETURN 1; END",
		"CREATE VIEW vw AS SELECT bump() AS x",
		"CREATE VIEW vw2 AS SELECT x FROM vw",
	} {
		mustExec(t, f.direct, s)
	}
	f.sync(t)
	const q = "SELECT v FROM t WHERE id = 1"
	a, b := conn(t, f.viaA), conn(t, f.viaB)
	want := readInt(t, a, q)
	for i, stmts := range [][]string{
		{"SELECT * FROM vw"},
		{"SELECT x FROM vw2"},
		{"DO (SELECT x FROM vw)"},
		{"SET @z = (SELECT x FROM vw)"},
		{"BEGIN", "SELECT * FROM vw"},
	} {
		warmOn(t, f.viaA, a, q)
		warmOn(t, f.viaB, b, q)
		for _, s := range stmts {
			execOn(t, a, s)
		}
		want++
		if got := readInt(t, a, q); got != want {
			t.Errorf("%d: right after %q the session read %d, want %d", i, stmts, got, want)
		}
		if stmts[0] == "BEGIN" {
			execOn(t, a, "COMMIT")
		}
		if got := readInt(t, b, q); got != want {
			t.Errorf("%d: right after %q another sidecar read %d, want %d", i, stmts, got, want)
		}
	}
}

// TestPassthroughRoutineWrites: a --passthrough sidecar caches nothing,
// but a stored function that writes, run by a SELECT through it,
// invalidates what it may have written for the sidecars that cache.
func TestPassthroughRoutineWrites(t *testing.T) {
	m := privateDB(t)
	db := m.NewDatabase(t)
	for _, s := range []string{
		"CREATE TABLE t (id INT PRIMARY KEY, v INT)", "INSERT INTO t VALUES (1, 1)",
		"CREATE FUNCTION bump() RETURNS INT DETERMINISTIC MODIFIES SQL DATA BEGIN UPDATE t SET v = v + 1 WHERE id = 1; RETURN 1; END",
	} {
		m.Exec(t, "USE "+db+"; "+s)
	}
	mc := privateMemcached(t)
	pass := startProxy(t, mysqlproxy.Config{Backend: m.Addr, Memcached: []string{mc.Addr}, Passthrough: true})
	caching := startProxy(t, mysqlproxy.Config{Backend: m.Addr, Memcached: []string{mc.Addr}, MemcachedTimeout: 5 * time.Second})
	via := openDB(t, rootDSN(caching.addr, db, ""))
	writer := openDB(t, rootDSN(pass.addr, db, ""))
	direct := openDB(t, rootDSN(m.Addr, db, ""))
	reader := conn(t, via)
	const q = "SELECT v FROM t WHERE id = 1"
	for _, w := range []string{"SELECT bump()", "SELECT bump() + 1 AS x"} {
		warmOn(t, via, reader, q)
		mustExec(t, writer, w)
		if got, want := connDump(reader, q), dump(t, direct, q); got != want {
			t.Errorf("right after %q through a passthrough sidecar, a caching one read %s, want %s (stale)", w, got, want)
		}
	}
}
