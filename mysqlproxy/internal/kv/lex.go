package kv

import (
	"fmt"
	"strings"
)

// tokKind is the kind of a lexical token.
type tokKind uint8

const (
	tEOF    tokKind = iota
	tWord           // keyword or identifier, as written
	tIdent          // backtick-quoted identifier
	tString         // quoted string; val holds the unescaped bytes
	tHex            // X'..' or 0x..; val holds the decoded bytes
	tNumber         // numeric literal; text is as written
	tParam          // ? placeholder
	tPunct          // any other byte, or an executable comment opener
)

// token is one lexical token of a statement.
type token struct {
	kind  tokKind
	pos   int    // byte offset in the statement
	text  string // source text
	val   []byte // tString, tHex: the literal's bytes
	quote byte   // tString: '\'' or '"'
	intro bool   // tString, tHex: preceded by a charset introducer or N
}

// is reports whether t is the punctuation byte c.
func (t token) is(c byte) bool { return t.kind == tPunct && len(t.text) == 1 && t.text[0] == c }

// plainDoubleQuoted reports whether t is a "..." literal with nothing
// before it: the only literal the kv SELECT form accepts.
func (t token) plainDoubleQuoted() bool {
	return t.kind == tString && t.quote == '"' && !t.intro
}

// describe names t for a syntax error message.
func (t token) describe() string {
	if t.kind == tEOF {
		return "end of statement"
	}
	return fmt.Sprintf("%q at offset %d", clip(t.text), t.pos)
}

// lexer splits a statement into tokens on demand, so that ordinary SQL is
// rejected after its first few tokens without scanning the rest.
type lexer struct {
	src         string
	pos         int
	noBackslash bool // sql_mode NO_BACKSLASH_ESCAPES: \ is not an escape
}

// peek returns the next token without consuming it.
func (l *lexer) peek() (token, error) {
	saved := l.pos
	t, err := l.next()
	l.pos = saved
	return t, err
}

// next consumes and returns the next token.
func (l *lexer) next() (token, error) {
	if err := l.skipSpace(); err != nil {
		return token{}, err
	}
	if l.pos >= len(l.src) {
		return token{kind: tEOF, pos: l.pos}, nil
	}
	start := l.pos
	c := l.src[start]
	switch {
	case c == '\'' || c == '"':
		return l.str(start, start, false)
	case c == '`':
		return l.backtick(start)
	case c == '?':
		l.pos++
		return token{kind: tParam, pos: start, text: "?"}, nil
	case c == '/' && strings.HasPrefix(l.src[start:], "/*"):
		// skipSpace left an executable comment (/*! /*M! /*+): its content
		// is SQL, so it is a token that matches no kv form.
		l.pos += 3
		return token{kind: tPunct, pos: start, text: l.src[start:l.pos]}, nil
	case isDigit(c) || (c == '.' && start+1 < len(l.src) && isDigit(l.src[start+1])):
		return l.number(start)
	case isIdentStart(c):
		return l.word(start)
	}
	l.pos++
	return token{kind: tPunct, pos: start, text: l.src[start:l.pos]}, nil
}

// skipSpace skips whitespace and ordinary comments. It stops before an
// executable comment, whose body MySQL runs.
func (l *lexer) skipSpace() error {
	for l.pos < len(l.src) {
		c := l.src[l.pos]
		rest := l.src[l.pos:]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			l.pos++
		case c == '#' || (strings.HasPrefix(rest, "--") && (len(rest) == 2 || rest[2] <= ' ')):
			// MySQL needs whitespace or a control byte after "--".
			if i := strings.IndexByte(rest, '\n'); i >= 0 {
				l.pos += i + 1
			} else {
				l.pos = len(l.src)
			}
		case strings.HasPrefix(rest, "/*"):
			if strings.HasPrefix(rest, "/*!") || strings.HasPrefix(rest, "/*M!") || strings.HasPrefix(rest, "/*+") {
				return nil
			}
			i := strings.Index(rest[2:], "*/")
			if i < 0 {
				return fmt.Errorf("%w: unterminated comment at offset %d", ErrSyntax, l.pos)
			}
			l.pos += 2 + i + 2
		default:
			return nil
		}
	}
	return nil
}

// str lexes a quoted string whose quote is at q; the token starts at start
// (earlier when there is an introducer).
func (l *lexer) str(start, q int, intro bool) (token, error) {
	quote := l.src[q]
	stops := `"\`
	if quote == '\'' {
		stops = `'\`
	}
	if l.noBackslash {
		stops = stops[:1]
	}
	var val []byte
	i := q + 1
	for {
		// Copy runs of plain bytes at once: values may be megabytes.
		j := strings.IndexAny(l.src[i:], stops)
		if j < 0 {
			return token{}, fmt.Errorf("%w: unterminated string starting at offset %d", ErrSyntax, start)
		}
		val = append(val, l.src[i:i+j]...)
		i += j
		switch {
		case l.src[i] == '\\':
			if i+1 >= len(l.src) {
				return token{}, fmt.Errorf("%w: unterminated string starting at offset %d", ErrSyntax, start)
			}
			val = appendEscape(val, l.src[i+1])
			i += 2
		case i+1 < len(l.src) && l.src[i+1] == quote:
			val = append(val, quote)
			i += 2
		default:
			l.pos = i + 1
			if val == nil {
				val = []byte{}
			}
			return token{kind: tString, pos: start, text: l.src[start:l.pos], val: val, quote: quote, intro: intro}, nil
		}
	}
}

