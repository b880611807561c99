package store

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cespare/xxhash/v2"
)

// The sidecars that share memcached must agree on its servers. Each
// dependency's generation lives on the server the ring picks for its key,
// and so does each entry: a sidecar with another list reads and bumps
// generations elsewhere, and misses the others' bumps. Worse, a list that
// drops a server, or takes back one that kept running, sends keys back to
// a server whose generations and entries are as old as when the keys last
// lived there, and those entries look current.
//
// So every sidecar marks each server with its list's fingerprint
// (ringKey), and checks the marks every ringCheckEvery, setting them again
// each time for ringMarkTTL. A server without the mark (it restarted, is
// new, or no sidecar has used it for ringMarkTTL, while others may have
// been used in its place) may hold keys from another time: the global
// generation, which every entry depends on, is bumped, and the mark set.
// A mark of another list means that a sidecar with that list wrote
// there, lately or now: the global generation is bumped too, and for
// ringHold after the last such mark this sidecar serves nothing from the
// cache and stores nothing, so that a sidecar with another list still
// running, which writes its mark back at each of its own checks, keeps it
// off until the lists agree. Until its first check succeeds, a sidecar
// serves nothing from memcached either.

const (
	ringKey        = internalPrefix + "ring"
	ringCheckEvery = time.Second
)

// ringHold is how long a mark of another list holds the cache off, and
// ringMarkTTL how long, in seconds, a mark lasts when no sidecar sets it
// again.
var (
	ringHold    = 3 * time.Second
	ringMarkTTL = int32(5)
)

// ringFingerprint identifies where a list of servers, as configured,
// puts keys: the ring hashes the names, in any order. One server takes
// every key, whatever it is called.
func ringFingerprint(names []string) string {
	if len(names) == 1 {
		return "one"
	}
	names = slices.Clone(names)
	slices.Sort(names)
	return strconv.FormatUint(xxhash.Sum64String(strings.Join(names, ",")), 16)
}

// ringHeld reports whether lookups and stores must leave the cache alone:
// the servers' marks were not checked yet, or a mark of another list was
// seen within ringHold.
func (s *Store) ringHeld() bool {
	if s.mc == nil || s.mcErr != nil || s.opts.NoServerMarks {
		return false
	}
	if !s.ringOK.Load() {
		return true
	}
	until := s.ringHeldUntil.Load()
	return until != 0 && time.Now().UnixNano() < until
}

// RingHeld reports whether the cache is held off because sidecars that
// share memcached disagree on its servers (see ringHeld).
func (s *Store) RingHeld() bool { return s.ringHeld() }

// checkRing checks every server's mark once, as the comment above says.
func (s *Store) checkRing(ctx context.Context) error {
	deadline := time.Now().Add(s.opts.Timeout)
	var missing, other []string
	var reached []*connPool
	var failed error
	theirs := ""
	for _, p := range s.pools {
		vals := make([][]byte, 1)
		if err := p.getRetry(ctx, []string{ringKey}, vals, deadline, false, nil); err != nil {
			// A server that does not answer serves no hit; the bumps
			// that failed on it are pending until it answers again, and
			// its mark is read then.
			failed = err
			continue
		}
		reached = append(reached, p)
		switch v := string(vals[0]); {
		case vals[0] == nil:
			missing = append(missing, p.addr.String())
		case v != s.ringFP:
			other, theirs = append(other, p.addr.String()), v
		}
	}
	if len(other) > 0 {
		held := s.ringHeld() && s.ringOK.Load()
		s.ringHeldUntil.Store(time.Now().Add(ringHold).UnixNano())
		s.stats.ringMismatches.Add(1)
		if !held {
			s.log.Warn("store: a sidecar that shares memcached uses another list of its servers; the cache is off until every sidecar uses the same list",
				"servers", s.ring.Addrs(), "list", s.ringFP, "other_list", theirs, "marked_servers", other)
		}
	}
	if len(reached) == 0 {
		return failed
	}
	if len(missing) > 0 || len(other) > 0 {
		// The global bump lands before the marks: a mark without it
		// would let the entries of another time pass. One that fails
		// is tried again at the next check, the marks still unset.
		if err := s.bumpOne(ctx, globalDep); err != nil {
			return err
		}
		if _, ok := s.local.lookup(globalDep); ok {
			// (A view that has no global generation yet holds nothing.)
			s.BumpLocal([]string{globalDep})
		}
	}
	for _, p := range reached {
		if err := p.set(ctx, ringKey, []byte(s.ringFP), ringMarkTTL, deadline); err != nil {
			return err
		}
	}
	s.ringOK.Store(true)
	return failed
}

// watchRing checks the marks every ringCheckEvery until the store closes.
func (s *Store) watchRing() {
	defer s.wg.Done()
	t := time.NewTicker(ringCheckEvery)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 4*s.opts.Timeout)
		if err := s.checkRing(ctx); err != nil && s.ringOK.Load() {
			if ok, held := s.mcFailed.allow(time.Now()); ok {
				s.log.Warn("store: cannot check the memcached servers' marks", "err", err, "not_logged_since_last", held)
			}
		}
		cancel()
	}
}
