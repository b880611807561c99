package sqlinfo

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
)

// shardedMemo is a map bounded in entries and in bytes, split into shards
// so that concurrent readers of different statements do not share a
// lock's cache line. The byte bound is the memo's, not each shard's: a
// statement of tens of kilobytes, whose analysis may hold many times that
// in pinned values, fits whichever shard it hashes to.
type shardedMemo[V any] struct {
	seed     maphash.Seed
	maxBytes int64         // bound on bytes, the shards together
	maxEntry int64         // largest entry kept
	cost     func(V) int64 // bytes a value holds, beyond its key
	bytes    atomic.Int64  // what the shards hold, together
	next     atomic.Uint32 // the shard that shrink visits next
	shards   [memoShards]memoShard[V]
}

const memoShards = 32

// memoEntryOverhead approximates a map slot: the key's string header, the
// entry, and the map's own bookkeeping.
const memoEntryOverhead = 64

type memoShard[V any] struct {
	mu    sync.RWMutex // protects m and bytes
	m     map[string]memoEntry[V]
	bytes int64
	cap   int // entries
}

type memoEntry[V any] struct {
	v    V
	cost int64 // key, value and overhead, in bytes
}

// init sets the memo's bounds: capacity entries and maxBytes bytes, of
// which one entry may take an eighth. cost estimates what a value holds.
func (m *shardedMemo[V]) init(capacity int, maxBytes int64, cost func(V) int64) {
	m.seed = maphash.MakeSeed()
	m.maxBytes, m.maxEntry, m.cost = maxBytes, maxBytes/8, cost
	per := max(capacity/memoShards, 1)
	for i := range m.shards {
		m.shards[i].m = make(map[string]memoEntry[V])
		m.shards[i].cap = per
	}
}

func (m *shardedMemo[V]) shard(k string) *memoShard[V] {
	return &m.shards[maphash.String(m.seed, k)%memoShards]
}

func (m *shardedMemo[V]) get(k string) (V, bool) {
	s := m.shard(k)
	s.mu.RLock()
	e, ok := s.m[k]
	s.mu.RUnlock()
	return e.v, ok
}

func (m *shardedMemo[V]) put(k string, v V) {
	m.update(k, func(V) V { return v })
}

// update stores f(old) under k, unless it is larger than an entry may be;
// then k is left out. A shard full of entries drops a random half of
// them; a memo over its bytes drops random halves of shards in turn until
// it holds three quarters of its bound. Dropping halves (map iteration
// order is random) keeps the bounds with O(1) amortized cost and no
// per-entry bookkeeping on the read path.
func (m *shardedMemo[V]) update(k string, f func(old V) V) {
	s := m.shard(k)
	s.mu.Lock()
	old, ok := s.m[k]
	if !ok && len(s.m) >= s.cap {
		m.dropHalf(s)
	}
	v := f(old.v)
	c := int64(len(k)) + m.cost(v) + memoEntryOverhead
	if c > m.maxEntry {
		if ok {
			delete(s.m, k)
			s.bytes -= old.cost
			m.bytes.Add(-old.cost)
		}
		s.mu.Unlock()
		return
	}
	s.m[k] = memoEntry[V]{v: v, cost: c}
	s.bytes += c - old.cost
	total := m.bytes.Add(c - old.cost)
	s.mu.Unlock()
	if total > m.maxBytes {
		m.shrink()
	}
}

// shrink drops random halves of shards, one shard at a time and never
// holding two locks, until the memo holds at most three quarters of its
// bound. Concurrent updates may each add up to one entry meanwhile.
func (m *shardedMemo[V]) shrink() {
	for range 2 * memoShards * 8 {
		if m.bytes.Load() <= m.maxBytes/4*3 {
			return
		}
		s := &m.shards[m.next.Add(1)%memoShards]
		s.mu.Lock()
		m.dropHalf(s)
		s.mu.Unlock()
	}
}

// dropHalf removes a random half of s's entries, at least one. s.mu is
// held.
func (m *shardedMemo[V]) dropHalf(s *memoShard[V]) {
	n := max(len(s.m)/2, 1)
	for key, e := range s.m {
		if n == 0 {
			break
		}
		delete(s.m, key)
		s.bytes -= e.cost
		m.bytes.Add(-e.cost)
		n--
	}
}

// usage returns the entries and bytes the memo holds.
func (m *shardedMemo[V]) usage() (entries int, bytes int64) {
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.RLock()
		entries += len(s.m)
		s.mu.RUnlock()
	}
	return entries, m.bytes.Load()
}
