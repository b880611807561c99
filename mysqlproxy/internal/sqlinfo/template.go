package sqlinfo

// This file lets a statement whose Point or Insert values come from literals
// share its analysis with the other texts of its shape. The first text of a
// shape is parsed in full; a template then records which literal token of
// the text each literal Value came from. A later text whose token skeleton
// (every token but the literals, verbatim, plus the class of each literal)
// equals the template's differs only in literal values, so its Info is the
// shape's with the new literals read by one scan of the text.
//
// The design errs towards the full parse: a wrong key value would serve a
// stale row. A template is built only when each literal Value maps to one
// literal token whose value, read by the scan, equals the parser's, and when
// no value-dependent decision (a repeated IN item, a column pinned twice)
// shaped the result. A text whose skeleton differs, or whose new values
// would have been merged by such a decision, is parsed in full.

import (
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	driver "github.com/pingcap/tidb/pkg/parser/test_driver"
)

// The classes of literal tokens, as written into a skeleton after litMark.
const (
	litInt     = 'I' // digits only, at most math.MaxUint64
	litBigInt  = 'J' // digits only, above math.MaxUint64: a decimal to the parser
	litDecimal = 'D' // digits with a point, no exponent
	litFloat   = 'F' // digits with an exponent
	litSingle  = 'S' // a '...' string
	litDouble  = 'Q' // a "..." string
)

// litMark opens a literal's class in a skeleton. Control bytes outside
// strings make the scan fail, so no text can spell it.
const litMark = '\x01'

// litTok is one literal token of a text.
type litTok struct {
	off, end int
	class    byte
}

// textScan is the result of scanText, kept in a pool between calls.
type textScan struct {
	skel []byte
	toks []litTok
	// odd, hints, key and kept serve the skeleton memo (see skelKey).
	odd   bool
	hints []byte
	key   []byte
	kept  []int
}

// scanText appends to sc the skeleton and the literal tokens of sql. The
// skeleton holds every token verbatim except literals, which become litMark
// and their class, and one space wherever whitespace or a comment separates
// two tokens. It reports false for a text it does not read with confidence:
// an unterminated string, two adjacent strings (which the server joins into
// one literal), control bytes.
func scanText(sc *textScan, sql string) bool {
	sc.skel, sc.toks = sc.skel[:0], sc.toks[:0]
	sc.odd, sc.hints = false, sc.hints[:0]
	i, prevEnd := 0, 0
	prevIdent, prevString, afterDot := false, false, false
	for {
		start := skipSpaceAndComments(sql, i)
		if start > i {
			sc.checkGap(sql[i:start])
		}
		if start >= len(sql) {
			return true
		}
		gap := start > prevEnd
		if gap && prevEnd > 0 {
			sc.skel = append(sc.skel, ' ')
		}
		i = start
		c := sql[i]
		isIdent, isString, dot := false, false, false
		switch {
		case c == '\'' || c == '"':
			if prevString {
				return false
			}
			end, ok := quotedEnd(sql, i, c)
			if !ok {
				return false
			}
			class := byte(litSingle)
			if c == '"' {
				class = litDouble
			}
			sc.toks = append(sc.toks, litTok{off: i, end: end, class: class})
			sc.skel = append(sc.skel, litMark, class)
			i, isString = end, true
		case c == '`':
			end, ok := quotedEnd(sql, i, '`')
			if !ok {
				return false
			}
			sc.skel = append(sc.skel, sql[i:end]...)
			i, isIdent = end, true
		case c >= '0' && c <= '9' && afterDot && !gap:
			// t.1col names a column: after "ident." comes an identifier.
			w, end := wordAt(sql, i)
			sc.skel = append(sc.skel, w...)
			i, isIdent = end, true
		case (c >= '0' && c <= '9') || (c == '.' && i+1 < len(sql) && sql[i+1] >= '0' && sql[i+1] <= '9' && !(prevIdent && !gap)):
			end, class := numberEnd(sql, i)
			if end < len(sql) && isWordByte(sql[end]) {
				// 1abc, 0x41, 0b01, 1e3x: an identifier or a hexadecimal
				// or bit literal, kept verbatim.
				for end < len(sql) && isWordByte(sql[end]) {
					end++
				}
				sc.skel = append(sc.skel, sql[i:end]...)
				i, isIdent = end, true
				break
			}
			if class == litInt && end-i > 19 {
				// The grammar takes an integer above math.MaxUint64 for a
				// decimal, which some places (LIMIT) reject.
				if _, err := strconv.ParseUint(sql[i:end], 10, 64); err != nil {
					class = litBigInt
				}
			}
			sc.toks = append(sc.toks, litTok{off: i, end: end, class: class})
			sc.skel = append(sc.skel, litMark, class)
			i = end
		case isWordByte(c):
			w, end := wordAt(sql, i)
			sc.skel = append(sc.skel, w...)
			i, isIdent = end, true
		case c < ' ' || c == 0x7f:
			// Whitespace was skipped above; other control bytes have no
			// place in a statement this scanner vouches for.
			return false
		default:
			sc.skel = append(sc.skel, c)
			dot = c == '.' && prevIdent && !gap
			i++
		}
		prevEnd = i
		prevIdent, prevString, afterDot = isIdent, isString, dot
	}
}

