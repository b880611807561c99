package sqlinfo

import (
	"bytes"
	"strings"
)

// This file holds a small hand-written scanner for the few questions the hot
// path asks of raw text without the full parser: the first keyword, the
// no_cache hint, and the identifier signature that guards the digest memo.

// skipSpaceAndComments returns the offset of the first byte of s at or after
// i that is neither whitespace nor inside a comment. Versioned comments
// (/*! ... */, /*M! ... */) are code to MySQL, so only their opening marker
// is skipped.
func skipSpaceAndComments(s string, i int) int {
	for i < len(s) {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
		case c == '#':
			i = skipLine(s, i)
		case c == '-' && i+2 < len(s) && s[i+1] == '-' && isSpaceOrCtl(s[i+2]):
			i = skipLine(s, i)
		case c == '-' && i+2 == len(s) && s[i+1] == '-':
			return len(s)
		case c == '/' && i+1 < len(s) && s[i+1] == '*':
			if v := versionedCommentBody(s, i); v > 0 {
				i = v
				continue
			}
			i = skipBlockComment(s, i)
		default:
			return i
		}
	}
	return i
}

func isSpaceOrCtl(c byte) bool { return c <= ' ' }

func skipLine(s string, i int) int {
	for i < len(s) && s[i] != '\n' {
		i++
	}
	return i
}

// skipBlockComment skips the comment opening at s[i] ("/*").
func skipBlockComment(s string, i int) int {
	for j := i + 2; j+1 < len(s); j++ {
		if s[j] == '*' && s[j+1] == '/' {
			return j + 2
		}
	}
	return len(s)
}

// versionedCommentBody returns the offset just past "/*!12345" or "/*M!"
// when s[i:] opens a versioned comment, or 0.
func versionedCommentBody(s string, i int) int {
	j := i + 2
	if j < len(s) && s[j] == 'M' && j+1 < len(s) && s[j+1] == '!' {
		j++
	}
	if j >= len(s) || s[j] != '!' {
		return 0
	}
	j++
	for k := 0; k < 6 && j < len(s) && s[j] >= '0' && s[j] <= '9'; k++ {
		j++
	}
	return j
}

