package cachepolicy

import (
	lua "github.com/yuin/gopher-lua"
)

// Limits of the pattern matcher.
const (
	// maxCaptures is Lua's LUA_MAXCAPTURES.
	maxCaptures = 32
	// maxMatchDepth bounds the matcher's recursion, as Lua 5.2 and later
	// do: every quantified item and capture nests one Go call, so a
	// pattern of thousands of items would otherwise grow the goroutine's
	// stack without bound.
	maxMatchDepth = 200
)

// Capture lengths that are not lengths.
const (
	capUnfinished = -1
	capPosition   = -2
)

type capture struct {
	init, len int
}

// matcher runs one Lua 5.1 pattern against one subject: the backtracking
// matcher of Lua's lstrlib.c, on Go strings, with a step counter. A
// backtracking matcher can take time quadratic or worse in the subject
// ("^(.-)%-%-(.-)x" on a run of dashes), so every pollSteps steps it calls
// poll, which raises a Lua error once the call's budget is spent. Errors
// in the pattern are raised through raise, which does not return.
type matcher struct {
	src, pat string
	level    int // captures open or closed so far
	depth    int
	steps    int
	caps     [maxCaptures]capture
	poll     func()
	raise    func(format string, args ...any)
}

func (m *matcher) tick() {
	m.steps++
	if m.steps%pollSteps == 0 {
		m.poll()
	}
}

// reset prepares a match attempt at a new position.
func (m *matcher) reset() {
	m.level = 0
	m.depth = 0
}

// match returns the end of a match of pat[p:] starting at src[s:], or -1.
func (m *matcher) match(s, p int) int {
	m.depth++
	if m.depth > maxMatchDepth {
		m.raise("pattern too complex")
	}
	r := m.doMatch(s, p)
	m.depth--
	return r
}

func (m *matcher) doMatch(s, p int) int {
	pat := m.pat
	for {
		m.tick()
		if p == len(pat) {
			return s
		}
		switch pat[p] {
		case '(':
			if p+1 < len(pat) && pat[p+1] == ')' {
				return m.startCapture(s, p+2, capPosition)
			}
			return m.startCapture(s, p+1, capUnfinished)
		case ')':
			return m.endCapture(s, p+1)
		case '$':
			if p+1 == len(pat) {
				if s == len(m.src) {
					return s
				}
				return -1
			}
		case '%':
			if p+1 < len(pat) {
				switch c := pat[p+1]; {
				case c == 'b':
					if s = m.matchBalance(s, p+2); s == -1 {
						return -1
					}
					p += 4
					continue
				case c == 'f':
					p += 2
					if p >= len(pat) || pat[p] != '[' {
						m.raise("missing '[' after '%%f' in pattern")
					}
					ep := m.classEnd(p)
					if m.matchBracket(m.byteAt(s-1), p, ep-1) || !m.matchBracket(m.byteAt(s), p, ep-1) {
						return -1
					}
					p = ep
					continue
				case c >= '0' && c <= '9':
					if s = m.matchCapture(s, c); s == -1 {
						return -1
					}
					p += 2
					continue
				}
			}
		}
		// A single-character item, perhaps quantified.
		ep := m.classEnd(p)
		ok := s < len(m.src) && m.single(m.src[s], p, ep)
		if ep < len(pat) {
			switch pat[ep] {
			case '?':
				if ok {
					if r := m.match(s+1, ep+1); r != -1 {
						return r
					}
				}
				p = ep + 1
				continue
			case '*':
				return m.maxExpand(s, p, ep)
			case '+':
				if !ok {
					return -1
				}
				return m.maxExpand(s+1, p, ep)
			case '-':
				return m.minExpand(s, p, ep)
			}
		}
		if !ok {
			return -1
		}
		s++
		p = ep
	}
}

// byteAt is src[i], or 0 outside the subject, as C sees the bytes around a
// string (used by %f).
func (m *matcher) byteAt(i int) byte {
	if i < 0 || i >= len(m.src) {
		return 0
	}
	return m.src[i]
}

// classEnd returns the index just past the single-character class at p.
func (m *matcher) classEnd(p int) int {
	pat := m.pat
	c := pat[p]
	p++
	switch c {
	case '%':
		if p >= len(pat) {
			m.raise("malformed pattern (ends with '%%')")
		}
		return p + 1
	case '[':
		if p < len(pat) && pat[p] == '^' {
			p++
		}
		for { // the first character is always part of the set: "[]]"
			if p >= len(pat) {
				m.raise("malformed pattern (missing ']')")
			}
			c := pat[p]
			p++
			if c == '%' && p < len(pat) {
				p++ // skip escapes such as "%]"
			}
			if p < len(pat) && pat[p] == ']' {
				return p + 1
			}
		}
	}
	return p
}

// single reports whether c matches the class pat[p:ep].
func (m *matcher) single(c byte, p, ep int) bool {
	switch m.pat[p] {
	case '.':
		return true
	case '%':
		return matchClass(c, m.pat[p+1])
	case '[':
		return m.matchBracket(c, p, ep-1)
	}
	return m.pat[p] == c
}