// quotedEnd returns the offset past the quoted token opening at s[i] and
// whether it is terminated. Backslash escapes apply to strings only.
func quotedEnd[T string | []byte](s T, i int, q byte) (int, bool) {
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			if q != '`' {
				j++
			}
		case q:
			if j+1 < len(s) && s[j+1] == q {
				j++
				continue
			}
			return j + 1, true
		}
	}
	return len(s), false
}

// numberEnd returns the end and class of the number starting at s[i]:
// digits, an optional point and digits, an optional exponent.
func numberEnd(s string, i int) (int, byte) {
	j := skipDigits(s, i)
	class := byte(litInt)
	if j < len(s) && s[j] == '.' {
		j = skipDigits(s, j+1)
		class = litDecimal
	}
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		k := j + 1
		if k < len(s) && (s[k] == '+' || s[k] == '-') {
			k++
		}
		if k < len(s) && s[k] >= '0' && s[k] <= '9' {
			return skipDigits(s, k), litFloat
		}
	}
	return j, class
}

func skipDigits(s string, i int) int {
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return i
}

// tokenValue returns the Value of the literal token tok of class class, as
// the parser would give it. Plain integers and strings without escapes are
// read here; the rest goes through the parser's own lexer. The result never
// aliases tok.
func tokenValue(tok string, class byte) (Value, bool) {
	switch class {
	case litInt:
		if len(tok) <= 18 {
			n, err := strconv.ParseInt(tok, 10, 64)
			if err != nil {
				return Value{}, false
			}
			return Value{Lit: strconv.FormatInt(n, 10), Type: IntLit, Param: -1}, true
		}
	case litSingle, litDouble:
		body := tok[1 : len(tok)-1]
		if strings.IndexByte(body, '\\') < 0 && strings.IndexByte(body, tok[0]) < 0 {
			return Value{Lit: strings.Clone(body), Type: StringLit, Param: -1}, true
		}
	}
	return lexValue(tok)
}

// lexValue reads one literal token with the parser's lexer.
func lexValue(tok string) (v Value, ok bool) {
	defer func() {
		if recover() != nil {
			v, ok = Value{}, false
		}
	}()
	sc := parser.NewScanner(tok)
	item := sc.LexLiteral()
	if _, errs := sc.Errors(); len(errs) > 0 {
		return Value{}, false
	}
	ve, isVal := ast.NewValueExpr(item, "", "").(*driver.ValueExpr)
	if !isVal {
		return Value{}, false
	}
	v = literalValue(ve)
	if v.Type == NoLit {
		return Value{}, false
	}
	// The lexer's strings may alias its input.
	v.Lit = strings.Clone(v.Lit)
	return v, true
}

