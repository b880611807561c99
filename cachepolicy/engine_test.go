package cachepolicy

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestReload(t *testing.T) {
	dir := t.TempDir()
	p := writeScript(t, dir, "p.lua", "function cache(q)\n  return { ttl = 10 }\nend\n")
	var logs logBuf
	e := mustLoad(t, []string{p}, Options{Logger: logs.logger()})
	q := selectQ("SELECT 1 FROM t", "select ? from t", "shop.t")
	check := func(want string) {
		t.Helper()
		if got := fmtDecision(e.Cache(q)); got != want {
			t.Errorf("got %s, want %s", got, want)
		}
	}
	check("ttl=10s scope=user cache_empty=true")
	check("ttl=10s scope=user cache_empty=true") // memoized

	broken := []struct {
		name, text, want string
		is               error
	}{
		{"syntax", "function cache(q)\n  return { ttl = }\nend\n", "p.lua:2", ErrCompile},
		{"cut short", "function cache(q) return {ttl = ", "p.lua: at the end of the script", ErrCompile},
		{"top level error", "local x = 1\nerror(\"no\")\n", "p.lua:2", ErrTopLevel},
		{"hook not a function", "cache = 5\n", "cache is a number", ErrTopLevel},
		{"memory kill caught", "local ok = pcall(string.rep, \"a\", 2^30)\nlocal x = 1\n", "memory budget of the call exhausted (a top level may allocate", ErrTopLevel},
	}
	for _, b := range broken {
		writeScript(t, dir, "p.lua", b.text)
		err := e.Reload()
		if !errors.Is(err, b.is) || !contains(err.Error(), b.want) {
			t.Errorf("%s: got %v, want %v naming %s", b.name, err, b.is, b.want)
		}
		check("ttl=10s scope=user cache_empty=true")
	}
	if !contains(logs.String(), "keeping the old scripts") {
		t.Errorf("log lacks the failed reload:\n%s", logs.String())
	}

	writeScript(t, dir, "p.lua", "function cache(q)\n  return { ttl = 20, scope = \"shared\" }\nend\n")
	if err := e.Reload(); err != nil {
		t.Fatal(err)
	}
	check("ttl=20s scope=shared cache_empty=true")

	os.Remove(p)
	if err := e.Reload(); !errors.Is(err, ErrRead) {
		t.Errorf("missing file: got %v, want ErrRead", err)
	}
	check("ttl=20s scope=shared cache_empty=true")
}

func TestMemo(t *testing.T) {
	tests := []struct {
		name      string
		body      string
		wantCalls uint64 // for two statements of one shape
	}{
		{"shape fields", "if q.cacheable and q.kind == 'select' and #q.tables > 0 and q.db ~= '' and q.user ~= '' and not q.in_transaction and not q.prepared and q.why_not == '' and q.digest ~= '' then return { ttl = 1 } end", 1},
		{"no fields", "return { ttl = 1 }", 1},
		{"via next", "return next(q)", 1},
		{"sql", "if q.sql ~= '' then return { ttl = 1 } end", 2},
		{"params", "if q.params then return { ttl = 1 } end", 2},
		{"client_addr", "if q.client_addr ~= '' then return { ttl = 1 } end", 2},
		{"clock", "if require('mycached').now() > 0 then return { ttl = 1 } end", 2},
		{"os.time", "if os.time() % 4 < 2 then return { ttl = 1 } end return { ttl = 2 }", 2},
		{"os.date", "if os.date('%H') ~= '' then return { ttl = 1 } end", 2},
		{"math.random", "if math.random() < 2 then return { ttl = 1 } end", 2},
		{"os.time of a date", "if os.time({ year = 2030, month = 1, day = 1 }) > 0 then return { ttl = 1 } end", 1},
		{"os.date of a time", "if os.date('%Y', 0) ~= '' then return { ttl = 1 } end", 1},
		{"kv", "require('mycached').cache.get('x') return { ttl = 1 }", 2},
		{"memo off", "return { ttl = 1 }\nend\nmemo = false\nlocal function unused()", 2},
		{"error", "error('no')", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := loadText(t, "function cache(q, next)\n"+tt.body+"\nend\n", Options{})
			e.Cache(selectQ("SELECT * FROM t WHERE id = 1", "select * from t where id = ?", "shop.t"))
			e.Cache(selectQ("SELECT * FROM t WHERE id = 2", "select * from t where id = ?", "shop.t"))
			if s := e.Stats(); s.Calls != tt.wantCalls || s.Calls+s.MemoHits != 2 {
				t.Errorf("got %d calls and %d memo hits, want %d calls", s.Calls, s.MemoHits, tt.wantCalls)
			}
		})
	}

	// Each key field separates shapes.
	e, _ := loadText(t, "function cache(q)\n  return { ttl = 1 }\nend\n", Options{})
	base := func() *Query { return selectQ("SELECT * FROM t", "select * from t", "shop.t") }
	variants := []func(q *Query){
		func(q *Query) {},
		func(q *Query) { q.Digest = "select * from u" },
		func(q *Query) { q.DB = "other" },
		func(q *Query) { q.User = "other" },
		func(q *Query) { q.Kind = "show" },
		func(q *Query) { q.InTransaction = true },
		func(q *Query) { q.Prepared = true },
		func(q *Query) { q.Cacheable = false },
	}
	for _, v := range variants {
		q := base()
		v(q)
		e.Cache(q)
		e.Cache(q)
	}
	if s := e.Stats(); s.Calls != uint64(len(variants)) || s.MemoHits != uint64(len(variants)) {
		t.Errorf("got %d calls and %d memo hits, want %d of each", s.Calls, s.MemoHits, len(variants))
	}
}

