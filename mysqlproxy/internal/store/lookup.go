package store

import (
	"bytes"
	"context"
	"encoding/hex"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
	"github.com/cespare/xxhash/v2"
)

// maxValue bounds a decoded value (after reassembling chunks or
// decompressing), so that a corrupt header cannot make us allocate
// without limit.
const maxValue = 1 << 30

// itemOverhead is room left in each memcached item for the key, the
// item header and the CAS field, under item_size_max.
const itemOverhead = 1024

// QueryKey returns the query-entry key for a 128-bit hash: "q:" and 32
// hex digits.
func QueryKey(hash [16]byte) string {
	var b [2 + 32]byte
	copy(b[:], queryPrefix)
	hex.Encode(b[2:], hash[:])
	return string(b[:])
}

func isQueryKey(key string) bool {
	return strings.HasPrefix(key, queryPrefix) && legalKey(key)
}

// usable reports whether e can answer a lookup for check and deps at now,
// generations aside.
func (e *Entry) usable(check []byte, deps []string, now time.Time) bool {
	return !expired(e, now) && len(e.Deps) == len(deps) && len(e.Gens) == len(e.Deps) &&
		bytes.Equal(e.Check, check)
}

// depIndex returns the index of d in deps, trying position i first since
// callers normally pass deps in the order they were stored.
func depIndex(deps []string, i int, d string) int {
	if i < len(deps) && deps[i] == d {
		return i
	}
	for j, x := range deps {
		if x == d {
			return j
		}
	}
	return -1
}

// gensMatch reports whether every generation e recorded equals the
// current one in cur (indexed like deps).
func gensMatch(e *Entry, deps []string, cur []uint64) bool {
	for i, d := range e.Deps {
		j := depIndex(deps, i, d)
		if j < 0 || cur[j] != e.Gens[i] {
			return false
		}
	}
	return true
}

// localMatch reports whether every local generation e recorded equals
// the current one in local (indexed like deps). An entry that recorded
// none (put without a local snapshot) never matches.
func localMatch(e *Entry, deps []string, local []uint64) bool {
	if len(e.Local) != len(e.Deps) {
		return false
	}
	for i, d := range e.Deps {
		j := depIndex(deps, i, d)
		if j < 0 || local[j] != e.Local[i] {
			return false
		}
	}
	return true
}

// hit returns Hit, or Stale for the one caller (per process) that should
// refresh an entry past its soft ttl.
func (s *Store) hit(key string, e *Entry, now time.Time) Status {
	if !e.Soft.IsZero() && !now.Before(e.Soft) && s.refreshing.claim(key, now) {
		s.stats.stale.Add(1)
		return Stale
	}
	return Hit
}

// Mode says how a Lookup checks an entry held in L1.
type Mode uint8

// The modes.
const (
	// Strict checks the shared generations in memcached, which every
	// write through any sidecar bumps before its client hears OK: one
	// network round trip per hit.
	Strict Mode = iota
	// Bounded checks only this process's own view of the generations,
	// which its writes and its binlog follower bump: no round trip. The
	// caller chooses it only while the follower is current.
	Bounded
)

// Snap is what a Lookup read of the generations of its deps, for the Put
// that stores the result of the query that follows a miss.
type Snap struct {
	Gens  []uint64 // memcached's, or the local ones in L1-only mode
	Local []uint64 // this process's, with memcached; nil in L1-only mode
}

// Lookup is LookupMode in Strict mode, returning the generations a Put
// after a miss stores.
func (s *Store) Lookup(ctx context.Context, key string, check []byte, deps []string) (*Entry, Tier, []uint64, Status) {
	e, tier, snap, status := s.LookupMode(ctx, key, check, deps, Strict)
	return e, tier, snap.Gens, status
}

