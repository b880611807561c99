package sqlinfo

import (
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
)

// walker collects the tables a statement reads and the reasons it cannot be
// cached, walking every node of the AST.
type walker struct {
	reads  []Table
	whyNot string
	noHint bool // SQL_NO_CACHE seen
	// subquery reports a subquery anywhere in the statement.
	subquery bool
	// routine reports a call of a stored function.
	routine bool
	// dated reports a TIME value made by the text (Info.Dated).
	dated bool
	// sql is the text the statement was parsed from.
	sql string
	// seqWrites are the sequences NEXTVAL, SETVAL and s.nextval advance.
	seqWrites []Table
	// skip holds table nodes that are write targets only, not reads.
	skip []*ast.TableName
	// ctes holds the CTE names in scope; scopes records its length at each
	// node that may own a WITH clause, to restore on Leave.
	ctes   []string
	scopes []int
}

func (w *walker) reject(why string) {
	if w.whyNot == "" {
		w.whyNot = why
	}
}

// Enter implements ast.Visitor.
func (w *walker) Enter(n ast.Node) (ast.Node, bool) {
	switch x := n.(type) {
	case *ast.SelectStmt:
		w.scopes = append(w.scopes, len(w.ctes))
		if x.LockInfo != nil && x.LockInfo.LockType != ast.SelectLockNone {
			w.reject("locking-read")
		}
		if x.SelectIntoOpt != nil {
			w.reject("select-into")
		}
		if x.SelectStmtOpts != nil && !x.SelectStmtOpts.SQLCache {
			w.noHint = true
		}
		if x.SelectStmtOpts != nil && x.SelectStmtOpts.CalcFoundRows {
			// FOUND_ROWS() after it must count what the server found.
			w.reject("calc-found-rows")
		}
		if x.With != nil {
			w.enterWith(x.With)
		}
	case *ast.SetOprStmt:
		w.scopes = append(w.scopes, len(w.ctes))
		if x.With != nil {
			w.enterWith(x.With)
		}
	case *ast.DefaultExpr:
		// DEFAULT(col) evaluates the column's default, which may be
		// CURRENT_TIMESTAMP or UUID().
		w.reject("nondeterministic:default")
	case *ast.UpdateStmt:
		w.scopes = append(w.scopes, len(w.ctes))
		if x.With != nil {
			w.enterWith(x.With)
		}
	case *ast.DeleteStmt:
		w.scopes = append(w.scopes, len(w.ctes))
		if x.With != nil {
			w.enterWith(x.With)
		}
	case *ast.WithClause:
		// Already walked by enterWith, in scope order.
		return n, true
	case *ast.SubqueryExpr:
		w.subquery = true
	case *ast.TableName:
		w.table(x)
	case *ast.FuncCastExpr:
		if x.Tp != nil && x.Tp.GetType() == mysql.TypeDuration {
			w.dated = true
		}
	case *ast.FuncCallExpr:
		w.funcCall(x)
	case *ast.ColumnNameExpr:
		w.seqDotOp(x.Name)
	case *ast.VariableExpr:
		if x.IsSystem {
			w.reject("system-variable")
		} else {
			w.reject("user-variable")
		}
	}
	return n, false
}

// Leave implements ast.Visitor.
func (w *walker) Leave(n ast.Node) (ast.Node, bool) {
	switch n.(type) {
	case *ast.SelectStmt, *ast.SetOprStmt, *ast.UpdateStmt, *ast.DeleteStmt:
		if k := len(w.scopes); k > 0 {
			w.ctes = w.ctes[:w.scopes[k-1]]
			w.scopes = w.scopes[:k-1]
		}
	}
	return n, true
}

// enterWith walks the CTE bodies. A CTE's name is visible to the bodies after
// it, to its own body only under WITH RECURSIVE, and to the rest of the
// statement.
func (w *walker) enterWith(with *ast.WithClause) {
	for _, cte := range with.CTEs {
		if with.IsRecursive {
			w.ctes = append(w.ctes, cte.Name.O)
		}
		if cte.Query != nil {
			cte.Query.Accept(w)
		}
		if !with.IsRecursive {
			w.ctes = append(w.ctes, cte.Name.O)
		}
	}
}

