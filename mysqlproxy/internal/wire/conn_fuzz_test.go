package wire

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"
)

// countReader counts the bytes its reader has handed out.
type countReader struct {
	r io.Reader
	n int
}

func (c *countReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += n
	return n, err
}

// fuzzConn is a Conn reading stream through the smallest bufio buffer, so
// that headers and payloads straddle its refills.
func fuzzConn(stream []byte) (*Conn, *countReader) {
	cr := &countReader{r: bytes.NewReader(stream)}
	return &Conn{R: bufio.NewReaderSize(cr, 16)}, cr
}

// FuzzReadPacket reads a client's byte stream as the command loop does,
// with the real framing: whatever arrives, ReadPacket returns a packet
// within the limit or an error, never panics, and holds no more memory
// than the bytes that arrived (a header announcing 16 MiB costs nothing
// until the bytes come).
func FuzzReadPacket(f *testing.F) {
	f.Fuzz(func(t *testing.T, limit uint32, stream []byte) {
		lim := int(limit % (1<<30 + 1))
		c, cr := fuzzConn(stream)
		var buf []byte
		for {
			in := cap(buf)
			p, _, err := c.ReadPacket(buf, lim)
			if bound := max(in, 2*cr.n+BufSize); cap(p) > bound {
				t.Fatalf("buffer cap %d after %d bytes arrived, want at most %d", cap(p), cr.n, bound)
			}
			if err == nil && len(p) > lim {
				t.Fatalf("got a %d-byte packet, limit %d", len(p), lim)
			}
			if err != nil {
				return
			}
			buf = p[:0]
		}
	})
}

// wirePkt is one wire packet of a generated stream.
type wirePkt struct {
	n        int // the length its header announces
	seq      byte
	payload  []byte // what the stream holds of it
	partHead bool   // the stream ends inside its header
}

func (w wirePkt) whole() bool { return !w.partHead && len(w.payload) == w.n }

// genStream turns script into a stream of wire packets with payloads of
// at most full bytes; a byte with its top bit set makes a full one, which
// a continuation follows. The script may end inside a header or payload.
func genStream(full int, script []byte) ([]byte, []wirePkt) {
	var stream []byte
	var pkts []wirePkt
	for len(script) > 0 {
		c := script[0]
		n := int(c&0x7f) % (full + 1)
		if c&0x80 != 0 {
			n = full
		}
		h := []byte{byte(n), byte(n >> 8), byte(n >> 16)}
		if len(script) < 2 {
			stream = append(stream, h...)
			pkts = append(pkts, wirePkt{n: n, partHead: true})
			break
		}
		w := wirePkt{n: n, seq: script[1]}
		if k := len(pkts); k > 0 && pkts[k-1].n == full && script[1]%8 != 0 {
			// Mostly, a continuation is numbered as it should be.
			w.seq = pkts[k-1].seq + 1
		}
		stream = append(stream, append(h, w.seq)...)
		script = script[2:]
		w.payload = script[:min(n, len(script))]
		script = script[len(w.payload):]
		stream = append(stream, w.payload...)
		pkts = append(pkts, w)
	}
	return stream, pkts
}

// outcome is what one ReadPacket should return.
type outcome struct {
	payload   []byte
	seq, last byte
	err       error // nil, ErrPacketTooLarge, ErrOutOfOrder, io.EOF or io.ErrUnexpectedEOF
}

// model reads pkts as the protocol says a reader must: the logical
// packets it returns, in order, up to the first one that fails.
func model(pkts []wirePkt, full, limit int) []outcome {
	var out []outcome
	for i := 0; ; {
		if i == len(pkts) || pkts[i].partHead {
			// No packet had begun: the stream ended cleanly.
			return append(out, outcome{err: io.EOF})
		}
		o := outcome{seq: pkts[i].seq, payload: []byte{}}
		for part := 0; ; part++ {
			if i == len(pkts) || pkts[i].partHead {
				o.err = io.ErrUnexpectedEOF
				return append(out, o)
			}
			w := pkts[i]
			if part > 0 && w.seq != o.last+1 {
				o.err = ErrOutOfOrder
				return append(out, o)
			}
			o.last = w.seq
			if len(o.payload)+w.n > limit {
				// The session ends here, after the part whose header
				// passed the limit.
				o.err = ErrPacketTooLarge
				return append(out, o)
			}
			if !w.whole() {
				o.err = io.ErrUnexpectedEOF
				return append(out, o)
			}
			o.payload = append(o.payload, w.payload...)
			i++
			if w.n < full {
				out = append(out, o)
				break
			}
		}
	}
}

// FuzzReadPacketFraming checks ReadPacket against a model of the protocol
// with wire packets shrunk to a few bytes, so that continuations, packets
// that are an exact multiple of the wire size, the limit, the sequence
// ids and the refusal of a packet over the limit are all reached: every
// packet comes back whole and in order, or the error the model expects,
// and the buffer never holds more than about twice the packet.
func FuzzReadPacketFraming(f *testing.F) {
	f.Fuzz(func(t *testing.T, fullB, stepB, limitB uint8, script []byte) {
		full, step, limit := 1+int(fullB%12), 1+int(stepB%8), int(limitB%64)
		stream, pkts := genStream(full, script)
		want := model(pkts, full, limit)
		c, _ := fuzzConn(stream)
		fr := framing{full: full, step: step}
		var buf []byte
		for i, w := range want {
			in := cap(buf)
			p, seq, err := c.readPacket(buf, limit, fr)
			if bound := max(in, 2*len(p)+step); cap(p) > bound {
				t.Fatalf("packet %d: buffer cap %d for %d bytes, want at most %d", i, cap(p), len(p), bound)
			}
			if cap(p) > max(in, 2*limit) {
				t.Fatalf("packet %d: buffer cap %d, limit %d", i, cap(p), limit)
			}
			if !errors.Is(err, w.err) {
				t.Fatalf("packet %d: got error %v, want %v", i, err, w.err)
			}
			if w.err == nil || w.err == ErrPacketTooLarge {
				if seq != w.seq {
					t.Fatalf("packet %d: got seq %d, want %d", i, seq, w.seq)
				}
			}
			if w.err == nil {
				if !bytes.Equal(p, w.payload) {
					t.Fatalf("packet %d: got payload %x, want %x", i, p, w.payload)
				}
				buf = p[:0]
			}
			if (w.err == nil || w.err == ErrPacketTooLarge) && c.LastSeq != w.last {
				t.Fatalf("packet %d: got last seq %d, want %d", i, c.LastSeq, w.last)
			}
		}
	})
}
