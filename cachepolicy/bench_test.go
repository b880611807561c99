package cachepolicy

import (
	"syscall"
	"testing"
	"time"

	"github.com/mycached/mycached/scripts"
)

// cpuPerOp reports the process CPU time per operation beside ns/op. On a
// shared machine ns/op also counts the time other processes held the CPU;
// CPU time is what the call itself costs (GC work included).
func cpuPerOp(b *testing.B) func() {
	start := processCPU(b)
	return func() {
		b.ReportMetric(float64(processCPU(b)-start)/float64(b.N), "cpu-ns/op")
	}
}

func processCPU(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// benchOpts gives Lua calls a long deadline: the deadline is wall-clock
// time, and a preempted goroutine on a loaded machine can miss 5 ms, which
// would turn a measurement of call cost into one of the scheduler.
var benchOpts = Options{Timeout: time.Second}

func benchQuery() *Query {
	return &Query{
		SQL:        "SELECT c FROM sbtest1 WHERE id = 4711",
		Digest:     "select c from sbtest1 where id = ?",
		Kind:       "select",
		Tables:     []string{"sbtest.sbtest1"},
		DB:         "sbtest",
		User:       "sbtest",
		ClientAddr: "127.0.0.1:40000",
		Cacheable:  true,
	}
}

// BenchmarkCacheMemoized is the hot path with default.lua: every statement
// after the first of its shape is answered from the memo.
func BenchmarkCacheMemoized(b *testing.B) {
	e, err := Load(nil, Options{})
	if err != nil {
		b.Fatal(err)
	}
	q := benchQuery()
	if _, ok := e.Cache(q); !ok {
		b.Fatalf("not cached: %+v", e.Stats())
	}
	b.ReportAllocs()
	b.ResetTimer()
	defer cpuPerOp(b)()
	for range b.N {
		if _, ok := e.Cache(q); !ok {
			b.Fatalf("not cached: %+v", e.Stats())
		}
	}
	if s := e.Stats(); s.Calls != 1 {
		b.Fatalf("calls: got %d, want 1", s.Calls)
	}
}

// BenchmarkCacheMemoizedParallel is the same from every P at once.
func BenchmarkCacheMemoizedParallel(b *testing.B) {
	e, err := Load(nil, Options{})
	if err != nil {
		b.Fatal(err)
	}
	e.Cache(benchQuery())
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		q := benchQuery()
		for pb.Next() {
			e.Cache(q)
		}
	})
}

// BenchmarkCacheLua is one cache(q) call into Lua: default.lua's logic
// with the memo turned off, so every call enters a pooled state.
func BenchmarkCacheLua(b *testing.B) {
	text, err := scripts.FS.ReadFile(scripts.DefaultName)
	if err != nil {
		b.Fatal(err)
	}
	p := writeScript(b, b.TempDir(), "nomemo.lua", string(text)+"\nmemo = false\n")
	e, err := Load([]string{p}, benchOpts)
	if err != nil {
		b.Fatal(err)
	}
	q := benchQuery()
	b.ReportAllocs()
	b.ResetTimer()
	defer cpuPerOp(b)()
	for range b.N {
		if _, ok := e.Cache(q); !ok {
			b.Fatalf("not cached: %+v", e.Stats())
		}
	}
	if s := e.Stats(); s.Kills+s.Errors != 0 {
		b.Fatalf("got %+v", s)
	}
}

// BenchmarkCacheLuaAllowlist is an unmemoized call of a script that walks
// q.tables, which builds a Lua table per call.
func BenchmarkCacheLuaAllowlist(b *testing.B) {
	p := writeScript(b, b.TempDir(), "allow.lua", `
local ttls = { ["sbtest.sbtest1"] = 30 }
memo = false
function cache(q)
  if not q.cacheable or q.kind ~= "select" then return nil end
  local ttl
  for _, t in ipairs(q.tables) do
    local s = ttls[t]
    if s == nil then return nil end
    if ttl == nil or s < ttl then ttl = s end
  end
  return { ttl = ttl }
end
`)
	e, err := Load([]string{p}, benchOpts)
	if err != nil {
		b.Fatal(err)
	}
	q := benchQuery()
	b.ReportAllocs()
	b.ResetTimer()
	defer cpuPerOp(b)()
	for range b.N {
		if _, ok := e.Cache(q); !ok {
			b.Fatalf("not cached: %+v", e.Stats())
		}
	}
}

// BenchmarkQueryHookTag is the tag-statements.lua rewrite per statement.
func BenchmarkQueryHookTag(b *testing.B) {
	e, err := Load([]string{shipped("tag-statements.lua")}, benchOpts)
	if err != nil {
		b.Fatal(err)
	}
	q := benchQuery()
	b.ReportAllocs()
	b.ResetTimer()
	defer cpuPerOp(b)()
	for range b.N {
		if r := e.Query(q); r.Kind != QueryRewrite {
			b.Fatal(r.Kind)
		}
	}
}
