// Package sqlinfo classifies SQL statements for the proxy: their kind, the
// tables they read and write, and whether their results may be cached.
package sqlinfo

import "strings"

// Kind is the broad class of a statement.
type Kind uint8

// The statement kinds. Savepoint covers the transaction control statements
// that neither start nor end a transaction (SAVEPOINT, RELEASE SAVEPOINT,
// ROLLBACK TO SAVEPOINT, XA subcommands).
const (
	Other Kind = iota
	Select
	Show
	Insert
	Update
	Delete
	Replace
	DDL
	Begin
	Commit
	Rollback
	Savepoint
	Set
	Use
	Call
	LoadData
)

var kindNames = [...]string{
	Other:     "other",
	Select:    "select",
	Show:      "show",
	Insert:    "insert",
	Update:    "update",
	Delete:    "delete",
	Replace:   "replace",
	DDL:       "ddl",
	Begin:     "begin",
	Commit:    "commit",
	Rollback:  "rollback",
	Savepoint: "transaction",
	Set:       "set",
	Use:       "use",
	Call:      "call",
	LoadData:  "load",
}

// String returns the lowercase name of the kind, such as "select" or "load".
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "other"
}

// Table names one table. An empty DB means the session's current database;
// see Qualify.
type Table struct {
	DB, Name string
}

// String returns the table as "db.name", or "name" when DB is empty.
func (t Table) String() string {
	if t.DB == "" {
		return t.Name
	}
	return t.DB + "." + t.Name
}

// SetVar is one assignment made by a SET statement.
// ResultGlobals are global-only variables that change what reads return
// in every session at once: the operators of boolean full-text search,
// and how far a search with query expansion goes. A change of one
// changes any cached result; no binlog event says so.
var ResultGlobals = []string{"ft_boolean_syntax", "ft_query_expansion_limit"}

type SetVar struct {
	// Name is the lowercased variable name. SET TRANSACTION (the one-shot
	// form) is reported as "transaction", SET ROLE as "role".
	Name string
	// Value is the assigned expression restored to SQL text, so that equal
	// settings produce equal text. DEFAULT is "DEFAULT".
	Value string
	// Global is true for GLOBAL (and PERSIST-like) scope.
	Global bool
	// User is true for a user variable (@name).
	User bool
	// Verbatim is true when the SET could not be analysed: Name is empty
	// and Value holds the whole statement text.
	Verbatim bool
}

