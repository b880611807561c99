package sqlinfo

// This file is the token lexer that the analysis (appendShape,
// placeholderOffsets) and the kv pseudo-queries share. It reads tokens the
// way the server's lexer splits them, on demand, so that a caller that
// rejects a text after its first few tokens does not scan the rest.

import (
	"fmt"
	"strings"
)

// TokenKind is the kind of a Token.
type TokenKind uint8

// The token kinds.
const (
	TokEOF         TokenKind = iota
	TokWord                  // keyword or unquoted identifier, as written
	TokQuotedIdent           // `x`, or "x" under ANSI_QUOTES
	TokString                // '...' or "...", with any introducer
	TokHex                   // X'41' or 0x41
	TokBit                   // B'01' or 0b01
	TokNumber                // 12, 1.5, .5, 1e6
	TokParam                 // the ? placeholder
	TokHint                  // an optimizer hint comment, /*+ ... */, whole
	TokExecOpen              // the opener of an executable comment: /*!, /*!50100, /*M!
	TokExecClose             // the */ that closes an executable comment
	TokPunct                 // any other byte
)

// LexOptions are the sql_mode flags that change how the server splits a
// text into tokens. The zero value is the server's default.
type LexOptions struct {
	// NoBackslashEscapes: sql_mode NO_BACKSLASH_ESCAPES, \ is an ordinary
	// character in strings.
	NoBackslashEscapes bool
	// ANSIQuotes: sql_mode ANSI_QUOTES, "x" is an identifier.
	ANSIQuotes bool
}

// Token is one token of a statement text.
type Token struct {
	Kind TokenKind
	// Quote is the quote character of a TokString or TokQuotedIdent.
	Quote byte
	esc   bool   // TokString: the body holds escapes or doubled quotes
	bs    bool   // TokString: backslash escapes apply
	body  int32  // offset in Text of the literal's opening quote or digits
	Pos   int    // byte offset of the token in the text
	Text  string // the token as written, introducer included
	// Intro is the charset introducer (_binary) or N before a TokString,
	// or the introducer before a TokHex; "" when there is none.
	Intro string
}

// Is reports whether t is the punctuation byte c.
func (t Token) Is(c byte) bool { return t.Kind == TokPunct && len(t.Text) == 1 && t.Text[0] == c }

// Value returns the bytes a TokString, TokHex or TokBit literal stands
// for, never nil, as the server reads them. A backslash before % or _ is
// kept, as the server keeps it for LIKE patterns. Other kinds yield nil.
func (t Token) Value() []byte {
	switch t.Kind {
	case TokString:
		body := t.Text[t.body+1 : len(t.Text)-1]
		if !t.esc {
			return []byte(body)
		}
		return unescape(make([]byte, 0, len(body)), body, t.Quote, t.bs)
	case TokHex:
		digits := t.Text[t.body:]
		if digits[len(digits)-1] == '\'' {
			digits = digits[1 : len(digits)-1]
		}
		return decodeHex(digits)
	case TokBit:
		digits := t.Text[t.body:]
		if digits[len(digits)-1] == '\'' {
			digits = digits[1 : len(digits)-1]
		}
		return decodeBits(digits)
	}
	return nil
}

// A LexError is a text the server's lexer refuses: an unterminated string,
// quoted identifier or comment, or a malformed hex or bit literal.
type LexError struct {
	Pos int    // where the bad token starts
	Msg string // what is wrong, with the offset
}

func (e *LexError) Error() string { return "sqlinfo: " + e.Msg }

