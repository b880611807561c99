package kv

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mycached/mycached/mysqlproxy/internal/sqlinfo"
)

// Parse parses sql as a kv pseudo-query, with backslash escapes in strings
// as MySQL reads them by default.
//
// ok is false when sql is not a kv statement: the caller sends it to MySQL
// as SQL, and err is nil. When ok is true and err is not nil, sql is
// kv-shaped but malformed (INSERT "k" =, a bad TTL, trailing tokens); err
// wraps ErrSyntax and its text is the message of the ER_PARSE_ERROR to
// send (see ErrorResult). A SELECT never yields an error: a SELECT that is
// not exactly a kv form is SQL.
func Parse(sql string) (st *Stmt, ok bool, err error) {
	return parse(sql, false)
}

// ParseNoBackslashEscapes is Parse for a session whose sql_mode includes
// NO_BACKSLASH_ESCAPES (the server status flag tells): a backslash is then
// an ordinary character, and drivers escape only quotes by doubling them.
func ParseNoBackslashEscapes(sql string) (st *Stmt, ok bool, err error) {
	return parse(sql, true)
}

// ParseUnambiguous is Parse for a connection where no text is SQL (the
// kv-only listener): there a SELECT takes its keys in any quoting, with
// an introducer or as hex literals (X'835C', 0x835C), as INSERT and
// DELETE do everywhere.
func ParseUnambiguous(sql string) (st *Stmt, ok bool, err error) {
	p := parser{lx: newLexer(sql, false), anyQuoting: true}
	return p.parse()
}

// parser holds the state of one Parse call.
type parser struct {
	lx lexer
	st Stmt
	// anyQuoting has SELECT take any quoted or hex literal as a key.
	anyQuoting bool
}

func parse(sql string, noBackslash bool) (*Stmt, bool, error) {
	// The parser stays on the stack: most statements are plain SQL and
	// should cost no allocation on their way to MySQL.
	p := parser{lx: newLexer(sql, noBackslash)}
	return p.parse()
}

func (p *parser) parse() (*Stmt, bool, error) {
	first, err := p.lx.next()
	if err != nil || first.Kind != sqlinfo.TokWord {
		return nil, false, nil
	}
	switch {
	case strings.EqualFold(first.Text, "SELECT"):
		if !p.selectStmt() {
			return nil, false, nil
		}
		return p.stmt(), true, nil
	case strings.EqualFold(first.Text, "INSERT"):
		return p.finish(p.insert())
	case strings.EqualFold(first.Text, "DELETE"):
		return p.finish(p.delete())
	case strings.EqualFold(first.Text, "DROP"):
		if !p.atEnd() {
			return nil, false, nil
		}
		p.st.Op = OpDrop
		return p.stmt(), true, nil
	}
	return nil, false, nil
}

// finish turns the (ok, err) of a statement parser into Parse's results.
func (p *parser) finish(ok bool, err error) (*Stmt, bool, error) {
	switch {
	case !ok:
		return nil, false, nil
	case err != nil:
		return nil, true, err
	}
	return p.stmt(), true, nil
}

// stmt returns the parsed statement on the heap.
func (p *parser) stmt() *Stmt {
	st := p.st
	return &st
}

// atEnd consumes an optional ";" and reports whether the statement ends
// there. It consumes nothing useful when it returns false, since the
// caller then gives up.
func (p *parser) atEnd() bool {
	t, err := p.lx.next()
	if err != nil {
		return false
	}
	if t.Is(';') {
		t, err = p.lx.next()
	}
	return err == nil && t.Kind == sqlinfo.TokEOF
}

// expectEnd is atEnd for a kv-shaped statement, where leftovers are a
// syntax error.
func (p *parser) expectEnd(after string) error {
	t, err := p.lx.next()
	if err != nil {
		return err
	}
	if t.Is(';') {
		if t, err = p.lx.next(); err != nil {
			return err
		}
	}
	if t.Kind != sqlinfo.TokEOF {
		return fmt.Errorf("%w: unexpected %s after %s", ErrSyntax, describe(t), after)
	}
	return nil
}

// selectStmt parses SELECT * or SELECT "k1", ? ... and reports whether
// the statement is exactly that.
func (p *parser) selectStmt() bool {
	t, err := p.lx.next()
	if err != nil {
		return false
	}
	if t.Is('*') {
		p.st.Op = OpSelectAll
		return p.atEnd()
	}
	p.st.Op = OpSelect
	for {
		switch {
		case !plainDoubleQuoted(t) && t.Kind != sqlinfo.TokParam &&
			!(p.anyQuoting && (t.Kind == sqlinfo.TokString || t.Kind == sqlinfo.TokHex)):
			return false
		case len(p.st.Keys) == MaxSelectKeys:
			// Read on, to tell kv from SQL, but keep nothing: the
			// statement is an error.
			p.st.extraKeys++
			if t.Kind == sqlinfo.TokParam {
				p.st.Params++
			}
		case t.Kind == sqlinfo.TokParam:
			p.st.Keys = append(p.st.Keys, nil)
			p.addParam(slotKey, len(p.st.Keys)-1)
		default:
			p.st.Keys = append(p.st.Keys, t.Value())
		}
		if t, err = p.lx.next(); err != nil {
			return false
		}
		switch {
		case t.Is(','):
		case t.Is(';'):
			t, err = p.lx.next()
			return err == nil && t.Kind == sqlinfo.TokEOF
		case t.Kind == sqlinfo.TokEOF:
			return true
		default:
			return false
		}
		if t, err = p.lx.next(); err != nil {
			return false
		}
	}
}

