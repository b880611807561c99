package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// family is one metric family as /metrics shows it.
type family struct {
	typ, help string
	labels    map[string]bool // label names on its samples, le aside
}

// parseExposition reads the Prometheus text format into families by name.
func parseExposition(t *testing.T, body string) map[string]*family {
	t.Helper()
	fams := map[string]*family{}
	get := func(name string) *family {
		f := fams[name]
		if f == nil {
			f = &family{labels: map[string]bool{}}
			fams[name] = f
		}
		return f
	}
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "# HELP "):
			name, help, _ := strings.Cut(strings.TrimPrefix(l, "# HELP "), " ")
			get(name).help = help
		case strings.HasPrefix(l, "# TYPE "):
			name, typ, _ := strings.Cut(strings.TrimPrefix(l, "# TYPE "), " ")
			get(name).typ = typ
		case l == "" || strings.HasPrefix(l, "#"):
		default:
			name, rest, hasLabels := strings.Cut(l, "{")
			if !hasLabels {
				continue
			}
			f := fams[strings.TrimSuffix(name, "_bucket")]
			if f == nil {
				t.Fatalf("/metrics: sample before its # TYPE: %q", l)
			}
			for _, pair := range strings.Split(rest[:strings.Index(rest, "}")], ",") {
				if k, _, _ := strings.Cut(pair, "="); k != "le" {
					f.labels[k] = true
				}
			}
		}
	}
	return fams
}

// readmeMetrics returns the metrics table of README.md by name.
func readmeMetrics(t *testing.T) map[string]*family {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*family{}
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(l, "| `mycached_") {
			continue
		}
		cells := strings.Split(strings.Trim(l, "| "), " | ")
		if len(cells) != 4 {
			t.Fatalf("README.md: metrics row %q: got %d cells, want 4", l, len(cells))
		}
		f := &family{typ: cells[1], help: cells[3], labels: map[string]bool{}}
		if label := strings.Trim(cells[2], "` "); label != "" {
			f.labels[label] = true
		}
		out[strings.Trim(cells[0], "`")] = f
	}
	if len(out) == 0 {
		t.Fatal("README.md has no metrics table")
	}
	return out
}

// scrapeDaemon starts mycached with --admin on a free loopback port (no
// backend or memcached is needed to serve /metrics), fetches /metrics once
// it answers, and stops the daemon.
func scrapeDaemon(t *testing.T, bin string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	admin := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, "--listen", "127.0.0.1:0", "--admin", admin, "--backend", "127.0.0.1:1")
	var logs strings.Builder
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("mycached log:\n%s", logs.String())
		}
	}()
	var lastErr error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get("http://" + admin + "/metrics")
		if err != nil {
			lastErr = err
			continue
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /metrics: status %d, %v", resp.StatusCode, err)
		}
		return string(b)
	}
	t.Fatalf("GET /metrics: mycached did not answer: %v", lastErr)
	return ""
}

// TestMetricsEndpoint: a running daemon serves every metric README.md
// documents, with its type, label and help, and the Go runtime and process
// metrics next to them.
func TestMetricsEndpoint(t *testing.T) {
	got := parseExposition(t, scrapeDaemon(t, buildBinary(t)))
	want := readmeMetrics(t)
	want["go_goroutines"] = nil
	want["process_resident_memory_bytes"] = nil
	for name, w := range want {
		g, ok := got[name]
		switch {
		case !ok:
			t.Errorf("/metrics lacks %s", name)
		case w == nil:
		case g.typ != w.typ:
			t.Errorf("%s: got type %s, want %s", name, g.typ, w.typ)
		case g.help != w.help:
			t.Errorf("%s: got help %q, want %q", name, g.help, w.help)
		case strings.Join(keys(g.labels), ",") != strings.Join(keys(w.labels), ","):
			t.Errorf("%s: got labels %v, want %v", name, keys(g.labels), keys(w.labels))
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok && strings.HasPrefix(name, "mycached_") {
			t.Errorf("/metrics serves %s, which README.md does not list", name)
		}
	}
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestReadmeFlagsMatchHelp: the README's list of flags, which says that
// --help prints it, is what --help prints.
func TestReadmeFlagsMatchHelp(t *testing.T) {
	var b strings.Builder
	writeUsage(&b)
	help := b.String()
	start := strings.Index(help, "Listeners:\n")
	end := strings.Index(help, "  --config FILE")
	if start < 0 || end < 0 {
		t.Fatalf("--help has no list of flags:\n%s", help)
	}
	end += strings.IndexByte(help[end:], '\n')
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if want := "```\n" + help[start:end] + "\n```"; !strings.Contains(string(readme), want) {
		t.Errorf("README.md's list of flags is not what --help prints; it should be:\n%s", want)
	}
}
