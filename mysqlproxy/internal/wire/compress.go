package wire

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"crypto/tls"
	"errors"
	"io"
	"net"
)

// MySQL's compressed protocol (CLIENT_COMPRESS), on after the login's OK:
// each write is sent as frames of a 7-byte header (the payload's length,
// a sequence id, and the length before compression, 0 when the payload
// is not compressed) and a zlib payload holding any run of the stream's
// bytes. Frames have sequence ids of their own: a command's first frame
// has 0, and every frame after it, either way, the next one.

// minCompress is the shortest payload worth compressing, as the server
// has it (MIN_COMPRESS_LENGTH).
const minCompress = 50

// maxFrame is the most stream bytes one frame carries.
const maxFrame = MaxPayload

// errBadFrame is a compressed frame that does not inflate to its length.
var errBadFrame = errors.New("wire: malformed compressed packet")

// compConn is a transport that speaks the compressed protocol over
// another. Reads resume where a deadline interrupted them.
type compConn struct {
	net.Conn
	br *bufio.Reader

	// Reading: the frame read so far (header, then payload), and
	// inflated bytes not yet returned.
	frame []byte
	out   []byte
	zr    io.ReadCloser

	seq byte // the next frame's sequence id
	// commands says this side sends commands (mycached toward the
	// backend): each restarts the sequence at 0 (see startCommand), and
	// a frame read sets the next one written. On the side that answers
	// commands, a watcher may read the client's next command while the
	// answer to the last is written: there the answer's frames follow
	// the frame of the last byte the session itself has read (syncSeq),
	// as the server's do.
	commands bool
	made     int64      // stream bytes inflated so far
	ends     []frameEnd // frames read and not yet passed by the session
	// watch is where the command being read starts in the stream, and
	// watchSeq the sequence id of a frame read that starts there (-1:
	// none).
	watch    int64
	watchSeq int

	zw  *zlib.Writer
	zb  bytes.Buffer
	hdr [7]byte
}

// Transport returns the connection under the compressed protocol's
// framing, or c itself when it has none.
func Transport(c net.Conn) net.Conn {
	if cc, ok := c.(*compConn); ok {
		return cc.Conn
	}
	return c
}

// Socket returns the socket beneath c's compression and TLS, and whether
// TLS was over it.
func Socket(c net.Conn) (net.Conn, bool) {
	c = Transport(c)
	if tc, ok := c.(*tls.Conn); ok {
		return tc.NetConn(), true
	}
	return c, false
}

// frameEnd is where a frame read ends in the stream, and its sequence id.
type frameEnd struct {
	end int64
	seq byte
}

// Compress turns the compressed protocol on for everything read and
// written from now on; commands says mycached sends commands on this
// side (it is the backend's client). Bytes already buffered are read
// first, as frames. Once on, it stays on (COM_CHANGE_USER keeps it).
func (p *Conn) Compress(commands bool) {
	if p.comp != nil {
		return
	}
	var c *compConn
	p.Upgrade(func(raw net.Conn) net.Conn {
		c = &compConn{Conn: raw, br: bufio.NewReaderSize(raw, 16<<10), commands: commands, watch: -1, watchSeq: -1}
		return c
	})
	if !commands {
		// Until a command is read, the server's frames go on from the
		// last packet it read (see ReadCommand).
		c.seq = p.LastSeq + 1
	}
	p.comp = c
}

// syncSeq sets the sequence id of the next frame written on the side
// that answers commands: the one after the frame of the last byte the
// session has read. Only the session's goroutine calls it, when nothing
// else reads.
func (p *Conn) syncSeq() {
	c := p.comp
	if c == nil || c.commands {
		return
	}
	read := c.made - int64(len(c.out)) - int64(p.R.Buffered())
	i := 0
	for i < len(c.ends) && c.ends[i].end < read {
		i++
	}
	if i == len(c.ends) {
		return // nothing read since the last call
	}
	if read > 0 {
		c.seq = c.ends[i].seq + 1
	}
	c.ends = append(c.ends[:0], c.ends[i:]...)
}

// ReadCommand is ReadPacket for the first packet of a command. On a
// compressed side that answers commands, a command that begins a frame
// must begin it with sequence id 0, since the sequence starts over with
// each command: the server refuses another id as out of order. Such a
// command is returned with that id, for the caller to refuse as it does
// an uncompressed packet's; the refusal's frame goes on from the frames
// written before, as the server's does (its frame count is reset only by
// the frames it reads).
func (p *Conn) ReadCommand(buf []byte, limit int) ([]byte, byte, error) {
	c := p.comp
	if c == nil || c.commands {
		return p.ReadPacket(buf, limit)
	}
	at := c.made - int64(len(c.out)) - int64(p.R.Buffered())
	c.watch, c.watchSeq = at, -1
	for i, e := range c.ends {
		// Read ahead already (by a watcher): the frame after the one
		// that ends where the command starts.
		if at == 0 && i == 0 {
			c.watchSeq = int(e.seq) // the stream's first frame
		}
		if e.end == at && i+1 < len(c.ends) {
			c.watchSeq = int(c.ends[i+1].seq)
		}
	}
	before := c.seq
	b, seq, err := p.ReadPacket(buf, limit)
	if err == nil && c.watchSeq > 0 {
		seq = byte(c.watchSeq)
		c.seq = before
	}
	c.watch, c.watchSeq = -1, -1
	return b, seq, err
}

// SyncSeq is syncSeq for callers that read the stream's bytes
// themselves (CopyPayload from p.R).
func (p *Conn) SyncSeq() { p.syncSeq() }

