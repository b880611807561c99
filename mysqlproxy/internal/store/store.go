// Package store holds mycached's cache tiers: an in-process L1 and shared
// memcached servers, with per-dependency generations that invalidate
// entries when the tables they read are written.
//
// Three namespaces share memcached and can never collide: query entries
// ("q:"), generations ("g:") and internal items such as chunks ("i:").
// Raw keys (the kv namespace) may use any other memcached-legal key.
package store

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/mycached/mycached/mysqlproxy/internal/store/ring"
)

// Errors returned by the store.
var (
	// ErrBadKey means a key is not memcached-legal (over 250 bytes, or
	// containing spaces or control characters), or a query key lacks the
	// "q:" prefix.
	ErrBadKey = errors.New("store: invalid key")
	// ErrReservedKey means a raw key uses a prefix the store reserves
	// ("q:", "g:" or "i:").
	ErrReservedKey = errors.New("store: key uses a reserved prefix")
	// ErrBadEntry means an entry's Gens do not match its Deps.
	ErrBadEntry = errors.New("store: entry gens do not match deps")
	// ErrTooLarge means a raw value exceeds memcached's item size limit.
	ErrTooLarge = errors.New("store: value too large")
	// ErrPending means a bump did not reach memcached; it stays pending
	// and is retried until it lands.
	ErrPending = errors.New("store: bump pending")
	// ErrChanged means an entry read from a snapshot older than its
	// query (Entry.Since) depends on something that changed since.
	ErrChanged = errors.New("store: a dependency changed since the snapshot")
	// ErrCorrupt means a stored value could not be decoded.
	ErrCorrupt = errors.New("store: corrupt value")
	// ErrNoTier means there is nowhere to keep a value: L1 is off and no
	// memcached is configured.
	ErrNoTier = errors.New("store: no cache tier (L1 is off and no memcached is configured)")
	// ErrClosed means the store was closed.
	ErrClosed = errors.New("store: closed")
)

var errCorrupt = ErrCorrupt

// Defaults for Options.
const (
	DefaultTimeout      = 50 * time.Millisecond
	DefaultMaxIdleConns = 64
	DefaultL1Bytes      = 256 << 20
)

// Options configures a Store. Zero values get the documented defaults.
type Options struct {
	// Servers is the memcached host:port list. Empty means L1 only.
	Servers []string
	// Timeout bounds every memcached operation (default 50ms).
	Timeout time.Duration
	// RawTimeout bounds each raw (kv) call as a whole instead, RawKeys'
	// walk of every server included, unless its context has an earlier
	// deadline (default 1s, and never less than Timeout). A cache lookup
	// that times out falls back to MySQL; a kv operation has nowhere to
	// fall back to, so it waits longer before it fails.
	RawTimeout time.Duration
	// BumpWait bounds how long a write's bumps are tried again, before
	// its client hears OK, once the first try failed while memcached
	// answered (default 1s; < 0: not tried again before the OK). Other
	// sidecars read the generations in memcached: until a bump lands
	// there, they may serve what the write changed.
	BumpWait time.Duration
	// GetsInFlight is the most lookup gets outstanding on one server
	// (per timeout class) before concurrent lookups queue and share one
	// get (default DefaultGetsInFlight; see batch.go).
	GetsInFlight int
	// MaxIdleConns is the idle connection pool per server (default 64;
	// gomemcache's own default of 2 churns connections under load).
	MaxIdleConns int
	// L1Bytes bounds the in-process cache (default 256 MiB; < 0 means no
	// L1 entry cache).
	L1Bytes int64
	// CompressMinBytes makes memcached values whose payload is at least
	// this long flate-compressed (0 = off).
	CompressMinBytes int
	// Logger receives warnings about memcached trouble (default
	// slog.Default()).
	Logger *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Journal keeps the bumps that have not reached memcached across
	// restarts; nil keeps them in memory only.
	Journal Journal
	// NoServerMarks leaves the servers' marks alone (ringcheck.go): for
	// tests whose memcached is scripted, or reached through a link that
	// counts or delays what passes.
	NoServerMarks bool
}

