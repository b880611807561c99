package sqlinfo

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
)

func intv(s string) Value { return Value{Lit: s, Type: IntLit, Param: -1} }
func strv(s string) Value { return Value{Lit: s, Type: StringLit, Param: -1} }
func par(i int) Value     { return Value{Param: i} }
func exprv() Value        { return Value{Param: -1, Expr: true} }

func pt(table string, cols []string, rows ...[]Value) *Point {
	return &Point{Table: tbls(table)[0], Cols: cols, Rows: rows}
}

func row(vs ...Value) []Value { return vs }

func cols(cs ...string) []string { return cs }

func TestPoint(t *testing.T) {
	tests := []struct {
		sql  string
		want *Point
	}{
		{"SELECT * FROM t WHERE id = 5", pt("t", cols("id"), row(intv("5")))},
		{"SELECT * FROM t WHERE 5 = id", pt("t", cols("id"), row(intv("5")))},
		{"SELECT * FROM t WHERE ID = 5", pt("t", cols("id"), row(intv("5")))},
		{"SELECT * FROM t WHERE (id = 5)", pt("t", cols("id"), row(intv("5")))},
		{"SELECT * FROM t WHERE id = (5)", pt("t", cols("id"), row(intv("5")))},
		{"SELECT * FROM t WHERE id IN (1, 2, 3)", pt("t", cols("id"), row(intv("1")), row(intv("2")), row(intv("3")))},
		{"SELECT * FROM t WHERE id IN (1, 2, 1)", pt("t", cols("id"), row(intv("1")), row(intv("2")))},
		{"SELECT * FROM t WHERE id IN (7)", pt("t", cols("id"), row(intv("7")))},
		// Composite keys.
		{"SELECT * FROM t WHERE a = 1 AND b = 'x'", pt("t", cols("a", "b"), row(intv("1"), strv("x")))},
		{"SELECT * FROM t WHERE ((a = 1) AND (b = 2))", pt("t", cols("a", "b"), row(intv("1"), intv("2")))},
		{"SELECT * FROM t WHERE a = 1 && b = 2", pt("t", cols("a", "b"), row(intv("1"), intv("2")))},
		{"SELECT * FROM t WHERE a = 1 AND b IN (2, 3)", pt("t", cols("a", "b"), row(intv("1"), intv("2")), row(intv("1"), intv("3")))},
		{"SELECT * FROM t WHERE b IN (2, 3) AND a = 1", pt("t", cols("b", "a"), row(intv("2"), intv("1")), row(intv("3"), intv("1")))},
		{"SELECT * FROM t WHERE a IN (1, 2) AND b IN (3, 4)", nil},
		{"SELECT * FROM t WHERE (a, b) IN ((1, 2), (3, 4))", pt("t", cols("a", "b"), row(intv("1"), intv("2")), row(intv("3"), intv("4")))},
		{"SELECT * FROM t WHERE (a, b) = (1, 2)", pt("t", cols("a", "b"), row(intv("1"), intv("2")))},
		{"SELECT * FROM t WHERE (a, b) IN ((1, 2), (3, 4)) AND c = 5", pt("t", cols("a", "b", "c"), row(intv("1"), intv("2"), intv("5")), row(intv("3"), intv("4"), intv("5")))},
		{"SELECT * FROM t WHERE (a, b) IN ((1, 2), (3, 4)) AND c IN (5, 6)", nil},
		{"SELECT * FROM t WHERE (a, b) IN ((1, 2), (3, k))", nil},
		{"SELECT * FROM t WHERE (a, a) = (1, 1)", nil},
		// Extra conjuncts are filters; only top-level conjuncts pin.
		{"SELECT * FROM t WHERE id = 5 AND status > 3 AND name LIKE 'x%'", pt("t", cols("id"), row(intv("5")))},
		{"SELECT * FROM t WHERE a = 1 AND (b = 2 OR c = 3)", pt("t", cols("a"), row(intv("1")))},
		{"SELECT * FROM t WHERE id = 5 AND v = k + 1", pt("t", cols("id"), row(intv("5")))},
		{"SELECT * FROM t WHERE id = 5 AND k IN (1, k2)", pt("t", cols("id"), row(intv("5")))},
		{"SELECT COUNT(*), MAX(v) FROM t WHERE id IN (1, 2) GROUP BY k ORDER BY k LIMIT 3", pt("t", cols("id"), row(intv("1")), row(intv("2")))},
		// The same column pinned twice.
		{"SELECT * FROM t WHERE id = 1 AND id = 1", pt("t", cols("id"), row(intv("1")))},
		{"SELECT * FROM t WHERE (a, b) = (1, 2) AND a = 1", pt("t", cols("a", "b"), row(intv("1"), intv("2")))},
		{"SELECT * FROM t WHERE id = 1 AND id = 2", nil},
		{"SELECT * FROM t WHERE id = 1 AND id IN (1, 2)", nil},
		{"SELECT * FROM t WHERE id = ? AND id = ?", nil},
		// Not pins.
		{"SELECT * FROM t", nil},
		{"SELECT * FROM t WHERE id = 1 OR id = 2", nil},
		{"SELECT * FROM t WHERE id > 5", nil},
		{"SELECT * FROM t WHERE id <> 5", nil},
		{"SELECT * FROM t WHERE id NOT IN (1, 2)", nil},
		{"SELECT * FROM t WHERE id = id2 + 1", nil},
		{"SELECT * FROM t WHERE id = -?", nil},
		{"SELECT * FROM t WHERE id = k", nil},
		{"SELECT * FROM t WHERE NOT (id = 1)", nil},
		{"SELECT * FROM t WHERE id <=> 1", nil},
		// One table, no join, no subquery, no CTE, no UNION.
		{"SELECT * FROM t JOIN u ON t.id = u.id WHERE t.id = 1", nil},
		{"SELECT * FROM t, u WHERE t.id = 1", nil},
		{"SELECT * FROM t WHERE id = 1 AND k IN (SELECT k FROM u)", nil},
		{"SELECT * FROM t WHERE id = 1 AND v > (SELECT AVG(v) FROM t)", nil},
		{"SELECT * FROM t WHERE id = 1 AND EXISTS (SELECT 1 FROM t WHERE id = 2)", nil},
		{"SELECT (SELECT 1 FROM u), a FROM t WHERE id = 1", nil},
		{"SELECT * FROM (SELECT * FROM t) x WHERE id = 1", nil},
		{"SELECT * FROM t WHERE id = 1 UNION SELECT * FROM t WHERE id = 2", nil},
		{"WITH c AS (SELECT * FROM t) SELECT * FROM c WHERE id = 1", nil},
		{"SELECT * FROM t WHERE id = 1; SELECT 2", nil},
		{"SELECT 1 WHERE 1 = 1", nil},
		// Qualifiers must name the table or its alias.
		{"SELECT u0.name FROM users u0 WHERE u0.id = 7", pt("users", cols("id"), row(intv("7")))},
		{"SELECT u0.name FROM users AS u0 WHERE id = 7", pt("users", cols("id"), row(intv("7")))},
		{"SELECT * FROM users u0 WHERE users.id = 7", nil},
		{"SELECT * FROM users u0 WHERE U0.id = 7", nil},
		{"SELECT * FROM t WHERE u.id = 1", nil},
		{"SELECT * FROM shop.t WHERE shop.t.id = 1", pt("shop.t", cols("id"), row(intv("1")))},
		{"SELECT * FROM shop.t WHERE other.t.id = 1", nil},
		{"SELECT * FROM `Shop`.`T` WHERE `T`.`Id` = 1", pt("Shop.T", cols("id"), row(intv("1")))},
		{hibernateLoad, pt("users", cols("id"), row(par(0)))},
		// Placeholders are numbered across the whole text, in order.
		{"SELECT ?, c FROM t WHERE id = ? AND k = ?", pt("t", cols("id", "k"), row(par(1), par(2)))},
		{"SELECT * FROM t WHERE id IN (?, ?, ?)", pt("t", cols("id"), row(par(0)), row(par(1)), row(par(2)))},
		{"SELECT * FROM t WHERE name = '?' AND `a?` = \"?\" AND id = ?", pt("t", cols("name", "a?", "id"), row(strv("?"), strv("?"), par(0)))},
		{"/* ? */ SELECT * FROM t -- ?\n WHERE id = ?", pt("t", cols("id"), row(par(0)))},
		{"SELECT * FROM t WHERE v > ? AND id = ? LIMIT ?", pt("t", cols("id"), row(par(1)))},
		{"SELECT * FROM t WHERE (a, b) IN ((?, ?), (?, ?))", pt("t", cols("a", "b"), row(par(0), par(1)), row(par(2), par(3)))},
	}
	a := NewAnalyzer(Options{})
	for _, tt := range tests {
		t.Run(tt.sql, func(t *testing.T) {
			got := a.Analyze(tt.sql)
			if !reflect.DeepEqual(got.Point, tt.want) {
				t.Errorf("Point = %s, want %s", fmtPoint(got.Point), fmtPoint(tt.want))
			}
		})
	}
}