func lexErrorf(pos int, format string, args ...any) *LexError {
	return &LexError{Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

// Lexer splits a statement text into tokens. Whitespace and plain
// comments separate tokens; hints and executable comments are tokens of
// their own, since the server reads them. The zero Lexer lexes "".
type Lexer struct {
	src    string
	pos    int
	opts   LexOptions
	inExec bool // inside an executable comment, whose */ is a token
	// identEnd is the end of the last identifier token, or -1. An
	// identifier directly followed by "." makes what follows the dot an
	// identifier too, even when it starts with a digit (t.1e5).
	identEnd int
	dotEnd   int // the end of a "." that followed an identifier, or -1
}

// NewLexer returns a Lexer for text.
func NewLexer(text string, opts LexOptions) Lexer {
	return Lexer{src: text, opts: opts, identEnd: -1, dotEnd: -1}
}

// Peek returns the next token without consuming it.
func (l *Lexer) Peek() (Token, error) {
	saved := *l
	t, err := l.Next()
	*l = saved
	return t, err
}

// Next consumes and returns the next token; TokEOF at the end of the text,
// and again after it. After an error, the bad token is consumed (to the end
// of the text when it is unterminated) and lexing may go on.
func (l *Lexer) Next() (Token, error) {
	if err := l.skipSpace(); err != nil {
		return Token{}, err
	}
	start := l.pos
	afterDot := start == l.dotEnd
	l.dotEnd = -1
	if start >= len(l.src) {
		return Token{Kind: TokEOF, Pos: start}, nil
	}
	s := l.src
	c := s[start]
	switch {
	case afterDot && isWordByte(c):
		// The server reads t.1e5 and t.0x41 as column names.
		return l.word(start), nil
	case c == '\'' || (c == '"' && !l.opts.ANSIQuotes):
		return l.str(start, start, "")
	case c == '`' || c == '"':
		return l.quotedIdent(start)
	case c == '?':
		return l.punct(TokParam, start, 1), nil
	case c == '/' && start+1 < len(s) && s[start+1] == '*':
		// skipSpace stopped at a hint or an executable comment.
		if start+2 < len(s) && s[start+2] == '+' {
			end, ok := skipPlainComment(s, start)
			if !ok {
				l.pos = len(s)
				return Token{}, lexErrorf(start, "unterminated comment at offset %d", start)
			}
			return l.punct(TokHint, start, end-start), nil
		}
		l.inExec = true
		return l.punct(TokExecOpen, start, versionedCommentBody(s, start)-start), nil
	case c == '*' && l.inExec && start+1 < len(s) && s[start+1] == '/':
		l.inExec = false
		return l.punct(TokExecClose, start, 2), nil
	case isDigit(c) || (c == '.' && start+1 < len(s) && isDigit(s[start+1]) && l.identEnd != start):
		return l.number(start)
	case isWordByte(c):
		return l.wordOrLiteral(start)
	}
	t := l.punct(TokPunct, start, 1)
	if c == '.' && l.identEnd == start {
		l.dotEnd = l.pos
	}
	return t, nil
}

func (l *Lexer) punct(k TokenKind, start, n int) Token {
	l.pos = start + n
	return Token{Kind: k, Pos: start, Text: l.src[start:l.pos]}
}

// skipSpace skips whitespace and plain comments. It stops before a hint or
// an executable comment, whose content the server reads.
func (l *Lexer) skipSpace() error {
	s := l.src
	for l.pos < len(s) {
		i := l.pos
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			l.pos++
		case c == '#' || (c == '-' && i+1 < len(s) && s[i+1] == '-' && (i+2 == len(s) || isSpaceOrCtl(s[i+2]))):
			// The server needs whitespace or a control byte after "--".
			l.pos = skipLine(s, i)
		case c == '/' && i+1 < len(s) && s[i+1] == '*':
			if (i+2 < len(s) && s[i+2] == '+') || versionedCommentBody(s, i) > 0 {
				return nil
			}
			end, ok := skipPlainComment(s, i)
			if !ok {
				l.pos = len(s)
				return lexErrorf(i, "unterminated comment at offset %d", i)
			}
			l.pos = end
		default:
			return nil
		}
	}
	return nil
}

// str lexes a quoted string whose quote is at q; the token starts at start,
// before the introducer intro when there is one.
func (l *Lexer) str(start, q int, intro string) (Token, error) {
	s := l.src
	quote := s[q]
	stops := `"\`
	if quote == '\'' {
		stops = `'\`
	}
	bs := !l.opts.NoBackslashEscapes
	if !bs {
		stops = stops[:1]
	}
	esc := false
	i := q + 1
	for {
		// Skip runs of plain bytes at once: values may be megabytes.
		j := strings.IndexAny(s[i:], stops)
		if j < 0 {
			break
		}
		i += j
		switch {
		case s[i] == '\\':
			if i+1 >= len(s) {
				i = len(s)
				continue
			}
			esc = true
			i += 2
			continue
		case i+1 < len(s) && s[i+1] == quote:
			esc = true
			i += 2
			continue
		}
		l.pos = i + 1
		return Token{Kind: TokString, Pos: start, Text: s[start:l.pos], Quote: quote,
			Intro: intro, body: int32(q - start), esc: esc, bs: bs}, nil
	}
	l.pos = len(s)
	return Token{}, lexErrorf(start, "unterminated string starting at offset %d", start)
}

