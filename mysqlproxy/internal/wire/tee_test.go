package wire

import (
	"bytes"
	"testing"
)

func TestTee(t *testing.T) {
	var nilTee *Tee
	nilTee.Write([]byte("x"))
	if nilTee.On() || nilTee.Len() != 0 || len(nilTee.AppendTo(nil)) != 0 {
		t.Fatal("a nil tee keeps something")
	}
	nilTee.Release()

	// Writes that straddle blocks come back whole and in order.
	var want []byte
	tee := NewTee(3*teeBlock + 10)
	for i := 0; len(want) < 3*teeBlock; i++ {
		b := bytes.Repeat([]byte{byte(i)}, 1+i*977%(teeBlock+3))
		b = b[:min(len(b), 3*teeBlock-len(want))]
		tee.Write(b)
		want = append(want, b...)
	}
	if tee.Len() != len(want) || !tee.On() {
		t.Fatalf("Len %d On %v, want %d and on", tee.Len(), tee.On(), len(want))
	}
	if got := tee.AppendTo([]byte("head")); !bytes.Equal(got, append([]byte("head"), want...)) {
		t.Fatal("AppendTo does not give back what was written")
	}
	var buf bytes.Buffer
	if n, err := tee.WriteTo(&buf); err != nil || n != int64(len(want)) || !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("WriteTo: %d bytes, %v; want the %d written", n, err, len(want))
	}
	// Exactly at the limit it still keeps; one byte past, it lets go.
	tee.Write(make([]byte, 10))
	if !tee.On() || tee.Len() != 3*teeBlock+10 {
		t.Fatalf("at the limit: On %v Len %d", tee.On(), tee.Len())
	}
	tee.Write([]byte{1})
	if tee.On() || tee.Len() != 0 || len(tee.blocks) != 0 {
		t.Fatalf("past the limit: On %v Len %d blocks %d, want off and empty", tee.On(), tee.Len(), len(tee.blocks))
	}
	tee.Write([]byte("more"))
	if tee.Len() != 0 {
		t.Fatal("a tee past its limit keeps writing")
	}

	small := NewTee(100)
	small.Write([]byte("abc"))
	small.Release()
	if small.Len() != 0 || len(small.AppendTo(nil)) != 0 {
		t.Fatal("Release leaves bytes behind")
	}
}

func BenchmarkTee20MB(b *testing.B) {
	chunk := make([]byte, 64<<10)
	b.SetBytes(20 << 20)
	for i := 0; i < b.N; i++ {
		tee := NewTee(64 << 20)
		for n := 0; n < 20<<20; n += len(chunk) {
			tee.Write(chunk)
		}
		out := tee.AppendTo(make([]byte, 0, tee.Len()))
		tee.Release()
		_ = out
	}
}

// TestTeeBudget: tees sharing a budget hold no more than it, in blocks;
// TryWrite refuses what does not fit and keeps what it had; Write and
// Starve let go of everything; every block comes back to the budget.
func TestTeeBudget(t *testing.T) {
	b := NewBudget(3 * teeBlock)
	one, two := NewTeeIn(10*teeBlock, b), NewTeeIn(10*teeBlock, b)
	if !one.TryWrite(make([]byte, teeBlock+1)) || b.Used() != 2*teeBlock {
		t.Fatalf("after %d bytes: used %d, want two blocks", teeBlock+1, b.Used())
	}
	if !one.TryWrite(make([]byte, teeBlock-1)) || b.Used() != 2*teeBlock {
		t.Fatalf("a write that fits the last block took more: used %d", b.Used())
	}
	if two.TryWrite(make([]byte, 2*teeBlock)) || two.Len() != 0 || b.Used() != 2*teeBlock {
		t.Fatalf("a write past the budget: kept %d, used %d", two.Len(), b.Used())
	}
	if !two.TryWrite(make([]byte, 10)) || b.Used() != 3*teeBlock {
		t.Fatalf("a write within the budget: used %d", b.Used())
	}
	// one is full: a Write past the budget starves it.
	one.Write(make([]byte, 1))
	if one.On() || !one.Starved() || one.Len() != 0 || b.Used() != teeBlock {
		t.Fatalf("starved tee: on %v starved %v len %d; used %d, want one block", one.On(), one.Starved(), one.Len(), b.Used())
	}
	// A tee over its own limit is not starved.
	small := NewTeeIn(10, b)
	small.Write(make([]byte, 11))
	if small.On() || small.Starved() {
		t.Fatalf("a tee over its limit: on %v starved %v", small.On(), small.Starved())
	}
	two.Starve()
	if two.On() || !two.Starved() || b.Used() != 0 {
		t.Fatalf("Starve: on %v starved %v, used %d", two.On(), two.Starved(), b.Used())
	}
	// Reset takes the tee back into use, with another budget.
	other := NewBudget(teeBlock)
	two.Reset(teeBlock, other)
	if !two.TryWrite(make([]byte, teeBlock)) || two.TryWrite([]byte{1}) || other.Used() != teeBlock || b.Used() != 0 {
		t.Fatalf("after Reset: used %d and %d", other.Used(), b.Used())
	}
	two.Release()
	if other.Used() != 0 {
		t.Fatalf("after Release: used %d", other.Used())
	}
	if !b.Take(3*teeBlock) || b.Take(1) {
		t.Fatal("Take: the whole budget, then nothing more")
	}
	b.Give(3 * teeBlock)
	if b.Used() != 0 {
		t.Fatalf("after Give: used %d", b.Used())
	}
}
