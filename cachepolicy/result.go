package cachepolicy

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// ErrBadResult reports a hook result of the wrong shape. The engine logs
// it and treats the call as having said nothing.
var ErrBadResult = errors.New("cachepolicy: malformed hook result")

// QueryKind says what a query hook asked for.
type QueryKind uint8

// The query hook outcomes.
const (
	// QueryNone means go on as usual.
	QueryNone QueryKind = iota
	// QueryRewrite means run QueryResult.SQL instead of the statement.
	QueryRewrite
	// QueryResultSet means send Columns and Rows to the client.
	QueryResultSet
	// QueryAffected means send an OK packet with Affected rows.
	QueryAffected
	// QueryError means send an error packet with ErrCode and ErrMsg.
	QueryError
)

// String returns the kind's name.
func (k QueryKind) String() string {
	switch k {
	case QueryRewrite:
		return "rewrite"
	case QueryResultSet:
		return "result"
	case QueryAffected:
		return "affected"
	case QueryError:
		return "error"
	}
	return "none"
}

// QueryResult is what the query hook asked for.
type QueryResult struct {
	Kind     QueryKind
	SQL      string      // QueryRewrite
	Columns  []string    // QueryResultSet
	Rows     [][]*string // QueryResultSet; a nil cell is SQL NULL
	Affected uint64      // QueryAffected
	ErrCode  uint16      // QueryError; 1105 (ER_UNKNOWN_ERROR) unless the script says
	ErrMsg   string      // QueryError
}

// maxSeconds bounds ttl and soft_ttl so the conversion to a Duration
// cannot overflow; ten years is longer than any cache entry should live.
const maxSeconds = 10 * 365 * 24 * 3600

// badf returns an ErrBadResult whose kind is its format: results that
// go wrong the same way, with other values, are one kind in the log.
func badf(format string, args ...any) error {
	return badResult{kind: format, msg: ErrBadResult.Error() + ": " + fmt.Sprintf(format, args...)}
}

// badResult is a malformed hook result: what was wrong, by kind and in
// full.
type badResult struct{ kind, msg string }

func (b badResult) Error() string        { return b.msg }
func (b badResult) Is(target error) bool { return target == ErrBadResult }

// badKind is the kind of a malformed result, "" for another error.
func badKind(err error) string {
	var b badResult
	if errors.As(err, &b) {
		return b.kind
	}
	return ""
}

// parseDecision reads cache()'s result. Omitted fields take the built-in
// default's values: ttl 60 s, scope user, cache_empty true.
func parseDecision(v lua.LValue) (Decision, bool, error) {
	var t *lua.LTable
	switch v := v.(type) {
	case *lua.LNilType:
		return Decision{}, false, nil
	case lua.LBool:
		if !v {
			return Decision{}, false, nil
		}
		return Decision{}, false, badf("cache() returned true; want nil or a table")
	case *lua.LTable:
		t = v
	default:
		return Decision{}, false, badf("cache() returned a %s; want nil or a table", v.Type())
	}
	d := Decision{TTL: 60 * time.Second, Scope: ScopeUser, CacheEmpty: true}
	var err error
	t.ForEach(func(k, v lua.LValue) {
		if err != nil {
			return
		}
		ks, ok := k.(lua.LString)
		if !ok {
			err = badf("decision has a %s key; want named fields", k.Type())
			return
		}
		switch ks {
		case "ttl":
			d.TTL, err = seconds("ttl", v, false)
		case "soft_ttl":
			d.SoftTTL, err = seconds("soft_ttl", v, true)
		case "scope":
			switch v {
			case lua.LString("user"):
				d.Scope = ScopeUser
			case lua.LString("shared"):
				d.Scope = ScopeShared
			default:
				err = badf("scope = %s; want \"user\" or \"shared\"", quoteLua(v))
			}
		case "max_bytes":
			n, ok := v.(lua.LNumber)
			if !ok || n < 0 || float64(n) != math.Trunc(float64(n)) || n > math.MaxInt64/2 {
				err = badf("max_bytes = %s; want a whole number >= 0", quoteLua(v))
				return
			}
			d.MaxBytes = int64(n)
		case "cache_empty":
			b, ok := v.(lua.LBool)
			if !ok {
				err = badf("cache_empty = %s; want true or false", quoteLua(v))
				return
			}
			d.CacheEmpty = bool(b)
		case "depends":
			d.Depends, err = tableNames("depends", v)
		case "consistency":
			switch v {
			case lua.LString("strict"):
				d.Consistency = ConsistencyStrict
			case lua.LString("bounded"):
				d.Consistency = ConsistencyBounded
			default:
				err = badf("consistency = %s; want \"strict\" or \"bounded\"", quoteLua(v))
			}
		case "admit":
			switch v {
			case lua.LString("always"):
				d.Admit = AdmitAlways
			case lua.LString("never"):
				d.Admit = AdmitNever
			case lua.LString("adaptive"):
				d.Admit = AdmitAdaptive
			default:
				err = badf("admit = %s; want \"always\", \"never\" or \"adaptive\"", quoteLua(v))
			}
		default:
			err = badf("unknown decision field %q", string(ks))
		}
	})
	if err != nil {
		return Decision{}, false, err
	}
	if d.SoftTTL >= d.TTL {
		return Decision{}, false, badf("soft_ttl (%v) must be less than ttl (%v)", d.SoftTTL, d.TTL)
	}
	return d, true, nil
}

