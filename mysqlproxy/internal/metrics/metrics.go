// Package metrics keeps mycached's counters, gauges and histograms on a
// private prometheus/client_golang registry, next to the Go runtime and
// process collectors, and serves them at /metrics.
package metrics

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"
)

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
}

// Registry holds named metrics on a prometheus.Registry of its own, so that
// nothing registered on the process-wide default registry by a library
// leaks into /metrics. All methods are safe for concurrent use. Create one
// with NewRegistry.
type Registry struct {
	prom    *prometheus.Registry
	handler http.Handler

	mu         sync.Mutex        // protects entries, dynamicN and maxDynamic
	entries    map[string]metric // by metric name
	dynamicN   int               // how many entries CounterByName created
	maxDynamic int

	// dynamic is a read-mostly copy of the counters CounterByName returned, so
	// that a script bumping a counter per query takes no lock.
	dynamic sync.Map // name -> *Counter
}

// NewRegistry returns a Registry holding only the Go runtime collector
// (go_*) and the process collector (process_*).
func NewRegistry() *Registry {
	prom := prometheus.NewRegistry()
	prom.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return &Registry{
		prom: prom,
		// ContinueOnError: one failing collector (say, /proc unreadable
		// under a sandbox) must not hide every other metric.
		handler:    promhttp.HandlerFor(prom, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}),
		entries:    make(map[string]metric),
		maxDynamic: DefaultMaxDynamic,
	}
}

// Gatherer returns the underlying registry, for tests and for tools that
// want the metric families rather than text.
func (r *Registry) Gatherer() prometheus.Gatherer { return r.prom }

// SetMaxDynamic changes the cap on metrics created by CounterByName. It does
// not remove metrics created already.
func (r *Registry) SetMaxDynamic(n int) {
	r.mu.Lock()
	r.maxDynamic = n
	r.mu.Unlock()
}

// register returns the metric named name, creating and registering it with
// mk when it does not exist. Registering a name twice with the same type
// returns the first metric, so independent packages can share one; a
// different type panics, because that is a programming error that would
// corrupt the exposition.
func (r *Registry) register(name, typ string, mk func() (metric, prometheus.Collector)) metric {
	if !validName(name) {
		panic(fmt.Sprintf("metrics: invalid metric name %q", name))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if m, ok := r.entries[name]; ok {
		if m.typeName() != typ {
			panic(fmt.Sprintf("metrics: %q registered as %s and %s", name, m.typeName(), typ))
		}
		return m
	}
	m, c := mk()
	r.prom.MustRegister(c)
	r.entries[name] = m
	return m
}

// Counter returns the counter named name, creating it on first use.
func (r *Registry) Counter(name, help string) *Counter {
	return r.register(name, "counter", func() (metric, prometheus.Collector) {
		c := newCounter(name, help)
		return c, c.c
	}).(*Counter)
}

// Gauge returns the gauge named name, creating it on first use.
func (r *Registry) Gauge(name, help string) *Gauge {
	return r.register(name, "gauge", func() (metric, prometheus.Collector) {
		g := &Gauge{g: prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})}
		return g, g.g
	}).(*Gauge)
}

// GaugeFunc registers a gauge whose value is f's result at each scrape.
// f must be safe for concurrent use and quick. A second GaugeFunc with the
// same name keeps the first function.
func (r *Registry) GaugeFunc(name, help string, f func() float64) {
	r.register(name, "gauge", func() (metric, prometheus.Collector) {
		return gaugeFunc{}, prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
	})
}

// CounterVec returns the counter family named name with one label, creating
// it on first use.
func (r *Registry) CounterVec(name, help, labelName string) *CounterVec {
	if !validLabelName(labelName) {
		panic(fmt.Sprintf("metrics: invalid label name %q", labelName))
	}
	return r.register(name, "counter", func() (metric, prometheus.Collector) {
		v := &CounterVec{v: prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{labelName})}
		return v, v.v
	}).(*CounterVec)
}

// Histogram returns the histogram named name with the given upper bounds, in
// seconds or any other unit, creating it on first use. The bounds are sorted
// and need not include +Inf. A second call with the same name returns the
// first histogram, with its buckets.
func (r *Registry) Histogram(name, help string, buckets []float64) *Histogram {
	return r.register(name, "histogram", func() (metric, prometheus.Collector) {
		h := &Histogram{h: prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: bounds(buckets)})}
		return h, h.h
	}).(*Histogram)
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
	if m, ok := r.entries[name]; ok {
		c, isCounter := m.(*Counter)
		if !isCounter {
			return nil, fmt.Errorf("%w: %q is a %s", ErrTypeClash, name, m.typeName())
		}
		r.dynamic.Store(name, c)
		return c, nil
	}
	if r.dynamicN >= r.maxDynamic {
		return nil, fmt.Errorf("%w: %q would exceed %d", ErrTooMany, name, r.maxDynamic)
	}
	c := newCounter(name, help)
	if err := r.prom.Register(c.c); err != nil {
		// A name the Go or process collector already exports.
		return nil, fmt.Errorf("%w: %q: %v", ErrTypeClash, name, err)
	}
	r.entries[name] = c
	r.dynamicN++
	r.dynamic.Store(name, c)
	return c, nil
}

// ServeHTTP serves the registry in whichever exposition format the scraper
// asks for, for a /metrics endpoint.
func (r *Registry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.handler.ServeHTTP(w, req)
}

// WriteText writes every metric in the Prometheus text exposition format,
// sorted by name.
func (r *Registry) WriteText(w io.Writer) error {
	mfs, err := r.prom.Gather()
	if err != nil {
		return err
	}
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return err
		}
	}
	return nil
}

// validName reports whether s matches [a-zA-Z_:][a-zA-Z0-9_:]*: the classic
// Prometheus name, which every scraper and PromQL accept unquoted.
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
