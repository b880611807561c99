package mysqlproxy

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mycached/mycached/mysqlproxy/internal/binlog"
	"github.com/mycached/mycached/mysqlproxy/internal/deps"
	"github.com/mycached/mycached/mysqlproxy/internal/meta"
	"github.com/mycached/mycached/mysqlproxy/internal/statedir"
	"github.com/mycached/mycached/mysqlproxy/internal/store"
)

// coherence runs what keeps the cache coherent with writes that bypass
// this sidecar: a metadata connection of mycached's own and the binlog
// follower. Both need Config.BinlogUser; without it, or until the backend
// lets them run, invalidation rests on the parse of relayed writes alone,
// and the log says so.
type coherence struct {
	srv  *Server
	dir  *statedir.Dir // nil without --state-dir
	stop chan struct{}
	done chan struct{}

	mu       sync.Mutex // protects the fields below
	meta     *meta.Meta
	follower *binlog.Follower
	state    string // what SHOW MYCACHED STATUS says of the follower
	// watchDone is closed when the unlogged watch ends; nil: none runs.
	watchDone chan struct{}
}

// retryEvery is the longest wait before an unreachable backend, or a
// server whose binlog cannot be followed, is asked again.
const retryEvery = 10 * time.Second

// startCoherence starts the follower's supervisor; dir is the state
// directory, or nil.
func (s *Server) startCoherence(dir *statedir.Dir) {
	c := &coherence{srv: s, dir: dir, stop: make(chan struct{}), done: make(chan struct{})}
	s.coh = c
	if s.cfg.BinlogUser == "" || s.cfg.Backend == "" {
		c.state = "off: no --binlog-user"
		close(c.done)
		if s.cfg.Backend != "" {
			s.log.Warn("binlog follower off (no --binlog-user): writes that bypass mycached (other applications, triggers, foreign-key cascades, stored routines) are not seen, and their entries stay cached until their ttl; primary keys, views and foreign keys are unknown, so every dependency is table-level")
		}
		return
	}
	c.state = "connecting"
	s.cache.FollowerDue(true)
	go c.run()
}

// run connects the metadata connection, checks the server, and starts the
// follower, asking again until it runs or the server closes.
func (c *coherence) run() {
	defer close(c.done)
	said := ""
	say := func(state string, cannotRun bool) {
		c.mu.Lock()
		c.state = state
		c.mu.Unlock()
		switch {
		case cannotRun:
			// The server cannot be followed (the binlog is off, a
			// grant is missing): strict reads rest on the parse of
			// writes, as without a follower, instead of waiting.
			c.srv.cache.FollowerDue(false)
			if state != said {
				c.srv.log.Error("binlog follower not running; invalidation rests on the parse of writes that pass through mycached", "why", state)
			}
		case state != said:
			// The account cannot log in (a rotated password) or the
			// server cannot be reached: it will follow once it can,
			// as a follower that cannot reconnect, and strict reads go
			// to the server meanwhile.
			c.srv.log.Error("binlog follower not running yet; strict reads go to the server until it runs", "why", state)
		}
		said = state
	}
	// A server that was refused is asked again soon: an operator who
	// read the warning fixes it, and is not kept waiting for long.
	wait := time.Second
	for {
		if c.start(say) {
			return
		}
		select {
		case <-c.stop:
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, retryEvery)
	}
}

