package store

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"hash/crc32"
	"io"
	"math"
	"time"
)

// Entry is one cached result: the raw response bytes plus what a hit must
// verify. An Entry is immutable once passed to Put or returned by Lookup;
// callers share it without copying.
type Entry struct {
	// Check is the scope and statement text a hit verifies byte for byte,
	// so that a hash collision never serves a wrong answer.
	Check []byte
	// Payload is the raw response bytes.
	Payload []byte
	// Deps are the dependency names ("db.table", "db.*", "*", later
	// "db.table#pk").
	Deps []string
	// Gens are the generations of Deps, in the same order, as read before
	// the query ran: memcached's, or the local ones in L1-only mode.
	Gens []uint64
	// Local are this process's own generations of Deps, read before the
	// query ran, with memcached configured; an L1 entry without them is
	// checked against memcached only. They are not stored in memcached.
	Local []uint64
	// Since, when set, is when the snapshot the entry was read from may
	// have been taken (a transaction's start): Put refuses the entry if
	// any of its deps changed since then. It is not stored.
	Since time.Time
	// Expires is the hard ttl; zero means none.
	Expires time.Time
	// Soft is the soft ttl; zero means none. Past it a hit is Stale.
	Soft time.Time
}

// size is the entry's L1 cost in bytes, counting the slices' contents and
// a fixed estimate for the headers, the map slot and the list links.
func (e *Entry) size(key string) int64 {
	n := int64(len(key) + len(e.Check) + len(e.Payload) + 8*len(e.Gens) + 8*len(e.Local))
	for _, d := range e.Deps {
		n += int64(len(d)) + 16
	}
	return n + entryOverhead
}

// entryOverhead approximates the Entry struct (2 slices, 2 string slices,
// 2 times), its L1 node and map slot.
const entryOverhead = 256

// Wire format of a memcached value. A plain entry:
//
//	magic version flags
//	varint expires (unix ns, 0 = none) varint soft
//	uvarint ndeps, ndeps * (uvarint len, name, uvarint gen)
//	uvarint len(check), check
//	payload (raw, or flate when flagCompressed)
//	4-byte CRC-32C (Castagnoli) of all the bytes before it
//
// The checksum is what makes a corrupt value a miss: without it a flipped
// byte in the payload decodes to other rows, which a hit would serve.
// Version 1 values had none; they are misses now.
//
// A chunked entry's header item:
//
//	magic version flagChunked uvarint nchunks uvarint total
//	8-byte xxhash of the whole value, 8-byte nonce
//
// The header needs no checksum of its own: any change to it names other
// chunks or another hash, and the assembled value fails the xxhash.
const (
	wireMagic   = 0xC7
	wireVersion = 2

	flagCompressed = 1 << 0
	flagChunked    = 1 << 1
)

// crcLen is the length of the checksum that ends a plain value.
const crcLen = 4

// castagnoli is CRC-32C, which amd64 and arm64 compute in hardware.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// maxDeps bounds the dependency count accepted when decoding, so that a
// corrupt count cannot make the decoder allocate wildly.
const maxDeps = 1 << 16

func timeNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func nanosTime(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// encodeEntry serializes e. Payloads of at least compressMin bytes
// (compressMin > 0) are flate-compressed when that makes them smaller.
func encodeEntry(e *Entry, compressMin int) []byte {
	n := 3 + 2*binary.MaxVarintLen64 + binary.MaxVarintLen64 + binary.MaxVarintLen64 + len(e.Check) + len(e.Payload) + crcLen
	for _, d := range e.Deps {
		n += 2*binary.MaxVarintLen64 + len(d)
	}
	b := make([]byte, 3, n)
	b[0], b[1] = wireMagic, wireVersion
	b = binary.AppendVarint(b, timeNanos(e.Expires))
	b = binary.AppendVarint(b, timeNanos(e.Soft))
	b = binary.AppendUvarint(b, uint64(len(e.Deps)))
	for i, d := range e.Deps {
		b = binary.AppendUvarint(b, uint64(len(d)))
		b = append(b, d...)
		var g uint64
		if i < len(e.Gens) {
			g = e.Gens[i]
		}
		b = binary.AppendUvarint(b, g)
	}
	b = binary.AppendUvarint(b, uint64(len(e.Check)))
	b = append(b, e.Check...)
	if compressMin > 0 && len(e.Payload) >= compressMin {
		var buf bytes.Buffer
		buf.Write(b)
		w, _ := flate.NewWriter(&buf, flate.BestSpeed)
		w.Write(e.Payload)
		w.Close()
		if buf.Len() < len(b)+len(e.Payload) {
			out := buf.Bytes()
			out[2] |= flagCompressed
			return appendCRC(out)
		}
	}
	return appendCRC(append(b, e.Payload...))
}

func appendCRC(b []byte) []byte {
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// reader is a bounds-checked cursor over an encoded value.
type reader struct {
	b   []byte
	bad bool
}

func (r *reader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.bad = true
		r.b = nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.bad = true
		r.b = nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) bytes(n uint64) []byte {
	if r.bad || n > uint64(len(r.b)) {
		r.bad = true
		r.b = nil
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

// decodeEntry parses a plain (not chunked) value. Any inconsistency,
// a checksum that does not match first, is errCorrupt: a corrupt value is
// a miss, never a panic and never other rows. maxPayload bounds the
// decompressed size.
func decodeEntry(b []byte, maxPayload int) (*Entry, error) {
	if len(b) < 3+crcLen {
		return nil, errCorrupt
	}
	body := b[:len(b)-crcLen]
	if crc32.Checksum(body, castagnoli) != binary.BigEndian.Uint32(b[len(body):]) {
		return nil, errCorrupt
	}
	return parseEntry(body, maxPayload)
}

// parseEntry parses a plain value whose checksum has been checked and
// cut off.
func parseEntry(b []byte, maxPayload int) (*Entry, error) {
	if len(b) < 3 || b[0] != wireMagic || b[1] != wireVersion || b[2]&^flagCompressed != 0 {
		return nil, errCorrupt
	}
	flags := b[2]
	r := reader{b: b[3:]}
	e := &Entry{}
	e.Expires = nanosTime(r.varint())
	e.Soft = nanosTime(r.varint())
	nd := r.uvarint()
	if r.bad || nd > maxDeps || nd > uint64(len(r.b)) {
		return nil, errCorrupt
	}
	if nd > 0 {
		e.Deps = make([]string, nd)
		e.Gens = make([]uint64, nd)
	}
	for i := range e.Deps {
		e.Deps[i] = string(r.bytes(r.uvarint()))
		e.Gens[i] = r.uvarint()
	}
	check := r.bytes(r.uvarint())
	if r.bad {
		return nil, errCorrupt
	}
	e.Check = check
	if flags&flagCompressed == 0 {
		e.Payload = r.b
		return e, nil
	}
	fr := flate.NewReader(bytes.NewReader(r.b))
	defer fr.Close()
	p, err := io.ReadAll(io.LimitReader(fr, int64(maxPayload)+1))
	if err != nil || len(p) > maxPayload {
		return nil, errCorrupt
	}
	e.Payload = p
	return e, nil
}

// chunkHeader describes a value stored as several items.
type chunkHeader struct {
	n     int
	total int
	sum   uint64
	nonce uint64
}

func encodeChunkHeader(h chunkHeader) []byte {
	b := []byte{wireMagic, wireVersion, flagChunked}
	b = binary.AppendUvarint(b, uint64(h.n))
	b = binary.AppendUvarint(b, uint64(h.total))
	b = binary.BigEndian.AppendUint64(b, h.sum)
	return binary.BigEndian.AppendUint64(b, h.nonce)
}

// maxChunks bounds the chunk count a header may claim.
const maxChunks = 4096

func decodeChunkHeader(b []byte) (chunkHeader, bool) {
	if len(b) < 3 || b[0] != wireMagic || b[1] != wireVersion || b[2] != flagChunked {
		return chunkHeader{}, false
	}
	r := reader{b: b[3:]}
	n, total := r.uvarint(), r.uvarint()
	if r.bad || len(r.b) != 16 || n == 0 || n > maxChunks || total > math.MaxInt32 {
		return chunkHeader{}, false
	}
	return chunkHeader{
		n:     int(n),
		total: int(total),
		sum:   binary.BigEndian.Uint64(r.b),
		nonce: binary.BigEndian.Uint64(r.b[8:]),
	}, true
}

func isChunkHeader(b []byte) bool {
	return len(b) >= 3 && b[0] == wireMagic && b[1] == wireVersion && b[2] == flagChunked
}
