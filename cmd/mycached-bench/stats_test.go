package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestStatsOf(t *testing.T) {
	var lats []time.Duration
	for i := 1000; i >= 1; i-- { // unsorted on purpose
		lats = append(lats, time.Duration(i)*time.Microsecond)
	}
	st := statsOf(lats, 2*time.Second, 3)
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"ops/s", st.OpsPerSec, 500},
		{"p50", st.P50, 0.5},
		{"p95", st.P95, 0.95},
		{"p99", st.P99, 0.99},
		{"p99.9", st.P999, 0.999},
		{"max", st.Max, 1},
	} {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}
	var sum int64
	for _, n := range st.Hist {
		sum += n
	}
	if sum != 1000 || st.Errors != 3 {
		t.Errorf("histogram total %d, errors %d: want 1000 and 3", sum, st.Errors)
	}
	// 1..1000 µs: 10 at or below 10 µs, 100 at or below 100 µs.
	if got := st.Hist[bucketOf(0.01)]; got != 10 {
		t.Errorf("bucket <= 10 us: got %d, want 10", got)
	}
}

func TestBucketOf(t *testing.T) {
	for _, c := range []struct {
		ms   float64
		want int
	}{
		{0, 0},
		{0.01, 0},
		{0.011, 1},
		{1, 6},
		{10000, len(histBoundsMs) - 1},
		{20000, len(histBoundsMs)},
	} {
		if got := bucketOf(c.ms); got != c.want {
			t.Errorf("bucketOf(%v): got %d, want %d", c.ms, got, c.want)
		}
	}
}

func TestWriteHist(t *testing.T) {
	hist := make([]int64, len(histBoundsMs)+1)
	hist[2], hist[4] = 100, 1
	var b strings.Builder
	writeHist(&b, hist, "")
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("got %d lines, want 3 (first to last non-empty bucket):\n%s", len(lines), b.String())
	}
	if !strings.Contains(lines[0], strings.Repeat("#", 40)) || !strings.Contains(lines[2], "|#") || strings.Contains(lines[1], "#") {
		t.Errorf("bars not scaled to the fullest bucket:\n%s", b.String())
	}
}

func TestContainsPlaceholder(t *testing.T) {
	for _, c := range []struct {
		q    string
		want bool
	}{
		{"SELECT c FROM t WHERE id = ?", true},
		{"SELECT '?' FROM t", false},
		{"SELECT \"a?\", `b?` FROM t WHERE x = ?", true},
		{"SELECT 1", false},
	} {
		if got := containsPlaceholder(c.q); got != c.want {
			t.Errorf("containsPlaceholder(%q): got %v, want %v", c.q, got, c.want)
		}
	}
}

// sysbenchOutput is the shape of sysbench 1.0.20's report with
// --histogram=on, shortened.
const sysbenchOutput = `
Latency histogram (values are in milliseconds)
       value  ------------- distribution ------------- count
       0.011 |****************************************  900
       0.050 |****                                      90
       1.000 |*                                         9
      12.000 |*                                         1

SQL statistics:
    queries performed:
        read:                            1000
    transactions:                        1000   (500.00 per sec.)
    queries:                             2000   (1000.00 per sec.)
    ignored errors:                      2      (1.00 per sec.)

General statistics:
    total time:                          2.0005s

Latency (ms):
         min:                                    0.01
         max:                                   12.34
`

func TestParseSysbench(t *testing.T) {
	st, err := parseSysbench(strings.NewReader(sysbenchOutput))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"ops", float64(st.Ops), 1000},
		{"ops/s", st.OpsPerSec, 500},
		{"queries/s", st.Extra["queries_per_sec"], 1000},
		{"errors", float64(st.Errors), 2},
		{"seconds", st.Seconds, 2.0005},
		{"p50", st.P50, 0.011},
		{"p95", st.P95, 0.05},
		{"p99", st.P99, 0.05},
		{"p99.9", st.P999, 1},
		{"max", st.Max, 12.34},
	} {
		if c.got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}
	if _, err := parseSysbench(strings.NewReader("FATAL: oops\n")); err != errNoSysbenchReport {
		t.Errorf("no report: got %v, want errNoSysbenchReport", err)
	}
}

func TestAddCacheDeltas(t *testing.T) {
	var st Stats
	before := parseCounters("Hits_l1=10 Hits_memcached=5 Misses=5 Invalidations=100")
	after := parseCounters("Hits_l1=80 Hits_memcached=15 Misses=25 Invalidations=300")
	addCacheDeltas(&st, before, after, 2*time.Second)
	if got := st.Extra["hit_ratio"]; got != 0.8 {
		t.Errorf("hit ratio: got %v, want 0.8", got)
	}
	if got := st.Extra["invalidations_per_sec"]; got != 100 {
		t.Errorf("invalidations/s: got %v, want 100", got)
	}
}

func TestReport(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "results.jsonl")
	lines := []string{
		`{"scenario":"point","title":"1. point","case":"text 8 thr","target":"direct","baseline":"direct","cpu":{"mariadbd":1},"stats":{"ops":1000,"ops_per_sec":100,"p99_ms":1,"hist":[0,1000]}}`,
		`{"scenario":"point","title":"1. point","case":"text 8 thr","target":"l1","baseline":"direct","cpu":{"mycached":1},"stats":{"ops":2000,"ops_per_sec":250,"p99_ms":0.5,"hist":[2000]}}`,
		`{"scenario":"stampede","title":"6. stampede","case":"64 clients","target":"l1","baseline":"direct","cpu":{},"stats":{"ops":64,"ops_per_sec":64,"extra":{"executions":1}}}`,
		`{"scenario":"conns","title":"5. conns","case":"512 conns","target":"l1","baseline":"direct","failed":true,"error":"boom","cpu":{},"stats":{}}`,
	}
	if err := os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, png := filepath.Join(dir, "report.md"), filepath.Join(dir, "report.png")
	var stdout, stderr strings.Builder
	if err := runReport([]string{"-in", in, "-out", out, "-png", png}, &stdout, &stderr); err != nil {
		t.Fatalf("report: %v (%s)", err, stderr.String())
	}
	md, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| L1 hits, point select, 8 threads | ≥ 1.0× MariaDB direct (moonshot 1.5×) | text 8 thr: 2.50x (moonshot met) ✓ | **yes** |",
		"| Stampede | 1 backend execution | 64 clients: 1 executions ✓ | **yes** |",
		"| kv at 32 clients | ≥ 0.5× direct memcached | not run | - |",
		"| 5. conns | 512 conns | l1 | FAILED |",
		"| 1. point | text 8 thr | l1 | 250 |",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	if fi, err := os.Stat(png); err != nil || fi.Size() == 0 {
		t.Errorf("chart: got %v, want a non-empty PNG", err)
	}
}
