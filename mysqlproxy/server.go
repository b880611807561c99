// Package mysqlproxy is mycached's MySQL-wire proxy: the listener, the
// sessions, the handshake and auth relay, and the command relay.
package mysqlproxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/mycached/mycached/cachepolicy"
	"github.com/mycached/mycached/mysqlproxy/internal/binlog"
	"github.com/mycached/mycached/mysqlproxy/internal/cache"
	"github.com/mycached/mycached/mysqlproxy/internal/deps"
	"github.com/mycached/mycached/mysqlproxy/internal/hook"
	"github.com/mycached/mycached/mysqlproxy/internal/kvproxy"
	"github.com/mycached/mycached/mysqlproxy/internal/metrics"
	"github.com/mycached/mycached/mysqlproxy/internal/peers"
	"github.com/mycached/mycached/mysqlproxy/internal/relay"
	"github.com/mycached/mycached/mysqlproxy/internal/sqlinfo"
	"github.com/mycached/mycached/mysqlproxy/internal/statedir"
	"github.com/mycached/mycached/mysqlproxy/internal/statuspage"
	"github.com/mycached/mycached/mysqlproxy/internal/store"
	"github.com/mycached/mycached/mysqlproxy/internal/wire"
)

// ErrServerClosed is returned by Serve after Close or Shutdown.
var ErrServerClosed = errors.New("mysqlproxy: server closed")

// Server accepts MySQL client connections and relays each to its own
// backend connection. Its methods are safe for concurrent use.
//
// The relay core (internal/relay) serves each connection; the features
// that decide what happens to a statement sit on top of it, each in a
// package of its own: the policy's query hook (internal/hook), key/value
// pseudo-queries (internal/kvproxy), mycached's own statements
// (internal/admin) and the cache (internal/cache). frontend.go puts them
// in order.
type Server struct {
	cfg   Config
	log   *slog.Logger
	relay relay.Options

	store  *store.Store
	engine *cachepolicy.Engine // the Lua engine, when it is the policy
	// reloadErr is why the last reload of the policy failed, or "".
	reloadErr atomic.Pointer[string]
	cache     *cache.Engine
	kv        *kvproxy.Server
	hook      *hook.Hook
	reg       *metrics.Registry
	coh       *coherence
	status    *statuspage.Page

	peerMu sync.Mutex  // protects mesh
	mesh   *peers.Mesh // the links to the fleet's other sidecars; nil when closed

	mu        sync.Mutex // protects listeners and sessions
	listeners map[net.Listener]struct{}
	sessions  map[*relay.Session]struct{}
	wg        sync.WaitGroup // counts sessions
	draining  atomic.Bool
	nextID    atomic.Uint64
	// sweepOnce starts sweepIdle with the first session; sweepStop,
	// closed when the server stops accepting, ends it.
	sweepOnce sync.Once
	sweepStop chan struct{}
	kvConns   atomic.Int64 // the kv-only listener's connections
}

