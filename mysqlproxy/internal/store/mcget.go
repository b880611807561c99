package store

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mycached/mycached/mysqlproxy/internal/store/ring"
)

// The multi-get that every memcached-backed lookup makes. gomemcache's
// GetMulti starts a goroutine and a channel per server and allocates an
// Item per key on every call, which made it a third of the proxy's CPU on
// hits; this one speaks the text protocol directly, inline when every key
// is on one server, and returns the values in one buffer per server.

// errProtocol means memcached's reply to a get was not what the protocol
// allows (or was an error line); the connection is dropped.
var errProtocol = errors.New("store: bad memcached get reply")

// maxItemBytes bounds the length a VALUE line may announce: memcached's
// -I cannot exceed 1 GiB, so a larger one is a corrupt reply, and must
// not make us allocate it.
const maxItemBytes = 1 << 30

// batchSlack: a lookup whose context's deadline comes less than
// timeout/batchSlack before its timeout would end still shares gets.
const batchSlack = 16

// valueSlack is the room reserved per remaining key when the first value
// arrives, so that the generations that usually follow the entry fit
// without growing the buffer.
const valueSlack = 32

// mcConn is one connection to a memcached server.
type mcConn struct {
	nc net.Conn
	r  *bufio.Reader
	w  *bufio.Writer
}

// connPool holds idle connections to one memcached server. A connection is
// in the pool only while no request is outstanding on it.
type connPool struct {
	addr net.Addr
	max  int // idle connections kept

	batchers map[time.Duration]*batcher // by timeout; read-only after newConnPool
	stats    *counters

	// This server's get round trips, those that failed, and the time
	// they took, for the status page's per-server view.
	gets, getErrs atomic.Uint64
	getNanos      atomic.Int64

	mu     sync.Mutex // protects idle and closed
	idle   []*mcConn
	closed bool
}

// newConnPool returns the pool of one server, with a batcher for each of
// timeouts that keeps up to inFlight gets outstanding.
func newConnPool(addr net.Addr, maxIdle, inFlight int, stats *counters, timeouts ...time.Duration) *connPool {
	p := &connPool{addr: addr, max: maxIdle, stats: stats, batchers: map[time.Duration]*batcher{}}
	for _, t := range timeouts {
		p.batchers[t] = &batcher{pool: p, stats: stats, maxInFlight: inFlight}
	}
	return p
}

// conn returns an idle connection (reused is true) or, when there is none
// or fresh is set, a new one.
func (p *connPool) conn(ctx context.Context, deadline time.Time, fresh bool) (c *mcConn, reused bool, err error) {
	if !fresh {
		p.mu.Lock()
		if n := len(p.idle); n > 0 {
			c = p.idle[n-1]
			p.idle[n-1] = nil
			p.idle = p.idle[:n-1]
		}
		p.mu.Unlock()
		if c != nil {
			return c, true, nil
		}
	}
	d := net.Dialer{Deadline: deadline}
	nc, err := d.DialContext(ctx, p.addr.Network(), p.addr.String())
	if err != nil {
		return nil, false, err
	}
	return &mcConn{nc: nc, r: bufio.NewReader(nc), w: bufio.NewWriter(nc)}, false, nil
}

// put returns a connection whose protocol state is clean to the pool.
func (p *connPool) put(c *mcConn) {
	p.mu.Lock()
	if !p.closed && len(p.idle) < p.max {
		p.idle = append(p.idle, c)
		c = nil
	}
	p.mu.Unlock()
	if c != nil {
		c.nc.Close()
	}
}

// drain closes the idle connections. After a server restart they are all
// dead, and each would otherwise fail one request.
func (p *connPool) drain() {
	p.mu.Lock()
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, c := range idle {
		c.nc.Close()
	}
}

// close drains the pool and makes it close connections handed back to it.
func (p *connPool) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.drain()
}

// idleCount returns the number of pooled connections.
func (p *connPool) idleCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle)
}

// getMulti fills vals[i] with the value of keys[i] (nil for a miss). A
// pooled connection that turns out to be closed by the server (it
// restarted, or dropped idle clients) is retried once on a new one: a get
// has no side effects. The values share one buffer.
func (p *connPool) getMulti(ctx context.Context, keys []string, vals [][]byte, deadline time.Time) error {
	return p.get(ctx, keys, vals, deadline, false, nil)
}

