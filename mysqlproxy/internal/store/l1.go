package store

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"
)

// l1Shards is the number of L1 shards. Each has its own lock and LRU
// list, so concurrent lookups rarely contend.
const l1Shards = 64

// l1 is the in-process tier: a sharded LRU bounded in bytes. It maps keys
// to immutable *Entry values. Entries too large for their shard's share
// of the bound go to one extra shard for large entries, which holds a
// quarter of the bound, so that a big result is cached rather than
// silently dropped.
type l1 struct {
	shards [l1Shards + 1]l1Shard // the last one is for large entries
	large  atomic.Int64          // entries in the large shard; lets get skip it
}

// node is an element of a shard's intrusive LRU list.
type node struct {
	key        string
	e          *Entry
	size       int64
	prev, next *node
}

type l1Shard struct {
	mu    sync.Mutex       // protects all fields below
	m     map[string]*node // key -> node
	root  node             // sentinel: root.next is the most recent
	bytes int64
	limit int64
}

func newL1(limit int64) *l1 {
	c := &l1{}
	per := limit * 3 / 4 / l1Shards
	for i := range c.shards {
		s := &c.shards[i]
		s.m = make(map[string]*node)
		s.root.next, s.root.prev = &s.root, &s.root
		s.limit = per
	}
	c.shards[l1Shards].limit = limit - per*l1Shards
	return c
}

func (c *l1) largeShard() *l1Shard { return &c.shards[l1Shards] }

func (c *l1) shard(key string) *l1Shard {
	return &c.shards[xxhash.Sum64String(key)%l1Shards]
}

// get returns the entry for key and marks it recently used. It does not
// allocate.
func (s *l1Shard) get(key string) *Entry {
	s.mu.Lock()
	n := s.m[key]
	if n == nil {
		s.mu.Unlock()
		return nil
	}
	s.unlink(n)
	s.pushFront(n)
	s.mu.Unlock()
	return n.e
}

// get returns the entry for key from its shard, or from the large shard.
func (c *l1) get(key string) *Entry {
	if e := c.shard(key).get(key); e != nil || c.large.Load() == 0 {
		return e
	}
	return c.largeShard().get(key)
}

// set stores e under key, evicting least recently used entries to stay
// within the shard's byte bound, and reports whether it was admitted. An
// entry larger than the large shard is not (and replaces nothing: any
// older entry is removed).
func (c *l1) set(key string, e *Entry) bool {
	size := e.size(key)
	s := c.shard(key)
	c.delete(key)
	if size > s.limit {
		s = c.largeShard()
		if size > s.limit {
			return false
		}
		defer func() { c.large.Store(int64(s.count())) }()
	}
	s.set(key, e, size)
	return true
}

func (s *l1Shard) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

func (s *l1Shard) set(key string, e *Entry, size int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.m[key]; old != nil {
		s.remove(old)
	}
	for s.bytes+size > s.limit && s.root.prev != &s.root {
		s.remove(s.root.prev)
	}
	n := &node{key: key, e: e, size: size}
	s.m[key] = n
	s.pushFront(n)
	s.bytes += size
}

// delete removes key and reports whether it was present.
func (c *l1) delete(key string) bool {
	found := c.shard(key).deleteIf(key, nil)
	if c.large.Load() > 0 && c.largeShard().deleteIf(key, nil) {
		c.large.Add(-1)
		found = true
	}
	return found
}

// deleteIf removes key only if it still holds e, so that a stale reader
// does not remove a newer entry put meanwhile.
func (c *l1) deleteIf(key string, e *Entry) {
	c.shard(key).deleteIf(key, e)
	if c.large.Load() > 0 && c.largeShard().deleteIf(key, e) {
		c.large.Add(-1)
	}
}

// deleteIf removes key if it holds e, or whatever it holds when e is nil.
func (s *l1Shard) deleteIf(key string, e *Entry) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := s.m[key]; n != nil && (e == nil || n.e == e) {
		s.remove(n)
		return true
	}
	return false
}

// purge removes every key for which match is true.
func (c *l1) purge(match func(key string) bool) {
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		for k, n := range s.m {
			if match(k) {
				s.remove(n)
			}
		}
		s.mu.Unlock()
	}
	c.large.Store(int64(c.largeShard().count()))
}

// keys returns the keys for which match is true and whose entry has not
// expired at now.
func (c *l1) keys(now time.Time, match func(key string) bool) []string {
	var out []string
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		for k, n := range s.m {
			if match(k) && !expired(n.e, now) {
				out = append(out, k)
			}
		}
		s.mu.Unlock()
	}
	return out
}

// usage returns the bytes and entries held.
func (c *l1) usage() (bytes, entries int64) {
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		bytes += s.bytes
		entries += int64(len(s.m))
		s.mu.Unlock()
	}
	return bytes, entries
}

func (s *l1Shard) unlink(n *node) {
	n.prev.next = n.next
	n.next.prev = n.prev
	n.prev, n.next = nil, nil
}

func (s *l1Shard) pushFront(n *node) {
	n.prev = &s.root
	n.next = s.root.next
	s.root.next.prev = n
	s.root.next = n
}

func (s *l1Shard) remove(n *node) {
	s.unlink(n)
	delete(s.m, n.key)
	s.bytes -= n.size
}

func expired(e *Entry, now time.Time) bool {
	return !e.Expires.IsZero() && !now.Before(e.Expires)
}
