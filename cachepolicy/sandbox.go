package cachepolicy

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// openSandbox opens the safe libraries and returns the table every
// script's globals fall back to. The real global table is never handed to
// a script: without getfenv it is unreachable. Scripts see the libraries
// and the mycached module through read-only views, so that no script can
// change what string.find or require means for another script, or for a
// later call; their functions are the bounded ones of strlib.go.
func (st *state) openSandbox() (*lua.LTable, error) {
	L := st.L
	libs := []struct {
		name string
		fn   lua.LGFunction
	}{
		{lua.BaseLibName, lua.OpenBase},
		{lua.TabLibName, lua.OpenTable},
		{lua.StringLibName, lua.OpenString},
		{lua.MathLibName, lua.OpenMath},
		{lua.OsLibName, lua.OpenOs}, // only time and date are copied out
	}
	for _, lib := range libs {
		if err := L.CallByParam(lua.P{Fn: L.NewFunction(lib.fn), Protect: true}, lua.LString(lib.name)); err != nil {
			return nil, fmt.Errorf("cachepolicy: open %s: %w", lib.name, err)
		}
	}
	g := L.G.Global
	str := g.RawGetString("string").(*lua.LTable)
	tab := g.RawGetString("table").(*lua.LTable)
	osFull := g.RawGetString("os").(*lua.LTable)
	st.wrapLibs(str, tab, osFull)

	st.locked = make(map[*lua.LTable]bool)
	sb := L.NewTable()
	st.locked[sb] = true
	// The base functions scripts may use. Left out: load, loadstring,
	// loadfile, dofile and require (code loading), getfenv and setfenv
	// (they reach the real globals), print (stdout), collectgarbage (a full
	// GC per statement would stall the process) and module. rawset and
	// setmetatable are replaced by versions that respect the read-only
	// tables and cannot reach the metatables of strings or numbers.
	for _, name := range []string{
		"assert", "error", "getmetatable", "ipairs", "next", "pairs", "pcall",
		"rawequal", "rawget", "select", "tonumber", "tostring", "type", "unpack",
		"xpcall", "_VERSION",
	} {
		sb.RawSetString(name, g.RawGetString(name))
	}
	sb.RawSetString("rawset", L.NewFunction(st.rawSet))
	sb.RawSetString("setmetatable", L.NewFunction(setMetatable))
	sb.RawSetString(concatName, L.NewFunction(st.concat))

	roStr := st.readOnly("string", str)
	sb.RawSetString("string", roStr)
	sb.RawSetString("table", st.readOnly("table", tab))
	// What reads the clock or draws a random number makes the call's
	// decision volatile, as now() does: it is not memoized per shape.
	// os.time(t) and os.date(f, t) of a given time are not.
	volatile := func(fn lua.LValue, argAt int) *lua.LFunction {
		f := fn.(*lua.LFunction).GFunction
		return L.NewFunction(func(L *lua.LState) int {
			if argAt == 0 || L.Get(argAt) == lua.LNil {
				st.volatile = true
			}
			return f(L)
		})
	}
	math := L.NewTable()
	g.RawGetString("math").(*lua.LTable).ForEach(func(k, v lua.LValue) { math.RawSet(k, v) })
	math.RawSetString("random", volatile(math.RawGetString("random"), 0))
	sb.RawSetString("math", st.readOnly("math", math))
	osSafe := L.NewTable()
	osSafe.RawSetString("time", volatile(osFull.RawGetString("time"), 1))
	osSafe.RawSetString("date", volatile(osFull.RawGetString("date"), 2))
	sb.RawSetString("os", st.readOnly("os", osSafe))

	// gopher-lua makes the string table its own metatable, with
	// string.__index = string, so s:find() and string.__index.find would
	// reach the real table. Strings get a metatable of their own instead,
	// whose __metatable shows scripts a read-only view of it.
	str.RawSetString("__index", lua.LNil)
	smt := L.NewTable()
	smt.RawSetString("__index", str)
	view := L.NewTable()
	view.RawSetString("__index", roStr)
	smt.RawSetString("__metatable", st.readOnly("the string metatable", view))
	L.SetMetatable(lua.LString(""), smt)

	mod := st.readOnly("mycached", st.module())
	sb.RawSetString("require", L.NewFunction(func(L *lua.LState) int {
		if name := L.CheckString(1); name != "mycached" {
			L.RaiseError("require(%q): only \"mycached\" can be required", name)
		}
		L.Push(mod)
		return 1
	}))
	return sb, nil
}

