package store

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
)

// peersKey holds the fleet's list of sidecars (see package peers): one
// line per member, its address and the unix time its listing ends.
const peersKey = internalPrefix + "peers"

// PeerRefresh lists self in memcached until at least ttl from now, and
// returns every member still listed; joined says self was not. The list
// is rewritten, with compare-and-swap, only when self is missing or has
// less than half of ttl left, so a steady fleet only reads it.
func (s *Store) PeerRefresh(ctx context.Context, self string, ttl time.Duration) (members []string, joined bool, err error) {
	if s.mc == nil {
		return nil, false, errors.New("store: no memcached")
	}
	for range 8 {
		now := s.now()
		it, err := s.peerList(ctx)
		if err != nil && !errors.Is(err, memcache.ErrCacheMiss) {
			return nil, false, err
		}
		var lines []string
		members = members[:0]
		fresh, listed := false, false
		last := now.Add(ttl).Unix() // when the last listing kept ends
		if it != nil {
			for _, ln := range strings.Split(string(it.Value), "\n") {
				addr, exp, ok := strings.Cut(ln, " ")
				t, perr := strconv.ParseInt(exp, 10, 64)
				if !ok || perr != nil || addr == "" || t <= now.Unix() {
					continue // expired, or not ours to read
				}
				last = max(last, t)
				if addr == self {
					listed = true
					fresh = t >= now.Add(ttl/2).Unix()
					if !fresh {
						continue
					}
				}
				lines = append(lines, ln)
				members = append(members, addr)
			}
		}
		if fresh {
			return members, false, nil
		}
		lines = append(lines, self+" "+strconv.FormatInt(now.Add(ttl).Unix(), 10))
		members = append(members, self)
		// The list outlives every listing in it, with room for
		// memcached's clock, which counts whole seconds: a sidecar that
		// lists itself for a short while must not cut the others' short.
		life := last - now.Unix() + int64(2*ttl/time.Second) + 2
		item := &memcache.Item{Key: peersKey, Value: []byte(strings.Join(lines, "\n")), Expiration: int32(min(life, 30*24*3600))}
		err = s.mcDo(ctx, func() error {
			if it == nil {
				return s.mc.Add(item)
			}
			item.CasID = it.CasID
			return s.mc.CompareAndSwap(item)
		})
		switch {
		case err == nil:
			return members, !listed, nil
		case errors.Is(err, memcache.ErrCASConflict), errors.Is(err, memcache.ErrNotStored), errors.Is(err, memcache.ErrCacheMiss):
			continue // another sidecar wrote it meanwhile
		default:
			return nil, false, err
		}
	}
	return nil, false, errors.New("store: the peer list kept changing")
}

// peerList reads the list, with its CAS id.
func (s *Store) peerList(ctx context.Context) (*memcache.Item, error) {
	var it *memcache.Item
	err := s.mcDo(ctx, func() error {
		var err error
		it, err = s.mc.Get(peersKey)
		return err
	})
	return it, err
}

// PeerLeave takes self off the list, for a sidecar that has stopped
// writing; the others stop waiting for it at their next reading.
func (s *Store) PeerLeave(ctx context.Context, self string) error {
	if s.mc == nil {
		return nil
	}
	for range 8 {
		it, err := s.peerList(ctx)
		if errors.Is(err, memcache.ErrCacheMiss) {
			return nil
		}
		if err != nil {
			return err
		}
		var lines []string
		for _, ln := range strings.Split(string(it.Value), "\n") {
			if addr, _, _ := strings.Cut(ln, " "); addr != self {
				lines = append(lines, ln)
			}
		}
		it.Value = []byte(strings.Join(lines, "\n"))
		err = s.mcDo(ctx, func() error { return s.mc.CompareAndSwap(it) })
		if err == nil || errors.Is(err, memcache.ErrCacheMiss) {
			return nil
		}
		if !errors.Is(err, memcache.ErrCASConflict) && !errors.Is(err, memcache.ErrNotStored) {
			return err
		}
	}
	return errors.New("store: the peer list kept changing")
}
