package cachepolicy

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestSandbox(t *testing.T) {
	tests := []struct {
		name, code string
		ok         bool
	}{
		{"os.execute", `os.execute("touch /tmp/pwned")`, false},
		{"os.exit", `os.exit(1)`, false},
		{"os.getenv", `local x = os.getenv("HOME")`, false},
		{"io.open", `io.open("/etc/passwd")`, false},
		{"load", `load("return 1")`, false},
		{"loadstring", `loadstring("return 1")`, false},
		{"dofile", `dofile("/etc/passwd")`, false},
		{"loadfile", `loadfile("/etc/passwd")`, false},
		{"require os", `require("os")`, false},
		{"require io", `require("io")`, false},
		{"require file", `require("policy")`, false},
		{"getfenv", `getfenv(0)`, false},
		{"collectgarbage", `collectgarbage()`, false},
		{"print", `print("x")`, false},
		{"string.dump", `string.dump(function() end)`, false},
		{"debug", `debug.getinfo(1)`, false},
		{"coroutine", `coroutine.create(function() end)`, false},
		{"huge string.rep", `local s = string.rep("x", 1e9)`, false},
		// What scripts may use.
		{"os.time", `local x = os.time()`, true},
		{"os.date", `local x = os.date("%Y-%m-%d")`, true},
		{"string", `local x = string.format("%d", 1) .. ("a"):upper()`, true},
		{"table and math", `local x = table.concat({"a", "b"}) .. math.floor(1.5)`, true},
		{"mycached", `local m = require("mycached"); local x = m.now(); m.log.info("hi", "k", 1)`, true},
		{"global at top level", `limit = 10`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeScript(t, t.TempDir(), "sandbox.lua", "-- line 1\n"+tt.code+"\n")
			_, err := Load([]string{p}, Options{Timeout: time.Second})
			if tt.ok && err != nil {
				t.Fatalf("got %v, want it to load", err)
			}
			if !tt.ok {
				if err == nil {
					t.Fatalf("got it loaded, want an error")
				}
				if !errors.Is(err, ErrTopLevel) || !strings.Contains(err.Error(), "sandbox.lua:2") {
					t.Errorf("got %v, want ErrTopLevel naming sandbox.lua:2", err)
				}
			}
		})
	}
}

func TestNewGlobalsBlockedAfterLoad(t *testing.T) {
	var logs logBuf
	e, _ := loadText(t, "count = 0\nfunction cache(q)\n  count = count + 1\n  typo = 1\n  return { ttl = 1 }\nend\n",
		Options{Logger: logs.logger()})
	if got := fmtDecision(e.Cache(selectQ("SELECT 1", "select ?"))); got != "no cache" {
		t.Errorf("got %s, want no cache", got)
	}
	if s := e.Stats(); s.Errors != 1 {
		t.Errorf("errors: got %d, want 1", s.Errors)
	}
	if !contains(logs.String(), "policy.lua:4") || !contains(logs.String(), "typo") {
		t.Errorf("log lacks policy.lua:4 and the global's name:\n%s", logs.String())
	}
}

func TestDeadline(t *testing.T) {
	tests := []struct {
		name, code string
	}{
		{"loop", "function cache(q)\n  while true do end\nend\n"},
		{"loop in pcall", "function cache(q)\n  while true do pcall(function() while true do end end) end\nend\n"},
		{"growing table", "function cache(q)\n  local t, i = {}, 0; while true do i = i + 1; t[i] = { i, tostring(i) } end\nend\n"},
		{"query loop", "function query(q)\n  while true do end\nend\n"},
		{"invalidate loop", "function invalidate(w)\n  while true do end\nend\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs logBuf
			e, _ := loadText(t, tt.code, Options{Logger: logs.logger(), Timeout: 5 * time.Millisecond})
			const n = 3
			for range n {
				// A script without cache() leaves caching to the built-in.
				want := "no cache"
				if !strings.Contains(tt.code, "function cache") {
					want = "ttl=1m0s scope=user cache_empty=true"
				}
				if got := fmtDecision(e.Cache(selectQ("SELECT 1 FROM t", "select ? from t", "shop.t"))); got != want {
					t.Fatalf("cache: got %s, want %s", got, want)
				}
				if r := e.Query(selectQ("SELECT 1", "select ?")); r.Kind != QueryNone {
					t.Fatalf("query: got %v, want none", r.Kind)
				}
				// A killed invalidate() may have named any table.
				var all []string
				if strings.Contains(tt.code, "function invalidate") {
					all = []string{Everything}
				}
				if got := e.Invalidate(&Write{Tables: []string{"shop.t"}, Kind: "delete"}); !slices.Equal(got, all) {
					t.Fatalf("invalidate: got %v, want %v", got, all)
				}
			}
			if s := e.Stats(); s.Kills != n {
				t.Errorf("kills: got %d, want %d", s.Kills, n)
			}
			if !contains(logs.String(), "killed at its deadline") || !contains(logs.String(), "policy.lua:2") {
				t.Errorf("log lacks the kill at policy.lua:2:\n%s", logs.String())
			}
			// Logged once per minute per site, not once per kill.
			if got := strings.Count(logs.String(), "killed at its deadline"); got != 1 {
				t.Errorf("kill log lines: got %d, want 1", got)
			}
		})
	}
}