func isWordByte(c byte) bool {
	return c == '_' || c == '$' || c >= 0x80 ||
		(c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

// FirstKeyword returns the first word of sql, uppercased, after leading
// whitespace and comments, or "" when sql starts with something else (a
// parenthesis, a string). Common keywords are returned without allocating.
func FirstKeyword(sql string) string {
	w, _ := wordAt(sql, skipSpaceAndComments(sql, 0))
	return upperKeyword(w)
}

// SecondKeyword returns the word after the first one, uppercased.
func SecondKeyword(sql string) string { return secondKeyword(sql) }

// secondKeyword returns the word after the first one, uppercased.
func secondKeyword(sql string) string {
	_, end := wordAt(sql, skipSpaceAndComments(sql, 0))
	if end == 0 {
		return ""
	}
	w, _ := wordAt(sql, skipSpaceAndComments(sql, end))
	return upperKeyword(w)
}

// rollsBackTo reports a ROLLBACK [WORK] TO: to a savepoint, which leaves
// the transaction open.
func rollsBackTo(sql string) bool {
	_, end := wordAt(sql, skipSpaceAndComments(sql, 0))
	w, end := wordAt(sql, skipSpaceAndComments(sql, end))
	if strings.EqualFold(w, "work") {
		w, _ = wordAt(sql, skipSpaceAndComments(sql, end))
	}
	return strings.EqualFold(w, "to")
}

func wordAt(s string, i int) (string, int) {
	j := i
	for j < len(s) && isWordByte(s[j]) {
		j++
	}
	return s[i:j], j
}

// keywords are returned by FirstKeyword as constants so that routing costs no
// allocation.
var keywords = []string{
	"SELECT", "INSERT", "UPDATE", "DELETE", "REPLACE", "SHOW", "SET", "USE",
	"BEGIN", "START", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE", "XA",
	"CALL", "LOAD", "CREATE", "ALTER", "DROP", "TRUNCATE", "RENAME", "WITH",
	"TABLE", "VALUES", "DESC", "DESCRIBE", "EXPLAIN", "HELP", "DO", "LOCK",
	"UNLOCK", "PREPARE", "EXECUTE", "DEALLOCATE", "KILL", "FLUSH", "ANALYZE",
	"GRANT", "REVOKE", "HANDLER", "OPTIMIZE", "REPAIR", "CHECK", "CHECKSUM",
	"TRANSACTION", "WORK", "STATEMENT", "NAMES", "PURGE", "RESET", "INSTALL",
	"UNINSTALL", "BINLOG", "CACHE", "SHUTDOWN", "SIGNAL", "RESIGNAL", "GET",
}

func upperKeyword(w string) string {
	if w == "" || len(w) > 11 {
		return upperAlloc(w)
	}
	for _, k := range keywords {
		if len(k) == len(w) && equalFoldASCII(k, w) {
			return k
		}
	}
	return upperAlloc(w)
}

func upperAlloc(w string) string {
	for i := 0; i < len(w); i++ {
		if w[i] >= 'a' && w[i] <= 'z' {
			b := []byte(w)
			for j := i; j < len(b); j++ {
				if b[j] >= 'a' && b[j] <= 'z' {
					b[j] -= 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return w
}

// equalFoldASCII compares upper (already uppercase) with s ignoring ASCII case.
func equalFoldASCII(upper, s string) bool {
	if len(s) != len(upper) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		if c != upper[i] {
			return false
		}
	}
	return true
}

// hasNoCacheHint reports a no_cache optimizer hint (/*+ ... no_cache ... */)
// anywhere in sql, matched case-insensitively. The parser's digest drops
// hints, so this is decided on the raw text of every statement.
func hasNoCacheHint(sql string) bool {
	for i := 0; i+2 < len(sql); i++ {
		if sql[i] != '/' || sql[i+1] != '*' || sql[i+2] != '+' {
			continue
		}
		end := skipBlockComment(sql, i)
		if ContainsFold(sql[i+3:end], "no_cache") {
			return true
		}
		i = end - 1
	}
	return false
}

// ContainsFold reports whether s contains lower, a lower-case ASCII word
// that begins with a letter, in any case, without copying s: the
// candidates are found with IndexByte, each case's next one kept until
// passed.
func ContainsFold[T ~string | ~[]byte](s T, lower string) bool {
	n := len(lower)
	lo, up := lower[0], lower[0]-'a'+'A'
	nextLo, nextUp := -1, -1
	for i := 0; i+n <= len(s); {
		if nextLo < i {
			nextLo = indexByteFrom(s, i, lo)
		}
		if nextUp < i {
			nextUp = indexByteFrom(s, i, up)
		}
		at := min(nextLo, nextUp)
		if at+n > len(s) {
			return false
		}
		if foldEqual(s[at:at+n], lower) {
			return true
		}
		i = at + 1
	}
	return false
}

// indexByteFrom returns the index of the first c in s at or after i, or
// len(s).
func indexByteFrom[T ~string | ~[]byte](s T, i int, c byte) int {
	var k int
	switch v := any(s[i:]).(type) {
	case string:
		k = strings.IndexByte(v, c)
	case []byte:
		k = bytes.IndexByte(v, c)
	default:
		k = -1
		for j := i; j < len(s); j++ {
			if s[j] == c {
				k = j - i
				break
			}
		}
	}
	if k < 0 {
		return len(s)
	}
	return i + k
}

// foldEqual reports whether s is lower, a lower-case ASCII word, in any
// case.
func foldEqual[T ~string | ~[]byte](s T, lower string) bool {
	for j := range len(lower) {
		c := s[j]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[j] {
			return false
		}
	}
	return true
}

// appendShape appends to dst every word, quoted identifier, charset
// introducer and ? placeholder of sql verbatim, in order, skipping
// comments, literals and punctuation, and "!" for each token the server
// would refuse (an unterminated string, quoted identifier or comment, a
// malformed hex literal).
//
// The parser's digest lowercases identifiers, but MariaDB compares table
// names case-sensitively, so two statements with one digest may name
// different tables ("FROM Users" and "FROM users"). The digest memo keys an
// analysis by digest plus this shape: equal shapes mean equal identifiers in
// equal positions. Keeping extra words is harmless; it only splits the memo.
// The digest of a text the server cannot lex may equal that of a valid one
// (SELECT 0 a,000 and SELECT 0 a,0"0): the mark keeps them apart.
// Names returns the words and quoted names of sql, as written, in order
// (what appendShape appends): what a digest, which lower-cases them,
// drops of the names a statement uses.
func Names(sql string) string { return string(appendShape(nil, sql)) }

func appendShape(dst []byte, sql string) []byte {
	lx := NewLexer(sql, LexOptions{})
	for {
		t, err := lx.Next()
		switch {
		case err != nil:
			dst = append(dst, '!', ' ')
		case t.Kind == TokEOF:
			return dst
		case t.Kind == TokQuotedIdent, t.Kind == TokWord && !allDigits(t.Text):
			dst = append(dst, t.Text...)
			dst = append(dst, ' ')
		case t.Kind == TokParam:
			// The digest writes placeholders and literals alike as "?",
			// but a placeholder's value is bound per execution while a
			// literal's is part of the text (see Value.Param).
			dst = append(dst, '?', ' ')
		case t.Intro != "":
			dst = append(dst, t.Intro...)
			dst = append(dst, ' ')
		}
	}
}

func allDigits(w string) bool {
	for i := 0; i < len(w); i++ {
		if w[i] < '0' || w[i] > '9' {
			return false
		}
	}
	return true
}

// skipQuoted returns the offset past the quoted token opening at s[i].
// A doubled quote stands for itself; backslash escapes apply to strings.
func skipQuoted(s string, i int, q byte, backslash bool) int {
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			if backslash {
				j++
			}
		case q:
			if j+1 < len(s) && s[j+1] == q {
				j++
				continue
			}
			return j + 1
		}
	}
	return len(s)
}

// placeholderOffsets returns the byte offsets of the ? placeholders of sql,
// outside comments, strings and quoted identifiers, in ascending order.
func placeholderOffsets(sql string) []int {
	var out []int
	lx := NewLexer(sql, LexOptions{})
	for {
		t, err := lx.Next()
		switch {
		case err != nil:
		case t.Kind == TokEOF:
			return out
		case t.Kind == TokParam:
			out = append(out, t.Pos)
		}
	}
}
