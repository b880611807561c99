package wire

import (
	"io"
	"sync"
)

// Tee keeps a copy of the bytes of a response as they are relayed, up to
// a limit, in blocks taken from a pool. A response held in one slice
// grown by append would be copied over and over as it grew, into memory
// the process had not touched yet: a read of tens of megabytes spent more
// time there than on the server. The blocks are copied once, into the
// entry that stores the response, and go back to the pool.
//
// A nil *Tee keeps nothing; its methods may be called all the same.
type Tee struct {
	blocks []*[teeBlock]byte
	n      int
	max    int
	over   bool
}

const teeBlock = 16 << 10

var teeBlocks = sync.Pool{New: func() any { return new([teeBlock]byte) }}

// NewTee returns a tee that keeps at most max bytes.
func NewTee(max int) *Tee { return &Tee{max: max} }

// On reports whether the tee is keeping the bytes: it is not nil, and
// has not gone over its limit.
func (t *Tee) On() bool { return t != nil && !t.over }

// Len returns the number of bytes kept.
func (t *Tee) Len() int {
	if t == nil {
		return 0
	}
	return t.n
}

// Write keeps b. Past the limit the tee lets go of everything, and keeps
// nothing more.
func (t *Tee) Write(b []byte) {
	if !t.On() {
		return
	}
	if t.n+len(b) > t.max {
		t.over = true
		t.Release()
		return
	}
	for len(b) > 0 {
		off := t.n % teeBlock
		if off == 0 && t.n/teeBlock == len(t.blocks) {
			t.blocks = append(t.blocks, teeBlocks.Get().(*[teeBlock]byte))
		}
		k := copy(t.blocks[t.n/teeBlock][off:], b)
		t.n += k
		b = b[k:]
	}
}

// AppendTo appends the bytes kept to dst.
func (t *Tee) AppendTo(dst []byte) []byte {
	if t == nil {
		return dst
	}
	for i, b := range t.blocks {
		dst = append(dst, b[:min(teeBlock, t.n-i*teeBlock)]...)
	}
	return dst
}

// Reset lets go of what the tee holds, and makes it keep at most max bytes.
func (t *Tee) Reset(max int) {
	t.Release()
	t.max, t.over = max, false
}

// WriteTo writes the bytes kept to w.
func (t *Tee) WriteTo(w io.Writer) (int64, error) {
	var n int64
	for i, b := range t.blocks {
		k, err := w.Write(b[:min(teeBlock, t.n-i*teeBlock)])
		n += int64(k)
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// Release gives the blocks back to the pool; the tee then holds nothing.
func (t *Tee) Release() {
	if t == nil {
		return
	}
	for i, b := range t.blocks {
		teeBlocks.Put(b)
		t.blocks[i] = nil
	}
	t.blocks, t.n = t.blocks[:0], 0
}