func TestMemoryLimits(t *testing.T) {
	tests := []struct {
		name, code, want string
	}{
		{"registry", "local big = {}\nfor i = 1, 40000 do big[i] = i end\nfunction cache(q)\n  return unpack(big)\nend\n", "registry overflow"},
		{"recursion", "local function f(n) return 1 + f(n + 1) end\nfunction cache(q)\n  return f(1)\nend\n", "stack overflow"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs logBuf
			e, _ := loadText(t, tt.code, Options{Logger: logs.logger()})
			if got := fmtDecision(e.Cache(selectQ("SELECT 1 FROM t", "select ? from t", "shop.t"))); got != "no cache" {
				t.Errorf("got %s, want no cache", got)
			}
			if s := e.Stats(); s.Errors != 1 {
				t.Errorf("errors: got %d, want 1", s.Errors)
			}
			if !contains(logs.String(), tt.want) {
				t.Errorf("log lacks %q:\n%s", tt.want, logs.String())
			}
		})
	}
}

func TestScriptError(t *testing.T) {
	var logs logBuf
	e, _ := loadText(t, "function cache(q)\n  local t = nil\n  if q.kind == \"select\" then error(\"boom\") end\n  return t.x\nend\n",
		Options{Logger: logs.logger()})
	for range 5 {
		if got := fmtDecision(e.Cache(selectQ("SELECT 1", "select ?"))); got != "no cache" {
			t.Errorf("got %s, want no cache", got)
		}
	}
	if s := e.Stats(); s.Errors != 5 || s.Kills != 0 {
		t.Errorf("got errors=%d kills=%d, want 5 and 0", s.Errors, s.Kills)
	}
	if got := strings.Count(logs.String(), "policy hook failed"); got != 1 {
		t.Errorf("log lines: got %d, want 1 (once per minute per site):\n%s", got, logs.String())
	}
	if !contains(logs.String(), "policy.lua:3") {
		t.Errorf("log lacks policy.lua:3:\n%s", logs.String())
	}
	if !contains(logs.String(), "boom") {
		t.Errorf("log lacks the message:\n%s", logs.String())
	}
}

func TestMalformedResults(t *testing.T) {
	tests := []struct {
		name, ret string
	}{
		{"ttl not a number", `{ ttl = "abc" }`},
		{"negative ttl", `{ ttl = -1 }`},
		{"zero ttl", `{ ttl = 0 }`},
		{"scope", `{ ttl = 5, scope = "everyone" }`},
		{"typo field", `{ tll = 5 }`},
		{"positional", `{ 5 }`},
		{"cache_empty", `{ cache_empty = "yes" }`},
		{"max_bytes", `{ max_bytes = 1.5 }`},
		{"depends string", `{ depends = "shop.t" }`},
		{"depends unqualified", `{ depends = { "orders" } }`},
		{"depends trailing blank", `{ depends = { "shop.orders " } }`},
		{"depends inner blank", `{ depends = { "shop. orders" } }`},
		{"depends three parts", `{ depends = { "shop.orders.x" } }`},
		{"depends unclosed quote", "{ depends = { '`shop`.`orders' } }"},
		{"depends empty quote", "{ depends = { '``.orders' } }"},
		{"soft_ttl past ttl", `{ ttl = 5, soft_ttl = 10 }`},
		{"admit", `{ ttl = 5, admit = "sometimes" }`},
		{"admit not a string", `{ ttl = 5, admit = true }`},
		{"number", `42`},
		{"string", `"yes"`},
		{"true", `true`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs logBuf
			e, _ := loadText(t, "function cache(q)\n  return "+tt.ret+"\nend\n", Options{Logger: logs.logger()})
			if got := fmtDecision(e.Cache(selectQ("SELECT 1", "select ?"))); got != "no cache" {
				t.Errorf("got %s, want no cache", got)
			}
			if s := e.Stats(); s.BadResults != 1 {
				t.Errorf("bad results: got %d, want 1", s.BadResults)
			}
			if !contains(logs.String(), "policy.lua:1") {
				t.Errorf("log lacks policy.lua:1:\n%s", logs.String())
			}
		})
	}
}

