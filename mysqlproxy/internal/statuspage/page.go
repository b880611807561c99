package statuspage

import (
	_ "embed"
	"encoding/json"
	"net/http"
	"sync"
	"time"
)

//go:embed page.html
var pageHTML []byte

// Defaults for Options.
const (
	DefaultEvery = time.Second
	DefaultKeep  = 600 // ten minutes at DefaultEvery
)

// Options configures a Page. Counters and Read are required; zero values
// of the others get the documented defaults.
type Options struct {
	// Counters reads the counters sampled every Every. It must be cheap.
	Counters func() Counters
	// Read reads the rest of the state, once per /status.json request.
	Read func() Reading
	// Every is the sampling interval (default 1s).
	Every time.Duration
	// Keep is the number of samples kept (default 600).
	Keep int
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Page samples the counters in the background and serves the status page
// ("/") and its data ("/status.json"). Its methods are safe for concurrent
// use.
type Page struct {
	opts  Options
	start time.Time
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once

	mu      sync.Mutex // protects samples
	samples []sample   // oldest first, at most Keep
}

type sample struct {
	at time.Time
	c  Counters
}

// New returns a page that has taken its first sample and goes on sampling
// until Close.
func New(opts Options) *Page {
	if opts.Every <= 0 {
		opts.Every = DefaultEvery
	}
	if opts.Keep < 2 {
		opts.Keep = DefaultKeep
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	p := &Page{opts: opts, start: opts.Now(), stop: make(chan struct{}), done: make(chan struct{})}
	p.Sample()
	go p.run()
	return p
}

func (p *Page) run() {
	defer close(p.done)
	t := time.NewTicker(p.opts.Every)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.Sample()
		}
	}
}

// Close stops the sampling.
func (p *Page) Close() {
	p.once.Do(func() { close(p.stop) })
	<-p.done
}

// Sample records the counters now. The background sampling calls it every
// Options.Every; tests may call it to step time themselves.
func (p *Page) Sample() {
	s := sample{at: p.opts.Now(), c: p.opts.Counters()}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.samples) == p.opts.Keep {
		// Shift rather than ring: Keep is small and a sample a second
		// makes this cheap, and the history reads in order.
		copy(p.samples, p.samples[1:])
		p.samples = p.samples[:len(p.samples)-1]
	}
	p.samples = append(p.samples, s)
}

// Status returns the state now, with the rates between the samples kept.
func (p *Page) Status() Status {
	r := p.opts.Read()
	now := p.opts.Now()
	p.mu.Lock()
	samples := append([]sample(nil), p.samples...)
	p.mu.Unlock()
	st := Status{
		Time:          now,
		UptimeSeconds: now.Sub(p.start).Seconds(),
		SampleSeconds: p.opts.Every.Seconds(),
		Reading:       r,
		History:       make([]Point, 0, len(samples)),
		Invalidation:  Invalidation{Pending: r.PendingBumps},
	}
	c := r.Counters
	st.Totals = Totals{L1Hits: c.L1Hits, MemcachedHits: c.MemcachedHits, Misses: c.Misses, Bypasses: c.Bypasses, Bumps: c.Bumps}
	for i := 1; i < len(samples); i++ {
		st.History = append(st.History, rates(samples[i-1], samples[i]))
	}
	if n := len(st.History); n > 0 {
		st.Rates = st.History[n-1]
	}
	st.Invalidation.BumpsPerS = st.Rates.Bumps
	var prev, last *sample // the last two samples, for the servers' recent rates
	if n := len(samples); n >= 2 {
		prev, last = &samples[n-2], &samples[n-1]
	}
	for _, sc := range c.Servers {
		srv := Server{Addr: sc.Addr, Gets: sc.Gets, Errors: sc.Errors, IdleConns: sc.Idle, AvgLatencyMs: avgMs(sc.Time, sc.Gets)}
		if prev != nil {
			a, b := findServer(prev.c.Servers, sc.Addr), findServer(last.c.Servers, sc.Addr)
			if secs := last.at.Sub(prev.at).Seconds(); a != nil && b != nil && secs > 0 {
				srv.GetsPerS = float64(b.Gets-a.Gets) / secs
				srv.ErrorsPerS = float64(b.Errors-a.Errors) / secs
				srv.LatencyMs = avgMs(b.Time-a.Time, b.Gets-a.Gets)
			}
		}
		st.Memcached = append(st.Memcached, srv)
	}
	if st.Memcached == nil {
		st.Memcached = []Server{}
	}
	if st.Queries == nil {
		st.Queries = []Query{}
	}
	return st
}

// rates returns the rates between samples a and b.
func rates(a, b sample) Point {
	pt := Point{T: b.at.UnixMilli()}
	secs := b.at.Sub(a.at).Seconds()
	if secs <= 0 {
		return pt
	}
	per := func(x, y uint64) float64 { return float64(y-x) / secs }
	pt.L1 = per(a.c.L1Hits, b.c.L1Hits)
	pt.Memcached = per(a.c.MemcachedHits, b.c.MemcachedHits)
	pt.Miss = per(a.c.Misses, b.c.Misses)
	pt.Bypass = per(a.c.Bypasses, b.c.Bypasses)
	pt.Bumps = per(a.c.Bumps, b.c.Bumps)
	if reads := pt.L1 + pt.Memcached + pt.Miss + pt.Bypass; reads > 0 {
		r := (pt.L1 + pt.Memcached) / reads
		pt.HitRatio = &r
	}
	return pt
}

func findServer(ss []ServerCounters, addr string) *ServerCounters {
	for i := range ss {
		if ss[i].Addr == addr {
			return &ss[i]
		}
	}
	return nil
}

func avgMs(total time.Duration, n uint64) *float64 {
	if n == 0 {
		return nil
	}
	ms := total.Seconds() * 1000 / float64(n)
	return &ms
}

// ServeHTTP serves the page at "/" and its data at "/status.json"; other
// paths are not found.
func (p *Page) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	switch r.URL.Path {
	case "/":
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		// The page is self-contained: nothing it loads comes from
		// elsewhere, and nothing may be injected to make it.
		w.Header().Set("Content-Security-Policy", "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src data:")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write(pageHTML)
	case "/status.json":
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		enc := json.NewEncoder(w)
		enc.SetIndent("", " ")
		_ = enc.Encode(p.Status())
	default:
		http.NotFound(w, r)
	}
}
