package main

import (
	"fmt"
	"io"
	"strings"
)

// check is one measured value set against a target's threshold.
type check struct {
	what string // the case, such as "text 8 thr"
	got  string
	met  bool
}

// target is one row of the table of performance targets.
type target struct {
	name, threshold string
	eval            func(rs results) []check
}

// targets are the performance targets, in order. None is a pass/fail test:
// the report marks each as met or not.
var targets = []target{
	{"Passthrough", "≥ 0.9× the plain relay", func(rs results) []check {
		return ratioChecks(rs, "point", "passthrough", "relay", "8 thr", 0.9)
	}},
	{"L1 hits, point select, 8 threads", "≥ 1.0× MariaDB direct (moonshot 1.5×)", func(rs results) []check {
		cs := ratioChecks(rs, "point", "l1", "direct", "8 thr", 1.0)
		for i := range cs {
			if x, ok := ratioOf(rs, "point", cs[i].what, "l1", "direct"); ok && x >= 1.5 {
				cs[i].got += " (moonshot met)"
			}
		}
		return cs
	}},
	{"L1 hits, point select, 1 thread", "≥ 1.2× MariaDB direct", func(rs results) []check {
		return ratioChecks(rs, "point", "l1", "direct", "1 thr", 1.2)
	}},
	{"memcached-only hits", "≥ 0.8× MariaDB direct", func(rs results) []check {
		return ratioChecks(rs, "point", "memcached", "direct", "", 0.8)
	}},
	{"Against MariaDB's query cache (L1 hits)", "≥ 1.3×", func(rs results) []check {
		return ratioChecks(rs, "point", "l1", "query-cache", "8 thr", 1.3)
	}},
	{"Heavy-query hits (L1)", "≥ 100× MariaDB direct", func(rs results) []check {
		return ratioChecks(rs, "heavy", "l1", "direct", "", 100)
	}},
	{"2 MiB documents, L1 hits", "≥ 3× MariaDB direct", func(rs results) []check {
		return ratioChecks(rs, "json", "l1", "direct", "2MiB", 3)
	}},
	{"512 connections (L1 hits)", "p99 ≤ 10 ms, 0 errors", func(rs results) []check {
		var cs []check
		for _, r := range rs.recs {
			if r.Scenario == "conns" && r.Target == "l1" {
				cs = append(cs, check{r.Case, fmt.Sprintf("p99 %.2f ms, p99.9 %.2f ms, max %.2f ms, %d errors",
					r.Stats.P99, r.Stats.P999, r.Stats.Max, r.Stats.Errors), !r.Failed && r.Stats.P99 <= 10 && r.Stats.Errors == 0})
			}
		}
		return cs
	}},
	{"Read/write mix", "0 stale reads", func(rs results) []check {
		var cs []check
		for _, r := range rs.recs {
			if v, ok := r.Stats.Extra["stale_reads"]; ok && r.Scenario == "mix" && r.Target != r.Baseline {
				cs = append(cs, check{r.Case, fmt.Sprintf("%.0f of %.0f checked reads", v, r.Stats.Extra["checked_reads"]), !r.Failed && v == 0})
			}
		}
		return cs
	}},
	{"Stampede", "1 backend execution", func(rs results) []check {
		var cs []check
		for _, r := range rs.recs {
			if v, ok := r.Stats.Extra["executions"]; ok && r.Scenario == "stampede" && r.Target == "l1" {
				cs = append(cs, check{r.Case, fmt.Sprintf("%.0f executions", v), !r.Failed && v == 1 && r.Stats.Errors == 0})
			}
		}
		return cs
	}},
	{"Fleet hits, bounded, loopback", "≥ 1.5× MariaDB direct", func(rs results) []check {
		return ratioChecks(rs, "fleet", "bounded", "direct", "loopback", 1.5)
	}},
	{"Fleet hits, bounded, across a network", "≥ 4× MariaDB direct", func(rs results) []check {
		return ratioChecks(rs, "fleet", "bounded", "direct", "network", 4)
	}},
	{"Fleet hits, strict, loopback", "≥ 0.8× MariaDB direct", func(rs results) []check {
		return ratioChecks(rs, "fleet", "strict", "direct", "loopback", 0.8)
	}},
	{"Staleness of direct writes (bounded)", "p99 ≤ 20 ms, max ≤ --max-staleness (1 s), none unseen", func(rs results) []check {
		var cs []check
		for _, r := range rs.recs {
			if r.Scenario != "staleness" {
				continue
			}
			if r.Failed {
				cs = append(cs, check{r.Case, "FAILED", false})
				continue
			}
			ok := r.Stats.P99 <= 20 && r.Stats.Max <= 1000 && r.Stats.Extra["never_seen"] == 0 && r.Stats.Ops > 0
			cs = append(cs, check{r.Case, fmt.Sprintf("p50 %.2f ms, p99 %.2f ms, max %.2f ms, %.0f unseen", r.Stats.P50, r.Stats.P99, r.Stats.Max, r.Stats.Extra["never_seen"]), ok})
		}
		return cs
	}},
	{"Read/write, oltp_read_write 8 threads", "≥ 0.9× passthrough", func(rs results) []check {
		return ratioChecks(rs, "rw", "caching", "passthrough", "oltp_read_write", 0.9)
	}},
	{"Low-repeat reads, cold cache", "≥ 0.95× passthrough", func(rs results) []check {
		return ratioChecks(rs, "rw", "cold", "passthrough", "uniform", 0.95)
	}},
	{"kv at 32 clients", "≥ 0.5× direct memcached", func(rs results) []check {
		var cs []check
		for _, r := range rs.recs {
			if r.Scenario == "kv" && strings.HasPrefix(r.Case, "32 ") && r.Target != r.Baseline {
				if r.Failed {
					cs = append(cs, check{r.Case + ", " + r.Target, "FAILED", false})
					continue
				}
				x := rs.ratio(r)
				cs = append(cs, check{r.Case + ", " + r.Target, fmtRatio(x), x >= 0.5})
			}
		}
		return cs
	}},
}