// get is getMulti with adds (commands without a reply, see genAdds) sent
// before the get on the same connection, and with each value in an array
// of its own when separate is set, for values that go to different
// lookups: none of them keeps another's values alive. A retry sends the
// adds again, which is harmless: an add does nothing to a key that
// exists.
func (p *connPool) get(ctx context.Context, keys []string, vals [][]byte, deadline time.Time, separate bool, adds []byte) error {
	start := time.Now()
	err := p.getRetry(ctx, keys, vals, deadline, separate, adds)
	p.gets.Add(1)
	p.getNanos.Add(int64(time.Since(start)))
	if err != nil {
		p.getErrs.Add(1)
	}
	return err
}

func (p *connPool) getRetry(ctx context.Context, keys []string, vals [][]byte, deadline time.Time, separate bool, adds []byte) error {
	fresh := false
	for {
		c, reused, err := p.conn(ctx, deadline, fresh)
		if err != nil {
			return err
		}
		err = c.getMulti(keys, vals, deadline, separate, adds)
		if err == nil {
			p.put(c)
			return nil
		}
		// Anything else leaves unread bytes or an unknown state behind.
		c.nc.Close()
		if !reused || fresh || !connGone(err) {
			return err
		}
		p.drain()
		clear(vals)
		fresh = true
	}
}

// connGone reports whether err means the peer had closed the connection.
func connGone(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

func (c *mcConn) getMulti(keys []string, vals [][]byte, deadline time.Time, separate bool, adds []byte) error {
	if err := c.nc.SetDeadline(deadline); err != nil {
		return err
	}
	c.w.Write(adds)
	c.w.WriteString("get")
	for _, k := range keys {
		c.w.WriteByte(' ')
		c.w.WriteString(k)
	}
	c.w.WriteString("\r\n")
	if err := c.w.Flush(); err != nil {
		return err
	}
	return readGetReply(c.r, keys, vals, separate)
}

// readGetReply parses the reply to "get keys...": VALUE blocks then END.
// The values are copied out of r into one buffer (into one array each if
// separate is set), so they stay valid after the connection is reused;
// decoded entries keep slices of them. io.EOF is returned only if the
// reply had not begun.
func readGetReply(r *bufio.Reader, keys []string, vals [][]byte, separate bool) error {
	var buf []byte
	next := 0 // memcached answers in request order: search from here
	for first := true; ; first = false {
		line, err := r.ReadSlice('\n')
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			return errProtocol
		case errors.Is(err, io.EOF) && (!first || len(line) > 0):
			return io.ErrUnexpectedEOF
		case err != nil:
			return err
		}
		if string(line) == "END\r\n" {
			return nil
		}
		key, n, ok := parseValueLine(line)
		if !ok {
			// The reply's first bytes, quoted: they may be anything.
			return fmt.Errorf("%w: %.64q", errProtocol, bytes.TrimRight(line, "\r\n"))
		}
		i := findKey(keys, key, next)
		if i < 0 {
			return errProtocol
		}
		next = i + 1
		var v []byte
		if separate {
			v = make([]byte, n)
		} else {
			v = valueSpace(&buf, n, len(keys)-next)
		}
		if _, err := io.ReadFull(r, v); err != nil {
			return midReply(err)
		}
		for _, want := range []byte("\r\n") {
			b, err := r.ReadByte()
			if err != nil {
				return midReply(err)
			}
			if b != want {
				return errProtocol
			}
		}
		vals[i] = v
	}
}