func TestNextWrapping(t *testing.T) {
	dir := t.TempDir()
	a := writeScript(t, dir, "a.lua", `function cache(q, next)
  if q.tables[1] == "shop.skip" then return nil end
  return { ttl = 10, depends = { "shop.a" } }
end
function invalidate(w, next)
  return { "shop.from_a" }
end
`)
	b := writeScript(t, dir, "b.lua", `function cache(q, next)
  local d = next(q)
  if d == nil then return { ttl = 1 } end
  d.ttl = d.ttl * 2
  d.scope = "shared"
  return d
end
function invalidate(w, next)
  local t = next() -- no argument: the same write
  t[#t + 1] = "shop.from_b"
  return t
end
`)
	e := mustLoad(t, []string{a, b}, Options{})
	got := fmtDecision(e.Cache(selectQ("SELECT * FROM t", "select * from t", "shop.t")))
	if want := "ttl=20s scope=shared cache_empty=true depends=[shop.a]"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	got = fmtDecision(e.Cache(selectQ("SELECT * FROM skip", "select * from skip", "shop.skip")))
	if want := "ttl=1s scope=user cache_empty=true"; got != want {
		t.Errorf("earlier script said no: got %s, want %s", got, want)
	}
	if got, want := e.Invalidate(&Write{Tables: []string{"shop.t"}, Kind: "update"}), []string{"shop.from_a", "shop.from_b"}; !reflect.DeepEqual(got, want) {
		t.Errorf("invalidate: got %v, want %v", got, want)
	}

	// Below the first script, next is the built-in default.
	e, _ = loadText(t, "function cache(q, next)\n  return next(q)\nend\n", Options{})
	notCacheable := selectQ("SELECT NOW()", "select now ( )")
	notCacheable.Cacheable = false
	for _, q := range []*Query{selectQ("SELECT * FROM t", "select * from t", "shop.t"), notCacheable} {
		if got, want := fmtDecision(e.Cache(q)), fmtDecision(Default{TTL: time.Minute}.Cache(q)); got != want {
			t.Errorf("%s: got %s, want %s", q.SQL, got, want)
		}
	}
}

func TestModule(t *testing.T) {
	kv := &fakeKV{}
	var mu sync.Mutex
	var metrics []string
	var logs logBuf
	e, _ := loadText(t, `local m = require("mycached")
function cache(q)
  local n = tonumber(m.cache.get("n") or "0") + 1
  assert(m.cache.set("n", tostring(n), 60))
  if n == 2 then assert(m.cache.delete("gone")) end
  m.metrics.inc("decisions")
  m.log.info("decided", "n", n, "user", q.user)
  return { ttl = n }
end
`, Options{KV: kv, Logger: logs.logger(), Metrics: func(name string) {
		mu.Lock()
		defer mu.Unlock()
		metrics = append(metrics, name)
	}})
	kv.Set("gone", []byte("x"), 0)
	q := selectQ("SELECT 1", "select ?")
	e.Cache(q)
	d, _ := e.Cache(q)
	if d.TTL != 2*time.Second {
		t.Errorf("ttl: got %v, want 2s (kv keeps the count; kv calls turn the memo off)", d.TTL)
	}
	if _, ok, _ := kv.Get("gone"); ok {
		t.Errorf("cache.delete: key still there")
	}
	if !reflect.DeepEqual(metrics, []string{"decisions", "decisions"}) {
		t.Errorf("metrics: got %v, want two decisions", metrics)
	}
	if !contains(logs.String(), `msg=decided`) || !contains(logs.String(), "n=2") || !contains(logs.String(), "policy.lua:7") {
		t.Errorf("log lacks the script's line:\n%s", logs.String())
	}

	// Without a kv store the functions fail softly.
	e, _ = loadText(t, `local m = require("mycached")
function cache(q)
  local v, err = m.cache.get("x")
  if v == nil and err ~= nil then return { ttl = 3 } end
end
`, Options{})
	if d, _ := e.Cache(q); d.TTL != 3*time.Second {
		t.Errorf("no kv: got ttl %v, want 3s", d.TTL)
	}
}

