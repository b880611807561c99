// Package testenv starts private MariaDB and memcached servers for tests,
// once per test binary, in temp dirs on free loopback ports.
//
// A package that uses it calls Run from TestMain, so that every server the
// binary started is stopped and its files removed when the tests end:
//
//	func TestMain(m *testing.M) { os.Exit(testenv.Run(m)) }
//
// Tests then call Shared for the binary-wide servers, or StartMariaDB and
// StartMemcached for private ones (fault tests, other configurations).
// A missing binary or a server that fails to start fails the test; it never
// skips it, so that a CI machine without the servers cannot pass silently.
package testenv

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Errors returned by this package.
var (
	// ErrMissingBinary means a server binary is not installed.
	ErrMissingBinary = errors.New("testenv: binary not found")
	// ErrNotRunning means Stop or Kill was called on a stopped server.
	ErrNotRunning = errors.New("testenv: server not running")
	// ErrClosed means the server was closed and its files removed.
	ErrClosed = errors.New("testenv: server closed")
)

// Env is the binary-wide set of servers returned by Shared.
type Env struct {
	DB *MariaDB
	MC *Memcached
}

// closer is a server that Run must close when the tests end.
type closer interface{ Close() error }

// registry tracks what this binary started. It is package state because
// the servers are, by design, shared by every test in the binary and must
// be torn down by Run, which sees no test.
type registry struct {
	mu        sync.Mutex
	running   bool     // Run is active
	shared    *Env     // nil until Shared first succeeds
	sharedErr error    // the first failure of Shared, repeated to later callers
	servers   []closer // everything started, in start order
}

var reg registry

func (r *registry) add(c closer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.servers = append(r.servers, c)
}

// closeAll closes every server, newest first, and forgets them.
func (r *registry) closeAll() {
	r.mu.Lock()
	servers := r.servers
	r.servers, r.shared, r.sharedErr = nil, nil, nil
	r.mu.Unlock()
	for i := len(servers) - 1; i >= 0; i-- {
		if err := servers[i].Close(); err != nil && !errors.Is(err, ErrClosed) {
			fmt.Fprintf(os.Stderr, "testenv: cleanup: %v\n", err)
		}
	}
}

// Run runs the tests and then stops every server that Shared, StartMariaDB
// or StartMemcached started in this binary, whether or not the tests
// passed. Call it from TestMain: os.Exit(testenv.Run(m)).
func Run(m *testing.M) int {
	removeStaleDirs()
	reg.mu.Lock()
	reg.running = true
	reg.mu.Unlock()
	defer func() {
		reg.closeAll()
		reg.mu.Lock()
		reg.running = false
		reg.mu.Unlock()
	}()
	return m.Run()
}

// Shared returns the binary-wide environment, starting MariaDB and
// memcached on first use. It calls t.Fatalf if a binary is missing, a
// server fails to start, or TestMain does not call Run (the servers would
// otherwise leak their temp dirs). A failed start is not retried: later
// callers get the same error at once.
func Shared(t testing.TB) *Env {
	t.Helper()
	reg.mu.Lock()
	defer reg.mu.Unlock()
	if !reg.running {
		t.Fatalf("testenv: Shared needs TestMain to call os.Exit(testenv.Run(m))")
	}
	if reg.shared == nil && reg.sharedErr == nil {
		reg.shared, reg.sharedErr = startShared()
	}
	if reg.sharedErr != nil {
		t.Fatalf("%v", reg.sharedErr)
	}
	return reg.shared
}

// startShared starts both servers in parallel; MariaDB dominates.
// It runs with reg.mu held, so it registers the servers directly.
func startShared() (*Env, error) {
	var (
		env   Env
		dbErr error
		wg    sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		env.DB, dbErr = startMariaDB(MariaDBOptions{})
	}()
	mc, mcErr := startMemcached(MemcachedOptions{})
	wg.Wait()
	if env.DB != nil {
		reg.servers = append(reg.servers, env.DB)
	}
	if mc != nil {
		env.MC = mc
		reg.servers = append(reg.servers, mc)
	}
	if err := errors.Join(dbErr, mcErr); err != nil {
		return nil, err
	}
	return &env, nil
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
// Another process can take it before it is used; the Start functions
// retry with a new port when that happens.
func FreePort(t testing.TB) int {
	t.Helper()
	p, err := freePort()
	if err != nil {
		t.Fatalf("testenv: free port: %v", err)
	}
	return p
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// DSNFor returns a go-sql-driver DSN for user at addr (host:port over
// TCP), so a test can point the same credentials at MariaDB or at a proxy.
// params, if not empty, is the query string without the "?", for example
// "interpolateParams=true&parseTime=true".
func DSNFor(addr, user, pass, db string, params string) string {
	var b strings.Builder
	b.WriteString(user)
	if pass != "" {
		b.WriteString(":" + pass)
	}
	b.WriteString("@tcp(" + addr + ")/" + db)
	if params != "" {
		b.WriteString("?" + params)
	}
	return b.String()
}

// dirPrefix names every temp dir this package creates, so that the dirs
// of a binary that died without cleanup can be found and removed.
const dirPrefix = "mycached-testenv-"

// ownerFile holds the pid of the test binary that owns a temp dir.
const ownerFile = "owner.pid"

// makeDir creates a temp dir that outlives single tests (t.TempDir would
// be removed while the shared server still uses it) and marks it with
// this binary's pid.
func makeDir(kind string) (string, error) {
	dir, err := os.MkdirTemp("", dirPrefix+kind+"-")
	if err != nil {
		return "", fmt.Errorf("testenv: temp dir: %w", err)
	}
	pid := strconv.Itoa(os.Getpid())
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(pid), 0o644); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("testenv: temp dir: %w", err)
	}
	return dir, nil
}

// removeStaleDirs removes temp dirs left by test binaries that were killed
// before Run could clean up (their servers died with them, by Pdeathsig).
// A dir whose owner is alive, or whose owner cannot be read, is kept.
func removeStaleDirs() {
	if _, err := os.Stat("/proc/self"); err != nil {
		return // no way to tell a live owner from a dead one
	}
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	for _, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 {
			continue
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); errors.Is(err, os.ErrNotExist) {
			os.RemoveAll(dir)
		}
	}
}
