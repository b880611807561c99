package cachepolicy

import (
	"sort"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// The library functions below replace or wrap gopher-lua's. The VM stops a
// call at its deadline only between instructions; one call of a Go
// function is one instruction, so each function that can loop over its
// input or allocate in proportion to its arguments counts steps against
// the call's deadline (poll) and bytes against its memory budget (charge).
// The rest of the opened libraries do constant work, or work bounded by
// the Lua stack's cap (registryMaxSize), per call.

// luaSpecials are the characters that make a pattern more than plain text.
const luaSpecials = "^$*+?.([%-"

// wrapLibs installs the bounded functions into the opened string, table
// and os tables of a state.
func (st *state) wrapLibs(str, tab, osLib *lua.LTable) {
	L := st.L
	str.RawSetString("dump", lua.LNil)
	str.RawSetString("find", L.NewFunction(func(L *lua.LState) int { return st.strFind(L, true) }))
	str.RawSetString("match", L.NewFunction(func(L *lua.LState) int { return st.strFind(L, false) }))
	gmatch := L.NewFunction(st.strGmatch)
	str.RawSetString("gmatch", gmatch)
	str.RawSetString("gfind", gmatch)
	str.RawSetString("gsub", L.NewFunction(st.strGsub))
	str.RawSetString("rep", L.NewFunction(st.strRep))
	str.RawSetString("format", st.charged(str, "format", formatBytes))
	// upper and lower work on UTF-8 and may write three bytes for one
	// invalid byte; reverse copies its input twice.
	for _, name := range []string{"upper", "lower", "reverse"} {
		str.RawSetString(name, st.charged(str, name, func(L *lua.LState) int64 {
			return 3 * int64(len(L.CheckString(1)))
		}))
	}
	tab.RawSetString("concat", L.NewFunction(st.tableConcat))
	tab.RawSetString("sort", L.NewFunction(st.tableSort))
	osLib.RawSetString("date", st.charged(osLib, "date", func(L *lua.LState) int64 {
		// One conversion such as %c expands two bytes to 24.
		return 16*int64(len(L.OptString(1, ""))) + 64
	}))
}

// charged wraps lib[name] so that each call first charges the bytes that
// cost says it will allocate.
func (st *state) charged(lib *lua.LTable, name string, cost func(L *lua.LState) int64) *lua.LFunction {
	orig := lib.RawGetString(name).(*lua.LFunction).GFunction
	return st.L.NewFunction(func(L *lua.LState) int {
		st.charge(cost(L))
		return orig(L)
	})
}

// newMatcher returns a matcher of pat over src bound to the running call.
func (st *state) newMatcher(src, pat string) *matcher {
	return &matcher{src: src, pat: pat, poll: st.poll, raise: st.L.RaiseError}
}

// startIndex converts Lua's 1-based, possibly negative init argument to an
// offset into a string of length n, clamped to [0, n].
func startIndex(init, n int) int {
	if init < 0 {
		init += n + 1
	}
	init--
	return min(max(init, 0), n)
}

// strFind is string.find (find) and string.match (!find), with Lua 5.1's
// semantics.
func (st *state) strFind(L *lua.LState, find bool) int {
	s := L.CheckString(1)
	pat := L.CheckString(2)
	init := startIndex(L.OptInt(3, 1), len(s))
	if find && (lua.LVAsBool(L.Get(4)) || !strings.ContainsAny(pat, luaSpecials)) {
		i := strings.Index(s[init:], pat)
		if i < 0 {
			L.Push(lua.LNil)
			return 1
		}
		L.Push(lua.LNumber(init + i + 1))
		L.Push(lua.LNumber(init + i + len(pat)))
		return 2
	}
	anchor := strings.HasPrefix(pat, "^")
	if anchor {
		pat = pat[1:]
	}
	m := st.newMatcher(s, pat)
	for s1 := init; ; s1++ {
		m.reset()
		if e := m.match(s1, 0); e != -1 {
			if find {
				L.Push(lua.LNumber(s1 + 1))
				L.Push(lua.LNumber(e))
				return m.pushCaptures(L, s1, e, false) + 2
			}
			return m.pushCaptures(L, s1, e, true)
		}
		if anchor || s1 >= len(s) {
			break
		}
	}
	L.Push(lua.LNil)
	return 1
}

// strGmatch is string.gmatch: an iterator over the matches of a pattern.
// As in Lua 5.1, '^' is not an anchor here. The iterator can run in a
// later call than the one that made it; it polls whichever call is
// running.
func (st *state) strGmatch(L *lua.LState) int {
	s := L.CheckString(1)
	pat := L.CheckString(2)
	pos := 0
	L.Push(L.NewFunction(func(L *lua.LState) int {
		m := st.newMatcher(s, pat)
		for src := pos; src <= len(s); src++ {
			m.reset()
			if e := m.match(src, 0); e != -1 {
				pos = e
				if e == src {
					pos++ // an empty match: go on at least one position
				}
				return m.pushCaptures(L, src, e, true)
			}
		}
		pos = len(s) + 1
		return 0
	}))
	return 1
}

// strGsub is string.gsub with Lua 5.1's semantics. Its result is charged
// as it grows.
func (st *state) strGsub(L *lua.LState) int {
	src := L.CheckString(1)
	pat := L.CheckString(2)
	repl := L.Get(3)
	switch repl.Type() {
	case lua.LTNumber, lua.LTString, lua.LTTable, lua.LTFunction:
	default:
		L.ArgError(3, "string/function/table expected")
	}
	maxN := L.OptInt(4, len(src)+1)
	anchor := strings.HasPrefix(pat, "^")
	if anchor {
		pat = pat[1:]
	}
	var b strings.Builder
	add := func(s string) {
		st.charge(int64(len(s)))
		b.WriteString(s)
	}
	m := st.newMatcher(src, pat)
	s, n := 0, 0
	for n < maxN {
		m.reset()
		e := m.match(s, 0)
		if e != -1 {
			n++
			st.addValue(L, m, repl, s, e, add)
		}
		if e != -1 && e > s {
			s = e
		} else if s < len(src) {
			add(src[s : s+1])
			s++
		} else {
			break
		}
		if anchor {
			break
		}
	}
	add(src[s:])
	L.Push(lua.LString(b.String()))
	L.Push(lua.LNumber(n))
	return 2
}

// addValue appends the replacement for the match src[s:e].
func (st *state) addValue(L *lua.LState, m *matcher, repl lua.LValue, s, e int, add func(string)) {
	var v lua.LValue
	switch r := repl.(type) {
	case lua.LString, lua.LNumber:
		addTemplate(m, lua.LVAsString(r), s, e, add)
		return
	case *lua.LFunction:
		L.Push(r)
		n := m.pushCaptures(L, s, e, true)
		L.Call(n, 1)
		v = L.Get(-1)
		L.Pop(1)
	case *lua.LTable:
		v = L.GetTable(r, m.capture(0, s, e))
	}
	switch v := v.(type) {
	case lua.LString, lua.LNumber:
		add(lua.LVAsString(v))
	default:
		if lua.LVIsFalse(v) {
			add(m.src[s:e]) // nil or false: keep the match
			return
		}
		L.RaiseError("invalid replacement value (a %s)", v.Type())
	}
}

// addTemplate expands a replacement string: %0 is the whole match, %1 to
// %9 the captures, and % before any other character that character.
func addTemplate(m *matcher, t string, s, e int, add func(string)) {
	for {
		i := strings.IndexByte(t, '%')
		if i < 0 || i == len(t)-1 {
			add(t)
			return
		}
		add(t[:i])
		switch c := t[i+1]; {
		case c == '0':
			add(m.src[s:e])
		case isDigit(c):
			add(lua.LVAsString(m.capture(int(c-'1'), s, e)))
		default:
			add(t[i+1 : i+2])
		}
		t = t[i+2:]
	}
}

// strRep is string.rep, charged for its result.
func (st *state) strRep(L *lua.LState) int {
	s := L.CheckString(1)
	n := L.CheckInt(2)
	if n <= 0 || s == "" {
		L.Push(lua.LString(""))
		return 1
	}
	st.chargeProduct(len(s), n)
	L.Push(lua.LString(strings.Repeat(s, n)))
	return 1
}

// tableConcat is table.concat, with gopher-lua's treatment of i and j,
// charged for its result before it is built.
func (st *state) tableConcat(L *lua.LState) int {
	tbl := L.CheckTable(1)
	sep := L.OptString(2, "")
	n := tbl.Len()
	i := L.OptInt(3, 1)
	j := L.OptInt(4, n)
	if L.GetTop() == 3 && (i > n || i < 1) {
		L.Push(lua.LString(""))
		return 1
	}
	i = max(min(i, n), 1)
	j = min(j, n)
	if i > j {
		L.Push(lua.LString(""))
		return 1
	}
	size := int64(j-i) * int64(len(sep))
	for k := i; k <= j; k++ {
		if (k-i)%pollSteps == pollSteps-1 {
			st.poll()
		}
		v := tbl.RawGetInt(k)
		if !lua.LVCanConvToString(v) {
			L.RaiseError("invalid value (%s) at index %d in table for concat", v.Type(), k)
		}
		if s, ok := v.(lua.LString); ok {
			size += int64(len(s))
		} else {
			size += 24 // a number's text
		}
	}
	st.charge(size)
	var b strings.Builder
	b.Grow(int(min(size, 1<<30)))
	for k := i; k <= j; k++ {
		if k > i {
			b.WriteString(sep)
		}
		b.WriteString(lua.LVAsString(tbl.RawGetInt(k)))
	}
	L.Push(lua.LString(b.String()))
	return 1
}

// tableSort is table.sort on t[1..#t]. It sorts a copy, charged, so that a
// comparison function that changes the table cannot upset the sort, and
// polls the budget between comparisons.
func (st *state) tableSort(L *lua.LState) int {
	tbl := L.CheckTable(1)
	var fn *lua.LFunction
	if L.GetTop() > 1 {
		fn = L.CheckFunction(2)
	}
	n := tbl.Len()
	st.chargeProduct(n, 16)
	vals := make([]lua.LValue, n)
	for k := range vals {
		vals[k] = tbl.RawGetInt(k + 1)
	}
	sort.Sort(&sorter{L: L, st: st, fn: fn, vals: vals})
	for k, v := range vals {
		tbl.RawSetInt(k+1, v)
	}
	return 0
}

// sorter orders Lua values with < or a script's comparison function,
// polling the call's budget as it goes.
type sorter struct {
	L     *lua.LState
	st    *state
	fn    *lua.LFunction
	vals  []lua.LValue
	steps int
}

func (s *sorter) Len() int      { return len(s.vals) }
func (s *sorter) Swap(i, j int) { s.vals[i], s.vals[j] = s.vals[j], s.vals[i] }

func (s *sorter) Less(i, j int) bool {
	if s.steps++; s.steps%pollSteps == 0 {
		s.st.poll()
	}
	return less(s.L, s.fn, s.vals[i], s.vals[j])
}

func less(L *lua.LState, fn *lua.LFunction, a, b lua.LValue) bool {
	if fn == nil {
		return L.LessThan(a, b)
	}
	L.Push(fn)
	L.Push(a)
	L.Push(b)
	L.Call(2, 1)
	r := lua.LVAsBool(L.Get(-1))
	L.Pop(1)
	return r
}

// concat is the .. operator. compileChunk turns every chain a .. b .. c
// into a call concat(a, b, c), because the VM's own concatenation is one
// instruction however long its result: s = s .. s doubles a string per
// instruction. It keeps the VM's semantics: it works from the right, joins
// every run of strings and numbers at once, and calls __concat for the
// pairs that are not.
func (st *state) concat(L *lua.LState) int {
	top := L.GetTop()
	if top == 0 {
		L.RaiseError("concat: no operands")
	}
	rhs := L.Get(top)
	for i := top - 1; i >= 1; {
		lhs := L.Get(i)
		if !lua.LVCanConvToString(lhs) || !lua.LVCanConvToString(rhs) {
			op := L.GetMetaField(lhs, "__concat")
			if op == lua.LNil {
				op = L.GetMetaField(rhs, "__concat")
			}
			fn, ok := op.(*lua.LFunction)
			if !ok {
				L.RaiseError("cannot perform concat operation between %v and %v", lhs.Type(), rhs.Type())
			}
			L.Push(fn)
			L.Push(lhs)
			L.Push(rhs)
			L.Call(2, 1)
			rhs = L.Get(-1)
			L.Pop(1)
			i--
			continue
		}
		// Join the run of strings and numbers that ends at rhs.
		j := i
		for j > 1 && lua.LVCanConvToString(L.Get(j-1)) {
			j--
		}
		last := lua.LVAsString(rhs)
		size := int64(len(last))
		for k := j; k <= i; k++ {
			size += int64(len(lua.LVAsString(L.Get(k))))
		}
		st.charge(size)
		var b strings.Builder
		b.Grow(int(size))
		for k := j; k <= i; k++ {
			b.WriteString(lua.LVAsString(L.Get(k)))
		}
		b.WriteString(last)
		rhs = lua.LString(b.String())
		i = j - 1
	}
	L.Push(rhs)
	return 1
}

// formatBytes checks a string.format call's format string as Lua 5.1 does
// (at most five flags, two digits of width and two of precision, and only
// the conversions Lua knows), which also bounds the padding any one
// conversion can ask for, and returns a bound on the result's length. The
// call itself is gopher-lua's.
func formatBytes(L *lua.LState) int64 {
	f := L.CheckString(1)
	size := int64(len(f))
	arg := 1
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			continue
		}
		if i++; i < len(f) && f[i] == '%' {
			continue
		}
		arg++
		start := i
		for i < len(f) && strings.IndexByte("-+ #0", f[i]) >= 0 {
			i++
		}
		if i-start > 5 {
			L.RaiseError("invalid format (repeated flags)")
		}
		for k := 0; k < 2 && i < len(f) && isDigit(f[i]); k++ {
			i++
		}
		if i < len(f) && f[i] == '.' {
			i++
			for k := 0; k < 2 && i < len(f) && isDigit(f[i]); k++ {
				i++
			}
		}
		if i < len(f) && isDigit(f[i]) {
			L.RaiseError("invalid format (width or precision too long)")
		}
		if i == len(f) {
			L.RaiseError("invalid option '%s' to 'format'", f[start-1:])
		}
		size += 2 * 99 // width and precision
		switch f[i] {
		case 'c', 'd', 'i', 'o', 'u', 'x', 'X', 'e', 'E', 'f', 'g', 'G':
			size += 512 // %f of 1e308 has 309 digits
		case 's':
			size += argBytes(L.Get(arg))
		case 'q':
			size += 4*argBytes(L.Get(arg)) + 2
		default:
			L.RaiseError("invalid option '%s' to 'format'", "%"+f[i:i+1])
		}
	}
	return size
}

// argBytes bounds the length of v's text in a format.
func argBytes(v lua.LValue) int64 {
	if s, ok := v.(lua.LString); ok {
		return int64(len(s))
	}
	return 64 // a number, or a type name and an address
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
