package store

import (
	"bytes"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
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

// corruptSamples are real encoded entries: plain, compressed, and one
// with no deps and an empty check.
func corruptSamples() map[string][]byte {
	exp := time.Unix(1800000000, 123)
	rows := []byte("\x01\x00\x00\x01\x01\x1b\x00\x00\x02\x03def\x02db\x01t\x01t\x02id\x02id\x0c?\x00\x0b\x00\x00\x00\x03\x03P\x00\x00\x00\x02\x00\x00\x03\x0142\x05\x00\x00\x04\xfe\x00\x00\x02\x00")
	return map[string][]byte{
		"plain": encodeEntry(&Entry{Check: []byte("app|SELECT * FROM t WHERE id=42"), Payload: rows,
			Deps: []string{"db.t", "db.*", "*"}, Gens: []uint64{7, 1 << 40, 3}, Expires: exp, Soft: exp.Add(-time.Minute)}, 0),
		"compressed": encodeEntry(&Entry{Check: []byte("app|SELECT * FROM t"), Payload: bytes.Repeat(rows, 40),
			Deps: []string{"db.t"}, Gens: []uint64{1}, Expires: exp}, 64),
		"bare": encodeEntry(&Entry{Check: []byte{}, Payload: []byte("r")}, 0),
	}
}

// sameEntry reports whether two decoded entries would answer alike.
func sameEntry(a, b *Entry) bool {
	return bytes.Equal(a.Check, b.Check) && bytes.Equal(a.Payload, b.Payload) &&
		reflect.DeepEqual(a.Deps, b.Deps) && reflect.DeepEqual(a.Gens, b.Gens) &&
		a.Expires.Equal(b.Expires) && a.Soft.Equal(b.Soft)
}

// TestCorruptEntryIsMiss changes every byte of real encoded entries to
// every other value, and cuts them at every length: each is a miss (or,
// were the change meaningless, the same entry), never other rows.
func TestCorruptEntryIsMiss(t *testing.T) {
	for name, val := range corruptSamples() {
		t.Run(name, func(t *testing.T) {
			want, err := decodeEntry(val, maxValue)
			if err != nil {
				t.Fatal(err)
			}
			if name == "compressed" && val[2]&flagCompressed == 0 {
				t.Fatal("sample is not compressed")
			}
			b := make([]byte, len(val))
			for i := range val {
				for x := 1; x < 256; x++ {
					copy(b, val)
					b[i] ^= byte(x)
					if got, err := decodeEntry(b, maxValue); err == nil && !sameEntry(got, want) {
						t.Fatalf("byte %d xor %#x: decoded a different entry %+v", i, x, got)
					}
				}
			}
			for n := range len(val) {
				if got, err := decodeEntry(val[:n], maxValue); err == nil && !sameEntry(got, want) {
					t.Fatalf("cut at %d: decoded a different entry %+v", n, got)
				}
			}
		})
	}
}

// TestOldEntryVersionIsMiss reads a version 1 value, which had no
// checksum, as a miss.
func TestOldEntryVersionIsMiss(t *testing.T) {
	v2 := encodeEntry(&Entry{Check: []byte("c"), Payload: []byte("rows"), Deps: []string{"db.t"}, Gens: []uint64{1}}, 0)
	v1 := append([]byte(nil), v2[:len(v2)-crcLen]...)
	v1[1] = 1
	if e, err := decodeEntry(v1, maxValue); err == nil {
		t.Errorf("got %+v from a version 1 value, want a miss", e)
	}
	h := encodeChunkHeader(chunkHeader{n: 2, total: 10, sum: 1, nonce: 2})
	h[1] = 1
	if isChunkHeader(h) {
		t.Error("a version 1 chunk header is still read as one")
	}
}

// FuzzDecodeEntry checks that garbage never panics: a corrupt value is a
// miss. parseEntry is fuzzed too, since few mutations get past the
// checksum in front of it.
func FuzzDecodeEntry(f *testing.F) {
	f.Add(encodeEntry(&Entry{Check: []byte("c"), Payload: []byte("p"), Deps: []string{"a"}, Gens: []uint64{1}}, 0))
	f.Add(encodeEntry(&Entry{Check: []byte("c"), Payload: bytes.Repeat([]byte("p"), 500), Deps: []string{"a"}, Gens: []uint64{1}}, 1))
	f.Add(encodeChunkHeader(chunkHeader{n: 2, total: 10, sum: 1, nonce: 2}))
	f.Add([]byte{wireMagic, wireVersion, 0, 0xff, 0xff, 0xff})
	for _, v := range corruptSamples() {
		f.Add(v)
		f.Add(v[:len(v)-crcLen])
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if e, err := decodeEntry(b, 1<<20); err == nil && len(e.Gens) != len(e.Deps) {
			t.Errorf("decoded %d deps with %d gens", len(e.Deps), len(e.Gens))
		}
		if e, err := parseEntry(b, 1<<20); err == nil {
			if len(e.Gens) != len(e.Deps) {
				t.Errorf("parsed %d deps with %d gens", len(e.Deps), len(e.Gens))
			}
			if len(e.Payload) > 1<<20 && b[2]&flagCompressed != 0 {
				t.Errorf("inflated %d bytes, limit %d", len(e.Payload), 1<<20)
			}
		}
		decodeChunkHeader(b)
	})
}

