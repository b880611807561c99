package cachepolicy

import (
	"context"
	"errors"
	"fmt"
	"strings"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"
)

// hook names one of the script entry points.
type hook int

const (
	hookCache hook = iota
	hookInvalidate
	hookQuery
	numHooks
)

func (h hook) String() string {
	switch h {
	case hookCache:
		return "cache"
	case hookInvalidate:
		return "invalidate"
	}
	return "query"
}

// Limits on a state's memory. The registry is the Lua value stack: its cap
// stops unpack() of a huge table and deep varargs; the call stack cap stops
// runaway recursion. What one call allocates through the libraries and the
// .. operator is bounded by its budget (budget.go).
const (
	registrySize    = 1024
	registryMaxSize = 32 * 1024 // slots of 16 bytes: 512 KiB
	callStackSize   = 128
)

// compileChunk parses and compiles one script, with every .. turned into a
// budgeted call (rewrite.go). The proto is immutable and shared by every
// state.
func compileChunk(name string, text []byte) (*lua.FunctionProto, error) {
	chunk, err := parse.Parse(strings.NewReader(string(text)), name)
	if err != nil {
		if pe, ok := err.(*parse.Error); ok {
			if pe.Pos.Line < 1 {
				// The parser names no line for an error at the end of
				// the text (an unclosed function or table).
				return nil, fmt.Errorf("%w: %s: at the end of the script: %s", ErrCompile, name, pe.Message)
			}
			return nil, fmt.Errorf("%w: %s:%d: %s near %q", ErrCompile, name, pe.Pos.Line, pe.Message, pe.Token)
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrCompile, name, err)
	}
	p, err := lua.Compile(guardConcat(chunk), name)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrCompile, name, err)
	}
	if err := checkNoConcat(p); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrCompile, name, err)
	}
	return p, nil
}

// state is one Lua state with every script loaded, and the per-call
// bookkeeping of the call running in it. A state is used by one goroutine
// at a time: it leaves the pool for exactly one call.
type state struct {
	set    *scriptSet
	L      *lua.LState
	has    [numHooks]bool
	memoOK bool
	entry  [numHooks]*lua.LFunction // the outermost script's hook, wrapped
	site   [numHooks]string         // file:line of that hook, for logs
	qud    *lua.LUserData           // reused view of the current Query
	wud    *lua.LUserData           // reused view of the current Write
	null   *lua.LUserData           // mycached.null, a SQL NULL in results
	broken bool                     // killed mid-call: do not reuse
	locked map[*lua.LTable]bool     // tables rawset must not write
	bud    budget                   // of the call running in the state

	// Per-call state, reset by end.
	q        *Query
	w        *Write
	touched  fieldSet
	volatile bool       // the call read the clock or the kv store
	tables   lua.LValue // q.tables or w.tables, built on first read
	keys     lua.LValue // q.keys, built on first read
	params   lua.LValue
}

// newState builds a sandboxed state and runs every script's top level in
// it. Each script gets its own global table, so scripts cannot clobber one
// another's hooks; new globals are refused once the top level has run.
func newState(set *scriptSet) (*state, error) {
	L := lua.NewState(lua.Options{
		SkipOpenLibs:     true,
		CallStackSize:    callStackSize,
		RegistrySize:     registrySize,
		RegistryMaxSize:  registryMaxSize,
		RegistryGrowStep: 1024,
	})
	st := &state{set: set, L: L, memoOK: true}
	sandbox, err := st.openSandbox()
	if err != nil {
		L.Close()
		return nil, err
	}
	st.qud = st.view(st.queryIndex)
	st.wud = st.view(st.writeIndex)

	var chains [numHooks][]*lua.LFunction
	for _, p := range set.protos {
		env := L.NewTable()
		env.RawSetString("_G", env)
		mt := L.NewTable()
		mt.RawSetString("__index", sandbox)
		mt.RawSetString("__metatable", lua.LString("locked"))
		L.SetMetatable(env, mt)
		fn := L.NewFunctionFromProto(p)
		fn.Env = env
		if err := st.runTopLevel(fn); err != nil {
			L.Close()
			return nil, fmt.Errorf("%w: %s", ErrTopLevel, errText(err))
		}
		for h := hook(0); h < numHooks; h++ {
			switch v := env.RawGetString(h.String()).(type) {
			case *lua.LFunction:
				chains[h] = append(chains[h], v)
			case *lua.LNilType:
			default:
				L.Close()
				return nil, fmt.Errorf("%w: %s: global %s is a %s, want a function", ErrTopLevel, p.SourceName, h, v.Type())
			}
		}
		switch v := env.RawGetString("memo").(type) {
		case lua.LBool:
			st.memoOK = st.memoOK && bool(v)
		case *lua.LNilType:
		default:
			L.Close()
			return nil, fmt.Errorf("%w: %s: global memo is a %s, want a boolean", ErrTopLevel, p.SourceName, v.Type())
		}
		mt.RawSetString("__newindex", L.NewFunction(refuseGlobal))
		st.locked[env] = true
	}
	for h := hook(0); h < numHooks; h++ {
		st.has[h] = len(chains[h]) > 0
		st.entry[h] = st.chain(h, chains[h])
		if n := len(chains[h]); n > 0 {
			p := chains[h][n-1].Proto
			st.site[h] = fmt.Sprintf("%s:%d", p.SourceName, p.LineDefined)
		}
	}
	return st, nil
}