func TestDecisionFields(t *testing.T) {
	e, _ := loadText(t, `function cache(q)
  return { ttl = 90, soft_ttl = 30.5, scope = "shared", max_bytes = 4096, cache_empty = false, depends = { "shop.a", "shop.b" }, admit = "always" }
end
`, Options{})
	d, ok := e.Cache(selectQ("SELECT 1", "select ?"))
	want := Decision{TTL: 90 * time.Second, SoftTTL: 30500 * time.Millisecond, Scope: ScopeShared, MaxBytes: 4096,
		CacheEmpty: false, Depends: []string{"shop.a", "shop.b"}, Admit: AdmitAlways}
	if !ok || fmt.Sprint(d) != fmt.Sprint(want) {
		t.Errorf("got %+v %t, want %+v true", d, ok, want)
	}
}

func TestQueryResults(t *testing.T) {
	str := func(s string) *string { return &s }
	tests := []struct {
		name, ret string
		want      QueryResult
	}{
		{"nil", `nil`, QueryResult{}},
		{"rewrite", `"SELECT 2"`, QueryResult{Kind: QueryRewrite, SQL: "SELECT 2"}},
		{"affected", `{ affected_rows = 3 }`, QueryResult{Kind: QueryAffected, Affected: 3}},
		{"error default code", `{ error = "no" }`, QueryResult{Kind: QueryError, ErrCode: 1105, ErrMsg: "no"}},
		{"error code", `{ error = "denied", code = 1142 }`, QueryResult{Kind: QueryError, ErrCode: 1142, ErrMsg: "denied"}},
		{"rows with null", `{ columns = { "a", "b", "c" }, rows = { { 1, require("mycached").null, true }, { "x" } } }`,
			QueryResult{Kind: QueryResultSet, Columns: []string{"a", "b", "c"},
				Rows: [][]*string{{str("1"), nil, str("1")}, {str("x"), nil, nil}}}},
		{"no rows", `{ columns = { "a" } }`, QueryResult{Kind: QueryResultSet, Columns: []string{"a"}}},
		{"garbage", `42`, QueryResult{}},
		{"too many cells", `{ columns = { "a" }, rows = { { 1, 2 } } }`, QueryResult{}},
		{"empty table", `{}`, QueryResult{}},
		{"empty rewrite", `"  "`, QueryResult{}},
		{"affected past 2^63", `{ affected_rows = 2^70 }`, QueryResult{}},
		{"rows and affected", `{ columns = { "a" }, rows = { { 1 } }, affected_rows = 1 }`, QueryResult{}},
		{"error and rows", `{ error = "no", columns = { "a" } }`, QueryResult{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := loadText(t, "function query(q)\n  return "+tt.ret+"\nend\n", Options{})
			if got := e.Query(selectQ("SELECT 1", "select ?")); fmt.Sprint(deref(got)) != fmt.Sprint(deref(tt.want)) {
				t.Errorf("got %+v, want %+v", deref(got), deref(tt.want))
			}
		})
	}
}