// unescape appends to dst the body of a string quoted by quote, with its
// doubled quotes and, when bs is set, its backslash escapes resolved.
func unescape(dst []byte, body string, quote byte, bs bool) []byte {
	stops := `"\`
	if quote == '\'' {
		stops = `'\`
	}
	if !bs {
		stops = stops[:1]
	}
	for {
		// Copy runs of plain bytes at once: values may be megabytes.
		j := strings.IndexAny(body, stops)
		if j < 0 || j+1 >= len(body) {
			return append(dst, body...)
		}
		dst = append(dst, body[:j]...)
		if body[j] == '\\' {
			dst = appendEscape(dst, body[j+1])
		} else {
			dst = append(dst, quote) // doubled
		}
		body = body[j+2:]
	}
}

// appendEscape appends what the server makes of backslash followed by c.
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

// quotedIdent lexes a `quoted` identifier, or a "quoted" one under
// ANSI_QUOTES. A doubled quote stands for itself; there are no escapes.
func (l *Lexer) quotedIdent(start int) (Token, error) {
	end, ok := identEnd(l.src, start, l.src[start])
	if !ok {
		l.pos = len(l.src)
		return Token{}, lexErrorf(start, "unterminated identifier starting at offset %d", start)
	}
	l.pos = end
	l.identEnd = end
	return Token{Kind: TokQuotedIdent, Pos: start, Text: l.src[start:end], Quote: l.src[start]}, nil
}

// identEnd returns the offset past the identifier quoted by q at s[i],
// and whether it is terminated.
func identEnd(s string, i int, q byte) (int, bool) {
	for j := i + 1; j < len(s); j++ {
		if s[j] == q {
			if j+1 < len(s) && s[j+1] == q {
				j++
				continue
			}
			return j + 1, true
		}
	}
	return len(s), false
}

// number lexes 123, 1.5, .5, 1e6, 1.5e+06, 0x41 and 0b01. A number run
// into letters is an identifier to the server (1abc, 0x1g), so it becomes
// a word.
func (l *Lexer) number(start int) (Token, error) {
	s := l.src
	i := start
	kind := TokNumber
	switch {
	case strings.HasPrefix(s[i:], "0x") && i+2 < len(s) && isHexDigit(s[i+2]):
		kind, i = TokHex, i+2
		for i < len(s) && isHexDigit(s[i]) {
			i++
		}
	case strings.HasPrefix(s[i:], "0b") && i+2 < len(s) && (s[i+2] == '0' || s[i+2] == '1'):
		kind, i = TokBit, i+2
		for i < len(s) && (s[i] == '0' || s[i] == '1') {
			i++
		}
	default:
		i, _ = numberEnd(s, i)
	}
	if i < len(s) && isWordByte(s[i]) {
		// As the skeleton scan reads it (see scanText): a word from the
		// number's start, even past a point (1.5e3x).
		for i < len(s) && isWordByte(s[i]) {
			i++
		}
		l.pos, l.identEnd = i, i
		return Token{Kind: TokWord, Pos: start, Text: s[start:i]}, nil
	}
	l.pos = i
	t := Token{Kind: kind, Pos: start, Text: s[start:i]}
	if kind != TokNumber {
		t.body = 2
	}
	return t, nil
}