// LookupMode returns the entry for key if it is valid: its Check equals
// check, it has not expired, and every generation it recorded equals the
// current generation of that dep. snap holds the current generations of
// deps, read before anything else (on a Miss, for the Put that follows
// the query; on a hit, what the entry recorded).
//
// With memcached configured, an L1 entry is checked against memcached's
// generations in Strict mode, read after the lookup began so that every
// bump that completed before it is seen; that costs one get_multi of the
// generation keys, and an L1 miss fetches the entry in the same round
// trip. In Bounded mode an L1 entry is checked against the local view
// only. An entry fetched from memcached is kept in L1 with the local
// generations read before the fetch: every bump of this process reaches
// memcached before the local view (see bump), so an entry memcached still
// holds valid is newer than every local bump it could have missed.
func (s *Store) LookupMode(ctx context.Context, key string, check []byte, deps []string, mode Mode) (e *Entry, tier Tier, snap Snap, status Status) {
	if !isQueryKey(key) {
		return nil, TierNone, Snap{}, Error
	}
	if s.pending.any(deps) || s.ringHeld() {
		s.stats.bypasses.Add(1)
		return nil, TierNone, Snap{}, Bypass
	}
	now := s.now()
	if s.mc == nil {
		return s.lookupLocal(key, check, deps, now)
	}
	return s.lookupShared(ctx, key, check, deps, now, mode)
}

// localSnap reads the local generations of deps, creating missing ones.
func (s *Store) localSnap(deps []string) []uint64 {
	local, _ := s.localSnapFresh(deps)
	return local
}

// localSnapFresh is localSnap, and the indexes of the deps the sidecar
// had no generation of its own for: it has neither read nor written
// them lately, and their generations are likely missing in memcached
// too.
func (s *Store) localSnapFresh(deps []string) (local []uint64, fresh []int) {
	local = make([]uint64, len(deps))
	for i, d := range deps {
		if g, ok := s.local.lookup(d); ok {
			local[i] = g
			continue
		}
		local[i] = s.local.get(d, s.timeSeed())
		fresh = append(fresh, i)
	}
	return local, fresh
}

func (s *Store) lookupLocal(key string, check []byte, deps []string, now time.Time) (*Entry, Tier, Snap, Status) {
	cur := s.localSnap(deps)
	if s.l1 != nil {
		if e := s.l1.get(key); e != nil {
			if e.usable(check, deps, now) && gensMatch(e, deps, cur) {
				s.stats.l1Hits.Add(1)
				return e, TierL1, Snap{Gens: e.Gens}, s.hit(key, e, now)
			}
			// Generations only grow and time only passes: it can never
			// become valid again.
			s.l1.deleteIf(key, e)
		}
	}
	s.stats.l1Misses.Add(1)
	return nil, TierNone, Snap{Gens: cur}, Miss
}

func (s *Store) lookupShared(ctx context.Context, key string, check []byte, deps []string, now time.Time, mode Mode) (*Entry, Tier, Snap, Status) {
	local, fresh := s.localSnapFresh(deps)
	var e1 *Entry
	if s.l1 != nil {
		if e1 = s.l1.get(key); e1 != nil && (!e1.usable(check, deps, now) || (e1.Local != nil && !localMatch(e1, deps, local))) {
			s.l1.deleteIf(key, e1)
			e1 = nil
		}
		if e1 != nil && mode == Bounded && e1.Local != nil {
			s.stats.l1Hits.Add(1)
			s.stats.boundedHits.Add(1)
			return e1, TierL1, Snap{Gens: e1.Gens, Local: e1.Local}, s.hit(key, e1, now)
		}
	}
	keys := make([]string, 0, len(deps)+1)
	if e1 == nil {
		keys = append(keys, key)
	}
	for _, d := range deps {
		keys = append(keys, s.keys.key(d))
	}
	// The generations this sidecar has never seen are created in the
	// get's round trip.
	for j := range fresh {
		fresh[j] += len(keys) - len(deps)
	}
	vals, err := s.getMultiAdding(ctx, keys, s.genAdds(keys, fresh))
	if err != nil {
		return nil, TierNone, Snap{}, Error
	}
	cur, err := s.currentGens(ctx, keys[len(keys)-len(deps):], vals[len(keys)-len(deps):])
	if err != nil {
		return nil, TierNone, Snap{}, Error
	}
	if e1 != nil {
		if gensMatch(e1, deps, cur) {
			s.stats.l1Hits.Add(1)
			return e1, TierL1, Snap{Gens: cur, Local: local}, s.hit(key, e1, now)
		}
		s.l1.deleteIf(key, e1)
		// Another sidecar may already have stored a fresh entry.
		if vals, err = s.getMulti(ctx, []string{key}); err != nil {
			return nil, TierNone, Snap{}, Error
		}
	}
	val := vals[0]
	s.stats.l1Misses.Add(1)
	if val == nil {
		s.stats.mcMisses.Add(1)
		return nil, TierNone, Snap{Gens: cur, Local: local}, Miss
	}
	e, err := s.decodeItem(ctx, key, val)
	if err != nil {
		return nil, TierNone, Snap{}, Error
	}
	if e == nil || !e.usable(check, deps, now) || !gensMatch(e, deps, cur) {
		s.stats.mcMisses.Add(1)
		return nil, TierNone, Snap{Gens: cur, Local: local}, Miss
	}
	if s.l1 != nil {
		e.Local = alignLocal(e, deps, local)
		s.l1.set(key, e)
	}
	s.stats.mcHits.Add(1)
	return e, TierMemcached, Snap{Gens: cur, Local: local}, s.hit(key, e, now)
}

