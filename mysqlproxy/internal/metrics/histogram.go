package metrics

import (
	"math"
	"sort"
	"sync/atomic"
)

// DefaultLatencyBuckets returns upper bounds in seconds suited to a proxy
// whose cache hits take microseconds and whose backend queries take
// milliseconds. It returns a new slice each time, so callers may change it.
func DefaultLatencyBuckets() []float64 {
	return []float64{
		0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
	}
}

// Histogram counts observations in buckets by upper bound. Observe takes no
// lock, so it is safe on the hot path.
type Histogram struct {
	upper []float64 // sorted upper bounds, without +Inf
	// counts[i] counts observations in (upper[i-1], upper[i]]; the last slot
	// counts those above every bound. They are summed into the cumulative
	// le buckets only when written, so Observe touches one counter.
	counts  []atomic.Uint64
	sumBits atomic.Uint64 // math.Float64bits of the sum of observations
}

func newHistogram(buckets []float64) *Histogram {
	upper := make([]float64, 0, len(buckets))
	for _, b := range buckets {
		if !math.IsInf(b, +1) && !math.IsNaN(b) {
			upper = append(upper, b)
		}
	}
	sort.Float64s(upper)
	// Drop duplicates: two buckets with one le would be invalid exposition.
	out := upper[:0]
	for i, b := range upper {
		if i == 0 || b != upper[i-1] {
			out = append(out, b)
		}
	}
	return &Histogram{upper: out, counts: make([]atomic.Uint64, len(out)+1)}
}

// Observe records v, for example a latency in seconds.
func (h *Histogram) Observe(v float64) {
	// SearchFloat64s finds the first bound >= v, which is the "le" bucket.
	h.counts[sort.SearchFloat64s(h.upper, v)].Add(1)
	addFloat(&h.sumBits, v)
}

// Count returns how many observations were recorded.
func (h *Histogram) Count() uint64 {
	var n uint64
	for i := range h.counts {
		n += h.counts[i].Load()
	}
	return n
}

// Sum returns the sum of the observations.
func (h *Histogram) Sum() float64 { return math.Float64frombits(h.sumBits.Load()) }

func (h *Histogram) typeName() string { return "histogram" }

func (h *Histogram) writeSamples(b []byte, name string) []byte {
	// _count is the +Inf bucket as read here, not a separate atomic, so a
	// scrape racing with Observe is still self-consistent.
	var cum uint64
	for i, le := range h.upper {
		cum += h.counts[i].Load()
		b = appendSample(b, name, "_bucket", "le", formatFloat(le), float64(cum))
	}
	cum += h.counts[len(h.upper)].Load()
	b = appendSample(b, name, "_bucket", "le", "+Inf", float64(cum))
	b = appendSample(b, name, "_sum", "", "", h.Sum())
	return appendSample(b, name, "_count", "", "", float64(cum))
}
