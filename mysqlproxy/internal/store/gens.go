package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
)

// Generations. Every dependency name has a generation number; an entry
// records the generations of its deps as read before its query ran, and is
// valid only while all of them still equal the current ones. Generations
// only grow: a missing one (never seen, evicted, or lost in a memcached
// restart) is created from the clock in microseconds, which exceeds any
// value that increments could have reached since it was last created.

// Prefixes of the three reserved namespaces.
const (
	queryPrefix    = "q:"
	genPrefix      = "g:"
	internalPrefix = "i:"
)

// ReservedPrefixes returns the key prefixes the store keeps for itself,
// each with what it holds. No raw key may begin with one.
func ReservedPrefixes() map[string]string {
	return map[string]string{queryPrefix: "query entries", genPrefix: "generations", internalPrefix: "internal items"}
}

// timeSeed returns a fresh generation for a missing dependency.
func (s *Store) timeSeed() uint64 {
	return uint64(s.now().UnixNano() / 1000)
}

// genKeyCache memoizes dependency name -> memcached key, so that a lookup
// does not build the same strings on every query.
type genKeyCache struct {
	mu sync.RWMutex // protects m
	m  map[string]string
}

// maxGenKeys bounds genKeyCache; past it the map is dropped and refilled.
const maxGenKeys = 1 << 16

func (c *genKeyCache) key(dep string) string {
	c.mu.RLock()
	k, ok := c.m[dep]
	c.mu.RUnlock()
	if ok {
		return k
	}
	k = genKey(dep)
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxGenKeys {
		c.m = make(map[string]string)
	}
	c.m[dep] = k
	c.mu.Unlock()
	return k
}

// genKey maps a dependency name into the "g:" namespace. A name that would
// make an illegal memcached key is hashed; should a hashed key ever equal
// another dep's key the two merely share a generation, which can only
// cause extra misses, never a stale hit.
func genKey(dep string) string {
	k := genPrefix + dep
	if legalKey(k) {
		return k
	}
	sum := sha256.Sum256([]byte(dep))
	return genPrefix + "h:" + hex.EncodeToString(sum[:])
}

// legalKey reports whether k is a valid memcached text-protocol key.
func legalKey(k string) bool {
	if len(k) == 0 || len(k) > 250 {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] <= ' ' || k[i] == 0x7f {
			return false
		}
	}
	return true
}

// parseGen parses a decimal generation without allocating: it runs for
// every dep of every lookup.
func parseGen(v []byte) (uint64, bool) {
	// memcached may space-pad a counter whose length shrank.
	v = bytes.TrimRight(v, " ")
	if len(v) == 0 {
		return 0, false
	}
	var g uint64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if g > (math.MaxUint64-d)/10 {
			return 0, false
		}
		g = g*10 + d
	}
	return g, true
}

// Snapshot returns the current generations of deps, creating missing ones.
// The proxy calls it before sending a cacheable query to the backend and
// stores the result with the entry. ok is false when a dep has a pending
// bump or memcached failed: then the caller must not use the cache.
func (s *Store) Snapshot(ctx context.Context, deps []string) (gens []uint64, ok bool) {
	if s.pending.any(deps) || s.ringHeld() {
		s.stats.bypasses.Add(1)
		return nil, false
	}
	if s.mc == nil {
		return s.localSnap(deps), true
	}
	keys := make([]string, len(deps))
	for i, d := range deps {
		keys[i] = s.keys.key(d)
	}
	vals, err := s.getMulti(ctx, keys)
	if err != nil {
		return nil, false
	}
	gens, err = s.currentGens(ctx, keys, vals)
	if err != nil {
		return nil, false
	}
	return gens, true
}

// currentGens extracts the generations of genKeys from vals (indexed like
// genKeys), creating missing (or unparsable) ones in memcached.
func (s *Store) currentGens(ctx context.Context, genKeys []string, vals [][]byte) ([]uint64, error) {
	gens := make([]uint64, len(genKeys))
	for i, k := range genKeys {
		if v := vals[i]; v != nil {
			if g, ok := parseGen(v); ok {
				gens[i] = g
				continue
			}
		}
		g, err := s.ensureGen(ctx, k)
		if err != nil {
			return nil, err
		}
		gens[i] = g
	}
	return gens, nil
}

