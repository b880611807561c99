package store

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/mycached/mycached/mysqlproxy/internal/store/ring"
)

// Raw keys hold plain values with no header, so that any memcached client
// (nginx's memcached_pass, for one) can read them. They may use any legal
// memcached key outside the reserved prefixes.

// Every raw call ends by its deadline: Options.RawTimeout from when it
// starts, or ctx's deadline when that is earlier. A kv statement passes
// its own deadline in ctx, so that a statement of many calls (DROP) or
// of a walk of every server (SELECT *) is bounded as a whole.

// rawDeadline returns when a raw call starting now must end.
func (s *Store) rawDeadline(ctx context.Context) time.Time {
	deadline := time.Now().Add(s.opts.RawTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		return d
	}
	return deadline
}

func checkRawKey(key string) error {
	if !legalKey(key) {
		return ErrBadKey
	}
	if isReserved(key) {
		return ErrReservedKey
	}
	return nil
}

func isReserved(key string) bool {
	return strings.HasPrefix(key, queryPrefix) || strings.HasPrefix(key, genPrefix) ||
		strings.HasPrefix(key, internalPrefix)
}

// RawGet returns the values of keys, indexed like keys: nil for a key
// that does not exist (an empty value is not nil).
func (s *Store) RawGet(ctx context.Context, keys []string) ([][]byte, error) {
	for _, k := range keys {
		if err := checkRawKey(k); err != nil {
			return nil, err
		}
	}
	if s.mc == nil {
		vals := make([][]byte, len(keys))
		if s.l1 == nil {
			return vals, nil
		}
		now := s.now()
		for i, k := range keys {
			if e := s.l1.get(k); e != nil && !expired(e, now) {
				vals[i] = e.Payload
				if vals[i] == nil {
					vals[i] = []byte{}
				}
			}
		}
		return vals, nil
	}
	return s.getMultiTimeout(ctx, keys, s.opts.RawTimeout, true, nil)
}

// RawSet stores val under key with ttl (0 = none). Raw values are never
// chunked or compressed; one over the item size limit is ErrTooLarge.
func (s *Store) RawSet(ctx context.Context, key string, val []byte, ttl time.Duration) error {
	if err := checkRawKey(key); err != nil {
		return err
	}
	var exp time.Time
	if ttl > 0 {
		exp = s.now().Add(ttl)
	}
	if s.mc == nil {
		if s.l1 == nil {
			return ErrNoTier
		}
		if !s.l1.set(key, &Entry{Payload: bytes.Clone(val), Expires: exp}) {
			return ErrTooLarge
		}
		return nil
	}
	deadline := s.rawDeadline(ctx)
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	if len(val)+len(key) > s.ItemSizeMax(ctx)-itemOverhead {
		return ErrTooLarge
	}
	e, _ := mcExpiration(exp, s.now())
	err := s.mcDo(ctx, func() error {
		p, err := s.pool(key)
		if err != nil {
			return err
		}
		return p.set(ctx, key, val, e, deadline)
	})
	if errors.Is(err, errTooLargeReply) {
		s.forgetItemSizeMax()
		return ErrTooLarge
	}
	return err
}

// RawDelete removes key and reports whether it existed.
func (s *Store) RawDelete(ctx context.Context, key string) (existed bool, err error) {
	n, err := s.RawDeleteMulti(ctx, []string{key})
	return n == 1, err
}

