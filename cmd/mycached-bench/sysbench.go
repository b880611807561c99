package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Lines of sysbench 1.0's report that the sysbench command reads.
var (
	sbHistRow = regexp.MustCompile(`^\s*([0-9.]+)\s+\|\**\s+([0-9]+)\s*$`)
	sbPerSec  = regexp.MustCompile(`^\s*(transactions|queries|ignored errors):\s+([0-9]+)\s+\(([0-9.]+) per sec\.\)`)
	sbLatency = regexp.MustCompile(`^\s*(max|total time):\s+([0-9.]+)s?\s*$`)
)

// errNoSysbenchReport means the input held no sysbench report.
var errNoSysbenchReport = errors.New("mycached-bench: no sysbench report with --histogram=on in the input")

// runSysbench reads the output of `sysbench ... --histogram=on run` from
// stdin and prints it as a Stats object: transactions per second as ops/s
// (one query each for oltp_point_select), and the percentiles from
// sysbench's latency histogram, whose rows are the bucket values in ms.
func runSysbench(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sysbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	before := fs.String("before", "", `SHOW MYCACHED STATUS before the run, as "Hits_l1=N Hits_memcached=N Misses=N Invalidations=N"`)
	after := fs.String("after", "", "the same, after the run")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	st, err := parseSysbench(stdin)
	if err != nil {
		return err
	}
	if *before != "" && *after != "" {
		addCacheDeltas(&st, parseCounters(*before), parseCounters(*after), time.Duration(st.Seconds*float64(time.Second)))
	}
	fmt.Fprintln(stderr, summaryLine(st)+"  "+notes(st))
	return json.NewEncoder(stdout).Encode(st)
}

func parseSysbench(r io.Reader) (Stats, error) {
	type row struct {
		ms float64
		n  int64
	}
	var rows []row
	st := Stats{Hist: make([]int64, len(histBoundsMs)+1), Extra: map[string]float64{}}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if m := sbHistRow.FindStringSubmatch(line); m != nil {
			ms, _ := strconv.ParseFloat(m[1], 64)
			n, _ := strconv.ParseInt(m[2], 10, 64)
			rows = append(rows, row{ms, n})
			st.Hist[bucketOf(ms)] += n
			continue
		}
		if m := sbPerSec.FindStringSubmatch(line); m != nil {
			n, _ := strconv.ParseInt(m[2], 10, 64)
			rate, _ := strconv.ParseFloat(m[3], 64)
			switch m[1] {
			case "transactions":
				st.Ops, st.OpsPerSec = n, rate
			case "queries":
				st.Extra["queries_per_sec"] = rate
			case "ignored errors":
				st.Errors = n
			}
			continue
		}
		if m := sbLatency.FindStringSubmatch(line); m != nil {
			v, _ := strconv.ParseFloat(m[2], 64)
			if m[1] == "max" {
				st.Max = v
			} else {
				st.Seconds = v
			}
		}
	}
	if err := sc.Err(); err != nil {
		return Stats{}, err
	}
	if len(rows) == 0 || st.Ops == 0 {
		return Stats{}, errNoSysbenchReport
	}
	var total int64
	for _, r := range rows {
		total += r.n
	}
	at := func(p float64) float64 {
		want := int64(float64(total)*p/100 + 0.999999)
		var acc int64
		for _, r := range rows {
			if acc += r.n; acc >= want {
				return r.ms
			}
		}
		return rows[len(rows)-1].ms
	}
	st.P50, st.P95, st.P99, st.P999 = at(50), at(95), at(99), at(99.9)
	return st, nil
}

// parseCounters reads "name=value" pairs separated by spaces.
func parseCounters(s string) map[string]float64 {
	m := map[string]float64{}
	for _, f := range strings.Fields(s) {
		name, v, _ := strings.Cut(f, "=")
		if x, err := strconv.ParseFloat(v, 64); err == nil {
			m[name] = x
		}
	}
	return m
}
