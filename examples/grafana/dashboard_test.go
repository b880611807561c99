package grafana

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/mycached/mycached/mysqlproxy"
)

// exported returns the metric families a mycached server serves at
// /metrics, by name, with their types. The server needs no backend or
// memcached for that.
func exported(t *testing.T) map[string]string {
	t.Helper()
	srv, err := mysqlproxy.NewServer(mysqlproxy.Config{
		Backend: "127.0.0.1:1",
		Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	defer srv.Close()
	rec := httptest.NewRecorder()
	srv.AdminHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("GET /metrics: status %d", rec.Code)
	}
	types := map[string]string{}
	for _, l := range strings.Split(rec.Body.String(), "\n") {
		if rest, ok := strings.CutPrefix(l, "# TYPE "); ok {
			name, typ, _ := strings.Cut(rest, " ")
			types[name] = typ
		}
	}
	return types
}

// exprs returns every PromQL expression in the dashboard: the panels'
// targets and the template variables' queries, keyed by where they are.
func exprs(t *testing.T, dash map[string]any) map[string]string {
	t.Helper()
	out := map[string]string{}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			if title, ok := v["title"].(string); ok {
				path += "/" + title
			}
			if e, ok := v["expr"].(string); ok {
				out[path+"/"+v["refId"].(string)] = e
			}
			if name, ok := v["name"].(string); ok {
				if def, ok := v["definition"].(string); ok {
					out["$"+name] = def
				}
			}
			for _, c := range v {
				walk(path, c)
			}
		case []any:
			for _, c := range v {
				walk(path, c)
			}
		}
	}
	walk("", dash)
	return out
}

var (
	strLit    = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	matchers  = regexp.MustCompile(`\{[^}]*\}`)
	ranges    = regexp.MustCompile(`\[[^\]]*\]`)
	grouping  = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	templated = regexp.MustCompile(`\$\w+`)
	// labelArg is label_values' second argument, a label name.
	labelArg = regexp.MustCompile(`,\s*[a-zA-Z_]\w*\s*\)`)
	// token is a number or duration (skipped whole, so that 5m is no
	// metric m), or a name with the parenthesis of a call after it.
	token = regexp.MustCompile(`[0-9][0-9a-zA-Z_.]*|[a-zA-Z_:][a-zA-Z0-9_:]*\s*\(?`)
)

// keywords are PromQL words that are not followed by a parenthesis.
var keywords = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true}

// metricNames returns the metric names in a PromQL expression (or a
// Grafana label_values query): identifiers that are not functions,
// keywords, label names or inside strings, label matchers and ranges.
func metricNames(expr string) []string {
	e := strLit.ReplaceAllString(expr, `""`)
	e = matchers.ReplaceAllString(e, "")
	e = ranges.ReplaceAllString(e, "")
	e = grouping.ReplaceAllString(e, "")
	e = templated.ReplaceAllString(e, "")
	// label_values(metric, label): the second argument is a label.
	e = labelArg.ReplaceAllString(e, ")")
	var names []string
	for _, m := range token.FindAllString(e, -1) {
		m = strings.TrimSpace(m)
		if m[0] >= '0' && m[0] <= '9' || strings.HasSuffix(m, "(") || keywords[m] {
			continue
		}
		names = append(names, m)
	}
	return names
}

func TestMetricNames(t *testing.T) {
	tests := []struct {
		expr string
		want string
	}{
		{`sum by (tier) (rate(a_total{instance=~"$instance"}[$__rate_interval])) / on() group_left() (sum(b) + c)`, "a_total b c"},
		{`histogram_quantile(0.99, sum by (le) (rate(h_bucket{x="y{z}"}[5m]))) > 0`, "h_bucket"},
		{`label_values(mycached_sessions, instance)`, "mycached_sessions"},
		{`x unless y offset 5m`, "x y"},
	}
	for _, tt := range tests {
		if got := strings.Join(metricNames(tt.expr), " "); got != tt.want {
			t.Errorf("metricNames(%q): got %q, want %q", tt.expr, got, tt.want)
		}
	}
}

// TestDashboard: every expression of the dashboard names only metrics
// that mycached serves (a histogram's _bucket, _sum and _count included),
// and the dashboard shows what it promises.
func TestDashboard(t *testing.T) {
	b, err := os.ReadFile("mycached.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash map[string]any
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("mycached.json: %v", err)
	}
	types := exported(t)
	all := exprs(t, dash)
	if len(all) == 0 {
		t.Fatal("mycached.json has no expressions")
	}
	used := map[string]bool{}
	for where, e := range all {
		names := metricNames(e)
		if len(names) == 0 {
			t.Errorf("%s: %q names no metric", where, e)
		}
		for _, n := range names {
			used[n] = true
			family := n
			for _, suf := range []string{"_bucket", "_sum", "_count"} {
				if base, ok := strings.CutSuffix(n, suf); ok && types[base] == "histogram" {
					family = base
				}
			}
			if _, ok := types[family]; !ok {
				t.Errorf("%s: %s is not served by mycached (in %q)", where, n, e)
			}
		}
	}
	for _, want := range []string{
		"mycached_cache_hits_total", "mycached_cache_misses_total", "mycached_hit_latency_seconds_bucket",
		"mycached_miss_latency_seconds_bucket", "mycached_memcached_errors", "mycached_invalidations_total",
		"mycached_pending_bumps", "mycached_binlog_lag_seconds", "mycached_l1_bytes",
		"process_resident_memory_bytes", "go_memstats_heap_inuse_bytes",
	} {
		if !used[want] {
			t.Errorf("mycached.json does not chart %s", want)
		}
	}
	if t.Failed() {
		var names []string
		for n := range types {
			names = append(names, n)
		}
		sort.Strings(names)
		t.Logf("served: %s", strings.Join(names, " "))
	}
}
