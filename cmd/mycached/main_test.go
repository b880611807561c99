package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mycached/mycached/mysqlproxy"
)

// buildBinary compiles mycached into a temporary directory.
func buildBinary(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go tool is not on PATH: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "mycached")
	if out, err := exec.Command(goTool, "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func runBinary(t *testing.T, bin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatalf("run %s: %v", bin, err)
	}
	return out.String(), errOut.String(), code
}

func TestBinary(t *testing.T) {
	bin := buildBinary(t)

	t.Run("help", func(t *testing.T) {
		out, _, code := runBinary(t, bin, "--help")
		if code != 0 {
			t.Errorf("exit: got %d, want 0", code)
		}
		o := defaultOptions()
		for _, d := range flagDefs(&o) {
			if !strings.Contains(out, "--"+d.name+" ") && !strings.Contains(out, "--"+d.name+"\n") {
				t.Errorf("help does not mention --%s", d.name)
			}
		}
		for _, want := range []string{"(default 127.0.0.1:3307)", "(default 256MiB)", "listen: 127.0.0.1:3307"} {
			if !strings.Contains(out, want) {
				t.Errorf("help does not contain %q", want)
			}
		}
	})

	tests := []struct {
		name string
		args []string
		want string
	}{
		{"bad enum", []string{"--backend-tls", "sometimes"}, `mycached: --backend-tls: "sometimes" is not one of off, preferred, required, verify`},
		{"unknown flag", []string{"--nope"}, "mycached: unknown flag --nope"},
		{"bad size", []string{"--cache-memory=12XB"}, `mycached: --cache-memory: "12XB"`},
		{"reserved kv prefix", []string{"--kv-prefix", "g:"}, `mycached: --kv-prefix: kvproxy: unusable kv prefix "g:": it overlaps "g:"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := runBinary(t, bin, tt.args...)
			if code != 2 {
				t.Errorf("exit: got %d, want 2", code)
			}
			if out != "" {
				t.Errorf("stdout: got %q, want nothing", out)
			}
			lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], tt.want) {
				t.Errorf("stderr: got %q, want one line starting %q", errOut, tt.want)
			}
		})
	}

	// A policy that does not load at startup is bad configuration too: exit
	// 2, one line naming the file and, where there is one, the line.
	t.Run("policy does not load", func(t *testing.T) {
		dir := t.TempDir()
		write := func(name, text string) string {
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			return p
		}
		tests := []struct {
			name, file, want string
		}{
			{"syntax", write("syntax.lua", "function cache(q)\n  return {\nend\n"), "syntax.lua:3"},
			{"top level", write("toplevel.lua", "local x = 1\nerror(\"no\")\n"), "toplevel.lua:2"},
			{"missing", filepath.Join(dir, "missing.lua"), "missing.lua"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				out, errOut, code := runBinary(t, bin, "--listen", "127.0.0.1:0", "--policy", tt.file)
				if code != 2 {
					t.Errorf("exit: got %d, want 2 (stderr %q)", code, errOut)
				}
				if out != "" {
					t.Errorf("stdout: got %q, want nothing", out)
				}
				lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
				if len(lines) != 1 || !strings.HasPrefix(lines[0], "mycached: --policy: ") || !strings.Contains(lines[0], tt.want) {
					t.Errorf("stderr: got %q, want one line naming %s", errOut, tt.want)
				}
			})
		}
	})

	// With --log-format json, the error that stops mycached is a JSON
	// line too.
	t.Run("json log of a failure", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		_, errOut, code := runBinary(t, bin, "--listen", ln.Addr().String(), "--log-format", "json")
		if code != 1 || !strings.Contains(errOut, "address already in use") {
			t.Errorf("a listen address in use: got exit %d, stderr %q; want 1 and the reason", code, errOut)
		}
		for _, line := range strings.Split(strings.TrimSuffix(errOut, "\n"), "\n") {
			if !json.Valid([]byte(line)) {
				t.Errorf("stderr line %q is not JSON", line)
			}
		}
	})

	t.Run("check-policy", func(t *testing.T) {
		out, errOut, code := runBinary(t, bin, "check-policy", "../../scripts/default.lua")
		if code != 0 || !strings.Contains(out, "ttl") {
			t.Errorf("default.lua: got exit %d, stdout %q, stderr %q; want 0 and decisions", code, out, errOut)
		}
		bad := filepath.Join(t.TempDir(), "bad.lua")
		if err := os.WriteFile(bad, []byte("function cache(q)\n  return {\nend\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, errOut, code = runBinary(t, bin, "check-policy", bad)
		if code != 2 || !strings.Contains(errOut, "bad.lua") {
			t.Errorf("a broken script: got exit %d, stderr %q; want 2 naming the file", code, errOut)
		}
		failing := filepath.Join(t.TempDir(), "failing.lua")
		if err := os.WriteFile(failing, []byte("function cache(q, next)\n  error('boom')\nend\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		out, errOut, code = runBinary(t, bin, "check-policy", failing)
		if code != 1 || !strings.Contains(errOut, "hooks failed") || !strings.Contains(out, "failing.lua:2: boom") {
			t.Errorf("a script whose hook fails: got exit %d, stdout %q, stderr %q; want 1, the failure and where", code, out, errOut)
		}
	})
}

func TestProxyConfig(t *testing.T) {
	o := parse(t, "--backend", "127.0.0.1:1", "--memcached", "127.0.0.1:2", "--cache-memory", "0",
		"--backend-tls", "off", "--cache-in-transactions", "never", "--policy", "a.lua", "--admin-users=",
		"--kv-users", "u", "--kv-per-user", "--compress-min-bytes", "1k", "--tls-self-signed")
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	got := proxyConfig(o, logger)
	want := mysqlproxy.Config{
		Backend:             "127.0.0.1:1",
		ConnectTimeout:      5 * time.Second,
		BackendTLS:          mysqlproxy.BackendTLSOff,
		TLS:                 o.serverTLS,
		Memcached:           []string{"127.0.0.1:2"},
		MemcachedTimeout:    50 * time.Millisecond,
		BumpWait:            time.Second,
		MemcachedGets:       2,
		CacheMemory:         -1,
		MaxResultBytes:      16 << 20,
		FillMemory:          256 << 20,
		CompressMinBytes:    1024,
		DefaultTTL:          time.Minute,
		CacheInTransactions: mysqlproxy.CacheNever,
		Consistency:         mysqlproxy.ConsistencyStrict,
		MaxStaleness:        time.Second,
		Policy:              []string{"a.lua"},
		PolicyTimeout:       5 * time.Millisecond,
		PolicyMemory:        4 << 20,
		AdminUsers:          []string{},
		KVPrefix:            "kv:",
		KVMaxBytes:          8 << 20,
		KVTimeout:           time.Second,
		KVMaxConnections:    1000,
		KVUsers:             []string{"u"},
		KVPerUser:           true,
		MaxPacket:           1 << 30,
		ShutdownTimeout:     30 * time.Second,
		Logger:              logger,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("proxyConfig:\ngot  %+v\nwant %+v", got, want)
	}
	if got.TLS == nil {
		t.Errorf("TLS: got nil, want the self-signed config")
	}
}

// fakeProxy records what serve asks of it.
type fakeProxy struct {
	mu       sync.Mutex // protects reloads and shutdown
	reloads  int
	shutdown bool
	// reloadTakes is how long ReloadPolicy takes.
	reloadTakes time.Duration
	served      chan struct{}
	stop        chan struct{}
}

func newFakeProxy() *fakeProxy {
	return &fakeProxy{served: make(chan struct{}), stop: make(chan struct{})}
}

func (f *fakeProxy) Serve(ln net.Listener) error {
	close(f.served)
	<-f.stop
	return mysqlproxy.ErrServerClosed
}

func (f *fakeProxy) ServeKV(ln net.Listener) error {
	<-f.stop
	return mysqlproxy.ErrServerClosed
}

func (f *fakeProxy) Shutdown(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.shutdown {
		f.shutdown = true
		close(f.stop)
	}
	return nil
}

func (f *fakeProxy) AdminHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok "+r.URL.Path) })
}

func (f *fakeProxy) ReloadPolicy() error {
	time.Sleep(f.reloadTakes)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reloads++
	return nil
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

func TestServeSignals(t *testing.T) {
	f := newFakeProxy()
	ln, adminLn := listen(t), listen(t)
	sigs := make(chan os.Signal)
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	done := make(chan error, 1)
	go func() {
		done <- serve(context.Background(), logger, f, listeners{main: ln, admin: adminLn}, sigs, time.Minute)
	}()
	<-f.served

	resp, err := http.Get("http://" + adminLn.Addr().String() + "/metrics")
	if err != nil {
		t.Fatalf("admin GET: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "ok /metrics" {
		t.Errorf("admin body: got %q, want %q", body, "ok /metrics")
	}

	// The channel is unbuffered, so each send returns only once serve has
	// taken the signal; the second send proves the first was handled.
	sigs <- syscall.SIGHUP
	sigs <- syscall.SIGTERM
	if err := <-done; err != nil {
		t.Errorf("serve: got %v, want nil", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.reloads != 1 || !f.shutdown {
		t.Errorf("got reloads=%d shutdown=%v, want 1 and true", f.reloads, f.shutdown)
	}
	if _, err := http.Get("http://" + adminLn.Addr().String() + "/healthz"); err == nil {
		t.Errorf("admin still serving after shutdown")
	}
}

// TestServeSignalDuringReload: a reload takes its time (a policy's top
// level may run up to its deadline), and signal.Notify drops a signal
// that finds the channel full: a SIGTERM sent behind two SIGHUPs still
// stops the daemon.
func TestServeSignalDuringReload(t *testing.T) {
	f := newFakeProxy()
	f.reloadTakes = time.Second
	sigs := make(chan os.Signal, 1) // as main makes it
	done := make(chan error, 1)
	go func() {
		done <- serve(context.Background(), slog.New(slog.NewTextHandler(io.Discard, nil)), f, listeners{main: listen(t)}, sigs, time.Minute)
	}()
	<-f.served
	notify := func(s os.Signal) { // what signal.Notify does
		select {
		case sigs <- s:
		default:
		}
	}
	notify(syscall.SIGHUP)
	time.Sleep(100 * time.Millisecond)
	notify(syscall.SIGHUP)
	time.Sleep(100 * time.Millisecond)
	notify(syscall.SIGTERM)
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serve: got %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("SIGTERM during a policy reload did not stop serve")
	}
}

// TestServeReloadStuck: a policy reload that never ends (a script on a
// hung mount) does not keep serve from returning on SIGTERM.
func TestServeReloadStuck(t *testing.T) {
	defer func(g time.Duration) { reloadGrace = g }(reloadGrace)
	reloadGrace = 200 * time.Millisecond
	f := newFakeProxy()
	f.reloadTakes = time.Hour
	sigs := make(chan os.Signal, 2)
	done := make(chan error, 1)
	go func() {
		done <- serve(context.Background(), slog.New(slog.NewTextHandler(io.Discard, nil)), f, listeners{main: listen(t)}, sigs, time.Second)
	}()
	<-f.served
	sigs <- syscall.SIGHUP
	time.Sleep(100 * time.Millisecond)
	sigs <- syscall.SIGTERM
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("SIGTERM with a policy reload stuck did not stop serve")
	}
}

func TestServeContextCancel(t *testing.T) {
	f := newFakeProxy()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serve(ctx, slog.New(slog.NewTextHandler(io.Discard, nil)), f, listeners{main: listen(t)}, nil, time.Minute)
	}()
	<-f.served
	cancel()
	if err := <-done; err != nil {
		t.Errorf("serve: got %v, want nil", err)
	}
}

// tracedError prints a stack trace under %+v, as the driver's errors do.
type tracedError struct{}

func (tracedError) Error() string { return "connection refused" }

func (e tracedError) Format(f fmt.State, verb rune) {
	_, _ = io.WriteString(f, e.Error())
	if f.Flag('+') {
		_, _ = io.WriteString(f, "\ngithub.com/example/pkg.dial\n\t/src/pkg/dial.go:42\nruntime.goexit")
	}
}

// TestLogErrorsAsMessages: an error is logged as its message, in either
// format, without the stack trace its %+v would print.
func TestLogErrorsAsMessages(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		var b strings.Builder
		newLogger(options{logFormat: format, logLevel: "info"}, &b).Warn("binlog: reconnecting", "err", tracedError{})
		if out := b.String(); !strings.Contains(out, "connection refused") || strings.Contains(out, "goexit") {
			t.Errorf("%s: %s", format, out)
		}
	}
}
