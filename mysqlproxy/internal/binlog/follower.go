// Package binlog follows the backend's binary log, so that every write
// that commits on the server invalidates what it changed, whether it came
// through this sidecar, another one, or no sidecar at all: triggers,
// foreign-key cascades, stored routines, events and other applications
// included. It reads row events with go-mysql's replication package, maps
// them to the generations that cached entries depend on, and bumps those
// at each transaction's commit.
package binlog

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/mycached/mycached/mysqlproxy/internal/deps"
	"github.com/mycached/mycached/mysqlproxy/internal/meta"
)

// Options configures a Follower. Zero fields get the documented defaults.
type Options struct {
	Addr     string // the backend, host:port
	User     string // an account with REPLICATION SLAVE
	Password string
	TLS      *tls.Config // nil: plain TCP
	// ServerID is the replica id the follower registers with; every
	// sidecar needs its own. Required.
	ServerID uint32
	// Meta learns primary keys, foreign keys and MERGE unions. Required.
	Meta *meta.Meta
	// Bump invalidates deps. It must reach the shared tier before the
	// local view. Required.
	Bump func(ctx context.Context, deps []string)
	// Poll is how often the server's binlog position is read, to tell how
	// current the follower is (default 100ms), while its freshness is
	// asked for (FreshAsOf, CurrentAsOf, Wait).
	Poll time.Duration
	// IdlePoll is how often it is read while nothing has asked for the
	// follower's freshness for that long (default Poll): an idle sidecar
	// need not query the server ten times a second. Set it below the
	// staleness bound, so that the first read after a quiet spell finds
	// the follower current.
	IdlePoll time.Duration
	// Heartbeat is the period of the server's heartbeats while the binlog
	// is idle (default 1s); a connection silent for three of them is
	// dropped and dialed again.
	Heartbeat time.Duration
	// Settle is how long after a transaction's commit event its changes
	// may still be invisible to other sessions; its dependencies are
	// bumped again after it (default meta's SettleDelay).
	Settle time.Duration
	// State saves and restores the position between runs; nil keeps it
	// in memory only.
	State PositionStore
	// Logger receives the follower's state changes (default slog.Default()).
	Logger *slog.Logger
}

// PositionStore keeps the follower's position across restarts.
type PositionStore interface {
	// Load returns the saved position, or "" when there is none.
	Load() (string, error)
	// Save records a position every transaction up to which has been
	// applied: a GTID position, and, when the follower knows it, " at "
	// and where in the server's binlog it lies ("bin.000003:1234").
	Save(pos string) error
}

// binlogAt is a place in the server's binlog: a file, and an offset in it
// where an event begins.
type binlogAt struct {
	file string
	end  uint32
}

func (a binlogAt) String() string { return a.file + ":" + strconv.FormatUint(uint64(a.end), 10) }

// resetMark is the server's count of RESET statements (Com_reset) and
// when the server started, to the second: the count of one run.
type resetMark struct {
	n       uint64
	started int64 // Unix seconds
}

func (m resetMark) String() string {
	return strconv.FormatUint(m.n, 10) + " since " + strconv.FormatInt(m.started, 10)
}

// sameRun reports whether two marks were read from the same run of the
// server: its start, read as the time less its uptime, may differ by a
// second or two.
func (m resetMark) sameRun(o resetMark) bool {
	return max(m.started-o.started, o.started-m.started) <= 2
}

// parseMark parses a resetMark's String, or returns nil.
func parseMark(s string) *resetMark {
	n, since, ok := strings.Cut(s, " since ")
	if !ok {
		return nil
	}
	c, err1 := strconv.ParseUint(n, 10, 64)
	t, err2 := strconv.ParseInt(since, 10, 64)
	if err1 != nil || err2 != nil {
		return nil
	}
	return &resetMark{n: c, started: t}
}

// markEvery is how often a poll reads the count of RESET statements:
// SHOW GLOBAL STATUS sums the counters of every session on the server.
const markEvery = time.Second

// parseSaved splits a saved position into the GTID position, where in
// the binlog that position lies, the server's count of RESET statements,
// and when the binlog file that holds the position was created (0 when
// not known), when they were saved.
func parseSaved(saved string) (string, binlogAt, *resetMark, uint32, int64) {
	saved, m, _ := strings.Cut(saved, " resets ")
	mark := parseMark(m)
	saved, r, _ := strings.Cut(saved, " run ")
	run := int64(-1)
	if n, err := strconv.ParseUint(r, 10, 32); err == nil {
		run = int64(n)
	}
	saved, b, _ := strings.Cut(saved, " born ")
	pos, at := parsePlace(saved)
	born, err := strconv.ParseUint(b, 10, 32)
	if err != nil || at.file == "" {
		born = 0
	}
	return pos, at, mark, uint32(born), run
}

// bornLocked returns when the server created a binlog file the stream
// read lately, or 0 when not known.
func (f *Follower) bornLocked(file string) uint32 {
	for _, b := range f.born {
		if b.file == file && file != "" {
			return b.ts
		}
	}
	return 0
}

// fileBorn is a binlog file and when the server created it, as the
// timestamp of the format event that begins it says. A file of the same
// name created at another time is another file: RESET MASTER numbers
// the files from the start again.
type fileBorn struct {
	file string
	ts   uint32
}

// parsePlace splits a saved position into the GTID position and, when it
// was saved, where in the binlog that position lies.
func parsePlace(saved string) (string, binlogAt) {
	pos, place, ok := strings.Cut(saved, " at ")
	if !ok {
		return saved, binlogAt{}
	}
	i := strings.LastIndexByte(place, ':')
	if i <= 0 {
		return pos, binlogAt{}
	}
	end, err := strconv.ParseUint(place[i+1:], 10, 32)
	if err != nil {
		return pos, binlogAt{}
	}
	return pos, binlogAt{file: place[:i], end: uint32(end)}
}