// start tries once, and reports whether there is nothing left to try.
func (c *coherence) start(say func(string, bool)) bool {
	cfg := &c.srv.cfg
	m := c.meta
	if m == nil {
		ctx, cancel := context.WithTimeout(context.Background(), cfg.ConnectTimeout)
		var err error
		m, err = meta.Open(ctx, meta.Options{
			Addr: cfg.Backend, User: cfg.BinlogUser, Password: cfg.BinlogPassword,
			TLS: c.tls(), TLSOptional: cfg.BackendTLS == BackendTLSPreferred,
			Timeout: cfg.ConnectTimeout, Logger: c.srv.log,
		})
		cancel()
		if err != nil {
			say("cannot connect as "+cfg.BinlogUser+": "+err.Error(), false)
			return false
		}
		c.mu.Lock()
		c.meta = m
		c.mu.Unlock()
		c.srv.cache.SetMeta(m)
		for _, a := range m.Facts().Advice() {
			c.srv.log.Warn("binlog follower: " + a)
		}
		for _, g := range m.Facts().Gaps() {
			c.srv.log.Error("binlog follower: " + g)
		}
	} else {
		// Asked again: the settings or the grants that kept the
		// follower from running may have been fixed since.
		ctx, cancel := context.WithTimeout(context.Background(), cfg.ConnectTimeout)
		err := m.ReadFacts(ctx)
		cancel()
		if err != nil {
			say(err.Error(), true)
			return false
		}
	}
	if probs := m.Facts().Problems(); len(probs) > 0 {
		if !m.Facts().SeesTriggers() {
			probs = append(probs, "until it runs, what triggers write is not seen; with TRIGGER on *.* the account would see which tables have triggers, and writes to them through mycached would invalidate everything")
		}
		say(strings.Join(probs, "; "), true)
		return false
	}
	id := cfg.BinlogServerID
	if id == 0 {
		id = randomServerID()
	}
	opts := binlog.Options{
		Addr: cfg.Backend, User: cfg.BinlogUser, Password: cfg.BinlogPassword,
		TLS: c.followerTLS(m), ServerID: id, Meta: m,
		Bump: c.srv.cache.BumpFromBinlog,
		Poll: max(min(cfg.MaxStaleness/10, 100*time.Millisecond), 10*time.Millisecond),
		// Half the bound: a read after a quiet spell finds the follower
		// current.
		IdlePoll:  min(cfg.MaxStaleness/2, time.Second),
		Heartbeat: max(min(cfg.MaxStaleness/2, time.Second), 100*time.Millisecond),
		Logger:    c.srv.log,
	}
	if c.dir != nil {
		opts.State = &followerState{dir: c.dir, meta: m, log: c.srv.log}
	}
	f, err := binlog.Start(opts)
	if err != nil {
		say(err.Error(), true)
		return false
	}
	c.mu.Lock()
	c.follower, c.state = f, "running"
	c.mu.Unlock()
	if cfg.Consistency == ConsistencyBounded && c.srv.store.Shared() {
		// Bounded hits trust the follower, which cannot show what the
		// binlog does not: the writes other sidecars know are unlogged.
		w := &unloggedWatch{store: c.srv.store, timeout: cfg.MemcachedTimeout, demanded: f.Demanded}
		done := make(chan struct{})
		c.mu.Lock()
		c.watchDone = done
		c.mu.Unlock()
		go w.run(opts.Poll, max(opts.IdlePoll, opts.Poll), c.stop, done)
		c.srv.cache.SetFollower(watchedFollower{f, w})
	} else {
		c.srv.cache.SetFollower(f)
	}
	c.srv.log.Info("binlog follower started", "server_id", id, "consistency", string(cfg.Consistency), "max_staleness", cfg.MaxStaleness.String())
	return true
}

// tls is the TLS configuration of mycached's own connections to the
// backend, as --backend-tls says; nil means plain TCP.
func (c *coherence) tls() *tls.Config {
	if c.srv.cfg.BackendTLS == BackendTLSOff {
		return nil
	}
	return c.srv.relay.BackendTLSConf
}

// followerTLS is tls for the follower, which cannot fall back to plain
// TCP itself: under "preferred" it uses TLS when the server has it.
func (c *coherence) followerTLS(m *meta.Meta) *tls.Config {
	if c.srv.cfg.BackendTLS == BackendTLSPreferred && !m.Facts().HaveSSL {
		return nil
	}
	return c.tls()
}

// randomServerID picks a replica id for the follower, away from the small
// numbers servers are usually given.
func randomServerID() uint32 {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return 1<<24 + binary.LittleEndian.Uint32(b[:])%(1<<31-1<<24)
}