// Journal is where pending bumps are kept while they have not landed, so
// that a restart cannot lose an invalidation.
type Journal interface {
	// Load returns the deps recorded as pending.
	Load() ([]string, error)
	// Save records the deps now pending; none clears the record.
	Save(deps []string) error
}

// Tier says where a Lookup found its entry.
type Tier uint8

// Tiers.
const (
	TierNone Tier = iota
	TierL1
	TierMemcached
)

// String returns "l1", "memcached" or "none", for logs and metrics labels.
func (t Tier) String() string {
	switch t {
	case TierL1:
		return "l1"
	case TierMemcached:
		return "memcached"
	}
	return "none"
}

// Status is the outcome of a Lookup.
type Status uint8

// Statuses.
const (
	// Miss: no valid entry; cur holds the current generations for a Put.
	Miss Status = iota
	// Hit: the entry is valid; serve it.
	Hit
	// Stale: the entry is valid but past its soft ttl; serve it and
	// refresh it in the background. Only one caller per key gets Stale
	// until it Puts (or refreshClaim passes); the others get Hit.
	Stale
	// Bypass: a dependency has a pending bump; do not use the cache.
	Bypass
	// Error: the cache failed; serve from MySQL.
	Error
)

// String returns the status in lower case, for logs and metrics labels.
func (s Status) String() string {
	if int(s) >= len(statusNames) {
		return "unknown"
	}
	return statusNames[s]
}

var statusNames = [...]string{"miss", "hit", "stale", "bypass", "error"}

// Stats are counters for metrics. Counters only grow; L1Bytes, L1Entries
// and PendingBumps are current values.
type Stats struct {
	L1Bytes, L1Entries int64  // held in L1 now
	L1Hits, L1Misses   uint64 // lookups answered, or not, from L1
	BoundedHits        uint64 // L1 hits checked against the local view alone
	MemcachedHits      uint64 // lookups answered from memcached
	MemcachedMisses    uint64 // lookups that found no valid entry in memcached
	Stale              uint64 // lookups that returned Stale (refreshes asked for)
	Bypasses           uint64 // lookups and snapshots refused for a pending bump
	MemcachedErrors    uint64 // failed memcached operations
	// RingMismatches counts the checks that found a mark of another
	// list of memcached servers (ringcheck.go).
	RingMismatches     uint64
	PendingBumps       int64  // deps whose bump has not landed yet
	Bumps              uint64 // generations bumped (one per dep)
	Stores             uint64 // entries Put
	ChunkedStores      uint64 // entries stored in chunks
	MemcachedGets      uint64 // multi-gets sent (lookups, kv reads)
	MemcachedGetWrites uint64 // writes that sent them: fewer when concurrent gets share one
	StoresQueued       int64  // memcached writes of entries queued or under way
	StoresDropped      uint64 // memcached writes of entries dropped on a full queue
	// BumpsLate counts writes whose bumps failed at first and landed
	// when tried again, before the write's OK; BumpsUnlanded, writes
	// answered with bumps still pending (see Options.BumpWait).
	BumpsLate, BumpsUnlanded uint64
}

type counters struct {
	l1Hits, l1Misses, mcHits, mcMisses atomic.Uint64
	boundedHits                        atomic.Uint64
	stale, bypasses, mcErrors          atomic.Uint64
	ringMismatches                     atomic.Uint64
	bumps, stores, chunked             atomic.Uint64
	mcGets, mcGetWrites                atomic.Uint64 // lookups sent, and the writes that sent them
	genCreates                         atomic.Uint64 // round trips that created a missing generation after a get
	bumpsLate, bumpsUnlanded           atomic.Uint64 // see Stats
	// answeredAt is when memcached last answered an operation (Unix
	// nanoseconds): see Store.Bump.
	answeredAt atomic.Int64
}