// tagger, set on params while a template is built, replaces each literal
// Value by a tag naming its token, so that the rows built from tags show
// where each value of the real rows came from.
type tagger struct {
	sql  string
	toks []litTok
	// slots maps a tag to the index of its token in toks.
	slots []int
	bad   bool
}

const tagPrefix = "\x00tag"

// tag returns the tagged stand-in for the literal x, whose Value is real.
func (g *tagger) tag(x *driver.ValueExpr, real Value) Value {
	off := x.OriginTextPosition()
	j := sort.Search(len(g.toks), func(j int) bool { return g.toks[j].off >= off })
	if j == len(g.toks) || g.toks[j].off != off {
		// NULL, TRUE and FALSE are words, which a skeleton keeps
		// verbatim. Anything else (X'41', _utf8mb4'a', DATE '...') is a
		// literal the scan does not read.
		w, _ := wordAt(g.sql, off)
		switch upperAlloc(w) {
		case "NULL", "TRUE", "FALSE":
			return real
		}
		g.bad = true
		return real
	}
	t := g.toks[j]
	if v, ok := tokenValue(g.sql[t.off:t.end], t.class); !ok || v != real {
		g.bad = true
		return real
	}
	k := len(g.slots)
	g.slots = append(g.slots, j)
	return Value{Lit: tagPrefix + strconv.Itoa(k), Type: real.Type, Param: -1}
}

// template substitutes a text's literals into its shape's Info.
type template struct {
	skel  string
	nlits int
	point []slot // positions in Point.Rows
	ins   []slot // positions in Insert.Rows
}

// slot is one literal Value of a shape: its place in the rows, the token it
// comes from and whether it was negated.
type slot struct {
	row, col int
	tok      int
	neg      bool
}

// value reads the slot's Value from its token among toks, the literal
// tokens of sql.
func (s slot) value(sql string, toks []litTok) (Value, bool) {
	t := toks[s.tok]
	v, ok := tokenValue(sql[t.off:t.end], t.class)
	if ok && s.neg {
		v.Lit = negate(v.Lit)
	}
	return v, ok
}

// templatable reports whether info is worth a template: its values come
// from literals and nothing else of it does.
func templatable(info *Info) bool {
	return len(info.Sets) == 0 && info.Kind != Set && hasLiteralValues(info)
}

// buildTemplate returns the template of info, the analysis of the single
// statement s of sql, or nil when info cannot be rebuilt from literals.
func buildTemplate(info *Info, s ast.StmtNode, sql string) (t *template) {
	defer func() {
		// A template is an optimisation; the analysis stands without it.
		if recover() != nil {
			t = nil
		}
	}()
	sc := &textScan{}
	if !scanText(sc, sql) {
		return nil
	}
	g := &tagger{sql: sql, toks: sc.toks}
	// keyInfo reads only Reads from the statement-level analysis. A
	// SELECT's Point exists only without subqueries, so passing none
	// changes nothing for a statement that has a Point.
	tagged := &Info{Reads: info.Reads}
	keyInfoWith(tagged, s, &params{sql: sql, tags: g}, false)
	if g.bad {
		return nil
	}
	t = &template{skel: string(sc.skel), nlits: len(sc.toks)}
	var ok bool
	if (info.Point == nil) != (tagged.Point == nil) || (info.Insert == nil) != (tagged.Insert == nil) {
		return nil
	}
	if info.Point != nil {
		if info.Point.Table != tagged.Point.Table || !slices.Equal(info.Point.Cols, tagged.Point.Cols) {
			return nil
		}
		if t.point, ok = slotsOf(info.Point.Rows, tagged.Point.Rows, g); !ok {
			return nil
		}
	}
	if info.Insert != nil {
		if !slices.Equal(info.Insert.Cols, tagged.Insert.Cols) {
			return nil
		}
		if t.ins, ok = slotsOf(info.Insert.Rows, tagged.Insert.Rows, g); !ok {
			return nil
		}
	}
	if len(t.point)+len(t.ins) == 0 {
		return nil
	}
	return t
}

