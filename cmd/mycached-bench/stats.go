package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"
)

// histBoundsMs are the upper bounds, in milliseconds, of the response-time
// histogram's buckets; the last bucket takes everything above. A 1-2-5
// sequence keeps the bars readable from 10 µs cache hits to multi-second
// aggregates in one scale.
var histBoundsMs = [...]float64{
	0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500,
	1000, 2000, 5000, 10000,
}

// Stats is one measurement's result, printed as one JSON object by the
// load commands and read back by the report command.
type Stats struct {
	Ops       int64   `json:"ops"`
	Seconds   float64 `json:"seconds"`
	OpsPerSec float64 `json:"ops_per_sec"`
	P50       float64 `json:"p50_ms"`
	P95       float64 `json:"p95_ms"`
	P99       float64 `json:"p99_ms"`
	P999      float64 `json:"p999_ms"`
	Max       float64 `json:"max_ms"`
	Errors    int64   `json:"errors"`
	// Hist counts the operations per bucket of histBoundsMs, plus one
	// bucket for everything slower.
	Hist []int64 `json:"hist"`
	// Extra holds what only some commands measure, such as the backend
	// executions of a stampede or the stale reads of a mix.
	Extra map[string]float64 `json:"extra,omitempty"`
}

// statsOf summarizes latencies (in any order; they are sorted in place)
// measured over elapsed.
func statsOf(lats []time.Duration, elapsed time.Duration, errs int64) Stats {
	slices.Sort(lats)
	s := Stats{Ops: int64(len(lats)), Seconds: elapsed.Seconds(), Errors: errs, Hist: make([]int64, len(histBoundsMs)+1)}
	if elapsed > 0 {
		s.OpsPerSec = float64(len(lats)) / elapsed.Seconds()
	}
	if len(lats) == 0 {
		return s
	}
	s.P50, s.P95, s.P99, s.P999 = msf(pctf(lats, 50)), msf(pctf(lats, 95)), msf(pctf(lats, 99)), msf(pctf(lats, 99.9))
	s.Max = msf(lats[len(lats)-1])
	for _, d := range lats {
		s.Hist[bucketOf(msf(d))]++
	}
	return s
}

// pctf returns the p-th percentile of sorted latencies (nearest rank).
func pctf(sorted []time.Duration, p float64) time.Duration {
	i := int(math.Ceil(float64(len(sorted)) * p / 100))
	return sorted[min(max(i-1, 0), len(sorted)-1)]
}

// bucketOf returns the index of the histogram bucket that holds ms.
func bucketOf(ms float64) int {
	for i, b := range histBoundsMs {
		if ms <= b {
			return i
		}
	}
	return len(histBoundsMs)
}

// bucketLabel names bucket i by its upper bound.
func bucketLabel(i int) string {
	if i >= len(histBoundsMs) {
		return fmt.Sprintf("> %s", fmtMs(histBoundsMs[len(histBoundsMs)-1]))
	}
	return "<= " + fmtMs(histBoundsMs[i])
}

// fmtMs prints a bound in the unit that reads best.
func fmtMs(ms float64) string {
	switch {
	case ms < 1:
		return fmt.Sprintf("%g us", ms*1000)
	case ms < 1000:
		return fmt.Sprintf("%g ms", ms)
	default:
		return fmt.Sprintf("%g s", ms/1000)
	}
}

// writeHist prints the histogram as text bars, from the first to the last
// non-empty bucket, each bar scaled to the fullest bucket.
func writeHist(w io.Writer, hist []int64, indent string) {
	first, last := -1, -1
	var peak, total int64
	for i, c := range hist {
		if c > 0 {
			if first < 0 {
				first = i
			}
			last = i
			peak = max(peak, c)
			total += c
		}
	}
	if first < 0 {
		fmt.Fprintf(w, "%s(no operations)\n", indent)
		return
	}
	const width = 40
	for i := first; i <= last; i++ {
		n := int(math.Round(float64(hist[i]) * width / float64(peak)))
		if hist[i] > 0 && n == 0 {
			n = 1
		}
		fmt.Fprintf(w, "%s%-10s |%-*s| %6.2f%% %d\n", indent, bucketLabel(i), width, strings.Repeat("#", n),
			100*float64(hist[i])/float64(total), hist[i])
	}
}

// summaryLine is the one-line human form of s, printed to stderr while a
// run goes on.
func summaryLine(s Stats) string {
	return fmt.Sprintf("%10.1f ops/s  p50 %.3f  p95 %.3f  p99 %.3f  p99.9 %.3f  max %.3f ms  errors %d",
		s.OpsPerSec, s.P50, s.P95, s.P99, s.P999, s.Max, s.Errors)
}
