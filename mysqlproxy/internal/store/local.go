package store

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"
)

// localGens is a sidecar's own view of the generations: a counter per
// dependency, in memory, that this process's confirmed writes and its
// binlog follower bump. It is the only view in L1-only mode, and with
// memcached it is what lets an L1 hit be checked without a network round
// trip (Bounded). Reads are lock-free, since an L1 hit reads one per
// dependency; creation and bumps lock the dependency's shard.
//
// The view is bounded: a full shard drops half its counters. A dropped
// counter comes back above every value its shard ever issued (hwm), so an
// entry that recorded the old value can never match again: dropping costs
// misses, never a stale hit.
//
// Each counter also keeps when it last changed, so that a read whose
// snapshot may be older than its own start (one inside a REPEATABLE READ
// transaction) can tell whether what it depends on changed since the
// transaction began. A bump of a counter that is not there creates it, to
// keep that time; one created by a read has changed no later than the
// last time its shard dropped counters.
type localGens struct {
	seed   maphash.Seed
	shards [localShards]localShard
}

// counter is one dependency's local generation.
type counter struct {
	gen     atomic.Uint64
	changed atomic.Int64 // unix nanoseconds of the last bump
}

const localShards = 64

// maxLocalGens bounds the counters held, over all shards.
const maxLocalGens = 1 << 20

type localShard struct {
	m  sync.Map   // dep -> *counter
	mu sync.Mutex // serializes writers; protects n, hwm and dropped
	n  int        // entries in m
	// hwm is the highest generation this shard ever issued.
	hwm uint64
	// dropped is when the shard last dropped counters (unix ns).
	dropped int64
	// drops counts the times it did, for readers that hold no lock.
	drops atomic.Uint64
}

func (g *localGens) shard(dep string) *localShard {
	if g.seed == (maphash.Seed{}) {
		panic("store: localGens used before init")
	}
	return &g.shards[maphash.String(g.seed, dep)%localShards]
}

func (g *localGens) init() { g.seed = maphash.MakeSeed() }

// get returns dep's generation, creating it from seed if missing.
func (g *localGens) get(dep string, seed uint64) uint64 {
	sh := g.shard(dep)
	if v, ok := sh.lookup(dep); ok {
		return v
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if v, ok := sh.lookup(dep); ok {
		return v
	}
	return sh.create(dep, seed, sh.dropped).gen.Load()
}

// create adds dep, changed at changed; sh.mu must be held.
func (sh *localShard) create(dep string, seed uint64, changed int64) *counter {
	if sh.n >= maxLocalGens/localShards {
		sh.dropHalf()
	}
	v := max(seed, sh.hwm+1)
	p := new(counter)
	p.gen.Store(v)
	p.changed.Store(changed)
	sh.m.Store(dep, p)
	sh.n++
	sh.hwm = v
	return p
}

// lookup returns dep's generation without creating it.
func (g *localGens) lookup(dep string) (uint64, bool) { return g.shard(dep).lookup(dep) }

func (sh *localShard) lookup(dep string) (uint64, bool) {
	p, ok := sh.m.Load(dep)
	if !ok {
		return 0, false
	}
	return p.(*counter).gen.Load(), true
}

// changedSince reports whether dep may have been bumped at or after t
// (unix ns).
func (g *localGens) changedSince(dep string, t int64) bool {
	sh := g.shard(dep)
	p, ok := sh.m.Load(dep)
	if !ok {
		sh.mu.Lock()
		defer sh.mu.Unlock()
		return sh.dropped >= t
	}
	return p.(*counter).changed.Load() >= t
}

// dropHalf forgets about half the shard's counters; sh.mu must be held.
// Map iteration order is random, so which half is left to chance, at O(1)
// amortized cost and with no bookkeeping on the read path.
func (sh *localShard) dropHalf() {
	sh.dropped = time.Now().UnixNano()
	sh.drops.Add(1)
	n := sh.n / 2
	sh.m.Range(func(k, _ any) bool {
		sh.m.Delete(k)
		sh.n--
		n--
		return n > 0
	})
}

// bump increments dep's generation, creating it (from seed) if missing.
func (g *localGens) bump(dep string, seed uint64) {
	sh := g.shard(dep)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	now := time.Now().UnixNano()
	p, ok := sh.m.Load(dep)
	if !ok {
		sh.create(dep, seed, now)
		return
	}
	c := p.(*counter)
	v := c.gen.Add(1)
	c.changed.Store(now)
	sh.hwm = max(sh.hwm, v)
}

// LocalHash summarizes this process's generations of deps in one number,
// which changes when any of them is bumped here (by a write through this
// sidecar, or by its binlog follower). It reads no memcached.
//
// It creates no counter: a read of deps never seen costs no more than
// the hash. A missing counter stands in by its shard's count of drops,
// which a counter created by a bump and then dropped changes, while a
// bump of a missing one creates it: either way the hash changes.
func (s *Store) LocalHash(deps []string) uint64 {
	h := uint64(14695981039346656037)
	for _, d := range deps {
		sh := s.local.shard(d)
		g, ok := sh.lookup(d)
		if !ok {
			// Generations come from the clock in microseconds, far
			// above a count of drops: the two cannot be confused.
			g = sh.drops.Load()
		}
		h = (h ^ g) * 1099511628211
	}
	return h
}