// slotsOf matches real rows with the tagged rows of the same statement. They
// must have one shape, and agree everywhere but at tags.
func slotsOf(real, tagged [][]Value, g *tagger) ([]slot, bool) {
	if len(real) != len(tagged) {
		// Equal values were merged: the shape depends on the values.
		return nil, false
	}
	var out []slot
	for r := range real {
		if len(real[r]) != len(tagged[r]) {
			return nil, false
		}
		for c, tv := range tagged[r] {
			rv := real[r][c]
			lit, neg := strings.CutPrefix(tv.Lit, "-")
			k, isTag := strings.CutPrefix(lit, tagPrefix)
			if !isTag {
				if tv != rv {
					return nil, false
				}
				continue
			}
			n, err := strconv.Atoi(k)
			if err != nil || n >= len(g.slots) || !rv.literal() {
				return nil, false
			}
			s := slot{row: r, col: c, tok: g.slots[n], neg: neg}
			if v, ok := s.value(g.sql, g.toks); !ok || v != rv {
				return nil, false
			}
			out = append(out, s)
		}
	}
	return out, true
}

// instantiate returns shape's Info with the literals of sql, whose scan sc
// matched t's skeleton. It reports false when the new values would have
// shaped the result differently (two IN items now equal).
func (t *template) instantiate(shape *Info, sql string, sc *textScan) (*Info, bool) {
	if !t.matches(sc) {
		return nil, false
	}
	n := *shape
	n.Shape = shape.ShapeKey()
	if shape.Point != nil {
		rows, ok := substitute(shape.Point.Rows, t.point, sql, sc.toks)
		if !ok || hasDuplicateRow(rows) {
			return nil, false
		}
		p := *shape.Point
		p.Rows = rows
		n.Point = &p
	}
	if shape.Insert != nil {
		rows, ok := substitute(shape.Insert.Rows, t.ins, sql, sc.toks)
		if !ok {
			return nil, false
		}
		ins := *shape.Insert
		ins.Rows = rows
		n.Insert = &ins
	}
	return &n, true
}

// matches reports whether a text whose scan is sc has t's skeleton.
func (t *template) matches(sc *textScan) bool {
	return len(sc.toks) == t.nlits && string(sc.skel) == t.skel
}

// substitute returns a copy of rows with the values at slots read from toks.
func substitute(rows [][]Value, slots []slot, sql string, toks []litTok) ([][]Value, bool) {
	total := 0
	for _, r := range rows {
		total += len(r)
	}
	flat := make([]Value, 0, total)
	out := make([][]Value, len(rows))
	for i, r := range rows {
		flat = append(flat, r...)
		out[i] = flat[len(flat)-len(r) : len(flat) : len(flat)]
	}
	for _, s := range slots {
		v, ok := s.value(sql, toks)
		if !ok {
			return nil, false
		}
		out[s.row][s.col] = v
	}
	return out, true
}

// hasDuplicateRow reports two equal rows, which the parse would have merged
// (see appendRow).
func hasDuplicateRow(rows [][]Value) bool {
	if len(rows) > 16 && len(rows[0]) == 1 {
		seen := make(map[Value]struct{}, len(rows))
		for _, r := range rows {
			if _, dup := seen[r[0]]; dup {
				return true
			}
			seen[r[0]] = struct{}{}
		}
		return false
	}
	if len(rows) > 256 {
		// Left to the full parse rather than compared pairwise.
		return true
	}
	for i := 1; i < len(rows); i++ {
		for j := 0; j < i; j++ {
			if slices.Equal(rows[i], rows[j]) {
				return true
			}
		}
	}
	return false
}
