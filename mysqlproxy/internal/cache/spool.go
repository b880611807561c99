package cache

import (
	"bufio"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/mycached/mycached/mysqlproxy/internal/relay"
	"github.com/mycached/mycached/mysqlproxy/internal/wire"
)

// spool holds the response a fill's leader relays, in memory, until the
// backend has sent all of it; then the leader writes it to its client.
// Past its limit (a response too large to store) it writes what it holds
// and everything after straight to the client, with the client's pace.
// What it holds is kept as a tee keeps it, in pooled blocks (wire.Tee):
// a buffer grown by append would copy a large response over and over.
type spool struct {
	w       *bufio.Writer // the relayer's destination, writing to the spool
	held    wire.Tee
	limit   int
	budget  *wire.Budget
	client  *bufio.Writer
	guard   stallGuard // writes what is held to the client
	through bool
	// overflow is called when the response starts going through: memory
	// says it is for want of fill memory, not because it is too large.
	overflow func(memory bool)
}

// spoolSlack allows for the client's copy of a response being longer
// than the stored one (OK packets carry the session state it tracks).
const spoolSlack = 64 << 10

func (s *spool) Write(p []byte) (int, error) {
	if !s.through {
		// Past the limit, or past what the engine's fill memory has room
		// for (clients that do not read hold their responses there), the
		// response goes through at the client's pace.
		if s.held.TryWrite(p) {
			return len(p), nil
		}
		s.through = true
		s.overflow(s.held.Len()+len(p) <= s.limit)
		end, err := s.writeHeld()
		end()
		if err != nil {
			return 0, err
		}
	}
	return s.client.Write(p)
}

// writeHeld writes what the spool holds to the client, and lets go of it.
// A client that reads none of it for a while is cut off (see stallGuard).
// The deadline stays set while the caller flushes; end clears it.
func (s *spool) writeHeld() (end func(), err error) {
	end = func() {}
	if s.held.Len() > 0 {
		_, err = s.held.WriteTo(s.guard)
		end = s.guard.end
	}
	s.held.Reset(s.limit, s.budget)
	return end, err
}

// drain writes what the spool holds to the client, and flushes it.
func (s *spool) drain(sess *relay.Session) error {
	end, err := s.writeHeld()
	defer end()
	if err != nil {
		return relay.ClientError{Err: err}
	}
	return sess.Flush()
}

// stallGuard writes a response that counts against the fill memory to a
// client, with a write deadline of the session's net_write_timeout that
// each chunk pushes back: a client that reads none of it for that long is
// cut off, as the server cuts off a client that does not read. It would
// otherwise hold fill memory for as long as it liked. The deadline bounds
// a stall, not a slow read.
type stallGuard struct {
	conn  net.Conn
	w     *bufio.Writer
	after time.Duration
}

// stallChunk is the most bytes written under one deadline.
const stallChunk = 64 << 10

// defaultWriteTimeout is the server's default net_write_timeout, for a
// session whose own is unknown.
const defaultWriteTimeout = 60 * time.Second

func newStallGuard(sess *relay.Session) stallGuard {
	g := stallGuard{conn: sess.Client.NetConn, w: sess.Client.W, after: defaultWriteTimeout}
	if n, err := strconv.Atoi(sess.Vars["net_write_timeout"]); err == nil && n > 0 {
		g.after = time.Duration(n) * time.Second
	}
	return g
}

func (g stallGuard) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		k := min(len(p), stallChunk)
		_ = g.conn.SetWriteDeadline(time.Now().Add(g.after))
		m, err := g.w.Write(p[:k])
		n += m
		if err != nil {
			return n, err
		}
		p = p[k:]
	}
	return n, nil
}

// end clears the deadline.
func (g stallGuard) end() { _ = g.conn.SetWriteDeadline(time.Time{}) }

var spools = sync.Pool{New: func() any {
	s := &spool{}
	s.w = bufio.NewWriterSize(s, wire.BufSize)
	return s
}}

func (e *Engine) getSpool(sess *relay.Session, limit int, overflow func(memory bool)) *spool {
	s := spools.Get().(*spool)
	s.client, s.limit, s.overflow, s.through = sess.Client.W, limit, overflow, false
	s.guard = newStallGuard(sess)
	s.budget = e.fill
	s.held.Reset(limit, s.budget)
	return s
}

func (e *Engine) putSpool(s *spool) {
	s.w.Reset(s)
	s.held.Release()
	s.client, s.guard, s.overflow, s.budget = nil, stallGuard{}, nil, nil
	spools.Put(s)
}