// unloggedWatch reads, at each of the follower's polls, the fleet's
// generation of deps.Unlogged in memcached, which a sidecar bumps, with
// what they change, for the writes it knows the binlog will not show (a
// session's sql_log_bin off, MYCACHED INVALIDATE TABLE and FLUSH). When
// it moves, the local view's global generation is bumped: every L1 entry
// is checked against memcached again, whose generations the writer
// bumped. Such writes are rare, and cost a bounded sidecar its L1, not
// the fleet its memcached entries.
type unloggedWatch struct {
	store   *store.Store
	timeout time.Duration
	// demanded reports whether the cache asked for freshness lately.
	demanded func() bool
	// polled is when the last poll that read the generation began (unix
	// ns): every such write acknowledged before it has been seen.
	polled atomic.Int64
	gen    uint64
	seen   bool
}

// run polls every tick while the follower's freshness is asked for
// (demanded), else every idle.
func (w *unloggedWatch) run(every, idle time.Duration, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(every)
	defer t.Stop()
	var last time.Time
	for {
		if now := time.Now(); w.demanded() || now.Sub(last) >= idle-every/2 {
			last = now
			w.poll()
		}
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

func (w *unloggedWatch) poll() {
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), w.timeout)
	g, err := w.store.SharedGen(ctx, deps.Unlogged)
	cancel()
	if err != nil {
		return // not fresh: past the bound, bounded reads go to the server
	}
	if !w.seen || g != w.gen {
		// The first poll too: what was written before it is unknown.
		w.store.BumpLocal([]string{deps.Global})
	}
	w.gen, w.seen = g, true
	w.polled.Store(began.UnixNano())
}

// watchedFollower is the follower as a bounded sidecar's cache sees it:
// fresh as of the earlier of what it applied and the unlogged watch's
// last poll.
type watchedFollower struct {
	*binlog.Follower
	w *unloggedWatch
}

func (f watchedFollower) FreshAsOf() time.Time {
	t := f.Follower.FreshAsOf()
	if p := time.Unix(0, f.w.polled.Load()); p.Before(t) {
		return p
	}
	return t
}

// close stops the follower, saving its position, and the metadata
// connection.
func (c *coherence) close() {
	select {
	case <-c.stop:
	default:
		close(c.stop)
	}
	<-c.done
	c.mu.Lock()
	f, m, watch := c.follower, c.meta, c.watchDone
	c.follower, c.meta = nil, nil
	c.mu.Unlock()
	if watch != nil {
		<-watch
	}
	if f != nil {
		c.srv.cache.SetFollower(nil)
		f.Close()
	}
	if m != nil {
		m.Close()
	}
	if c.dir != nil {
		c.dir.Close()
	}
}

// statusRows are the follower's rows of SHOW MYCACHED STATUS.
func (c *coherence) statusRows() [][2]string {
	c.mu.Lock()
	f, state := c.follower, c.state
	c.mu.Unlock()
	rows := [][2]string{{"Binlog_follower", state}}
	if f == nil {
		return rows
	}
	st := f.Status()
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	ms := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return strconv.FormatInt(time.Since(t).Milliseconds(), 10)
	}
	if !st.Running {
		rows[0][1] = "reconnecting: " + st.LastError
	}
	return append(rows,
		[2]string{"Binlog_position", st.Position},
		[2]string{"Binlog_staleness_ms", ms(st.FreshAsOf)},
		[2]string{"Binlog_last_message_ms", ms(st.LastMessage)},
		[2]string{"Binlog_last_commit_age_s", lagSeconds(st.LastEvent)},
		[2]string{"Binlog_events", u(st.Events)},
		[2]string{"Binlog_transactions", u(st.Transactions)},
		[2]string{"Binlog_bumps", u(st.Bumps)},
		[2]string{"Binlog_early_bumps", u(st.EarlyBumps)},
		[2]string{"Binlog_reconnects", u(st.Reconnects)},
		[2]string{"Binlog_lost_positions", u(st.LostPosition)},
		[2]string{"Binlog_unlogged_changes", u(st.Unlogged)},
		[2]string{"Binlog_position_reads", u(st.PositionReads)},
	)
}