// Follower follows the binlog. Its methods are safe for concurrent use.
type Follower struct {
	opts  Options
	log   *slog.Logger
	namer deps.Namer

	// want is set when the follower's freshness is asked for, and
	// wantedAt (unix ns) is the last tick that found it set.
	want     atomic.Bool
	wantedAt atomic.Int64

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex // protects the fields below
	applied *mysql.MariadbGTIDSet
	// at is where in the binlog applied lies, when the follower read it
	// there (not after a start without a position, or a lost one).
	at    binlogAt
	polls []poll // server positions read, not yet reached
	fresh time.Time
	// cut is when the stream was last cut: polls read before it say
	// nothing of what the server did since (a restart empties MEMORY
	// tables, unlogged).
	cut     time.Time
	running bool
	// formatRead says the stream has sent a format event, and a restart
	// it told of was handled: till then a poll that finds the server
	// where the follower stands proves nothing (a server that restarted
	// with no write since is at the same position, its MEMORY tables
	// emptied).
	formatRead bool
	lastErr    string
	lastMsg    time.Time
	lastTS     uint32 // header timestamp of the last event applied
	settling   []settle
	// settlingNow counts settle bumps taken off settling and not yet done.
	settlingNow int

	xa map[string][]string // prepared XA transactions' dependencies, by xid

	// resetTo is the server's position after its binlog went back, for
	// the follow goroutine to follow from once its stream has stopped;
	// stopStream stops the stream being read.
	resetTo    *mysql.MariadbGTIDSet
	stopStream context.CancelFunc
	// jumps counts the times the applied position was set to the
	// server's, not reached by applying (followFromServer, resetTo): a
	// poll that read the server's position across one compares it with
	// a position no longer the follower's.
	jumps int

	// globals are the result-changing global variables the last poll
	// read; globalsSeen says one did.
	globals     string
	globalsSeen bool
	// unloggedSaid is when a change the binlog does not show was last
	// logged; only the tick goroutine uses it.
	unloggedSaid time.Time

	// savedRun is runStart once a format event was read (formatSeen),
	// -1 before, for save (the tick goroutine).
	savedRun atomic.Int64
	// runStart is the creation time of the binlog a run of the server
	// opened at its start, as its format event says, for the last such
	// binlog read (0 before any, and for a file opened by a rotation);
	// formatSeen says a format event was read at all. Only the follow
	// goroutine uses them.
	runStart   uint32
	formatSeen bool
	// file is the binlog file being read, and evEnd the offset where the
	// last event read ends; only the follow goroutine uses them.
	file  string
	evEnd uint32
	// verify is where the saved position lay in the binlog, to be checked
	// against the server's before following from it, and verifyBorn
	// when the server created the file that holds it (0 when not
	// saved); only the run goroutine uses them.
	verify     binlogAt
	verifyBorn uint32
	// born are the last two binlog files whose format events the stream
	// read, newest first, with their creation times (the applied
	// position may still lie in the file before the one being read);
	// protected by mu.
	born [2]fileBorn
	// startAt, when set, is where the next stream starts, by file and
	// offset: the server refused the follower's GTID position, which
	// lies there. Only the run goroutine uses it.
	startAt binlogAt
	// group is the transactions read and not yet bumped; only the
	// follow goroutine uses it.
	group group
	// recent is the last groups bumped, oldest first (see DepsThrough);
	// it holds every transaction applied after recentFrom, per domain.
	recent     []recentGroup
	recentFrom map[uint32]uint64
	recentDeps int // the dependencies recent holds
	// flushed is closed, and replaced, each time a group is applied.
	flushed chan struct{}
	// demand is the server's position being read for CurrentAsOf.
	demand *demand

	events, txns, bumps, reconnects, lost, unlogged atomic.Uint64
	// positionReads counts the reads of the server's position (pollServer,
	// readDemand, Wait).
	positionReads atomic.Uint64
	// earlyBumps counts bumps made before a long transaction's end (see
	// earlyBump).
	earlyBumps atomic.Uint64

	// nudge ends a wait to connect again (see Nudge); unreachable says
	// the last dial of the server failed.
	nudge       chan struct{}
	unreachable atomic.Bool

	// lastTxn is when the last transaction began to arrive (UnixNano).
	lastTxn atomic.Int64
	// stallCheck is when a stream that stopped short of the server's
	// position was last checked, and stallWait how long until the next
	// check; only the tick goroutine uses them.
	stallCheck time.Time
	stallWait  time.Duration
	// mark is the server's count of RESET statements as last read (by a
	// poll, or from the saved position), and markRead when a poll last
	// read it (only the tick goroutine uses that).
	mark     atomic.Pointer[resetMark]
	markRead time.Time
	// verifyMark is the mark saved with the position, to be checked
	// with verify; only the run goroutine uses it.
	verifyMark *resetMark

	// settle is how long after its commit event a transaction is bumped
	// again (Options.Settle); settleFromServer says it follows the
	// server's semi-sync settings, which each poll reads.
	settle           atomic.Int64
	settleFromServer bool
}

// settleDelay returns how long after its commit event a transaction's
// changes may still be invisible to other sessions.
func (f *Follower) settleDelay() time.Duration { return time.Duration(f.settle.Load()) }

// SettleWindow is how long after the follower first bumps a transaction
// its second bump may come (the settle delay, run on the next poll
// tick). Until then, an entry filled between the first bump and the
// moment the transaction became visible may hold the rows from before
// it, under the generations after it.
func (f *Follower) SettleWindow() time.Duration { return f.settleDelay() + f.opts.Poll }

// poll is a server position and the time it was asked for: every
// transaction visible before that time is at or before the position.
type poll struct {
	at  time.Time
	pos map[uint32]uint64 // domain -> sequence number
}

// settle is dependencies to bump again once their transaction's changes
// are surely visible.
type settle struct {
	due  time.Time
	deps []string
}

// Start starts following from the saved position, or from the server's
// current one. With no saved position the follower cannot know what it
// missed, so its first act is a bump of the global generation.
func Start(opts Options) (*Follower, error) {
	if opts.ServerID == 0 || opts.Meta == nil || opts.Bump == nil {
		return nil, errors.New("binlog: ServerID, Meta and Bump are required")
	}
	if opts.Poll <= 0 {
		opts.Poll = 100 * time.Millisecond
	}
	opts.IdlePoll = max(opts.IdlePoll, opts.Poll)
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = time.Second
	}
	fromServer := opts.Settle <= 0
	if fromServer {
		opts.Settle = opts.Meta.Facts().SettleDelay
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	f := &Follower{opts: opts, log: opts.Logger, namer: opts.Meta.Namer(), done: make(chan struct{}), xa: map[string][]string{}, settleFromServer: fromServer,
		nudge: make(chan struct{}, 1)}
	f.settle.Store(int64(opts.Settle))
	f.savedRun.Store(-1)
	f.ctx, f.cancel = context.WithCancel(context.Background())
	pos := ""
	if opts.State != nil {
		p, err := opts.State.Load()
		if err != nil {
			f.log.Warn("binlog: saved position unreadable; starting from the server's", "err", err)
		}
		var run int64
		pos, f.verify, f.verifyMark, f.verifyBorn, run = parseSaved(p)
		if _, err := mysql.ParseMariadbGTIDSet(pos); err != nil {
			// A position that cannot be read is lost, as a missing one.
			f.log.Warn("binlog: saved position unreadable; starting from the server's", "saved", p, "err", err)
			pos, f.verify, f.verifyMark, f.verifyBorn, run = "", binlogAt{}, nil, 0, -1
		}
		if run >= 0 {
			// The server's run when the position was saved (0: its
			// start was not read): a stream that reads another run's
			// first binlog means a restart while the sidecar was down,
			// which emptied MEMORY tables unlogged.
			f.runStart, f.formatSeen = uint32(run), true
			f.savedRun.Store(run)
		}
	}
	if pos == "" {
		cur, err := opts.Meta.BinlogPos(f.ctx)
		if err != nil {
			return nil, fmt.Errorf("binlog: reading the server's position: %w", err)
		}
		pos = cur
		f.lostPosition("no saved position")
	}
	set, err := mysql.ParseMariadbGTIDSet(pos)
	if err != nil {
		return nil, fmt.Errorf("binlog: position %q: %w", pos, err)
	}
	f.applied = set.(*mysql.MariadbGTIDSet)
	f.resetRecentLocked()
	go f.run()
	go f.tick()
	return f, nil
}

// Nudge has a follower that waits to connect again, after a failure,
// try at once: the server answers again (a session reached it). A
// follower that is not waiting is not disturbed.
func (f *Follower) Nudge() {
	f.mu.Lock()
	waiting := !f.running
	f.mu.Unlock()
	if waiting {
		select {
		case f.nudge <- struct{}{}:
		default:
		}
	}
}

// Close stops following and saves the position.
func (f *Follower) Close() {
	f.cancel()
	<-f.done
	f.save()
}

// timedOut reports a stream cut by its own read deadline. go-mysql
// formats the cause into its error's text.
func timedOut(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() || strings.Contains(err.Error(), "i/o timeout")
}

// FreshAsOf returns a time before which every committed change has been
// applied: a read served from the local view is stale by at most
// time.Since(FreshAsOf()). The zero time means never, or not since the
// stream was last cut.
func (f *Follower) FreshAsOf() time.Time {
	f.wanted()
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fresh
}