// NewServer checks cfg, fills its defaults and returns a server ready to
// Serve.
func NewServer(cfg Config) (*Server, error) {
	cfg.fillDefaults()
	if err := kvproxy.CheckPrefix(cfg.KVPrefix); err != nil {
		return nil, err
	}
	kvOnly := cfg.Backend == "" && len(cfg.KVPasswords) > 0 // ServeKV needs no backend
	if _, _, err := net.SplitHostPort(cfg.Backend); err != nil && !kvOnly {
		return nil, fmt.Errorf("mysqlproxy: backend %q: %w", cfg.Backend, err)
	}
	s := &Server{
		cfg:       cfg,
		log:       cfg.Logger,
		listeners: make(map[net.Listener]struct{}),
		sessions:  make(map[*relay.Session]struct{}),
		sweepStop: make(chan struct{}),
	}
	bt, err := backendTLSConfig(cfg)
	if err != nil {
		return nil, err
	}
	s.relay = relay.Options{
		Backend:        cfg.Backend,
		ConnectTimeout: cfg.ConnectTimeout,
		BackendTLS:     cfg.BackendTLS,
		BackendTLSConf: bt,
		ProxyProtocol:  cfg.ProxyProtocol,
		SecureNetworks: cfg.SecureNetworks,
		ClientTLS:      cfg.TLS,
		MaxPacket:      cfg.MaxPacket,
		Draining:       s.draining.Load,
		Reached:        func() { s.coh.backendReached() }, // coh is made below
	}
	// A point lookup's text carries its key, so an application that reads
	// many rows by id has as many texts as rows it reads often; the exact
	// memo is sized to hold a working set of them (bounded: about 30 MiB).
	analyzer := sqlinfo.NewAnalyzer(sqlinfo.Options{ExactCap: 100000})
	var dir *statedir.Dir
	var journal store.Journal
	if cfg.StateDir != "" {
		if dir, err = statedir.Open(cfg.StateDir); err != nil {
			return nil, err
		}
		journal = dir.Journal()
	}
	s.store = store.New(store.Options{
		Journal:          journal,
		Servers:          cfg.Memcached,
		Timeout:          cfg.MemcachedTimeout,
		RawTimeout:       cfg.KVTimeout,
		BumpWait:         cfg.BumpWait,
		GetsInFlight:     cfg.MemcachedGets,
		L1Bytes:          cfg.CacheMemory,
		CompressMinBytes: cfg.CompressMinBytes,
		Logger:           cfg.Logger,
	})
	// Responses filled into the cache and large kv replies, while their
	// clients read them, share one bound.
	fill := wire.NewBudget(cfg.FillMemory)
	s.reg = metrics.NewRegistry()
	s.kv = kvproxy.New(kvproxy.Config{
		Prefix: cfg.KVPrefix, MaxBytes: cfg.KVMaxBytes, Users: cfg.KVUsers,
		PerUser: cfg.KVPerUser, Passwords: cfg.KVPasswords, Timeout: cfg.KVTimeout,
		Replies: fill, Metrics: s.reg,
	}, s.store, len(cfg.Memcached) == 0)
	stats := cache.NewStats(s.reg, s.store, s.sessionCount)
	policy := cfg.PolicyEngine
	switch {
	case cfg.Passthrough:
		policy = cachepolicy.None{}
	case policy == nil:
		eng, err := cachepolicy.Load(cfg.Policy, cachepolicy.Options{
			Timeout:    cfg.PolicyTimeout,
			MaxMemory:  cfg.PolicyMemory,
			Logger:     cfg.Logger,
			KV:         s.kv.LuaKV(),
			Metrics:    s.scriptMetric,
			DefaultTTL: cfg.DefaultTTL,
		})
		if err != nil {
			s.store.Close()
			if dir != nil {
				dir.Close()
			}
			return nil, err
		}
		s.engine, policy = eng, eng
		stats.PolicyMetrics(eng)
	}
	s.cache = cache.NewEngine(cache.Config{
		Passthrough:         cfg.Passthrough,
		TableLevel:          cfg.TableLevel,
		MaxResultBytes:      cfg.MaxResultBytes,
		Fill:                fill,
		CacheInTransactions: cfg.CacheInTransactions,
		Consistency:         cfg.Consistency,
		MaxStaleness:        cfg.MaxStaleness,
	}, analyzer, s.store, policy, stats, nil)
	s.hook = &hook.Hook{Engine: s.engine, Analyzer: analyzer, Tables: s.cache.Tables}
	if dir == nil && len(cfg.Memcached) > 0 && !kvOnly {
		// Nothing tells whether the last run stopped with invalidations it
		// could not land in memcached: assume it did.
		s.store.Bump(context.Background(), []string{deps.Global})
	}
	if err := s.startPeers(); err != nil {
		s.store.Close()
		if dir != nil {
			dir.Close()
		}
		return nil, err
	}
	s.startCoherence(dir)
	s.followerMetrics()
	s.startStatusPage()
	return s, nil
}

