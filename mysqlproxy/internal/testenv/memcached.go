package testenv

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Bounds for memcached instances.
const (
	defaultMemcachedMB    = 64
	memcachedReadyTimeout = 10 * time.Second
	memcachedStopGrace    = 10 * time.Second
	memcachedIOTimeout    = 5 * time.Second
)

// MemcachedOptions configures StartMemcached. The zero value is a 64 MB
// memcached with the default 1 MB item size limit on a free port.
type MemcachedOptions struct {
	// ItemSizeMax is memcached's -I, the largest item, for example "4m"
	// or "64k". Empty keeps memcached's default of 1m.
	ItemSizeMax string
	// MemoryMB is memcached's -m; 0 means 64.
	MemoryMB int
	// Port is the TCP port; 0 picks a free one.
	Port int
	// ExtraArgs are appended to the command line.
	ExtraArgs []string
}

// Memcached is a private memcached process. Its methods are safe for
// concurrent use.
type Memcached struct {
	Addr string // "127.0.0.1:port"
	Host string // "127.0.0.1"
	Port int
	Dir  string // temp dir holding the log
	Log  string // memcached's stdout and stderr

	bin  string
	args []string // fixed at first start, so Restart reuses the port

	mu     sync.Mutex // protects p and closed
	p      *proc      // nil when not running
	closed bool
}

// StartMemcached starts a new private memcached and waits until it
// answers "version". Run closes it when the tests end; a test that wants
// it gone sooner calls Close.
func StartMemcached(opts MemcachedOptions) (*Memcached, error) {
	m, err := startMemcached(opts)
	if err != nil {
		return nil, err
	}
	reg.add(m)
	return m, nil
}

