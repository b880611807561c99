package cachepolicy

import (
	"fmt"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// TestPatternsMatchGopherLua runs find, match, gmatch and gsub over a
// corpus of ordinary patterns and subjects, through the bounded functions
// and through gopher-lua's own, and wants the same answers.
func TestPatternsMatchGopherLua(t *testing.T) {
	ref := lua.NewState()
	defer ref.Close()
	want := probeState(t, ref, nil)
	st := boundedState(t)
	got := probeState(t, st.L, st)

	patterns := []string{
		"a", "%a+", "%d+", "(%w+)=(%w+)", "^%s*(.-)%s*$", "[%w_]+", "[^,]+", "%s+",
		"^SELECT", "[Ff][Rr][Oo][Mm]%s+(%w+)", "(%w+)%.(%w+)", "()", "()a()", "%b()", ".-b", "a*", "a-",
		"a?b", "[a-c]+", "[%]]", "%%", "x*$", "^$", "(a)(b)(c)", "%u%l+", "[%p]", "%x+",
		"%c", "(%d+)%-(%d+)", "^(.-)%-%-(.-)nocache", "[%-]+", "([^=]+)=(.*)", "%s*;%s*$",
		"(a*(.)%w(%s*))", "%S+", "[^%s]+", "[%a_][%w_]*", "(%a)%1", "x", "$", "[a-]", "[]]",
		"%w+%.%w+", "SELECT", "%(", "[^%d%s]+", "(.)(.)",
	}
	subjects := []string{
		"", "abc", "hello world", "SELECT * FROM t WHERE id = 1", "  trim me  ",
		"key=value, k2=v2", "a.b c.d", "(nested (parens)) x", "x -- comment nocache",
		"aaa", "ab", "abcabc", "1-2-3", "MiXeD Case 123", "tab\tand\nnewline", ";", "a]b",
		"aabbcc", "-a-", "select 1; ",
	}
	var n int
	for _, p := range patterns {
		for _, s := range subjects {
			qs, qp := fmt.Sprintf("%q", s), fmt.Sprintf("%q", p)
			exprs := []string{
				fmt.Sprintf("string.find(%s, %s)", qs, qp),
				fmt.Sprintf("string.match(%s, %s)", qs, qp),
				fmt.Sprintf("string.gsub(%s, %s, %q)", qs, qp, "<%0>"),
				fmt.Sprintf("string.gsub(%s, %s, %q)", qs, qp, "[%1]"),
				fmt.Sprintf("string.gsub(%s, %s, %q, 1)", qs, qp, "#"),
				fmt.Sprintf("string.gsub(%s, %s, string.upper)", qs, qp),
				fmt.Sprintf("string.gsub(%s, %s, {a = 'A', abc = 1, hello = false})", qs, qp),
				fmt.Sprintf("string.find(%s, %s, 1, true)", qs, qp),
			}
			if len(s) >= 3 { // gopher-lua does not clamp an init past the end
				exprs = append(exprs,
					fmt.Sprintf("string.find(%s, %s, 2)", qs, qp),
					fmt.Sprintf("string.find(%s, %s, -3)", qs, qp),
					fmt.Sprintf("string.match(%s, %s, 3)", qs, qp))
			}
			if !strings.HasPrefix(p, "^") { // gopher-lua anchors gmatch; Lua 5.1 does not
				exprs = append(exprs, fmt.Sprintf(
					"(function() local t = {} for a, b in string.gmatch(%s, %s) do t[#t+1] = tostring(a) .. '/' .. tostring(b) end return table.concat(t, ' ') end)()", qs, qp))
			}
			for _, x := range exprs {
				n++
				if g, w := got(x), want(x); g != w {
					t.Errorf("%s: got %s, want %s (gopher-lua)", x, g, w)
				}
			}
		}
	}
	t.Logf("%d expressions agree", n)
}

// TestPatternsLua51 covers what gopher-lua's own matcher lacks or does
// differently from Lua 5.1, whose semantics the bounded matcher follows.
func TestPatternsLua51(t *testing.T) {
	st := boundedState(t)
	got := probeState(t, st.L, st)
	tests := []struct{ expr, want string }{
		{`string.find("THE (quick) fox", "%f[%a]%a+", 5)`, "number:6,number:10"},
		{`string.gsub("THE (quick) fox", "%f[%a]%a+", "W")`, "string:W (W) W,number:3"},
		{`string.find("abc", "", 10)`, "number:4,number:3"},
		{`string.find("abc", "c", 10, true)`, ""},
		{`string.match("abc", "x")`, ""},
		{`select("#", string.match("abc", "x"))`, "number:1"},
		{`(function() local t = {} for w in string.gmatch("^a^b", "^%a") do t[#t+1] = w end return table.concat(t, ",") end)()`, "string:^a,^b"},
		{`string.gsub("abc", "b", "%%")`, "string:a%c,number:1"},
		{`string.gsub("abc", "(b)", "%2")`, "error"},
		{`string.gsub("abc", "b", {b = {}})`, "error"},
		{`string.gsub("abc", "b", function() return 5 end)`, "string:a5c,number:1"},
		{`string.find("a", "%")`, "error"},
		{`string.find("a", "[a")`, "error"},
		{`string.find("a", "(a")`, "error"},
		{`string.match("a", "a)")`, "error"},
		{`string.find("a)", "a)")`, "number:1,number:2"}, // no special character: a plain search
		{`string.find("a", "%bx")`, "error"},
		{`string.find("a", "%f")`, "error"},
		{`string.find(string.rep("a", 40), string.rep("(a)", 33))`, "error"},
		{`string.find(string.rep("a", 300), string.rep("a?", 300))`, "error"},
		{`string.find(string.rep("a", 300), string.rep("a", 300))`, "number:1,number:300"},
	}
	for _, tt := range tests {
		if g := got(tt.expr); g != tt.want {
			t.Errorf("%s: got %s, want %s", tt.expr, g, tt.want)
		}
	}
}