// Applied reports whether the transaction of gtid, a MariaDB GTID as
// @@last_gtid gives it, has been applied, its bumps made. A GTID it
// cannot read is not.
func (f *Follower) Applied(gtid string) bool {
	want, err := parsePos(gtid)
	if err != nil {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return reached(f.appliedLocked(), want)
}

// lostPosition bumps the global generation: the follower cannot know what
// changed since the position it lost. Nor can it know what DDL it missed,
// so what Meta learned of tables (keys, columns, engines, what their
// writes write too) is learned again.
func (f *Follower) lostPosition(why string) {
	f.lost.Add(1)
	f.log.Warn("binlog: position lost; every cached entry is invalidated", "why", why)
	f.forgetTables()
	f.opts.Bump(f.ctx, []string{deps.Global})
}

// forgetGrants makes Meta read the grant tables again (GrantsByAddress).
func (f *Follower) forgetGrants() {
	if f.opts.Meta != nil {
		f.opts.Meta.ForgetGrants()
	}
}

// mysqlWritten notes rows written in the mysql schema: to a grant table,
// they tell the server's grants only once it loads them again
// (meta.GrantTablesEdited).
func (f *Follower) mysqlWritten(table string) {
	switch {
	case f.opts.Meta == nil:
	case meta.IsGrantTable(table):
		f.opts.Meta.GrantTablesEdited()
	default:
		f.opts.Meta.ForgetGrants()
	}
}

// forgetTables makes Meta learn every table again.
func (f *Follower) forgetTables() {
	if f.opts.Meta != nil {
		f.opts.Meta.ForgetAll()
	}
}

// run connects, follows until the connection fails, and connects again
// from the last applied position, until Close.
func (f *Follower) run() {
	defer close(f.done)
	backoff := minRetry
	// failedAt is the applied position an unreadable event followed, and
	// failures how many streams in a row failed on it.
	failedAt, failures := "", 0
	// closedSaid says the server's binary log was found off, and said so.
	closedSaid := false
	for f.ctx.Err() == nil {
		f.mu.Lock()
		reset := f.resetTo
		if reset != nil {
			// The stream that read the old binlog has stopped: nothing
			// it read is recorded after this.
			f.applied, f.resetTo, f.at = reset, nil, binlogAt{}
			f.jumps++
			f.startAt = binlogAt{}
			f.resetRecentLocked()
			backoff = minRetry
		}
		f.mu.Unlock()
		if reset != nil {
			f.save()
		}
		began := time.Now()
		err := f.checkSaved()
		if err == nil {
			err = f.follow()
		}
		if f.ctx.Err() != nil {
			return
		}
		f.mu.Lock()
		backoff = retryAfter(backoff, f.running, time.Since(began))
		f.running = false
		f.lastErr = err.Error()
		if !timedOut(err) {
			// Until the stream is back and has reached a position
			// read after this, what the server did is unknown: it
			// may have restarted. A stream cut by its own read
			// deadline (a heartbeat late on a busy machine) keeps
			// its freshness, which then ages as the server is not
			// heard from.
			f.fresh, f.cut = time.Time{}, time.Now()
			f.polls = f.polls[:0]
		}
		f.mu.Unlock()
		if errors.Is(err, context.Canceled) {
			// serverWentBack stopped the stream: follow on at once.
			f.log.Info("binlog: the stream was stopped; following again", "err", err)
			f.reconnects.Add(1)
			continue
		}
		unreadable := false
		if isUnreadable(err) {
			// go-mysql could not parse an event: following from the same
			// position would fail on it again, for ever.
			f.mu.Lock()
			pos := f.applied.String()
			f.mu.Unlock()
			if pos == failedAt {
				failures++
			} else {
				failedAt, failures = pos, 1
			}
			unreadable = failures >= 3
		}
		closed := binlogClosed(err)
		lost := isLostPosition(err) && !closed
		if !closed {
			closedSaid = false
		}
		if lost && !unreadable {
			if at, ok := f.resumable(); ok {
				// Nothing was missed: the stream starts again there.
				lost, f.startAt = false, at
				f.log.Warn("binlog: the server refused to stream from the follower's GTID position, which its binlog still holds (a domain's sequence numbers went back: gtid_seq_no set by hand); following on from its place in the binlog",
					"at", at.String(), "err", err)
			}
		}
		if unreadable || lost {
			failedAt, failures = "", 0
			why := "position purged or unknown to the server"
			if unreadable {
				why = "an event after it cannot be read"
				f.log.Error("binlog: an event after the follower's position cannot be read; following on from the server's position", "err", err)
			} else {
				f.log.Warn("binlog: the server no longer has the follower's position: its binlog was purged past it (PURGE BINARY LOGS, expire_logs_days or binlog_expire_logs_seconds shorter than the sidecar was down) or reset, or it ran without one (log_bin), or another server answers; keep binlogs longer than sidecars may be away", "err", err)
			}
			if f.followFromServer(why) {
				// The stream starts again from the server's position:
				// the sooner it does, the sooner strict reads hit.
				backoff = 0
			}
		} else if closed {
			// Not a lost position: nothing is written meanwhile, and
			// the server restarts to turn it on again, which the
			// follower tells once it follows (serverRestarted).
			if !closedSaid {
				closedSaid = true
				f.log.Warn("binlog: the server's binary log is off (log_bin): the follower follows again once the server runs with it; meanwhile strict reads go to the server, and bounded ones once --max-staleness passes", "err", err)
			}
		} else if f.startAt.file == "" {
			f.log.Warn("binlog: connection lost; following again", "err", err, "retry_in", backoff)
		}
		f.reconnects.Add(1)
		// A nudge ends the wait of a follower that could not reach the
		// server, not of one the server refused (a grant, a password).
		var nudged <-chan struct{}
		if f.unreachable.Load() {
			nudged = f.nudge
		}
		select {
		case <-f.ctx.Done():
			return
		case <-time.After(backoff):
		case <-nudged:
		}
		backoff = nextRetry(backoff)
	}
}

// nextRetry returns the wait after one of prev that failed again.
func nextRetry(prev time.Duration) time.Duration { return min(max(2*prev, minRetry), maxRetry) }

// The follower connects again at once after a stream that had followed
// for a while (a killed connection, a server restart: the writes made
// meanwhile are unseen until it does), then after minRetry, doubling up
// to maxRetry while it keeps failing.
const (
	minRetry = 100 * time.Millisecond
	maxRetry = 5 * time.Second
	// streamedLong is how long a stream must have followed for its end
	// to count as a first failure.
	streamedLong = time.Second
)

// retryAfter returns how long to wait before connecting again, after a
// stream that ended: prev is the last wait, streamed says the stream got
// as far as following, and ran how long the attempt lasted.
func retryAfter(prev time.Duration, streamed bool, ran time.Duration) time.Duration {
	if streamed && ran >= streamedLong {
		return 0
	}
	return prev
}

// resumable returns where the follower stands in the server's binlog
// when the server's binlog provably holds the follower's position there:
// the same GTID position at the same place of a file of the same name,
// created at the same time. Then a stream by file and offset starts
// exactly where the follower stands, even when the server refuses to
// find the GTID position: in strict mode, which go-mysql asks for, it
// refuses one whose domain's sequence numbers went back (error 1236).
func (f *Follower) resumable() (binlogAt, bool) {
	f.mu.Lock()
	at, born := f.at, f.bornLocked(f.at.file)
	applied := f.applied.Clone().(*mysql.MariadbGTIDSet)
	f.mu.Unlock()
	if at.file == "" || born == 0 {
		return binlogAt{}, false
	}
	if holds, err := f.holdsAt(f.ctx, at, applied); err != nil || !holds {
		return binlogAt{}, false
	}
	if ts, err := f.readBorn(at.file); err != nil || ts != born {
		return binlogAt{}, false
	}
	return at, true
}

// followFromServer follows on from the server's current position, after
// the follower's was lost: every entry is invalidated.
//
// The stream starts where the server's binlog ends, by file and offset:
// a GTID position the server refused may be refused again (a domain
// whose sequence numbers went back, which a stream by GTID position
// cannot start from), and the follower would never follow again.
func (f *Follower) followFromServer(why string) bool {
	var at binlogAt
	cur := ""
	if file, end, pos, err := f.opts.Meta.BinlogEnd(f.ctx); err == nil {
		cur, at = pos, binlogAt{file, end}
	} else {
		// Without the grant that shows where the binlog ends, by the
		// GTID position alone.
		if cur, err = f.opts.Meta.BinlogPos(f.ctx); err != nil {
			return false
		}
	}
	set, err := mysql.ParseMariadbGTIDSet(cur)
	if err != nil {
		return false
	}
	f.startAt = at
	f.mu.Lock()
	f.applied, f.at = set.(*mysql.MariadbGTIDSet), binlogAt{}
	f.jumps++
	f.resetRecentLocked()
	f.polls = f.polls[:0]
	// The transactions skipped may not be visible to every session yet:
	// bump again once they are.
	f.settling = append(f.settling, settle{due: time.Now().Add(f.settleDelay()), deps: []string{deps.Global}})
	f.mu.Unlock()
	// Counted once the position is set: whoever sees the count waits on
	// the new position.
	f.lostPosition(why)
	f.save()
	return true
}

// checkSaved checks, before the first stream from a saved position, that
// the server's binlog holds that position where the follower read it.
// After a RESET MASTER, or with another server at the address, a binlog
// whose numbering has run past the saved position would otherwise be
// followed on from it, and what was committed before would be skipped
// unseen. The check reads nothing of the binlog beyond one event's
// place; a position saved without its place (a follower that started
// from the server's) is not checked.
func (f *Follower) checkSaved() error {
	if saved := f.verifyMark; saved != nil {
		// RESET MASTER, then as many transactions as there were, leaves
		// the server at the saved position, and may leave it at the
		// same place in a binlog file of the same name: the count of
		// RESET statements tells, unless the server restarted since.
		n, started, err := f.opts.Meta.Resets(f.ctx)
		if err != nil {
			return fmt.Errorf("binlog: checking the saved position: %w", err)
		}
		f.verifyMark = nil
		cur := resetMark{n: n, started: started}
		f.mark.Store(&cur)
		if cur.sameRun(*saved) && cur.n != saved.n {
			f.verify = binlogAt{}
			f.log.Warn("binlog: the server ran RESET since the position was saved (RESET MASTER, or another RESET statement)",
				"saved", saved.String(), "now", cur.String())
			f.followFromServer("the server ran RESET since the position was saved")
			return nil
		}
	}
	at := f.verify
	if at.file == "" {
		return nil
	}
	got, ok, err := f.opts.Meta.BinlogPosAt(f.ctx, at.file, at.end)
	if err != nil {
		return fmt.Errorf("binlog: checking the saved position: %w", err)
	}
	f.mu.Lock()
	saved := f.applied.Clone().(*mysql.MariadbGTIDSet)
	f.mu.Unlock()
	if ok {
		if set, err := mysql.ParseMariadbGTIDSet(got); err == nil && samePos(set.(*mysql.MariadbGTIDSet), saved) {
			// RESET MASTER and a restart of the server, then as many
			// transactions as there were, leave the same position at
			// the same place of a file of the same name: the count of
			// RESET statements does not tell across the restart, the
			// file's creation time does.
			born := f.verifyBorn
			if born != 0 {
				ts, err := f.readBorn(at.file)
				if err != nil && !isLostPosition(err) {
					return fmt.Errorf("binlog: checking the saved position's binlog file: %w", err)
				}
				if ts != born {
					f.verify, f.verifyBorn = binlogAt{}, 0
					f.log.Warn("binlog: the binlog file that held the saved position was created anew since (RESET MASTER)",
						"saved", saved.String(), "at", at.String(), "created", born, "now_created", ts)
					f.followFromServer("the binlog file that held the saved position was created anew")
					return nil
				}
			}
			f.verify, f.verifyBorn = binlogAt{}, 0
			f.mu.Lock()
			f.at, f.born = at, [2]fileBorn{{at.file, born}}
			f.mu.Unlock()
			return nil
		}
	}
	f.verify, f.verifyBorn = binlogAt{}, 0
	f.log.Warn("binlog: the server's binlog does not hold the saved position where it was read (RESET MASTER, or another server at its address)",
		"saved", saved.String(), "at", at.String(), "server_has", got)
	f.followFromServer("the saved position is not where the server's binlog has it")
	return nil
}

// samePos reports whether two positions name the same transaction in
// every domain.
func samePos(a, b *mysql.MariadbGTIDSet) bool {
	if len(a.Sets) != len(b.Sets) {
		return false
	}
	for d, g := range a.Sets {
		h, ok := b.Sets[d]
		if !ok || h.ServerID != g.ServerID || h.SequenceNumber != g.SequenceNumber {
			return false
		}
	}
	return true
}

// follow streams events from the applied position until an error.
func (f *Follower) follow() error {
	dialed := startConns{unreachable: &f.unreachable}
	syncer, err := f.syncer(&dialed)
	if err != nil {
		return err
	}
	defer syncer.Close()
	// Closing unblocks the stream's read with a deadline of its own.
	defer dialed.streaming()
	sctx, stop := context.WithCancel(f.ctx)
	defer stop()
	f.mu.Lock()
	start := f.applied.Clone()
	f.stopStream = stop
	resetting := f.resetTo != nil
	f.mu.Unlock()
	if resetting {
		// The server's binlog went back while no stream was there to
		// stop (serverWentBack): follow from its new position.
		return context.Canceled
	}
	from := f.startAt
	f.startAt = binlogAt{}
	var stream *replication.BinlogStreamer
	if from.file != "" {
		stream, err = syncer.StartSync(mysql.Position{Name: from.file, Pos: from.end})
	} else {
		stream, err = syncer.StartSyncGTID(start)
	}
	if err != nil {
		return err
	}
	return f.stream(sctx, stream, start, from, &dialed)
}

// syncer returns a binlog syncer for the follower's server and account,
// which dials through dialed.
func (f *Follower) syncer(dialed *startConns) (*replication.BinlogSyncer, error) {
	host, port, err := net.SplitHostPort(f.opts.Addr)
	if err != nil {
		return nil, err
	}
	p, _ := strconv.Atoi(port)
	return replication.NewBinlogSyncer(replication.BinlogSyncerConfig{
		Dialer:           dialed.dial,
		ServerID:         f.opts.ServerID,
		Flavor:           mysql.MariaDBFlavor,
		Host:             host,
		Port:             uint16(p),
		User:             f.opts.User,
		Password:         f.opts.Password,
		TLSConfig:        f.opts.TLS,
		HeartbeatPeriod:  f.opts.Heartbeat,
		ReadTimeout:      3 * f.opts.Heartbeat,
		DisableRetrySync: true,
		// Each statement's text before its row events: it tells the
		// tables a statement wrote from those its triggers wrote.
		DumpCommandFlag: replication.BINLOG_SEND_ANNOTATE_ROWS_EVENT,
		// Events read ahead of the follower: enough for a group of
		// transactions, and a bound on the memory a stalled follower
		// holds (the default, 10240, is gigabytes of large rows).
		EventCacheCount: 1024,
		Logger:          slog.New(discardHandler{}),
	}), nil
}

// readBorn returns when the server created a binlog file, as the format
// event that begins it says, read by a stream from the file's start that
// ends there. A file the server no longer has is a lost position
// (isLostPosition).
func (f *Follower) readBorn(file string) (uint32, error) {
	dialed := startConns{unreachable: &f.unreachable}
	syncer, err := f.syncer(&dialed)
	if err != nil {
		return 0, err
	}
	defer syncer.Close()
	ctx, cancel := context.WithTimeout(f.ctx, 30*time.Second)
	defer cancel()
	stream, err := syncer.StartSync(mysql.Position{Name: file, Pos: 4})
	if err != nil {
		return 0, err
	}
	for {
		ev, err := stream.GetEvent(ctx)
		if err != nil {
			return 0, err
		}
		if ev.Header.EventType == replication.FORMAT_DESCRIPTION_EVENT {
			return ev.Header.Timestamp, nil
		}
	}
}

// stream follows a started stream until an error.
// It started from the GTID position start, found by the server, or at
// from (by file and offset) where the server's binlog holds start.
func (f *Follower) stream(sctx context.Context, stream *replication.BinlogStreamer, start mysql.GTIDSet, from binlogAt, dialed *startConns) error {
	asked := time.Now()
	dialed.awaitFirst(asked.Add(streamStartGrace))
	f.mu.Lock()
	f.running, f.lastErr, f.formatRead = true, "", false
	f.mu.Unlock()
	var t txn
	defer f.group.reset()
	for first := true; ; first = false {
		ev, err := stream.GetEvent(sctx)
		if err != nil {
			return err
		}
		if first {
			// Said once the server streams: a server without its
			// binary log accepts the dump and then fails it.
			if from.file != "" {
				f.log.Info("binlog: following", "from", start.String(), "at", from.String(), "server_id", f.opts.ServerID)
			} else {
				f.log.Info("binlog: following", "from", start.String(), "server_id", f.opts.ServerID)
			}
			dialed.streaming()
			if d := time.Since(asked); d > time.Second {
				f.log.Info("binlog: the server took a while to start the stream: it reads the binlog file that holds the position from its start", "took", d.Round(time.Millisecond))
			}
		}
		f.mu.Lock()
		f.lastMsg = time.Now()
		f.mu.Unlock()
		// The events already received join the group, which is bumped
		// before the follower waits for more.
		f.events.Add(1)
		f.handleSafe(&t, ev)
		for n := 0; n < 64; n++ {
			evs := stream.DumpEvents()
			if len(evs) == 0 {
				break
			}
			f.events.Add(uint64(len(evs)))
			for _, ev := range evs {
				f.handleSafe(&t, ev)
			}
		}
		f.flush()
	}
}

// streamStartGrace bounds how long the server may take to send the first
// event of a stream. MariaDB finds a GTID position by reading the binlog
// file that holds it from its start, and sends nothing meanwhile, not
// even heartbeats: on a large binlog that takes longer than the read
// timeout that detects a dead stream, and a follower that gave up then
// would reconnect, and give up again, for ever.
const streamStartGrace = 5 * time.Minute

// startConns are the connections a syncer dials. Between the dump
// command and the stream's first event, their read deadlines are no
// earlier than a grace's end (see streamStartGrace); before, for the
// handshake, and after, they are the syncer's own.
type startConns struct {
	mu    sync.Mutex
	conns []*startConn
	until time.Time // zero outside the grace
	// unreachable is set when a dial fails, cleared when one succeeds.
	unreachable *atomic.Bool
}

type startConn struct {
	net.Conn
	s *startConns
}

func (s *startConns) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	s.unreachable.Store(err != nil)
	if err != nil {
		return nil, err
	}
	sc := &startConn{Conn: c, s: s}
	s.mu.Lock()
	s.conns = append(s.conns, sc)
	s.mu.Unlock()
	return sc, nil
}

