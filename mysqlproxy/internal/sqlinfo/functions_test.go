package sqlinfo

import "testing"

// TestStoredFunctionsByBuiltinNames: a call the server makes to a stored
// function is never cached and counts as one, though its name is a
// built-in's elsewhere: spaced or commented from "(", or quoted, for the
// grammar's functions; always, for MySQL's and later MariaDB's own.
func TestStoredFunctionsByBuiltinNames(t *testing.T) {
	a := NewAnalyzer(Options{})
	for _, tc := range []struct {
		sql    string
		stored bool
	}{
		{"SELECT count(1) FROM t", false},
		{"SELECT count (1) FROM t", true},
		{"SELECT count\t(1) FROM t", true},
		{"SELECT count/**/(1) FROM t", true},
		{"SELECT `count`(1) FROM t", true},
		{`SELECT "count"(1) FROM t`, true},
		{"SELECT mid ('abc', 1, 1) FROM t", true},
		{"SELECT mid('abc', 1, 1) FROM t", false},
		{"SELECT adddate ('2020-01-01', 1)", true},
		{"SELECT regexp_like('a', 'b') FROM t", true},
		{"SELECT format_bytes(v) FROM t", true},
		{"SELECT bin_to_uuid(v) FROM t", true},
		{"UPDATE t SET v = uuid_v4(1)", true}, // MySQL's, never cached there either
		{"SELECT POINT(1, 2) FROM t", false},
		{"SELECT point(1) FROM t", true},
		{"SELECT CHAR(65), INSERT('abc', 1, 1, 'x'), SUBSTRING(v, 1, 2), TRIM(v) FROM t", false},
		{"SELECT abs (v) FROM t", false}, // native: the server's abs, spaced or not
		{"SELECT v FROM t WHERE v IN (1, 2)", false},
		{"SELECT 'count (1)' FROM t", false},
		{"UPDATE t SET v = count (1)", true},
	} {
		info := a.Analyze(tc.sql)
		// Analyzed twice: the second comes from memory, which must not
		// answer one form with the other's analysis.
		again := a.Analyze(tc.sql)
		for _, i := range []*Info{info, again} {
			// "count"(1) does not parse outside ANSI_QUOTES: it is not
			// cached, and a write that reads so is taken to write anything.
			if (i.CallsRoutine || i.ParseError) != tc.stored || (tc.stored && i.Cacheable) {
				t.Errorf("%q: CallsRoutine %v, cacheable %v (%s); want a stored function call: %v", tc.sql, i.CallsRoutine, i.Cacheable, i.WhyNot, tc.stored)
			}
		}
	}
	// The spaced form after the built-in one, of the same digest.
	b := NewAnalyzer(Options{})
	b.Analyze("SELECT mid(N'abc', 1, 1) FROM t WHERE id = 1")
	if i := b.Analyze("SELECT mid (N'abc', 1, 1) FROM t WHERE id = 1"); !(i.CallsRoutine || i.ParseError) || i.Cacheable {
		t.Errorf("mid (N'abc', 1, 1) after mid(N'abc', 1, 1): CallsRoutine %v, cacheable %v (%s)", i.CallsRoutine, i.Cacheable, i.WhyNot)
	}
}