// readOnly returns an empty table that reads through to t and refuses
// writes, raw ones included; its metatable is locked. pairs() over it
// sees nothing.
func (st *state) readOnly(name string, t *lua.LTable) *lua.LTable {
	L := st.L
	p := L.NewTable()
	mt := L.NewTable()
	mt.RawSetString("__index", t)
	mt.RawSetString("__newindex", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("%s is read-only (keep your own values in locals)", name)
		return 0
	}))
	mt.RawSetString("__metatable", lua.LString("locked"))
	p.Metatable = mt
	st.locked[p] = true
	return p
}

// rawSet is rawset, except on the read-only views and on a script's
// globals once its top level has run: rawset would otherwise get around
// their __newindex.
func (st *state) rawSet(L *lua.LState) int {
	t := L.CheckTable(1)
	k := L.CheckAny(2)
	v := L.CheckAny(3)
	if st.locked[t] {
		L.RaiseError("rawset: the table is read-only (globals are declared at the top level; keep other values in locals)")
	}
	L.RawSet(t, k, v)
	L.SetTop(1)
	return 1
}

// setMetatable is Lua 5.1's setmetatable. gopher-lua's also accepts
// strings, numbers and other values, and then replaces the metatable that
// every value of that type shares.
func setMetatable(L *lua.LState) int {
	t := L.CheckTable(1)
	L.CheckTypes(2, lua.LTNil, lua.LTTable)
	if mt, ok := t.Metatable.(*lua.LTable); ok && mt.RawGetString("__metatable") != lua.LNil {
		L.RaiseError("cannot change a protected metatable")
	}
	t.Metatable = L.Get(2)
	L.SetTop(1)
	return 1
}

// module builds the table require("mycached") returns. It is all of Go
// that a script can reach.
func (st *state) module() *lua.LTable {
	L := st.L
	e := st.set.eng
	st.null = L.NewUserData()
	mod := L.NewTable()
	mod.RawSetString("null", st.null)
	mod.RawSetString("default_ttl", lua.LNumber(e.opts.DefaultTTL.Seconds()))
	mod.RawSetString("now", L.NewFunction(func(L *lua.LState) int {
		st.volatile = true
		L.Push(lua.LNumber(float64(time.Now().UnixNano()) / 1e9))
		return 1
	}))

	kv := L.NewTable()
	kv.RawSetString("get", L.NewFunction(st.kvGet))
	kv.RawSetString("set", L.NewFunction(st.kvSet))
	kv.RawSetString("delete", L.NewFunction(st.kvDelete))
	mod.RawSetString("cache", st.readOnly("mycached.cache", kv))

	log := L.NewTable()
	log.RawSetString("info", L.NewFunction(func(L *lua.LState) int {
		msg := L.CheckString(1)
		if e.scriptLogs.allow(e.opts.Logger) {
			e.opts.Logger.Info(clip(msg), logArgs(L)...)
		}
		return 0
	}))
	log.RawSetString("warn", L.NewFunction(func(L *lua.LState) int {
		msg := L.CheckString(1)
		if e.scriptLogs.allow(e.opts.Logger) {
			e.opts.Logger.Warn(clip(msg), logArgs(L)...)
		}
		return 0
	}))
	mod.RawSetString("log", st.readOnly("mycached.log", log))

	metrics := L.NewTable()
	metrics.RawSetString("inc", L.NewFunction(func(L *lua.LState) int {
		name := L.CheckString(1)
		if !validMetricName(name) {
			L.RaiseError("metrics.inc(%q): names are 1 to 64 of [a-z0-9_]", name)
		}
		if e.opts.Metrics != nil {
			e.opts.Metrics(name)
		}
		return 0
	}))
	mod.RawSetString("metrics", st.readOnly("mycached.metrics", metrics))
	return mod
}

// validMetricName keeps script counters to names that every metrics
// format accepts.
func validMetricName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// logArgs turns the key-value pairs after the message into slog
// arguments, prefixed with the script position.
func logArgs(L *lua.LState) []any {
	args := []any{"at", strings.TrimSuffix(L.Where(1), ":")}
	for i := 2; i <= L.GetTop(); i++ {
		switch v := L.Get(i).(type) {
		case lua.LString:
			args = append(args, clip(string(v)))
		case lua.LNumber:
			args = append(args, float64(v))
		case lua.LBool:
			args = append(args, bool(v))
		case *lua.LNilType:
			args = append(args, nil)
		default:
			args = append(args, clip(v.String()))
		}
	}
	return args
}