// RawDeleteMulti removes keys and returns how many existed. With
// memcached the deletes are pipelined, a batch per round trip, and all of
// them end by one deadline. On an error, n counts the deletes known to
// have removed a key.
func (s *Store) RawDeleteMulti(ctx context.Context, keys []string) (n int, err error) {
	for _, k := range keys {
		if err := checkRawKey(k); err != nil {
			return 0, err
		}
	}
	if s.mc == nil {
		if s.l1 == nil {
			return 0, nil
		}
		for _, k := range keys {
			if s.l1.delete(k) {
				n++
			}
		}
		return n, nil
	}
	deadline := s.rawDeadline(ctx)
	existed := make([]bool, len(keys))
	err = s.mcDo(ctx, func() error {
		// Grouped by server, each group in the order given.
		groups := make(map[*connPool][]int)
		var order []*connPool
		for i, k := range keys {
			p, err := s.pool(k)
			if err != nil {
				return err
			}
			if groups[p] == nil {
				order = append(order, p)
			}
			groups[p] = append(groups[p], i)
		}
		for _, p := range order {
			idx := groups[p]
			ks := make([]string, len(idx))
			for j, i := range idx {
				ks[j] = keys[i]
			}
			out := make([]bool, len(idx))
			err := p.deleteMulti(ctx, ks, out, deadline)
			for j, i := range idx {
				existed[i] = out[j]
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	for _, e := range existed {
		if e {
			n++
		}
	}
	return n, err
}

// pool returns the connection pool of the server that owns key.
func (s *Store) pool(key string) (*connPool, error) {
	i := s.ring.Index(key)
	if i < 0 {
		return nil, ring.ErrNoServers
	}
	return s.pools[i], nil
}

// RawKeys lists the raw keys that start with prefix. With memcached it
// runs "lru_crawler metadump hash" on every server (falling back to
// "metadump all" on servers older than 1.6.10 or so), so it is an
// administrative call, not a hot-path one: it walks every item of every
// server, and fails when that takes longer than the call's deadline.
// Reserved keys are never listed.
func (s *Store) RawKeys(ctx context.Context, prefix string) ([]string, error) {
	if s.mc == nil {
		if s.l1 == nil {
			return nil, nil
		}
		return s.l1.keys(s.now(), func(k string) bool {
			return strings.HasPrefix(k, prefix) && !isReserved(k)
		}), nil
	}
	if s.mcErr != nil {
		return nil, s.mcErr
	}
	// One deadline for the walk of every server, however many there are.
	ctx, cancel := context.WithDeadline(ctx, s.rawDeadline(ctx))
	defer cancel()
	seen := make(map[string]struct{})
	var out []string
	now := time.Now().Unix()
	for _, addr := range s.ring.Addrs() {
		if err := s.metadump(ctx, addr, prefix, now, seen, &out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// metadump lists addr's keys. It walks the hash table where the server
// can: the LRU walk of "metadump all" misses items that move between the
// LRU segments during the crawl (a fresh item that is read moves from hot
// to warm) and repeats others.
func (s *Store) metadump(ctx context.Context, addr net.Addr, prefix string, now int64, seen map[string]struct{}, out *[]string) error {
	// The sidecar's own listings wait their turn in order, rather than
	// each polling a busy crawler, where one may lose every round.
	select {
	case s.listing <- struct{}{}:
		defer func() { <-s.listing }()
	case <-ctx.Done():
		return ctx.Err()
	}
	cmd := "lru_crawler metadump hash"
	busyUntil := time.Now().Add(max(s.opts.RawTimeout, busyMin))
	for {
		err := s.metadumpCmd(ctx, addr, cmd, prefix, now, seen, out)
		switch {
		case errors.Is(err, errCommand) && cmd != "lru_crawler metadump all":
			cmd = "lru_crawler metadump all"
		case errors.Is(err, errBusy) && time.Now().Before(busyUntil):
			// The crawler runs one job at a time; wait for it.
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(busyWait):
			}
		default:
			return err
		}
	}
}

// How long RawKeys waits for a busy crawler (another sidecar's listing,
// or the server's own crawl, or the end of the last one, which a loaded
// server takes a while to wind up): the raw operations' timeout, and at
// least busyMin, polling every busyWait; ctx may end it sooner.
const (
	busyMin  = time.Second
	busyWait = 5 * time.Millisecond
)

func (s *Store) metadumpCmd(ctx context.Context, addr net.Addr, cmd, prefix string, now int64, seen map[string]struct{}, out *[]string) error {
	return s.command(ctx, addr, s.opts.RawTimeout, cmd, func(line []byte) {
		// key=<url-escaped key> exp=<unix or -1> la=... cas=... ...
		var key string
		exp := int64(-1)
		for _, f := range bytes.Fields(line) {
			if v, ok := bytes.CutPrefix(f, []byte("key=")); ok {
				k, err := url.QueryUnescape(string(v))
				if err != nil {
					return
				}
				key = k
			} else if v, ok := bytes.CutPrefix(f, []byte("exp=")); ok {
				if n, err := strconv.ParseInt(string(v), 10, 64); err == nil {
					exp = n
				}
			}
		}
		// A key no text-protocol client can name (one stored in base64
		// through the meta protocol, with a space) is left out: a list
		// with it would fail whatever reads it.
		if key == "" || isReserved(key) || !strings.HasPrefix(key, prefix) || !legalKey(key) {
			return
		}
		if _, dup := seen[key]; dup || (exp > 0 && exp <= now) {
			return
		}
		seen[key] = struct{}{}
		*out = append(*out, key)
	})
}
