package cache

import (
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"

	"github.com/mycached/mycached/cachepolicy"
	"github.com/mycached/mycached/mysqlproxy/internal/metrics"
	"github.com/mycached/mycached/mysqlproxy/internal/store"
)

// Stats are the cache's counters, exported on /metrics and by SHOW
// MYCACHED STATUS.
type Stats struct {
	reg             *metrics.Registry
	hitsL1          *metrics.Counter // mycached_cache_hits_total{tier="l1"}
	hitsMemcached   *metrics.Counter // mycached_cache_hits_total{tier="memcached"}
	misses          *metrics.Counter
	bypasses        *metrics.CounterVec
	stores          *metrics.Counter
	snapshotStores  *metrics.CounterVec
	shared          *metrics.Counter
	refreshes       *metrics.Counter
	invalidations   *metrics.Counter
	fallbacks       *metrics.Counter
	strictFallbacks *metrics.Counter
	peerChecked     *metrics.Counter
	hitLatency      *metrics.Histogram
	missLatency     *metrics.Histogram
}

// NewStats registers the cache's metrics in reg, with gauges that read
// the store's state and the count of open sessions.
func NewStats(reg *metrics.Registry, st *store.Store, sessions func() int) *Stats {
	hits := reg.CounterVec("mycached_cache_hits_total", "Reads served from the cache, by tier.", "tier")
	s := &Stats{
		reg:             reg,
		hitsL1:          hits.With("l1"),
		hitsMemcached:   hits.With("memcached"),
		misses:          reg.Counter("mycached_cache_misses_total", "Cacheable reads not found in the cache."),
		bypasses:        reg.CounterVec("mycached_cache_bypass_total", "Reads that did not use the cache, by reason; a miss whose response could not be stored (too-large, not-stored, fill-memory-full) counts here too, as well as a miss.", "reason"),
		stores:          reg.Counter("mycached_cache_stores_total", "Responses stored in the cache."),
		snapshotStores:  reg.CounterVec("mycached_cache_snapshot_stores_total", "Misses read in a transaction's snapshot, by what became of them once the binlog follower could tell whether the snapshot was current: stored, changed (something they depend on changed since the snapshot), or dropped (the follower did not catch up in time, or too many waited).", "outcome"),
		shared:          reg.Counter("mycached_cache_singleflight_shared_total", "Misses answered by another client's concurrent fill."),
		refreshes:       reg.Counter("mycached_cache_refreshes_total", "Reads that refreshed an entry past its soft ttl (read afresh while others were served the entry)."),
		invalidations:   reg.Counter("mycached_invalidations_total", "Generation bumps requested by writes."),
		fallbacks:       reg.Counter("mycached_bounded_fallbacks_total", "Bounded reads sent to the server because the binlog follower was not current."),
		strictFallbacks: reg.Counter("mycached_strict_fallbacks_total", "Strict reads sent to the server because the binlog follower was not current: it resumes after a restart, or cannot reconnect."),
		peerChecked:     reg.Counter("mycached_strict_local_checks_total", "Strict reads checked against the local view because every peer was linked."),
		hitLatency:      reg.Histogram("mycached_hit_latency_seconds", "Time from lookup to replay of a hit.", metrics.DefaultLatencyBuckets()),
		missLatency:     reg.Histogram("mycached_miss_latency_seconds", "Time from lookup to stored response of a miss.", metrics.DefaultLatencyBuckets()),
	}
	// The reasons known here are created up front, so that /metrics lists
	// them at 0 before the first bypass and a rate() over them starts from
	// a real sample; reasons from statement analysis appear on first use.
	for _, why := range bypassReasons() {
		s.bypasses.With(why)
	}
	for _, o := range []string{"stored", "changed", "dropped"} {
		s.snapshotStores.With(o)
	}
	reg.GaugeFunc("mycached_sessions", "Open client sessions.", func() float64 { return float64(sessions()) })
	reg.GaugeFunc("mycached_l1_bytes", "Bytes held by the in-process cache.", func() float64 { return float64(st.Stats().L1Bytes) })
	reg.GaugeFunc("mycached_l1_entries", "Entries held by the in-process cache.", func() float64 { return float64(st.Stats().L1Entries) })
	reg.GaugeFunc("mycached_pending_bumps", "Invalidations waiting for memcached to come back.", func() float64 { return float64(st.Stats().PendingBumps) })
	reg.GaugeFunc("mycached_bumps_late", "Writes whose invalidations failed to reach memcached at first and landed when tried again, before the write's OK.", func() float64 { return float64(st.Stats().BumpsLate) })
	reg.GaugeFunc("mycached_bumps_unlanded", "Writes answered OK with invalidations still pending in memcached: other sidecars may serve what they changed until they land or their followers see the write.", func() float64 { return float64(st.Stats().BumpsUnlanded) })
	reg.GaugeFunc("mycached_memcached_errors", "memcached operations that failed.", func() float64 { return float64(st.Stats().MemcachedErrors) })
	reg.GaugeFunc("mycached_stores_queued", "Entries whose memcached write is queued or under way (writes run off the clients' path).", func() float64 { return float64(st.Stats().StoresQueued) })
	reg.GaugeFunc("mycached_stores_dropped", "Entries whose memcached write was dropped because the queue was full.", func() float64 { return float64(st.Stats().StoresDropped) })
	reg.GaugeFunc("mycached_memcached_gets", "Multi-gets sent to memcached (cache lookups and kv reads).", func() float64 { return float64(st.Stats().MemcachedGets) })
	reg.GaugeFunc("mycached_memcached_get_writes", "Socket writes that sent those multi-gets; concurrent gets to one server share a write.", func() float64 { return float64(st.Stats().MemcachedGetWrites) })
	return s
}