func lagSeconds(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return fmt.Sprintf("%.0f", time.Since(t).Seconds())
}

// backendReached tells the follower that a session reached the server:
// one waiting to connect again (the server was down) tries at once, so
// that the writes clients make now are seen within milliseconds, not
// after the rest of its wait.
func (c *coherence) backendReached() {
	if c == nil {
		return
	}
	c.mu.Lock()
	f := c.follower
	c.mu.Unlock()
	if f != nil {
		f.Nudge()
	}
}

// followerStatus returns the follower's status, and false when none runs.
func (c *coherence) followerStatus() (binlog.Status, bool) {
	c.mu.Lock()
	f := c.follower
	c.mu.Unlock()
	if f == nil {
		return binlog.Status{}, false
	}
	return f.Status(), true
}

// WaitBinlog returns once the binlog follower has applied every
// transaction committed on the server before the call, settle bumps
// included, or when ctx ends. It fails when no follower runs. Tests and
// tools use it to wait for a write made around mycached to be seen.
func (s *Server) WaitBinlog(ctx context.Context) error {
	s.coh.mu.Lock()
	f := s.coh.follower
	s.coh.mu.Unlock()
	if f == nil {
		return fmt.Errorf("mysqlproxy: no binlog follower runs (%s)", s.coh.stateString())
	}
	return f.Wait(ctx)
}

func (c *coherence) stateString() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state
}

// followerState keeps the binlog follower's position in the state
// directory and, with it, what Meta learned of the tables that writes to
// each table write too (meta.CoWrites). A sidecar that resumes from the
// position knows them at once, so its first write to each table after a
// restart need not wait for the follower to learn them again.
//
// The co-writes file is written when they changed, before the position,
// under a tag that the position's file names. A snapshot is restored only
// with the position saved under its tag: it was taken after that
// position's events were applied, and whatever DDL came after is read
// again from there, making its tables unseen as it did before.
type followerState struct {
	dir  *statedir.Dir
	meta *meta.Meta
	log  *slog.Logger

	mu      sync.Mutex // serializes Save; protects tag and version
	tag     uint64     // the co-writes file's tag; 0 until this run wrote one
	version uint64     // the Meta co-writes version the file holds
}

// coWritesFile is the content of the co-writes file.
type coWritesFile struct {
	Tag uint64 `json:"tag"`
	meta.CoWrites
}

// Load implements binlog.PositionStore.
func (s *followerState) Load() (string, error) {
	pos, tag, err := s.dir.Position().LoadTagged()
	if err != nil || pos == "" || tag == 0 {
		return pos, err
	}
	b, err := s.dir.CoWrites()
	var f coWritesFile
	if err == nil && b != nil {
		err = json.Unmarshal(b, &f)
	}
	switch {
	case err != nil:
		s.log.Warn("binlog: the co-writes saved are unreadable; they are learned again", "err", err)
	case f.Tag != tag:
		s.log.Info("binlog: the co-writes saved do not hold at the saved position; they are learned again")
	default:
		s.meta.RestoreCoWrites(f.CoWrites)
		s.log.Info("binlog: the co-writes saved at the position are known again", "tables", len(f.Seen))
	}
	return pos, nil
}

// Save implements binlog.PositionStore.
func (s *followerState) Save(pos string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tag == 0 || s.meta.CoWritesVersion() != s.version {
		cw, v := s.meta.SnapshotCoWrites()
		tag := uint64(time.Now().UnixNano())
		b, err := json.Marshal(coWritesFile{Tag: tag, CoWrites: cw})
		if err == nil {
			err = s.dir.SaveCoWrites(b)
		}
		if err != nil {
			s.log.Warn("binlog: saving the co-writes failed", "err", err)
			s.tag = 0
		} else {
			s.tag, s.version = tag, v
		}
	}
	return s.dir.Position().SaveTagged(pos, s.tag)
}