// awaitFirst starts the grace, until then, on the connections dialed.
func (s *startConns) awaitFirst(until time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.until = until
	for _, c := range s.conns {
		_ = c.Conn.SetReadDeadline(until)
	}
}

// streaming ends the grace: the stream has sent an event.
func (s *startConns) streaming() {
	s.mu.Lock()
	s.until = time.Time{}
	s.mu.Unlock()
}

// SetReadDeadline holds the lock while it sets the deadline: a reader's
// deadline set as the grace starts would otherwise land after the
// grace's and cut it short.
func (c *startConn) SetReadDeadline(t time.Time) error {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	if u := c.s.until; !u.IsZero() && !t.IsZero() && t.Before(u) {
		t = u
	}
	return c.Conn.SetReadDeadline(t)
}

func (c *startConn) SetDeadline(t time.Time) error {
	if err := c.Conn.SetWriteDeadline(t); err != nil {
		return err
	}
	return c.SetReadDeadline(t)
}

// isUnreadable reports a stream that ended because go-mysql panicked
// reading an event (its stream goroutine recovers, and says so).
func isUnreadable(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "panic ")
}

// handleSafe is handle, where an event the follower fails on invalidates
// everything instead of ending the process: what it changed is unknown.
func (f *Follower) handleSafe(t *txn, ev *replication.BinlogEvent) {
	defer func() {
		if r := recover(); r != nil {
			f.log.Error("binlog: an event could not be handled; every cached entry is invalidated", "panic", r)
			f.unknownChanges()
		}
	}()
	f.handle(t, ev)
}