// genAdds returns the commands that create the generations keys[i] for
// each i in idx with a time seed, as ensureGen does, and ask for no
// reply. Sent just before the get that reads them, on the same
// connection, they save a read of a row no one has read yet the second
// round trip (the get, then the add) that ensureGen would take: the get
// reads what the add created, or what was there before (an add does
// nothing to a key that exists). One that did not take (evicted at once,
// memcached out of memory) leaves the generation missing, and ensureGen
// creates it after the get.
func (s *Store) genAdds(keys []string, idx []int) []byte {
	if len(idx) == 0 {
		return nil
	}
	seed := strconv.AppendUint(make([]byte, 0, 20), s.timeSeed(), 10)
	var b []byte
	for _, i := range idx {
		b = append(b, "add "...)
		b = append(b, keys[i]...)
		b = append(b, " 0 0 "...)
		b = strconv.AppendInt(b, int64(len(seed)), 10)
		b = append(b, " noreply\r\n"...)
		b = append(b, seed...)
		b = append(b, "\r\n"...)
	}
	return b
}

// ensureGen creates a missing generation with a time seed. add, not set:
// if another sidecar created or bumped it meanwhile, its value wins and is
// read back.
func (s *Store) ensureGen(ctx context.Context, key string) (uint64, error) {
	s.stats.genCreates.Add(1)
	for range 3 {
		seed := s.timeSeed()
		err := s.mcDo(ctx, func() error {
			return s.mc.Add(&memcache.Item{Key: key, Value: strconv.AppendUint(nil, seed, 10)})
		})
		if err == nil {
			return seed, nil
		}
		if !errors.Is(err, memcache.ErrNotStored) {
			return 0, err
		}
		vals, err := s.getMulti(ctx, []string{key})
		switch {
		case err != nil:
			return 0, err
		case vals[0] == nil:
			continue // evicted again between add and get
		}
		if g, ok := parseGen(vals[0]); ok {
			return g, nil
		}
		// Not a number: only a foreign writer could have put it there.
		// Overwrite it with a seed, which exceeds any real generation.
		err = s.mcDo(ctx, func() error {
			return s.mc.Set(&memcache.Item{Key: key, Value: strconv.AppendUint(nil, seed, 10)})
		})
		if err != nil {
			return 0, err
		}
		return seed, nil
	}
	return 0, ErrCorrupt
}

// Bump invalidates every entry that depends on any of deps. A bump that
// cannot reach memcached is never dropped: it stays pending (Lookup and
// Snapshot of its deps return Bypass) and a background goroutine retries
// it with backoff until it lands.
//
// A write's bumps that fail while memcached was answering (a stalled
// link, a lost packet, a busy server) are tried again before Bump
// returns, for up to Options.BumpWait: until they land, other sidecars
// could serve what the write changed after its client heard OK. When
// bumps were already pending and memcached has answered nothing for
// that long (it is unreachable), Bump returns at once: every write
// would otherwise wait the bound. Bumps pending while it still answers
// (a large batch that timed out on a busy server) do not stop the wait.
func (s *Store) Bump(ctx context.Context, deps []string) {
	answering := s.pending.n.Load() == 0 || time.Since(time.Unix(0, s.stats.answeredAt.Load())) < s.opts.BumpWait
	if err := s.bump(ctx, deps); err != nil {
		if !answering || s.opts.BumpWait < 0 || !s.landPending(ctx, deps, time.Now().Add(s.opts.BumpWait)) {
			s.stats.bumpsUnlanded.Add(1)
		}
	}
	s.tell(deps)
}

// landPending tries the pending ones among deps again until they land or
// deadline passes, one pipelined try at a time, and reports whether they
// landed. Once the pending set has given way to the global bump, which
// stands for deps too, that is the one tried.
func (s *Store) landPending(ctx context.Context, deps []string, deadline time.Time) bool {
	pause := retryMin
	for {
		seqs := s.pending.seqs(deps)
		if len(seqs) == 0 {
			s.stats.bumpsLate.Add(1)
			return true // landed, by the retry loop perhaps
		}
		todo := make([]string, 0, len(seqs))
		for d := range seqs {
			todo = append(todo, d)
		}
		failed, _ := s.bumpPipelinedBy(ctx, todo, deadline)
		for _, d := range todo {
			if !slices.Contains(failed, d) {
				s.pending.landed(d, seqs[d])
			}
		}
		if len(failed) == 0 {
			continue // seqs is empty now, unless they failed again meanwhile
		}
		// A refused connection fails at once: pause before trying again.
		if time.Until(deadline) < pause {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(pause):
		}
		pause = min(2*pause, 100*time.Millisecond)
	}
}

