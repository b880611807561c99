// Package metrics is a small, dependency-free registry of counters, gauges and
// histograms that writes the Prometheus text exposition format 0.0.4.
package metrics

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
)

// ContentType is the Content-Type of the text that WriteText produces.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// DefaultMaxDynamic is how many metrics CounterByName may create in one
// Registry unless SetMaxDynamic says otherwise.
const DefaultMaxDynamic = 1000

// Errors returned by CounterByName.
var (
	ErrInvalidName = errors.New("metrics: invalid metric name")
	ErrTooMany     = errors.New("metrics: too many dynamic metrics")
	ErrTypeClash   = errors.New("metrics: name already registered with another type")
)

// metric is one named family in a Registry.
type metric interface {
	// typeName is the family's # TYPE, such as "counter".
	typeName() string
	// writeSamples appends the family's sample lines to b.
	writeSamples(b []byte, name string) []byte
}

type entry struct {
	name, help string
	m          metric
}

// Registry holds named metrics and writes them in the Prometheus text format.
// All methods are safe for concurrent use. Create one with NewRegistry.
type Registry struct {
	mu         sync.Mutex        // protects entries, dynamicN and maxDynamic
	entries    map[string]*entry // by metric name
	dynamicN   int               // how many entries CounterByName created
	maxDynamic int

	// dynamic is a read-mostly copy of the counters CounterByName returned, so
	// that a script bumping a counter per query takes no lock.
	dynamic sync.Map // name -> *Counter
}

// NewRegistry returns an empty Registry.
func NewRegistry() *Registry {
	return &Registry{entries: make(map[string]*entry), maxDynamic: DefaultMaxDynamic}
}

// SetMaxDynamic changes the cap on metrics created by CounterByName. It does
// not remove metrics created already.
func (r *Registry) SetMaxDynamic(n int) {
	r.mu.Lock()
	r.maxDynamic = n
	r.mu.Unlock()
}