func backendTLSConfig(cfg Config) (*tls.Config, error) {
	host, _, _ := net.SplitHostPort(cfg.Backend)
	tc := &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
	switch cfg.BackendTLS {
	case BackendTLSOff, BackendTLSPreferred, BackendTLSRequired:
		// Without a CA to check against, TLS here protects against
		// passive capture only; "verify" is the mode that authenticates.
		tc.InsecureSkipVerify = true
	case BackendTLSVerify:
		if cfg.BackendCA != "" {
			pem, err := os.ReadFile(cfg.BackendCA)
			if err != nil {
				return nil, fmt.Errorf("mysqlproxy: backend CA: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("mysqlproxy: backend CA %s: no certificates", cfg.BackendCA)
			}
			tc.RootCAs = pool
		}
	default:
		return nil, fmt.Errorf("mysqlproxy: backend TLS mode %q is not one of off, preferred, required, verify", cfg.BackendTLS)
	}
	return tc, nil
}

// Serve accepts connections on ln until Close or Shutdown. Each connection
// gets its own goroutine, which recovers from panics so that one bad
// session never takes the process down.
func (s *Server) Serve(ln net.Listener) error {
	return s.serve(ln, "main", func(sess *relay.Session) { sess.Run(s.newFrontend) })
}

// ServeKV accepts connections on ln for the kv-only listener until Close
// or Shutdown. It needs no backend: it authenticates users against
// Config.KVPasswords itself (mysql_native_password; clients that start
// with another plugin are switched to it) and answers only the key/value
// pseudo-queries, text or prepared. Other SQL gets an error and the
// connection goes on. Each connection gets its own goroutine, which
// recovers from panics as Serve's do.
func (s *Server) ServeKV(ln net.Listener) error {
	return s.serve(ln, "kv", s.kv.RunKV)
}

// serve is the accept loop of Serve and ServeKV: each connection becomes a
// session that run serves.
func (s *Server) serve(ln net.Listener, name string, run func(*relay.Session)) error {
	s.mu.Lock()
	if s.draining.Load() {
		s.mu.Unlock()
		return ErrServerClosed
	}
	s.listeners[ln] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, ln)
		s.mu.Unlock()
	}()
	var delay time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if s.draining.Load() {
				return ErrServerClosed
			}
			if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() || errors.Is(err, syscallEMFILE) {
				// Out of descriptors: back off instead of spinning.
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				s.log.Warn("accept failed; retrying", "listener", name, "err", err, "delay", delay)
				time.Sleep(delay)
				continue
			}
			return err
		}
		delay = 0
		s.start(c, name, run)
	}
}

func (s *Server) start(c net.Conn, listener string, run func(*relay.Session)) {
	if listener == "kv" {
		if s.kvConns.Add(1) > int64(s.cfg.KVMaxConnections) {
			s.kvConns.Add(-1)
			refuseTooMany(c)
			return
		}
		inner := run
		run = func(sess *relay.Session) {
			defer s.kvConns.Add(-1)
			inner(sess)
		}
	}
	log := s.log
	if listener != "main" {
		log = log.With("listener", listener)
	}
	sess := relay.NewSession(&s.relay, s.nextID.Add(1), c, log)
	s.mu.Lock()
	if s.draining.Load() {
		s.mu.Unlock()
		sess.Client.Release()
		_ = c.Close()
		if listener == "kv" {
			s.kvConns.Add(-1)
		}
		return
	}
	s.sessions[sess] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	s.sweepOnce.Do(func() { go s.sweepIdle() })
	go func() {
		defer s.forget(sess)
		defer func() {
			if r := recover(); r != nil {
				sess.Log.Error("session panic", "panic", r)
			}
		}()
		run(sess)
	}()
}

// refuseTooMany answers a connection past a listener's bound as a server
// at its max_connections does, with error 1040 (SQL state 08004) in place
// of its greeting, and closes it.
func refuseTooMany(c net.Conn) {
	const msg = "#08004Too many connections"
	p := make([]byte, 4, 4+3+len(msg))
	code := uint16(mysql.ER_CON_COUNT_ERROR)
	p = append(p, 0xff, byte(code), byte(code>>8))
	p = append(p, msg...)
	n := len(p) - 4
	p[0], p[1], p[2], p[3] = byte(n), byte(n>>8), byte(n>>16), 0
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = c.Write(p)
	_ = c.Close()
}

