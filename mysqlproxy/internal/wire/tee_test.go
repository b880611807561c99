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
