package sqlinfo

import "strings"

// KeyText returns what of a statement text decides its result for the
// cache key: the text without the plain comments (and the whitespace)
// before its first token and after its last, which the server skips. A
// client library that adds a trace id to each statement, in front of it
// or at its end, then sends texts that share one entry. A comment within
// the statement is kept: the server names a column by the text of its
// expression, comments included. KeyText returns sql itself when it
// holds no comment, when it holds a ';' (whatever follows one is a
// statement of its own to a session with multi-statements on), when d
// may read it otherwise than the default dialect does, or when it does
// not lex.
func KeyText(sql string, d Dialect) string {
	if !HasComment(sql) || strings.IndexByte(sql, ';') >= 0 || d.Unknown || !d.plainFor(sql) {
		return sql
	}
	l := NewLexer(sql, LexOptions{})
	start, end := -1, -1
	for {
		t, err := l.Next()
		if err != nil {
			return sql
		}
		if t.Kind == TokEOF {
			break
		}
		if start < 0 {
			start = t.Pos
		}
		end = l.pos
	}
	if start < 0 || strings.HasSuffix(sql[:end], "--") {
		// Two minus signs before a comment would begin one at the end
		// of the text.
		return sql
	}
	return sql[start:end]
}

// HasComment reports whether sql may hold a comment: KeyText returns
// any other text as it is, and needs no dialect for it.
func HasComment(sql string) bool {
	return strings.Contains(sql, "/*") || strings.IndexByte(sql, '#') >= 0 || strings.Contains(sql, "--")
}
