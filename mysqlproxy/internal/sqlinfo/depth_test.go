package sqlinfo

import (
	"strings"
	"testing"
	"time"
)

// TestTooDeep: texts whose parse would nest past the bound, or hold more
// list items than it, are not parsed, and are classified at once,
// conservatively; wide but shallow texts (a bulk INSERT, a long IN list)
// are still parsed.
func TestTooDeep(t *testing.T) {
	n := 200000
	deep := map[string]string{
		"chained +":     "SELECT " + strings.Repeat("1+", n) + "1",
		"chained NOT":   "SELECT " + strings.Repeat("NOT ", n) + "1",
		"unary minus":   "DO " + strings.Repeat("- ", n) + "1",
		"parentheses":   "SELECT " + strings.Repeat("(", n) + "1" + strings.Repeat(")", n),
		"OR chain":      "DELETE FROM t WHERE " + strings.Repeat("a=1 OR ", n) + "a=2",
		"or chain":      "SELECT 1 FROM t WHERE " + strings.Repeat("a or ", n) + "b",
		"nested chains": "SELECT " + strings.Repeat("1+(", n/2) + "1" + strings.Repeat(")", n/2),
		// Broad rather than deep: the parse takes about 1 KiB an item.
		"huge IN list": "SELECT v FROM t WHERE id IN (" + strings.Repeat("1,", n) + "1)",
		"huge VALUES":  "DELETE FROM t WHERE (a, b) IN (" + strings.Repeat("(1,2),", n/2) + "(1,2))",
	}
	a := NewAnalyzer(Options{})
	for name, q := range deep {
		start := time.Now()
		info := a.Analyze(q)
		if info.WhyNot != "too-complex" || info.Cacheable {
			t.Errorf("%s: got WhyNot %q, cacheable %v; want too-complex", name, info.WhyNot, info.Cacheable)
		}
		if strings.HasPrefix(q, "DELETE") && !info.Global {
			t.Errorf("%s: a write not parsed must invalidate everything", name)
		}
		t.Logf("%s: %d bytes in %v", name, len(q), time.Since(start))
		// So in a session whose sql_mode changes how texts read.
		d := DialectOf("ANSI_QUOTES,NO_BACKSLASH_ESCAPES", "utf8mb4")
		if info := a.AnalyzeIn(q+` /* "\" */`, d); info.WhyNot != "too-complex" || info.Cacheable {
			t.Errorf("%s, under ANSI_QUOTES: got WhyNot %q, cacheable %v; want too-complex", name, info.WhyNot, info.Cacheable)
		}
	}
	shallow := map[string]string{
		"bulk insert":   "INSERT INTO t VALUES " + strings.Repeat("(-1, 'a-b', 2*3),", 20000) + "(1, 'x', 2)",
		"IN list":       "SELECT v FROM t WHERE id IN (" + strings.Repeat("-1,", 20000) + "1)",
		"quoted parens": "SELECT '" + strings.Repeat("((((", 5000) + "' FROM t WHERE id = 1",
		"a long OR":     "SELECT v FROM t WHERE " + strings.Repeat("id = 1 OR ", 1000) + "id = 2",
	}
	for name, q := range shallow {
		if info := a.Analyze(q); info.ParseError {
			t.Errorf("%s: not parsed (%q)", name, info.WhyNot)
		}
	}
}
