package statuspage

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeProxy is counters a test moves by hand, under a clock it steps.
type fakeProxy struct {
	mu  sync.Mutex // protects c and now
	c   Counters
	now time.Time
}

func (f *fakeProxy) counters() Counters {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.c
	c.Servers = append([]ServerCounters(nil), f.c.Servers...)
	return c
}

func (f *fakeProxy) clock() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// step moves the clock by d and lets change move the counters.
func (f *fakeProxy) step(d time.Duration, change func(c *Counters)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
	change(&f.c)
}

func newFakePage(t *testing.T, keep int) (*fakeProxy, *Page) {
	t.Helper()
	f := &fakeProxy{now: time.Unix(1_700_000_000, 0)}
	f.c.Servers = []ServerCounters{{Addr: "127.0.0.1:1"}, {Addr: "127.0.0.1:2"}}
	p := New(Options{
		Counters: f.counters,
		Read: func() Reading {
			return Reading{Sessions: 3, Counters: f.counters(), PendingBumps: 2, Queries: []Query{{Digest: "select ?", Hits: 1}}}
		},
		// The background sampling stays out of the way: the test samples.
		Every: time.Hour,
		Keep:  keep,
		Now:   f.clock,
	})
	t.Cleanup(p.Close)
	return f, p
}

func TestRatesBetweenSamples(t *testing.T) {
	f, p := newFakePage(t, 10)
	f.step(2*time.Second, func(c *Counters) {
		c.L1Hits += 10
		c.MemcachedHits += 6
		c.Misses += 2
		c.Bypasses += 2
		c.Bumps += 4
		c.Servers[0].Gets += 8
		c.Servers[0].Time += 8 * time.Millisecond
		c.Servers[1].Gets += 2
		c.Servers[1].Errors += 2
		c.Servers[1].Time += 100 * time.Millisecond
	})
	p.Sample()
	f.step(time.Second, func(c *Counters) {}) // nothing read
	p.Sample()

	st := p.Status()
	if len(st.History) != 2 {
		t.Fatalf("got %d history points, want 2", len(st.History))
	}
	first := st.History[0]
	if first.L1 != 5 || first.Memcached != 3 || first.Miss != 1 || first.Bypass != 1 || first.Bumps != 2 {
		t.Errorf("first point: got %+v, want l1 5, memcached 3, miss 1, bypass 1, bumps 2 per second", first)
	}
	if first.HitRatio == nil || *first.HitRatio != 0.8 {
		t.Errorf("first point's hit ratio: got %v, want 0.8", first.HitRatio)
	}
	if st.History[1].HitRatio != nil {
		t.Errorf("a second with no reads: got hit ratio %v, want null", *st.History[1].HitRatio)
	}
	if st.Rates != st.History[1] {
		t.Errorf("rates: got %+v, want the last point %+v", st.Rates, st.History[1])
	}
	if st.Totals.L1Hits != 10 || st.Totals.Bumps != 4 || st.Invalidation.Pending != 2 {
		t.Errorf("totals: got %+v and %d pending, want 10 L1 hits, 4 bumps, 2 pending", st.Totals, st.Invalidation.Pending)
	}
	s0, s1 := st.Memcached[0], st.Memcached[1]
	if s0.AvgLatencyMs == nil || *s0.AvgLatencyMs != 1 || s0.Errors != 0 {
		t.Errorf("server 0: got %+v, want 1 ms average, no errors", s0)
	}
	if s1.AvgLatencyMs == nil || *s1.AvgLatencyMs != 50 || s1.Errors != 2 {
		t.Errorf("server 1: got %+v, want 50 ms average, 2 errors", s1)
	}
	if s0.LatencyMs != nil || s0.GetsPerS != 0 {
		t.Errorf("server 0 over the last second, without gets: got %v ms, %v gets/s, want null and 0", s0.LatencyMs, s0.GetsPerS)
	}
}

func TestHistoryKeepsTheLastSamples(t *testing.T) {
	f, p := newFakePage(t, 4)
	for i := range 10 {
		f.step(time.Second, func(c *Counters) { c.L1Hits += uint64(i) })
		p.Sample()
	}
	st := p.Status()
	if len(st.History) != 3 {
		t.Fatalf("got %d points, want 3 (4 samples kept)", len(st.History))
	}
	if got := st.History[2].L1; got != 9 {
		t.Errorf("last point: got %v L1 hits/s, want 9", got)
	}
	if got, want := st.History[2].T, f.clock().UnixMilli(); got != want {
		t.Errorf("last point's time: got %d, want %d", got, want)
	}
}

func TestServesPageAndJSON(t *testing.T) {
	f, p := newFakePage(t, 10)
	f.step(time.Second, func(c *Counters) { c.L1Hits++ })
	p.Sample()
	hs := httptest.NewServer(p)
	defer hs.Close()

	resp, err := http.Get(hs.URL + "/status.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	err = json.NewDecoder(resp.Body).Decode(&doc)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("decode /status.json: %v", err)
	}
	for _, k := range []string{"time", "uptime_seconds", "sample_seconds", "sessions", "totals", "rates", "history",
		"l1", "memcached", "memcached_errors", "invalidation", "follower", "queries", "policy"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("/status.json lacks %q", k)
		}
	}
	for _, k := range []string{"Counters", "PendingBumps"} {
		if _, ok := doc[k]; ok {
			t.Errorf("/status.json has internal field %q", k)
		}
	}

	resp, err = http.Get(hs.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Errorf("/: got Content-Type %q, want text/html", ct)
	}
	// Self-contained: nothing is loaded from elsewhere.
	for _, ref := range []string{"src=", "href=", "@import", "url("} {
		if strings.Contains(string(body), ref) {
			t.Errorf("/ refers to an outside resource (%s)", ref)
		}
	}

	resp, err = http.Get(hs.URL + "/nothing")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("/nothing: got %d, want 404", resp.StatusCode)
	}
}