// deref makes rows printable by value.
func deref(r QueryResult) []any {
	var rows [][]string
	for _, row := range r.Rows {
		var cells []string
		for _, c := range row {
			if c == nil {
				cells = append(cells, "NULL")
			} else {
				cells = append(cells, *c)
			}
		}
		rows = append(rows, cells)
	}
	return []any{r.Kind, r.SQL, r.Columns, rows, r.Affected, r.ErrCode, r.ErrMsg}
}

// TestSandboxEscapes: a hook cannot take down the sandbox's guards or
// reach what it leaves out. Each attempt must fail with an error, so the
// statement goes uncached; each check must hold.
func TestSandboxEscapes(t *testing.T) {
	tests := []struct {
		name, code string
		fails      bool
	}{
		{"rawset _G", `rawset(_G, "leak", 1)`, true},
		{"new global through _G", `_G.leak = 1`, true},
		{"setmetatable _G", `setmetatable(_G, nil)`, true},
		{"write _G's metatable", `getmetatable(_G).__newindex = nil`, true},
		{"string.find", `string.find = function() return 1 end`, true},
		{"rawset string", `rawset(string, "find", tostring)`, true},
		{"string metatable __index", `getmetatable("").__index = {}`, true},
		{"string metatable __index field", `getmetatable("").__index.upper = function() return "x" end`, true},
		{"rawset string metatable", `rawset(getmetatable(""), "__index", {})`, true},
		{"string.__index", `string.__index.upper = tostring`, true},
		{"setmetatable string", `setmetatable("", nil)`, true},
		{"setmetatable number", `setmetatable(1, { __index = function() return 1 end })`, true},
		{"setmetatable q", `setmetatable(q, nil)`, true},
		{"write q", `q.sql = "x"`, true},
		{"table library", `table.insert = nil`, true},
		{"math library", `math.floor = nil`, true},
		{"os library", `os.time = nil`, true},
		{"mycached", `require("mycached").now = nil`, true},
		{"mycached.cache", `require("mycached").cache.get = nil`, true},
		{"rawset mycached", `rawset(require("mycached"), "now", 1)`, true},
		{"load", `load("return 1")`, true},
		{"loadstring", `loadstring("return 1")`, true},
		{"dofile", `dofile("/etc/passwd")`, true},
		{"loadfile", `loadfile("/etc/passwd")`, true},
		{"require a module", `require("os")`, true},
		{"debug", `debug.getinfo(1)`, true},
		{"getfenv", `getfenv(1)`, true},
		{"setfenv", `setfenv(1, {})`, true},
		{"collectgarbage", `collectgarbage()`, true},
		{"coroutine", `coroutine.wrap(function() end)()`, true},
		{"module", `module("x")`, true},
		{"newproxy", `newproxy(true)`, true},
		{"io", `io.write("x")`, true},
		{"os.execute", `os.execute("true")`, true},
		{"string.dump", `string.dump(function() end)`, true},
		{"string.byte of a huge range", `local t = { string.byte(string.rep("x", 1e6), 1, -1) }`, true},
		{"unpack of a huge range", `local t = { unpack({}, 1, 1e9) }`, true},
		{"format width", `string.format("%999d", 1)`, true},
		{"_G's metatable is locked", `assert(getmetatable(_G) == "locked")`, false},
		{"library metatables are locked", `assert(getmetatable(string) == "locked" and getmetatable(table) == "locked" and getmetatable(require("mycached")) == "locked")`, false},
		{"the string metatable is a view", `assert(getmetatable("").__index.upper("a") == "A")`, false},
		{"no package library", `assert(package == nil and _G.package == nil)`, false},
		{"own tables are the script's", `local t = setmetatable({}, {}) rawset(t, "a", 1) t.b = 2 assert(t.a + t.b == 3)`, false},
		{"string methods", `assert(("abc"):upper() == "ABC" and ("a,b"):find(",", 1, true) == 2)`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs logBuf
			e, _ := loadText(t, "function cache(q)\n  "+tt.code+"\n  return { ttl = 1 }\nend\n", Options{Logger: logs.logger()})
			got := fmtDecision(e.Cache(selectQ("SELECT 1", "select ?")))
			s := e.Stats()
			switch {
			case tt.fails && (got != "no cache" || s.Errors+s.Kills != 1):
				// The huge ranges may run out of time, on a loaded
				// machine, before they run out of memory: killed.
				t.Errorf("got %s and %+v, want no cache and 1 error (or 1 kill)", got, s)
			case !tt.fails && got != "ttl=1s scope=user cache_empty=true":
				t.Errorf("got %s, want ttl=1s:\n%s", got, logs.String())
			}
		})
	}
}

