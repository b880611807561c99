package sqlinfo

import (
	"strings"
	"testing"
)

func TestKeyText(t *testing.T) {
	plain := Dialect{}
	for _, tt := range []struct {
		sql, want string
		d         Dialect
	}{
		{sql: "SELECT v FROM t WHERE id = 1", want: "SELECT v FROM t WHERE id = 1"},
		// Plain comments before the first token and after the last go.
		{sql: "/* trace_id=abc */ SELECT v FROM t WHERE id = 1", want: "SELECT v FROM t WHERE id = 1"},
		{sql: "SELECT v FROM t WHERE id = 1 /* traceparent='00-4bf9' */", want: "SELECT v FROM t WHERE id = 1"},
		{sql: "SELECT v FROM t WHERE id = 1 -- app:checkout\n", want: "SELECT v FROM t WHERE id = 1"},
		{sql: "SELECT v FROM t WHERE id = 1 # app:checkout", want: "SELECT v FROM t WHERE id = 1"},
		{sql: "  /* a */ /* b */\n-- c\nSELECT 1 + 1 /* d */  ", want: "SELECT 1 + 1"},
		{sql: "SELECT 'a /* b */' /* c */", want: "SELECT 'a /* b */'"},
		{sql: "SELECT `x#y` FROM t -- c", want: "SELECT `x#y` FROM t"},
		// A comment within the statement names a column.
		{sql: "/* a */ SELECT 1 /* b */ + 1", want: "SELECT 1 /* b */ + 1"},
		// Hints and executable comments are statement text.
		{sql: "/*+ MAX_EXECUTION_TIME(1) */ SELECT 1", want: "/*+ MAX_EXECUTION_TIME(1) */ SELECT 1"},
		{sql: "/* a */ SELECT 1 /*!50000 + 1 */ /* b */", want: "SELECT 1 /*!50000 + 1 */"},
		{sql: "SELECT 1 /*M! + 1 */", want: "SELECT 1 /*M! + 1 */"},
		// "--" without a space after it is two minus signs.
		{sql: "SELECT 1 --1", want: "SELECT 1 --1"},
		{sql: "SELECT 1 --1 /* c */", want: "SELECT 1 --1"},
		{sql: "SELECT 1 --# c", want: "SELECT 1 --# c"},
		{sql: "SELECT 1 --/* c */", want: "SELECT 1 --/* c */"},
		// Left as they are: a ';', an unterminated comment, a dialect
		// that may read the text otherwise.
		{sql: "SELECT 1; /* c */", want: "SELECT 1; /* c */"},
		{sql: "/* c */ SELECT 1;", want: "/* c */ SELECT 1;"},
		{sql: "SELECT 1 /* c", want: "SELECT 1 /* c"},
		{sql: "/* c */ SELECT \"a\"", d: Dialect{ANSIQuotes: true}, want: "/* c */ SELECT \"a\""},
		{sql: "/* c */ SELECT 'a\\'b'", d: Dialect{NoBackslashEscapes: true}, want: "/* c */ SELECT 'a\\'b'"},
		{sql: "/* c */ SELECT 1", d: Dialect{Unknown: true}, want: "/* c */ SELECT 1"},
		{sql: "/* c */ SELECT '\x81\\'", d: Dialect{Charset: "sjis"}, want: "/* c */ SELECT '\x81\\'"},
		{sql: "/* c */", want: "/* c */"},
	} {
		d := tt.d
		if d == (Dialect{}) {
			d = plain
		}
		if got := KeyText(tt.sql, d); got != tt.want {
			t.Errorf("KeyText(%q) = %q, want %q", tt.sql, got, tt.want)
		}
	}
}

// FuzzKeyText: KeyText leaves out only what the server skips. The text it
// returns, when it returns another, is a part of the text it was given,
// which holds no ';', and lexes to the same tokens.
func FuzzKeyText(f *testing.F) {
	for _, s := range []string{
		"/* a */ SELECT 1 /* b */", "SELECT 1 -- c\n", "# x\nSELECT 'a'", "SELECT 1 --1", "/*! SELECT */ 1",
		"SELECT `a#` /* */", "/*+ h */ SELECT x.1e5 FROM x -- y", "SELECT _latin1 'a' # z", "/* */ SELECT \"a\" /* */",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := KeyText(s, Dialect{})
		if got == s {
			return
		}
		if strings.IndexByte(s, ';') >= 0 || !strings.Contains(s, got) {
			t.Fatalf("KeyText(%q) = %q", s, got)
		}
		if kept, want := lexAll(got, LexOptions{}), lexAll(s, LexOptions{}); kept != want {
			t.Fatalf("KeyText(%q) = %q, whose tokens are %s, want %s", s, got, kept, want)
		}
	})
}
