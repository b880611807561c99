package cache

import "sync"

// ghosts remember, for the reads of the last while, which entry each
// would have stored (its key) and the local generations it would have
// been stored under, but not the entry itself. A read whose key is there
// with unchanged generations would have been a hit had its shape's
// entries been stored: that is what adaptive admission weighs, for a
// rejected shape and for a cold cache alike.
type ghosts struct {
	shards [ghostShards]ghostShard
}

type ghostShard struct {
	mu sync.Mutex
	m  map[uint64]uint64 // key hash -> local generations' hash
}

const (
	ghostShards = 32
	// ghostCap bounds the keys remembered, over all shards (about 40
	// bytes each).
	ghostCap = 1 << 18
)

// seen reports whether key was remembered with the same generations,
// and remembers it with these when remember is set: when the read would
// have stored its entry. One that would not (inside a snapshot that may
// predate other writes) may still have been served one, but leaves none.
func (g *ghosts) seen(key, gens uint64, remember bool) bool {
	sh := &g.shards[key%ghostShards]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	old, ok := sh.m[key]
	if !remember {
		return ok && old == gens
	}
	if sh.m == nil || (!ok && len(sh.m) >= ghostCap/ghostShards) {
		// Full: start afresh rather than keep a recency order on the
		// read path. What is lost is only what the next reads rebuild.
		sh.m = make(map[uint64]uint64, 1024)
	}
	sh.m[key] = gens
	return ok && old == gens
}