// TestTamperingDoesNotLeak: whatever one script tries against the shared
// libraries, in pcall so that it carries on, the other scripts of the
// state, and later calls, see the real libraries.
func TestTamperingDoesNotLeak(t *testing.T) {
	dir := t.TempDir()
	honest := writeScript(t, dir, "honest.lua", `local m = require("mycached")
function cache(q)
  local ok = ("abc"):upper() == "ABC" and string.find("a-b", "-", 1, true) == 2
    and string.format("%d", 3) == "3" and select("#", string.gsub("aa", "a", "b")) == 2
    and table.concat({ "a", "b" }) == "ab" and type(m.now()) == "number"
    and math.floor(1.5) == 1 and os.time() > 0 and getmetatable("").__index == string
  if ok then return { ttl = 42 } end
  return { ttl = 1 }
end
`)
	tamper := writeScript(t, dir, "tamper.lua", `local evil = function() return 1 end
function cache(q, next)
  local attempts = {
    function() string.find = evil end,
    function() rawset(string, "find", evil) end,
    function() getmetatable("").__index = { upper = evil } end,
    function() getmetatable("").__index.upper = evil end,
    function() rawset(getmetatable(""), "__index", {}) end,
    function() setmetatable("", nil) end,
    function() table.concat = evil end,
    function() math.floor = evil end,
    function() os.time = evil end,
    function() require("mycached").now = evil end,
    function() setmetatable(_G, nil) end,
    function() rawset(_G, "string", { find = evil }) end,
    function() _G.string = {} end,
  }
  local broke = 0
  for _, f in ipairs(attempts) do
    if pcall(f) then broke = broke + 1 end
  end
  if broke > 0 then return { ttl = 1000 + broke } end
  return next(q)
end
`)
	// One state, so that every call sees what the earlier ones did.
	e := mustLoad(t, []string{honest, tamper}, Options{MaxPool: 1})
	for i := range 3 {
		q := selectQ(fmt.Sprintf("SELECT %d", i), "select ?")
		if got, want := fmtDecision(e.Cache(q)), "ttl=42s scope=user cache_empty=true"; got != want {
			t.Fatalf("call %d: got %s, want %s", i, got, want)
		}
	}
	// At the top level too, the libraries are read-only.
	p := writeScript(t, dir, "top.lua", "string.trim = function(s) return s end\n")
	if _, err := Load([]string{p}, Options{}); !errors.Is(err, ErrTopLevel) || !contains(err.Error(), "read-only") {
		t.Errorf("top-level tampering: got %v, want ErrTopLevel saying read-only", err)
	}
}

// TestKillsCannotBeCaught: pcall and xpcall cannot swallow a kill; the
// call ends as killed even when the script catches the error and returns.
func TestKillsCannotBeCaught(t *testing.T) {
	tests := []struct{ name, body string }{
		{"pcall of a memory kill", `local ok = pcall(string.rep, "x", 1e9)`},
		{"pcall of a deadline kill", `local ok = pcall(function() while true do end end)`},
		{"xpcall with a looping handler", `xpcall(function() while true do end end, function() while true do end end)`},
		{"pcall in a loop", `for i = 1, 1e9 do pcall(string.find, q.sql, "^(.-)%-%-(.-)nocache") end`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := loadText(t, "function cache(q)\n  "+tt.body+"\n  return { ttl = 1 }\nend\n", Options{Timeout: 50 * time.Millisecond})
			if got := fmtDecision(e.Cache(dashQuery(6000))); got != "no cache" {
				t.Errorf("got %s, want no cache", got)
			}
			if s := e.Stats(); s.Kills != 1 {
				t.Errorf("got %+v, want 1 kill", s)
			}
		})
	}
}