func fmtPoint(p *Point) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprintf("%s %q %s", p.Table, p.Cols, fmtRows(p.Rows))
}

func fmtRows(rows [][]Value) string {
	s := "["
	for _, r := range rows {
		s += "("
		for i, v := range r {
			if i > 0 {
				s += ", "
			}
			switch {
			case v.Expr:
				s += "expr"
			case v.Param >= 0:
				s += fmt.Sprintf("?%d", v.Param)
			case v.Null:
				s += "NULL"
			default:
				s += fmt.Sprintf("%q:%d", v.Lit, v.Type)
			}
		}
		s += ")"
	}
	return s + "]"
}

func TestWrites(t *testing.T) {
	tests := []struct {
		sql     string
		kind    Kind
		point   *Point
		setCols []string
		insert  *InsertRows
		onDup   bool
	}{
		{sql: "UPDATE t SET v = ? WHERE id = ?", kind: Update, point: pt("t", cols("id"), row(par(1))), setCols: cols("v")},
		{sql: "UPDATE t SET v = v + 1, T.W = 'x' WHERE id IN (1, 2)", kind: Update, point: pt("t", cols("id"), row(intv("1")), row(intv("2"))), setCols: cols("v", "w")},
		{sql: "UPDATE t SET id = 7 WHERE id = 5", kind: Update, point: pt("t", cols("id"), row(intv("5"))), setCols: cols("id")},
		{sql: "UPDATE t AS x SET x.v = 1 WHERE x.a = 1 AND x.b = 2 LIMIT 1", kind: Update, point: pt("t", cols("a", "b"), row(intv("1"), intv("2"))), setCols: cols("v")},
		{sql: "UPDATE t SET v = (SELECT MAX(x) FROM u) WHERE id = 3", kind: Update, point: pt("t", cols("id"), row(intv("3"))), setCols: cols("v")},
		{sql: "UPDATE t SET v = 1 WHERE k > 5", kind: Update, setCols: cols("v")},
		{sql: "UPDATE t SET v = 1 WHERE id = 1 OR id = 2", kind: Update, setCols: cols("v")},
		{sql: "UPDATE t a JOIN u b ON a.id = b.id SET a.v = 1 WHERE a.id = 1", kind: Update, setCols: cols("v")},
		{sql: "DELETE FROM t WHERE id = 1", kind: Delete, point: pt("t", cols("id"), row(intv("1")))},
		{sql: "DELETE FROM t WHERE id = ?", kind: Delete, point: pt("t", cols("id"), row(par(0)))},
		{sql: "DELETE FROM d.t WHERE (a, b) IN ((1, 'x'), (2, 'y'))", kind: Delete, point: pt("d.t", cols("a", "b"), row(intv("1"), strv("x")), row(intv("2"), strv("y")))},
		{sql: "DELETE FROM t", kind: Delete},
		{sql: "DELETE t FROM t JOIN u ON t.id = u.id WHERE t.id = 1", kind: Delete},
		{sql: "INSERT INTO t (id, Name) VALUES (1, 'a'), (2, 'b')", kind: Insert,
			insert: &InsertRows{Cols: cols("id", "name"), Rows: [][]Value{row(intv("1"), strv("a")), row(intv("2"), strv("b"))}}},
		{sql: "INSERT INTO t VALUES (1, 'a')", kind: Insert,
			insert: &InsertRows{Rows: [][]Value{row(intv("1"), strv("a"))}}},
		{sql: "INSERT INTO t (id, v) VALUE (?, ?)", kind: Insert,
			insert: &InsertRows{Cols: cols("id", "v"), Rows: [][]Value{row(par(0), par(1))}}},
		{sql: "INSERT INTO t (id, v) VALUES (?, 1), (?, 2)", kind: Insert,
			insert: &InsertRows{Cols: cols("id", "v"), Rows: [][]Value{row(par(0), intv("1")), row(par(1), intv("2"))}}},
		{sql: "INSERT INTO t SET id = 5, v = NOW()", kind: Insert,
			insert: &InsertRows{Cols: cols("id", "v"), Rows: [][]Value{row(intv("5"), exprv())}}},
		{sql: "INSERT INTO t (id, v) VALUES (DEFAULT, 1 + 1)", kind: Insert,
			insert: &InsertRows{Cols: cols("id", "v"), Rows: [][]Value{row(exprv(), exprv())}}},
		{sql: "INSERT IGNORE INTO t (id) VALUES (1)", kind: Insert,
			insert: &InsertRows{Cols: cols("id"), Rows: [][]Value{row(intv("1"))}}},
		{sql: "INSERT INTO t (a) SELECT a FROM u", kind: Insert},
		{sql: "INSERT INTO t (id, v) VALUES (1, 2) ON DUPLICATE KEY UPDATE v = VALUES(v)", kind: Insert, onDup: true,
			insert: &InsertRows{Cols: cols("id", "v"), Rows: [][]Value{row(intv("1"), intv("2"))}}},
		{sql: "INSERT INTO t (a) SELECT a FROM u ON DUPLICATE KEY UPDATE a = 1", kind: Insert, onDup: true},
		{sql: "REPLACE INTO t (id) VALUES (9)", kind: Replace,
			insert: &InsertRows{Cols: cols("id"), Rows: [][]Value{row(intv("9"))}}},
		{sql: "INSERT INTO t (id) VALUES (1); DELETE FROM t WHERE id = 2", kind: Insert},
		{sql: "EXPLAIN ANALYZE DELETE FROM t WHERE id = 2", kind: Other},
	}
	a := NewAnalyzer(Options{})
	for _, tt := range tests {
		t.Run(tt.sql, func(t *testing.T) {
			got := a.Analyze(tt.sql)
			if got.Kind != tt.kind {
				t.Errorf("Kind = %v, want %v", got.Kind, tt.kind)
			}
			if !reflect.DeepEqual(got.Point, tt.point) {
				t.Errorf("Point = %s, want %s", fmtPoint(got.Point), fmtPoint(tt.point))
			}
			if !reflect.DeepEqual(got.SetCols, tt.setCols) {
				t.Errorf("SetCols = %q, want %q", got.SetCols, tt.setCols)
			}
			if !reflect.DeepEqual(got.Insert, tt.insert) {
				t.Errorf("Insert = %+v, want %+v", got.Insert, tt.insert)
			}
			if got.OnDuplicate != tt.onDup {
				t.Errorf("OnDuplicate = %v, want %v", got.OnDuplicate, tt.onDup)
			}
		})
	}
}

