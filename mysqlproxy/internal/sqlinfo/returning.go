package sqlinfo

// MariaDB's INSERT, REPLACE and DELETE take a RETURNING clause, which the
// parser does not know. A text it refuses is a write of anything, so
// every INSERT ... RETURNING id, which ORMs send for each new row, would
// invalidate every entry of every sidecar. The clause changes nothing
// the statement writes: the statement is read without it when the clause
// names columns only (RETURNING id, t.a AS x, *), which can run no code.

// splitReturning returns the text of sql before a RETURNING clause at
// its top level, when the clause is the rest of the text and lists
// columns only; ok is false otherwise.
func splitReturning(sql string, opts LexOptions) (head string, ok bool) {
	switch FirstKeyword(sql) {
	case "INSERT", "REPLACE", "DELETE":
	default:
		return "", false
	}
	l := NewLexer(sql, opts)
	depth, at := 0, -1
	var clause []Token
	for {
		t, err := l.Next()
		if err != nil {
			return "", false
		}
		if t.Kind == TokEOF {
			break
		}
		switch t.Kind {
		case TokExecOpen, TokExecClose, TokHint, TokParam:
			if at >= 0 {
				return "", false
			}
		}
		switch {
		case at >= 0:
			clause = append(clause, t)
		case t.Is('('):
			depth++
		case t.Is(')'):
			depth--
		case depth == 0 && t.Kind == TokWord && equalFoldASCII("RETURNING", t.Text):
			at = t.Pos
		}
	}
	if at < 0 || !columnsOnly(clause) {
		return "", false
	}
	return sql[:at], true
}

// columnsOnly reports whether toks are a select list of columns:
// [db.][table.]column or [table.]*, each with an optional [AS] alias.
func columnsOnly(toks []Token) bool {
	if n := len(toks); n > 0 && toks[n-1].Is(';') {
		toks = toks[:n-1]
	}
	i := 0
	for {
		if i < len(toks) && toks[i].Is('*') {
			i++
		} else {
			for parts := 0; ; parts++ {
				if _, ok := ident(toks, &i); !ok || parts == 3 {
					return false
				}
				if i < len(toks) && toks[i].Is('.') {
					i++
					if i < len(toks) && toks[i].Is('*') {
						i++
						break
					}
					continue
				}
				break
			}
			if i < len(toks) && toks[i].Kind == TokWord && equalFoldASCII("AS", toks[i].Text) {
				i++
			}
			if i < len(toks) && !toks[i].Is(',') {
				if _, ok := ident(toks, &i); !ok {
					return false
				}
			}
		}
		if i == len(toks) {
			return true
		}
		if !toks[i].Is(',') {
			return false
		}
		i++
	}
}

// returningKind reports whether k is a statement that takes RETURNING.
func returningKind(k Kind) bool { return k == Insert || k == Replace || k == Delete }
