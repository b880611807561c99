package wire

import (
	"io"
	"sync"
	"sync/atomic"
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
	budget *Budget // nil: blocks are taken without a bound
	// starved says the tee went over because its budget had no room.
	starved bool
}

// Budget bounds the memory that tees sharing it hold at once. Its methods
// are safe for concurrent use.
type Budget struct {
	max  int64
	used atomic.Int64
}

// NewBudget returns a budget of max bytes.
func NewBudget(max int64) *Budget { return &Budget{max: max} }

// Give returns n bytes that Take reserved.
func (b *Budget) Give(n int64) { b.used.Add(-n) }

// Used returns the bytes the budget's tees, and the holders of what Take
// reserved, hold.
func (b *Budget) Used() int64 { return b.used.Load() }

// Take reserves n bytes, all or none, and reports whether it did.
func (b *Budget) Take(n int64) bool {
	for {
		u := b.used.Load()
		if u+n > b.max {
			return false
		}
		if b.used.CompareAndSwap(u, u+n) {
			return true
		}
	}
}

const teeBlock = 16 << 10

var teeBlocks = sync.Pool{New: func() any { return new([teeBlock]byte) }}

// NewTee returns a tee that keeps at most max bytes.
func NewTee(max int) *Tee { return &Tee{max: max} }

// NewTeeIn returns a tee that keeps at most max bytes, in blocks that b
// has room for.
func NewTeeIn(max int, b *Budget) *Tee { return &Tee{max: max, budget: b} }

// Starved reports whether the tee let go of what it kept because its
// budget had no room for more.
func (t *Tee) Starved() bool { return t != nil && t.starved }

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

// Write keeps b. Past the limit, or past what its budget has room for,
// the tee lets go of everything, and keeps nothing more.
func (t *Tee) Write(b []byte) {
	if !t.On() {
		return
	}
	if !t.TryWrite(b) {
		t.over, t.starved = true, t.n+len(b) <= t.max
		t.Release()
	}
}

// Starve makes the tee let go of what it keeps, and keep nothing more,
// as when its budget has no room.
func (t *Tee) Starve() {
	if t.On() {
		t.over, t.starved = true, true
		t.Release()
	}
}

// TryWrite keeps b and returns true, or, when b would take the tee past
// its limit or its budget, keeps nothing of it and returns false.
func (t *Tee) TryWrite(b []byte) bool {
	if t.n+len(b) > t.max {
		return false
	}
	if need := (t.n+len(b)+teeBlock-1)/teeBlock - len(t.blocks); need > 0 && t.budget != nil {
		if !t.budget.Take(int64(need) * teeBlock) {
			return false
		}
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
	return true
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

// Reset lets go of what the tee holds, and makes it keep at most max bytes,
// in blocks that b has room for (nil: without a bound).
func (t *Tee) Reset(max int, b *Budget) {
	t.Release()
	t.max, t.over, t.starved, t.budget = max, false, false, b
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
	if t.budget != nil {
		t.budget.used.Add(-int64(len(t.blocks)) * teeBlock)
	}
	for i, b := range t.blocks {
		teeBlocks.Put(b)
		t.blocks[i] = nil
	}
	t.blocks, t.n = t.blocks[:0], 0
}