// register returns the metric named name, creating it with mk when it does
// not exist. Registering a name twice with the same type returns the first
// metric, so independent packages can share one; a different type panics,
// because that is a programming error that would corrupt the exposition.
func (r *Registry) register(name, help string, mk func() metric) metric {
	if !validName(name) {
		panic(fmt.Sprintf("metrics: invalid metric name %q", name))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	m := mk()
	if e, ok := r.entries[name]; ok {
		if e.m.typeName() != m.typeName() {
			panic(fmt.Sprintf("metrics: %q registered as %s and %s", name, e.m.typeName(), m.typeName()))
		}
		return e.m
	}
	r.entries[name] = &entry{name: name, help: help, m: m}
	return m
}

// Counter returns the counter named name, creating it on first use.
func (r *Registry) Counter(name, help string) *Counter {
	return r.register(name, help, func() metric { return new(Counter) }).(*Counter)
}

// Gauge returns the gauge named name, creating it on first use.
func (r *Registry) Gauge(name, help string) *Gauge {
	return r.register(name, help, func() metric { return new(Gauge) }).(*Gauge)
}

// GaugeFunc registers a gauge whose value is f's result at each WriteText.
// f must be safe for concurrent use and quick. A second GaugeFunc with the
// same name keeps the first function.
func (r *Registry) GaugeFunc(name, help string, f func() float64) {
	r.register(name, help, func() metric { return gaugeFunc(f) })
}

// CounterVec returns the counter family named name with one label, creating
// it on first use.
func (r *Registry) CounterVec(name, help, labelName string) *CounterVec {
	if !validLabelName(labelName) {
		panic(fmt.Sprintf("metrics: invalid label name %q", labelName))
	}
	return r.register(name, help, func() metric { return &CounterVec{label: labelName} }).(*CounterVec)
}

// Histogram returns the histogram named name with the given upper bounds, in
// seconds or any other unit, creating it on first use. The bounds are sorted
// and need not include +Inf. A second call with the same name returns the
// first histogram, with its buckets.
func (r *Registry) Histogram(name, help string, buckets []float64) *Histogram {
	return r.register(name, help, func() metric { return newHistogram(buckets) }).(*Histogram)
}

// CounterByName returns the counter named name, creating it on first use, for
// names chosen at run time (a policy script's metrics.inc("hits") becomes
// script_hits). Creation stops at the registry's cap (DefaultMaxDynamic) with
// ErrTooMany, because every name costs memory and a scrape line forever.
func (r *Registry) CounterByName(name, help string) (*Counter, error) {
	if c, ok := r.dynamic.Load(name); ok {
		return c.(*Counter), nil
	}
	if !validName(name) {
		return nil, fmt.Errorf("%w: %q", ErrInvalidName, name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if e, ok := r.entries[name]; ok {
		c, isCounter := e.m.(*Counter)
		if !isCounter {
			return nil, fmt.Errorf("%w: %q is a %s", ErrTypeClash, name, e.m.typeName())
		}
		r.dynamic.Store(name, c)
		return c, nil
	}
	if r.dynamicN >= r.maxDynamic {
		return nil, fmt.Errorf("%w: %q would exceed %d", ErrTooMany, name, r.maxDynamic)
	}
	c := new(Counter)
	r.entries[name] = &entry{name: name, help: help, m: c}
	r.dynamicN++
	r.dynamic.Store(name, c)
	return c, nil
}

// ServeHTTP writes the registry in the text format, for a /metrics endpoint.
func (r *Registry) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", ContentType)
	_ = r.WriteText(w) // the scraper has gone; nothing to tell it
}

// Counter is a monotonically increasing count. The zero value is ready to use.
type Counter struct {
	n atomic.Uint64
}

// Inc adds one.
func (c *Counter) Inc() { c.n.Add(1) }

// Add adds n.
func (c *Counter) Add(n uint64) { c.n.Add(n) }

// Value returns the current count.
func (c *Counter) Value() uint64 { return c.n.Load() }

func (c *Counter) typeName() string { return "counter" }

func (c *Counter) writeSamples(b []byte, name string) []byte {
	return appendSample(b, name, "", "", "", float64(c.Value()))
}

// Gauge is a value that goes up and down. The zero value is ready to use.
type Gauge struct {
	bits atomic.Uint64 // math.Float64bits of the value
}

// Set sets the gauge to v.
func (g *Gauge) Set(v float64) { g.bits.Store(math.Float64bits(v)) }

// Add adds d, which may be negative.
func (g *Gauge) Add(d float64) { addFloat(&g.bits, d) }

// Value returns the current value.
func (g *Gauge) Value() float64 { return math.Float64frombits(g.bits.Load()) }

func (g *Gauge) typeName() string { return "gauge" }

func (g *Gauge) writeSamples(b []byte, name string) []byte {
	return appendSample(b, name, "", "", "", g.Value())
}

type gaugeFunc func() float64

func (f gaugeFunc) typeName() string { return "gauge" }

func (f gaugeFunc) writeSamples(b []byte, name string) []byte {
	return appendSample(b, name, "", "", "", f())
}

// CounterVec is a family of counters told apart by one label. It is meant
// for a small fixed set of label values, such as tier="l1" and tier="l2":
// every value ever used stays in memory.
type CounterVec struct {
	label    string
	children sync.Map // label value -> *Counter
}

// With returns the counter for the label value, creating it on first use.
func (v *CounterVec) With(value string) *Counter {
	if c, ok := v.children.Load(value); ok {
		return c.(*Counter)
	}
	c, _ := v.children.LoadOrStore(value, new(Counter))
	return c.(*Counter)
}

// Sum returns the total over every label value.
func (v *CounterVec) Sum() uint64 {
	var n uint64
	v.children.Range(func(_, c any) bool {
		n += c.(*Counter).Value()
		return true
	})
	return n
}

func (v *CounterVec) typeName() string { return "counter" }

func (v *CounterVec) writeSamples(b []byte, name string) []byte {
	type child struct {
		value string
		c     *Counter
	}
	var kids []child
	v.children.Range(func(k, c any) bool {
		kids = append(kids, child{k.(string), c.(*Counter)})
		return true
	})
	sort.Slice(kids, func(i, j int) bool { return kids[i].value < kids[j].value })
	for _, k := range kids {
		b = appendSample(b, name, "", v.label, k.value, float64(k.c.Value()))
	}
	return b
}

// addFloat adds d to the float64 stored as bits, lock-free.
func addFloat(bits *atomic.Uint64, d float64) {
	for {
		old := bits.Load()
		if bits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+d)) {
			return
		}
	}
}

// validName reports whether s matches [a-zA-Z_:][a-zA-Z0-9_:]*.
func validName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := c == '_' || c == ':' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
		if !letter && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// validLabelName reports whether s matches [a-zA-Z_][a-zA-Z0-9_]* and does
// not use the reserved "__" prefix or the histogram's "le".
func validLabelName(s string) bool {
	if !validName(s) || s == "le" || (len(s) >= 2 && s[:2] == "__") {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] == ':' {
			return false
		}
	}
	return true
}
