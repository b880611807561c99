package sqlinfo

import (
	"sort"
	"strconv"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/opcode"
	driver "github.com/pingcap/tidb/pkg/parser/test_driver"
)

// keyInfo fills the row-level fields of a single statement's info: Point,
// SetCols, Insert and OnDuplicate. subquery reports a subquery anywhere in s.
func keyInfo(info *Info, s ast.StmtNode, sql string, subquery bool) {
	keyInfoWith(info, s, &params{sql: sql}, subquery)
}

// keyInfoWith is keyInfo reading values through p.
func keyInfoWith(info *Info, s ast.StmtNode, p *params, subquery bool) {
	switch x := s.(type) {
	case *ast.SelectStmt:
		// A subquery, even on the same table, makes the result depend on
		// rows the WHERE does not pin.
		if len(info.Reads) != 1 || subquery || x.With != nil || x.Kind != ast.SelectStmtKindSelect {
			return
		}
		if t, ok := singleTable(x.From); ok {
			info.Point = t.point(x.Where, p)
		}
	case *ast.UpdateStmt:
		info.SetCols = setCols(x.List)
		// A subquery in SET or WHERE does not widen the rows written.
		if x.With != nil || x.MultipleTable {
			return
		}
		if t, ok := singleTable(x.TableRefs); ok {
			info.Point = t.point(x.Where, p)
		}
	case *ast.DeleteStmt:
		if x.With != nil || x.IsMultiTable {
			return
		}
		if t, ok := singleTable(x.TableRefs); ok {
			info.Point = t.point(x.Where, p)
		}
	case *ast.InsertStmt:
		info.OnDuplicate = len(x.OnDuplicate) > 0
		if x.Select == nil {
			info.Insert = insertRows(x, p)
		}
	}
}

func setCols(list []*ast.Assignment) []string {
	var out []string
	for _, a := range list {
		if a.Column != nil {
			out = appendString(out, a.Column.Name.L)
		}
	}
	return out
}

func insertRows(x *ast.InsertStmt, p *params) *InsertRows {
	if len(x.Lists) > MaxInsertRows {
		return nil
	}
	ins := &InsertRows{}
	for _, c := range x.Columns {
		ins.Cols = append(ins.Cols, c.Name.L)
	}
	ins.Rows = make([][]Value, 0, len(x.Lists))
	for _, list := range x.Lists {
		row := make([]Value, len(list))
		for i, e := range list {
			row[i] = p.valueOf(e)
		}
		ins.Rows = append(ins.Rows, row)
	}
	return ins
}

// target is the single table a statement's WHERE refers to.
type target struct {
	table Table
	alias string // "" when the table has none
}

// singleTable returns the table of a FROM clause that names exactly one base
// table and no join.
func singleTable(refs *ast.TableRefsClause) (*target, bool) {
	if refs == nil || refs.TableRefs == nil || refs.TableRefs.Right != nil {
		return nil, false
	}
	switch x := refs.TableRefs.Left.(type) {
	case *ast.TableSource:
		if tn, ok := x.Source.(*ast.TableName); ok {
			return &target{table: tableOf(tn), alias: x.AsName.O}, true
		}
	case *ast.TableName:
		return &target{table: tableOf(x)}, true
	}
	return nil, false
}

// column returns the lowercased name of the target's column that e names.
// Table aliases and names are compared case-sensitively, as MariaDB does
// with lower_case_table_names=0. An unqualified table may be matched by any
// schema qualifier: a wrong one makes the statement fail.
func (t *target) column(e ast.ExprNode) (string, bool) {
	c, ok := unparen(e).(*ast.ColumnNameExpr)
	if !ok || c.Name == nil {
		return "", false
	}
	n := c.Name
	switch {
	case n.Table.O == "":
	case t.alias != "":
		if n.Schema.O != "" || n.Table.O != t.alias {
			return "", false
		}
	default:
		if n.Table.O != t.table.Name || (n.Schema.O != "" && t.table.DB != "" && n.Schema.O != t.table.DB) {
			return "", false
		}
	}
	if !isASCII(n.Name.O) {
		// Go folds the case of letters the server may not (it compares
		// column names by older tables): such a name pins no key.
		return "", false
	}
	return n.Name.L, true
}

func unparen(e ast.ExprNode) ast.ExprNode {
	for {
		p, ok := e.(*ast.ParenthesesExpr)
		if !ok {
			return e
		}
		e = p.Expr
	}
}

// pinGroup is what one conjunct pins: its columns and the tuples they take.
type pinGroup struct {
	cols []string
	rows [][]Value
}

