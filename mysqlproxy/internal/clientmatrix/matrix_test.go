package clientmatrix

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mycached/mycached/mysqlproxy"
	"github.com/mycached/mycached/mysqlproxy/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Run(m)) }

// dumpDir, when set, receives every transcript, one file per client and
// target, for reading what a client saw in cases that do not differ.
var (
	dumpDir = flag.String("clientmatrix.dump", "", "write every transcript as JSON lines to files in this directory")
	only    = flag.String("clientmatrix.only", "", "run only the named client (such as connector-j)")
)

// The ordinary account the cases run as: no admin of mycached, and rights
// on its run's database only.
const (
	userName = "cm_user"
	userPass = "cm-user-pass"
)

// maxRuns bounds the drivers running at once. Most of a run's time is
// spent in sleeps, not on the CPU, but JVMs and interpreters start at
// once, and on a two-core machine that also runs other tests every run of
// the matrix at once starved the race-instrumented mycached of the test
// binary for tens of seconds: clients timed out where nothing was wrong.
const maxRuns = 9

// TestClientMatrix runs every client over the case list directly, through
// a caching mycached and through a passthrough one, and compares what each
// client saw through mycached with what it saw directly.
func TestClientMatrix(t *testing.T) {
	m := testenv.Shared(t).DB
	m.Exec(t, "CREATE USER IF NOT EXISTS '"+userName+"'@'127.0.0.1' IDENTIFIED BY '"+userPass+"'")
	datafile, err := filepath.Abs("testdata/load.tsv")
	if err != nil {
		t.Fatal(err)
	}
	mx := &matrix{
		m:        m,
		cases:    loadCases(t),
		admin:    connConf{Host: m.Host, Port: m.Port, User: m.RootUser, Password: m.RootPassword},
		datafile: datafile,
		dir:      t.TempDir(),
	}
	cls := clients(t)
	if *only != "" {
		cls = slices.DeleteFunc(cls, func(c client) bool { return c.name != *only })
	}
	checkKnownTable(t, mx.cases, cls)

	// Each client gets a caching mycached and a memcached of its own: a
	// CALL bumps the global generation, which would otherwise make one
	// client's cache hits depend on when another client's cases run.
	direct := addrTarget(t, "direct", m.Addr)
	passthrough := addrTarget(t, "passthrough", startProxy(t, "passthrough", mysqlproxy.Config{Backend: m.Addr, Passthrough: true}))
	targets := map[string][]target{}
	for _, cl := range cls {
		mc, err := testenv.StartMemcached(testenv.MemcachedOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// On a loaded machine memcached can miss the default 50ms
		// deadline; mycached then fails open and serves no hits, and the
		// cases that show what a hit does would pass or fail by chance.
		// The caching mycached runs as deployed: with the binlog follower,
		// whose account also reads keys, views and foreign keys.
		cached := addrTarget(t, "cached", startProxy(t, "cached for "+cl.name, mysqlproxy.Config{
			Backend: m.Addr, Memcached: []string{mc.Addr}, MemcachedTimeout: 10 * time.Second,
			BinlogUser: testenv.BinlogUser, BinlogPassword: testenv.BinlogPassword,
		}))
		targets[cl.name] = []target{direct, cached, passthrough}
	}

	results := mx.runAll(t, cls, targets)
	if *dumpDir != "" {
		dump(t, *dumpDir, mx.cases, results)
	}
	if t.Failed() {
		return
	}
	for _, cl := range cls {
		t.Run(cl.name, func(t *testing.T) {
			checkClient(t, cl.name, mx.cases, results[cl.name])
		})
	}
}

// matrix is what the runs of the matrix share.
type matrix struct {
	m        *testenv.MariaDB
	cases    []testCase
	admin    connConf
	datafile string
	dir      string // for the drivers' config files
}

// runAll runs every client against each of its targets, all at once, and
// returns the transcripts by client and target name. A driver that cannot
// run fails t.
func (mx *matrix) runAll(t *testing.T, cls []client, targets map[string][]target) map[string]map[string]transcript {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var (
		mu      sync.Mutex // protects results
		results = map[string]map[string]transcript{}
		wg      sync.WaitGroup
		sem     = make(chan struct{}, maxRuns)
	)
	for _, cl := range cls {
		results[cl.name] = map[string]transcript{}
		for _, tg := range targets[cl.name] {
			r := mx.newRun(t, cl, tg)
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				tr, err := r.execute(ctx)
				for _, c := range r.abandoned {
					if err == nil {
						tr[c.ID], err = r.abandon(ctx, mx.m, c)
					}
				}
				if err != nil {
					t.Errorf("%s %s: %v", cl.name, tg.name, err)
				}
				mu.Lock()
				results[cl.name][tg.name] = tr
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	return results
}

// dump writes each run's transcript to dir/<client>-<target>.jsonl.
func dump(t *testing.T, dir string, cases []testCase, results map[string]map[string]transcript) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for cl, runs := range results {
		for tg, tr := range runs {
			var b bytes.Buffer
			for _, c := range cases {
				for _, line := range tr[c.ID] {
					j, err := json.Marshal(line)
					if err != nil {
						t.Fatal(err)
					}
					fmt.Fprintf(&b, "%s\t%s\n", c.ID, j)
				}
			}
			if err := os.WriteFile(filepath.Join(dir, cl+"-"+tg+".jsonl"), b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// checkClient compares a client's runs through each mycached with its
// direct run, case by case, against the known differences.
func checkClient(t *testing.T, name string, cases []testCase, runs map[string]transcript) {
	direct := runs["direct"]
	for _, c := range cases {
		for _, line := range direct[c.ID] {
			if isBroken(line) {
				t.Errorf("case %s: the client hung or died talking to MariaDB directly, so the case is broken: %s", c.ID, render(line))
			}
		}
	}
	for _, via := range []string{"cached", "passthrough"} {
		for _, c := range cases {
			diffs := diffLines(direct[c.ID], runs[via][c.ID])
			k := lookupKnown(c.ID, name, via)
			switch {
			case len(diffs) > 0 && k == nil:
				t.Errorf("unlisted difference; fix it, or add it to knownDiffs with its cause:\n  %s", describe(c, via, diffs))
			case len(diffs) == 0 && k != nil:
				t.Errorf("case %s through mycached (%s) no longer differs from MariaDB; remove it from knownDiffs (%s)", c.ID, via, k.Reason)
			case len(diffs) > 0 && testing.Verbose():
				t.Logf("known difference (%s):\n  %s", k.Reason, describe(c, via, diffs))
			}
		}
	}
}

// lookupKnown returns the knownDiffs entry for a case, client and mycached.
func lookupKnown(caseID, clientName, via string) *knownDiff {
	for i, k := range knownDiffs {
		if k.Case == caseID && (k.Client == "*" || k.Client == clientName) && (k.Via == "*" || k.Via == via) {
			return &knownDiffs[i]
		}
	}
	return nil
}

// checkKnownTable fails on entries that name no case or client, overlap,
// or give no cause.
func checkKnownTable(t *testing.T, cases []testCase, cls []client) {
	t.Helper()
	ids := map[string]bool{}
	for _, c := range cases {
		ids[c.ID] = true
	}
	names := map[string]bool{"*": true}
	for _, cl := range cls {
		names[cl.name] = true
	}
	for i, k := range knownDiffs {
		if !ids[k.Case] || !names[k.Client] || (k.Via != "*" && k.Via != "cached" && k.Via != "passthrough") {
			t.Errorf("knownDiffs[%d] = %+v names an unknown case, client or mycached", i, k)
		}
		if !strings.HasPrefix(k.Reason, "bug: ") {
			t.Errorf("knownDiffs[%d] (%s, %s): the reason must start with \"bug: \" and name the cause", i, k.Case, k.Client)
		}
		for _, o := range knownDiffs[:i] {
			if o.Case == k.Case && (o.Client == k.Client || o.Client == "*" || k.Client == "*") && (o.Via == k.Via || o.Via == "*" || k.Via == "*") {
				t.Errorf("knownDiffs has two entries for case %s, client %s, %s", k.Case, k.Client, k.Via)
			}
		}
	}
}

// newRun prepares a run: its database, granted to the ordinary user, its
// cases with their placeholders filled in, and the names that normalize
// takes back to placeholders. The names of one client's runs have the same
// length, so that the mariadb client's tables have the same widths.
func (mx *matrix) newRun(t *testing.T, cl client, tg target) *run {
	t.Helper()
	short := strings.ReplaceAll(cl.name, "-", "_")
	db := fmt.Sprintf("cm_%s_%c", short, tg.name[0])
	tag := fmt.Sprintf("cmlock_%s_%c", short, tg.name[0])
	mx.m.Exec(t, "DROP DATABASE IF EXISTS `"+db+"`")
	mx.m.Exec(t, "CREATE DATABASE `"+db+"`")
	mx.m.Exec(t, "GRANT ALL ON `"+db+"`.* TO '"+userName+"'@'127.0.0.1'")
	t.Cleanup(func() {
		if a := mx.m.AdminDB(); a != nil {
			_, _ = a.Exec("DROP DATABASE IF EXISTS `" + db + "`")
		}
	})
	r := &run{
		client: cl, target: tg, admin: mx.admin, tag: tag, dir: mx.dir,
		user: connConf{User: userName, Password: userPass, Database: db},
		norm: strings.NewReplacer(db, "{db}", tag, "{tag}", mx.datafile, "{datafile}"),
	}
	fill := strings.NewReplacer("{db}", db, "{tag}", tag, "{datafile}", mx.datafile)
	for _, c := range mx.cases {
		if c = c.expand(fill); c.Abandon {
			r.abandoned = append(r.abandoned, c)
		} else {
			r.cases = append(r.cases, c)
		}
	}
	return r
}

func addrTarget(t *testing.T, name, addr string) target {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	var p int
	if _, err := fmt.Sscan(port, &p); err != nil {
		t.Fatal(err)
	}
	return target{name: name, host: host, port: p}
}

// startProxy starts a mycached with cfg on a free loopback port and
// returns its address; it is closed when t ends, and its log shown, under
// name, if t failed.
func startProxy(t *testing.T, name string, cfg mysqlproxy.Config) string {
	t.Helper()
	logs := &testenv.LogBuffer{}
	// Info, for the ends of sessions: when a lifecycle case fails, the
	// log says when mycached saw the backend go and closed the client.
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	srv, err := mysqlproxy.NewServer(cfg)
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	if cfg.BinlogUser != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for srv.WaitBinlog(ctx) != nil {
			if ctx.Err() != nil {
				t.Fatalf("binlog follower of %s did not start:\n%s", name, logs.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	t.Cleanup(func() {
		_ = srv.Close()
		if err := <-served; err != nil && !errors.Is(err, mysqlproxy.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
		if t.Failed() {
			t.Logf("log of mycached (%s):\n%s", name, logs.String())
		}
	})
	return ln.Addr().String()
}
