package cachepolicy

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// writeScript writes a script into a temp dir and returns its path.
func writeScript(t testing.TB, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// logBuf is a concurrency-safe log sink for asserting on log lines.
type logBuf struct {
	mu sync.Mutex // protects b
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuf) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, nil))
}

// mustLoad loads files or fails the test. Unless a test sets its own
// deadline, it gets a generous one: under the race detector on a busy
// machine a hook can take longer than 5 ms, and only the deadline tests
// are about the deadline.
func mustLoad(t *testing.T, files []string, opts Options) *Engine {
	t.Helper()
	if opts.Timeout == 0 {
		opts.Timeout = time.Second
	}
	e, err := Load(files, opts)
	if err != nil {
		t.Fatalf("Load(%v): %v", files, err)
	}
	return e
}

// loadText writes one script and loads it.
func loadText(t *testing.T, text string, opts Options) (*Engine, string) {
	t.Helper()
	p := writeScript(t, t.TempDir(), "policy.lua", text)
	return mustLoad(t, []string{p}, opts), p
}

func selectQ(sql, digest string, tables ...string) *Query {
	return &Query{SQL: sql, Digest: digest, Kind: "select", Tables: tables, DB: "shop",
		User: "app", ClientAddr: "127.0.0.1:40000", Cacheable: true}
}

func shipped(name string) string { return filepath.Join("..", "scripts", name) }

func fmtDecision(d Decision, ok bool) string { return FormatDecision(d, ok) }

// fakeKV is an in-memory KVStore.
type fakeKV struct {
	mu sync.Mutex // protects m
	m  map[string][]byte
}

func (f *fakeKV) Get(key string) ([]byte, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.m[key]
	return v, ok, nil
}

func (f *fakeKV) Set(key string, val []byte, _ time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = make(map[string][]byte)
	}
	f.m[key] = val
	return nil
}

func (f *fakeKV) Delete(key string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.m, key)
	return nil
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// probeLua is Lua that runs one library function and prints what it
// returned, or that it failed, as one line.
const probeLua = `
local function show(...)
  local n = select("#", ...)
  if n == 1 and (...) == nil then n = 0 end -- match: nothing and nil agree
  local t = {}
  for i = 1, n do
    local v = select(i, ...)
    t[i] = type(v) .. ":" .. tostring(v)
  end
  return table.concat(t, ",")
end
function probe(f)
  local ok, a, b = pcall(function() return show(f()) end)
  if not ok then return "error" end
  return a
end
`

// probeState returns a call that evaluates one Lua expression in L and
// describes its results. With st set, the expression is compiled as
// scripts are (compileChunk, .. included) and runs in st's budget;
// otherwise it is plain gopher-lua.
func probeState(t *testing.T, L *lua.LState, st *state) func(expr string) string {
	t.Helper()
	run := func(code string) error { return L.DoString(code) }
	if st != nil {
		L.SetGlobal(concatName, L.NewFunction(st.concat))
		run = func(code string) error {
			p, err := compileChunk("probe", []byte(code))
			if err != nil {
				return err
			}
			L.Push(L.NewFunctionFromProto(p))
			return L.PCall(0, 0, nil)
		}
	}
	if err := run(probeLua); err != nil {
		t.Fatal(err)
	}
	return func(expr string) string {
		t.Helper()
		if err := run("result = probe(function() return " + expr + " end)"); err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		return L.GetGlobal("result").String()
	}
}

// boundedState returns a pooled state of an engine with no script, inside
// a call with a budget of a minute and 1 GiB.
func boundedState(t *testing.T) *state {
	t.Helper()
	e, _ := loadText(t, "", Options{Timeout: time.Minute})
	st, err := e.cur.Load().get()
	if err != nil {
		t.Fatal(err)
	}
	st.begin(time.Minute, 1<<30)
	t.Cleanup(func() { st.finish() })
	return st
}