func (s *Server) forget(sess *relay.Session) {
	s.mu.Lock()
	delete(s.sessions, sess)
	s.mu.Unlock()
	s.wg.Done()
}

// sweepIdle has every session that has waited a while for its client
// holding its buffers give them back (relay.Session.SweepIdle), once a
// second, until the server stops accepting.
func (s *Server) sweepIdle() {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-s.sweepStop:
			return
		case now := <-t.C:
			s.mu.Lock()
			for sess := range s.sessions {
				sess.SweepIdle(now)
			}
			s.mu.Unlock()
		}
	}
}

// stopAccepting closes the listeners and marks the server draining.
func (s *Server) stopAccepting() {
	s.mu.Lock()
	if !s.draining.Load() {
		close(s.sweepStop)
	}
	s.draining.Store(true)
	for ln := range s.listeners {
		_ = ln.Close()
	}
	s.mu.Unlock()
}

// Close stops accepting and closes every session at once, and the cache
// tiers with them.
func (s *Server) Close() error {
	defer s.store.Close()
	defer s.coh.close()
	defer s.closePeers()
	defer s.status.Close()
	s.stopAccepting()
	if s.engine != nil {
		// Statements still running get no policy decision (they are served
		// uncached); Close never waits on a hook.
		s.engine.Close()
	}
	s.mu.Lock()
	for sess := range s.sessions {
		_ = sess.Client.NetConn.Close()
		if b := sess.Backend; b != nil {
			_ = b.NetConn.Close()
		}
	}
	s.mu.Unlock()
	return nil
}

// Shutdown stops accepting, lets statements in flight finish and their
// sessions end, and closes what is left when ctx is done.
func (s *Server) Shutdown(ctx context.Context) error {
	s.stopAccepting()
	// A read deadline in the past wakes every session blocked reading its
	// next command; a session that is busy finishes its statement first,
	// since the deadline touches only reads from the client. A session
	// inside a transaction reads on until the transaction ends (within
	// ctx), so that its COMMIT is not lost to the drain.
	s.mu.Lock()
	for sess := range s.sessions {
		if !sess.IdleInTransaction() {
			_ = sess.Client.NetConn.SetReadDeadline(time.Now())
		}
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		s.status.Close()
		s.leavePeers()
		s.coh.close()
		s.store.Close()
		return nil
	case <-ctx.Done():
		_ = s.Close()
		// Every connection is closed; a session stuck elsewhere (an
		// admin's policy reload reading a script on a hung mount) must
		// not keep the process from exiting.
		select {
		case <-done:
		case <-time.After(closeGrace):
			s.log.Warn("sessions still running after their connections were closed; stopping without them")
		}
		return ctx.Err()
	}
}

// closeGrace is how long Shutdown waits for sessions once it has closed
// their connections.
const closeGrace = 5 * time.Second

// AdminHandler serves the admin endpoints: the status page at / and its
// data at /status.json, /metrics, /healthz and /debug/pprof/.
func (s *Server) AdminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if s.draining.Load() {
			// A load balancer stops sending new clients.
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("draining\n"))
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.Handle("/metrics", s.reg)
	mux.Handle("/{$}", s.status)
	mux.Handle("/status.json", s.status)
	// Profiles, for finding where a slow deployment spends its time; the
	// admin listener is meant for loopback or an operator network only.
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	// Every endpoint only reads: other methods are refused, so that no
	// proxy or crawler takes them for something that acts.
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// ReloadPolicy reloads the policy scripts. A script that fails to load
// leaves the old ones in force, and the error names its file and line.
func (s *Server) ReloadPolicy() error {
	if s.engine == nil {
		return nil
	}
	err := s.engine.Reload()
	why := ""
	if err != nil {
		why = err.Error()
	}
	s.reloadErr.Store(&why)
	return err
}