// PolicyMetrics exports the Lua engine's counters.
func (s *Stats) PolicyMetrics(e *cachepolicy.Engine) {
	s.reg.GaugeFunc("mycached_policy_calls", "Policy hook calls that entered Lua.", func() float64 { return float64(e.Stats().Calls) })
	s.reg.GaugeFunc("mycached_policy_memo_hits", "Policy decisions answered from the per-shape memo.", func() float64 { return float64(e.Stats().MemoHits) })
	s.reg.GaugeFunc("mycached_policy_kills", "Policy hook calls killed past their deadline or memory budget, or by shutdown.", func() float64 { return float64(e.Stats().Kills) })
	s.reg.GaugeFunc("mycached_policy_errors", "Policy hook calls that raised an error.", func() float64 { return float64(e.Stats().Errors) })
	s.reg.GaugeFunc("mycached_policy_bad_results", "Policy hook calls that returned a result of the wrong shape.", func() float64 { return float64(e.Stats().BadResults) })
}

// Reads are the read counters since start: hits by tier, misses (relayed
// to fill an entry) and bypasses (relayed without using the cache).
type Reads struct {
	L1Hits, MemcachedHits, Misses, Bypasses uint64
}

// Reads returns the read counters now.
func (s *Stats) Reads() Reads {
	return Reads{
		L1Hits:        s.hitsL1.Value(),
		MemcachedHits: s.hitsMemcached.Value(),
		Misses:        s.misses.Value(),
		Bypasses:      s.bypasses.Sum(),
	}
}

func (s *Stats) hit(t store.Tier, d time.Duration) {
	if t == store.TierMemcached {
		s.hitsMemcached.Inc()
	} else {
		s.hitsL1.Inc()
	}
	s.hitLatency.Observe(d.Seconds())
}

func (s *Stats) miss()             { s.misses.Inc() }
func (s *Stats) bypass(why string) { s.bypasses.With(why).Inc() }

// QueryStats keeps per-digest counts for SHOW MYCACHED QUERIES, and each
// shape's admission state. It is bounded: at the cap, a new digest makes
// room by dropping the shapes no statement used since the last time room
// was made, at most once per statsSweepEvery. Shapes in use stay, and a
// new one is untracked (admitted as in probation) until there is room.
type QueryStats struct {
	m     sync.Map // digest -> *queryStat
	n     atomic.Int64
	epoch atomic.Uint32 // counts the sweeps; a shape notes the one it was last used in

	sweep     sync.Mutex // serializes sweeps; protects lastSweep
	lastSweep time.Time
}

const maxTrackedDigests = 5000

// statsSweepEvery bounds how often a full table is swept: a sweep walks
// every shape.
const statsSweepEvery = time.Second

type queryStat struct {
	hits, misses, bypasses atomic.Int64
	why                    atomic.Pointer[string]
	adm                    admission
	used                   atomic.Uint32 // the epoch of its last use
}