// matchBracket reports whether c is in the set pat[p:ec+1], from its '['
// to its ']'.
func (m *matcher) matchBracket(c byte, p, ec int) bool {
	pat := m.pat
	sig := true
	if pat[p+1] == '^' {
		sig = false
		p++
	}
	for p++; p < ec; p++ {
		switch {
		case pat[p] == '%':
			p++
			if matchClass(c, pat[p]) {
				return sig
			}
		case pat[p+1] == '-' && p+2 < ec:
			p += 2
			if pat[p-2] <= c && c <= pat[p] {
				return sig
			}
		case pat[p] == c:
			return sig
		}
	}
	return !sig
}

// matchClass reports whether c is in the class %cl, in the C locale.
func matchClass(c, cl byte) bool {
	lower := cl
	if 'A' <= cl && cl <= 'Z' {
		lower = cl + 'a' - 'A'
	}
	var res bool
	switch lower {
	case 'a':
		res = isAlpha(c)
	case 'c':
		res = c < 0x20 || c == 0x7f
	case 'd':
		res = isDigit(c)
	case 'l':
		res = 'a' <= c && c <= 'z'
	case 'p':
		res = 0x21 <= c && c <= 0x2f || 0x3a <= c && c <= 0x40 || 0x5b <= c && c <= 0x60 || 0x7b <= c && c <= 0x7e
	case 's':
		res = c == ' ' || '\t' <= c && c <= '\r'
	case 'u':
		res = 'A' <= c && c <= 'Z'
	case 'w':
		res = isAlpha(c) || isDigit(c)
	case 'x':
		res = isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
	case 'z':
		res = c == 0
	default:
		return cl == c
	}
	if lower == cl {
		return res
	}
	return !res
}

func isAlpha(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

func (m *matcher) maxExpand(s, p, ep int) int {
	i := 0
	for s+i < len(m.src) && m.single(m.src[s+i], p, ep) {
		m.tick()
		i++
	}
	// Try the longest run first, then give back one at a time.
	for ; i >= 0; i-- {
		if r := m.match(s+i, ep+1); r != -1 {
			return r
		}
	}
	return -1
}

func (m *matcher) minExpand(s, p, ep int) int {
	for {
		if r := m.match(s, ep+1); r != -1 {
			return r
		}
		if s < len(m.src) && m.single(m.src[s], p, ep) {
			s++
		} else {
			return -1
		}
	}
}

func (m *matcher) startCapture(s, p, what int) int {
	if m.level >= maxCaptures {
		m.raise("too many captures")
	}
	m.caps[m.level] = capture{init: s, len: what}
	m.level++
	r := m.match(s, p)
	if r == -1 {
		m.level--
	}
	return r
}

func (m *matcher) endCapture(s, p int) int {
	l := -1
	for i := m.level - 1; i >= 0; i-- {
		if m.caps[i].len == capUnfinished {
			l = i
			break
		}
	}
	if l < 0 {
		m.raise("invalid pattern capture")
	}
	m.caps[l].len = s - m.caps[l].init
	r := m.match(s, p)
	if r == -1 {
		m.caps[l].len = capUnfinished
	}
	return r
}

// matchCapture matches a back reference %1 to %9 at s.
func (m *matcher) matchCapture(s int, c byte) int {
	l := int(c) - '1'
	if l < 0 || l >= m.level || m.caps[l].len == capUnfinished {
		m.raise("invalid capture index")
	}
	cp := m.caps[l]
	if cp.len < 0 || len(m.src)-s < cp.len { // a position capture matches nothing
		return -1
	}
	if m.src[s:s+cp.len] != m.src[cp.init:cp.init+cp.len] {
		return -1
	}
	return s + cp.len
}

// matchBalance matches %bxy at s, with x and y at pat[p] and pat[p+1].
func (m *matcher) matchBalance(s, p int) int {
	if p+1 >= len(m.pat) {
		m.raise("unbalanced pattern")
	}
	if s >= len(m.src) || m.src[s] != m.pat[p] {
		return -1
	}
	b, e := m.pat[p], m.pat[p+1]
	cont := 1
	for s++; s < len(m.src); s++ {
		m.tick()
		switch m.src[s] {
		case e:
			if cont--; cont == 0 {
				return s + 1
			}
		case b:
			cont++
		}
	}
	return -1
}

// capture returns capture i of the match src[s:e]: a string, or the
// position of a () capture. Capture 0 of a pattern without captures is the
// whole match.
func (m *matcher) capture(i, s, e int) lua.LValue {
	if i >= m.level {
		if i != 0 {
			m.raise("invalid capture index")
		}
		return lua.LString(m.src[s:e])
	}
	switch cp := m.caps[i]; cp.len {
	case capUnfinished:
		m.raise("unfinished capture")
	case capPosition:
		return lua.LNumber(cp.init + 1)
	default:
		return lua.LString(m.src[cp.init : cp.init+cp.len])
	}
	return lua.LNil
}

// pushCaptures pushes the captures of the match src[s:e], or the whole
// match when the pattern has none and whole is set, and returns how many
// it pushed.
func (m *matcher) pushCaptures(L *lua.LState, s, e int, whole bool) int {
	n := m.level
	if n == 0 && whole {
		n = 1
	}
	for i := range n {
		L.Push(m.capture(i, s, e))
	}
	return n
}