func (w *walker) table(x *ast.TableName) {
	for _, s := range w.skip {
		if s == x {
			return
		}
	}
	if x.Schema.O == "" {
		for _, c := range w.ctes {
			if c == x.Name.O {
				return
			}
		}
	}
	if systemSchema(x.Schema.O) {
		w.reject("system-schema")
	}
	w.reads = appendTable(w.reads, tableOf(x))
}

func (w *walker) funcCall(x *ast.FuncCallExpr) {
	name := x.FnName.L
	if (name == "nextval" || name == "setval") && len(x.Args) > 0 {
		// NEXTVAL(s), NEXT VALUE FOR s and SETVAL(s, n) write s.
		if tn, ok := x.Args[0].(*ast.TableNameExpr); ok && tn.Name != nil {
			w.seqWrites = appendTable(w.seqWrites, tableOf(tn.Name))
		} else {
			w.seqWrites = append(w.seqWrites, Table{}) // unknown: see analyzeOne
		}
	}
	switch {
	case x.Schema.O != "":
		w.routine = true
		w.reject("stored-function:" + x.Schema.L + "." + name)
	case name == "point" && len(x.Args) == 2:
		// The grammar's POINT(x, y); called otherwise, the name is a
		// stored function's.
	case (name == ast.DateLiteral || name == ast.TimestampLiteral || name == ast.TimeLiteral) && literalNamed(w.sql):
		w.routine = true
		w.reject("stored-function:" + name)
	case name == ast.DateLiteral || name == ast.TimestampLiteral:
		// DATE '…', TIMESTAMP '…' and ODBC's {d '…'}, {ts '…'}:
		// constants, which the parser writes as calls.
	case name == ast.TimeLiteral:
		// TIME '…' and {t '…'}: a TIME value, which takes the current
		// date when read as a date.
		w.dated = true
	case !builtins[name]:
		// MySQL's UUID_V4() too: MariaDB 10.11 calls a stored function.
		w.routine = true
		w.reject("stored-function:" + name)
	case nondeterministic[name]:
		w.reject("nondeterministic:" + name)
	case timeValued[name]:
		w.dated = true
	}
}

// literalNamed reports whether sql may call a stored function by the name
// the parser gives typed literals ("'tidb`.(dateliteral", quoted), which
// the parser cannot tell from a literal: then none is taken for one.
func literalNamed(sql string) bool {
	l := strings.ToLower(sql)
	return strings.Contains(l, "(dateliteral") || strings.Contains(l, "(timeliteral") || strings.Contains(l, "(timestampliteral")
}

// timeValued lists the built-in functions that make a TIME value out of
// what is not one, which takes the current date when read as a date
// (Info.Dated). Those that pass one through (COALESCE, DATE_ADD, ...) get
// it from a TIME column, which the table's Meta tells, or from these.
var timeValued = map[string]bool{
	"addtime": true, "subtime": true, "maketime": true, "sec_to_time": true,
	"str_to_date": true, "time": true, "timediff": true,
}

// seqDotOp notes the sequence operations of sql_mode=ORACLE, s.nextval
// and s.currval, which the parser reads as a column of a table s: the
// statement is not cached, and s.nextval writes s. Outside that mode the
// same text names a column nextval: then this costs a read its caching
// and an extra bump.
//
// Bare SYSDATE is the function under sql_mode=ORACLE too, read as a column
// by the parser: it is not cached either.
func (w *walker) seqDotOp(c *ast.ColumnName) {
	if c != nil && c.Table.O == "" && c.Name.L == "sysdate" {
		w.reject("nondeterministic:sysdate")
		return
	}
	if c == nil || c.Table.O == "" {
		return
	}
	switch c.Name.L {
	case "nextval":
		w.seqWrites = appendTable(w.seqWrites, Table{DB: c.Schema.O, Name: c.Table.O})
	case "currval":
	default:
		return
	}
	w.reject("nondeterministic:" + c.Name.L)
}

func tableOf(x *ast.TableName) Table {
	return Table{DB: x.Schema.O, Name: x.Name.O}
}

// appendTable appends t unless ts already holds it. Statements name few
// tables, so a linear scan beats a map.
func appendTable(ts []Table, t Table) []Table {
	for _, u := range ts {
		if u == t {
			return ts
		}
	}
	return append(ts, t)
}