// point returns the rows where pins, or nil when it pins nothing or pins a
// column twice to values not known to be equal.
func (t *target) point(where ast.ExprNode, p *params) *Point {
	var groups []pinGroup
	for _, c := range conjuncts(where, nil) {
		g, ok := t.pin(c, p)
		if !ok {
			// An ordinary filter: it only narrows the pinned rows.
			continue
		}
		g, ok = dedupCols(groups, g)
		if !ok {
			return nil
		}
		if len(g.cols) > 0 {
			groups = append(groups, g)
		}
	}
	if len(groups) == 0 {
		return nil
	}
	multi := 0
	for _, g := range groups {
		if len(g.rows) > 1 {
			multi++
		}
	}
	if multi > 1 {
		// A cross product of two lists grows quadratically; rare enough
		// to leave to table-level invalidation.
		return nil
	}
	pt := &Point{Table: t.table, Rows: [][]Value{nil}}
	for _, g := range groups {
		pt.Cols = append(pt.Cols, g.cols...)
		if len(g.rows) == 1 {
			for i := range pt.Rows {
				pt.Rows[i] = append(pt.Rows[i], g.rows[0]...)
			}
			continue
		}
		base := pt.Rows[0]
		pt.Rows = make([][]Value, 0, len(g.rows))
		for _, r := range g.rows {
			row := make([]Value, 0, len(base)+len(r))
			pt.Rows = append(pt.Rows, append(append(row, base...), r...))
		}
	}
	return pt
}

// dedupCols removes from g the columns an earlier group already pins to the
// same single value. It fails when a column is pinned twice otherwise.
func dedupCols(groups []pinGroup, g pinGroup) (pinGroup, bool) {
	for i := 0; i < len(g.cols); i++ {
		for j := 0; j < i; j++ {
			if g.cols[j] == g.cols[i] {
				return g, false
			}
		}
		v, single, found := pinnedValue(groups, g.cols[i])
		if !found {
			continue
		}
		if !single || len(g.rows) != 1 || v != g.rows[0][i] {
			return g, false
		}
		g = dropCol(g, i)
		i--
	}
	return g, true
}

func pinnedValue(groups []pinGroup, col string) (v Value, single, found bool) {
	for _, g := range groups {
		for i, c := range g.cols {
			if c == col {
				return g.rows[0][i], len(g.rows) == 1, true
			}
		}
	}
	return Value{}, false, false
}

func dropCol(g pinGroup, i int) pinGroup {
	cols := append(append([]string(nil), g.cols[:i]...), g.cols[i+1:]...)
	row := append(append([]Value(nil), g.rows[0][:i]...), g.rows[0][i+1:]...)
	return pinGroup{cols: cols, rows: [][]Value{row}}
}

// conjuncts appends the operands of e's top-level AND to out.
func conjuncts(e ast.ExprNode, out []ast.ExprNode) []ast.ExprNode {
	if e == nil {
		return out
	}
	e = unparen(e)
	if b, ok := e.(*ast.BinaryOperationExpr); ok && b.Op == opcode.LogicAnd {
		return conjuncts(b.R, conjuncts(b.L, out))
	}
	return append(out, e)
}

// pin returns what conjunct e pins, if it is a pin.
func (t *target) pin(e ast.ExprNode, p *params) (pinGroup, bool) {
	switch x := e.(type) {
	case *ast.BinaryOperationExpr:
		if x.Op != opcode.EQ {
			return pinGroup{}, false
		}
		if g, ok := t.eqPin(x.L, x.R, p); ok {
			return g, true
		}
		return t.eqPin(x.R, x.L, p)
	case *ast.PatternInExpr:
		if x.Not || x.Sel != nil || len(x.List) > MaxPointRows {
			return pinGroup{}, false
		}
		cols, ok := t.columns(x.Expr)
		if !ok {
			return pinGroup{}, false
		}
		var rows rowSet
		for _, item := range x.List {
			row, ok := p.tuple(item, len(cols))
			if !ok {
				return pinGroup{}, false
			}
			rows.add(row)
		}
		return pinGroup{cols: cols, rows: rows.rows}, len(rows.rows) > 0
	}
	return pinGroup{}, false
}

func (t *target) eqPin(colSide, valSide ast.ExprNode, p *params) (pinGroup, bool) {
	cols, ok := t.columns(colSide)
	if !ok {
		return pinGroup{}, false
	}
	row, ok := p.tuple(valSide, len(cols))
	if !ok {
		return pinGroup{}, false
	}
	return pinGroup{cols: cols, rows: [][]Value{row}}, true
}

// columns returns the columns e names: one column, or a row of columns.
func (t *target) columns(e ast.ExprNode) ([]string, bool) {
	e = unparen(e)
	if r, ok := e.(*ast.RowExpr); ok {
		cols := make([]string, 0, len(r.Values))
		for _, v := range r.Values {
			c, ok := t.column(v)
			if !ok {
				return nil, false
			}
			cols = append(cols, c)
		}
		return cols, len(cols) > 0
	}
	c, ok := t.column(e)
	if !ok {
		return nil, false
	}
	return []string{c}, true
}

// tuple returns the constant values of e, which must have n of them: a
// single value when n is 1, a row of n values otherwise.
func (p *params) tuple(e ast.ExprNode, n int) ([]Value, bool) {
	e = unparen(e)
	var items []ast.ExprNode
	if r, ok := e.(*ast.RowExpr); ok {
		items = r.Values
	} else {
		items = []ast.ExprNode{e}
	}
	if len(items) != n {
		return nil, false
	}
	row := make([]Value, n)
	for i, it := range items {
		row[i] = p.valueOf(it)
		if row[i].Expr {
			return nil, false
		}
	}
	return row, true
}

