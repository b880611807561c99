package metrics

import (
	"math"
	"sort"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// DefaultLatencyBuckets returns upper bounds in seconds suited to a proxy
// whose cache hits take microseconds and whose backend queries take
// milliseconds. It returns a new slice each time, so callers may change it.
func DefaultLatencyBuckets() []float64 {
	return []float64{
		0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
	}
}

// Counter is a monotonically increasing count. Inc and Add are one atomic
// add, so they are safe on the hot path.
type Counter struct {
	c prometheus.Counter
}

func newCounter(name, help string) *Counter {
	return &Counter{c: prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})}
}

// Inc adds one.
func (c *Counter) Inc() { c.c.Inc() }

// Add adds n.
func (c *Counter) Add(n uint64) { c.c.Add(float64(n)) }

// Value returns the current count. It is meant for SHOW MYCACHED STATUS
// and tests, not the hot path.
func (c *Counter) Value() uint64 { return uint64(read(c.c).GetCounter().GetValue()) }

func (c *Counter) typeName() string { return "counter" }

// Gauge is a value that goes up and down.
type Gauge struct {
	g prometheus.Gauge
}

// Set sets the gauge to v.
func (g *Gauge) Set(v float64) { g.g.Set(v) }

// Add adds d, which may be negative.
func (g *Gauge) Add(d float64) { g.g.Add(d) }

// Value returns the current value.
func (g *Gauge) Value() float64 { return read(g.g).GetGauge().GetValue() }

func (g *Gauge) typeName() string { return "gauge" }

type gaugeFunc struct{}

func (gaugeFunc) typeName() string { return "gauge" }

// CounterVec is a family of counters told apart by one label. It is meant
// for a small fixed set of label values, such as tier="l1" and tier="l2":
// every value ever used stays in memory. Callers on a hot path should keep
// the *Counter that With returns rather than call With each time.
type CounterVec struct {
	v *prometheus.CounterVec
	// children caches With's answers: a sync.Map load, where the vec's own
	// lookup hashes the label value and takes a read lock.
	children sync.Map // label value -> *Counter
}

// With returns the counter for the label value, creating it on first use.
// A new child shows in /metrics at once, with the value 0.
func (v *CounterVec) With(value string) *Counter {
	if c, ok := v.children.Load(value); ok {
		return c.(*Counter)
	}
	c, _ := v.children.LoadOrStore(value, &Counter{c: v.v.WithLabelValues(value)})
	return c.(*Counter)
}

// Sum returns the total over every label value used so far.
func (v *CounterVec) Sum() uint64 {
	var n uint64
	v.children.Range(func(_, c any) bool {
		n += c.(*Counter).Value()
		return true
	})
	return n
}

func (v *CounterVec) typeName() string { return "counter" }

// Histogram counts observations in buckets by upper bound.
type Histogram struct {
	h prometheus.Histogram
}

// Observe records v, for example a latency in seconds.
func (h *Histogram) Observe(v float64) { h.h.Observe(v) }

// Count returns how many observations were recorded.
func (h *Histogram) Count() uint64 { return read(h.h).GetHistogram().GetSampleCount() }

// Sum returns the sum of the observations.
func (h *Histogram) Sum() float64 { return read(h.h).GetHistogram().GetSampleSum() }

func (h *Histogram) typeName() string { return "histogram" }

// read takes a snapshot of one metric's value.
func read(m prometheus.Metric) *dto.Metric {
	var out dto.Metric
	_ = m.Write(&out) // only fails for a metric with invalid label values
	return &out
}

// bounds sorts buckets and drops +Inf, NaN and duplicates, which
// client_golang would reject with a panic.
func bounds(buckets []float64) []float64 {
	upper := make([]float64, 0, len(buckets))
	for _, b := range buckets {
		if !math.IsInf(b, +1) && !math.IsNaN(b) {
			upper = append(upper, b)
		}
	}
	sort.Float64s(upper)
	out := upper[:0]
	for i, b := range upper {
		if i == 0 || b != upper[i-1] {
			out = append(out, b)
		}
	}
	return out
}