func TestValues(t *testing.T) {
	tests := []struct {
		lit  string
		want Value
	}{
		{"5", intv("5")},
		{"05", intv("5")},
		{"-3", intv("-3")},
		{"- -3", intv("3")},
		{"+7", intv("7")},
		{"-0", intv("0")},
		{"18446744073709551615", intv("18446744073709551615")},
		{"-9223372036854775808", intv("-9223372036854775808")},
		{"TRUE", intv("1")},
		{"false", intv("0")},
		{"5.0", Value{Lit: "5.0", Type: DecimalLit, Param: -1}},
		{"-5.50", Value{Lit: "-5.50", Type: DecimalLit, Param: -1}},
		{"1e3", Value{Lit: "1000", Type: FloatLit, Param: -1}},
		{"'abc'", strv("abc")},
		{"'it''s'", strv("it's")},
		{`'a\nb'`, strv("a\nb")},
		{`"dq"`, strv("dq")},
		{"N'nat'", strv("nat")},
		{"_utf8mb4'x' COLLATE utf8mb4_bin", strv("x")},
		{"_latin1'y'", strv("y")},
		{"X'4142'", Value{Lit: "AB", Type: BinaryLit, Param: -1}},
		{"0x41", Value{Lit: "A", Type: BinaryLit, Param: -1}},
		{"b'1000001'", Value{Lit: "A", Type: BinaryLit, Param: -1}},
		{"NULL", Value{Null: true, Param: -1}},
		{"?", par(0)},
		{"? COLLATE utf8mb4_bin", par(0)},
	}
	a := NewAnalyzer(Options{})
	for _, tt := range tests {
		t.Run(tt.lit, func(t *testing.T) {
			got := a.Analyze("SELECT * FROM t WHERE id = " + tt.lit)
			if got.Point == nil {
				t.Fatalf("Point = nil, want one row")
			}
			if v := got.Point.Rows[0][0]; v != tt.want {
				t.Errorf("Value = %+v, want %+v", v, tt.want)
			}
			ins := a.Analyze("INSERT INTO t (id) VALUES (" + tt.lit + ")")
			if v := ins.Insert.Rows[0][0]; v != tt.want {
				t.Errorf("inserted Value = %+v, want %+v", v, tt.want)
			}
		})
	}
}