// insert parses INSERT key = value [TTL n]. ok is false when the statement
// is SQL.
func (p *parser) insert() (ok bool, err error) {
	t, err := p.lx.next()
	if err != nil || !startsLiteral(t) {
		return false, nil
	}
	if plainDoubleQuoted(t) {
		// Under ANSI_QUOTES, INSERT "t" VALUES/SET/(...) is SQL.
		if n, err := p.lx.peek(); err == nil && (n.Kind == sqlinfo.TokWord || n.Kind == sqlinfo.TokQuotedIdent || n.Is('(') || n.Is('.')) {
			return false, nil
		}
	}
	p.st.Op = OpInsert
	key, err := p.literal(t, slotKey, "key")
	if err != nil {
		return true, err
	}
	p.st.Keys = [][]byte{key}
	if t, err = p.lx.next(); err != nil {
		return true, err
	}
	if !t.Is('=') {
		return true, fmt.Errorf("%w: expected = after the key, found %s", ErrSyntax, describe(t))
	}
	if t, err = p.lx.next(); err != nil {
		return true, err
	}
	if p.st.Value, err = p.literal(t, slotValue, "value"); err != nil {
		return true, err
	}
	n, err := p.lx.peek()
	if err != nil {
		return true, err
	}
	if n.Kind == sqlinfo.TokWord && strings.EqualFold(n.Text, "TTL") {
		if _, err := p.lx.next(); err != nil {
			return true, err
		}
		if err := p.ttl(); err != nil {
			return true, err
		}
		return true, p.expectEnd("the TTL")
	}
	return true, p.expectEnd("the value")
}

// ttl parses the operand of TTL.
func (p *parser) ttl() error {
	t, err := p.lx.next()
	if err != nil {
		return err
	}
	var text string
	switch {
	case t.Kind == sqlinfo.TokParam:
		p.addParam(slotTTL, 0)
		return nil
	case t.Kind == sqlinfo.TokNumber:
		text = t.Text
	case t.Kind == sqlinfo.TokString:
		text = string(t.Value())
	case t.Is('-'):
		return fmt.Errorf("%w: TTL must not be negative", ErrSyntax)
	default:
		return fmt.Errorf("%w: TTL needs a number of seconds, found %s", ErrSyntax, describe(t))
	}
	ttl, problem := parseTTL(text)
	if problem != "" {
		return fmt.Errorf("%w: %s", ErrSyntax, problem)
	}
	p.st.TTL = ttl
	return nil
}

// parseTTL parses a whole, non-negative number of seconds. On failure it
// returns what is wrong, for the caller to wrap in its sentinel.
func parseTTL(s string) (time.Duration, string) {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Sprintf("TTL must be a whole number of seconds, not %q", clip(s))
	}
	if limit := uint64(MaxTTL / time.Second); n > limit {
		return 0, fmt.Sprintf("TTL %d is over the limit of %d seconds (one year); omit TTL for pairs that never expire", n, limit)
	}
	return time.Duration(n) * time.Second, ""
}

// delete parses DELETE key. ok is false when the statement is SQL.
func (p *parser) delete() (ok bool, err error) {
	t, err := p.lx.next()
	if err != nil || !startsLiteral(t) {
		return false, nil
	}
	if plainDoubleQuoted(t) {
		// Under ANSI_QUOTES, DELETE "t1", "t2" FROM ... is SQL.
		n, err := p.lx.peek()
		if err != nil || (n.Kind != sqlinfo.TokEOF && !n.Is(';')) {
			return false, nil
		}
	}
	p.st.Op = OpDelete
	key, err := p.literal(t, slotKey, "key")
	if err != nil {
		return true, err
	}
	p.st.Keys = [][]byte{key}
	return true, p.expectEnd("the key")
}

// startsLiteral reports whether t can begin a kv key, which no INSERT or
// DELETE statement of SQL can have in that place.
func startsLiteral(t token) bool {
	switch t.Kind {
	case sqlinfo.TokString, sqlinfo.TokHex, sqlinfo.TokNumber, sqlinfo.TokParam:
		return true
	}
	return t.Is('-')
}

// literal returns the bytes of a key or value token; what names it in
// errors. A placeholder yields nil and is recorded for Bind.
func (p *parser) literal(t token, kind slotKind, what string) ([]byte, error) {
	switch t.Kind {
	case sqlinfo.TokString, sqlinfo.TokHex:
		return t.Value(), nil
	case sqlinfo.TokNumber:
		return []byte(t.Text), nil
	case sqlinfo.TokParam:
		p.addParam(kind, 0)
		return nil, nil
	case sqlinfo.TokWord:
		if strings.EqualFold(t.Text, "NULL") {
			return nil, fmt.Errorf("%w: the %s must not be NULL", ErrSyntax, what)
		}
	case sqlinfo.TokPunct:
		if t.Is('-') {
			// A negative number, as drivers interpolate it.
			n, err := p.lx.next()
			if err != nil {
				return nil, err
			}
			if n.Kind == sqlinfo.TokNumber {
				return []byte("-" + n.Text), nil
			}
			t = n
		}
	}
	return nil, fmt.Errorf("%w: expected a quoted %s, found %s", ErrSyntax, what, describe(t))
}

// addParam records a placeholder of the given kind; index is its place
// in Keys for a key.
func (p *parser) addParam(kind slotKind, index int) {
	p.st.paramSlots = append(p.st.paramSlots, slot{kind: kind, index: index})
	p.st.Params++
}

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > 32 {
		return s[:32] + "..."
	}
	return s
}