// maxLogText bounds each string a script logs, and scriptLogRate the
// lines it logs per second: a script that logs every statement, or whole
// results, must not fill the disk.
const (
	maxLogText    = 1024
	scriptLogRate = 100
)

func clip(s string) string {
	if len(s) <= maxLogText {
		return s
	}
	return s[:maxLogText] + "…(" + strconv.Itoa(len(s)) + " bytes)"
}

// logLimiter lets scripts log scriptLogRate lines a second, and says how
// many it dropped once the second is over.
type logLimiter struct {
	mu      sync.Mutex
	second  int64
	n       int
	dropped int
}

func (l *logLimiter) allow(logger *slog.Logger) bool {
	now := time.Now().Unix()
	l.mu.Lock()
	defer l.mu.Unlock()
	if now != l.second {
		if l.dropped > 0 {
			logger.Warn("policy scripts logged too fast; lines dropped", "dropped", l.dropped, "limit_per_second", scriptLogRate)
		}
		l.second, l.n, l.dropped = now, 0, 0
	}
	if l.n >= scriptLogRate {
		l.dropped++
		return false
	}
	l.n++
	return true
}

// The kv functions return value (or true) on success and nil, message on
// failure, Lua's usual convention, so a script can decide to go on. The
// store has no context, so each operation runs on a goroutine of its own
// and the call waits for it only as long as its budget allows; an
// abandoned operation ends on its own, bounded by the store's timeouts.

// kvResult is the outcome of one kv operation.
type kvResult struct {
	val []byte
	ok  bool
	err error
}

// kvDo runs op under the running call's deadline.
func (st *state) kvDo(op func() kvResult) kvResult {
	st.volatile = true
	ch := make(chan kvResult, 1) // never blocks an abandoned op
	go func() {
		defer func() {
			// On the caller's goroutine a panic would have become a Lua
			// error; here it would end the process.
			if r := recover(); r != nil {
				ch <- kvResult{err: fmt.Errorf("cachepolicy: kv store panicked: %v", r)}
			}
		}()
		ch <- op()
	}()
	select {
	case r := <-ch:
		return r
	case <-st.bud.done:
		st.poll() // raises
		return kvResult{}
	}
}

func (st *state) kvGet(L *lua.LState) int {
	key := L.CheckString(1)
	kv := st.set.eng.opts.KV
	if kv == nil {
		st.volatile = true
		return pushFail(L, "cachepolicy: no kv store configured")
	}
	r := st.kvDo(func() kvResult {
		v, ok, err := kv.Get(key)
		return kvResult{v, ok, err}
	})
	if r.err != nil {
		return pushFail(L, r.err.Error())
	}
	if !r.ok {
		L.Push(lua.LNil)
		return 1
	}
	st.charge(int64(len(r.val)))
	L.Push(lua.LString(r.val))
	return 1
}

func (st *state) kvSet(L *lua.LState) int {
	key, val := L.CheckString(1), L.CheckString(2)
	ttl := time.Duration(float64(L.OptNumber(3, 0)) * float64(time.Second))
	kv := st.set.eng.opts.KV
	if kv == nil {
		st.volatile = true
		return pushFail(L, "cachepolicy: no kv store configured")
	}
	st.charge(int64(len(val))) // the copy below
	r := st.kvDo(func() kvResult { return kvResult{err: kv.Set(key, []byte(val), ttl)} })
	if r.err != nil {
		return pushFail(L, r.err.Error())
	}
	L.Push(lua.LTrue)
	return 1
}

func (st *state) kvDelete(L *lua.LState) int {
	key := L.CheckString(1)
	kv := st.set.eng.opts.KV
	if kv == nil {
		st.volatile = true
		return pushFail(L, "cachepolicy: no kv store configured")
	}
	r := st.kvDo(func() kvResult { return kvResult{err: kv.Delete(key)} })
	if r.err != nil {
		return pushFail(L, r.err.Error())
	}
	L.Push(lua.LTrue)
	return 1
}

func pushFail(L *lua.LState, msg string) int {
	L.Push(lua.LNil)
	L.Push(lua.LString(msg))
	return 2
}