// TestPointMemo checks that texts sharing a digest do not share values taken
// from their literals, while prepared texts still share their analysis.
func TestPointMemo(t *testing.T) {
	a := NewAnalyzer(Options{})
	pairs := []struct{ x, y string }{
		{"SELECT * FROM t WHERE id = 1", "SELECT * FROM t WHERE id = 2"},
		{"SELECT * FROM t WHERE id IN (1, 2)", "SELECT * FROM t WHERE id IN (3, 4, 5)"},
		{"SELECT * FROM t WHERE id = ? AND k = 1", "SELECT * FROM t WHERE id = ? AND k = 2"},
		{"UPDATE t SET v = 1 WHERE id = 1", "UPDATE t SET v = 1 WHERE id = 2"},
		{"DELETE FROM t WHERE id = 'a'", "DELETE FROM t WHERE id = 'b'"},
		{"INSERT INTO t (id) VALUES (1)", "INSERT INTO t (id) VALUES (2)"},
		{"INSERT INTO t (id) VALUES (1), (2)", "INSERT INTO t (id) VALUES (3), (4)"},
		// A literal text after a prepared one of the same digest, and back.
		{"SELECT * FROM t WHERE id = ?", "SELECT * FROM t WHERE id = 7"},
		{"SELECT * FROM u WHERE id = 7", "SELECT * FROM u WHERE id = ?"},
	}
	for _, p := range pairs {
		x, y := a.Analyze(p.x), a.Analyze(p.y)
		if x.Digest != y.Digest {
			t.Fatalf("digests differ: %q, %q", x.Digest, y.Digest)
		}
		if x == y || reflect.DeepEqual(rowsOf(x), rowsOf(y)) {
			t.Errorf("%q and %q share rows %s", p.x, p.y, fmtRows(rowsOf(x)))
		}
	}

	// The exact memo keeps the full analysis, values included.
	q := "SELECT * FROM t WHERE id = 1"
	first := a.Analyze(q)
	q2 := string([]byte(q))
	if got := a.Analyze(q2); got != first {
		t.Errorf("exact hit returned a different *Info")
	}
	if allocs := testing.AllocsPerRun(100, func() { a.Analyze(q2) }); allocs != 0 {
		t.Errorf("allocs per exact hit = %v, want 0", allocs)
	}

	// Prepared texts share one analysis: their values are placeholders.
	shared := []struct{ x, y string }{
		{"SELECT * FROM t WHERE id = ?", "/* c */ SELECT * FROM t WHERE id=?"},
		{"SELECT c, 1 FROM t WHERE id IN (?, ?)", "SELECT c, 2 FROM t WHERE id IN (?, ?)"},
		{"UPDATE t SET v = ? WHERE id = ?", "UPDATE t SET v = ?  WHERE id = ?"},
		{"INSERT INTO t (id, c) VALUES (?, NOW())", "INSERT INTO t (id, c) VALUES (?,NOW())"},
		{"SELECT * FROM t WHERE k > 1", "SELECT * FROM t WHERE k > 2"},
	}
	for _, p := range shared {
		if x, y := a.Analyze(p.x), a.Analyze(p.y); x != y {
			t.Errorf("%q and %q: digest hit returned a new analysis; want the shared one", p.x, p.y)
		}
	}
	// The count of placeholders is part of the shape.
	two, three := a.Analyze("SELECT * FROM t WHERE id IN (?, ?)"), a.Analyze("SELECT * FROM t WHERE id IN (?, ?, ?)")
	if len(two.Point.Rows) != 2 || len(three.Point.Rows) != 3 {
		t.Errorf("rows = %d, %d, want 2, 3", len(two.Point.Rows), len(three.Point.Rows))
	}
}