// refuseGlobal is every script's __newindex once loaded: a hook that
// assigns an undeclared global is almost always a typo for a local, and
// would otherwise leak state between unrelated statements.
func refuseGlobal(L *lua.LState) int {
	L.RaiseError("assignment to undeclared global %q (declare it at the top level, or use local)", L.Get(2).String())
	return 0
}

// runTopLevel runs a script's main chunk under the load budget.
func (st *state) runTopLevel(fn *lua.LFunction) error {
	st.begin(topLevelTimeout, topLevelMemory)
	st.L.Push(fn)
	err := st.L.PCall(0, 0, nil)
	reason := st.finish()
	if err == nil && (reason == notKilled || reason == killDeadline) {
		return nil
	}
	msg := "stopped"
	if err != nil {
		msg = errText(err)
	}
	// A kill the script caught (pcall) stops it at its next step with the
	// state's cancellation, whose text says nothing of why.
	if reason == killMemory && strings.Contains(msg, context.Canceled.Error()) {
		msg = strings.Replace(msg, context.Canceled.Error(), "memory budget of the call exhausted", 1)
	}
	switch reason {
	case killMemory:
		msg += fmt.Sprintf(" (a top level may allocate %d bytes)", topLevelMemory)
	case killDeadline:
		msg += fmt.Sprintf(" (a top level may run for %v)", topLevelTimeout)
	case killClosed:
		msg += " (the engine was closed)"
	}
	return errors.New(msg)
}

// chain wraps the hooks of one kind, innermost first, so that each is
// called as hook(arg, next) with next reaching the one loaded before it.
// Calling next() with no argument passes the current statement on.
func (st *state) chain(h hook, fns []*lua.LFunction) *lua.LFunction {
	L := st.L
	inner := L.NewFunction(st.builtinFor(h))
	for _, fn := range fns {
		fn, next := fn, inner
		inner = L.NewFunction(func(L *lua.LState) int {
			arg := L.Get(1)
			if arg == lua.LNil {
				arg = st.defaultArg(h)
			}
			L.Push(fn)
			L.Push(arg)
			L.Push(next)
			L.Call(2, 1)
			return 1
		})
	}
	return inner
}

func (st *state) defaultArg(h hook) lua.LValue {
	if h == hookInvalidate {
		return st.wud
	}
	return st.qud
}

// builtinFor returns what next() means below the first script: the
// built-in default for cache, and nothing for the other hooks.
func (st *state) builtinFor(h hook) lua.LGFunction {
	if h != hookCache {
		return func(L *lua.LState) int { L.Push(lua.LNil); return 1 }
	}
	return func(L *lua.LState) int {
		var cacheable bool
		var kind string
		switch v := L.Get(1).(type) {
		case *lua.LUserData:
			if v == st.qud && st.q != nil {
				st.touched |= fieldCacheable | fieldKind
				cacheable, kind = st.q.Cacheable, st.q.Kind
			}
		case *lua.LTable:
			cacheable = lua.LVAsBool(v.RawGetString("cacheable"))
			kind = lua.LVAsString(v.RawGetString("kind"))
		}
		if !cacheable || kind != "select" {
			L.Push(lua.LNil)
			return 1
		}
		t := L.CreateTable(0, 2)
		t.RawSetString("ttl", lua.LNumber(st.set.eng.builtin.TTL.Seconds()))
		t.RawSetString("cache_empty", lua.LTrue)
		L.Push(t)
		return 1
	}
}

