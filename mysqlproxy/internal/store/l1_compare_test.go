package store

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/maypok86/otter/v2"
)

// The comparison that made L1 otter: the sharded LRU it was (lru), otter
// as it comes (otter-async: maintenance on goroutines of its own) and L1
// (otter with the maintenance on the writer's goroutine, so that its byte
// bound holds when a set returns), by hit ratio on traces of
// Zipf-distributed keys with and without periodic scans, by the most
// bytes each held against its bound, and by the cost of a hit under
// parallel readers:
//
//	go test -run XXX -bench 'L1HitRatio' -benchtime=1x ./mysqlproxy/internal/store
//	go test -run XXX -bench 'L1HitParallel' -count 5 ./mysqlproxy/internal/store

// cacheUnderTest is what the comparison needs of a byte-bounded cache.
type cacheUnderTest interface {
	get(key string) *Entry
	set(key string, e *Entry) bool
	held() int64 // bytes held now
}

// lruUnderTest is the sharded LRU L1 was before otter (l1lru_test.go).
type lruUnderTest struct{ *lruCache }

func (c lruUnderTest) held() int64 { return c.bytes.Load() } // reserved: at least what is held

// l1UnderTest is L1: otter with synchronous maintenance.
type l1UnderTest struct{ *l1 }

func (c l1UnderTest) held() int64 { return c.bytes.Load() }

// otterAsync is otter as it comes, with maintenance on goroutines of its
// own, weighted by L1's entry size. held counts the bytes of the entries
// it holds, as its deletion events report them.
type otterAsync struct {
	c     *otter.Cache[string, *Entry]
	bytes atomic.Int64
}

func newOtterAsync(limit int64) *otterAsync {
	o := &otterAsync{}
	o.c = otter.Must(&otter.Options[string, *Entry]{
		MaximumWeight: uint64(limit),
		Weigher:       func(k string, e *Entry) uint32 { return uint32(e.size(k)) },
		OnAtomicDeletion: func(ev otter.DeletionEvent[string, *Entry]) {
			o.bytes.Add(-ev.Value.size(ev.Key))
		},
	})
	return o
}

func (o *otterAsync) get(key string) *Entry {
	e, _ := o.c.GetIfPresent(key)
	return e
}

func (o *otterAsync) set(key string, e *Entry) bool {
	o.bytes.Add(e.size(key))
	o.c.Set(key, e)
	return true
}

func (o *otterAsync) held() int64 { return o.bytes.Load() }

// caches are the contenders, each built for a bound in bytes.
var caches = []struct {
	name string
	new  func(limit int64) cacheUnderTest
}{
	{"lru", func(limit int64) cacheUnderTest { return lruUnderTest{newLRU(limit)} }},
	{"otter-async", func(limit int64) cacheUnderTest { return newOtterAsync(limit) }},
	{"l1", func(limit int64) cacheUnderTest { return l1UnderTest{newL1(limit)} }},
}

// zipf draws ranks 0..n-1 with probability proportional to 1/(rank+1)^s,
// for any s > 0 (math/rand's Zipf needs s > 1).
type zipf struct {
	cdf []float64
	rng *rand.Rand
}

func newZipf(n int, s float64, seed uint64) *zipf {
	z := &zipf{cdf: make([]float64, n), rng: rand.New(rand.NewPCG(seed, 7))}
	sum := 0.0
	for i := range n {
		sum += 1 / math.Pow(float64(i+1), s)
		z.cdf[i] = sum
	}
	for i := range z.cdf {
		z.cdf[i] /= sum
	}
	return z
}

