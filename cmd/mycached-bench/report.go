package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// record is one measurement as examples/bench/bench.sh writes it: one
// JSON object per line of its results file.
type record struct {
	// Scenario is a short id: point, heavy, json, mix, conns, stampede, kv.
	Scenario string `json:"scenario"`
	// Title names the scenario in the report.
	Title string `json:"title"`
	// Case tells the measurements of one scenario apart, such as
	// "text 8 thr" or "2MiB".
	Case string `json:"case"`
	// Target is what was measured: direct, query-cache, relay,
	// passthrough, l1, memcached, mycached, mycached-kv, memcached-get.
	Target string `json:"target"`
	// Baseline is the target of the same case that ratios are taken to.
	Baseline string `json:"baseline"`
	// Failed is set, with Error, when the load command failed.
	Failed bool   `json:"failed"`
	Error  string `json:"error,omitempty"`
	// CPU is the CPU seconds (user+system) each kind of process used
	// during the measurement.
	CPU   map[string]float64 `json:"cpu"`
	Stats Stats              `json:"stats"`
}

// cpuKinds are the processes whose CPU the report shows, in order.
var cpuKinds = []string{"mycached", "mariadbd", "memcached", "relay"}

// runReport reads the results file and writes the Markdown report and the
// PNG chart.
func runReport(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	in := fs.String("in", "", "results file, one JSON record per line")
	out := fs.String("out", "bench-out/report.md", "Markdown report to write")
	png := fs.String("png", "bench-out/report.png", "PNG chart to write; empty: none")
	header := fs.String("header", "", "file of Markdown to put under the title (run conditions)")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if *in == "" {
		fmt.Fprintln(stderr, "report: -in is required")
		return errUsage
	}
	recs, err := readRecords(*in)
	if err != nil {
		return err
	}
	var hdr []byte
	if *header != "" {
		if hdr, err = os.ReadFile(*header); err != nil {
			return err
		}
	}
	var b strings.Builder
	writeReport(&b, recs, string(hdr), *png)
	if err := os.WriteFile(*out, []byte(b.String()), 0o644); err != nil {
		return err
	}
	if *png != "" {
		if err := writeChart(*png, recs); err != nil {
			return fmt.Errorf("report: chart: %w", err)
		}
	}
	_, err = io.WriteString(stdout, b.String())
	return err
}

func readRecords(path string) ([]record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var recs []record
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var r record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("report: %s:%d: %w", path, n, err)
		}
		recs = append(recs, r)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, errors.New("report: no records in " + path)
	}
	return recs, nil
}

// results indexes records by scenario, case and target.
type results struct {
	recs []record
}

func (rs results) find(scenario, cs, target string) (record, bool) {
	for _, r := range rs.recs {
		if r.Scenario == scenario && r.Case == cs && r.Target == target && !r.Failed {
			return r, true
		}
	}
	return record{}, false
}

// ratio is r's ops/s over its baseline's in the same case, or 0.
func (rs results) ratio(r record) float64 {
	if r.Failed || r.Baseline == "" {
		return 0
	}
	b, ok := rs.find(r.Scenario, r.Case, r.Baseline)
	if !ok || b.Stats.OpsPerSec == 0 {
		return 0
	}
	return r.Stats.OpsPerSec / b.Stats.OpsPerSec
}

func writeReport(w io.Writer, recs []record, header, png string) {
	rs := results{recs}
	fmt.Fprintln(w, "# make bench")
	fmt.Fprintln(w)
	if header != "" {
		fmt.Fprintln(w, strings.TrimSpace(header))
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "## Targets")
	fmt.Fprintln(w)
	writeTargets(w, rs)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "## Every scenario and target")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Latencies in ms. CPU is the seconds of user+system time each process used during the measurement;")
	fmt.Fprintln(w, "CPU/op adds mycached, mariadbd, memcached and the relay and divides by the operations.")
	fmt.Fprintln(w)
	writeResults(w, rs)
	if png != "" {
		fmt.Fprintln(w)
		fmt.Fprintf(w, "![Throughput and p99 per scenario](%s)\n", filepath.Base(png))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "## Response-time histograms")
	writeDetails(w, rs)
}