// BumpApplied is Bump for what the binlog follower applies: every
// sidecar's own follower applies it, so the others are not told.
func (s *Store) BumpApplied(ctx context.Context, deps []string) {
	s.bump(ctx, deps)
}

// SharedGen reads dep's generation in memcached, creating it when it is
// missing; it is an error without memcached.
func (s *Store) SharedGen(ctx context.Context, dep string) (uint64, error) {
	if s.mc == nil {
		return 0, errors.New("store: no memcached")
	}
	key := s.keys.key(dep)
	vals, err := s.getMulti(ctx, []string{key})
	if err != nil {
		return 0, err
	}
	gens, err := s.currentGens(ctx, []string{key}, vals)
	if err != nil {
		return 0, err
	}
	return gens[0], nil
}

// BumpLocal bumps deps in the local view alone, for a bump another
// sidecar has made in memcached and told this one of.
func (s *Store) BumpLocal(deps []string) {
	for _, d := range deps {
		s.local.bump(d, s.timeSeed())
	}
}

// SetNotify sets how a write's bumps are told to the fleet's other
// sidecars, after memcached and the local view have them; nil stops.
func (s *Store) SetNotify(f func(deps []string)) {
	if f == nil {
		s.notify.Store(nil)
		return
	}
	s.notify.Store(&f)
}

func (s *Store) tell(deps []string) {
	if f := s.notify.Load(); f != nil {
		(*f)(deps)
	}
}

// bump is Bump, reporting whether every bump landed.
//
// A write waits for its bumps before its client hears OK, and a
// transaction's COMMIT bumps everything it wrote, so the bumps to each
// memcached server are pipelined (see incr.go): the write then costs one
// round trip, not one per table and row.
func (s *Store) bump(ctx context.Context, deps []string) error {
	s.stats.bumps.Add(uint64(len(deps)))
	// memcached first, then the local view: a lookup that finds an entry
	// valid in memcached may keep it in L1 with local generations it read
	// before, which must then include every bump memcached has not seen
	// (a failed bump is pending, and its deps are bypassed meanwhile).
	defer s.BumpLocal(deps)
	if s.mc == nil {
		return nil
	}
	if len(deps) == 1 {
		return s.bumpOrPend(ctx, deps[0])
	}
	failed, err := s.bumpPipelined(ctx, deps)
	for _, d := range failed {
		s.pending.add(d)
	}
	if len(failed) == 0 {
		return nil
	}
	// One line for the batch, however many rows it named.
	if ok, held := s.bumpFailed.allow(time.Now()); ok {
		s.log.Warn("store: bump failed; pending", "dep", failed[0], "deps", len(failed), "err", err, "not_logged_since_last", held)
	}
	return ErrPending
}

// bumpOrPend bumps dep, or records it as pending when memcached failed.
func (s *Store) bumpOrPend(ctx context.Context, d string) error {
	if err := s.bumpOne(ctx, d); err != nil {
		s.pending.add(d)
		if ok, held := s.bumpFailed.allow(time.Now()); ok {
			s.log.Warn("store: bump failed; pending", "dep", d, "err", err, "not_logged_since_last", held)
		}
		return ErrPending
	}
	return nil
}

// bumpOne increments dep's generation in memcached.
//
// A generation that is not there (never read, evicted, or lost with a
// memcached restart) is left missing: no entry can match it again, for
// the next read creates it afresh from the clock, above any value it
// had (see timeSeed); and a read whose query ran before this write
// created it before that query, so the increment found it. Creating it
// here would cost two more round trips, on the path of a write's
// client, for nothing.
func (s *Store) bumpOne(ctx context.Context, dep string) error {
	key := s.keys.key(dep)
	err := s.mcDo(ctx, func() error {
		_, err := s.mc.Increment(key, 1)
		return err
	})
	switch {
	case err == nil, errors.Is(err, memcache.ErrCacheMiss):
		return nil
	case strings.Contains(err.Error(), "non-numeric"):
		return s.mcDo(ctx, func() error {
			return s.mc.Set(&memcache.Item{Key: key, Value: strconv.AppendUint(nil, s.timeSeed(), 10)})
		})
	}
	return err
}
