package store

import (
	"bytes"
	"reflect"
	"testing"
	"time"
)

func TestEntryCodecRoundTrip(t *testing.T) {
	exp := time.Unix(1800000000, 123)
	tests := []struct {
		name        string
		e           Entry
		compressMin int
	}{
		{"empty", Entry{Check: []byte{}, Payload: []byte{}}, 0},
		{"plain", Entry{Check: []byte("u|SELECT 1"), Payload: []byte("rows"), Deps: []string{"*", "db.*", "db.t"}, Gens: []uint64{1, 1 << 60, 3}, Expires: exp, Soft: exp.Add(-time.Second)}, 0},
		{"compressed", Entry{Check: []byte("c"), Payload: bytes.Repeat([]byte("abc"), 10000), Deps: []string{"x"}, Gens: []uint64{7}, Expires: exp}, 100},
		{"incompressible stays raw", Entry{Check: []byte("c"), Payload: []byte{1, 2, 3, 4, 5, 6, 7, 8, 9}}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := encodeEntry(&tt.e, tt.compressMin)
			got, err := decodeEntry(b, maxValue)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got.Deps, tt.e.Deps) || !reflect.DeepEqual(got.Gens, tt.e.Gens) ||
				!bytes.Equal(got.Check, tt.e.Check) || !bytes.Equal(got.Payload, tt.e.Payload) ||
				!got.Expires.Equal(tt.e.Expires) || !got.Soft.Equal(tt.e.Soft) {
				t.Errorf("got %+v, want %+v", got, tt.e)
			}
		})
	}
}

func TestChunkHeaderRoundTrip(t *testing.T) {
	h := chunkHeader{n: 4, total: 3 << 20, sum: 0xdeadbeef, nonce: 42}
	got, ok := decodeChunkHeader(encodeChunkHeader(h))
	if !ok || got != h {
		t.Errorf("got (%+v, %v), want (%+v, true)", got, ok, h)
	}
}

// FuzzDecodeEntry checks that garbage never panics: a corrupt value is a
// miss.
func FuzzDecodeEntry(f *testing.F) {
	f.Add(encodeEntry(&Entry{Check: []byte("c"), Payload: []byte("p"), Deps: []string{"a"}, Gens: []uint64{1}}, 0))
	f.Add(encodeEntry(&Entry{Check: []byte("c"), Payload: bytes.Repeat([]byte("p"), 500), Deps: []string{"a"}, Gens: []uint64{1}}, 1))
	f.Add(encodeChunkHeader(chunkHeader{n: 2, total: 10, sum: 1, nonce: 2}))
	f.Add([]byte{wireMagic, wireVersion, 0, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		if e, err := decodeEntry(b, 1<<20); err == nil && len(e.Gens) != len(e.Deps) {
			t.Errorf("decoded %d deps with %d gens", len(e.Deps), len(e.Gens))
		}
		decodeChunkHeader(b)
	})
}