// midReply is the error of a read that failed inside a reply: the end of
// the stream there is an unexpected one, and a deadline is the deadline,
// which the caller reports as such, not as a broken reply.
func midReply(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// bigValue is the size from which a value that does not fit the shared
// buffer gets its own array: growing the buffer by chunk-sized values
// would copy megabytes.
const bigValue = 16 << 10

// valueSpace returns n bytes for a value, from *buf when it fits, with
// room for rest more small values. The result is never nil.
func valueSpace(buf *[]byte, n, rest int) []byte {
	b := *buf
	if b != nil && n >= bigValue && cap(b)-len(b) < n {
		return make([]byte, n)
	}
	if b == nil {
		b = make([]byte, 0, n+valueSlack*rest)
	}
	// Growing the buffer leaves earlier values in the old array, where
	// they stay valid.
	start := len(b)
	b = slices.Grow(b, n)[:start+n]
	*buf = b
	return b[start : start+n : start+n]
}

// findKey returns the index of key in keys, trying from index from first.
func findKey(keys []string, key []byte, from int) int {
	for i := from; i < len(keys); i++ {
		if keys[i] == string(key) {
			return i
		}
	}
	for i := 0; i < from && i < len(keys); i++ {
		if keys[i] == string(key) {
			return i
		}
	}
	return -1
}

// parseValueLine parses "VALUE <key> <flags> <bytes>[ <cas>]\r\n". key is
// a slice of line.
func parseValueLine(line []byte) (key []byte, n int, ok bool) {
	rest, ok := bytes.CutPrefix(line, []byte("VALUE "))
	if !ok {
		return nil, 0, false
	}
	rest, ok = bytes.CutSuffix(rest, []byte("\r\n"))
	if !ok {
		return nil, 0, false
	}
	key, rest, ok = bytes.Cut(rest, []byte(" "))
	if !ok || len(key) == 0 {
		return nil, 0, false
	}
	flags, rest, ok := bytes.Cut(rest, []byte(" "))
	if !ok || !isDigits(flags) {
		return nil, 0, false
	}
	size, _, _ := bytes.Cut(rest, []byte(" ")) // an optional cas follows
	if !isDigits(size) || len(size) > 10 {
		return nil, 0, false
	}
	for _, c := range size {
		n = n*10 + int(c-'0')
	}
	if n > maxItemBytes {
		return nil, 0, false
	}
	return key, n, true
}

func isDigits(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// fetch returns the values of keys, indexed like keys; a miss is nil (an
// empty value is not). Keys on one server (the common case, and always
// with one server) are fetched inline; otherwise each server gets its own
// get, concurrently.
func (s *Store) fetch(ctx context.Context, keys []string, timeout time.Duration, shared bool, adds []byte) ([][]byte, error) {
	vals := make([][]byte, len(keys))
	if len(keys) == 0 {
		return vals, nil
	}
	for _, k := range keys {
		// A space or line ending would inject protocol.
		if !legalKey(k) {
			return nil, ErrBadKey
		}
	}
	deadline := time.Now().Add(timeout)
	batched := shared
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		// A shared get may first wait for the gets ahead of it, which end
		// by their own deadlines: no later than timeout from now. So a
		// lookup shares only when that is little past its own deadline,
		// as for a kv statement whose deadline was set just before.
		batched = batched && deadline.Sub(d) <= timeout/batchSlack
		deadline = d
	}
	first := s.ring.Index(keys[0])
	if first < 0 {
		return nil, ring.ErrNoServers
	}
	if len(s.pools) == 1 {
		return vals, s.pools[first].lookup(ctx, keys, vals, deadline, timeout, batched, adds)
	}
	owner := make([]int, len(keys))
	single := true
	for i, k := range keys {
		owner[i] = s.ring.Index(k)
		single = single && owner[i] == first
	}
	if single {
		return vals, s.pools[first].lookup(ctx, keys, vals, deadline, timeout, batched, adds)
	}
	// Spread over servers, the generations go without their adds: those
	// missing are created after the get (see ensureGen).
	return vals, s.fetchSpread(ctx, keys, owner, vals, deadline, timeout, batched)
}

// fetchSpread gets keys owned by several servers, one get per server. The
// first server's runs on this goroutine.
func (s *Store) fetchSpread(ctx context.Context, keys []string, owner []int, vals [][]byte, deadline time.Time, timeout time.Duration, batched bool) error {
	type group struct {
		keys []string
		idx  []int
		vals [][]byte
		err  error
	}
	groups := make([]group, len(s.pools))
	for i, k := range keys {
		g := &groups[owner[i]]
		g.keys = append(g.keys, k)
		g.idx = append(g.idx, i)
	}
	var wg sync.WaitGroup
	lead := -1
	for si := range groups {
		g := &groups[si]
		if len(g.keys) == 0 {
			continue
		}
		g.vals = make([][]byte, len(g.keys))
		if lead < 0 {
			lead = si
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			g.err = s.pools[si].lookup(ctx, g.keys, g.vals, deadline, timeout, batched, nil)
		}()
	}
	groups[lead].err = s.pools[lead].lookup(ctx, groups[lead].keys, groups[lead].vals, deadline, timeout, batched, nil)
	wg.Wait()
	var first error
	for _, g := range groups {
		if g.err != nil && first == nil {
			first = g.err
		}
		for j, v := range g.vals {
			vals[g.idx[j]] = v
		}
	}
	return first
}