// alignLocal orders the local generations of deps (indexed like deps) as
// e.Deps are, for an entry decoded from memcached.
func alignLocal(e *Entry, deps []string, local []uint64) []uint64 {
	out := make([]uint64, len(e.Deps))
	for i, d := range e.Deps {
		out[i] = local[depIndex(deps, i, d)] // usable checked the lengths; gensMatch found every dep
	}
	return out
}

// decodeItem decodes a memcached value, fetching its chunks if it is a
// chunk header. A corrupt or incomplete value is a miss (nil, nil); err is
// a memcached failure.
func (s *Store) decodeItem(ctx context.Context, key string, val []byte) (*Entry, error) {
	if isChunkHeader(val) {
		h, ok := decodeChunkHeader(val)
		if !ok || h.total > maxValue || h.n > h.total {
			return nil, nil
		}
		keys := make([]string, h.n)
		for i := range keys {
			keys[i] = chunkKey(key, h.nonce, i)
		}
		vals, err := s.getChunks(ctx, keys)
		if err != nil {
			return nil, err
		}
		if val = assembleChunks(h, vals); val == nil {
			return nil, nil
		}
	}
	e, err := decodeEntry(val, maxValue)
	if err != nil {
		s.log.Debug("store: corrupt entry", "key", key)
		return nil, nil
	}
	return e, nil
}

// assembleChunks joins the chunks of the value h describes, or returns
// nil when one is missing or they are not that value. The buffer is
// sized by the chunks that came, never by what the header claims: a
// header that another program wrote may claim a gigabyte.
func assembleChunks(h chunkHeader, vals [][]byte) []byte {
	n := 0
	for _, v := range vals {
		if v == nil {
			return nil
		}
		n += len(v)
	}
	if n != h.total {
		return nil
	}
	buf := make([]byte, 0, n)
	for _, v := range vals {
		buf = append(buf, v...)
	}
	if xxhash.Sum64(buf) != h.sum {
		return nil
	}
	return buf
}

// chunkKey names chunk i of a value stored under key. The nonce is fresh
// for every Put, so a reader never mixes chunks of two versions.
func chunkKey(key string, nonce uint64, i int) string {
	b := make([]byte, 0, 48)
	b = append(b, internalPrefix...)
	b = append(b, "c:"...)
	b = strconv.AppendUint(b, xxhash.Sum64String(key), 16)
	b = append(b, '.')
	b = strconv.AppendUint(b, nonce, 16)
	b = append(b, '.')
	b = strconv.AppendInt(b, int64(i), 10)
	return string(b)
}

// Put stores e under key in L1 and memcached, with e.Expires as the ttl.
// Values over memcached's item size limit are split into chunks written
// before the small header item that lists them. An entry whose deps have
// a pending bump is not stored (ErrPending).
func (s *Store) Put(ctx context.Context, key string, e *Entry) error {
	admitted, err := s.putLocal(key, e)
	if err != nil || s.mc == nil {
		return err
	}
	err = s.putMemcached(ctx, key, e)
	if err == nil || admitted {
		s.stats.stores.Add(1)
	}
	return err
}

