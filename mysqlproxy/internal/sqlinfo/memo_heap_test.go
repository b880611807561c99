package sqlinfo

import (
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// bigSelects returns n distinct SELECTs of about size bytes each, in
// three shapes that load different memos: a point lookup of thousands of
// keys (its analysis holds every key), a long string literal (the text
// is all that differs), and a long list of distinct columns (each text
// its own digest).
func bigSelects(n, size int) []string {
	qs := make([]string, n)
	for i := range qs {
		var b strings.Builder
		switch i % 3 {
		case 0:
			b.WriteString("SELECT * FROM t WHERE id IN (")
			for j := 0; b.Len() < size-20; j++ {
				if j > 0 {
					b.WriteString(", ")
				}
				b.WriteString(strconv.Itoa(i*100000 + j))
			}
			b.WriteString(")")
		case 1:
			b.WriteString("SELECT c FROM t WHERE c = '")
			b.WriteString(strconv.Itoa(i))
			b.WriteString(strings.Repeat("x", size-40))
			b.WriteString("'")
		case 2:
			b.WriteString("SELECT ")
			for j := 0; b.Len() < size-30; j++ {
				if j > 0 {
					b.WriteString(", ")
				}
				b.WriteString("c" + strconv.Itoa(i) + "_" + strconv.Itoa(j))
			}
			b.WriteString(" FROM t")
		}
		qs[i] = b.String()
	}
	return qs
}

// liveHeap returns the bytes of live heap after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkMemoLiveHeap analyses 4,000 distinct 60 KB SELECTs with the
// proxy's options and reports the live heap the analyzer keeps, in MiB
// (run with -benchtime=1x): for each shape of bigSelects alone, and for
// the three mixed.
func BenchmarkMemoLiveHeap(b *testing.B) {
	all := bigSelects(3*4000, 60<<10)
	for shape, name := range []string{"in-list", "string", "columns", "mixed"} {
		qs := all[:4000]
		if shape < 3 {
			qs = nil
			for i := shape; i < len(all); i += 3 {
				qs = append(qs, all[i])
			}
		}
		b.Run(name, func(b *testing.B) {
			for range b.N {
				before := liveHeap()
				a := NewAnalyzer(Options{ExactCap: 100000})
				for _, q := range qs {
					a.Analyze(q)
				}
				after := liveHeap()
				runtime.KeepAlive(a)
				b.ReportMetric(float64(after-before)/(1<<20), "live-MiB")
			}
		})
	}
}
