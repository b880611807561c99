package mysqlproxy

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// maxPayload is the largest payload of one wire packet. A payload of exactly
// this length is continued by the next packet; the protocol splits larger
// logical packets this way, and a zero-length packet ends a logical packet
// that is an exact multiple of it.
const maxPayload = 1<<24 - 1

// bufSize is the size of the pooled read and write buffers. 64 KiB holds a
// typical result set whole, so a response costs one write syscall.
const bufSize = 64 << 10

// Sentinel errors of the packet layer.
var (
	errPacketTooLarge = errors.New("mysqlproxy: packet exceeds max-packet")
	errBadSequence    = errors.New("mysqlproxy: packet out of sequence")
	errEmptyCommand   = errors.New("mysqlproxy: empty command packet")
)

var (
	readerPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, bufSize) }}
	writerPool = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, bufSize) }}
)

// pconn is one side of a relayed connection: a net.Conn with pooled
// buffers. It is owned by one session goroutine and is not safe for
// concurrent use, except for close and deadlines.
type pconn struct {
	conn    net.Conn
	r       *bufio.Reader
	w       *bufio.Writer
	lastSeq byte // sequence id of the last wire packet readPacket read
}

func newPconn(c net.Conn) *pconn {
	r := readerPool.Get().(*bufio.Reader)
	r.Reset(c)
	w := writerPool.Get().(*bufio.Writer)
	w.Reset(c)
	return &pconn{conn: c, r: r, w: w}
}

// release returns the buffers to their pools. The pconn must not be used
// after it.
func (p *pconn) release() {
	if p.r != nil {
		p.r.Reset(nil)
		readerPool.Put(p.r)
		p.r = nil
	}
	if p.w != nil {
		p.w.Reset(nil)
		writerPool.Put(p.w)
		p.w = nil
	}
}

func (p *pconn) close() error { return p.conn.Close() }

// upgrade swaps the transport for a TLS connection built by wrap. Bytes that
// the reader has already buffered (a client may send its TLS hello right
// behind the SSL request) are handed to the new transport first.
func (p *pconn) upgrade(wrap func(net.Conn) net.Conn) {
	raw := p.conn
	if n := p.r.Buffered(); n > 0 {
		b, _ := p.r.Peek(n)
		raw = &prefixConn{Conn: raw, prefix: append([]byte(nil), b...)}
	}
	p.conn = wrap(raw)
	p.r.Reset(p.conn)
	p.w.Reset(p.conn)
}

// prefixConn replays bytes read ahead before reading from the connection.
type prefixConn struct {
	net.Conn
	prefix []byte
}

func (c *prefixConn) Read(b []byte) (int, error) {
	if len(c.prefix) > 0 {
		n := copy(b, c.prefix)
		c.prefix = c.prefix[n:]
		return n, nil
	}
	return c.Conn.Read(b)
}

// readHeader reads one wire packet header.
func (p *pconn) readHeader() (n int, seq byte, err error) {
	h, err := p.r.Peek(4)
	if err != nil {
		return 0, 0, err
	}
	n = payloadLen(h)
	seq = h[3]
	_, _ = p.r.Discard(4)
	return n, seq, nil
}

// payloadLen is the payload length in the wire packet header h.
func payloadLen(h []byte) int { return int(h[0]) | int(h[1])<<8 | int(h[2])<<16 }

// readPacket reads one logical packet, joining continuations, into buf
// (reused when large enough). It returns the payload and the sequence id of
// the first wire packet; the last one's is in p.lastSeq.
func (p *pconn) readPacket(buf []byte, limit int) ([]byte, byte, error) {
	buf = buf[:0]
	first := -1
	for {
		n, seq, err := p.readHeader()
		if err != nil {
			return buf, 0, err
		}
		p.lastSeq = seq
		if first < 0 {
			first = int(seq)
		}
		seq = byte(first)
		if len(buf)+n > limit {
			return buf, seq, errPacketTooLarge
		}
		start := len(buf)
		buf = grow(buf, n)
		if _, err := io.ReadFull(p.r, buf[start:start+n]); err != nil {
			return buf, seq, err
		}
		if n < maxPayload {
			return buf, seq, nil
		}
	}
}

func grow(b []byte, n int) []byte {
	if cap(b)-len(b) >= n {
		return b[:len(b)+n]
	}
	nb := make([]byte, len(b)+n, 2*cap(b)+n)
	copy(nb, b)
	return nb
}

// writePacket buffers payload as one logical packet starting at sequence id
// seq, split as the protocol requires. It returns the next sequence id.
func (p *pconn) writePacket(payload []byte, seq byte) (byte, error) {
	for {
		n := len(payload)
		if n > maxPayload {
			n = maxPayload
		}
		if err := p.writeHeader(n, seq); err != nil {
			return seq, err
		}
		if _, err := p.w.Write(payload[:n]); err != nil {
			return seq, err
		}
		seq++
		payload = payload[n:]
		if n < maxPayload {
			return seq, nil
		}
	}
}

func (p *pconn) writeHeader(n int, seq byte) error {
	var h [4]byte
	h[0], h[1], h[2], h[3] = byte(n), byte(n>>8), byte(n>>16), seq
	_, err := p.w.Write(h[:])
	return err
}

// copyPayload copies n payload bytes from src to dst without holding them
// whole, appending them to tee when tee is non-nil and still below teeMax.
// It returns the tee, set to nil once it would exceed teeMax.
func copyPayload(dst *bufio.Writer, src *bufio.Reader, n int, tee []byte, teeMax int) ([]byte, error) {
	for n > 0 {
		k := n
		if k > src.Size() {
			k = src.Size()
		}
		b, err := src.Peek(k)
		if err != nil {
			return tee, err
		}
		if _, err := dst.Write(b); err != nil {
			return tee, clientErr{err}
		}
		if tee != nil {
			if len(tee)+len(b) > teeMax {
				tee = nil
			} else {
				tee = append(tee, b...)
			}
		}
		_, _ = src.Discard(k)
		n -= k
	}
	return tee, nil
}

// clientErr marks an error writing to the client, as opposed to reading
// from the backend; the session ends either way, but only a backend error
// is worth telling the client about.
type clientErr struct{ err error }

func (e clientErr) Error() string { return "client: " + e.err.Error() }
func (e clientErr) Unwrap() error { return e.err }

// setDeadline sets a deadline from a timeout, zero meaning none.
func setDeadline(c net.Conn, d time.Duration) {
	if d <= 0 {
		_ = c.SetDeadline(time.Time{})
		return
	}
	_ = c.SetDeadline(time.Now().Add(d))
}

func errf(format string, args ...any) error { return fmt.Errorf("mysqlproxy: "+format, args...) }
