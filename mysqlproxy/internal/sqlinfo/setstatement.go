package sqlinfo

// MariaDB's SET STATEMENT var = value [, ...] FOR <statement> runs one
// statement with some variables set for it alone, and the parser does
// not know it. A text it refuses is a write of anything, so an
// application that bounds each read with SET STATEMENT
// max_statement_time=N FOR SELECT ... invalidated every entry of every
// sidecar with each read. When every variable set is one that changes
// neither what a statement reads, writes or returns nor how its text is
// read (timeouts, slow-log settings), and each value is a literal, the
// statement is read as the one it runs. Under other variables set to
// literals, a read that calls no stored code is a read still, not cached
// (WhySetStatement): the server parses it with the session's own settings,
// and no variable makes a read write.

// TimingVars are the variables SET STATEMENT may set for a statement that
// is then read as if they were not set. None may change a read's result.
var TimingVars = map[string]bool{
	"max_statement_time": true, "innodb_lock_wait_timeout": true, "lock_wait_timeout": true,
	"long_query_time": true, "log_slow_query": true, "log_slow_query_time": true,
	"slow_query_log": true, "log_slow_verbosity": true,
}

// WhySetStatement is why a read run by SET STATEMENT of variables that
// may change its result is not cached.
const WhySetStatement = "set-statement"

// splitSetStatement returns the statement a SET STATEMENT text runs, when
// it sets variables to literals, and whether they are all TimingVars; ok
// is false otherwise.
func splitSetStatement(sql string, opts LexOptions) (inner string, timing, ok bool) {
	if FirstKeyword(sql) != "SET" || secondKeyword(sql) != "STATEMENT" {
		return "", false, false
	}
	timing = true
	l := NewLexer(sql, opts)
	next := func() (Token, bool) {
		t, err := l.Next()
		if err != nil {
			return t, false
		}
		switch t.Kind {
		case TokEOF, TokExecOpen, TokExecClose, TokHint, TokParam:
			return t, false
		}
		return t, true
	}
	for range 2 { // SET STATEMENT
		if _, ok := next(); !ok {
			return "", false, false
		}
	}
	for {
		name, ok := next()
		if !ok || name.Kind != TokWord {
			return "", false, false
		}
		timing = timing && TimingVars[lowerASCII(name.Text)]
		if eq, ok := next(); !ok || !eq.Is('=') {
			return "", false, false
		}
		v, ok := next()
		if ok && v.Is('-') {
			v, ok = next()
		}
		if !ok || (v.Kind != TokNumber && v.Kind != TokString && v.Kind != TokWord) {
			return "", false, false
		}
		sep, ok := next()
		switch {
		case !ok:
			return "", false, false
		case sep.Is(','):
			continue
		case sep.Kind == TokWord && equalFoldASCII("FOR", sep.Text):
			return sql[sep.Pos+len(sep.Text):], timing, true
		default:
			return "", false, false
		}
	}
}

func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// setStatementKind reports whether a statement of kind k is read as
// itself under SET STATEMENT: reads and plain writes.
func setStatementKind(k Kind) bool {
	switch k {
	case Select, Insert, Replace, Update, Delete:
		return true
	}
	return false
}

// WhyAnalyze is why ANALYZE of a statement is not cached: it answers
// with the plan and the counts of the run.
const WhyAnalyze = "analyze"

// withoutAnalyze returns the statement ANALYZE [FORMAT=JSON] <statement>
// runs: MariaDB runs it as it would alone, and answers with its plan.
// ANALYZE TABLE is not one (see maintenance).
func withoutAnalyze(sql string, opts LexOptions) (string, bool) {
	if FirstKeyword(sql) != "ANALYZE" {
		return "", false
	}
	l := NewLexer(sql, opts)
	next := func() (Token, bool) {
		t, err := l.Next()
		return t, err == nil
	}
	next() // ANALYZE
	t, ok := next()
	if ok && t.Kind == TokWord && equalFoldASCII("FORMAT", t.Text) {
		if eq, ok := next(); !ok || !eq.Is('=') {
			return "", false
		}
		if f, ok := next(); !ok || f.Kind != TokWord || !equalFoldASCII("JSON", f.Text) {
			return "", false
		}
		t, ok = next()
	}
	if !ok || t.Kind != TokWord {
		return "", false
	}
	switch lowerASCII(t.Text) {
	case "select", "with", "insert", "replace", "update", "delete":
		return sql[t.Pos:], true
	}
	return "", false
}

// withoutOrReplace returns a CREATE OR REPLACE [TEMPORARY] {TABLE |
// SEQUENCE} text without its OR REPLACE, which the parser does not know
// for those: the statement drops the object when it exists and creates
// it, so it writes what CREATE does.
func withoutOrReplace(sql string, opts LexOptions) (string, bool) {
	if FirstKeyword(sql) != "CREATE" || secondKeyword(sql) != "OR" {
		return "", false
	}
	l := NewLexer(sql, opts)
	var toks []Token
	for len(toks) < 4 || (len(toks) == 4 && equalFoldASCII("TEMPORARY", toks[3].Text)) {
		t, err := l.Next()
		if err != nil || t.Kind != TokWord {
			return "", false
		}
		toks = append(toks, t)
	}
	if !equalFoldASCII("REPLACE", toks[2].Text) {
		return "", false
	}
	if last := toks[len(toks)-1].Text; !equalFoldASCII("TABLE", last) && !equalFoldASCII("SEQUENCE", last) {
		return "", false
	}
	return sql[:toks[1].Pos] + sql[toks[2].Pos+len(toks[2].Text):], true
}