// Store is the cache. Its methods are safe for concurrent use.
type Store struct {
	opts Options
	log  *slog.Logger
	now  func() time.Time
	// bumpFailed limits the lines of failed bumps: while memcached is
	// away every write fails one.
	bumpFailed logEvery
	mcFailed   logEvery // other memcached operations' failures

	// The servers' marks (ringcheck.go): this list's fingerprint,
	// whether a check has succeeded, and until when another list's mark
	// holds the cache off.
	ringFP        string
	ringOK        atomic.Bool
	ringHeldUntil atomic.Int64

	l1    *l1 // nil when L1Bytes < 0
	local localGens
	keys  genKeyCache

	mc      *memcache.Client // nil in L1-only mode; writes and misc reads
	pools   []*connPool      // per server: the multi-gets of lookups, and the raw writes
	ring    *ring.Ring
	mcErr   error          // set when the servers could not be resolved
	itemMax []atomic.Int64 // per server, 0 = not read yet

	pending    pendingSet
	refreshing refreshSet
	stats      counters
	bg         background // memcached writes off the client's path

	// notify, when set, tells the fleet's other sidecars of a write's
	// bumps (see package peers).
	notify atomic.Pointer[func([]string)]

	stop chan struct{}
	// listing lets one key listing (metadump) run at a time: memcached
	// runs one crawl at a time, and answers another BUSY.
	listing chan struct{}

	closeOnce sync.Once
	wg        sync.WaitGroup
}