func TestConcurrentCalls(t *testing.T) {
	e := mustLoad(t, []string{shipped("allowlist.lua"), shipped("read-mostly.lua"), shipped("fk-cascade.lua")}, Options{MaxPool: 3})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				q := selectQ("SELECT * FROM products", "select * from products", "shop.products")
				q.User = string(rune('a' + g))
				e.Cache(q)
				if i%10 == 0 {
					e.Invalidate(&Write{Tables: []string{"shop.customers"}, Kind: "delete"})
				}
				if i == 100 && g == 0 {
					if err := e.Reload(); err != nil {
						t.Error(err)
					}
				}
			}
		}()
	}
	wg.Wait()
	if s := e.Stats(); s.Errors+s.Kills+s.BadResults != 0 {
		t.Errorf("got %+v, want no failures", s)
	}
}

// TestMalformedResultsLoggedByKind: a hook whose returns are malformed
// in two ways logs each way, though both report the function's line;
// the same way with another value is held back with the first.
func TestMalformedResultsLoggedByKind(t *testing.T) {
	var logs logBuf
	e, _ := loadText(t, `function cache(q, next)
  if q.prepared then
    return {ttl = 300, foo = 1}
  end
  if q.sql:find("x") then
    return {ttl = 300, scope = q.sql}
  end
  return "yes"
end`, Options{Logger: logs.logger()})
	prep := selectQ("SELECT 1 FROM t", "select ? from t", "shop.t")
	prep.Prepared = true
	for _, q := range []*Query{
		selectQ("SELECT 1 FROM t", "select ? from t", "shop.t"),
		prep,
		selectQ("SELECT 2 FROM t", "select ? from t", "shop.t"),
		selectQ("SELECT x FROM t", "select x from t", "shop.t"),
		selectQ("SELECT x, x FROM t", "select x , x from t", "shop.t"),
	} {
		if d, ok := e.Cache(q); ok {
			t.Errorf("%s: %s, want no decision", q.SQL, fmtDecision(d, ok))
		}
	}
	out := logs.String()
	for _, want := range []string{`cache() returned a string`, `unknown decision field \"foo\"`, `scope = \"SELECT x FROM t\"`} {
		if n := strings.Count(out, want); n != 1 {
			t.Errorf("%d lines with %s, want 1:\n%s", n, want, out)
		}
	}
	if n := strings.Count(out, "malformed decision"); n != 3 {
		t.Errorf("%d lines, want 3:\n%s", n, out)
	}
	if s := e.Stats(); s.BadResults != 5 {
		t.Errorf("bad results %d, want 5", s.BadResults)
	}
}

// TestFailureLogsCountWhatTheyHeldBack: a failing site is logged once a
// minute, the next line counts the failures held back since, and a
// reload's scripts are logged as they fail, not held back by the old
// scripts' lines.
func TestFailureLogsCountWhatTheyHeldBack(t *testing.T) {
	dir := t.TempDir()
	p := writeScript(t, dir, "p.lua", "function cache(q)\n  error(\"first\")\nend\n")
	var logs logBuf
	e := mustLoad(t, []string{p}, Options{Logger: logs.logger()})
	q := selectQ("SELECT 1 FROM t", "select ? from t", "shop.t")
	lines := func() int { return strings.Count(logs.String(), "policy hook failed") }
	for range 3 {
		e.Cache(q)
	}
	if n := lines(); n != 1 {
		t.Fatalf("%d lines for 3 failures within a minute, want 1", n)
	}
	e.logMu.Lock()
	for _, l := range e.logged {
		l.at = l.at.Add(-2 * time.Minute)
	}
	e.logMu.Unlock()
	e.Cache(q)
	if n := lines(); n != 2 || !strings.Contains(logs.String(), "not_logged_since_last=2") {
		t.Fatalf("a minute later: %d lines, want 2, the second counting the 2 held back:\n%s", lines(), logs.String())
	}
	writeScript(t, dir, "p.lua", "function cache(q)\n  error(\"second\")\nend\n")
	if err := e.Reload(); err != nil {
		t.Fatal(err)
	}
	e.Cache(q)
	if n := lines(); n != 3 || !strings.Contains(logs.String(), "second") {
		t.Fatalf("after a reload, the new script's failure: %d lines, want 3:\n%s", n, logs.String())
	}
}