// TestHugeErrorIsTruncated: a script's error of any size is logged by its
// start only.
func TestHugeErrorIsTruncated(t *testing.T) {
	var logs logBuf
	e, _ := loadText(t, "function cache(q)\n  error(string.rep(\"x\", 1e6))\nend\n", Options{Logger: logs.logger()})
	e.Cache(selectQ("SELECT 1", "select ?"))
	if n := len(logs.String()); n > 4096 || !contains(logs.String(), "policy.lua:2") {
		t.Errorf("got a log of %d bytes, want the error's start with its position:\n%.300s", n, logs.String())
	}
}

// TestScriptStatsBlameTheScript: each script's errors and kills count
// against that script, in a chain where one wraps the other.
func TestScriptStatsBlameTheScript(t *testing.T) {
	dir := t.TempDir()
	base := writeScript(t, dir, "base.lua", "function cache(q)\n  if q.sql:find(\"boom\") then error(\"boom\") end\n  return { ttl = 1 }\nend\n")
	wrap := writeScript(t, dir, "wrap.lua", "function cache(q, next)\n  if q.sql:find(\"loop\") then while true do end end\n  return next(q)\nend\n")
	e := mustLoad(t, []string{base, wrap}, Options{Timeout: 50 * time.Millisecond})
	for range 3 {
		e.Cache(selectQ("SELECT 'boom'", "select ?"))
	}
	e.Cache(selectQ("SELECT 'loop'", "select ?"))
	e.Cache(selectQ("SELECT 1", "select ?"))
	got := e.ScriptStats()
	want := []ScriptStats{{Name: base, Errors: 3}, {Name: wrap, Kills: 1}}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("script %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

// TestScriptLogBounded: a script's log lines are clipped, and so is their
// rate: a script that logs whole results on every statement cannot fill
// the disk. The lines dropped are counted in one line of their own.
func TestScriptLogBounded(t *testing.T) {
	var logs logBuf
	code := "local m = require(\"mycached\")\n" +
		"function cache(q)\n  m.log.info(string.rep(\"x\", 100000) .. q.sql, \"k\", string.rep(\"y\", 100000))\n  return nil\nend\n"
	e, _ := loadText(t, code, Options{Logger: logs.logger(), Timeout: time.Second})
	start := time.Now()
	for range 3 * scriptLogRate {
		e.Cache(selectQ("SELECT 1 FROM t", "select ? from t", "shop.t"))
	}
	// Each second the calls touch lets scriptLogRate lines through: on a
	// loaded machine they may take several.
	seconds := int(time.Since(start)/time.Second) + 2
	time.Sleep(1100 * time.Millisecond) // the next second says what was dropped
	e.Cache(selectQ("SELECT 1 FROM t", "select ? from t", "shop.t"))
	out := logs.String()
	lines := strings.Count(out, "msg=xxxx") + strings.Count(out, "msg=\"xxxx")
	if lines == 0 || lines > seconds*scriptLogRate+1 {
		t.Errorf("%d of %d lines logged over at most %d seconds, want at most %d a second", lines, 3*scriptLogRate+1, seconds, scriptLogRate)
	}
	if len(out) > (lines+2)*(2*maxLogText+300) {
		t.Errorf("%d bytes logged for %d lines: not clipped", len(out), lines)
	}
	if lines < 3*scriptLogRate && !strings.Contains(out, "lines dropped") {
		t.Errorf("the dropped lines are not counted:\n%.500s", out)
	}
}

func TestSplitTableName(t *testing.T) {
	for _, tt := range []struct{ in, db, table string }{
		{"shop.orders", "shop", "orders"},
		{"`shop`.`orders`", "shop", "orders"},
		{"`a.b`.c", "a.b", "c"},
		{"a.`b.c`", "a", "b.c"},
		{"`x``y`.t", "x`y", "t"},
		{"Shop.Orders", "Shop", "Orders"},
	} {
		db, table, ok := SplitTableName(tt.in)
		if !ok || db != tt.db || table != tt.table {
			t.Errorf("SplitTableName(%q) = %q, %q, %v; want %q, %q", tt.in, db, table, ok, tt.db, tt.table)
		}
	}
	for _, in := range []string{"", "orders", ".orders", "shop.", "shop.orders ", " shop.orders", "a.b.c", "`a`b.c", "`a.c", "a.``"} {
		if db, table, ok := SplitTableName(in); ok {
			t.Errorf("SplitTableName(%q) = %q, %q; want it refused", in, db, table)
		}
	}
}
