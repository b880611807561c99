package store

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/mycached/mycached/mysqlproxy/internal/store/ring"
)

// Pipelined bumps. A write bumps a few generations (its table's, and its
// rows'), and a COMMIT all its transaction's at once; so does the binlog
// follower, for every transaction it applies. Sending one incr after
// another costs a round trip each, and one goroutine per key costs a
// connection and two system calls each. Here the incr commands of one
// server go out in one write on one connection and their replies come
// back in one read: a round trip and two system calls for all of them.

// incrReply is the outcome of one incr.
type incrReply uint8

const (
	incrDone       incrReply = iota // incremented
	incrNotFound                    // the key does not exist
	incrNonNumeric                  // the value is not a number
)

// errIncrReply means memcached's reply to an incr was not one the
// protocol allows; the connection is dropped.
var errIncrReply = errors.New("store: bad memcached incr reply")

// incrMulti increments every key by one on one connection. A pooled
// connection the server has closed is retried on a new one: an incr that
// may have landed twice only invalidates once more.
func (p *connPool) incrMulti(ctx context.Context, keys []string, deadline time.Time) ([]incrReply, error) {
	replies := make([]incrReply, len(keys))
	fresh := false
	for {
		c, reused, err := p.conn(ctx, deadline, fresh)
		if err != nil {
			return nil, err
		}
		err = c.incrMulti(keys, replies, deadline)
		if err == nil {
			p.put(c)
			return replies, nil
		}
		c.nc.Close()
		if !reused || !connGone(err) {
			return nil, err
		}
		fresh = true
	}
}

func (c *mcConn) incrMulti(keys []string, replies []incrReply, deadline time.Time) error {
	if err := c.nc.SetDeadline(deadline); err != nil {
		return err
	}
	for _, k := range keys {
		c.w.WriteString("incr ")
		c.w.WriteString(k)
		c.w.WriteString(" 1\r\n")
	}
	if err := c.w.Flush(); err != nil {
		return err
	}
	for i := range keys {
		line, err := c.r.ReadSlice('\n')
		if err != nil {
			return err
		}
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case isDigits(line) && len(line) > 0:
			replies[i] = incrDone
		case bytes.Equal(line, []byte("NOT_FOUND")):
			replies[i] = incrNotFound
		case bytes.HasPrefix(line, []byte("CLIENT_ERROR")) && bytes.Contains(line, []byte("non-numeric")):
			replies[i] = incrNonNumeric
		default:
			return errIncrReply
		}
	}
	return nil
}

// bumpPipelined bumps the generation keys of deps, grouped by server,
// each group in one pipelined round trip; keys that hold no number are
// then set afresh one by one, and keys that do not exist are left so (see
// bumpOne). It returns the deps whose bump failed, and the first error.
func (s *Store) bumpPipelined(ctx context.Context, deps []string) ([]string, error) {
	return s.bumpPipelinedBy(ctx, deps, time.Now().Add(s.opts.Timeout))
}

// bumpPipelinedBy is bumpPipelined with a deadline of the caller's.
func (s *Store) bumpPipelinedBy(ctx context.Context, deps []string, deadline time.Time) ([]string, error) {
	if s.mcErr != nil {
		s.stats.mcErrors.Add(1)
		return deps, s.mcErr
	}
	if len(s.pools) == 0 {
		s.stats.mcErrors.Add(1)
		return deps, ring.ErrNoServers
	}
	keys := make([]string, len(deps))
	groups := make([][]int, len(s.pools))
	for i, d := range deps {
		keys[i] = s.keys.key(d)
		si := s.ring.Index(keys[i])
		if si < 0 {
			return deps, ring.ErrNoServers
		}
		groups[si] = append(groups[si], i)
	}
	var failed []string
	var first error
	for si, idx := range groups {
		if len(idx) == 0 {
			continue
		}
		gk := make([]string, len(idx))
		for j, i := range idx {
			gk[j] = keys[i]
		}
		replies, err := s.pools[si].incrMulti(ctx, gk, deadline)
		if err != nil {
			s.stats.mcErrors.Add(1)
			first = cmp.Or(first, err)
			for _, i := range idx {
				failed = append(failed, deps[i])
			}
			continue
		}
		s.stats.answeredAt.Store(time.Now().UnixNano())
		for j, r := range replies {
			var err error
			switch r {
			case incrNotFound:
				// Left missing: see bumpOne.
			case incrNonNumeric:
				err = s.mcDo(ctx, func() error {
					return s.mc.Set(&memcache.Item{Key: gk[j], Value: strconv.AppendUint(nil, s.timeSeed(), 10)})
				})
			}
			if err != nil {
				first = cmp.Or(first, err)
				failed = append(failed, deps[idx[j]])
			}
		}
	}
	return failed, first
}