func (z *zipf) next() int {
	u := z.rng.Float64()
	lo, hi := 0, len(z.cdf)-1
	for lo < hi {
		mid := (lo + hi) / 2
		if z.cdf[mid] < u {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// traceSpec describes a trace: Zipf reads of keys with the given skew,
// and every scanEvery reads a scan of scanLen keys read once and never
// again (a report, a batch job, a crawler).
type traceSpec struct {
	name      string
	keys      int
	skew      float64
	reads     int
	scanEvery int
	scanLen   int
}

// sizes are the entry sizes of a run, by key: one size, or a mix from
// small rows to a result near memcached's item limit.
type sizes struct {
	name string
	of   func(key int) int64
}

var sizeMixes = []sizes{
	{"1KB", func(int) int64 { return 1 << 10 }},
	{"mixed", func(key int) int64 {
		// Fixed per key: 80% 512 B, 15% 8 KB, 4% 64 KB, 1% 512 KB.
		switch h := uint64(key) * 0x9E3779B97F4A7C15 >> 54; {
		case h < 819:
			return 512
		case h < 973:
			return 8 << 10
		case h < 1014:
			return 64 << 10
		default:
			return 512 << 10
		}
	}},
}

// traceKey names key k of a trace; scan keys have a space of their own.
func traceKey(k int, scan bool) string {
	if scan {
		return "q:s" + strconv.Itoa(k)
	}
	return "q:" + strconv.Itoa(k)
}

// runTrace replays spec on c, filling each miss, and returns the hit
// ratio over the Zipf reads (scans' reads are misses by design and not
// counted) and the most bytes c held after any set.
func runTrace(c cacheUnderTest, spec traceSpec, sz sizes) (hitRatio float64, peak int64) {
	z := newZipf(spec.keys, spec.skew, 11)
	entries := make([]*Entry, spec.keys)
	names := make([]string, spec.keys)
	for k := range entries {
		names[k] = traceKey(k, false)
		entries[k] = sized(names[k], sz.of(k))
	}
	hits, reads, scanned := 0, 0, 0
	for i := range spec.reads {
		if spec.scanEvery > 0 && i > 0 && i%spec.scanEvery == 0 {
			for j := range spec.scanLen {
				k := traceKey(scanned+j, true)
				if c.get(k) == nil {
					c.set(k, sized(k, sz.of(scanned+j)))
					peak = max(peak, c.held())
				}
			}
			scanned += spec.scanLen
		}
		k := z.next()
		reads++
		if c.get(names[k]) != nil {
			hits++
			continue
		}
		c.set(names[k], entries[k])
		peak = max(peak, c.held())
	}
	return float64(hits) / float64(reads), peak
}

// traces: 100,000 keys read 1,000,000 times with the skew of a web
// workload (0.9) or a steeper one (1.1), with and without a scan of
// 20,000 keys every 50,000 reads.
var traces = []traceSpec{
	{"zipf0.9", 100_000, 0.9, 1_000_000, 0, 0},
	{"zipf0.9+scans", 100_000, 0.9, 1_000_000, 50_000, 20_000},
	{"zipf1.1", 100_000, 1.1, 1_000_000, 0, 0},
	{"zipf1.1+scans", 100_000, 1.1, 1_000_000, 50_000, 20_000},
}

// traceLimit is the bound of a trace's cache: a tenth of the bytes of its
// keys, the share of a working set an in-process cache holds.
func traceLimit(spec traceSpec, sz sizes) int64 {
	var total int64
	for k := range spec.keys {
		total += sized(traceKey(k, false), sz.of(k)).size(traceKey(k, false))
	}
	return total / 10
}

// TestL1HitRatioOverLRU is the comparison's verdict, on shorter traces: L1
// hits more often than the LRU did, by the most where scans come through,
// and holds no more than its bound after any set.
func TestL1HitRatioOverLRU(t *testing.T) {
	for _, spec := range []traceSpec{
		{"zipf0.9", 20_000, 0.9, 200_000, 0, 0},
		{"zipf0.9+scans", 20_000, 0.9, 200_000, 10_000, 4_000},
	} {
		for _, sz := range sizeMixes {
			limit := traceLimit(spec, sz)
			lru, _ := runTrace(lruUnderTest{newLRU(limit)}, spec, sz)
			got, peak := runTrace(l1UnderTest{newL1(limit)}, spec, sz)
			t.Logf("%s/%s: lru %.2f%%, l1 %.2f%%", spec.name, sz.name, 100*lru, 100*got)
			if got < lru+0.02 {
				t.Errorf("%s/%s: L1 hit %.2f%% of reads, the LRU %.2f%%; want L1 ahead by 2 points", spec.name, sz.name, 100*got, 100*lru)
			}
			if peak > limit {
				t.Errorf("%s/%s: L1 held %d bytes after a set, over its bound of %d", spec.name, sz.name, peak, limit)
			}
		}
	}
}

// BenchmarkL1HitRatio replays each trace once per iteration (run with
// -benchtime=1x) and reports the hit ratio in percent and the most bytes
// held as a percentage of the bound.
func BenchmarkL1HitRatio(b *testing.B) {
	for _, spec := range traces {
		for _, sz := range sizeMixes {
			limit := traceLimit(spec, sz)
			for _, cc := range caches {
				b.Run(fmt.Sprintf("%s/%s/%s", spec.name, sz.name, cc.name), func(b *testing.B) {
					var ratio float64
					var peak int64
					for range b.N {
						ratio, peak = runTrace(cc.new(limit), spec, sz)
					}
					b.ReportMetric(100*ratio, "hit-%")
					b.ReportMetric(100*float64(peak)/float64(limit), "peak-%-of-bound")
				})
			}
		}
	}
}

// BenchmarkL1HitParallel measures the cost of a hit with every CPU
// reading: 10,000 entries of 1 KB, all held, read with Zipf(0.9) skew.
func BenchmarkL1HitParallel(b *testing.B) {
	const n = 10_000
	names := make([]string, n)
	for k := range names {
		names[k] = traceKey(k, false)
	}
	z := newZipf(n, 0.9, 13)
	order := make([]int, 1<<16)
	for i := range order {
		order[i] = z.next()
	}
	for _, cc := range caches {
		b.Run(cc.name, func(b *testing.B) {
			c := cc.new(4 * n << 10)
			for _, name := range names {
				c.set(name, sized(name, 1<<10))
			}
			for _, name := range names {
				if c.get(name) == nil {
					b.Fatalf("%s: %s was not held", cc.name, name)
				}
			}
			var start atomic.Uint32
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				i := int(start.Add(7919))
				for pb.Next() {
					if c.get(names[order[i&(len(order)-1)]]) == nil {
						b.Error("miss")
						return
					}
					i++
				}
			})
		})
	}
}
