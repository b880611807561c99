package store

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
)

// DefaultItemSizeMax is memcached's default item size limit, used until
// (or when) "stats settings" cannot be read.
const DefaultItemSizeMax = 1 << 20

// isMiss reports whether err is a protocol-level answer rather than a
// failure of the cache.
func isMiss(err error) bool {
	return errors.Is(err, memcache.ErrCacheMiss) || errors.Is(err, memcache.ErrNotStored)
}

// mcDo runs one memcached operation. gomemcache takes no context, so the
// context is checked before the call and the client's Timeout bounds the
// call itself. Failures (not misses) are counted.
func (s *Store) mcDo(ctx context.Context, op func() error) error {
	if s.mcErr != nil {
		s.stats.mcErrors.Add(1)
		return s.mcErr
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	err := op()
	// A compare-and-swap that another client's write beat is an answer
	// too: the caller reads again.
	if err != nil && !isMiss(err) && !errors.Is(err, memcache.ErrCASConflict) {
		s.stats.mcErrors.Add(1)
		// The read or store fails open, and the operator learns why
		// from the log, a line a second at most, not from the counter
		// alone.
		if ctx.Err() == nil {
			if ok, held := s.mcFailed.allow(time.Now()); ok {
				s.log.Warn("store: memcached operation failed; reads go to the server", "err", err, "not_logged_since_last", held)
			}
		}
	} else {
		s.stats.answeredAt.Store(time.Now().UnixNano())
	}
	return err
}

// getMulti returns the values of keys, indexed like keys: nil for a miss.
// The values are the caller's to keep.
func (s *Store) getMulti(ctx context.Context, keys []string) ([][]byte, error) {
	return s.getMultiTimeout(ctx, keys, s.opts.Timeout, true, nil)
}

// getMultiAdding is getMulti with adds (see genAdds) sent just before the
// get.
func (s *Store) getMultiAdding(ctx context.Context, keys []string, adds []byte) ([][]byte, error) {
	return s.getMultiTimeout(ctx, keys, s.opts.Timeout, true, adds)
}

// getChunks is getMulti for the chunks of a large entry. They are fetched
// on a connection of their own: megabytes in a shared get would hold up
// the small lookups that share it.
func (s *Store) getChunks(ctx context.Context, keys []string) ([][]byte, error) {
	return s.getMultiTimeout(ctx, keys, s.opts.Timeout, false, nil)
}

func (s *Store) getMultiTimeout(ctx context.Context, keys []string, timeout time.Duration, shared bool, adds []byte) ([][]byte, error) {
	var vals [][]byte
	err := s.mcDo(ctx, func() (err error) {
		vals, err = s.fetch(ctx, keys, timeout, shared, adds)
		return err
	})
	return vals, err
}

// isTooLarge reports whether err is memcached refusing an item over its
// size limit.
func isTooLarge(err error) bool {
	return err != nil && strings.Contains(err.Error(), "too large")
}

// ItemSizeMax returns the smallest item size limit over the servers, read
// once per server from "stats settings" (DefaultItemSizeMax for a server
// that cannot be asked, or with no memcached).
func (s *Store) ItemSizeMax(ctx context.Context) int {
	if s.mc == nil {
		return DefaultItemSizeMax
	}
	limit := 0
	for i, addr := range s.ring.Addrs() {
		v := s.itemMax[i].Load()
		if v == 0 {
			v = int64(s.readItemSizeMax(ctx, addr))
			s.itemMax[i].Store(v)
		}
		if limit == 0 || int(v) < limit {
			limit = int(v)
		}
	}
	if limit == 0 {
		return DefaultItemSizeMax
	}
	return limit
}

// forgetItemSizeMax makes the next ItemSizeMax ask the servers again, after
// a server refused an item (it may have restarted with another -I).
func (s *Store) forgetItemSizeMax() {
	for i := range s.itemMax {
		s.itemMax[i].Store(0)
	}
}

func (s *Store) readItemSizeMax(ctx context.Context, addr net.Addr) int {
	v := DefaultItemSizeMax
	err := s.command(ctx, addr, s.opts.Timeout, "stats settings", func(line []byte) {
		if rest, ok := bytes.CutPrefix(line, []byte("STAT item_size_max ")); ok {
			if n, err := strconv.Atoi(string(bytes.TrimSpace(rest))); err == nil && n > 0 {
				v = n
			}
		}
	})
	if err != nil {
		s.log.Warn("store: cannot read item_size_max; assuming the default", "server", addr.String(), "err", err)
	}
	return v
}

// errCommand is a memcached error reply to a raw command.
var errCommand = errors.New("store: memcached command failed")

// errBusy is memcached's reply when its LRU crawler is already running
// (another metadump, or its own background crawl).
var errBusy = errors.New("store: memcached crawler busy")

// command sends a text-protocol command that gomemcache lacks to addr on a
// fresh connection, and calls fn for each reply line (without the line
// ending) until END. timeout bounds the whole exchange unless ctx has an
// earlier deadline.
func (s *Store) command(ctx context.Context, addr net.Addr, timeout time.Duration, cmd string, fn func(line []byte)) error {
	deadline := time.Now().Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	dctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(dctx, addr.Network(), addr.String())
	if err != nil {
		s.stats.mcErrors.Add(1)
		return err
	}
	defer nc.Close()
	nc.SetDeadline(deadline)
	if _, err := nc.Write([]byte(cmd + "\r\n")); err != nil {
		s.stats.mcErrors.Add(1)
		return err
	}
	r := bufio.NewReaderSize(nc, 64<<10)
	for {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			return errCommand // no reply line of ours is this long
		}
		if err != nil {
			s.stats.mcErrors.Add(1)
			return err
		}
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case bytes.Equal(line, []byte("END")):
			return nil
		case bytes.HasPrefix(line, []byte("BUSY")):
			return errBusy
		case bytes.Equal(line, []byte("ERROR")),
			bytes.HasPrefix(line, []byte("CLIENT_ERROR")),
			bytes.HasPrefix(line, []byte("SERVER_ERROR")):
			return errors.Join(errCommand, errors.New(string(line)))
		}
		fn(line)
	}
}

// mcExpiration converts an absolute expiry to memcached's expiration
// field. ok is false if exp has already passed.
func mcExpiration(exp, now time.Time) (int32, bool) {
	if exp.IsZero() {
		return 0, true
	}
	d := exp.Sub(now)
	if d <= 0 {
		return 0, false
	}
	secs := int64((d + time.Second - 1) / time.Second)
	// memcached reads values over 30 days as absolute Unix times.
	if secs > 30*24*3600 {
		return int32(exp.Unix() + 1), true
	}
	return int32(secs), true
}
