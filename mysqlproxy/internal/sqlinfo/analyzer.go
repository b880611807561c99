package sqlinfo

import (
	"hash/maphash"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"

	// The parser needs a value-expression driver; this is the one the
	// parser ships for use outside TiDB.
	_ "github.com/pingcap/tidb/pkg/parser/test_driver"
)

// DefaultMaxBytes is the default bound on an Analyzer's memos.
const DefaultMaxBytes = 64 << 20

// Options configures an Analyzer. Zero fields take their defaults.
type Options struct {
	// ExactCap bounds the entries of the memo keyed by exact statement
	// text. Default 10000.
	ExactCap int
	// DigestCap bounds the entries of the memos keyed by normalized digest
	// and by skeleton. Default 10000.
	DigestCap int
	// MaxBytes bounds the memos together in bytes: the memo keyed by exact
	// text gets half, those keyed by digest and by skeleton a quarter
	// each. An entry is charged its key and an estimate of its analysis
	// (the tables, pinned and inserted values, digest and so on it holds);
	// an entry over an eighth of its memo's share is not kept. Default
	// DefaultMaxBytes (64 MiB).
	MaxBytes int64
	// MaxTextLen is the longest statement text memoized; longer texts (bulk
	// INSERTs) are analysed every time. Default 64 KiB.
	MaxTextLen int
}

// Analyzer analyzes statements and memoizes the results, first by exact
// text, then by normalized digest. It is safe for concurrent use.
type Analyzer struct {
	maxText int
	exact   shardedMemo[*Info]
	digest  shardedMemo[*shapes]
	skels   shardedMemo[*skelEntry] // by skelKey; see skeleton.go
	door    doorkeeper              // texts lately seen; see Analyze
	parsers sync.Pool               // of *parser.Parser, which is not safe for concurrent use
	bufs    sync.Pool               // of *[]byte, shape signature scratch
	scans   sync.Pool               // of *textScan, template matching scratch
}

// shapes holds the analyses of one digest, one per identifier shape (see
// appendShape), or per token skeleton for analyses rebuilt from literals
// (see template). It is immutable once published; an update replaces it.
type shapes struct {
	sigs  []string
	infos []*Info
	tmpls []*template // nil where infos[i] is shared as is
}

// maxShapes bounds the variants kept per digest.
const maxShapes = 8