func writeResults(w io.Writer, rs results) {
	fmt.Fprintln(w, "| scenario | case | target | ops/s | p50 | p95 | p99 | p99.9 | max | errors | vs baseline | CPU s mycached / mariadbd / memcached / relay | CPU µs/op | notes |")
	fmt.Fprintln(w, "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---|")
	for _, r := range rs.recs {
		if r.Failed {
			fmt.Fprintf(w, "| %s | %s | %s | FAILED | | | | | | | | | | %s |\n", r.Title, r.Case, r.Target, mdEscape(clip(r.Error, 240)))
			continue
		}
		s := r.Stats
		vs := "-"
		if r.Target == r.Baseline {
			vs = "baseline"
		} else if x := rs.ratio(r); x > 0 {
			vs = fmtRatio(x)
		}
		var cpu []string
		var total float64
		for _, k := range cpuKinds {
			cpu = append(cpu, fmt.Sprintf("%.2f", r.CPU[k]))
			total += r.CPU[k]
		}
		perOp := "-"
		if s.Ops > 0 {
			perOp = fmt.Sprintf("%.0f", total/float64(s.Ops)*1e6)
		}
		p95, p999, pmax := fmtMs3(s.P95), fmtMs3(s.P999), fmtMs3(s.Max)
		if s.Extra["partial_latency"] == 1 {
			p95, p999, pmax = "n/a", "n/a", "n/a"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %.3f | %s | %.3f | %s | %s | %d | %s | %s | %s | %s |\n",
			r.Title, r.Case, r.Target, fmtOps(s.OpsPerSec), s.P50, p95, s.P99, p999, pmax, s.Errors, vs,
			strings.Join(cpu, " / "), perOp, notes(s))
	}
}

// notes prints the extra numbers a measurement has.
func notes(s Stats) string {
	var n []string
	if v, ok := s.Extra["hit_ratio"]; ok {
		n = append(n, fmt.Sprintf("hit ratio %.1f%%", 100*v))
	}
	if v := s.Extra["invalidations_per_sec"]; v > 0 {
		n = append(n, fmt.Sprintf("%.0f invalidations/s", v))
	}
	if v, ok := s.Extra["queries_per_sec"]; ok && v != s.OpsPerSec {
		n = append(n, fmt.Sprintf("%.0f queries/s", v))
	}
	if v, ok := s.Extra["stale_reads"]; ok {
		n = append(n, fmt.Sprintf("stale reads %.0f of %.0f checked", v, s.Extra["checked_reads"]))
	}
	if v, ok := s.Extra["writes"]; ok {
		n = append(n, fmt.Sprintf("%.0f direct writes seen through %.0f sidecars; never seen %.0f; read errors %.0f", v,
			s.Extra["sidecars"], s.Extra["never_seen"], s.Extra["read_errors"]))
	}
	if v, ok := s.Extra["executions"]; ok {
		n = append(n, fmt.Sprintf("backend executions %.0f (Com_select delta %.0f, idle-window overhead %.0f)", v,
			s.Extra["com_select_delta"], s.Extra["com_select_idle"]))
	}
	return strings.Join(n, "; ")
}

func writeDetails(w io.Writer, rs results) {
	title := ""
	for _, r := range rs.recs {
		if r.Title != title {
			title = r.Title
			fmt.Fprintf(w, "\n### %s\n", title)
		}
		fmt.Fprintf(w, "\n%s, %s", r.Case, r.Target)
		if r.Failed {
			fmt.Fprintf(w, ": FAILED: %s\n", r.Error)
			continue
		}
		if x := rs.ratio(r); x > 0 && r.Target != r.Baseline {
			fmt.Fprintf(w, " (%s %s)", fmtRatio(x), r.Baseline)
		}
		fmt.Fprintf(w, ":\n\n```\n%s\n", strings.TrimSpace(summaryLine(r.Stats)))
		var cpu []string
		for _, k := range cpuKinds {
			cpu = append(cpu, fmt.Sprintf("%s %.2f s", k, r.CPU[k]))
		}
		fmt.Fprintf(w, "CPU: %s\n", strings.Join(cpu, ", "))
		if n := notes(r.Stats); n != "" {
			fmt.Fprintln(w, n)
		}
		if r.Stats.Extra["partial_latency"] == 1 {
			fmt.Fprintln(w, "(this command reports only p50 and p99: no histogram)")
		} else {
			writeHist(w, r.Stats.Hist, "")
		}
		fmt.Fprintln(w, "```")
	}
}

func fmtMs3(ms float64) string { return fmt.Sprintf("%.3f", ms) }

func fmtRatio(x float64) string {
	if x >= 10 {
		return fmt.Sprintf("%.0fx", x)
	}
	return fmt.Sprintf("%.2fx", x)
}

func fmtOps(x float64) string {
	if x >= 100 {
		return fmt.Sprintf("%.0f", x)
	}
	return fmt.Sprintf("%.1f", x)
}

func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

// clip shortens s to n bytes, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
