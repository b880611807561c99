package mysqlproxy_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/mycached/mycached/mysqlproxy"
	"github.com/mycached/mycached/mysqlproxy/internal/statuspage"
)

// statusRig is a sidecar with memcached and the binlog follower in front of
// the shared MariaDB, a table of the test's own, and its admin handler
// served on a loopback port.
type statusRig struct {
	p     *proxy
	mc    string // memcached's address
	db    *sql.DB
	admin *httptest.Server
}

var keepShot = flag.String("statuspage.shot", "", "also save the status page's screenshot in this directory")

const statusRead = "SELECT v FROM items WHERE id = %d"

func startStatusRig(t *testing.T) *statusRig {
	t.Helper()
	m := testenvShared(t)
	mc := privateMemcached(t)
	p := startProxy(t, withBinlog(mysqlproxy.Config{
		Backend:   m.Addr,
		Memcached: []string{mc.Addr},
		// A loaded machine must not turn the lookups this test counts
		// into timeouts that fail open.
		MemcachedTimeout: 5 * time.Second,
	}))
	name := m.NewDatabase(t)
	db := openDB(t, rootDSN(p.addr, name, "interpolateParams=true"))
	mustExec(t, db, "CREATE TABLE items (id INT PRIMARY KEY, v INT NOT NULL)")
	for i := range 20 {
		mustExec(t, db, "INSERT INTO items VALUES (?, ?)", i, i)
	}
	admin := httptest.NewServer(p.srv.AdminHandler())
	t.Cleanup(admin.Close)
	return &statusRig{p: p, mc: mc.Addr, db: db, admin: admin}
}

// round runs one round of the workload: cacheable point reads (hits after
// the first), a read that is never cached, and a write that bumps.
func (r *statusRig) round(ctx context.Context, i int) error {
	for id := range 20 {
		var v int
		if err := r.db.QueryRowContext(ctx, fmt.Sprintf(statusRead, id)).Scan(&v); err != nil {
			return err
		}
	}
	var now string
	if err := r.db.QueryRowContext(ctx, "SELECT NOW()").Scan(&now); err != nil {
		return err
	}
	_, err := r.db.ExecContext(ctx, "UPDATE items SET v = v + 1 WHERE id = ?", i%20)
	return err
}

// runWorkload runs rounds until the test ends, reporting its first error.
func (r *statusRig) runWorkload(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var failed error
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ctx.Err() == nil; i++ {
			if err := r.round(ctx, i); err != nil && ctx.Err() == nil {
				failed = err
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		if failed != nil {
			t.Errorf("workload: %v", failed)
		}
	})
}

// get fetches path from the admin handler.
func (r *statusRig) get(t *testing.T, path string) []byte {
	t.Helper()
	resp, err := r.admin.Client().Get(r.admin.URL + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: status %d, %v", path, resp.StatusCode, err)
	}
	return b
}

func (r *statusRig) status(t *testing.T) statuspage.Status {
	t.Helper()
	var st statuspage.Status
	if err := json.Unmarshal(r.get(t, "/status.json"), &st); err != nil {
		t.Fatalf("decode /status.json: %v", err)
	}
	return st
}