func rowsOf(info *Info) [][]Value {
	if info.Point != nil {
		return info.Point.Rows
	}
	if info.Insert != nil {
		return info.Insert.Rows
	}
	return nil
}

// TestPointConcurrent checks, under the race detector, that concurrent
// callers of one shape each get their own text's values.
func TestPointConcurrent(t *testing.T) {
	a := NewAnalyzer(Options{ExactCap: 64, DigestCap: 64})
	errs := make(chan error, 4)
	for g := 0; g < 4; g++ {
		go func() {
			for i := 0; i < 300; i++ {
				want := fmt.Sprint(i % 50)
				info := a.Analyze("SELECT * FROM t WHERE id = " + want)
				if info.Point == nil || info.Point.Rows[0][0].Lit != want {
					errs <- fmt.Errorf("id = %s: Point = %s", want, fmtPoint(info.Point))
					return
				}
				a.Analyze("SELECT * FROM t WHERE id = ? AND k > " + want)
			}
			errs <- nil
		}()
	}
	for g := 0; g < 4; g++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestPointLongInListOnce: an IN list long enough to be indexed still names
// each row once, and keeps values apart that differ in any field: an
// integer and a string of the same text, a placeholder and a literal,
// tuples that differ in one column.
func TestPointLongInListOnce(t *testing.T) {
	var list, tuples []string
	var want, wantTuples [][]Value
	for i := range 3 * rowSetIndexAt {
		s := fmt.Sprint(i)
		list = append(list, s, "'"+s+"'")
		want = append(want, row(intv(s)), row(strv(s)))
		tuples = append(tuples, fmt.Sprintf("(%d, %d)", i, i), fmt.Sprintf("(%d, %d)", i, i+1))
		wantTuples = append(wantTuples, row(intv(s), intv(s)), row(intv(s), intv(fmt.Sprint(i+1))))
	}
	// Every one again, in reverse, after the index has been built.
	for i := len(list) - 1; i >= 0; i-- {
		list = append(list, list[i])
		tuples = append(tuples, tuples[i])
	}
	a := NewAnalyzer(Options{})
	got := a.Analyze("SELECT * FROM t WHERE id IN (" + strings.Join(list, ", ") + ")").Point
	if got == nil || !reflect.DeepEqual(got.Rows, want) {
		t.Errorf("id IN (%d values, each twice): got %v, want %d rows in first-seen order", len(list)/2, got, len(want))
	}
	got = a.Analyze("SELECT * FROM t WHERE (a, b) IN (" + strings.Join(tuples, ", ") + ")").Point
	if got == nil || !reflect.DeepEqual(got.Rows, wantTuples) {
		t.Errorf("(a, b) IN (%d tuples, each twice): got %v, want %d rows", len(tuples)/2, got, len(wantTuples))
	}
	p := NewAnalyzer(Options{}).Analyze("SELECT * FROM t WHERE id IN (" + strings.Repeat("?, ", 40) + "5, 5)").Point
	if p == nil || len(p.Rows) != 41 {
		t.Errorf("40 placeholders and 5 twice: got %v, want 41 rows", p)
	}
}

// TestPointRowsBounded: an IN list or a VALUES list longer than the
// bound names no rows, so that a statement of 100,000 ids costs no
// kilobytes a row to hold; at the bound it still does.
func TestPointRowsBounded(t *testing.T) {
	ids := func(n int) string {
		s := make([]string, n)
		for i := range s {
			s[i] = fmt.Sprint(i + 1)
		}
		return strings.Join(s, ", ")
	}
	values := func(n int) string {
		s := make([]string, n)
		for i := range s {
			s[i] = fmt.Sprintf("(%d)", i+1)
		}
		return strings.Join(s, ", ")
	}
	a := NewAnalyzer(Options{})
	for _, q := range []string{"SELECT * FROM t WHERE id IN (%s)", "UPDATE t SET v = 1 WHERE id IN (%s)", "DELETE FROM t WHERE id IN (%s)"} {
		if p := a.Analyze(fmt.Sprintf(q, ids(MaxPointRows))).Point; p == nil || len(p.Rows) != MaxPointRows {
			t.Errorf("%s with %d ids: got %d rows, want %d", q, MaxPointRows, pointRows(p), MaxPointRows)
		}
		if p := a.Analyze(fmt.Sprintf(q, ids(MaxPointRows+1))).Point; p != nil {
			t.Errorf("%s with %d ids: got %d rows, want none", q, MaxPointRows+1, len(p.Rows))
		}
	}
	if ins := a.Analyze("INSERT INTO t (id) VALUES " + values(MaxInsertRows)).Insert; ins == nil || len(ins.Rows) != MaxInsertRows {
		t.Errorf("an INSERT of %d rows: got %v, want them listed", MaxInsertRows, ins != nil)
	}
	if ins := a.Analyze("INSERT INTO t (id) VALUES " + values(MaxInsertRows+1)).Insert; ins != nil {
		t.Errorf("an INSERT of %d rows: got %d rows listed, want none", MaxInsertRows+1, len(ins.Rows))
	}
}

func pointRows(p *Point) int {
	if p == nil {
		return 0
	}
	return len(p.Rows)
}

// TestBigParsesTakeTurns: long texts analysed from many goroutines at
// once all complete, and give their turns back.
func TestBigParsesTakeTurns(t *testing.T) {
	a := NewAnalyzer(Options{})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q := fmt.Sprintf("SELECT * FROM t%d WHERE v IN (%s)", g, strings.Repeat("'x', ", 20000)+"'y'")
			if info := a.Analyze(q); len(info.Reads) != 1 {
				t.Errorf("goroutine %d: reads %v", g, info.Reads)
			}
		}()
	}
	wg.Wait()
	if n := len(bigParses); n != 0 {
		t.Errorf("%d turns still taken after every analysis ended", n)
	}
}