// NewAnalyzer returns an Analyzer with opts' zero fields set to defaults.
func NewAnalyzer(opts Options) *Analyzer {
	if opts.ExactCap <= 0 {
		opts.ExactCap = 10000
	}
	if opts.DigestCap <= 0 {
		opts.DigestCap = 10000
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.MaxTextLen <= 0 {
		opts.MaxTextLen = 64 << 10
	}
	a := &Analyzer{maxText: opts.MaxTextLen}
	a.door.seed = maphash.MakeSeed()
	a.exact.init(opts.ExactCap, opts.MaxBytes/2, (*Info).memSize)
	a.digest.init(opts.DigestCap, opts.MaxBytes/4, (*shapes).memSize)
	a.skels.init(opts.DigestCap, opts.MaxBytes/4, (*skelEntry).memSize)
	a.parsers.New = func() any { return parser.New() }
	a.bufs.New = func() any { b := make([]byte, 0, 256); return &b }
	a.scans.New = func() any { return &textScan{} }
	return a
}

// Analyze returns the analysis of one COM_QUERY text. A repeated text is
// answered from memory without allocating. sql is not retained, so it may
// alias a buffer the caller reuses.
func (a *Analyzer) Analyze(sql string) *Info {
	info, _ := a.analyze(sql, nil)
	return info
}

// analyze is Analyze, with a shape hook: see AnalyzeShapeIn.
func (a *Analyzer) analyze(sql string, enough func(shape *Info) bool) (*Info, bool) {
	if info, ok := a.exact.get(sql); ok {
		return info, false
	}
	info, cheap := a.analyzeMiss(sql, enough)
	if cheap == shapeOnly {
		// Not sql's analysis: not memoized as such.
		return info, true
	}
	// A text answered cheaply, from its skeleton, is memoized by its
	// exact text once it has been seen twice: texts that differ in a
	// literal each time (reads of uniformly random keys) would only churn
	// the memo.
	if len(sql) <= a.maxText && (cheap == parsed || a.door.again(sql)) {
		a.exact.put(cloneString(sql), info)
	}
	return info, false
}

// bigParses bounds how many texts longer than bigText are analysed at
// once. Their parse takes about a kilobyte per list item: a statement
// near maxParseItems (an IN list of 100,000 ids in 600 KB) costs a
// hundred megabytes or more while it is parsed, and sessions sending
// such statements together would hold that many times over. Past the
// bound they wait their turn; the other sessions' statements do not.
var bigParses = make(chan struct{}, 2)

const bigText = 64 << 10

// bigParse takes a turn for sql when it is longer than bigText, and
// returns what gives it back.
func bigParse(sql string) func() {
	if len(sql) <= bigText {
		return func() {}
	}
	bigParses <- struct{}{}
	return func() { <-bigParses }
}

// doorkeeper remembers a hash of each text lately seen, in a fixed table
// where later texts overwrite earlier ones: again is true (barring a
// collision) for a text seen since the last one that took its slot.
type doorkeeper struct {
	seed  maphash.Seed
	slots [1 << 14]atomic.Uint64
}

func (d *doorkeeper) again(sql string) bool {
	h := maphash.String(d.seed, sql)
	s := &d.slots[h%uint64(len(d.slots))]
	if s.Load() == h {
		return true
	}
	s.Store(h)
	return false
}

func cloneString(s string) string {
	return string(append([]byte(nil), s...))
}

// How analyzeMiss answered a text.
type answered int

const (
	parsed    answered = iota // in full, or from its digest's shapes
	skeleton                  // from its skeleton, cheaply
	shapeOnly                 // with its skeleton's shape (see AnalyzeShapeIn)
)

// analyzeMiss analyzes a text the exact memo does not hold, and says how.
// enough, when set, is asked of the shape a skeleton gives, before its
// template is instantiated with the text's literals.
func (a *Analyzer) analyzeMiss(sql string, enough func(shape *Info) bool) (info *Info, how answered) {
	defer bigParse(sql)()
	defer func() {
		if recover() != nil {
			info, how = unanalyzable(), parsed
		}
	}()
	if len(sql) > maxParseLen {
		return tooComplex(sql), parsed
	}
	if hasExecComment(sql) {
		return analyzeExec(sql, true, func(view string) *Info {
			info, _ := a.parse(view, "")
			return info
		}), parsed
	}
	sc := a.scans.Get().(*textScan)
	defer a.scans.Put(sc)
	scanned := scanText(sc, sql)
	keyed := scanned && len(sql) <= a.maxText && skelKey(sc, sql)
	if keyed {
		if e, ok := a.skels.get(string(sc.key)); ok {
			if enough != nil && e.shapes(sql, sc) && enough(e.info) {
				return e.info, shapeOnly
			}
			if info, ok := e.answer(sql, sc); ok {
				return info, skeleton
			}
		}
	}
	digest, ok := normalize(sql)
	if !ok || digest == "" {
		// An empty digest is shared by empty texts and some unparsable
		// ones ("\""), which must not answer for each other.
		info, _ := a.parse(sql, "")
		return info, parsed
	}
	hint := hasNoCacheHint(sql)
	bp := a.bufs.Get().(*[]byte)
	sig := (*bp)[:0]
	if hint {
		sig = append(sig, '+')
	}
	if callsByIdentifier(sql) {
		// Its shape is that of the built-in call written "count(": not
		// the same statement.
		sig = append(sig, '~')
	}
	sig = appendShape(sig, sql)
	defer func() { *bp = sig[:0]; a.bufs.Put(bp) }()

	if sh, ok := a.digest.get(digest); ok {
		var sp *textScan
		if scanned {
			sp = sc
		}
		if info, i, ok := a.fromShapes(sh, sig, sql, sp); ok {
			if keyed {
				a.rememberSkeleton(sc, sql, digest, sh.infos[i], sh.tmpls[i], hint)
			}
			return info, parsed
		}
	}
	info, tmpl := a.parse(sql, digest)
	info.NoCacheHint = info.NoCacheHint || hint
	if (shapeLevel(info) || tmpl != nil) && len(digest) <= a.maxText {
		a.digest.update(digest, func(old *shapes) *shapes {
			n := &shapes{}
			if old != nil && len(old.sigs) < maxShapes {
				n.sigs = append(n.sigs, old.sigs...)
				n.infos = append(n.infos, old.infos...)
				n.tmpls = append(n.tmpls, old.tmpls...)
			}
			n.sigs = append(n.sigs, string(sig))
			n.infos = append(n.infos, info)
			n.tmpls = append(n.tmpls, tmpl)
			return n
		})
		if keyed {
			a.rememberSkeleton(sc, sql, digest, info, tmpl, hint)
		}
	}
	return info, parsed
}

// rememberSkeleton memoizes under sc's skeleton key the analysis info of
// sql, shared as is or through tmpl, unless a text of that key already has
// an entry. A key whose literals turn out to shape the digest is memoized as
// refused, so that it is checked once.
func (a *Analyzer) rememberSkeleton(sc *textScan, sql, digest string, info *Info, tmpl *template, hint bool) {
	if _, ok := a.skels.get(string(sc.key)); ok {
		return
	}
	e := &skelEntry{info: info, tmpl: tmpl, hint: hint}
	if !skeletonDigestStable(sql, sc, digest) {
		e = &skelEntry{refused: true}
	}
	a.skels.put(string(sc.key), e)
}

// fromShapes answers sql, of signature sig, from the analyses of its digest:
// a shared one as is, or a template's with sql's literals. sc is sql's scan,
// or nil when it is not at hand. The index of the analysis used is returned
// too.
func (a *Analyzer) fromShapes(sh *shapes, sig []byte, sql string, sc *textScan) (*Info, int, bool) {
	for i, s := range sh.sigs {
		if s != string(sig) {
			continue
		}
		t := sh.tmpls[i]
		if t == nil {
			return sh.infos[i], i, true
		}
		if sc == nil {
			return nil, 0, false
		}
		if info, ok := t.instantiate(sh.infos[i], sql, sc); ok {
			return info, i, true
		}
	}
	return nil, 0, false
}

// shapeLevel reports whether info holds only what every statement of its
// digest and shape shares. SET values, pinned values and inserted values
// taken from literals are not shared, as the digest drops literals; pinned
// and inserted ones are rebuilt for each new text from a template instead
// (see template). Values bound to ? placeholders are shared, which keeps
// prepared statements on the fast path.
//
// The analysis of a text that did not parse is not shared either: the
// digest of a broken text can equal that of a valid one.
func shapeLevel(info *Info) bool {
	return len(info.Sets) == 0 && info.Kind != Set && !info.ParseError && !hasLiteralValues(info)
}

// normalize returns the parser's normalized text, recovering from any panic
// on hostile input.
func normalize(sql string) (digest string, ok bool) {
	defer func() {
		if recover() != nil {
			digest, ok = "", false
		}
	}()
	return parser.Normalize(sql, "ON"), true
}

// parse runs the full parser and analyses the result, with the template
// that rebuilds it for other literals when it has one. It never panics.
func (a *Analyzer) parse(sql, digest string) (info *Info, tmpl *template) {
	if tooDeep(sql, maxParseDepth) {
		return tooComplex(sql), nil
	}
	p := a.parsers.Get().(*parser.Parser)
	var stmts []ast.StmtNode
	var err error
	func() {
		defer func() {
			if r := recover(); r != nil {
				err = errPanic
				// A parser that panicked may hold broken state.
				p = parser.New()
			}
		}()
		stmts, _, err = p.Parse(sql, "", "")
		if err == nil {
			info = analyzeStmts(stmts, sql)
			if digest != "" && len(stmts) == 1 && templatable(info) {
				tmpl = buildTemplate(info, stmts[0], sql)
			}
		}
	}()
	a.parsers.Put(p)
	if err != nil || info == nil {
		tmpl = nil
		info = refusedVariant(sql, LexOptions{}, func(s string) *Info {
			i, _ := a.parse(s, "")
			return i
		})
		if info == nil {
			info = fallback(sql)
		}
	}
	info.Digest = digest
	if info.NoCacheHint || hasNoCacheHint(sql) {
		info.NoCacheHint = true
	}
	info.own()
	return info, tmpl
}

// own gives the analysis copies of the strings it holds. The parser's
// names and literals are slices of the text, so an analysis memoized by
// its digest (an IN list of a million values has a short one), or by
// its pointer, would otherwise keep the whole text alive, megabytes of
// it, while the memos count only what the analysis itself holds.
func (i *Info) own() {
	c := strings.Clone
	tables := func(ts []Table) {
		for k := range ts {
			ts[k] = Table{DB: c(ts[k].DB), Name: c(ts[k].Name)}
		}
	}
	strs := func(ss []string) {
		for k := range ss {
			ss[k] = c(ss[k])
		}
	}
	rows := func(rs [][]Value) {
		for _, r := range rs {
			for k := range r {
				r[k].Lit = c(r[k].Lit)
			}
		}
	}
	i.WhyNot, i.UseDB = c(i.WhyNot), c(i.UseDB)
	tables(i.Reads)
	tables(i.Writes)
	strs(i.DBWide)
	strs(i.SetCols)
	for k := range i.Sets {
		i.Sets[k].Name, i.Sets[k].Value = c(i.Sets[k].Name), c(i.Sets[k].Value)
	}
	if p := i.Procedure; p != nil {
		i.Procedure = &Table{DB: c(p.DB), Name: c(p.Name)}
	}
	if p := i.Point; p != nil {
		p.Table = Table{DB: c(p.Table.DB), Name: c(p.Table.Name)}
		strs(p.Cols)
		rows(p.Rows)
	}
	if ins := i.Insert; ins != nil {
		strs(ins.Cols)
		rows(ins.Rows)
	}
}

// tooComplex is the analysis of a text not parsed for its size or depth
// (see maxParseDepth): by its first keywords.
func tooComplex(sql string) *Info {
	info := fallback(sql)
	info.WhyNot = "too-complex"
	return info
}

type panicError struct{}

func (panicError) Error() string { return "sqlinfo: parser panic" }

var errPanic error = panicError{}

// refusedVariant reads a text the parser refused as the statement it
// extends or wraps, which parse reads, when that is certain to be what it
// does: a RETURNING clause of columns (see splitReturning), SET STATEMENT
// (see splitSetStatement), ANALYZE of a statement (see withoutAnalyze), or
// CREATE OR REPLACE of a
// table or sequence (see withoutOrReplace). It returns nil otherwise.
func refusedVariant(sql string, opts LexOptions, parse func(string) *Info) *Info {
	if text, cs, coll, ok := withKnownCharset(sql); ok {
		if info := parse(text); !info.ParseError && info.Kind == Set && info.WhyNot != "multi-statement" {
			set := *info
			set.Sets = slices.Clone(info.Sets)
			for i := range set.Sets {
				v := strings.ReplaceAll(set.Sets[i].Value, knownCollation, coll)
				set.Sets[i].Value = strings.ReplaceAll(v, knownCharset, cs)
			}
			return &set
		}
	}
	if head, ok := splitReturning(sql, opts); ok {
		if info := parse(head); !info.ParseError && returningKind(info.Kind) {
			return info
		}
	}
	if inner, timing, ok := splitSetStatement(sql, opts); ok {
		info := parse(inner)
		switch {
		case info.ParseError || info.WhyNot == "multi-statement":
		case timing && setStatementKind(info.Kind):
			return info
		case info.Kind == Select && !info.MayWrite && !info.CallsRoutine:
			read := *info
			read.Cacheable, read.WhyNot = false, WhySetStatement
			return &read
		}
	}
	if inner, ok := withoutAnalyze(sql, opts); ok {
		info := parse(inner)
		switch {
		case info.ParseError || info.WhyNot == "multi-statement" || !setStatementKind(info.Kind):
		case info.Kind != Select || (!info.MayWrite && !info.CallsRoutine):
			// It runs the statement, and answers with its plan.
			ran := *info
			ran.Cacheable, ran.WhyNot = false, WhyAnalyze
			return &ran
		}
	}
	if create, ok := withoutOrReplace(sql, opts); ok {
		if info := parse(create); !info.ParseError && info.WhyNot != "multi-statement" && info.Kind == DDL && len(info.Writes) > 0 {
			return info
		}
	}
	return nil
}

// The parser knows a few character sets by name, and refuses SET NAMES
// of the others the server has (sjis, big5, ujis, koi8r, ...):
// withKnownCharset reads such a statement with these in their place.
const knownCharset, knownCollation = "utf8mb4", "utf8mb4_bin"

var setNamesRE = regexp.MustCompile(`(?is)^\s*SET\s+(NAMES|CHARACTER\s+SET|CHARSET)\s+('[a-z0-9_]+'|"[a-z0-9_]+"|[a-z0-9_]+)(\s+COLLATE\s+('[a-z0-9_]+'|"[a-z0-9_]+"|[a-z0-9_]+))?\s*;?\s*$`)

// withKnownCharset returns SET NAMES cs [COLLATE coll] (or SET CHARACTER
// SET cs) with a charset and collation the parser knows, and cs and coll.
func withKnownCharset(sql string) (text, cs, coll string, ok bool) {
	m := setNamesRE.FindStringSubmatch(sql)
	if m == nil {
		return "", "", "", false
	}
	unquote := func(s string) string { return strings.ToLower(strings.Trim(s, `'"`)) }
	cs, coll = unquote(m[2]), unquote(m[4])
	if strings.Contains(cs, knownCharset) || strings.Contains(coll, knownCharset) {
		return "", "", "", false // not what the parser refused
	}
	text = "SET " + m[1] + " " + knownCharset
	if m[3] != "" {
		text += " COLLATE " + knownCollation
	}
	return text, cs, coll, true
}

// unanalyzable is the analysis of a text whose analysis failed: a write
// of anything, as the server may read it as anything.
func unanalyzable() *Info {
	info := &Info{Kind: Other, ParseError: true, WhyNot: "parse-error"}
	unmappedGlobal(info)
	return info
}

// fallback classifies a statement the parser rejected by its first keywords.
// It is conservative: anything that might write is an unmapped global write.
func fallback(sql string) *Info {
	if info := maintenance(sql); info != nil {
		return info
	}
	info := &Info{ParseError: true, WhyNot: "parse-error"}
	switch FirstKeyword(sql) {
	case "SELECT", "TABLE", "VALUES", "":
		info.Kind = Select
		if FirstKeyword(sql) == "" && !startsWithParen(sql) {
			info.Kind = Other
			unmappedGlobal(info)
		}
		// The parser refuses SELECT ... INTO @v and VALUES (...): a
		// function they call may be a stored one, which may write.
		info.CallsRoutine = mayCallRoutine(sql)
	case "SHOW":
		info.Kind = Show
	case "DESC", "DESCRIBE", "EXPLAIN", "HELP":
		info.Kind = Show
	case "SET":
		if secondKeyword(sql) == "STATEMENT" {
			// SET STATEMENT ... FOR <statement> runs the statement.
			info.Kind = Other
			unmappedGlobal(info)
			break
		}
		info.Kind = Set
		info.Sets = []SetVar{{Verbatim: true, Value: sql}}
	case "USE":
		info.Kind = Use
	case "BEGIN":
		info.Kind = Begin
		if equalFoldASCII("NOT", secondKeyword(sql)) {
			// BEGIN NOT ATOMIC ... END: a compound statement, which
			// may write and set anything.
			info.Kind = Other
			unmappedGlobal(info)
		}
	case "START":
		info.Kind = Begin
	case "COMMIT":
		info.Kind = Commit
	case "ROLLBACK":
		info.Kind = Rollback
		if ContainsFold(sql, "savepoint") || rollsBackTo(sql) {
			info.Kind = Savepoint
		}
	case "SAVEPOINT", "RELEASE":
		info.Kind = Savepoint
	case "GET":
		// GET DIAGNOSTICS, the one GET statement: it reads the
		// diagnostics into variables, and runs and writes nothing. Read
		// as parsed, it is not taken for a text that may run anything,
		// before which mycached would read the session's state, and
		// clear the diagnostics it reads.
		info.Kind = Other
		if singleStatement(sql, LexOptions{}) {
			info.Kind, info.ParseError, info.WhyNot = Show, false, "diagnostics"
		}
	case "HANDLER", "CACHE", "BACKUP", "FLUSH":
		// HANDLER reads rows; CACHE INDEX, BACKUP STAGE or LOCK and
		// FLUSH (of the query cache, logs, statistics) change caches
		// and locks, and no row.
		info.Kind = Other
	case "XA":
		switch secondKeyword(sql) {
		case "START", "BEGIN":
			info.Kind = Begin
		case "COMMIT":
			// It may commit a transaction another session prepared, whose
			// writes mycached did not see: they may be anywhere.
			info.Kind = Commit
			unmappedGlobal(info)
		case "ROLLBACK":
			info.Kind = Rollback
		default:
			info.Kind = Savepoint
		}
	default:
		if FirstKeyword(sql) == "LOAD" && secondKeyword(sql) == "INDEX" {
			// LOAD INDEX INTO CACHE fills a key cache.
			info.Kind = Other
			break
		}
		// A write mycached cannot read: it may touch any table.
		info.Kind = unparsedWrites[FirstKeyword(sql)] // Other when not listed
		unmappedGlobal(info)
	}
	info.LocksTables = namesWord(sql, "LOCK", "EXPORT")
	if !info.Global && !singleStatement(sql, LexOptions{}) {
		// Read by its first keywords, it says nothing of the statements
		// after a ';': any of them may write anything.
		info.Kind = Other
		unmappedGlobal(info)
	}
	return info
}

// singleStatement reports whether the lexer finds one statement in sql, as
// the server would split it with opts: nothing but ';' after a ';'. The
// text of executable comments counts, whether the server runs it or not.
func singleStatement(sql string, opts LexOptions) bool {
	l := NewLexer(sql, opts)
	semi := false
	for {
		t, err := l.Next()
		switch {
		case err != nil:
			return false
		case t.Kind == TokEOF:
			return true
		case semi && !t.Is(';'):
			return false
		case t.Is(';'):
			semi = true
		}
	}
}

// namesWord reports whether sql has one of words (uppercase) as a word of
// its own, outside quotes and plain comments.
func namesWord(sql string, words ...string) bool {
	l := NewLexer(sql, LexOptions{})
	for {
		t, err := l.Next()
		if err != nil {
			continue
		}
		if t.Kind == TokEOF {
			return false
		}
		if t.Kind == TokWord {
			for _, w := range words {
				if equalFoldASCII(w, t.Text) {
					return true
				}
			}
		}
	}
}

// unparsedWrites are the kinds of writes known by their first keyword.
var unparsedWrites = map[string]Kind{
	"INSERT": Insert, "REPLACE": Replace, "UPDATE": Update, "DELETE": Delete,
	"CALL": Call, "LOAD": LoadData,
	"CREATE": DDL, "ALTER": DDL, "DROP": DDL, "TRUNCATE": DDL, "RENAME": DDL,
}

func startsWithParen(sql string) bool {
	i := skipSpaceAndComments(sql, 0)
	return i < len(sql) && sql[i] == '('
}