// maxStatDigest is the longest digest kept whole as a shape's name: a
// longer one (a statement of thousands of columns) is kept as its start
// and a hash of the rest, so that the shapes tracked hold at most
// maxTrackedDigests times this many bytes, whatever clients send.
const maxStatDigest = 1 << 10

// statKey is the name digest is tracked under.
func statKey(digest string) string {
	if len(digest) <= maxStatDigest {
		return digest
	}
	return fmt.Sprintf("%s... #%016x", digest[:maxStatDigest-24], xxhash.Sum64String(digest))
}

// stat returns the counts of digest, created on first use; nil past the
// cap or for an empty digest.
func (q *QueryStats) stat(digest string) *queryStat {
	if digest == "" {
		return nil
	}
	digest = statKey(digest)
	epoch := q.epoch.Load()
	v, ok := q.m.Load(digest)
	if !ok {
		if q.n.Load() >= maxTrackedDigests && !q.makeRoom() {
			return nil
		}
		epoch = q.epoch.Load()
		st := &queryStat{}
		st.used.Store(epoch)
		v, ok = q.m.LoadOrStore(digest, st)
		if !ok {
			q.n.Add(1)
		}
	}
	st := v.(*queryStat)
	if st.used.Load() != epoch {
		st.used.Store(epoch)
	}
	return st
}

// makeRoom drops the shapes unused since the last sweep, if the last was
// long enough ago, and reports whether there is room for another.
func (q *QueryStats) makeRoom() bool {
	if !q.sweep.TryLock() {
		return false
	}
	defer q.sweep.Unlock()
	if q.n.Load() < maxTrackedDigests {
		return true
	}
	now := time.Now()
	if now.Sub(q.lastSweep) < statsSweepEvery {
		return false
	}
	q.lastSweep = now
	epoch := q.epoch.Load()
	q.m.Range(func(k, v any) bool {
		if v.(*queryStat).used.Load() != epoch {
			if q.m.CompareAndDelete(k, v) {
				q.n.Add(-1)
			}
		}
		return true
	})
	q.epoch.Add(1)
	return q.n.Load() < maxTrackedDigests
}

// note counts one statement: hit > 0, miss < 0, or a bypass with reason.
func (q *QueryStats) note(digest, why string, hit int) {
	q.stat(digest).note(why, hit)
}

func (st *queryStat) note(why string, hit int) {
	if st == nil {
		return
	}
	switch {
	case hit > 0:
		st.hits.Add(1)
	case hit < 0:
		st.misses.Add(1)
	default:
		st.bypasses.Add(1)
		if why != "" {
			if p := st.why.Load(); p == nil || *p != why {
				st.why.Store(&why)
			}
		}
	}
}

// admission returns the shape's admission state, nil when untracked.
func (st *queryStat) admission() *admission {
	if st == nil {
		return nil
	}
	return &st.adm
}

// QueryRow is one digest's counts, as SHOW MYCACHED QUERIES shows them.
type QueryRow struct {
	Digest                 string
	Hits, Misses, Bypasses int64
	Why                    string
	// Admission is the shape's admission state (probation, admitted or
	// rejected) and AdmissionWhy the numbers of its last verdict.
	Admission, AdmissionWhy string
}

// Top returns the n busiest digests.
func (q *QueryStats) Top(n int) []QueryRow {
	var rows []QueryRow
	q.m.Range(func(k, v any) bool {
		st := v.(*queryStat)
		r := QueryRow{Digest: k.(string), Hits: st.hits.Load(), Misses: st.misses.Load(), Bypasses: st.bypasses.Load()}
		if p := st.why.Load(); p != nil {
			r.Why = *p
		}
		r.Admission, r.AdmissionWhy = st.adm.describe()
		rows = append(rows, r)
		return true
	})
	sort.Slice(rows, func(i, j int) bool {
		return rows[i].Hits+rows[i].Misses+rows[i].Bypasses > rows[j].Hits+rows[j].Misses+rows[j].Bypasses
	})
	if len(rows) > n {
		rows = rows[:n]
	}
	return rows
}

// Reset forgets every digest.
func (q *QueryStats) Reset() {
	q.m.Clear()
	q.n.Store(0)
}