// unknownChanges invalidates everything, at once and again once settled,
// and makes Meta learn every table again: changes were made that the
// follower cannot know, DDL among them, perhaps.
func (f *Follower) unknownChanges() {
	f.lost.Add(1)
	f.forgetTables()
	f.opts.Bump(f.ctx, []string{deps.Global})
	f.mu.Lock()
	f.settling = append(f.settling, settle{due: time.Now().Add(f.settleDelay()), deps: []string{deps.Global}})
	f.mu.Unlock()
}

// binlogClosed reports the server refusing to stream because its
// binary log is off: error 1236, "Binary log is not open".
func binlogClosed(err error) bool {
	var me *mysql.MyError
	return errors.As(err, &me) && me.Code == mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG &&
		strings.Contains(strings.ToLower(me.Message), "binary log is not open")
}

// isLostPosition reports the server refusing the requested position
// (error 1236): it was purged, or belongs to another server's history.
func isLostPosition(err error) bool {
	var me *mysql.MyError
	return errors.As(err, &me) && me.Code == mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG
}

// wanted notes that the follower's freshness was asked for: the server's
// position is read every Poll until nothing has asked for IdlePoll.
func (f *Follower) wanted() {
	if !f.want.Load() {
		f.want.Store(true)
	}
}

// Demanded reports whether the follower's freshness was asked for less
// than IdlePoll ago, as of its last tick.
func (f *Follower) Demanded() bool {
	return time.Since(time.Unix(0, f.wantedAt.Load())) < f.opts.IdlePoll
}

// tick bumps settled dependencies again, reads the server's position to
// tell freshness (every Poll while it is asked for, else every
// IdlePoll), and saves the applied position.
func (f *Follower) tick() {
	poll := time.NewTicker(f.opts.Poll)
	defer poll.Stop()
	lastSave := time.Now()
	var lastPoll time.Time
	for {
		select {
		case <-f.ctx.Done():
			return
		case <-poll.C:
		}
		now := time.Now()
		f.settleDue(now)
		if f.want.Swap(false) {
			f.wantedAt.Store(now.UnixNano())
		}
		if f.Demanded() || now.Sub(lastPoll) >= f.opts.IdlePoll-f.opts.Poll/2 {
			lastPoll = now
			f.pollServer()
		}
		if time.Since(lastSave) >= time.Second {
			f.save()
			lastSave = time.Now()
		}
	}
}