func startMemcached(opts MemcachedOptions) (*Memcached, error) {
	bin, err := findBinary("memcached")
	if err != nil {
		return nil, err
	}
	dir, err := makeDir("memcached")
	if err != nil {
		return nil, err
	}
	m := &Memcached{Host: "127.0.0.1", Dir: dir, Log: filepath.Join(dir, "memcached.log"), bin: bin}
	for attempt := 0; attempt < portAttempts; attempt++ {
		m.Port = opts.Port
		if m.Port == 0 {
			if m.Port, err = freePort(); err != nil {
				m.Close()
				return nil, fmt.Errorf("testenv: free port: %w", err)
			}
		}
		m.Addr = fmt.Sprintf("%s:%d", m.Host, m.Port)
		m.args = memcachedArgs(m.Host, m.Port, opts)
		m.mu.Lock()
		err = m.startLocked()
		m.mu.Unlock()
		// Retry on another port only when the one picked was taken
		// between FreePort and bind.
		if err == nil || opts.Port != 0 || !strings.Contains(tailFile(m.Log, 5), "Address already in use") {
			break
		}
	}
	if err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

func memcachedArgs(host string, port int, opts MemcachedOptions) []string {
	mb := opts.MemoryMB
	if mb == 0 {
		mb = defaultMemcachedMB
	}
	args := []string{
		"-l", host,
		"-p", strconv.Itoa(port),
		"-U", "0", // no UDP: loopback TCP only
		"-m", strconv.Itoa(mb),
	}
	if opts.ItemSizeMax != "" {
		args = append(args, "-I", opts.ItemSizeMax)
	}
	// memcached refuses to run as root unless told which user to be.
	if os.Geteuid() == 0 {
		args = append(args, "-u", "root")
	}
	return append(args, opts.ExtraArgs...)
}

// startLocked starts memcached and waits until it answers. m.mu must be
// held.
func (m *Memcached) startLocked() error {
	p, err := startProc(m.bin, m.args, m.Log)
	if err != nil {
		return err
	}
	m.p = p
	if err := m.waitReady(); err != nil {
		p.kill()
		m.p = nil
		return fmt.Errorf("testenv: memcached on %s: %w\n--- %s (tail) ---\n%s", m.Addr, err, m.Log, tailFile(m.Log, 20))
	}
	return nil
}

func (m *Memcached) waitReady() error {
	deadline := time.Now().Add(memcachedReadyTimeout)
	for {
		_, err := m.roundTrip("version", "VERSION ")
		if err == nil {
			return nil
		}
		if m.p.exited() {
			return fmt.Errorf("%w: %v", errExited, m.p.err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %v: %w", memcachedReadyTimeout, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// roundTrip sends one command line and reads response lines until one
// starts with end, returning the lines before it (and the end line itself
// when end is a one-line reply such as "VERSION ").
func (m *Memcached) roundTrip(cmd, end string) ([]string, error) {
	c, err := net.DialTimeout("tcp", m.Addr, memcachedIOTimeout)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(memcachedIOTimeout))
	if _, err := c.Write([]byte(cmd + "\r\n")); err != nil {
		return nil, err
	}
	r := bufio.NewReader(c)
	var lines []string
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		line = strings.TrimRight(line, "\r\n")
		if strings.HasPrefix(line, "ERROR") || strings.HasPrefix(line, "CLIENT_ERROR") || strings.HasPrefix(line, "SERVER_ERROR") {
			return nil, fmt.Errorf("testenv: memcached %q: %s", cmd, line)
		}
		if strings.HasPrefix(line, end) {
			if end != "END" && end != "OK" {
				lines = append(lines, line)
			}
			return lines, nil
		}
		lines = append(lines, line)
	}
}

// Stats returns memcached's "stats" output as a map; group selects a
// sub-report such as "settings", "items" or "slabs", and "" the general
// one. It fails the test on error.
func (m *Memcached) Stats(t testing.TB, group string) map[string]string {
	t.Helper()
	cmd := "stats"
	if group != "" {
		cmd += " " + group
	}
	lines, err := m.roundTrip(cmd, "END")
	if err != nil {
		t.Fatalf("testenv: memcached %s on %s: %v", cmd, m.Addr, err)
	}
	stats := make(map[string]string, len(lines))
	for _, l := range lines {
		// "STAT name value"; the value may contain spaces.
		f := strings.SplitN(l, " ", 3)
		if len(f) == 3 && f[0] == "STAT" {
			stats[f[1]] = f[2]
		}
	}
	return stats
}

// FlushAll empties the cache, failing the test on error.
func (m *Memcached) FlushAll(t testing.TB) {
	t.Helper()
	if _, err := m.roundTrip("flush_all", "OK"); err != nil {
		t.Fatalf("testenv: memcached flush_all on %s: %v", m.Addr, err)
	}
}

// Stop shuts memcached down with SIGTERM (SIGKILL after a grace period).
func (m *Memcached) Stop() error {
	return m.halt(func(p *proc) { p.stop(memcachedStopGrace) })
}

// Kill sends SIGKILL to memcached, for fault tests, and waits for it to
// die.
func (m *Memcached) Kill() error {
	return m.halt((*proc).kill)
}

func (m *Memcached) halt(how func(*proc)) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	if m.p == nil || m.p.exited() {
		m.p = nil
		return ErrNotRunning
	}
	how(m.p)
	m.p = nil
	return nil
}

// Restart starts memcached again on the same port, stopping it first if
// it is running. It comes back empty, as a real memcached restart does.
func (m *Memcached) Restart() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	if m.p != nil {
		m.p.stop(memcachedStopGrace)
		m.p = nil
	}
	return m.startLocked()
}

// Running reports whether the memcached process is alive.
func (m *Memcached) Running() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.p != nil && !m.p.exited()
}

// Close kills memcached and removes its temp dir. Later calls return
// ErrClosed.
func (m *Memcached) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	m.closed = true
	if m.p != nil {
		m.p.kill()
		m.p = nil
	}
	return os.RemoveAll(m.Dir)
}