// TestStatusJSON: /status.json reports what a workload did, by the names
// the README documents, and /metrics still answers beside it.
func TestStatusJSON(t *testing.T) {
	r := startStatusRig(t)
	ctx := context.Background()
	for i := range 5 {
		if err := r.round(ctx, i); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.p.srv.WaitBinlog(ctx); err != nil {
		t.Fatal(err)
	}
	// The rates need samples taken after the reads, a second apart.
	waitFor(t, 20*time.Second, "two points of history", func() bool { return len(r.status(t).History) >= 2 })

	var doc map[string]json.RawMessage
	if err := json.Unmarshal(r.get(t, "/status.json"), &doc); err != nil {
		t.Fatalf("decode /status.json: %v", err)
	}
	for _, k := range []string{"time", "uptime_seconds", "sample_seconds", "sessions", "totals", "rates", "history",
		"l1", "memcached", "memcached_errors", "invalidation", "follower", "queries", "policy"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("/status.json lacks %q", k)
		}
	}

	st := r.status(t)
	if st.Totals.L1Hits == 0 || st.Totals.Misses == 0 || st.Totals.Bypasses == 0 || st.Totals.Bumps == 0 {
		t.Errorf("totals: got %+v, want L1 hits, misses, bypasses and bumps", st.Totals)
	}
	if len(st.History) < 2 {
		t.Errorf("history: got %d points, want at least 2", len(st.History))
	}
	var reads float64
	for _, pt := range st.History {
		reads += pt.L1 + pt.Memcached + pt.Miss + pt.Bypass
	}
	if reads == 0 {
		t.Errorf("history: got no reads in %+v", st.History)
	}
	if st.L1.Capacity != 256<<20 || st.L1.Entries == 0 || st.L1.Bytes == 0 {
		t.Errorf("l1: got %+v, want entries and bytes of a 256 MiB capacity", st.L1)
	}
	if len(st.Memcached) != 1 || st.Memcached[0].Addr != r.mc || st.Memcached[0].Gets == 0 || st.Memcached[0].AvgLatencyMs == nil {
		t.Errorf("memcached: got %+v, want %s with gets and a latency", st.Memcached, r.mc)
	} else if st.Memcached[0].Errors != 0 {
		t.Errorf("memcached: got %d errors, want 0", st.Memcached[0].Errors)
	}
	if f := st.Follower; !f.Running || f.State != "running" || f.Staleness == nil || f.Transactions == 0 || f.Position == "" {
		t.Errorf("follower: got %+v, want it running, with a staleness, a position and transactions", f)
	}
	if st.Invalidation.Pending != 0 {
		t.Errorf("pending bumps: got %d, want 0", st.Invalidation.Pending)
	}
	var point, now *statuspage.Query
	for i, q := range st.Queries {
		switch {
		case strings.HasPrefix(q.Digest, "select `v` from `items`"):
			point = &st.Queries[i]
		case strings.Contains(strings.ToLower(q.Digest), "now"):
			now = &st.Queries[i]
		}
	}
	if point == nil || point.Hits == 0 || point.Misses == 0 || point.Admission == "" {
		t.Errorf("queries: got %+v, want the point read with hits, misses and an admission state", st.Queries)
	}
	if now == nil || now.Bypasses != 5 || now.WhyNot == "" {
		t.Errorf("queries: got %+v, want SELECT NOW() 5 times not cached, saying why", st.Queries)
	}
	if p := st.Policy; p == nil || len(p.Scripts) != 1 || p.Scripts[0].Name != "default.lua" || p.Calls == 0 {
		t.Errorf("policy: got %+v, want default.lua with calls", p)
	}
	if m := string(r.get(t, "/metrics")); !strings.Contains(m, "mycached_cache_hits_total") {
		t.Errorf("/metrics lacks mycached_cache_hits_total:\n%s", m)
	}
}

// TestStatusJSONShowsAFailingServer: of two memcached servers, the one
// that is down shows the errors, and the one that is up does not.
func TestStatusJSONShowsAFailingServer(t *testing.T) {
	m := testenvShared(t)
	up, down := privateMemcached(t), privateMemcached(t)
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr, Memcached: []string{up.Addr, down.Addr}, MemcachedTimeout: 5 * time.Second})
	db := openDB(t, rootDSN(p.addr, m.NewDatabase(t), "interpolateParams=true"))
	mustExec(t, db, "CREATE TABLE items (id INT PRIMARY KEY, v INT NOT NULL)")
	if err := down.Kill(); err != nil {
		t.Fatal(err)
	}
	admin := httptest.NewServer(p.srv.AdminHandler())
	defer admin.Close()
	r := &statusRig{p: p, db: db, admin: admin}
	for id := range 40 {
		var n int
		if err := db.QueryRow(fmt.Sprintf("SELECT COUNT(*) FROM items WHERE id = %d", id)).Scan(&n); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]statuspage.Server{}
	for _, s := range r.status(t).Memcached {
		got[s.Addr] = s
	}
	if s := got[down.Addr]; s.Errors == 0 || s.Errors > s.Gets {
		t.Errorf("server down (%s): got %+v, want errors among its gets", down.Addr, s)
	}
	if s := got[up.Addr]; s.Errors != 0 || s.Gets == 0 {
		t.Errorf("server up (%s): got %+v, want gets and no errors", up.Addr, s)
	}
}

// chromium returns the path of the Chromium binary the browser test
// drives, failing t when it is missing: `make deps` installs it.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatalf("chromium not found in PATH: the status page test drives a real browser; run 'make deps' (as root on Debian) to install the chromium package")
	return ""
}