// pollServer records the server's current position, and advances
// freshness as far as the applied position allows.
func (f *Follower) pollServer() {
	at := time.Now()
	f.mu.Lock()
	before, resetting, jumps := seqs(f.applied), f.resetTo != nil, f.jumps
	f.mu.Unlock()
	ctx, cancel := context.WithTimeout(f.ctx, max(f.opts.Poll, time.Second))
	defer cancel()
	// The count of RESET statements is read before the position: a
	// position read after a RESET MASTER is the new binlog's.
	reset := false
	if at.Sub(f.markRead) >= markEvery {
		if prev, cur, err := f.renewMark(ctx, at); err == nil {
			reset = prev != nil && prev.sameRun(cur) && prev.n != cur.n
		}
	}
	f.positionReads.Add(1)
	pos, globals, err := f.opts.Meta.BinlogPosAndGlobals(ctx)
	if err != nil {
		return
	}
	f.checkGlobals(globals)
	f.opts.Meta.Relearn(ctx)
	p, err := parsePos(pos)
	if err != nil {
		return
	}
	f.mu.Lock()
	jumped := f.jumps != jumps
	f.mu.Unlock()
	numbersBack := false
	switch {
	case reset:
		// RESET MASTER, followed by as many transactions as the
		// follower had applied, leaves the server at the very position
		// the follower holds, and the new binlog may hold that position
		// at the same offset of a file of the same name: nothing else
		// tells that the stream reads a binlog that is gone. RESET
		// QUERY CACHE and RESET SLAVE count too; they cost a global
		// bump.
		f.serverWentBack(pos, "the server ran RESET (RESET MASTER, or another RESET statement): its binlog may have been replaced; following on from "+cmp.Or(pos, "its start"))
	case jumped:
		// The follower took the server's position meanwhile, and said
		// why: this poll's position is judged against it by the next.
	case !resetting && wentBack(before, p):
		if numbersBack = f.binlogHoldsApplied(ctx, at); !numbersBack {
			f.serverWentBack(pos, "the server's binlog position went back to "+cmp.Or(pos, "its start")+" (RESET MASTER, or another server at its address)")
		}
	}
	f.mu.Lock()
	// A position behind the applied one says nothing of how far the
	// follower has read: freshness waits for the next poll.
	if len(f.polls) < 1024 && !numbersBack {
		f.polls = append(f.polls, poll{at: at, pos: p})
	}
	f.advanceLocked()
	stalled := f.running && f.resetTo == nil && f.at.file != "" && len(f.polls) > 0 &&
		at.Sub(f.polls[0].at) >= stallAfter && f.lastTxn.Load() < f.polls[0].at.UnixNano()
	check := stalled && at.Sub(f.stallCheck) >= f.stallWait
	var where binlogAt
	var applied *mysql.MariadbGTIDSet
	if check {
		where, applied = f.at, f.applied.Clone().(*mysql.MariadbGTIDSet)
	}
	f.mu.Unlock()
	switch {
	case !stalled:
		f.stallWait = 0
	case check:
		f.stallCheck = at
		f.stallWait = min(max(2*f.stallWait, stallAfter), time.Minute)
		f.checkStalled(where, applied, pos)
	}
}

// stallAfter is how long the server's position may stay ahead of the
// follower's, with no transaction arriving, before the follower checks
// that the server's binlog still holds its position.
const stallAfter = 2 * time.Second

// checkStalled handles a stream that stopped short of the server's
// position: where the follower stands (applied, read at where) is no
// longer in the server's binlog when a RESET MASTER, followed by a
// transaction numbered past it, replaced the binlog the stream was
// reading, and the stream waits on the old one for ever. Then every
// entry is invalidated and the follower follows on from the server's
// position (pos). A long read of a large binlog before a stream's first
// transaction, or a slow server, keeps the position: the check is made
// again less and less often until a transaction arrives.
func (f *Follower) checkStalled(where binlogAt, applied *mysql.MariadbGTIDSet, pos string) {
	ctx, cancel := context.WithTimeout(f.ctx, 10*time.Second)
	holds, err := f.holdsAt(ctx, where, applied)
	cancel()
	if err != nil || holds {
		return
	}
	f.mu.Lock()
	moved := !samePos(f.applied, applied) || f.resetTo != nil
	f.mu.Unlock()
	if moved {
		return
	}
	f.serverWentBack(pos, "the server's binlog no longer holds the follower's position "+applied.String()+
		" at "+where.String()+", and the stream stopped short of the server's "+pos+" (RESET MASTER while following)")
}

// binlogHoldsApplied reports whether a server whose position is behind
// the applied one in a domain is the same server, with the same binlog,
// as when the follower applied it: no RESET statement ran since the last
// count (which this read renews), and the binlog still holds the applied
// position at the follower's place in it. Then a domain's numbers went
// back in the binlog (gtid_seq_no set by hand), and the poll read the
// server's position after a transaction numbered below the applied one,
// which the follower had yet to apply. Otherwise, or when it cannot tell,
// the server's binlog went back.
func (f *Follower) binlogHoldsApplied(ctx context.Context, at time.Time) bool {
	f.mu.Lock()
	where, applied := f.at, f.applied.Clone().(*mysql.MariadbGTIDSet)
	f.mu.Unlock()
	if where.file == "" {
		return false
	}
	if prev, cur, err := f.renewMark(ctx, at); err != nil || prev == nil || !prev.sameRun(cur) || prev.n != cur.n {
		return false
	}
	holds, err := f.holdsAt(ctx, where, applied)
	return err == nil && holds
}

// renewMark reads the server's count of RESET statements, at a poll at
// at, and returns the mark it replaces (nil: none yet) and the new one.
func (f *Follower) renewMark(ctx context.Context, at time.Time) (prev *resetMark, cur resetMark, err error) {
	f.markRead = at
	n, started, err := f.opts.Meta.Resets(ctx)
	if err != nil {
		return nil, resetMark{}, err
	}
	cur = resetMark{n: n, started: started}
	return f.mark.Swap(&cur), cur, nil
}

// holdsAt reports whether the server's binlog holds the position applied
// at where (BINLOG_GTID_POS); a place it does not know holds nothing.
func (f *Follower) holdsAt(ctx context.Context, where binlogAt, applied *mysql.MariadbGTIDSet) (bool, error) {
	got, ok, err := f.opts.Meta.BinlogPosAt(ctx, where.file, where.end)
	if err != nil || !ok {
		return false, err
	}
	set, err := mysql.ParseMariadbGTIDSet(got)
	return err == nil && samePos(set.(*mysql.MariadbGTIDSet), applied), nil
}

// wentBack reports whether the server's position is behind the applied
// one in a domain: the applied position was read before the server's,
// and the server logs nothing the follower could apply before it does,
// unless a domain's numbers went back (see binlogHoldsApplied).
func wentBack(applied, server map[uint32]uint64) bool {
	for d, s := range applied {
		if server[d] < s {
			return true
		}
	}
	return false
}

// serverWentBack handles a server whose binlog is behind what the
// follower applied: RESET MASTER numbered its transactions from 1 again,
// or another server answers at its address. The stream of the old binlog
// stops (it would wait, and then follow on from the old position, past
// the new transactions numbered up to it), every entry is invalidated,
// and the follower follows on from the server's position.
func (f *Follower) serverWentBack(pos, why string) {
	set, err := mysql.ParseMariadbGTIDSet(pos)
	if err != nil {
		return
	}
	f.mu.Lock()
	f.settling = append(f.settling, settle{due: time.Now().Add(f.settleDelay()), deps: []string{deps.Global}})
	f.resetTo = set.(*mysql.MariadbGTIDSet)
	// Positions read of the old binlog may never be reached in the new
	// one's numbering: freshness waits on the polls to come.
	f.polls = f.polls[:0]
	stop := f.stopStream
	f.mu.Unlock()
	f.lostPosition(why)
	if stop != nil {
		stop()
	}
}

// checkGlobals invalidates everything when what the last poll read
// besides the position changed since the poll before: a global-only
// variable that changes results (meta's resultGlobals), or, on a server
// that does not log what it replicates, gtid_slave_pos. On such a server
// the first poll invalidates everything too: what it replicated while no
// follower watched is in no binlog. The bump is made again once settled,
// as a transaction's are: the poll may see a replicated commit before
// other sessions do.
func (f *Follower) checkGlobals(globals string) {
	if f.settleFromServer {
		v := map[string]string{}
		for _, line := range strings.Split(globals, "\n") {
			if name, val, ok := strings.Cut(line, "="); ok {
				v[strings.ToLower(name)] = val
			}
		}
		f.settle.Store(int64(meta.SettleDelayFor(v)))
	}
	f.mu.Lock()
	prev, seen := f.globals, f.globalsSeen
	f.globals, f.globalsSeen = globals, true
	f.mu.Unlock()
	var why string
	switch {
	case seen && globals != prev:
		why = "the server changed what the binlog does not show (a global variable that changes results, or rows it replicated without logging them); every cached entry is invalidated"
	case !seen && replicatedUnlogged(globals):
		why = "the server replicates without logging what it applies (log_slave_updates=OFF), and may have applied writes before the follower started; every cached entry is invalidated"
	default:
		return
	}
	if now := time.Now(); now.Sub(f.unloggedSaid) >= time.Minute {
		f.unloggedSaid = now
		f.log.Warn("binlog: "+why, "now", globals)
	}
	f.opts.Bump(f.ctx, []string{deps.Global})
	f.unlogged.Add(1)
	f.mu.Lock()
	f.settling = append(f.settling, settle{due: time.Now().Add(f.settleDelay()), deps: []string{deps.Global}})
	f.mu.Unlock()
}