// seconds converts a number of seconds to a Duration.
func seconds(field string, v lua.LValue, zeroOK bool) (time.Duration, error) {
	n, ok := v.(lua.LNumber)
	f := float64(n)
	if !ok || math.IsNaN(f) || f < 0 || (f == 0 && !zeroOK) || f > maxSeconds {
		want := "a number of seconds > 0"
		if zeroOK {
			want = "a number of seconds >= 0"
		}
		return 0, badf("%s = %s; want %s", field, quoteLua(v), want)
	}
	return time.Duration(f * float64(time.Second)), nil
}

// tableNames reads a list of "db.table" names.
func tableNames(field string, v lua.LValue) ([]string, error) {
	t, ok := v.(*lua.LTable)
	if !ok {
		return nil, badf("%s = %s; want a list of \"db.table\" names", field, quoteLua(v))
	}
	n := t.Len()
	names := make([]string, 0, n)
	for i := 1; i <= n; i++ {
		s, ok := t.RawGetInt(i).(lua.LString)
		if !ok || !validTableName(string(s)) {
			return nil, badf("%s[%d] = %s; want \"db.table\"", field, i, quoteLua(t.RawGetInt(i)))
		}
		names = append(names, string(s))
	}
	if n == 0 && hasHashKeys(t) {
		return nil, badf("%s is not a list", field)
	}
	return names, nil
}

func hasHashKeys(t *lua.LTable) bool {
	k, _ := t.Next(lua.LNil)
	return k != lua.LNil
}

func validTableName(s string) bool {
	_, _, ok := SplitTableName(s)
	return ok
}

// SplitTableName splits a policy's "db.table" name into its database and
// table. Each part is either unquoted, without blanks, dots or
// backquotes, or quoted in backquotes as SQL quotes it (a backquote
// inside doubled), so that a name holding a dot says which dot parts it.
func SplitTableName(s string) (db, table string, ok bool) {
	db, table, ok = ParseTableName(s)
	return db, table, ok && db != ""
}

// ParseTableName is SplitTableName that takes a table's name alone too,
// giving an empty db.
func ParseTableName(s string) (db, table string, ok bool) {
	first, rest, ok := splitIdent(s)
	switch {
	case !ok:
		return "", "", false
	case rest == "":
		return "", first, true
	case rest[0] != '.':
		return "", "", false
	}
	table, rest, ok = splitIdent(rest[1:])
	if !ok || rest != "" {
		return "", "", false
	}
	return first, table, true
}

// splitIdent reads one identifier at the start of s and returns it and
// the rest of s.
func splitIdent(s string) (name, rest string, ok bool) {
	if !strings.HasPrefix(s, "`") {
		i := strings.IndexAny(s, ".` \t\r\n\f\v")
		if i < 0 {
			i = len(s)
		}
		return s[:i], s[i:], i > 0
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		if s[i] != '`' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == '`' {
			b.WriteByte('`')
			i++
			continue
		}
		return b.String(), s[i+1:], b.Len() > 0
	}
	return "", "", false
}

// parseTables reads invalidate()'s result: nil, or a list of names.
func parseTables(v lua.LValue) ([]string, error) {
	if v == lua.LNil {
		return nil, nil
	}
	names, err := tableNames("invalidate() result", v)
	if err != nil || len(names) == 0 {
		return nil, err
	}
	return names, nil
}

