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

// localGensMatch is gensMatch against the in-process generations.
func (s *Store) localGensMatch(e *Entry, deps []string) bool {
	for i, d := range e.Deps {
		if depIndex(deps, i, d) < 0 {
			return false
		}
		g, ok := s.local.lookup(d)
		if !ok || g != e.Gens[i] {
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

// Lookup returns the entry for key if it is valid: its Check equals check,
// it has not expired, and every generation it recorded equals the current
// generation of that dep. cur holds the current generations of deps (on a
// Miss, for the Put that follows the query; on a hit, e.Gens).
//
// With memcached configured, the generations always come from memcached,
// read after Lookup began, so every bump that completed before it is seen:
// an L1 hit still costs one get_multi of the generation keys, and an L1
// miss fetches the entry in that same round trip. Only chunked entries
// need a second one.
func (s *Store) Lookup(ctx context.Context, key string, check []byte, deps []string) (e *Entry, tier Tier, cur []uint64, status Status) {
	if !isQueryKey(key) {
		return nil, TierNone, nil, Error
	}
	if s.pending.any(deps) {
		s.stats.bypasses.Add(1)
		return nil, TierNone, nil, Bypass
	}
	now := s.now()
	if s.mc == nil {
		return s.lookupLocal(key, check, deps, now)
	}
	return s.lookupShared(ctx, key, check, deps, now)
}

func (s *Store) lookupLocal(key string, check []byte, deps []string, now time.Time) (*Entry, Tier, []uint64, Status) {
	if s.l1 != nil {
		if e := s.l1.get(key); e != nil {
			if e.usable(check, deps, now) && s.localGensMatch(e, deps) {
				s.stats.l1Hits.Add(1)
				return e, TierL1, e.Gens, s.hit(key, e, now)
			}
			// Generations only grow and time only passes: it can never
			// become valid again.
			s.l1.deleteIf(key, e)
		}
	}
	s.stats.l1Misses.Add(1)
	cur := make([]uint64, len(deps))
	for i, d := range deps {
		cur[i] = s.local.get(d, s.timeSeed())
	}
	return nil, TierNone, cur, Miss
}

func (s *Store) lookupShared(ctx context.Context, key string, check []byte, deps []string, now time.Time) (*Entry, Tier, []uint64, Status) {
	var e1 *Entry
	if s.l1 != nil {
		if e1 = s.l1.get(key); e1 != nil && !e1.usable(check, deps, now) {
			s.l1.deleteIf(key, e1)
			e1 = nil
		}
	}
	keys := make([]string, 0, len(deps)+1)
	if e1 == nil {
		keys = append(keys, key)
	}
	for _, d := range deps {
		keys = append(keys, s.keys.key(d))
	}
	vals, err := s.getMulti(ctx, keys)
	if err != nil {
		return nil, TierNone, nil, Error
	}
	cur, err := s.currentGens(ctx, keys[len(keys)-len(deps):], vals[len(keys)-len(deps):])
	if err != nil {
		return nil, TierNone, nil, Error
	}
	if e1 != nil {
		if gensMatch(e1, deps, cur) {
			s.stats.l1Hits.Add(1)
			return e1, TierL1, cur, s.hit(key, e1, now)
		}
		s.l1.deleteIf(key, e1)
		// Another sidecar may already have stored a fresh entry.
		if vals, err = s.getMulti(ctx, []string{key}); err != nil {
			return nil, TierNone, nil, Error
		}
	}
	val := vals[0]
	s.stats.l1Misses.Add(1)
	if val == nil {
		s.stats.mcMisses.Add(1)
		return nil, TierNone, cur, Miss
	}
	e, err := s.decodeItem(ctx, key, val)
	if err != nil {
		return nil, TierNone, nil, Error
	}
	if e == nil || !e.usable(check, deps, now) || !gensMatch(e, deps, cur) {
		s.stats.mcMisses.Add(1)
		return nil, TierNone, cur, Miss
	}
	if s.l1 != nil {
		s.l1.set(key, e)
	}
	s.stats.mcHits.Add(1)
	return e, TierMemcached, cur, s.hit(key, e, now)
}

// decodeItem decodes a memcached value, fetching its chunks if it is a
// chunk header. A corrupt or incomplete value is a miss (nil, nil); err is
// a memcached failure.
func (s *Store) decodeItem(ctx context.Context, key string, val []byte) (*Entry, error) {
	if isChunkHeader(val) {
		h, ok := decodeChunkHeader(val)
		if !ok || h.total > maxValue {
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
		buf := make([]byte, 0, h.total)
		for _, v := range vals {
			if v == nil || len(buf)+len(v) > h.total {
				return nil, nil
			}
			buf = append(buf, v...)
		}
		if len(buf) != h.total || xxhash.Sum64(buf) != h.sum {
			return nil, nil
		}
		val = buf
	}
	e, err := decodeEntry(val, maxValue)
	if err != nil {
		s.log.Debug("store: corrupt entry", "key", key)
		return nil, nil
	}
	return e, nil
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
	if !isQueryKey(key) {
		return ErrBadKey
	}
	if len(e.Gens) != len(e.Deps) {
		return ErrBadEntry
	}
	if s.pending.any(e.Deps) {
		return ErrPending
	}
	now := s.now()
	if expired(e, now) {
		return nil
	}
	s.refreshing.done(key)
	admitted := s.l1 != nil && s.l1.set(key, e)
	if s.mc == nil {
		if !admitted {
			return ErrTooLarge
		}
		return nil
	}
	exp, ok := mcExpiration(e.Expires, now)
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
	if err == nil || admitted {
		s.stats.stores.Add(1)
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
	if s.l1 != nil {
		s.l1.purge(func(k string) bool { return strings.HasPrefix(k, queryPrefix) })
	}
	return err
}