// word lexes an identifier or keyword.
func (l *Lexer) word(start int) Token {
	w, end := wordAt(l.src, start)
	l.pos = end
	l.identEnd = end
	return Token{Kind: TokWord, Pos: start, Text: w}
}

// wordOrLiteral lexes a word, or a literal that begins with one: X'41',
// B'01', N'x' and introducers such as _binary'x'.
func (l *Lexer) wordOrLiteral(start int) (Token, error) {
	s := l.src
	w, i := wordAt(s, start)
	next := byte(0)
	if i < len(s) {
		next = s[i]
	}
	switch {
	case next != '\'':
	case w == "x" || w == "X":
		return l.hexString(start, i, "")
	case w == "b" || w == "B":
		return l.bitString(start, i)
	case w == "n" || w == "N":
		return l.str(start, i, w)
	}
	if w[0] == '_' && len(w) > 1 {
		// A charset introducer may be followed by spaces.
		j := i
		for j < len(s) && (s[j] == ' ' || s[j] == '\t' || s[j] == '\n' || s[j] == '\r') {
			j++
		}
		if j < len(s) {
			switch c := s[j]; {
			case c == '\'' || (c == '"' && !l.opts.ANSIQuotes):
				return l.str(start, j, w)
			case (c == 'x' || c == 'X') && j+1 < len(s) && s[j+1] == '\'':
				return l.hexString(start, j+1, w)
			}
		}
	}
	l.pos, l.identEnd = i, i
	return Token{Kind: TokWord, Pos: start, Text: w}, nil
}

// hexString lexes X'4142' whose opening quote is at q.
func (l *Lexer) hexString(start, q int, intro string) (Token, error) {
	s := l.src
	end := strings.IndexByte(s[q+1:], '\'')
	if end < 0 {
		l.pos = len(s)
		return Token{}, lexErrorf(start, "unterminated hex literal starting at offset %d", start)
	}
	l.pos = q + 1 + end + 1
	digits := s[q+1 : q+1+end]
	if len(digits)%2 == 1 {
		return Token{}, lexErrorf(start, "hex literal at offset %d has an odd number of digits", start)
	}
	for k := 0; k < len(digits); k++ {
		if !isHexDigit(digits[k]) {
			return Token{}, lexErrorf(start, "hex literal at offset %d has a non-hex digit", start)
		}
	}
	return Token{Kind: TokHex, Pos: start, Text: s[start:l.pos], Intro: intro, body: int32(q - start)}, nil
}

// bitString lexes B'0101' whose opening quote is at q.
func (l *Lexer) bitString(start, q int) (Token, error) {
	s := l.src
	end := strings.IndexByte(s[q+1:], '\'')
	if end < 0 {
		l.pos = len(s)
		return Token{}, lexErrorf(start, "unterminated bit literal starting at offset %d", start)
	}
	l.pos = q + 1 + end + 1
	for k := q + 1; k < q+1+end; k++ {
		if s[k] != '0' && s[k] != '1' {
			return Token{}, lexErrorf(start, "bit literal at offset %d has a digit other than 0 and 1", start)
		}
	}
	return Token{Kind: TokBit, Pos: start, Text: s[start:l.pos], body: int32(q - start)}, nil
}

// decodeHex decodes hex digits, read as if led by a 0 when their number
// is odd (0xABC).
func decodeHex(digits string) []byte {
	out := make([]byte, (len(digits)+1)/2)
	k := len(out) - 1
	for i := len(digits) - 1; i >= 0; i -= 2 {
		b := unhex(digits[i])
		if i > 0 {
			b |= unhex(digits[i-1]) << 4
		}
		out[k] = b
		k--
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

// decodeBits decodes binary digits into bytes, right-aligned.
func decodeBits(digits string) []byte {
	out := make([]byte, (len(digits)+7)/8)
	for i := 0; i < len(digits); i++ {
		bit := len(digits) - 1 - i
		if digits[i] == '1' {
			out[len(out)-1-bit/8] |= 1 << (bit % 8)
		}
	}
	return out
}

func isDigit(c byte) bool    { return c >= '0' && c <= '9' }
func isHexDigit(c byte) bool { return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') }