// parseQueryResult reads query()'s result.
func parseQueryResult(v lua.LValue, null lua.LValue) (QueryResult, error) {
	switch v := v.(type) {
	case *lua.LNilType:
		return QueryResult{}, nil
	case lua.LString:
		if strings.TrimSpace(string(v)) == "" {
			return QueryResult{}, badf("query() returned an empty statement")
		}
		return QueryResult{Kind: QueryRewrite, SQL: string(v)}, nil
	case *lua.LTable:
		return parseQueryTable(v, null)
	}
	return QueryResult{}, badf("query() returned a %s; want nil, a string or a table", v.Type())
}

func parseQueryTable(t *lua.LTable, null lua.LValue) (QueryResult, error) {
	// One answer: a table that holds two would have one of them dropped.
	kinds := 0
	for _, f := range []string{"error", "affected_rows", "columns"} {
		if t.RawGetString(f) != lua.LNil {
			kinds++
		}
	}
	if kinds > 1 {
		return QueryResult{}, badf("query() returned a table with more than one of columns, affected_rows and error")
	}
	if msg := t.RawGetString("error"); msg != lua.LNil {
		s, ok := msg.(lua.LString)
		if !ok {
			return QueryResult{}, badf("error = %s; want a message", quoteLua(msg))
		}
		code := uint16(1105)
		if c := t.RawGetString("code"); c != lua.LNil {
			n, ok := c.(lua.LNumber)
			if !ok || n < 1 || n > 65535 || float64(n) != math.Trunc(float64(n)) {
				return QueryResult{}, badf("code = %s; want a MySQL error number", quoteLua(c))
			}
			code = uint16(n)
		}
		return QueryResult{Kind: QueryError, ErrCode: code, ErrMsg: string(s)}, nil
	}
	if a := t.RawGetString("affected_rows"); a != lua.LNil {
		n, ok := a.(lua.LNumber)
		if !ok || n < 0 || n >= 1<<63 || float64(n) != math.Trunc(float64(n)) {
			return QueryResult{}, badf("affected_rows = %s; want a whole number >= 0, below 2^63", quoteLua(a))
		}
		return QueryResult{Kind: QueryAffected, Affected: uint64(n)}, nil
	}
	cols, ok := t.RawGetString("columns").(*lua.LTable)
	if !ok || cols.Len() == 0 {
		return QueryResult{}, badf("query() returned a table without columns, affected_rows or error")
	}
	r := QueryResult{Kind: QueryResultSet}
	for i := 1; i <= cols.Len(); i++ {
		s, ok := cols.RawGetInt(i).(lua.LString)
		if !ok {
			return QueryResult{}, badf("columns[%d] = %s; want a name", i, quoteLua(cols.RawGetInt(i)))
		}
		r.Columns = append(r.Columns, string(s))
	}
	switch rows := t.RawGetString("rows").(type) {
	case *lua.LNilType:
	case *lua.LTable:
		for i := 1; i <= rows.Len(); i++ {
			row, ok := rows.RawGetInt(i).(*lua.LTable)
			if !ok {
				return QueryResult{}, badf("rows[%d] is a %s; want a table", i, rows.RawGetInt(i).Type())
			}
			if row.MaxN() > len(r.Columns) {
				return QueryResult{}, badf("rows[%d] has %d values for %d columns", i, row.MaxN(), len(r.Columns))
			}
			cells := make([]*string, len(r.Columns))
			for j := range cells {
				c := row.RawGetInt(j + 1)
				if c == lua.LNil || c == null {
					continue
				}
				s, ok := cellText(c)
				if !ok {
					return QueryResult{}, badf("rows[%d][%d] is a %s; want a string, number, boolean or null", i, j+1, c.Type())
				}
				cells[j] = &s
			}
			r.Rows = append(r.Rows, cells)
		}
	default:
		return QueryResult{}, badf("rows is a %s; want a list of rows", rows.Type())
	}
	return r, nil
}

// quoteLua renders a value for an error message.
func quoteLua(v lua.LValue) string {
	if s, ok := v.(lua.LString); ok {
		return fmt.Sprintf("%q", string(s))
	}
	if v == lua.LNil {
		return "nil"
	}
	if t := v.Type(); t == lua.LTTable || t == lua.LTFunction || t == lua.LTUserData {
		return "a " + t.String()
	}
	return v.String()
}
