package metrics

import (
	"errors"
	"fmt"
	"math"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

func text(t *testing.T, r *Registry) string {
	t.Helper()
	var sb strings.Builder
	if err := r.WriteText(&sb); err != nil {
		t.Fatalf("WriteText: %v", err)
	}
	return sb.String()
}

func TestWriteText(t *testing.T) {
	r := NewRegistry()
	r.Counter("queries_total", "Statements received.").Add(3)
	r.Gauge("sessions", "Open client sessions.").Set(2.5)
	r.GaugeFunc("cache_bytes", "Bytes held in L1.", func() float64 { return 1 << 20 })
	hits := r.CounterVec("cache_hits_total", "Cache hits by tier.", "tier")
	hits.With("l2").Inc()
	hits.With("l1").Add(7)
	h := r.Histogram("query_seconds", "Query latency.", []float64{0.1, 0.01, 1, math.Inf(1), 0.1})
	for _, v := range []float64{0.005, 0.01, 0.05, 2} {
		h.Observe(v)
	}
	r.Counter("odd_help", "A back\\slash and a\nnewline.")

	got := text(t, r)
	for _, want := range []string{
		"# HELP cache_bytes Bytes held in L1.\n# TYPE cache_bytes gauge\ncache_bytes 1.048576e+06\n",
		"# TYPE cache_hits_total counter\ncache_hits_total{tier=\"l1\"} 7\ncache_hits_total{tier=\"l2\"} 1\n",
		"# HELP odd_help A back\\\\slash and a\\nnewline.\n# TYPE odd_help counter\nodd_help 0\n",
		"# TYPE queries_total counter\nqueries_total 3\n",
		"# TYPE query_seconds histogram\n" +
			"query_seconds_bucket{le=\"0.01\"} 2\n" +
			"query_seconds_bucket{le=\"0.1\"} 3\n" +
			"query_seconds_bucket{le=\"1\"} 3\n" +
			"query_seconds_bucket{le=\"+Inf\"} 4\n" +
			"query_seconds_sum 2.065\n" +
			"query_seconds_count 4\n",
		"# TYPE sessions gauge\nsessions 2.5\n",
		// The Go and process collectors sit on every registry.
		"# TYPE go_goroutines gauge\n",
		"# TYPE process_resident_memory_bytes gauge\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("WriteText lacks\n%s\ngot:\n%s", want, got)
		}
	}
}

func TestLabelValueEscaping(t *testing.T) {
	r := NewRegistry()
	r.CounterVec("x_total", "X.", "k").With("a\"b\\c\nd").Inc()
	want := `x_total{k="a\"b\\c\nd"} 1` + "\n"
	if got := text(t, r); !strings.Contains(got, want) {
		t.Errorf("got %q, want it to contain %q", got, want)
	}
}

func TestRegisterTwiceReturnsSame(t *testing.T) {
	r := NewRegistry()
	a := r.Counter("c_total", "C.")
	b := r.Counter("c_total", "C again.")
	if a != b {
		t.Errorf("got two counters for one name, want the same one")
	}
	if got := r.Histogram("h", "H.", []float64{1}); got != r.Histogram("h", "H.", []float64{2}) {
		t.Errorf("got two histograms for one name, want the same one")
	}
}

func TestRegisterPanics(t *testing.T) {
	tests := []struct {
		name string
		f    func(r *Registry)
	}{
		{"invalid name", func(r *Registry) { r.Counter("1abc", "") }},
		{"empty name", func(r *Registry) { r.Gauge("", "") }},
		{"type clash", func(r *Registry) { r.Counter("a", ""); r.Gauge("a", "") }},
		{"reserved label", func(r *Registry) { r.CounterVec("a", "", "le") }},
		{"label with colon", func(r *Registry) { r.CounterVec("a", "", "a:b") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("got no panic, want one")
				}
			}()
			tt.f(NewRegistry())
		})
	}
}

