// Package wire reads and writes MySQL protocol packets: framing over a
// buffered connection, and the small protocol structures (length-encoded
// integers, OK, ERR and EOF packets, column definitions, prepared
// statement parameters) that a proxy reads or writes itself.
package wire

import (
	"bufio"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// MaxPayload is the largest payload of one wire packet. A payload of exactly
// this length is continued by the next packet; the protocol splits larger
// logical packets this way, and a zero-length packet ends a logical packet
// that is an exact multiple of it.
const MaxPayload = 1<<24 - 1

// BufSize is the size of the pooled read and write buffers. 64 KiB holds a
// typical result set whole, so a response costs one write syscall.
const BufSize = 64 << 10

// ErrPacketTooLarge means a logical packet exceeds the caller's limit.
var ErrPacketTooLarge = errors.New("wire: packet exceeds max-packet")

// ErrOutOfOrder means a continuation of a logical packet came with a
// sequence id other than the next one.
var ErrOutOfOrder = errors.New("wire: packets out of order")

var (
	readerPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, BufSize) }}
	writerPool = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, BufSize) }}
	// held counts the buffers taken from the pools and not given back.
	held atomic.Int64
)

func getReader(c net.Conn) *bufio.Reader {
	held.Add(1)
	r := readerPool.Get().(*bufio.Reader)
	r.Reset(c)
	return r
}

func putReader(r *bufio.Reader) {
	r.Reset(nil)
	readerPool.Put(r)
	held.Add(-1)
}

func getWriter(c net.Conn) *bufio.Writer {
	held.Add(1)
	w := writerPool.Get().(*bufio.Writer)
	w.Reset(c)
	return w
}

func putWriter(w *bufio.Writer) {
	w.Reset(nil)
	writerPool.Put(w)
	held.Add(-1)
}

// BuffersHeld returns how many of the connections' BufSize buffers are
// in use.
func BuffersHeld() int64 { return held.Load() }

// Conn is one side of a relayed connection: a net.Conn with pooled
// buffers. It is owned by one goroutine and is not safe for concurrent
// use, except for Close and the deadlines of NetConn.
type Conn struct {
	NetConn net.Conn
	R       *bufio.Reader
	W       *bufio.Writer
	LastSeq byte // sequence id of the last wire packet ReadPacket read
	// Unread is, after ReadPacket refused a packet (ErrPacketTooLarge),
	// how much of the wire packet whose header passed the limit is left
	// to read.
	Unread int

	comp *compConn // the transport, when the compressed protocol is on

	wParked bool // W was given back (ParkWriter)
}

// NewConn wraps c with pooled buffers.
func NewConn(c net.Conn) *Conn {
	return &Conn{NetConn: c, R: getReader(c), W: getWriter(c)}
}

// Release returns the buffers to their pools. The Conn must not be used
// after it.
func (p *Conn) Release() {
	if p.R != nil {
		putReader(p.R)
		p.R = nil
	}
	if p.W != nil {
		putWriter(p.W)
		p.W = nil
	}
	p.wParked = false
}

// Close closes the connection. One closed with bytes received and not
// read is reset, as the kernel resets a socket closed with bytes unread
// in it, the server's among them: a client that sent commands behind its
// COM_QUIT, or more than the server read before it hung up, sees the
// reset through mycached as it does directly.
func (p *Conn) Close() error {
	if p.R != nil && p.R.Buffered() > 0 {
		sock, _ := Socket(p.NetConn)
		if tc, ok := sock.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
	}
	return p.NetConn.Close()
}

