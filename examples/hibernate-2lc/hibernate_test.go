package hibernate2lc

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// jars are the Debian jars run.sh compiles and runs the application with.
// A missing one fails the test: `make deps` installs them.
var jars = []string{
	"hibernate3", "antlr", "commons-collections3", "dom4j", "geronimo-jpa_2.0_spec",
	"geronimo-jta-1.2-spec", "hibernate-commons-annotations", "javassist", "slf4j-api",
	"slf4j-nop", "mariadb-java-client", "ehcache-core", "hibernate-ehcache",
}

// result is one RESULT line of the application, keyed by field name.
type result map[string]string

func (r result) int(t *testing.T, key string) int {
	t.Helper()
	n, err := strconv.Atoi(r[key])
	if err != nil {
		t.Fatalf("mode %s: field %s=%q is not a number", r["mode"], key, r[key])
	}
	return n
}

// TestHibernateRuns runs run.sh and checks what the README promises: no
// run returns stale data to the server that wrote it, mycached stays
// coherent for a second application server behind its own sidecar, and
// through mycached the read part costs MariaDB at least 80% fewer SELECTs
// than with no cache.
func TestHibernateRuns(t *testing.T) {
	for _, tool := range []string{"java", "javac", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found on PATH; run `make deps` as root (openjdk-17-jdk-headless)", tool)
		}
	}
	for _, j := range jars {
		p := filepath.Join("/usr/share/java", j+".jar")
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s missing; run `make deps` as root (libhibernate3-java libmariadb-java libjavassist-java libehcache-java libslf4j-java)", p)
		}
	}

	reads := "20000"
	if testing.Short() {
		reads = "5000"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "./run.sh")
	cmd.Env = append(os.Environ(), "READS="+reads, "UPDATES=50", "TMPDIR="+t.TempDir())
	// SIGTERM, not SIGKILL, so that run.sh's trap stops the servers it
	// started.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	t.Logf("run.sh output:\n%s", out.String())
	if err != nil {
		t.Fatalf("run.sh: %v", err)
	}

	got := parseResults(out.String())
	for _, mode := range []string{"nocache", "ehcache", "mycached"} {
		r, ok := got[mode]
		if !ok {
			t.Fatalf("no RESULT line for mode %s", mode)
		}
		if n := r.int(t, "stale"); n != 0 {
			t.Errorf("mode %s: got %d stale reads after the server's own writes, want 0", mode, n)
		}
		if r.int(t, "checks") == 0 {
			t.Errorf("mode %s: no staleness checks ran", mode)
		}
	}
	// A second application server: coherent straight to MariaDB and
	// through mycached. A per-JVM Ehcache is not, which the README shows.
	for _, mode := range []string{"nocache", "mycached"} {
		if n := got[mode].int(t, "stale_other"); n != 0 {
			t.Errorf("mode %s: got %d stale reads on server B, want 0", mode, n)
		}
	}
	t.Logf("ehcache: %s of %s reads on server B were stale", got["ehcache"]["stale_other"], got["ehcache"]["checks_other"])

	base := got["nocache"].int(t, "com_select_read")
	cached := got["mycached"].int(t, "com_select_read")
	if base == 0 {
		t.Fatalf("the nocache run counted no Com_select on its read part")
	}
	cut := 100 * float64(base-cached) / float64(base)
	t.Logf("read part Com_select: nocache %d, mycached %d (%.1f%% fewer)", base, cached, cut)
	if cut < 80 {
		t.Errorf("got Com_select cut by %.1f%% on the read part (%d -> %d), want at least 80%%", cut, base, cached)
	}
}

var resultLine = regexp.MustCompile(`(?m)^RESULT (.*)$`)

// parseResults maps each RESULT line's mode to its key=value fields.
func parseResults(out string) map[string]result {
	got := make(map[string]result)
	for _, m := range resultLine.FindAllStringSubmatch(out, -1) {
		r := make(result)
		for _, f := range strings.Fields(m[1]) {
			if k, v, ok := strings.Cut(f, "="); ok {
				r[k] = v
			}
		}
		got[r["mode"]] = r
	}
	return got
}
