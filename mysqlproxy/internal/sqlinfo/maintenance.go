package sqlinfo

import "strings"

// maintenance reads a table maintenance statement of MariaDB's that the
// parser does not know, exactly or not at all:
//
//	CHECK {TABLE | TABLES | VIEW} names [FOR UPGRADE | QUICK | FAST | MEDIUM | EXTENDED | CHANGED]...
//	CHECKSUM {TABLE | TABLES} names [QUICK | EXTENDED]
//	REPAIR [NO_WRITE_TO_BINLOG | LOCAL] {TABLE | TABLES | VIEW} names [QUICK | EXTENDED | USE_FRM | FORCE | FROM MYSQL]...
//	ANALYZE [NO_WRITE_TO_BINLOG | LOCAL] {TABLE | TABLES} names PERSISTENT FOR {ALL | COLUMNS (...) INDEXES (...)}
//
// CHECK, CHECKSUM and ANALYZE change no row; REPAIR may change the rows
// of the tables it names, and nothing else. None runs stored code. Read
// otherwise, as any text the parser refuses, each would be a write of
// anything anywhere: one nightly mysqlcheck would empty every sidecar's
// cache. It returns nil for anything else, and for a text with a hint or
// an executable comment, or with more than one statement.
func maintenance(sql string) *Info {
	var verb string
	switch FirstKeyword(sql) {
	case "CHECK", "CHECKSUM", "REPAIR", "ANALYZE":
		verb = FirstKeyword(sql)
	default:
		return nil
	}
	l := NewLexer(sql, LexOptions{})
	var toks []Token
	for {
		t, err := l.Next()
		if err != nil {
			return nil
		}
		if t.Kind == TokEOF {
			break
		}
		switch t.Kind {
		case TokExecOpen, TokExecClose, TokHint, TokParam:
			return nil
		}
		toks = append(toks, t)
	}
	if n := len(toks); n > 0 && toks[n-1].Is(';') {
		toks = toks[:n-1]
	}
	i := 1
	word := func(ws ...string) bool {
		if i < len(toks) && toks[i].Kind == TokWord {
			for _, w := range ws {
				if equalFoldASCII(w, toks[i].Text) {
					i++
					return true
				}
			}
		}
		return false
	}
	if verb == "REPAIR" || verb == "ANALYZE" {
		word("NO_WRITE_TO_BINLOG", "LOCAL")
	}
	switch verb {
	case "CHECK", "REPAIR":
		if !word("TABLE", "TABLES", "VIEW") {
			return nil
		}
	default:
		if !word("TABLE", "TABLES") {
			return nil
		}
	}
	var names []Table
	for {
		t, ok := tableName(toks, &i)
		if !ok {
			return nil
		}
		names = appendTable(names, t)
		if i < len(toks) && toks[i].Is(',') {
			i++
			continue
		}
		break
	}
	switch verb {
	case "CHECK":
		for i < len(toks) {
			if !word("QUICK", "FAST", "MEDIUM", "EXTENDED", "CHANGED") && !(word("FOR") && word("UPGRADE")) {
				return nil
			}
		}
	case "CHECKSUM":
		word("QUICK", "EXTENDED")
	case "REPAIR":
		for i < len(toks) {
			if !word("QUICK", "EXTENDED", "USE_FRM", "FORCE") && !(word("FROM") && word("MYSQL")) {
				return nil
			}
		}
	case "ANALYZE":
		// The parser reads ANALYZE TABLE without PERSISTENT FOR.
		if !word("PERSISTENT") || !word("FOR") {
			return nil
		}
		if !word("ALL") {
			// COLUMNS (a, b) INDEXES (i, j): names in parentheses.
			for _, list := range []string{"COLUMNS", "INDEXES"} {
				if !word(list) || !identList(toks, &i) {
					return nil
				}
			}
		}
	}
	if i != len(toks) {
		return nil
	}
	info := &Info{Kind: Other, WhyNot: "not-select"}
	if verb == "REPAIR" {
		info.Kind = DDL
		info.MayWrite = true
		info.Writes = names
	}
	return info
}

// tableName reads name or db.name at toks[*i].
func tableName(toks []Token, i *int) (Table, bool) {
	a, ok := ident(toks, i)
	if !ok {
		return Table{}, false
	}
	if *i < len(toks) && toks[*i].Is('.') {
		*i++
		b, ok := ident(toks, i)
		if !ok {
			return Table{}, false
		}
		return Table{DB: a, Name: b}, true
	}
	return Table{Name: a}, true
}

// ident reads an identifier, quoted or not, at toks[*i].
func ident(toks []Token, i *int) (string, bool) {
	if *i >= len(toks) {
		return "", false
	}
	t := toks[*i]
	switch t.Kind {
	case TokWord:
		*i++
		return t.Text, true
	case TokQuotedIdent:
		*i++
		q := t.Text[:1]
		return strings.ReplaceAll(t.Text[1:len(t.Text)-1], q+q, q), true
	}
	return "", false
}

// identList reads "(a, b, ...)", possibly empty, at toks[*i].
func identList(toks []Token, i *int) bool {
	if *i >= len(toks) || !toks[*i].Is('(') {
		return false
	}
	*i++
	if *i < len(toks) && toks[*i].Is(')') {
		*i++
		return true
	}
	for {
		if _, ok := ident(toks, i); !ok {
			return false
		}
		if *i < len(toks) && toks[*i].Is(',') {
			*i++
			continue
		}
		if *i < len(toks) && toks[*i].Is(')') {
			*i++
			return true
		}
		return false
	}
}
