package peersuites_test

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// modes are the targets run.sh compares: MariaDB itself, mycached with
// its cache (L1 and memcached, default policy), and mycached --passthrough.
var modes = []string{"direct", "mycached", "passthrough"}

// listed reads a list file: lines "SUITE NAME ..." with # comments, and
// returns the names listed for each suite.
func listed(t *testing.T, file string) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string][]string{}
	for _, line := range strings.Split(string(b), "\n") {
		line, _, _ = strings.Cut(line, "#")
		if f := strings.Fields(line); len(f) >= 2 {
			names[f[0]] = append(names[f[0]], f[1])
		}
	}
	return names
}

// readResults reads one of run.sh's "test result" files.
func readResults(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("run.sh wrote no results: %v", err)
	}
	defer f.Close()
	got := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if name, res, ok := strings.Cut(sc.Text(), " "); ok {
			got[name] = res
		}
	}
	return got
}

// TestPeerSuitesSlice runs a slice of both suites with run.sh, on MariaDB
// directly and through mycached with and without its cache: the mtr tests
// slice.txt lists, and the driver's whole suite but its slow tests
// (driver-skip in slice.txt) and the known differences
// (known-differences.txt). Every mtr test must pass on every target (a
// skip or a missing result fails too, so that a machine without the
// suites cannot pass), and so must every driver test that passes directly.
func TestPeerSuitesSlice(t *testing.T) {
	slice := listed(t, "slice.txt")
	known := listed(t, "known-differences.txt")
	mtrTests := slice["mtr"]
	driverSkip := append(slice["driver-skip"], known["driver"]...)
	if len(mtrTests) == 0 {
		t.Fatal("slice.txt lists no mtr tests")
	}
	if _, err := os.Stat("/usr/share/mysql/mysql-test/mariadb-test-run.pl"); err != nil {
		t.Fatalf("mariadb-test-run.pl not found; run `make deps` as root (mariadb-test): %v", err)
	}
	for _, tool := range []string{"go", "perl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found on PATH", tool)
		}
	}
	tmp := t.TempDir()
	mycached := filepath.Join(tmp, "mycached")
	build := exec.Command("go", "build", "-o", mycached, "../../cmd/mycached")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	out := filepath.Join(tmp, "out")
	ctx, cancel := context.WithTimeout(context.Background(), 14*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "./run.sh", "all")
	cmd.Env = append(os.Environ(),
		"MYCACHED="+mycached,
		"PEER_OUT="+out,
		"PEER_MODES="+strings.Join(modes, " "),
		"MTR_TESTS="+strings.Join(mtrTests, " "),
		"DRIVER_SKIP="+strings.Join(driverSkip, "|"),
		"TMPDIR="+tmp,
	)
	// SIGTERM, not SIGKILL, so that run.sh's trap stops the servers it
	// started.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	t.Logf("run.sh output:\n%s", buf.String())
	if err != nil {
		t.Errorf("run.sh: %v", err)
	}

	var direct map[string]string // the driver's results on MariaDB itself
	for _, mode := range modes {
		mtr := readResults(t, filepath.Join(out, "mtr-"+mode+".results"))
		for _, name := range mtrTests {
			if got := mtr["main."+strings.TrimPrefix(name, "main.")]; got != "pass" {
				t.Errorf("mtr %s %s: got %q, want pass (log: %s)", mode, name, got, filepath.Join(out, "mtr-"+mode+".log"))
			}
		}
		driver := readResults(t, filepath.Join(out, "driver-"+mode+".results"))
		if mode == "direct" {
			direct = driver
			continue
		}
		for name, res := range direct {
			if res == "pass" && driver[name] != "pass" {
				t.Errorf("driver %s %s: got %q, want pass as directly (log: %s)", mode, name, driver[name], filepath.Join(out, "driver-"+mode+".log"))
			}
		}
	}
	passed := 0
	for _, res := range direct {
		if res == "pass" {
			passed++
		}
	}
	// The driver's tests skip when they cannot reach the server; most of
	// its 160-odd tests must have run.
	if passed < 100 {
		t.Errorf("driver direct: %d tests passed, want at least 100 (log: %s)", passed, filepath.Join(out, "driver-direct.log"))
	}
}
