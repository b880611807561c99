package wire

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// TestReadPacketContinuation reads real 16 MiB continuations: a packet of
// exactly MaxPayload bytes, ended by an empty one, and a longer one split
// in two; the sequence ids are the first and last wire packets'.
func TestReadPacketContinuation(t *testing.T) {
	big := bytes.Repeat([]byte{'x'}, MaxPayload+10)
	var stream []byte
	hdr := func(n int, seq byte) []byte { return []byte{byte(n), byte(n >> 8), byte(n >> 16), seq} }
	stream = append(stream, hdr(MaxPayload, 0)...)
	stream = append(stream, big[:MaxPayload]...)
	stream = append(stream, hdr(0, 1)...)
	stream = append(stream, hdr(MaxPayload, 5)...)
	stream = append(stream, big[:MaxPayload]...)
	stream = append(stream, hdr(10, 6)...)
	stream = append(stream, big[MaxPayload:]...)
	c, _ := fuzzConn(stream)
	for _, want := range []struct {
		n         int
		seq, last byte
	}{{MaxPayload, 0, 1}, {MaxPayload + 10, 5, 6}} {
		p, seq, err := c.ReadPacket(nil, 64<<20)
		if err != nil {
			t.Fatal(err)
		}
		if len(p) != want.n || !bytes.Equal(p, big[:want.n]) {
			t.Errorf("got %d bytes, want %d", len(p), want.n)
		}
		if seq != want.seq || c.LastSeq != want.last {
			t.Errorf("got seq %d..%d, want %d..%d", seq, c.LastSeq, want.seq, want.last)
		}
		if cap(p) > 2*len(p) {
			t.Errorf("got buffer cap %d for %d bytes, want at most twice", cap(p), len(p))
		}
	}
	if _, _, err := c.ReadPacket(nil, 64<<20); err != io.EOF {
		t.Errorf("got %v at the end, want io.EOF", err)
	}
}

// TestReadPacketLimit refuses a continued packet over the limit at the
// header that passes it, having read nothing of that part.
func TestReadPacketLimit(t *testing.T) {
	var stream []byte
	stream = append(stream, 0xff, 0xff, 0xff, 0)
	stream = append(stream, make([]byte, MaxPayload)...)
	stream = append(stream, 3, 0, 0, 1, 'a', 'b', 'c')
	stream = append(stream, 1, 0, 0, 0, 0x0e)
	c, _ := fuzzConn(stream)
	p, _, err := c.ReadPacket(nil, 1<<20)
	if !errors.Is(err, ErrPacketTooLarge) {
		t.Fatalf("got %v, want ErrPacketTooLarge", err)
	}
	if cap(p) != 0 {
		t.Errorf("got buffer cap %d for a refused packet, want 0", cap(p))
	}
	if c.LastSeq != 0 {
		t.Errorf("got last seq %d, want 0: the error follows the part that passed the limit", c.LastSeq)
	}
}