func TestCounterByName(t *testing.T) {
	r := NewRegistry()
	r.SetMaxDynamic(2)
	r.Gauge("script_gauge", "")
	static := r.Counter("script_static", "")

	a, err := r.CounterByName("script_a", "Script counter.")
	if err != nil {
		t.Fatalf("CounterByName(script_a): %v", err)
	}
	a.Inc()
	again, err := r.CounterByName("script_a", "")
	if err != nil || again != a {
		t.Errorf("second CounterByName(script_a): got %p, %v; want %p, nil", again, err, a)
	}
	if c, err := r.CounterByName("script_static", ""); err != nil || c != static {
		t.Errorf("CounterByName(script_static): got %p, %v; want the static counter %p", c, err, static)
	}
	if _, err := r.CounterByName("script_b", ""); err != nil {
		t.Fatalf("CounterByName(script_b): %v", err)
	}

	tests := []struct {
		name string
		want error
	}{
		{"script_c", ErrTooMany},
		{"script-c", ErrInvalidName},
		{"", ErrInvalidName},
		{"script_gauge", ErrTypeClash},
	}
	for _, tt := range tests {
		_, err := r.CounterByName(tt.name, "")
		if !errors.Is(err, tt.want) {
			t.Errorf("CounterByName(%q): got %v, want %v", tt.name, err, tt.want)
		}
	}
	if got := text(t, r); !strings.Contains(got, "script_a 1\n") || strings.Contains(got, "script_c") {
		t.Errorf("WriteText: got\n%s\nwant script_a 1 and no script_c", got)
	}
}

func TestServeHTTP(t *testing.T) {
	r := NewRegistry()
	r.Counter("up_total", "Up.").Inc()
	rec := httptest.NewRecorder()
	r.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if got := rec.Header().Get("Content-Type"); !strings.HasPrefix(got, "text/plain; version=0.0.4") {
		t.Errorf("Content-Type: got %q, want text/plain; version=0.0.4", got)
	}
	if got := rec.Body.String(); !strings.Contains(got, "up_total 1\n") {
		t.Errorf("body: got %q, want it to contain up_total 1", got)
	}
}

// TestConcurrent is meant for go test -race: writers on every kind of metric
// race with scrapes and with dynamic registration, and the totals must add up.
func TestConcurrent(t *testing.T) {
	const workers, perWorker = 8, 1000
	r := NewRegistry()
	c := r.Counter("c_total", "")
	g := r.Gauge("g", "")
	vec := r.CounterVec("v_total", "", "tier")
	h := r.Histogram("h_seconds", "", []float64{0.5})

	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perWorker; i++ {
				c.Inc()
				g.Add(1)
				vec.With([]string{"l1", "l2"}[i%2]).Inc()
				h.Observe(float64(i % 2))
				d, err := r.CounterByName(fmt.Sprintf("script_%d", i%10), "")
				if err != nil {
					t.Errorf("CounterByName: %v", err)
					return
				}
				d.Inc()
				if i%100 == 0 {
					_ = r.WriteText(discard{})
				}
			}
		}()
	}
	wg.Wait()

	const total = workers * perWorker
	if got := c.Value(); got != total {
		t.Errorf("counter: got %d, want %d", got, total)
	}
	if got := g.Value(); got != total {
		t.Errorf("gauge: got %v, want %d", got, total)
	}
	if got := vec.With("l1").Value() + vec.With("l2").Value(); got != total {
		t.Errorf("vec l1+l2: got %d, want %d", got, total)
	}
	if got := h.Count(); got != total {
		t.Errorf("histogram count: got %d, want %d", got, total)
	}
	if got := h.Sum(); got != total/2 {
		t.Errorf("histogram sum: got %v, want %d", got, total/2)
	}
	var dyn uint64
	for i := 0; i < 10; i++ {
		d, _ := r.CounterByName(fmt.Sprintf("script_%d", i), "")
		dyn += d.Value()
	}
	if dyn != total {
		t.Errorf("dynamic counters: got %d, want %d", dyn, total)
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func BenchmarkCounterInc(b *testing.B) {
	c := NewRegistry().Counter("c_total", "")
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c.Inc()
		}
	})
}

func BenchmarkHistogramObserve(b *testing.B) {
	h := NewRegistry().Histogram("h_seconds", "", DefaultLatencyBuckets())
	b.RunParallel(func(pb *testing.PB) {
		v := 0.0003
		for pb.Next() {
			h.Observe(v)
		}
	})
}

func BenchmarkCounterByName(b *testing.B) {
	r := NewRegistry()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c, _ := r.CounterByName("script_hits", "")
			c.Inc()
		}
	})
}

func TestCounterVecSum(t *testing.T) {
	v := NewRegistry().CounterVec("bypass_total", "", "reason")
	if got := v.Sum(); got != 0 {
		t.Errorf("empty: got %d, want 0", got)
	}
	v.With("a").Add(2)
	v.With("b").Add(5)
	v.With("a").Inc()
	if got := v.Sum(); got != 8 {
		t.Errorf("got %d, want 8", got)
	}
}
