package store

// The sharded LRU that was L1 until otter replaced it, kept as the
// baseline of the comparison in l1_compare_test.go.

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/cespare/xxhash/v2"
)

// lruShards is the number of L1 shards. Each has its own lock and LRU
// list, so concurrent lookups rarely contend.
const lruShards = 64

// lruCache is a sharded LRU bounded in bytes. It maps keys to immutable
// *Entry values.
//
// The byte bound is the cache's, not each shard's. Split among the shards,
// it let a shard hold only a sixty-fourth of it, so that large entries
// (a result of a megabyte) crowded one another out of their shard while
// the others stood empty: 32 MiB held 7.6 MiB of such entries. Instead a
// set reserves its entry's bytes against the whole bound, and while they
// do not fit it evicts a least recently used entry: of the tails of the
// next lruEvictSample shards in turn, the one used longest ago. Any entry up
// to the bound fits, and the bytes held never exceed it.
type lruCache struct {
	limit  int64
	bytes  atomic.Int64  // held by the shards, plus entries being linked in
	tick   atomic.Uint64 // a coarse clock of use: sets advance it, gets read it
	next   atomic.Uint32 // the shard the next eviction visits first
	shards [lruShards]lruShard
}

// An entry's use is stamped from lruCache.tick, which only sets advance, so
// that a hit writes no shared memory: a set stamps its entry with the tick
// it advances to (by two), a get with the tick plus one, so that an entry
// got since the last set is newer than that set's entry. Gets between two
// sets share a stamp; an eviction needs no finer order than that.

// lruEvictSample is how many shards' tails an eviction compares. Each tail
// is its shard's least recently used entry; comparing a few approximates
// one LRU list without one lock. One alone would evict whichever tail's
// turn it was, which for a few large entries is any of them.
const lruEvictSample = 4

// lruNode is an element of a shard's intrusive LRU list.
type lruNode struct {
	key        string
	e          *Entry
	size       int64
	used       uint64 // when last set or got (see useStamp)
	prev, next *lruNode
}

type lruShard struct {
	mu    sync.Mutex          // protects all fields below
	m     map[string]*lruNode // key -> lruNode
	root  lruNode             // sentinel: root.next is the most recent
	bytes int64
}

func newLRU(limit int64) *lruCache {
	c := &lruCache{limit: limit}
	for i := range c.shards {
		s := &c.shards[i]
		s.m = make(map[string]*lruNode)
		s.root.next, s.root.prev = &s.root, &s.root
	}
	return c
}

func (c *lruCache) shard(key string) *lruShard {
	return &c.shards[xxhash.Sum64String(key)%lruShards]
}

// get returns the entry for key and marks it recently used. It does not
// allocate.
func (c *lruCache) get(key string) *Entry {
	s := c.shard(key)
	s.mu.Lock()
	n := s.m[key]
	if n == nil {
		s.mu.Unlock()
		return nil
	}
	s.unlink(n)
	s.pushFront(n)
	n.used = c.tick.Load() + 1
	s.mu.Unlock()
	return n.e
}

// set stores e under key, evicting least recently used entries to stay
// within the byte bound, and reports whether it was admitted. An entry
// larger than the bound is not (and replaces nothing: any older entry is
// removed).
func (c *lruCache) set(key string, e *Entry) bool {
	size := e.size(key)
	c.delete(key)
	if size > c.limit || !c.reserve(size) {
		return false
	}
	s := c.shard(key)
	s.mu.Lock()
	if old := s.m[key]; old != nil {
		// A concurrent set of the same key linked in first.
		c.remove(s, old)
	}
	n := &lruNode{key: key, e: e, size: size, used: c.tick.Add(2)}
	s.m[key] = n
	s.pushFront(n)
	s.bytes += size
	s.mu.Unlock()
	return true
}

// lruReserveRounds bounds how long reserve waits, in passes over the shards
// that found nothing to evict: the bytes over the bound then belong to
// entries that concurrent sets are linking in, which takes them moments.
const lruReserveRounds = 100

// reserve counts size bytes against the bound, evicting until they fit. It
// reports false if they never do (see lruReserveRounds).
func (c *lruCache) reserve(size int64) bool {
	idle := 0
	for {
		b := c.bytes.Load()
		if b+size <= c.limit {
			if c.bytes.CompareAndSwap(b, b+size) {
				return true
			}
			continue
		}
		if c.evictOne() {
			idle = 0
			continue
		}
		if idle++; idle > lruReserveRounds {
			return false
		}
		runtime.Gosched()
	}
}

// evictOne removes a least recently used entry: of the tails of the next
// lruEvictSample shards that have one, the one used longest ago. It reports
// false when every shard is empty. It holds one shard's lock at a time.
func (c *lruCache) evictOne() bool {
	var victim *lruShard
	var oldest uint64
	for tried, found := 0, 0; tried < lruShards && found < lruEvictSample; tried++ {
		s := &c.shards[c.next.Add(1)%lruShards]
		s.mu.Lock()
		if n := s.root.prev; n != &s.root && (victim == nil || n.used < oldest) {
			victim, oldest = s, n.used
		}
		if s.root.prev != &s.root {
			found++
		}
		s.mu.Unlock()
	}
	if victim == nil {
		return false
	}
	// Its tail may have changed meanwhile; the tail now is as good.
	victim.mu.Lock()
	if n := victim.root.prev; n != &victim.root {
		c.remove(victim, n)
	}
	victim.mu.Unlock()
	return true
}

// delete removes key and reports whether it was present.
func (c *lruCache) delete(key string) bool {
	return c.deleteIf(key, nil)
}

// deleteIf removes key if it holds e, or whatever it holds when e is nil,
// so that a stale reader does not remove a newer entry put meanwhile. It
// reports whether it removed one.
func (c *lruCache) deleteIf(key string, e *Entry) bool {
	s := c.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := s.m[key]; n != nil && (e == nil || n.e == e) {
		c.remove(s, n)
		return true
	}
	return false
}

// remove unlinks n from s and gives its bytes back. s.mu is held.
func (c *lruCache) remove(s *lruShard, n *lruNode) {
	s.unlink(n)
	delete(s.m, n.key)
	s.bytes -= n.size
	c.bytes.Add(-n.size)
}

func (s *lruShard) unlink(n *lruNode) {
	n.prev.next = n.next
	n.next.prev = n.prev
	n.prev, n.next = nil, nil
}

func (s *lruShard) pushFront(n *lruNode) {
	n.prev = &s.root
	n.next = s.root.next
	s.root.next.prev = n
	s.root.next = n
}