// AnswerSeq is, on a compressed side that answers commands, the
// sequence id the server gives the next packet of its answer: it numbers
// the packets inside its frames as it numbers the frames, from the one
// after the last frame it read, however the client numbered the packets
// of its command. ok is false elsewhere.
func (p *Conn) AnswerSeq() (seq byte, ok bool) {
	if c := p.comp; c != nil && !c.commands {
		return c.seq, true
	}
	return 0, false
}

// Compressed reports whether the compressed protocol is on.
func (p *Conn) Compressed() bool { return p.comp != nil }

func (c *compConn) Read(b []byte) (int, error) {
	for len(c.out) == 0 {
		if err := c.readFrame(); err != nil {
			return 0, err
		}
	}
	n := copy(b, c.out)
	c.out = c.out[n:]
	return n, nil
}

// readFrame reads one frame into c.out. What it read before an error is
// kept for the next call.
func (c *compConn) readFrame() error {
	for len(c.frame) < 7 {
		if err := c.readSome(7); err != nil {
			return err
		}
	}
	clen := PayloadLen(c.frame)
	for len(c.frame) < 7+clen {
		if err := c.readSome(7 + clen); err != nil {
			return err
		}
	}
	seq := c.frame[3]
	ulen := PayloadLen(c.frame[4:])
	payload := c.frame[7:]
	c.frame = c.frame[:0]
	if err := c.inflate(payload, ulen); err != nil {
		return err
	}
	if c.commands {
		c.seq = seq + 1
	} else {
		if c.made == c.watch {
			c.watchSeq = int(seq)
		}
		c.made += int64(len(c.out))
		if len(c.ends) >= 1024 {
			// None the session has not passed can end before what
			// the reader above holds: BufSize bytes at most.
			keep := c.made - int64(len(c.out)) - 2*BufSize
			i := 0
			for i < len(c.ends)-1 && c.ends[i].end < keep {
				i++
			}
			c.ends = append(c.ends[:0], c.ends[i:]...)
		}
		c.ends = append(c.ends, frameEnd{c.made, seq})
	}
	return nil
}

// inflate sets c.out to a frame's stream bytes.
func (c *compConn) inflate(payload []byte, ulen int) error {
	if ulen == 0 {
		// Stored as is; the frame buffer is reused only once c.out is
		// used up.
		c.out = payload
		return nil
	}
	var err error
	if c.zr == nil {
		c.zr, err = zlib.NewReader(bytes.NewReader(payload))
	} else {
		err = c.zr.(zlib.Resetter).Reset(bytes.NewReader(payload), nil)
	}
	if err != nil {
		return errBadFrame
	}
	// The inflated bytes grow as they come, up to the length the header
	// gives, so a small frame that claims a large length costs little.
	var out bytes.Buffer
	out.Grow(min(ulen, 64<<10))
	// A frame whose stream ends short of the length its header gives is
	// taken at the length it has, as the server takes it (zlib's
	// uncompress into a buffer of that length); one cut short is not.
	_, err = io.CopyN(&out, c.zr, int64(ulen))
	if err != nil && err != io.EOF {
		return errBadFrame
	}
	// A frame that inflates to more than its header says is refused as
	// the server refuses it, not cut at that length.
	var more [1]byte
	if m, _ := c.zr.Read(more[:]); m > 0 {
		return errBadFrame
	}
	c.out = out.Bytes()
	return nil
}

// readSome reads more of the frame, up to want bytes in all.
func (c *compConn) readSome(want int) error {
	if cap(c.frame) < want {
		// Grow with what arrives: at most double, at least 64 KiB.
		nb := make([]byte, len(c.frame), min(want, max(2*cap(c.frame), len(c.frame)+64<<10)))
		copy(nb, c.frame)
		c.frame = nb
	}
	end := min(want, cap(c.frame))
	n, err := c.br.Read(c.frame[len(c.frame):end])
	c.frame = c.frame[:len(c.frame)+n]
	if n > 0 {
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	if err == io.EOF && len(c.frame) > 0 {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// Write sends b as frames, compressed where that saves bytes.
func (c *compConn) Write(b []byte) (int, error) {
	written := 0
	for len(b) > 0 {
		n := min(len(b), maxFrame)
		if err := c.writeFrame(b[:n]); err != nil {
			return written, err
		}
		written += n
		b = b[n:]
	}
	return written, nil
}

func (c *compConn) writeFrame(b []byte) error {
	payload, ulen := b, 0
	if len(b) >= minCompress {
		c.zb.Reset()
		if c.zw == nil {
			c.zw, _ = zlib.NewWriterLevel(&c.zb, zlib.BestSpeed)
		} else {
			c.zw.Reset(&c.zb)
		}
		_, _ = c.zw.Write(b)
		_ = c.zw.Close()
		if c.zb.Len() < len(b) {
			payload, ulen = c.zb.Bytes(), len(b)
		}
	}
	h := c.hdr[:]
	h[0], h[1], h[2] = byte(len(payload)), byte(len(payload)>>8), byte(len(payload)>>16)
	h[3] = c.seq
	h[4], h[5], h[6] = byte(ulen), byte(ulen>>8), byte(ulen>>16)
	c.seq++
	bufs := net.Buffers{h, payload}
	_, err := bufs.WriteTo(c.Conn)
	return err
}

// startCommand restarts the frame sequence for a command mycached sends
// on a compressed side, once what is buffered before it has gone.
func (p *Conn) startCommand() error {
	if p.comp == nil || !p.comp.commands {
		return nil
	}
	if p.W.Buffered() > 0 {
		if err := p.W.Flush(); err != nil {
			return err
		}
	}
	p.comp.seq = 0
	return nil
}
