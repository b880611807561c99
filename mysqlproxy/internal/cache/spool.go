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
//
// It holds the response in blocks of 16 KiB, taken from a pool and given
// back when the fill ends: a contiguous buffer grown by append would copy
// a large response over and over, into memory the process had not
// touched, and a read of tens of megabytes spent more time there than on
// the server. Small blocks keep what a small miss holds small.
type spool struct {
	w        *bufio.Writer // the relayer's destination, writing to the spool
	blocks   []*[spoolBlock]byte
	n        int // bytes held, over all blocks
	limit    int
	client   *bufio.Writer
	through  bool
	overflow func()
}

// spoolSlack allows for the client's copy of a response being longer
// than the stored one (OK packets carry the session state it tracks).
const spoolSlack = 64 << 10

const spoolBlock = 16 << 10

var spoolBlocks = sync.Pool{New: func() any { return new([spoolBlock]byte) }}

func (s *spool) Write(p []byte) (int, error) {
	if !s.through {
		if s.n+len(p) <= s.limit {
			s.hold(p)
			return len(p), nil
		}
		s.through = true
		s.overflow()
		if err := s.writeHeld(); err != nil {
			return 0, err
		}
	}
	return s.client.Write(p)
}

// hold copies p into the blocks.
func (s *spool) hold(p []byte) {
	for len(p) > 0 {
		off := s.n % spoolBlock
		if off == 0 && s.n/spoolBlock == len(s.blocks) {
			s.blocks = append(s.blocks, spoolBlocks.Get().(*[spoolBlock]byte))
		}
		k := copy(s.blocks[s.n/spoolBlock][off:], p)
		s.n += k
		p = p[k:]
	}
}

// writeHeld writes what the blocks hold to the client, and releases them.
func (s *spool) writeHeld() error {
	var err error
	for i, b := range s.blocks {
		if err == nil {
			k := min(spoolBlock, s.n-i*spoolBlock)
			_, err = s.client.Write(b[:k])
		}
		spoolBlocks.Put(b)
		s.blocks[i] = nil
	}
	s.blocks, s.n = s.blocks[:0], 0
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

func (e *Engine) getSpool(client *bufio.Writer, limit int, overflow func()) *spool {
	s := spools.Get().(*spool)
	s.client, s.limit, s.overflow, s.through = client, limit, overflow, false
	return s
}

func (e *Engine) putSpool(s *spool) {
	s.w.Reset(s)
	for i, b := range s.blocks {
		spoolBlocks.Put(b)
		s.blocks[i] = nil
	}
	s.blocks, s.n = s.blocks[:0], 0
	s.client, s.overflow = nil, nil
	spools.Put(s)
}