// New returns a Store. A server list that cannot be resolved is logged,
// and every memcached operation then fails (so the proxy fails open to
// MySQL) rather than silently caching per process.
func New(opts Options) *Store {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.RawTimeout <= 0 {
		opts.RawTimeout = time.Second
	}
	opts.RawTimeout = max(opts.RawTimeout, opts.Timeout)
	if opts.BumpWait == 0 {
		opts.BumpWait = time.Second
	}
	if opts.GetsInFlight <= 0 {
		opts.GetsInFlight = DefaultGetsInFlight
	}
	if opts.MaxIdleConns <= 0 {
		opts.MaxIdleConns = DefaultMaxIdleConns
	}
	if opts.L1Bytes == 0 {
		opts.L1Bytes = DefaultL1Bytes
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Store{
		opts: opts,
		log:  opts.Logger,
		now:  opts.Now,
		stop: make(chan struct{}),

		listing: make(chan struct{}, 1),
	}
	s.pending.init()
	s.local.init()
	if opts.Journal != nil {
		// The bumps the last run could not land: until they do, their
		// deps are served from MySQL only, as they were then.
		deps, err := opts.Journal.Load()
		if err != nil {
			s.log.Error("store: pending bumps journal unreadable; invalidating everything", "err", err)
			deps = []string{"*"}
		}
		for _, d := range deps {
			s.pending.add(d)
		}
		if len(deps) > 0 {
			s.log.Warn("store: bumps pending from the last run", "deps", deps)
		}
		s.pending.journal = opts.Journal
		s.pending.log = s.log
	}
	if opts.L1Bytes > 0 {
		s.l1 = newL1(opts.L1Bytes)
	}
	if len(opts.Servers) > 0 {
		r, err := ring.New(0, opts.Servers...)
		if err != nil {
			s.log.Error("store: memcached servers unusable; caching disabled", "servers", opts.Servers, "err", err)
			s.mcErr = err
			r, _ = ring.New(0)
		}
		s.ring = r
		s.mc = memcache.NewFromSelector(r)
		s.mc.Timeout = opts.Timeout
		s.mc.MaxIdleConns = opts.MaxIdleConns
		s.itemMax = make([]atomic.Int64, len(opts.Servers))
		for _, a := range r.Addrs() {
			s.pools = append(s.pools, newConnPool(a, opts.MaxIdleConns, opts.GetsInFlight, &s.stats, opts.Timeout, opts.RawTimeout))
		}
		s.wg.Add(1)
		go s.retryPending()
		s.startBackground()
		if s.mcErr == nil && !opts.NoServerMarks {
			s.ringFP = ringFingerprint(opts.Servers)
			ctx, cancel := context.WithTimeout(context.Background(), 4*opts.Timeout)
			if err := s.checkRing(ctx); err != nil {
				s.log.Warn("store: cannot check the memcached servers' marks; the cache waits for them", "err", err)
			}
			cancel()
			s.wg.Add(1)
			go s.watchRing()
		}
	}
	return s
}

// Close stops the background retry of pending bumps and closes idle
// memcached connections. Bumps still pending are logged: they can no
// longer land, and entries in memcached for their deps may be stale until
// their ttl.
func (s *Store) Close() {
	s.closeOnce.Do(func() {
		close(s.stop)
		s.wg.Wait()
		if n := s.pending.n.Load(); n > 0 {
			if s.opts.Journal != nil {
				s.log.Warn("store: closing with pending bumps; the journal keeps them for the next start", "deps", s.pending.names())
			} else {
				s.log.Warn("store: closing with pending bumps", "deps", s.pending.names())
			}
		}
		if s.mc != nil {
			s.mc.Close()
		}
		for _, p := range s.pools {
			p.close()
		}
	})
}

// Stats returns a snapshot of the counters.
func (s *Store) Stats() Stats {
	st := Stats{
		L1Hits:             s.stats.l1Hits.Load(),
		L1Misses:           s.stats.l1Misses.Load(),
		BoundedHits:        s.stats.boundedHits.Load(),
		MemcachedHits:      s.stats.mcHits.Load(),
		MemcachedMisses:    s.stats.mcMisses.Load(),
		Stale:              s.stats.stale.Load(),
		Bypasses:           s.stats.bypasses.Load(),
		MemcachedErrors:    s.stats.mcErrors.Load(),
		RingMismatches:     s.stats.ringMismatches.Load(),
		PendingBumps:       s.pending.n.Load(),
		Bumps:              s.stats.bumps.Load(),
		Stores:             s.stats.stores.Load(),
		ChunkedStores:      s.stats.chunked.Load(),
		MemcachedGets:      s.stats.mcGets.Load(),
		MemcachedGetWrites: s.stats.mcGetWrites.Load(),
		StoresQueued:       s.bg.busy.Load(),
		StoresDropped:      s.bg.dropped.Load(),
		BumpsLate:          s.stats.bumpsLate.Load(),
		BumpsUnlanded:      s.stats.bumpsUnlanded.Load(),
	}
	if s.l1 != nil {
		st.L1Bytes, st.L1Entries = s.l1.usage()
	}
	return st
}

// Shared reports whether memcached is configured: a tier every sidecar
// shares, whose generations every write through a sidecar bumps.
func (s *Store) Shared() bool { return s.mc != nil }

// ServerStats are one memcached server's counters. They count the get
// round trips of lookups and kv reads, the traffic a client waits on;
// writes, bumps and deletes go through gomemcache, which does not say
// which server failed, and count in Stats.MemcachedErrors only.
type ServerStats struct {
	Addr   string
	Gets   uint64        // get round trips
	Errors uint64        // of which failed (timeouts, refused connections, bad replies)
	Time   time.Duration // the time those round trips took, summed
	Idle   int           // pooled idle connections now
}

// Servers returns each memcached server's counters, in ring order; none
// in L1-only mode.
func (s *Store) Servers() []ServerStats {
	out := make([]ServerStats, 0, len(s.pools))
	for _, p := range s.pools {
		out = append(out, ServerStats{
			Addr:   p.addr.String(),
			Gets:   p.gets.Load(),
			Errors: p.getErrs.Load(),
			Time:   time.Duration(p.getNanos.Load()),
			Idle:   p.idleCount(),
		})
	}
	return out
}

// logEvery lets one log line through a second; the next says how many
// were held back.
type logEvery struct {
	last atomic.Int64 // unix ns of the last line let through
	held atomic.Int64
}

// allow reports whether a line may be logged at now, and how many were
// held back since the last one.
func (l *logEvery) allow(now time.Time) (bool, int64) {
	last := l.last.Load()
	if now.UnixNano()-last < int64(time.Second) || !l.last.CompareAndSwap(last, now.UnixNano()) {
		l.held.Add(1)
		return false, 0
	}
	return true, l.held.Swap(0)
}
