package cachepolicy

import (
	"strings"
	"sync"

	"github.com/cespare/xxhash/v2"
)

// memoShards spreads the memo over independent locks so that concurrent
// sessions reading different shapes do not contend on one mutex.
const memoShards = 32

// memoKey is everything a shape-only decision may depend on.
type memoKey struct {
	digest, db, user, kind string
	flags                  uint8 // in_transaction, prepared, cacheable, point_lookup
}

type memoEntry struct {
	key memoKey
	d   Decision
	ok  bool
}

type memoShard struct {
	mu    sync.RWMutex          // protects m and bytes
	m     map[uint64]memoEntry  // by hash of the key; the entry holds the key to verify
	bytes int                   // the keys' and decisions' strings
	_     [64 - 24 - 8 - 8]byte // keep shards on separate cache lines
}

// memoBytes bounds the bytes of strings the memo holds, over all shards:
// digests are as long as the statements, and each client may send
// statements of a new shape, megabytes long, one after another.
const memoBytes = 16 << 20

// size is what an entry's strings take.
func (e *memoEntry) size() int {
	n := len(e.key.digest) + len(e.key.db) + len(e.key.user) + len(e.key.kind) + 64
	for _, d := range e.d.Depends {
		n += len(d) + 16
	}
	return n
}

// memo remembers cache() decisions per statement shape. It is bounded, in
// entries and in bytes: a full shard is emptied, which costs a few Lua
// calls to refill and keeps the bookkeeping out of the hit path.
type memo struct {
	perShard int
	shards   [memoShards]memoShard
}

func newMemo(size int) *memo {
	m := &memo{perShard: max(size/memoShards, 1)}
	for i := range m.shards {
		m.shards[i].m = make(map[uint64]memoEntry)
	}
	return m
}

func flagsOf(q *Query) uint8 {
	var f uint8
	if q.InTransaction {
		f |= 1
	}
	if q.Prepared {
		f |= 2
	}
	if q.Cacheable {
		f |= 4
	}
	if q.PointLookup {
		f |= 8
	}
	return f
}

// hashQuery hashes the key fields. Field boundaries are not marked: the
// entry stores the whole key, so a collision is a miss, never a wrong hit.
func hashQuery(q *Query) uint64 {
	h := xxhash.Sum64String(q.Digest)
	h = h*31 + xxhash.Sum64String(q.DB)
	h = h*31 + xxhash.Sum64String(q.User)
	h = h*31 + xxhash.Sum64String(q.Kind)
	return h*31 + uint64(flagsOf(q))
}

func (m *memo) get(q *Query) (Decision, bool, bool) {
	h := hashQuery(q)
	s := &m.shards[h%memoShards]
	s.mu.RLock()
	e, found := s.m[h]
	s.mu.RUnlock()
	if !found || e.key.digest != q.Digest || e.key.db != q.DB || e.key.user != q.User ||
		e.key.kind != q.Kind || e.key.flags != flagsOf(q) {
		return Decision{}, false, false
	}
	return e.d, e.ok, true
}

func (m *memo) put(q *Query, d Decision, ok bool) {
	h := hashQuery(q)
	// The proxy may pass strings that alias its buffers; the memo keeps
	// its own copies.
	e := memoEntry{
		key: memoKey{
			digest: strings.Clone(q.Digest),
			db:     strings.Clone(q.DB),
			user:   strings.Clone(q.User),
			kind:   strings.Clone(q.Kind),
			flags:  flagsOf(q),
		},
		d:  d,
		ok: ok,
	}
	if d.Depends != nil {
		// The policy may return the proxy's strings (q.tables).
		e.d.Depends = make([]string, len(d.Depends))
		for i, dep := range d.Depends {
			e.d.Depends[i] = strings.Clone(dep)
		}
	}
	size := e.size()
	if size > memoBytes/memoShards/8 {
		return // a shape this long is decided each time
	}
	s := &m.shards[h%memoShards]
	s.mu.Lock()
	if len(s.m) >= m.perShard || s.bytes+size > memoBytes/memoShards {
		clear(s.m)
		s.bytes = 0
	}
	if old, ok := s.m[h]; ok {
		s.bytes -= old.size()
	}
	s.m[h] = e
	s.bytes += size
	s.mu.Unlock()
}
