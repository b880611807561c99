//go:build linux

package mysqlproxy

import (
	"bytes"
	"errors"
	"testing"
)

func TestNextCommand(t *testing.T) {
	pkt := func(seq byte, payload []byte) []byte {
		n := len(payload)
		return append([]byte{byte(n), byte(n >> 8), byte(n >> 16), seq}, payload...)
	}
	one := pkt(0, []byte("\x03SELECT \"k\""))
	for _, c := range []struct {
		name        string
		in          []byte
		limit       int
		want        []byte
		first, last byte
		used        int
		err         error
	}{
		{"empty", nil, 1 << 30, nil, 0, 0, 0, nil},
		{"header only", one[:4], 1 << 30, nil, 0, 0, 0, nil},
		{"part of the payload", one[:8], 1 << 30, nil, 0, 0, 0, nil},
		{"whole", one, 1 << 30, one[4:], 0, 0, len(one), nil},
		{"whole, another behind", append(bytes.Clone(one), pkt(0, []byte{0x0e})...), 1 << 30, one[4:], 0, 0, len(one), nil},
		{"not sequence 0", pkt(3, []byte{0x0e}), 1 << 30, []byte{0x0e}, 3, 3, 5, nil},
		{"over the limit, before its payload", one[:4], 5, nil, 0, 0, 0, errPacketTooLarge},
	} {
		p, first, last, used, err := nextCommand(c.in, c.limit)
		if !bytes.Equal(p, c.want) || first != c.first || last != c.last || used != c.used || !errors.Is(err, c.err) {
			t.Errorf("%s: got %q %d %d %d %v, want %q %d %d %d %v", c.name, p, first, last, used, err, c.want, c.first, c.last, c.used, c.err)
		}
	}

	// A payload of maxPayload bytes goes on in the next wire packet.
	big := bytes.Repeat([]byte{'x'}, maxPayload)
	in := append(pkt(0, big), pkt(1, []byte("tail"))...)
	if p, _, _, used, _ := nextCommand(in[:len(in)-2], 1<<30); used != 0 || p != nil {
		t.Errorf("joined command not yet whole: got %d bytes used", used)
	}
	p, first, last, used, err := nextCommand(in, 1<<30)
	if err != nil || first != 0 || last != 1 || used != len(in) || len(p) != maxPayload+4 || string(p[maxPayload:]) != "tail" {
		t.Errorf("joined command: got %d bytes, seq %d-%d, used %d, %v", len(p), first, last, used, err)
	}
	if _, _, _, _, err := nextCommand(in, maxPayload+3); !errors.Is(err, errPacketTooLarge) {
		t.Errorf("joined command over the limit: got %v", err)
	}
}
