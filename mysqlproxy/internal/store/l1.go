package store

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/maypok86/otter/v2"
)

// l1 is the in-process tier: otter, a W-TinyLFU cache, bounded in bytes
// by a weigher of each entry's size. It maps keys to immutable *Entry
// values.
//
// W-TinyLFU admits a new entry only over one that has been used less
// often, so a scan of entries read once (a report, a crawler) does not
// flush the entries read all the time, as it flushed L1's LRU lists. On
// Zipf traces it hit 2.4 to 11 points more often than the sharded LRU it
// replaced, and its hits cost less (see l1_compare_test.go).
//
// The bound is exact for what a set leaves behind: otter evicts on the
// goroutine that writes (a synchronous executor), and a set that finds
// the cache over its bound, because another writer held the maintenance
// when it ran, runs the maintenance itself before it returns. So once a
// set returns, the entries it and every set before it stored are within
// the bound; only entries still being set may be over it, and their
// memory is their callers' already. Any entry up to the bound fits. A
// read never waits for the maintenance's lock, though now and then one
// does the maintenance that its buffered reads call for.
type l1 struct {
	limit int64
	c     *otter.Cache[string, *Entry]
	bytes atomic.Int64 // of the entries held, and of those being set
}

func newL1(limit int64) *l1 {
	c := &l1{limit: limit}
	c.c = otter.Must(&otter.Options[string, *Entry]{
		MaximumWeight: uint64(limit),
		Weigher:       func(key string, e *Entry) uint32 { return uint32(e.size(key)) },
		// Every entry leaves through here, evicted, replaced or deleted,
		// while otter holds it locked: the count never misses one.
		OnAtomicDeletion: func(ev otter.DeletionEvent[string, *Entry]) {
			c.bytes.Add(-ev.Value.size(ev.Key))
		},
		Executor: func(fn func()) { fn() },
	})
	return c
}

// get returns the entry for key and records the use. It does not
// allocate.
func (c *l1) get(key string) *Entry {
	e, _ := c.c.GetIfPresent(key)
	return e
}

// set stores e under key and reports whether it was admitted: an entry
// larger than the bound is not (and replaces nothing: any older entry is
// removed). An admitted entry may still lose its place at once to
// entries used more often.
func (c *l1) set(key string, e *Entry) bool {
	size := e.size(key)
	if size > c.limit || size > math.MaxUint32 {
		c.delete(key)
		return false
	}
	c.bytes.Add(size)
	c.c.Set(key, e)
	if c.bytes.Load() > c.limit {
		c.c.CleanUp()
	}
	return true
}

// delete removes key and reports whether it was present.
func (c *l1) delete(key string) bool {
	_, ok := c.c.Invalidate(key)
	return ok
}

// deleteIf removes key only if it still holds e, so that a stale reader
// does not remove a newer entry put meanwhile. It reports whether it
// removed one.
func (c *l1) deleteIf(key string, e *Entry) bool {
	removed := false
	c.c.ComputeIfPresent(key, func(old *Entry) (*Entry, otter.ComputeOp) {
		if old != e {
			return old, otter.CancelOp
		}
		removed = true
		return nil, otter.InvalidateOp
	})
	return removed
}

// purge removes every key for which match is true.
func (c *l1) purge(match func(key string) bool) {
	for k := range c.c.Keys() {
		if match(k) {
			c.c.Invalidate(k)
		}
	}
}

// keys returns the keys for which match is true and whose entry has not
// expired at now.
func (c *l1) keys(now time.Time, match func(key string) bool) []string {
	var out []string
	for k, e := range c.c.All() {
		if match(k) && !expired(e, now) {
			out = append(out, k)
		}
	}
	return out
}

// usage returns the bytes and entries held.
func (c *l1) usage() (bytes, entries int64) {
	return c.bytes.Load(), int64(c.c.EstimatedSize())
}

func expired(e *Entry, now time.Time) bool {
	return !e.Expires.IsZero() && !now.Before(e.Expires)
}