// policyRows are SHOW MYCACHED STATUS's rows on the policy: the scripts
// that run, why the last reload failed (the old scripts then still run),
// and the hooks' counters.
func (s *Server) policyRows() [][2]string {
	if s.engine == nil {
		return nil
	}
	files := strings.Join(s.engine.Files(), ",")
	if files == "" {
		files = "built-in"
	}
	why := ""
	if p := s.reloadErr.Load(); p != nil {
		why = *p
	}
	st := s.engine.Stats()
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	return [][2]string{
		{"Policy_scripts", files},
		{"Policy_reload_error", why},
		{"Policy_calls", u(st.Calls)},
		{"Policy_memo_hits", u(st.MemoHits)},
		{"Policy_errors", u(st.Errors)},
		{"Policy_kills", u(st.Kills)},
	}
}

// scriptMetric counts a script's metrics.inc(name) as script_<name>.
func (s *Server) scriptMetric(name string) {
	if c, err := s.reg.CounterByName("script_"+name, "Counted by a policy script."); err == nil {
		c.Inc()
	}
}

func (s *Server) sessionCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

// IsAdmin reports whether a session's account may run the admin
// statements: the account the server matched, not the name the client
// typed.
func (s *Server) IsAdmin(sess *relay.Session) bool { return sess.IsAccount(s.cfg.AdminUsers) }

// StatusRows are the rows of SHOW MYCACHED STATUS.
func (s *Server) StatusRows() [][2]string {
	return slices.Concat(s.cache.StatusRows(s.sessionCount()), s.policyRows(), s.coh.statusRows(), s.peerRows())
}

// Cache is the cache engine that admin statements inspect.
func (s *Server) Cache() *cache.Engine { return s.cache }

const stalenessHelp = "How far behind the server the local view may be: the time since the follower was last known to have applied everything; +Inf while it never was (no follower runs, or it has not caught up since it started or since its stream was last cut)."

// followerMetrics exports the binlog follower's state.
func (s *Server) followerMetrics() {
	st := func(f func(binlog.Status) float64) func() float64 {
		return func() float64 {
			if v, ok := s.coh.followerStatus(); ok {
				return f(v)
			}
			return 0
		}
	}
	age := func(t time.Time) float64 {
		if t.IsZero() {
			return 0
		}
		return time.Since(t).Seconds()
	}
	s.reg.GaugeFunc("mycached_binlog_follower_up", "1 while the binlog follower is connected and following.", st(func(v binlog.Status) float64 {
		if v.Running {
			return 1
		}
		return 0
	}))
	s.reg.GaugeFunc("mycached_binlog_staleness_seconds", stalenessHelp, func() float64 {
		// Unbounded while no follower has been current: an alert on it
		// fires for a follower that never started too.
		if v, ok := s.coh.followerStatus(); ok && !v.FreshAsOf.IsZero() {
			return age(v.FreshAsOf)
		}
		return math.Inf(1)
	})
	s.reg.GaugeFunc("mycached_binlog_last_message_seconds", "Time since the follower last heard from the server (an event or a heartbeat).", st(func(v binlog.Status) float64 { return age(v.LastMessage) }))
	s.reg.GaugeFunc("mycached_binlog_lag_seconds", "Age of the commit time of the last transaction applied (second precision).", st(func(v binlog.Status) float64 { return age(v.LastEvent) }))
	s.reg.GaugeFunc("mycached_binlog_events", "Binlog events read.", st(func(v binlog.Status) float64 { return float64(v.Events) }))
	s.reg.GaugeFunc("mycached_binlog_transactions", "Binlog transactions applied.", st(func(v binlog.Status) float64 { return float64(v.Transactions) }))
	s.reg.GaugeFunc("mycached_binlog_reconnects", "Times the follower connected again.", st(func(v binlog.Status) float64 { return float64(v.Reconnects) }))
	s.reg.GaugeFunc("mycached_binlog_lost_positions", "Global invalidations for a position the follower lost.", st(func(v binlog.Status) float64 { return float64(v.LostPosition) }))
	s.reg.GaugeFunc("mycached_binlog_position_reads", "Times the follower read the server's binlog position, to tell how current it is.", st(func(v binlog.Status) float64 { return float64(v.PositionReads) }))
	s.reg.GaugeFunc("mycached_binlog_unlogged_changes", "Global invalidations for changes the binlog does not show (a global variable that changes results, rows replicated unlogged, a server restart, which empties MEMORY tables).", st(func(v binlog.Status) float64 { return float64(v.Unlogged) }))
}
