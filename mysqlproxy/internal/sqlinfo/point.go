package sqlinfo

// This file describes the rows a statement names by value: the columns its
// WHERE pins to constants, and the rows an INSERT lists. pins.go finds them.

// Point describes the rows a statement's WHERE pins: a top-level AND of
// col = const, const = col, col IN (const, ...), (a, b) = (1, 2) and
// (a, b) IN ((1, 2), ...) on the statement's single table. The statement
// touches no row outside Rows, though it may touch fewer.
//
// Conjuncts that compare a column with anything but a literal or a
// placeholder (id = k + 1, id = NOW(), id > 5) are filters, not pins: they
// only narrow the pinned rows. A column pinned twice to values not known to
// be equal (id = 1 AND id = 2, id = ? AND id = ?, id = 1 AND id IN (1, 2))
// gives no Point rather than an empty one.
type Point struct {
	// Table is the statement's single table.
	Table Table
	// Cols are the pinned columns, lowercased and unqualified, in order of
	// first appearance.
	Cols []string
	// Rows holds one tuple per pinned row, each with one Value per column
	// of Cols. col IN (1, 2, 3) gives three rows. Several pins combine as a
	// cross product only when at most one of them lists more than one
	// value; otherwise the statement has no Point.
	Rows [][]Value
}

// InsertRows describes the rows an INSERT or REPLACE lists explicitly, in
// VALUES, VALUE or SET form.
type InsertRows struct {
	// Cols are the lowercased column names. Nil means every column in table
	// order, which the caller cannot map without the table's definition.
	Cols []string
	// Rows holds one tuple per inserted row, each with one Value per column
	// when Cols is set.
	Rows [][]Value
}

// MaxPointRows is the most rows a Point lists, and MaxInsertRows the
// most an InsertRows does: a statement that names more (an IN list of
// thousands of ids) has none, and is invalidated, and invalidates, by its
// table. Row by row it would cost a memcached key per row on each hit
// and each write, for a statement that seldom repeats, and its values
// would cost kilobytes each to hold.
const (
	MaxPointRows  = 1000
	MaxInsertRows = 10000
)

// LitType is the class of a literal Value. A caller that knows a column's
// type uses it to tell whether Lit names one row: an integer key compared
// with '05' or 5.0 selects row 5, while a string key compared with the
// number 5 selects '5', '05' and ' 5'.
type LitType uint8

// The literal classes. NoLit marks placeholders, NULL and expressions.
const (
	NoLit LitType = iota
	IntLit
	DecimalLit
	FloatLit
	StringLit
	// BinaryLit covers hexadecimal (X'41', 0x41) and bit (b'1') literals,
	// whose Lit is their bytes.
	BinaryLit
)

// Value is one value of a pinned or inserted row.
type Value struct {
	// Lit is the canonical text of a literal: integers in decimal without
	// leading zeros ("5", "-3"), decimals as the parser prints them
	// ("5.0"), floats in shortest form ("1e3" is "1000"), strings as their
	// bytes (unquoted, unescaped, without charset introducer or collation),
	// hexadecimal and bit literals as their bytes. TRUE and FALSE are "1"
	// and "0".
	Lit string
	// Type is the literal's class; NoLit unless Lit is set.
	Type LitType
	// Null reports the NULL literal.
	Null bool
	// Param is the 0-based index of a ? placeholder among every ? of the
	// text, in textual order, as COM_STMT_EXECUTE binds them; -1 otherwise.
	Param int
	// Expr reports a value that is neither a literal nor a placeholder,
	// such as NOW(), DEFAULT or id + 1: the row it belongs to cannot be
	// named. Only InsertRows holds such values; a WHERE conjunct comparing
	// a column with an expression is an ordinary filter, not a pin.
	Expr bool
}

// literal reports whether v's content came from a literal of the text, which
// texts of one digest do not share.
func (v Value) literal() bool {
	return v.Param < 0 && !v.Expr
}

func hasLiteral(rows [][]Value) bool {
	for _, r := range rows {
		for _, v := range r {
			if v.literal() {
				return true
			}
		}
	}
	return false
}

// hasLiteralValues reports whether info carries values taken from literals.
func hasLiteralValues(info *Info) bool {
	return (info.Point != nil && hasLiteral(info.Point.Rows)) ||
		(info.Insert != nil && hasLiteral(info.Insert.Rows))
}
