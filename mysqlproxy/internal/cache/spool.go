package cache

import (
	"bufio"
	"sync"

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
		if err := s.writeHeld(); err != nil {
			return 0, err
		}
	}
	return s.client.Write(p)
}

// writeHeld writes what the spool holds to the client, and lets go of it.
func (s *spool) writeHeld() error {
	_, err := s.held.WriteTo(s.client)
	s.held.Reset(s.limit, s.budget)
	return err
}

// drain writes what the spool holds to the client, and flushes it.
func (s *spool) drain(sess *relay.Session) error {
	if err := s.writeHeld(); err != nil {
		return relay.ClientError{Err: err}
	}
	return sess.Flush()
}

var spools = sync.Pool{New: func() any {
	s := &spool{}
	s.w = bufio.NewWriterSize(s, wire.BufSize)
	return s
}}

func (e *Engine) getSpool(client *bufio.Writer, limit int, overflow func(memory bool)) *spool {
	s := spools.Get().(*spool)
	s.client, s.limit, s.overflow, s.through = client, limit, overflow, false
	s.budget = e.fill
	s.held.Reset(limit, s.budget)
	return s
}

func (e *Engine) putSpool(s *spool) {
	s.w.Reset(s)
	s.held.Release()
	s.client, s.overflow, s.budget = nil, nil, nil
	spools.Put(s)
}