// replicatedUnlogged reports whether a poll's globals hold a gtid_slave_pos
// that is not empty: the server has applied writes as a replica, and
// logs none of them (it is read only then).
func replicatedUnlogged(globals string) bool {
	for _, line := range strings.Split(globals, "\n") {
		if name, v, ok := strings.Cut(line, "="); ok && strings.EqualFold(name, "gtid_slave_pos") && v != "" {
			return true
		}
	}
	return false
}

// advanceLocked moves freshness to the newest poll the applied position
// has reached; f.mu must be held.
func (f *Follower) advanceLocked() {
	if !f.running || !f.formatRead {
		return
	}
	applied := f.appliedLocked()
	n := 0
	for i, pl := range f.polls {
		if pl.at.Before(f.cut) || !reached(applied, pl.pos) {
			continue
		}
		// The server's position when pl was read is applied, and so is
		// every earlier poll's, even one whose number in a domain is
		// above the applied one's: the domain's numbers went back
		// (gtid_seq_no set by hand), and the follower read on past it.
		if pl.at.After(f.fresh) {
			f.fresh = pl.at
		}
		n = i + 1
	}
	for n < len(f.polls) && f.polls[n].at.Before(f.cut) {
		n++ // read before the stream was cut: it proves nothing
	}
	f.polls = f.polls[n:]
}

func (f *Follower) save() {
	if f.opts.State == nil {
		return
	}
	f.mu.Lock()
	if f.resetTo != nil {
		// Between binlogs: saved once the follower follows the new one.
		f.mu.Unlock()
		return
	}
	pos := f.applied.String()
	if f.at.file != "" {
		pos += " at " + f.at.String()
		if born := f.bornLocked(f.at.file); born != 0 {
			pos += " born " + strconv.FormatUint(uint64(born), 10)
		}
	}
	f.mu.Unlock()
	if r := f.savedRun.Load(); r >= 0 {
		pos += " run " + strconv.FormatInt(r, 10)
	}
	if m := f.mark.Load(); m != nil {
		pos += " resets " + m.String()
	}
	if err := f.opts.State.Save(pos); err != nil {
		f.log.Warn("binlog: saving the position failed", "err", err)
	}
}

// settleDue bumps again the dependencies whose settle time has come.
func (f *Follower) settleDue(now time.Time) {
	f.mu.Lock()
	n := 0
	seen := map[string]bool{}
	var due []string
	for _, s := range f.settling {
		if s.due.After(now) {
			break
		}
		for _, d := range s.deps {
			if !seen[d] {
				seen[d] = true
				due = append(due, d)
			}
		}
		n++
	}
	f.settling = f.settling[n:]
	f.settlingNow++
	f.mu.Unlock()
	if len(due) > 0 {
		f.opts.Bump(f.ctx, due)
	}
	f.mu.Lock()
	f.settlingNow--
	f.mu.Unlock()
}

// apply queues a committed transaction's dependencies for one bump with
// the transactions read with it, and its position to be recorded after
// that bump.
func (f *Follower) apply(t *txn) {
	f.queue(t, true)
}

// group is the transactions read and not yet bumped: the follower reads
// every event the server has already sent before it bumps, so that a
// burst of commits costs one round trip to memcached, not one each.
type group struct {
	deps map[string]struct{}
	txns []queued
}

// queued is a transaction of a group, in binlog order.
type queued struct {
	gtid    *mysql.MariadbGTID
	ts      uint32
	applied bool     // a commit, not an XA PREPARE
	at      binlogAt // where in the binlog its last event ends
}

// Bounds of a group: past either, it is bumped before the next event.
const (
	groupMaxTxns = 256
	groupMaxDeps = 4096
)

// queue adds t, whose events have all been read, to the group, and
// starts a new transaction. applied is false for an XA PREPARE, whose
// changes are bumped at its XA COMMIT; its position still moves on in
// order with the others.
func (f *Follower) queue(t *txn, applied bool) {
	g := &f.group
	if applied && len(t.deps) > 0 {
		if g.deps == nil {
			g.deps = make(map[string]struct{}, len(t.deps))
		}
		for d := range t.deps {
			g.deps[d] = struct{}{}
		}
	}
	g.txns = append(g.txns, queued{gtid: t.gtid, ts: t.ts, applied: applied, at: binlogAt{f.file, f.evEnd}})
	t.gtid = nil
	clear(t.deps)
	clear(t.rows)
	if len(g.txns) >= groupMaxTxns || len(g.deps) >= groupMaxDeps {
		f.flush()
	}
}

// flush bumps the group's dependencies in one call, now and again once
// they have settled, and then records its transactions' positions, in
// order. A position is never recorded before its transaction's bump.
func (f *Follower) flush() {
	g := &f.group
	if len(g.txns) == 0 {
		return
	}
	var ds []string
	if len(g.deps) > 0 {
		ds = make([]string, 0, len(g.deps))
		for d := range g.deps {
			ds = append(ds, d)
		}
		f.opts.Bump(f.ctx, ds)
		f.bumps.Add(uint64(len(ds)))
	}
	f.mu.Lock()
	if len(ds) > 0 {
		f.settling = append(f.settling, settle{due: time.Now().Add(f.settleDelay()), deps: ds})
	}
	rg := recentGroup{deps: ds}
	for _, q := range g.txns {
		if q.gtid != nil {
			_ = f.applied.AddSet(q.gtid)
			rg.pos = append(rg.pos, gtidPos{q.gtid.DomainID, q.gtid.SequenceNumber})
		}
		if q.applied {
			f.txns.Add(1)
			f.lastTS = q.ts
		}
		f.at = q.at
	}
	f.rememberLocked(rg)
	f.advanceLocked()
	if f.flushed != nil {
		close(f.flushed)
		f.flushed = nil
	}
	f.mu.Unlock()
	g.reset()
}

// demand is a read of the server's position for CurrentAsOf, which
// every caller that needs one read at or after at shares.
type demand struct {
	at   time.Time
	done chan struct{}
	pos  map[uint32]uint64
	err  error
}

// CurrentAsOf waits until everything committed on the server before t
// has been applied, and reports whether it was before ctx ended. When
// the periodic poll has not shown it yet, it reads the server's position
// itself: one read begun at or after t serves every caller waiting
// meanwhile. A follower that is not following, or whose server's binlog
// went back, is not current.
func (f *Follower) CurrentAsOf(ctx context.Context, t time.Time) bool {
	f.mu.Lock()
	switch {
	case f.fresh.IsZero() || f.resetTo != nil:
		f.mu.Unlock()
		return false
	case !f.fresh.Before(t):
		f.mu.Unlock()
		return true
	}
	d := f.demand
	if d == nil || d.at.Before(t) {
		d = &demand{at: time.Now(), done: make(chan struct{})}
		f.demand = d
		go f.readDemand(d)
	}
	f.mu.Unlock()
	select {
	case <-d.done:
	case <-ctx.Done():
		return false
	}
	if d.err != nil {
		return false
	}
	return f.waitUntil(ctx, func() bool { return f.resetTo == nil && reached(f.appliedLocked(), d.pos) })
}

// readDemand reads the server's position for d.
func (f *Follower) readDemand(d *demand) {
	defer close(d.done)
	ctx, cancel := context.WithTimeout(f.ctx, time.Second)
	defer cancel()
	f.positionReads.Add(1)
	pos, err := f.opts.Meta.GTIDBinlogPos(ctx)
	if err == nil {
		d.pos, err = parsePos(pos)
	}
	d.err = err
	f.mu.Lock()
	if f.demand == d {
		f.demand = nil
	}
	f.mu.Unlock()
}