// FuzzCorruptEntry damages a real encoded entry where and as the fuzzer
// says: the result is a miss or the same entry, never other rows.
func FuzzCorruptEntry(f *testing.F) {
	samples := corruptSamples()
	names := []string{"plain", "compressed", "bare"}
	f.Add(uint8(0), uint16(20), []byte{0x01})
	f.Add(uint8(1), uint16(40), []byte{0xff, 0x00, 0x10})
	f.Add(uint8(0), uint16(90), []byte{0x00, 0x00, 0x00, 0x80})
	f.Fuzz(func(t *testing.T, which uint8, at uint16, mask []byte) {
		val := samples[names[int(which)%len(names)]]
		want, err := decodeEntry(val, maxValue)
		if err != nil {
			t.Fatal(err)
		}
		b := append([]byte(nil), val...)
		for i, m := range mask {
			b[(int(at)+i)%len(b)] ^= m
		}
		if got, err := decodeEntry(b, maxValue); err == nil && !sameEntry(got, want) {
			t.Fatalf("decoded a different entry %+v", got)
		}
	})
}

// TestAssembleChunksSizedByWhatCame: a chunk header another program wrote
// under an entry's key may claim up to a gigabyte. Its chunks are
// missing or small, and it is a miss that allocates no more than they
// hold; before, each lookup of it allocated what the header claimed.
func TestAssembleChunksSizedByWhatCame(t *testing.T) {
	value := make([]byte, 4000)
	for i := range value {
		value[i] = byte(i % 251)
	}
	h := chunkHeader{n: 2, total: len(value), sum: xxhash.Sum64(value), nonce: 9}
	if got := assembleChunks(h, [][]byte{value[:1500], value[1500:]}); !bytes.Equal(got, value) {
		t.Fatalf("the chunks of a stored value assembled to %d bytes, want %d", len(got), len(value))
	}
	for _, c := range []struct {
		name string
		vals [][]byte
		h    chunkHeader
	}{
		{"a chunk missing", [][]byte{value[:1500], nil}, h},
		{"another value's chunks", [][]byte{value[:1500], value[:2500]}, h},
		{"a gigabyte claimed", [][]byte{value}, chunkHeader{n: 1, total: 1 << 30, sum: h.sum}},
		{"a gigabyte claimed, a chunk missing", [][]byte{nil, value}, chunkHeader{n: 2, total: 1 << 30, sum: h.sum}},
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		got := assembleChunks(c.h, c.vals)
		runtime.ReadMemStats(&after)
		if got != nil {
			t.Errorf("%s: assembled %d bytes, want a miss", c.name, len(got))
		}
		if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
			t.Errorf("%s: allocated %d bytes for %d that came", c.name, n, len(value))
		}
	}
}
