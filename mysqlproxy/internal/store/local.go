package store

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
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
// misses, never a stale hit. For the same reason a bump of a counter that
// is not there does nothing: no entry in this process can depend on it.
type localGens struct {
	seed   maphash.Seed
	shards [localShards]localShard
}

const localShards = 64

// maxLocalGens bounds the counters held, over all shards.
const maxLocalGens = 1 << 20

type localShard struct {
	m  sync.Map   // dep -> *atomic.Uint64
	mu sync.Mutex // serializes writers; protects n and hwm
	n  int        // entries in m
	// hwm is the highest generation this shard ever issued.
	hwm uint64
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
	if sh.n >= maxLocalGens/localShards {
		sh.dropHalf()
	}
	v := max(seed, sh.hwm+1)
	p := new(atomic.Uint64)
	p.Store(v)
	sh.m.Store(dep, p)
	sh.n++
	sh.hwm = v
	return v
}

// lookup returns dep's generation without creating it.
func (g *localGens) lookup(dep string) (uint64, bool) { return g.shard(dep).lookup(dep) }

func (sh *localShard) lookup(dep string) (uint64, bool) {
	p, ok := sh.m.Load(dep)
	if !ok {
		return 0, false
	}
	return p.(*atomic.Uint64).Load(), true
}

// dropHalf forgets about half the shard's counters; sh.mu must be held.
// Map iteration order is random, so which half is left to chance, at O(1)
// amortized cost and with no bookkeeping on the read path.
func (sh *localShard) dropHalf() {
	n := sh.n / 2
	sh.m.Range(func(k, _ any) bool {
		sh.m.Delete(k)
		sh.n--
		n--
		return n > 0
	})
}

// bump increments dep's generation, if this process holds it.
func (g *localGens) bump(dep string) {
	sh := g.shard(dep)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	p, ok := sh.m.Load(dep)
	if !ok {
		return
	}
	v := p.(*atomic.Uint64).Add(1)
	sh.hwm = max(sh.hwm, v)
}