// ratioChecks compares target's ops/s with base's in every case of
// scenario whose name contains filter.
func ratioChecks(rs results, scenario, tgt, base, filter string, threshold float64) []check {
	var cs []check
	for _, r := range rs.recs {
		if r.Scenario != scenario || r.Target != tgt || !strings.Contains(r.Case, filter) {
			continue
		}
		if r.Failed {
			cs = append(cs, check{r.Case, "FAILED", false})
			continue
		}
		x, ok := ratioOf(rs, scenario, r.Case, tgt, base)
		if !ok {
			cs = append(cs, check{r.Case, "not measured", false})
			continue
		}
		cs = append(cs, check{r.Case, fmtRatio(x), x >= threshold})
	}
	return cs
}

func ratioOf(rs results, scenario, cs, tgt, base string) (float64, bool) {
	a, ok1 := rs.find(scenario, cs, tgt)
	b, ok2 := rs.find(scenario, cs, base)
	if !ok1 || !ok2 || b.Stats.OpsPerSec == 0 {
		return 0, false
	}
	return a.Stats.OpsPerSec / b.Stats.OpsPerSec, true
}

func writeTargets(w io.Writer, rs results) {
	fmt.Fprintln(w, "| target | threshold | measured | met |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, t := range targets {
		cs := t.eval(rs)
		if len(cs) == 0 {
			fmt.Fprintf(w, "| %s | %s | not run | - |\n", t.name, t.threshold)
			continue
		}
		var got []string
		met := 0
		for _, c := range cs {
			mark := "✗"
			if c.met {
				mark = "✓"
				met++
			}
			got = append(got, fmt.Sprintf("%s: %s %s", c.what, c.got, mark))
		}
		verdict := "no"
		switch met {
		case len(cs):
			verdict = "**yes**"
		case 0:
		default:
			verdict = fmt.Sprintf("partly (%d of %d)", met, len(cs))
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", t.name, t.threshold, strings.Join(got, "<br>"), verdict)
	}
}