// putLocal checks an entry and keeps it in L1. It reports whether L1
// took it; without memcached, an entry L1 refuses is ErrTooLarge.
func (s *Store) putLocal(key string, e *Entry) (bool, error) {
	if !isQueryKey(key) {
		return false, ErrBadKey
	}
	if len(e.Gens) != len(e.Deps) {
		return false, ErrBadEntry
	}
	if s.pending.any(e.Deps) || s.ringHeld() {
		return false, ErrPending
	}
	if !e.Since.IsZero() && s.ChangedSince(e.Deps, e.Since) {
		return false, ErrChanged
	}
	if expired(e, s.now()) {
		return false, nil
	}
	s.refreshing.done(key)
	admitted := s.l1 != nil && s.l1.set(key, e)
	if s.mc == nil && !admitted {
		return false, ErrTooLarge
	}
	return admitted, nil
}

// ChangedSince reports whether any of deps may have been bumped at or
// after t, as this process has seen them: by its own writes, its peers'
// and its binlog follower's.
func (s *Store) ChangedSince(deps []string, t time.Time) bool {
	n := t.UnixNano()
	for _, d := range deps {
		if s.local.changedSince(d, n) {
			return true
		}
	}
	return false
}

// putMemcached writes an entry to memcached.
func (s *Store) putMemcached(ctx context.Context, key string, e *Entry) error {
	exp, ok := mcExpiration(e.Expires, s.now())
	if !ok {
		return nil
	}
	val := encodeEntry(e, s.opts.CompressMinBytes)
	err := s.putValue(ctx, key, val, exp)
	if isTooLarge(err) {
		// The server may have restarted with a smaller -I: ask again.
		s.forgetItemSizeMax()
		err = s.putValue(ctx, key, val, exp)
	}
	return err
}

func (s *Store) putValue(ctx context.Context, key string, val []byte, exp int32) error {
	limit := s.ItemSizeMax(ctx) - itemOverhead
	if len(val) <= limit {
		return s.mcDo(ctx, func() error {
			return s.mc.Set(&memcache.Item{Key: key, Value: val, Expiration: exp})
		})
	}
	if len(val) > maxValue {
		return ErrTooLarge
	}
	h := chunkHeader{
		n:     (len(val) + limit - 1) / limit,
		total: len(val),
		sum:   xxhash.Sum64(val),
		nonce: rand.Uint64(),
	}
	if h.n > maxChunks {
		return ErrTooLarge
	}
	for i := 0; i < h.n; i++ {
		part := val[i*limit : min((i+1)*limit, len(val))]
		err := s.mcDo(ctx, func() error {
			return s.mc.Set(&memcache.Item{Key: chunkKey(key, h.nonce, i), Value: part, Expiration: exp})
		})
		if err != nil {
			return err
		}
	}
	s.stats.chunked.Add(1)
	return s.mcDo(ctx, func() error {
		return s.mc.Set(&memcache.Item{Key: key, Value: encodeChunkHeader(h), Expiration: exp})
	})
}

// Delete removes the entry for key from both tiers. The chunks of a
// chunked entry are left to expire: without their header they are never
// read.
func (s *Store) Delete(ctx context.Context, key string) error {
	if !isQueryKey(key) {
		return ErrBadKey
	}
	if s.l1 != nil {
		s.l1.delete(key)
	}
	if s.mc == nil {
		return nil
	}
	err := s.mcDo(ctx, func() error { return s.mc.Delete(key) })
	if isMiss(err) {
		return nil
	}
	return err
}

// Flush invalidates every query entry, in every sidecar, by bumping the
// global generation "*" (which every entry depends on), and drops the
// query entries from L1. It does not flush_all memcached: raw kv values
// live there too. It returns ErrPending if the bump has not landed yet;
// it is retried until it does.
func (s *Store) Flush(ctx context.Context) error {
	err := s.bump(ctx, []string{"*"})
	s.tell([]string{"*"})
	if s.l1 != nil {
		s.l1.purge(func(k string) bool { return strings.HasPrefix(k, queryPrefix) })
	}
	return err
}