// TestStatusPageInChromium loads the status page in a headless Chromium
// while a workload runs: the charts draw, the numbers move from one poll
// to the next, and the tables show the workload's statement, memcached
// server and policy script.
func TestStatusPageInChromium(t *testing.T) {
	bin := chromium(t)
	r := startStatusRig(t)
	r.runWorkload(t)

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.NoSandbox, // the tests run as root
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1400),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	// The browser lives as long as the context of its first Run: no
	// timeout here; waitFor bounds the waits below.
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()

	// Uncaught exceptions on the page fail the test.
	var jsErrs []string
	var jsMu sync.Mutex
	exceptions := chromedp.Events(ctx, cdpruntime.ExceptionThrown)
	go func() {
		for ev, err := range exceptions {
			if err != nil {
				return
			}
			jsMu.Lock()
			jsErrs = append(jsErrs, (&chromedp.ExceptionError{ExceptionDetails: ev.ExceptionDetails}).Error())
			jsMu.Unlock()
		}
	}()
	defer func() {
		jsMu.Lock()
		defer jsMu.Unlock()
		for _, e := range jsErrs {
			t.Errorf("chromium: the page threw: %s", e)
		}
	}()

	if err := chromedp.Do(ctx, chromedp.Navigate(r.admin.URL+"/?every=500")); err != nil {
		t.Fatalf("chromium: load the status page: %v", err)
	}
	type pageState struct {
		Polls   string `json:"polls"`
		Reads   string `json:"reads"`
		Points  string `json:"points"`
		PathLen int    `json:"pathLen"`
	}
	state := func() pageState {
		t.Helper()
		st, err := chromedp.Run(ctx, chromedp.Evaluate[pageState](`({
			polls: document.getElementById("polls").textContent,
			reads: document.getElementById("total-reads").textContent,
			points: document.getElementById("chart-reads").dataset.points || "0",
			pathLen: Array.from(document.querySelectorAll("#chart-reads path.series")).reduce((n, p) => n + (p.getAttribute("d") || "").length, 0),
		})`))
		if err != nil {
			t.Fatalf("chromium: read the page: %v", err)
		}
		return st
	}
	// The reads chart has a line once two samples with reads are taken.
	waitFor(t, 60*time.Second, "the reads chart to draw two points or more", func() bool {
		st := state()
		n, _ := strconv.Atoi(st.Points)
		return n >= 2 && st.PathLen > 0
	})
	first := state()
	var later pageState
	waitFor(t, 30*time.Second, "a later poll to show more reads", func() bool {
		later = state()
		return later.Polls != first.Polls && later.Reads != first.Reads
	})
	t.Logf("poll %s showed %s reads since start; poll %s showed %s", first.Polls, first.Reads, later.Polls, later.Reads)

	// The reads chart's points count every series: two may be one
	// sample. The other charts draw a line once the history holds two
	// samples, which a loaded machine takes longer to poll.
	for name, sel := range map[string]string{"hit ratio": "#chart-ratio path.series", "bumps": "#chart-bumps path.series"} {
		waitFor(t, 60*time.Second, "the "+name+" chart to draw a line of two points or more", func() bool {
			d, err := chromedp.Run(ctx, chromedp.AttributeValue(sel, "d"))
			if err != nil {
				t.Fatalf("chromium: read the %s chart: %v", name, err)
			}
			return strings.Contains(d.Value, "L")
		})
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(sel))
		if err != nil {
			t.Fatalf("chromium: read %s: %v", sel, err)
		}
		return s
	}
	if servers := text("#servers"); !strings.Contains(servers, r.mc) {
		t.Errorf("memcached table: got %q, want it to list %s", servers, r.mc)
	}
	if queries := text("#queries"); !strings.Contains(queries, "select `v` from `items`") || !strings.Contains(strings.ToLower(queries), "select now") {
		t.Errorf("queries table: got %q, want the point read and SELECT NOW()", queries)
	}
	if scripts := text("#scripts"); !strings.Contains(scripts, "default.lua") {
		t.Errorf("scripts table: got %q, want default.lua", scripts)
	}
	if follower := text("#follower"); !strings.Contains(follower, "running") {
		t.Errorf("follower table: got %q, want it running", follower)
	}

	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("chromium: screenshot: %v", err)
	}
	shot := filepath.Join(t.TempDir(), "status.png")
	if err := os.WriteFile(shot, png, 0o644); err != nil {
		t.Fatal(err)
	}
	if len(png) < 10<<10 {
		t.Errorf("screenshot: got %d bytes, want a page's worth", len(png))
	}
	t.Logf("screenshot: %s (%d bytes)", shot, len(png))
	if *keepShot != "" {
		if err := os.WriteFile(filepath.Join(*keepShot, "status.png"), png, 0o644); err != nil {
			t.Error(err)
		}
	}
}

// TestAdminOnlyReads: the admin endpoints answer GET and HEAD, and refuse
// every other method with 405.
func TestAdminOnlyReads(t *testing.T) {
	t.Parallel()
	m := testenvShared(t)
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr})
	admin := httptest.NewServer(p.srv.AdminHandler())
	defer admin.Close()
	for _, path := range []string{"/healthz", "/metrics", "/status.json", "/", "/debug/pprof/heap"} {
		for _, method := range []string{"GET", "HEAD", "POST", "PUT", "DELETE", "TRACE"} {
			req, _ := http.NewRequest(method, admin.URL+path, nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("%s %s: %v", method, path, err)
			}
			resp.Body.Close()
			want := http.StatusOK
			if method != "GET" && method != "HEAD" {
				want = http.StatusMethodNotAllowed
			}
			if resp.StatusCode != want {
				t.Errorf("%s %s: %d, want %d", method, path, resp.StatusCode, want)
			}
		}
	}
}