// rowSet collects the tuples of an IN list, each once, so that an IN list
// naming a key twice names its row once. A short list is searched; a long
// one is indexed, so that thousands of keys cost linear time, not
// quadratic.
type rowSet struct {
	rows [][]Value
	seen map[string]struct{} // rowKey of each row, once there are many
}

// rowSetIndexAt is the length from which a rowSet indexes its rows.
const rowSetIndexAt = 16

func (s *rowSet) add(row []Value) {
	if s.seen == nil && len(s.rows) < rowSetIndexAt {
	next:
		for _, r := range s.rows {
			for i := range r {
				if r[i] != row[i] {
					continue next
				}
			}
			return
		}
		s.rows = append(s.rows, row)
		return
	}
	if s.seen == nil {
		s.seen = make(map[string]struct{}, 2*len(s.rows))
		for _, r := range s.rows {
			s.seen[rowKey(r)] = struct{}{}
		}
	}
	k := rowKey(row)
	if _, dup := s.seen[k]; dup {
		return
	}
	s.seen[k] = struct{}{}
	s.rows = append(s.rows, row)
}

// rowKey encodes row so that two rows have equal keys exactly when their
// Values are equal field by field.
func rowKey(row []Value) string {
	b := make([]byte, 0, 16*len(row))
	for _, v := range row {
		b = strconv.AppendInt(b, int64(len(v.Lit)), 10)
		b = append(b, ':')
		b = append(b, v.Lit...)
		b = append(b, byte(v.Type), boolByte(v.Null), boolByte(v.Expr))
		b = strconv.AppendInt(b, int64(v.Param), 10)
		b = append(b, ';')
	}
	return string(b)
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// params numbers the ? placeholders of a statement text.
type params struct {
	sql  string
	offs []int // byte offsets of the placeholders, ascending
	done bool
	// tags, when set, stands tags in for literal values (see tagger).
	tags *tagger
}

// valueOf returns the Value of e.
func (p *params) valueOf(e ast.ExprNode) Value {
	notConst := Value{Param: -1, Expr: true}
	switch x := e.(type) {
	case *ast.ParenthesesExpr:
		return p.valueOf(x.Expr)
	case *ast.SetCollationExpr:
		// The collation changes comparison, not the bytes.
		return p.valueOf(x.Expr)
	case *driver.ParamMarkerExpr:
		if i, ok := p.index(x.Offset); ok {
			return Value{Param: i}
		}
	case *driver.ValueExpr:
		v := literalValue(x)
		if p.tags != nil && v.literal() {
			return p.tags.tag(x, v)
		}
		return v
	case *ast.UnaryOperationExpr:
		if x.Op != opcode.Minus && x.Op != opcode.Plus {
			break
		}
		v := p.valueOf(x.V)
		switch v.Type {
		case IntLit, DecimalLit, FloatLit:
		default:
			// -? and -'5' are computed by the server.
			return notConst
		}
		if x.Op == opcode.Minus {
			v.Lit = negate(v.Lit)
		}
		return v
	}
	return notConst
}

// index returns the index of the placeholder at byte offset off. The parser
// leaves ParamMarkerExpr.Order unset (TiDB numbers markers in its planner),
// but records each marker's offset in the text, so the index is the marker's
// rank among the text's placeholders.
func (p *params) index(off int) (int, bool) {
	if !p.done {
		p.offs = placeholderOffsets(p.sql)
		p.done = true
	}
	i := sort.SearchInts(p.offs, off)
	if i < len(p.offs) && p.offs[i] == off {
		return i, true
	}
	return 0, false
}

func literalValue(x *driver.ValueExpr) Value {
	v := Value{Param: -1}
	switch x.Kind() {
	case driver.KindNull:
		v.Null = true
	case driver.KindInt64:
		v.Lit, v.Type = strconv.FormatInt(x.GetInt64(), 10), IntLit
	case driver.KindUint64:
		v.Lit, v.Type = strconv.FormatUint(x.GetUint64(), 10), IntLit
	case driver.KindFloat32, driver.KindFloat64:
		v.Lit, v.Type = strconv.FormatFloat(x.GetFloat64(), 'g', -1, 64), FloatLit
	case driver.KindMysqlDecimal:
		v.Lit, v.Type = x.GetMysqlDecimal().String(), DecimalLit
	case driver.KindString, driver.KindBytes:
		v.Lit, v.Type = x.GetString(), StringLit
	case driver.KindBinaryLiteral:
		v.Lit, v.Type = string(x.GetBytes()), BinaryLit
	default:
		return Value{Param: -1, Expr: true}
	}
	return v
}

func negate(s string) string {
	if rest, ok := strings.CutPrefix(s, "-"); ok {
		return rest
	}
	if s == "0" {
		return s
	}
	return "-" + s
}