// Upgrade swaps the transport for a TLS connection built by wrap. Bytes that
// the reader has already buffered (a client may send its TLS hello right
// behind the SSL request) are handed to the new transport first.
func (p *Conn) Upgrade(wrap func(net.Conn) net.Conn) {
	raw := p.NetConn
	if n := p.R.Buffered(); n > 0 {
		b, _ := p.R.Peek(n)
		raw = &prefixConn{Conn: raw, prefix: append([]byte(nil), b...)}
	}
	p.NetConn = wrap(raw)
	p.R.Reset(p.NetConn)
	p.W.Reset(p.NetConn)
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

// ReadHeader reads one wire packet header.
func (p *Conn) ReadHeader() (n int, seq byte, err error) {
	h, err := p.R.Peek(4)
	if err != nil {
		return 0, 0, err
	}
	n = PayloadLen(h)
	seq = h[3]
	_, _ = p.R.Discard(4)
	return n, seq, nil
}

// PayloadLen is the payload length in the wire packet header h.
func PayloadLen(h []byte) int { return int(h[0]) | int(h[1])<<8 | int(h[2])<<16 }

// ReadPacket reads one logical packet, joining continuations, into buf
// (reused when large enough). It returns the payload and the sequence id of
// the first wire packet; the last one's is in p.LastSeq.
//
// On the side that answers commands under the compressed protocol, the
// frames' sequence ids are what counts, as they are to the server: it
// does not check those of the packets inside them (Connector/J sends a
// command too short to compress, uncompressed, in frame 0 as packet 1,
// and the C client numbers a long command's packets apart from its
// frames). There the first sequence id is given as 0, and p.LastSeq is
// the last frame's, which the server's answer follows.
func (p *Conn) ReadPacket(buf []byte, limit int) ([]byte, byte, error) {
	b, seq, err := p.readPacket(buf, limit, framing{full: MaxPayload, step: BufSize})
	p.syncSeq()
	if c := p.comp; c != nil && !c.commands {
		seq, p.LastSeq = 0, c.seq-1
	}
	return b, seq, err
}

// framing is how ReadPacket reads: a wire packet of full bytes is continued
// by the next one, and the buffer grows by at most step bytes (or by its
// own length, whichever is more) ahead of the bytes that have arrived.
// Tests shrink both to reach continuations and growth with small inputs.
type framing struct{ full, step int }

func (p *Conn) readPacket(buf []byte, limit int, f framing) ([]byte, byte, error) {
	buf = buf[:0]
	first := -1
	for {
		n, seq, err := p.ReadHeader()
		if err != nil {
			if first >= 0 && err == io.EOF {
				err = io.ErrUnexpectedEOF // the stream ended inside a packet
			}
			return buf, byte(max(first, 0)), err
		}
		if first >= 0 && seq != p.LastSeq+1 && (p.comp == nil || p.comp.commands) {
			return buf, byte(first), ErrOutOfOrder
		}
		p.LastSeq = seq
		if first < 0 {
			first = int(seq)
		}
		seq = byte(first)
		if len(buf)+n > limit {
			// Nothing more is read: the caller answers after the part
			// whose header passed the limit, as the server does.
			p.Unread = n
			return buf, seq, ErrPacketTooLarge
		}
		// The header alone commits nothing: the buffer grows with the
		// bytes that arrive, so a client that announces a huge packet and
		// sends little costs little.
		for left := n; left > 0; {
			k := min(left, max(f.step, len(buf)))
			start := len(buf)
			buf = grow(buf, k)
			m, err := io.ReadFull(p.R, buf[start:])
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			if err != nil {
				return buf[:start+m], seq, err
			}
			left -= k
		}
		if n < f.full {
			return buf, seq, nil
		}
	}
}

// grow extends b by n bytes. A new array is at most twice the new length,
// so that reading a packet never holds much more than the packet.
func grow(b []byte, n int) []byte {
	if cap(b)-len(b) >= n {
		return b[:len(b)+n]
	}
	nb := make([]byte, len(b)+n, max(2*len(b), len(b)+n))
	copy(nb, b)
	return nb
}

// WritePacket buffers payload as one logical packet starting at sequence id
// seq, split as the protocol requires. It returns the next sequence id.
//
// On the side where mycached sends commands, sequence id 0 starts one,
// which restarts the compressed protocol's frame sequence.
func (p *Conn) WritePacket(payload []byte, seq byte) (byte, error) {
	if seq == 0 {
		if err := p.startCommand(); err != nil {
			return seq, err
		}
	}
	for {
		n := len(payload)
		if n > MaxPayload {
			n = MaxPayload
		}
		if err := p.WriteHeader(n, seq); err != nil {
			return seq, err
		}
		if _, err := p.W.Write(payload[:n]); err != nil {
			return seq, err
		}
		seq++
		payload = payload[n:]
		if n < MaxPayload {
			return seq, nil
		}
	}
}

// WriteHeader buffers one wire packet header.
func (p *Conn) WriteHeader(n int, seq byte) error {
	var h [4]byte
	h[0], h[1], h[2], h[3] = byte(n), byte(n>>8), byte(n>>16), seq
	_, err := p.W.Write(h[:])
	return err
}

// CopyPayload copies n payload bytes from src to dst without holding them
// whole, keeping them in tee (which may be nil). An error writing to dst
// is a DstError; any other is src's.
func CopyPayload(dst *bufio.Writer, src *bufio.Reader, n int, tee *Tee) error {
	for n > 0 {
		k := n
		if k > src.Size() {
			k = src.Size()
		}
		b, err := src.Peek(k)
		if err != nil {
			return err
		}
		if _, err := dst.Write(b); err != nil {
			return DstError{err}
		}
		tee.Write(b)
		_, _ = src.Discard(k)
		n -= k
	}
	return nil
}

// DstError marks an error writing to CopyPayload's destination, as opposed
// to reading from its source.
type DstError struct{ Err error }

func (e DstError) Error() string { return "wire: write: " + e.Err.Error() }
func (e DstError) Unwrap() error { return e.Err }

// SetDeadline sets a deadline from a timeout, zero meaning none.
func SetDeadline(c net.Conn, d time.Duration) {
	if d <= 0 {
		_ = c.SetDeadline(time.Time{})
		return
	}
	_ = c.SetDeadline(time.Now().Add(d))
}
