package binlog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/mycached/mycached/mysqlproxy/internal/deps"
	"github.com/mycached/mycached/mysqlproxy/internal/meta"
	"github.com/mycached/mycached/mysqlproxy/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Run(m)) }

// bumpLog records the follower's bumps. While held, a bump waits for
// release, as one to a slow memcached does.
type bumpLog struct {
	mu    sync.Mutex
	calls [][]string
	hold  chan struct{} // nil: bumps return at once
}

func (b *bumpLog) bump(ctx context.Context, ds []string) {
	b.mu.Lock()
	b.calls = append(b.calls, append([]string(nil), ds...))
	hold := b.hold
	b.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
		}
	}
}

func (b *bumpLog) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.calls)
}

// follow starts a follower of db with server id id, whose bumps log
// records. No settle bump comes during a test: every bump counted is one
// of a commit.
func follow(t *testing.T, db *testenv.MariaDB, id uint32) (*Follower, *meta.Meta, *bumpLog) {
	t.Helper()
	m, err := meta.Open(context.Background(), meta.Options{Addr: db.Addr, User: testenv.BinlogUser, Password: testenv.BinlogPassword})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	log := &bumpLog{}
	f, err := Start(Options{
		Addr: db.Addr, User: testenv.BinlogUser, Password: testenv.BinlogPassword,
		ServerID: id, Meta: m, Bump: log.bump, Settle: time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f, m, log
}

// waitApplied waits until the follower has applied every transaction the
// server has committed.
func waitApplied(t *testing.T, f *Follower, db *testenv.MariaDB) {
	t.Helper()
	pos := db.QueryString(t, "SELECT @@gtid_binlog_pos")
	deadline := time.Now().Add(30 * time.Second)
	for !f.Applied(pos) {
		if time.Now().After(deadline) {
			t.Fatalf("the follower did not apply %s: it is at %s", pos, f.Status().Position)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestGroupCommit: transactions that pile up while a bump is in flight
// are bumped together, in one call, and no position is recorded before
// its transaction's bump has returned.
func TestGroupCommit(t *testing.T) {
	env := testenv.Shared(t)
	db := env.DB
	name := db.NewDatabase(t)
	db.Exec(t, "CREATE TABLE "+name+".t (id INT PRIMARY KEY, v INT)")

	f, m, log := follow(t, db, 4242)
	db.Exec(t, "INSERT INTO "+name+".t VALUES (0, 0)")
	waitApplied(t, f, db)

	// A bump that does not return: the next transaction's position must
	// wait for it, and the transactions behind it pile up.
	hold := make(chan struct{})
	log.mu.Lock()
	log.hold = hold
	log.mu.Unlock()
	before := log.count()
	db.Exec(t, "UPDATE "+name+".t SET v = 1 WHERE id = 0")
	first := db.QueryString(t, "SELECT @@gtid_binlog_pos")
	for log.count() == before {
		time.Sleep(time.Millisecond)
	}
	const n = 200
	for i := 1; i <= n; i++ {
		db.Exec(t, "INSERT INTO "+name+".t VALUES (?, 0)", i)
	}
	last := db.QueryString(t, "SELECT @@gtid_binlog_pos")
	// Let the stream receive them while the bump is held.
	time.Sleep(200 * time.Millisecond)
	if f.Applied(first) {
		t.Fatalf("position %s recorded before its bump returned", first)
	}
	held := log.count()
	log.mu.Lock()
	log.hold = nil
	log.mu.Unlock()
	close(hold)
	deadline := time.Now().Add(30 * time.Second)
	for !f.Applied(last) {
		if time.Now().After(deadline) {
			t.Fatalf("the follower did not apply %s: it is at %s", last, f.Status().Position)
		}
		time.Sleep(5 * time.Millisecond)
	}

	log.mu.Lock()
	calls := log.calls[held:]
	log.mu.Unlock()
	// The stream may split the pile where its reader was, so allow a
	// few calls; one per transaction is what grouping removes.
	if len(calls) > 5 {
		t.Errorf("%d transactions took %d bumps after the held one; want them grouped", n, len(calls))
	}
	seen := map[string]bool{}
	for _, c := range calls {
		for _, d := range c {
			seen[d] = true
		}
	}
	table := m.Namer().Table(name, "t")
	for i := 1; i <= n; i++ {
		if d := deps.Row(table, []string{strconv.Itoa(i)}); !seen[d] {
			t.Fatalf("row %d was never bumped (bumps: %v)", i, calls)
		}
	}
	if st := f.Status(); st.Transactions < n+2 {
		t.Errorf("Transactions = %d, want at least %d", st.Transactions, n+2)
	}
}

// TestLongTransactionBumpsEarly: a transaction that names more rows of a
// table than the follower bumps one by one is bumped as its events are
// read, not only at its end: on a busy machine a statement over a
// hundred thousand rows takes seconds to decode, and the cache served
// the rows it changed all that time. The table's non-key generation
// stands for its rows then.
func TestLongTransactionBumpsEarly(t *testing.T) {
	env := testenv.Shared(t)
	db := env.DB
	name := db.NewDatabase(t)
	db.Exec(t, "CREATE TABLE "+name+".t (id INT PRIMARY KEY, v INT)")
	db.Exec(t, "INSERT INTO "+name+".t SELECT seq, 0 FROM "+name+".seq_1_to_5000")

	f, m, log := follow(t, db, 4243)
	waitApplied(t, f, db)
	before := log.count()
	db.Exec(t, "UPDATE "+name+".t SET v = v + 1")
	waitApplied(t, f, db)

	table := m.Namer().Table(name, "t")
	log.mu.Lock()
	calls := log.calls[before:]
	log.mu.Unlock()
	n := 0
	for _, c := range calls {
		if slices.Contains(c, deps.NonKey(table)) {
			n++
		}
		if len(c) > maxRowDeps+8 {
			t.Errorf("a bump of %d generations for a transaction on one table", len(c))
		}
	}
	// An early bump made before the transaction had named 1,000 rows
	// names rows; its end names the non-key generation.
	if n == 0 || !slices.Contains(calls[len(calls)-1], deps.NonKey(table)) {
		t.Errorf("the table's non-key generation was bumped %d times (bumps: %d calls), want it at the transaction's end", n, len(calls))
	}
	if st := f.Status(); st.EarlyBumps == 0 {
		t.Errorf("EarlyBumps = 0 after a 5,000-row transaction")
	}
}

// TestEventThatPanics: an event the follower fails on does not end the
// process; it invalidates everything, at once and again once settled.
func TestEventThatPanics(t *testing.T) {
	var log bumpLog
	f := &Follower{opts: Options{Bump: log.bump, Settle: time.Millisecond}, log: slog.New(slog.DiscardHandler),
		ctx: context.Background(), xa: map[string][]string{}}
	var tx txn
	// A rows event with no header: handle reads its type from the header.
	f.handleSafe(&tx, &replication.BinlogEvent{Event: &replication.RowsEvent{}})
	if log.count() != 1 || !slices.Equal(log.calls[0], []string{deps.Global}) {
		t.Fatalf("bumps after the event: %v, want one of the global generation", log.calls)
	}
	time.Sleep(2 * time.Millisecond)
	f.settleDue(time.Now())
	if log.count() != 2 || !slices.Equal(log.calls[1], []string{deps.Global}) {
		t.Fatalf("bumps once settled: %v, want a second one of the global generation", log.calls)
	}
	if n := f.lost.Load(); n != 1 {
		t.Errorf("lost positions counted: %d, want 1", n)
	}
}

// TestIncidentEvent: an incident the server logged (changes it could not
// log) invalidates everything, at once and again once settled.
func TestIncidentEvent(t *testing.T) {
	var log bumpLog
	f := &Follower{opts: Options{Bump: log.bump, Settle: time.Millisecond}, log: slog.New(slog.DiscardHandler),
		ctx: context.Background(), xa: map[string][]string{}}
	var tx txn
	f.handleSafe(&tx, &replication.BinlogEvent{Header: &replication.EventHeader{EventType: replication.INCIDENT_EVENT},
		Event: &replication.GenericEvent{Data: []byte{1, 0, 0}}})
	if log.count() != 1 || !slices.Equal(log.calls[0], []string{deps.Global}) {
		t.Fatalf("bumps after the incident: %v, want one of the global generation", log.calls)
	}
	time.Sleep(2 * time.Millisecond)
	f.settleDue(time.Now())
	if log.count() != 2 {
		t.Fatalf("bumps once settled: %v, want a second one", log.calls)
	}
}

func TestIsUnreadable(t *testing.T) {
	if !isUnreadable(errors.New("panic runtime error: index out of range [3] with length 3\nstack: ...")) {
		t.Error("go-mysql's recovered panic is not seen as an unreadable event")
	}
	if isUnreadable(errors.New("connection was bad")) || isUnreadable(nil) {
		t.Error("a lost connection is seen as an unreadable event")
	}
}

// followerAt returns a follower, not started, whose applied position is
// pos.
func followerAt(t *testing.T, pos string) *Follower {
	t.Helper()
	set, err := mysql.ParseMariadbGTIDSet(pos)
	if err != nil {
		t.Fatal(err)
	}
	f := &Follower{applied: set.(*mysql.MariadbGTIDSet)}
	f.resetRecentLocked()
	return f
}

// TestDepsThrough: the dependencies bumped for the transactions after a
// position up to a GTID come from the recent groups, and only while none
// in between was forgotten or skipped.
func TestDepsThrough(t *testing.T) {
	f := followerAt(t, "0-1-10")
	apply := func(seq uint64, deps ...string) {
		g := recentGroup{pos: []gtidPos{{0, seq}}, deps: deps}
		if err := f.applied.AddSet(&mysql.MariadbGTID{DomainID: 0, ServerID: 1, SequenceNumber: seq}); err != nil {
			t.Fatal(err)
		}
		f.rememberLocked(g)
	}
	from := f.AppliedSeqs()
	apply(11, "a")
	apply(12, "b", "a")
	if _, ok := f.DepsThrough(from, "0-1-13"); ok {
		t.Error("a GTID not applied yet: DepsThrough answered")
	}
	apply(13, "c")
	apply(14, "d")
	got, ok := f.DepsThrough(from, "0-1-13")
	slices.Sort(got)
	if !ok || !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("DepsThrough(10, 0-1-13) = %q, %v; want a, b, c", got, ok)
	}
	if got, ok := f.DepsThrough(map[uint32]uint64{0: 12}, "0-1-13"); !ok || !slices.Equal(got, []string{"c"}) {
		t.Errorf("DepsThrough(12, 0-1-13) = %q, %v; want c", got, ok)
	}
	// Groups forgotten past recentGroups: a range reaching back to them
	// cannot be told, a later one can.
	for seq := uint64(15); seq < 15+recentGroups; seq++ {
		apply(seq, "x")
	}
	if _, ok := f.DepsThrough(from, "0-1-20"); ok {
		t.Error("a range whose first groups were forgotten: DepsThrough answered")
	}
	last := uint64(14 + recentGroups)
	if got, ok := f.DepsThrough(map[uint32]uint64{0: last - 1}, fmt.Sprintf("0-1-%d", last)); !ok || !slices.Equal(got, []string{"x"}) {
		t.Errorf("the last group: %q, %v", got, ok)
	}
	// Large groups are forgotten sooner: the dependencies kept are
	// bounded too.
	big := make([]string, recentMaxDeps/2+1)
	for i := range big {
		big[i] = strconv.Itoa(i)
	}
	before := f.AppliedSeqs()
	apply(last+1, big...)
	apply(last+2, big...)
	if f.recentDeps > recentMaxDeps {
		t.Errorf("the recent groups hold %d dependencies, more than %d", f.recentDeps, recentMaxDeps)
	}
	if _, ok := f.DepsThrough(before, fmt.Sprintf("0-1-%d", last+2)); ok {
		t.Error("a range whose first group was forgotten for its size: DepsThrough answered")
	}
	if got, ok := f.DepsThrough(map[uint32]uint64{0: last + 1}, fmt.Sprintf("0-1-%d", last+2)); !ok || len(got) != len(big) {
		t.Errorf("the last large group: %d dependencies, %v", len(got), ok)
	}
	last += 2
	// A position set, not reached (a lost position): what came before it
	// was never read.
	cur := f.AppliedSeqs()
	skipped, _ := mysql.ParseMariadbGTIDSet(fmt.Sprintf("0-1-%d", last+100))
	f.applied = skipped.(*mysql.MariadbGTIDSet)
	f.resetRecentLocked()
	if _, ok := f.DepsThrough(cur, fmt.Sprintf("0-1-%d", last+50)); ok {
		t.Error("transactions skipped by a lost position: DepsThrough answered")
	}
}

// TestResetPending: once the server's binlog went back (RESET MASTER),
// and until the follower follows on from the new position, the new
// binlog's transactions are not applied, though the old position's
// numbers are past theirs.
func TestResetPending(t *testing.T) {
	f := followerAt(t, "0-1-10")
	from := f.AppliedSeqs()
	empty, _ := mysql.ParseMariadbGTIDSet("")
	f.resetTo = empty.(*mysql.MariadbGTIDSet)
	if f.Applied("0-1-1") {
		t.Error("the new binlog's first transaction: Applied said yes")
	}
	if ds, ok := f.DepsThrough(from, "0-1-1"); ok {
		t.Errorf("the new binlog's first transaction: DepsThrough answered %q", ds)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if f.WaitApplied(ctx, "0-1-1") {
		t.Error("the new binlog's first transaction: WaitApplied said yes")
	}
}

// TestResetBeforeTheStream: a poll that finds the server's binlog went
// back while no stream was there to stop (one had ended, the next was
// starting) must still have the follower follow the new position: the
// stream that starts then stops at once, and the run loop takes the
// reset, which it does only when a stream stopped.
func TestResetBeforeTheStream(t *testing.T) {
	f := followerAt(t, "0-1-10")
	f.opts.Addr, f.opts.ServerID = "127.0.0.1:1", 99 // never dialed
	f.ctx = context.Background()
	f.log = slog.New(slog.DiscardHandler)
	f.opts.Bump = func(context.Context, []string) {}
	f.serverWentBack("0-1-3", "test")
	if err := f.follow(); !errors.Is(err, context.Canceled) {
		t.Fatalf("follow with a reset pending: %v, want it stopped at once", err)
	}
}

// TestResetForgetsPolls: the server positions polls read of a binlog
// that RESET MASTER replaced are never reached in the new numbering;
// after the reset, the follower is fresh again once it reaches a poll of
// the new binlog.
func TestResetForgetsPolls(t *testing.T) {
	f := followerAt(t, "0-1-100")
	f.log = slog.New(slog.DiscardHandler)
	f.opts.Bump = func(context.Context, []string) {}
	f.ctx = context.Background()
	f.running, f.formatRead = true, true
	t0 := time.Now()
	f.polls = []poll{{at: t0, pos: map[uint32]uint64{0: 200}}}
	f.serverWentBack("0-1-5", "test")
	// What the run goroutine does once the old stream has stopped.
	f.mu.Lock()
	f.applied, f.resetTo = f.resetTo, nil
	f.polls = append(f.polls, poll{at: t0.Add(time.Second), pos: map[uint32]uint64{0: 5}})
	f.advanceLocked()
	f.mu.Unlock()
	if got := f.FreshAsOf(); !got.Equal(t0.Add(time.Second)) {
		t.Errorf("after the reset, fresh as of %v, want the new binlog's poll at %v", got, t0.Add(time.Second))
	}
}

// TestFreshPastASequenceThatWentBack: a poll read between two writes of
// a domain whose numbers went back (5, then 3: gtid_seq_no set by hand)
// is never reached by the domain's number; a later poll that is reached
// makes the follower fresh as of then, the earlier one with it.
func TestFreshPastASequenceThatWentBack(t *testing.T) {
	f := followerAt(t, "0-1-10,7-1-3")
	f.running, f.formatRead = true, true
	t0 := time.Now()
	f.mu.Lock()
	f.polls = []poll{
		{at: t0, pos: map[uint32]uint64{0: 10, 7: 5}},
		{at: t0.Add(100 * time.Millisecond), pos: map[uint32]uint64{0: 10, 7: 3}},
		{at: t0.Add(200 * time.Millisecond), pos: map[uint32]uint64{0: 11, 7: 3}},
	}
	f.advanceLocked()
	left := len(f.polls)
	f.mu.Unlock()
	if got, want := f.FreshAsOf(), t0.Add(100*time.Millisecond); !got.Equal(want) {
		t.Errorf("fresh as of %v, want the reached poll's %v", got, want)
	}
	if left != 1 {
		t.Errorf("%d polls kept, want the one not reached yet", left)
	}
}

// TestFreshWaitsForTheFormatEvent: a new stream's first format event
// tells whether the server restarted (and emptied its MEMORY tables) with
// no write since, at the position the follower stands: until it is read,
// a poll that finds the server there does not make the follower fresh.
func TestFreshWaitsForTheFormatEvent(t *testing.T) {
	f := followerAt(t, "0-1-100")
	f.log = slog.New(slog.DiscardHandler)
	f.opts.Bump = func(context.Context, []string) {}
	f.ctx = context.Background()
	f.formatSeen, f.runStart = true, 1000
	f.running = true
	t0 := time.Now()
	f.mu.Lock()
	f.polls = []poll{{at: t0, pos: map[uint32]uint64{0: 100}}}
	f.advanceLocked()
	f.mu.Unlock()
	if got := f.FreshAsOf(); !got.IsZero() {
		t.Errorf("before the stream's format event, fresh as of %v", got)
	}
	f.format(1000) // the same run of the server
	if got := f.FreshAsOf(); !got.Equal(t0) {
		t.Errorf("after the format event, fresh as of %v, want the poll's %v", got, t0)
	}
}

// TestWaitApplied: WaitApplied returns once a group holding the GTID is
// applied, and false when its context ends first.
func TestWaitApplied(t *testing.T) {
	f := followerAt(t, "0-1-10")
	if !f.WaitApplied(context.Background(), "0-1-9") {
		t.Error("a GTID applied before: WaitApplied said no")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if f.WaitApplied(ctx, "0-1-11") {
		t.Error("a GTID never applied: WaitApplied said yes")
	}
	go func() {
		time.Sleep(20 * time.Millisecond)
		f.group.txns = append(f.group.txns, queued{gtid: &mysql.MariadbGTID{DomainID: 0, ServerID: 1, SequenceNumber: 11}, applied: true})
		f.flush()
	}()
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if !f.WaitApplied(ctx, "0-1-11") {
		t.Error("a GTID applied while waiting: WaitApplied said no")
	}
}

// TestSavedPosition reads back what save writes, and older saves without
// a place in the binlog, and tells positions apart by server and number.
func TestSavedPosition(t *testing.T) {
	for _, tc := range []struct {
		saved, pos string
		at         binlogAt
		mark       *resetMark
	}{
		{"0-1-5", "0-1-5", binlogAt{}, nil},
		{"0-1-5,1-2-9 at bin.000003:1151", "0-1-5,1-2-9", binlogAt{"bin.000003", 1151}, nil},
		{"0-1-5 at my:bin.000001:4", "0-1-5", binlogAt{"my:bin.000001", 4}, nil},
		{"0-1-5 at bin.000001", "0-1-5", binlogAt{}, nil},
		{"0-1-5 at bin.000001:x", "0-1-5", binlogAt{}, nil},
		{"", "", binlogAt{}, nil},
		{"0-1-5 at bin.000003:1151 resets 2 since 1790000000", "0-1-5", binlogAt{"bin.000003", 1151}, &resetMark{2, 1790000000}},
		{"0-1-5 resets 0 since 1790000000", "0-1-5", binlogAt{}, &resetMark{0, 1790000000}},
		{"0-1-5 at bin.000003:1151 resets x since 1", "0-1-5", binlogAt{"bin.000003", 1151}, nil},
	} {
		pos, at, mark, born, _ := parseSaved(tc.saved)
		if born != 0 {
			t.Errorf("parseSaved(%q): created %d, want 0 (not saved)", tc.saved, born)
		}
		if pos != tc.pos || at != tc.at || (mark == nil) != (tc.mark == nil) || mark != nil && *mark != *tc.mark {
			t.Errorf("parseSaved(%q) = %q, %v, %v; want %q, %v, %v", tc.saved, pos, at, mark, tc.pos, tc.at, tc.mark)
		}
		if at.file != "" && mark != nil {
			if s := pos + " at " + at.String() + " resets " + mark.String(); s != tc.saved {
				t.Errorf("saved again as %q, want %q", s, tc.saved)
			}
		} else if at.file != "" && !strings.Contains(tc.saved, " resets ") {
			if s := pos + " at " + at.String(); s != tc.saved {
				t.Errorf("saved again as %q, want %q", s, tc.saved)
			}
		}
	}
	// The creation time of the file that holds the position.
	for saved, want := range map[string]uint32{
		"0-1-5 at bin.000003:1151 born 1796529703 resets 2 since 1790000000": 1796529703,
		"0-1-5 at bin.000003:1151 born 1796529703":                           1796529703,
		"0-1-5 born 1796529703":                                              0, // no file
		"0-1-5 at bin.000003:1151 born x":                                    0,
		"0-1-5 at bin.000003:1151 born 99999999999":                          0,
	} {
		pos, at, _, born, _ := parseSaved(saved)
		if pos != "0-1-5" || born != want || (want != 0 && at != binlogAt{"bin.000003", 1151}) {
			t.Errorf("parseSaved(%q) = %q, %v, created %d; want 0-1-5, created %d", saved, pos, at, born, want)
		}
	}
	// The creation time of the binlog the server's run opened at its
	// start, when the position was saved.
	for saved, want := range map[string]int64{
		"0-1-5 at bin.000003:1151 born 1796529703 run 1796529000 resets 2 since 1790000000": 1796529000,
		"0-1-5 at bin.000003:1151 run 1796529000":                                           1796529000,
		"0-1-5 run 0": 0,
		"0-1-5 at bin.000003:1151 born 1796529703": -1,
		"0-1-5 run x": -1,
	} {
		pos, _, _, _, run := parseSaved(saved)
		if pos != "0-1-5" || run != want {
			t.Errorf("parseSaved(%q) = %q, run %d; want 0-1-5, run %d", saved, pos, run, want)
		}
	}
	if !(resetMark{1, 100}).sameRun(resetMark{1, 102}) || (resetMark{1, 100}).sameRun(resetMark{1, 110}) {
		t.Error("sameRun: a start read 2 s apart is the same run, 10 s apart another")
	}
	set := func(s string) *mysql.MariadbGTIDSet {
		g, err := mysql.ParseMariadbGTIDSet(s)
		if err != nil {
			t.Fatal(err)
		}
		return g.(*mysql.MariadbGTIDSet)
	}
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"0-1-5", "0-1-5", true},
		{"0-1-5,1-1-3", "1-1-3,0-1-5", true},
		{"0-1-5", "0-2-5", false},
		{"0-1-5", "0-1-6", false},
		{"0-1-5", "0-1-5,1-1-1", false},
		{"", "0-1-5", false},
	} {
		if got := samePos(set(tc.a), set(tc.b)); got != tc.same {
			t.Errorf("samePos(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.same)
		}
	}
}

// TestTimedOut: a stream cut by its read deadline is told from one the
// server ended. go-mysql formats the cause into its error's text, as the
// first and third cases do.
func TestTimedOut(t *testing.T) {
	deadline := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	for _, c := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("%w: io.ReadFull(header) failed. err %v", mysql.ErrBadConn, deadline), true},
		{fmt.Errorf("reading: %w", deadline), true},
		{fmt.Errorf("%w: io.ReadFull(header) failed. err %v", mysql.ErrBadConn, io.EOF), false},
		{fmt.Errorf("%w: io.ReadFull(header) failed. err %v", mysql.ErrBadConn, syscall.ECONNRESET), false},
		{&mysql.MyError{Code: 1053, Message: "Server shutdown in progress"}, false},
	} {
		if got := timedOut(c.err); got != c.want {
			t.Errorf("timedOut(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