// Info is the analysis of one COM_QUERY text. An *Info returned by an
// Analyzer is shared between callers and must not be modified.
type Info struct {
	// Kind is the kind of the first statement.
	Kind Kind
	// Digest is the normalized statement text: literals replaced by "?",
	// comments and hints removed, identifiers lowercased.
	Digest string
	// Reads lists the base tables read, including joins, subqueries and CTE
	// bodies, but not CTE names.
	Reads []Table
	// Writes lists the tables whose data or definition the statement may
	// change.
	Writes []Table
	// Cacheable reports whether the result may be cached: a single
	// deterministic SELECT that touches no system schema. See CacheableIn.
	Cacheable bool
	// WhyNot is a short machine-friendly reason when Cacheable is false,
	// such as "not-select" or "nondeterministic:now".
	WhyNot string
	// MayWrite reports whether the statement may change data or schema.
	MayWrite bool
	// Unmapped reports a write whose tables cannot be listed: the caller
	// bumps the database-wide generation of each database in DBWide, or the
	// global generation when Global is set.
	Unmapped bool
	// DBWide names the databases an Unmapped write touches; "" is the
	// session's current database.
	DBWide []string
	// Global reports an Unmapped write that may touch any database (CALL,
	// EXECUTE, GRANT, unparsable writes): the caller bumps the global
	// generation.
	Global bool
	// NoCacheHint reports a /*+ no_cache */ comment or SQL_NO_CACHE. It does
	// not clear Cacheable; the caller honours it as a request.
	NoCacheHint bool
	// ReadOnlyTx reports START TRANSACTION READ ONLY.
	ReadOnlyTx bool
	// Sets lists the assignments of SET statements, in order.
	Sets []SetVar
	// UseDB is the database named by the last USE statement.
	UseDB string
	// Temporary reports CREATE or DROP TEMPORARY TABLE; the caller tracks
	// temporary table names per session.
	Temporary bool
	// ParseError reports that the text did not parse; Kind then comes from
	// the first keyword.
	ParseError bool
	// LocksTables reports a text that may leave the session holding table
	// locks (LOCK TABLES, FLUSH TABLES t WITH READ LOCK or FOR EXPORT),
	// under which the server refuses reads of the tables not locked.
	// UnlocksTables reports one that releases them (UNLOCK TABLES, or a
	// transaction begun), and holds none after. A text that did not parse
	// and names LOCK or EXPORT is taken to lock.
	LocksTables, UnlocksTables bool
	// CallsRoutine reports a call of a stored function, which may write
	// whatever the statement's kind: SELECT f(), SET @x = f(), DO f().
	CallsRoutine bool
	// Procedure is the procedure a CALL names, as written (DB empty when
	// the name is not qualified).
	Procedure *Table
	// Dated reports a TIME value the text makes (CAST(x AS TIME),
	// SEC_TO_TIME(), TIMEDIFF(), ...): read as a DATE or a DATETIME, it
	// takes the current date, so the result may change at midnight.
	Dated bool
	// Point is set when the WHERE of a single-statement SELECT, UPDATE or
	// DELETE on one table pins columns of that table to constants; see
	// Point. A SELECT qualifies only when it reads that one table, with no
	// join, subquery, CTE or UNION. Nil otherwise.
	Point *Point
	// SetCols are the columns an UPDATE assigns, lowercased and
	// unqualified.
	SetCols []string
	// Insert describes the rows a single-statement INSERT or REPLACE lists
	// (VALUES, VALUE or SET form). Nil for INSERT ... SELECT.
	Insert *InsertRows
	// OnDuplicate reports INSERT ... ON DUPLICATE KEY UPDATE.
	OnDuplicate bool
	// Shape is the analysis this one was made from by substituting the
	// literals of another text of the same shape, or nil. The two differ
	// in their Point and Insert values only: everything else, such as
	// Reads, is the same (and shared), so what depends on nothing else may
	// be memoized once per shape rather than once per text.
	Shape *Info
}

// ShapeKey returns the analysis that stands for i's shape: Shape, or i.
func (i *Info) ShapeKey() *Info {
	if i.Shape != nil {
		return i.Shape
	}
	return i
}

// systemSchema reports whether db is one of the schemas whose contents are
// server state rather than data: information_schema, performance_schema,
// mysql and sys.
func systemSchema(db string) bool {
	switch len(db) {
	case 3:
		return strings.EqualFold(db, "sys")
	case 5:
		return strings.EqualFold(db, "mysql")
	case 18:
		return strings.EqualFold(db, "information_schema") || strings.EqualFold(db, "performance_schema")
	}
	return false
}

// CacheableIn reports whether the statement may be cached when currentDB is
// the session's database, and why not. It adds one rule to Cacheable: with
// a system schema as the current database, unqualified tables are system
// tables.
func (i *Info) CacheableIn(currentDB string) (bool, string) {
	if !i.Cacheable {
		return false, i.WhyNot
	}
	if systemSchema(currentDB) {
		for _, t := range i.Reads {
			if t.DB == "" {
				return false, "system-schema"
			}
		}
	}
	return true, ""
}

// Qualify returns ts with every empty DB replaced by currentDB. Database and
// table names keep their case, because MariaDB compares them
// case-sensitively on Linux (lower_case_table_names=0). When no table needs
// filling, Qualify returns ts itself without allocating.
func Qualify(ts []Table, currentDB string) []Table {
	i := 0
	for i < len(ts) && ts[i].DB != "" {
		i++
	}
	if i == len(ts) {
		return ts
	}
	out := make([]Table, len(ts))
	copy(out, ts)
	for ; i < len(out); i++ {
		if out[i].DB == "" {
			out[i].DB = currentDB
		}
	}
	return out
}
