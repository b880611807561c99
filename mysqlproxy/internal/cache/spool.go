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
type spool struct {
	w        *bufio.Writer // the relayer's destination, writing to the spool
	buf      []byte
	limit    int
	client   *bufio.Writer
	through  bool
	overflow func()
}

// spoolSlack allows for the client's copy of a response being longer
// than the stored one (OK packets carry the session state it tracks).
const spoolSlack = 64 << 10

func (s *spool) Write(p []byte) (int, error) {
	if !s.through {
		if len(s.buf)+len(p) <= s.limit {
			s.buf = append(s.buf, p...)
			return len(p), nil
		}
		s.through = true
		s.overflow()
		if _, err := s.client.Write(s.buf); err != nil {
			return 0, err
		}
		s.buf = s.buf[:0]
	}
	return s.client.Write(p)
}

// drain writes what the spool holds to the client, and flushes it.
func (s *spool) drain(sess *relay.Session) error {
	if len(s.buf) > 0 {
		if _, err := s.client.Write(s.buf); err != nil {
			return relay.ClientError{Err: err}
		}
		s.buf = s.buf[:0]
	}
	return sess.Flush()
}

var spools = sync.Pool{New: func() any {
	s := &spool{}
	s.w = bufio.NewWriterSize(s, wire.BufSize)
	return s
}}

func (e *Engine) getSpool(client *bufio.Writer, limit int, overflow func()) *spool {
	s := spools.Get().(*spool)
	s.client, s.limit, s.overflow, s.through = client, limit, overflow, false
	return s
}

func (e *Engine) putSpool(s *spool) {
	s.w.Reset(s)
	s.client, s.overflow = nil, nil
	if cap(s.buf) > 1<<20 {
		s.buf = nil
	}
	s.buf = s.buf[:0]
	spools.Put(s)
}