// appendEscape appends what MySQL makes of backslash followed by c.
func appendEscape(val []byte, c byte) []byte {
	switch c {
	case '0':
		return append(val, 0)
	case 'b':
		return append(val, '\b')
	case 'n':
		return append(val, '\n')
	case 'r':
		return append(val, '\r')
	case 't':
		return append(val, '\t')
	case 'Z':
		return append(val, 0x1a)
	case '%', '_':
		// Kept with the backslash so that LIKE patterns survive.
		return append(val, '\\', c)
	}
	return append(val, c)
}

// backtick lexes a `quoted` identifier.
func (l *lexer) backtick(start int) (token, error) {
	i := start + 1
	for i < len(l.src) {
		if l.src[i] == '`' {
			if i+1 < len(l.src) && l.src[i+1] == '`' {
				i += 2
				continue
			}
			l.pos = i + 1
			return token{kind: tIdent, pos: start, text: l.src[start:l.pos]}, nil
		}
		i++
	}
	return token{}, fmt.Errorf("%w: unterminated identifier starting at offset %d", ErrSyntax, start)
}

// number lexes 123, 1.5, .5, 1e6, 1.5e+06 and 0x41. A number run into
// letters is an identifier in MySQL (1abc), so it becomes a word.
func (l *lexer) number(start int) (token, error) {
	src := l.src
	i := start
	if strings.HasPrefix(src[i:], "0x") && i+2 < len(src) && isHexDigit(src[i+2]) {
		i += 2
		for i < len(src) && isHexDigit(src[i]) {
			i++
		}
		if i < len(src) && isIdentChar(src[i]) {
			return l.numberWord(start, i), nil
		}
		l.pos = i
		digits := src[start+2 : i]
		if len(digits)%2 == 1 {
			digits = "0" + digits
		}
		return token{kind: tHex, pos: start, text: src[start:i], val: decodeHex(digits)}, nil
	}
	for i < len(src) && isDigit(src[i]) {
		i++
	}
	if i < len(src) && src[i] == '.' {
		i++
		for i < len(src) && isDigit(src[i]) {
			i++
		}
	}
	if i < len(src) && (src[i] == 'e' || src[i] == 'E') {
		j := i + 1
		if j < len(src) && (src[j] == '+' || src[j] == '-') {
			j++
		}
		if j < len(src) && isDigit(src[j]) {
			for j < len(src) && isDigit(src[j]) {
				j++
			}
			i = j
		}
	}
	if i < len(src) && isIdentChar(src[i]) {
		return l.numberWord(start, i), nil
	}
	l.pos = i
	return token{kind: tNumber, pos: start, text: src[start:i]}, nil
}

// numberWord lexes a number run into identifier bytes from i on (1abc,
// 0x1g) as a word, which matches no kv form.
func (l *lexer) numberWord(start, i int) token {
	for i < len(l.src) && isIdentChar(l.src[i]) {
		i++
	}
	l.pos = i
	return token{kind: tWord, pos: start, text: l.src[start:i]}
}

// word lexes an identifier or keyword, and the literals that begin with
// one: X'41', N'x' and introducers such as _binary'x'.
func (l *lexer) word(start int) (token, error) {
	i := start
	for i < len(l.src) && isIdentChar(l.src[i]) {
		i++
	}
	w := l.src[start:i]
	next := byte(0)
	if i < len(l.src) {
		next = l.src[i]
	}
	switch {
	case (w == "x" || w == "X") && next == '\'':
		return l.hexString(start, i, false)
	case (w == "n" || w == "N") && next == '\'':
		return l.str(start, i, true)
	case w[0] == '_' && len(w) > 1:
		// A charset introducer may be followed by spaces.
		j := i
		for j < len(l.src) && (l.src[j] == ' ' || l.src[j] == '\t' || l.src[j] == '\n' || l.src[j] == '\r') {
			j++
		}
		if j < len(l.src) {
			switch c := l.src[j]; {
			case c == '\'' || c == '"':
				return l.str(start, j, true)
			case (c == 'x' || c == 'X') && j+1 < len(l.src) && l.src[j+1] == '\'':
				return l.hexString(start, j+1, true)
			}
		}
	}
	l.pos = i
	return token{kind: tWord, pos: start, text: w}, nil
}

// hexString lexes X'4142' whose opening quote is at q.
func (l *lexer) hexString(start, q int, intro bool) (token, error) {
	end := strings.IndexByte(l.src[q+1:], '\'')
	if end < 0 {
		return token{}, fmt.Errorf("%w: unterminated hex literal starting at offset %d", ErrSyntax, start)
	}
	digits := l.src[q+1 : q+1+end]
	if len(digits)%2 == 1 {
		return token{}, fmt.Errorf("%w: hex literal at offset %d has an odd number of digits", ErrSyntax, start)
	}
	for k := 0; k < len(digits); k++ {
		if !isHexDigit(digits[k]) {
			return token{}, fmt.Errorf("%w: hex literal at offset %d has a non-hex digit", ErrSyntax, start)
		}
	}
	l.pos = q + 1 + end + 1
	return token{kind: tHex, pos: start, text: l.src[start:l.pos], val: decodeHex(digits), intro: intro}, nil
}

// decodeHex decodes an even number of validated hex digits.
func decodeHex(digits string) []byte {
	out := make([]byte, len(digits)/2)
	for k := range out {
		out[k] = unhex(digits[2*k])<<4 | unhex(digits[2*k+1])
	}
	return out
}

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

func isDigit(c byte) bool    { return c >= '0' && c <= '9' }
func isHexDigit(c byte) bool { return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') }

// isIdentStart and isIdentChar follow MySQL's unquoted identifiers, which
// may hold any non-ASCII byte.
func isIdentStart(c byte) bool {
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$' || c >= 0x80
}

func isIdentChar(c byte) bool { return isIdentStart(c) || isDigit(c) }