// WaitApplied waits until the transaction of gtid (as @@last_gtid gives
// it) has been applied, and reports whether it was before ctx ended.
func (f *Follower) WaitApplied(ctx context.Context, gtid string) bool {
	want, err := parsePos(gtid)
	if err != nil {
		return false
	}
	return f.waitUntil(ctx, func() bool { return reached(f.appliedLocked(), want) })
}

// waitUntil waits until done, called with f.mu held, reports true, which
// it asks again each time a group is applied, and reports whether it did
// before ctx ended.
func (f *Follower) waitUntil(ctx context.Context, done func() bool) bool {
	for {
		f.mu.Lock()
		ok := done()
		if f.flushed == nil {
			f.flushed = make(chan struct{})
		}
		ch := f.flushed
		f.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-ch:
		}
	}
}

// recentGroup is a group bumped: its transactions' positions and the
// dependencies bumped for them.
type recentGroup struct {
	pos  []gtidPos
	deps []string
}

type gtidPos struct {
	domain uint32
	seq    uint64
}

// DepsThrough can look back on the last recentGroups groups bumped, as
// long as they hold no more than recentMaxDeps dependencies in all: a
// burst of large groups (up to groupMaxDeps each) must not hold
// megabytes of names.
const (
	recentGroups  = 1024
	recentMaxDeps = 1 << 16
)

// rememberLocked keeps g among the recent groups; f.mu must be held.
func (f *Follower) rememberLocked(g recentGroup) {
	f.recent = append(f.recent, g)
	f.recentDeps += len(g.deps)
	for len(f.recent) > recentGroups || f.recentDeps > recentMaxDeps {
		for _, p := range f.recent[0].pos {
			f.recentFrom[p.domain] = max(f.recentFrom[p.domain], p.seq)
		}
		f.recentDeps -= len(f.recent[0].deps)
		f.recent[0] = recentGroup{}
		f.recent = f.recent[1:]
	}
}

// resetRecentLocked forgets the recent groups when the applied position
// is set rather than reached: transactions before it were never read.
// f.mu must be held.
func (f *Follower) resetRecentLocked() {
	f.recent, f.recentDeps = nil, 0
	f.recentFrom = seqs(f.applied)
}

// AppliedSeqs returns the applied position, as a sequence number per
// domain.
func (f *Follower) AppliedSeqs() map[uint32]uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.appliedLocked()
}

// appliedLocked returns the applied position, as a sequence number per
// domain; f.mu must be held. While the follower is to follow on from
// another position (resetTo), that one is: the old one's numbers belong
// to a binlog the server no longer has, and may be ahead of the new
// binlog's transactions.
func (f *Follower) appliedLocked() map[uint32]uint64 {
	if f.resetTo != nil {
		return seqs(f.resetTo)
	}
	return seqs(f.applied)
}

// DepsThrough returns the dependencies bumped for every transaction
// applied after from (an AppliedSeqs) up to gtid, in gtid's domain, and
// more: a session whose statement committed gtid, and whatever of its
// own before it since from, bumps them again once the server has
// answered it, when its changes are surely visible to every session.
// ok is false when gtid is not applied yet, or when some transaction in
// between is no longer (or never was) among the recent groups.
func (f *Follower) DepsThrough(from map[uint32]uint64, gtid string) (ds []string, ok bool) {
	want, err := parsePos(gtid)
	if err != nil || len(want) != 1 {
		return nil, false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	applied := f.appliedLocked()
	seen := map[string]struct{}{}
	for d, s := range want {
		if applied[d] < s || f.recentFrom[d] > from[d] {
			return nil, false
		}
		for _, g := range f.recent {
			if !g.touches(d, from[d], s) {
				continue
			}
			for _, dep := range g.deps {
				if _, dup := seen[dep]; !dup {
					seen[dep] = struct{}{}
					ds = append(ds, dep)
				}
			}
		}
	}
	return ds, true
}

// touches reports whether g holds a transaction of domain d after seq
// lo, up to hi.
func (g recentGroup) touches(d uint32, lo, hi uint64) bool {
	for _, p := range g.pos {
		if p.domain == d && p.seq > lo && p.seq <= hi {
			return true
		}
	}
	return false
}

// reset empties the group. Emptied unbumped, when the connection ends,
// its transactions are read again: their positions were not recorded.
func (g *group) reset() {
	clear(g.deps)
	clear(g.txns)
	g.txns = g.txns[:0]
}

// Status is the follower's state, for SHOW MYCACHED STATUS and metrics.
type Status struct {
	Running      bool
	Position     string
	LastError    string
	LastMessage  time.Time // the last event or heartbeat
	LastEvent    time.Time // the commit time of the last transaction applied (second precision)
	FreshAsOf    time.Time
	Events       uint64
	Transactions uint64
	Bumps        uint64
	EarlyBumps   uint64 // bumps of long transactions made while they were read
	Reconnects   uint64
	LostPosition uint64 // global bumps for a lost position
	// Unlogged counts global bumps for changes the binlog does not show: a
	// global variable that changes results, rows replicated unlogged.
	Unlogged uint64
	// PositionReads counts the reads of the server's position: its polls
	// (every Poll while reads look up the cache, every IdlePoll
	// otherwise), and those a snapshot's hit or a wait for a write to be
	// applied asks for.
	PositionReads uint64
}

// Status returns the follower's state.
func (f *Follower) Status() Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := Status{
		Running: f.running, Position: f.applied.String(), LastError: f.lastErr,
		LastMessage: f.lastMsg, FreshAsOf: f.fresh,
		Events: f.events.Load(), Transactions: f.txns.Load(), Bumps: f.bumps.Load(), EarlyBumps: f.earlyBumps.Load(),
		Reconnects: f.reconnects.Load(), LostPosition: f.lost.Load(), Unlogged: f.unlogged.Load(),
		PositionReads: f.positionReads.Load(),
	}
	if f.lastTS != 0 {
		st.LastEvent = time.Unix(int64(f.lastTS), 0)
	}
	return st
}

// discardHandler drops the replication package's own logging: the
// follower logs what an operator needs.
type discardHandler struct{}

func (discardHandler) Enabled(context.Context, slog.Level) bool  { return false }
func (discardHandler) Handle(context.Context, slog.Record) error { return nil }
func (h discardHandler) WithAttrs([]slog.Attr) slog.Handler      { return h }
func (h discardHandler) WithGroup(string) slog.Handler           { return h }

// parsePos parses a GTID position into the highest sequence number of
// each domain.
func parsePos(pos string) (map[uint32]uint64, error) {
	set, err := mysql.ParseMariadbGTIDSet(pos)
	if err != nil {
		return nil, err
	}
	return seqs(set.(*mysql.MariadbGTIDSet)), nil
}

func seqs(set *mysql.MariadbGTIDSet) map[uint32]uint64 {
	out := map[uint32]uint64{}
	for domain, g := range set.Sets {
		out[domain] = g.SequenceNumber
	}
	return out
}

// reached reports whether applied is at or past pos in every domain.
func reached(applied, pos map[uint32]uint64) bool {
	for d, s := range pos {
		if applied[d] < s {
			return false
		}
	}
	return true
}

// Wait returns once every transaction committed on the server before it
// was called has been applied, and bumped again after its settle delay,
// and the follower is known to be current as of then (FreshAsOf).
func (f *Follower) Wait(ctx context.Context) error {
	start := time.Now()
	f.positionReads.Add(1)
	pos, err := f.opts.Meta.BinlogPos(ctx)
	if err != nil {
		return err
	}
	want, err := parsePos(pos)
	if err != nil {
		return err
	}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		f.wanted()
		f.mu.Lock()
		done := reached(f.appliedLocked(), want)
		if done {
			done = len(f.settling) == 0 && f.settlingNow == 0 && !f.fresh.Before(start)
		}
		f.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}