// call runs the outermost hook h under the call's budget and returns its
// single result. On error it counts and logs the failure (as a kill when
// the budget ran out) and returns the site, file:line, that it blames. A
// killed call leaves the state broken: it may have stopped halfway through
// changing its script's variables.
func (st *state) call(h hook) (lua.LValue, string, error) {
	e := st.set.eng
	e.calls.Add(1)
	L := st.L
	st.begin(e.opts.Timeout, e.opts.MaxMemory+statementBytes(st.q, st.w))
	L.Push(st.entry[h])
	L.Push(st.defaultArg(h))
	err := L.PCall(1, 1, nil)
	reason := st.finish()
	if reason == killDeadline && err == nil {
		reason = notKilled // finished just as the deadline passed
	}
	if reason != notKilled && err == nil {
		err = errKilled
	}
	if err != nil {
		L.SetTop(0)
		site := errSite(err, st.site[h])
		e.blame(site, reason != notKilled)
		switch reason {
		case notKilled:
			e.errs.Add(1)
			e.logSite(site, "policy hook failed; treated as no decision",
				"hook", h.String(), "err", errText(err))
		case killClosed:
			e.kills.Add(1) // shutting down: not worth a log line
		default:
			e.kills.Add(1)
			if reason == killMemory {
				e.logSite(site, "policy hook killed over its memory budget; treated as no decision",
					"hook", h.String(), "budget", st.bud.limit)
			} else {
				e.logSite(site, "policy hook killed at its deadline; treated as no decision",
					"hook", h.String(), "timeout", e.opts.Timeout)
			}
		}
		if reason != notKilled {
			st.broken = true
		}
		return nil, site, err
	}
	ret := L.Get(-1)
	L.Pop(1)
	return ret, st.site[h], nil
}

// errKilled stands for the error of a call that was stopped yet returned.
var errKilled = errors.New("cachepolicy: call stopped")

// beginQuery points the reusable view at q for one call.
func (st *state) beginQuery(q *Query) { st.q = q }

// beginWrite points the reusable write view at w for one call.
func (st *state) beginWrite(w *Write) { st.w = w }

// end clears the per-call state before the state goes back to the pool,
// so that a script that kept q cannot read the next caller's statement
// through it, and so nothing from this call pins memory.
func (st *state) end() {
	st.q, st.w = nil, nil
	st.tables, st.params, st.keys = nil, nil, nil
	st.touched = 0
	st.volatile = false
	st.L.SetTop(0)
}

// memoizable reports whether the call's decision is a function of the
// statement's shape alone.
func (st *state) memoizable() bool {
	return st.memoOK && st.touched&^shapeFields == 0 && !st.volatile
}

// errText returns a Lua error's message with position, without the stack
// trace gopher-lua appends.
func errText(err error) string {
	var msg string
	if ae, ok := err.(*lua.ApiError); ok {
		msg = ae.Object.String()
	} else {
		msg = err.Error()
	}
	// A script can raise an error of any size; logs and load errors get
	// its start, which holds the position.
	if len(msg) > maxErrText {
		msg = msg[:maxErrText] + "..."
	}
	return msg
}

// maxErrText bounds the error text that is logged or returned.
const maxErrText = 512

// errSite extracts "file:line" from a Lua error message, or returns
// fallback when the message has no position.
func errSite(err error, fallback string) string {
	msg := errText(err)
	for i := 0; i < len(msg); i++ {
		if msg[i] != ':' {
			continue
		}
		j := i + 1
		for j < len(msg) && msg[j] >= '0' && msg[j] <= '9' {
			j++
		}
		if j > i+1 && j < len(msg) && msg[j] == ':' {
			return msg[:j]
		}
	}
	return fallback
}
