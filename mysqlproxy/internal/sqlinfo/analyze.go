package sqlinfo

import (
	"slices"
	"strings"

	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/format"
)

// analyzeStmts builds the Info of a parsed COM_QUERY text.
func analyzeStmts(stmts []ast.StmtNode, sql string) *Info {
	info := &Info{}
	for i, s := range stmts {
		st := analyzeStmt(s, sql)
		if i == 0 && len(stmts) == 1 {
			// Rows named by one statement of several say little about
			// what the text changes or reads.
			info.Point = st.Point
			info.SetCols = st.SetCols
			info.Insert = st.Insert
			info.OnDuplicate = st.OnDuplicate
			info.Procedure = st.Procedure
		}
		if i == 0 {
			info.Kind = st.Kind
			info.Cacheable = st.Cacheable
			info.WhyNot = st.WhyNot
			info.ReadOnlyTx = st.ReadOnlyTx
		}
		// After a USE earlier in the text, unqualified names are in its
		// database, not the session's.
		in := func(t Table) Table {
			if t.DB == "" && info.UseDB != "" {
				t.DB = info.UseDB
			}
			return t
		}
		for _, t := range st.Reads {
			info.Reads = appendTable(info.Reads, in(t))
		}
		for _, t := range st.Writes {
			info.Writes = appendTable(info.Writes, in(t))
		}
		info.MayWrite = info.MayWrite || st.MayWrite
		info.Unmapped = info.Unmapped || st.Unmapped
		info.Global = info.Global || st.Global
		for _, db := range st.DBWide {
			if db == "" {
				db = info.UseDB // "" still: the session's
			}
			info.DBWide = appendString(info.DBWide, db)
		}
		info.NoCacheHint = info.NoCacheHint || st.NoCacheHint
		info.Sets = append(info.Sets, st.Sets...)
		if st.UseDB != "" {
			info.UseDB = st.UseDB
		}
		info.Temporary = info.Temporary || st.Temporary
		info.CallsRoutine = info.CallsRoutine || st.CallsRoutine
		info.Dated = info.Dated || st.Dated
		switch {
		case locksTables(s):
			info.LocksTables, info.UnlocksTables = true, false
		case isUnlockTables(s) || isTxStart(s):
			info.LocksTables, info.UnlocksTables = false, true
		}
	}
	if len(stmts) > 1 {
		info.Cacheable = false
		info.WhyNot = "multi-statement"
	}
	if len(stmts) == 0 {
		info.WhyNot = "empty"
	}
	return info
}

// locksTables reports a statement after which the session holds table
// locks: LOCK TABLES, or FLUSH TABLES with a list and WITH READ LOCK.
func locksTables(s ast.StmtNode) bool {
	switch x := s.(type) {
	case *ast.LockTablesStmt:
		return true
	case *ast.FlushStmt:
		return x.Tp == ast.FlushTables && x.ReadLock && len(x.Tables) > 0
	}
	return false
}

func isUnlockTables(s ast.StmtNode) bool {
	_, ok := s.(*ast.UnlockTablesStmt)
	return ok
}

// isTxStart reports BEGIN or START TRANSACTION, which release the
// session's table locks.
func isTxStart(s ast.StmtNode) bool {
	_, ok := s.(*ast.BeginStmt)
	return ok
}

func appendString(ss []string, s string) []string {
	for _, u := range ss {
		if u == s {
			return ss
		}
	}
	return append(ss, s)
}

// analyzeStmt analyzes one statement of the text sql.
func analyzeStmt(s ast.StmtNode, sql string) *Info {
	info := analyzeOne(s, sql)
	if info.Kind != Select && info.WhyNot == "" {
		info.WhyNot = "not-select"
	}
	return info
}

func analyzeOne(s ast.StmtNode, sql string) *Info {
	info := &Info{}
	w := &walker{sql: sql}
	switch x := s.(type) {
	case *ast.SelectStmt, *ast.SetOprStmt:
		info.Kind = Select
	case *ast.ShowStmt:
		info.Kind = Show
	case *ast.InsertStmt:
		info.Kind = Insert
		if x.IsReplace {
			info.Kind = Replace
		}
		info.MayWrite = true
		if x.Table != nil {
			for _, t := range joinTables(x.Table.TableRefs) {
				info.Writes = appendTable(info.Writes, tableOf(t.name))
				w.skip = append(w.skip, t.name)
			}
		}
	case *ast.UpdateStmt:
		info.Kind = Update
		info.MayWrite = true
		info.Writes = updateTargets(x)
	case *ast.DeleteStmt:
		info.Kind = Delete
		info.MayWrite = true
		info.Writes = deleteTargets(x)
		if x.Tables != nil {
			// The names before FROM are aliases, not further reads.
			w.skip = append(w.skip, x.Tables.Tables...)
		}
	case *ast.LoadDataStmt:
		info.Kind = LoadData
		info.MayWrite = true
		if x.Table != nil {
			info.Writes = []Table{tableOf(x.Table)}
			w.skip = append(w.skip, x.Table)
		}
	case *ast.CallStmt:
		info.Kind = Call
		unmappedGlobal(info)
		if x.Procedure != nil {
			info.DBWide = []string{x.Procedure.Schema.O}
			info.Procedure = &Table{DB: x.Procedure.Schema.O, Name: x.Procedure.FnName.O}
		}
	case *ast.BeginStmt:
		info.Kind = Begin
		info.ReadOnlyTx = x.ReadOnly
	case *ast.CommitStmt:
		info.Kind = Commit
	case *ast.RollbackStmt:
		info.Kind = Rollback
		if x.SavepointName != "" {
			info.Kind = Savepoint
		}
	case *ast.SavepointStmt, *ast.ReleaseSavepointStmt:
		info.Kind = Savepoint
	case *ast.SetStmt:
		info.Kind = Set
		info.Sets = setVars(x)
		for _, v := range info.Sets {
			if v.Global && slices.Contains(ResultGlobals, v.Name) {
				// Every session's reads change with it, at once.
				unmappedGlobal(info)
			}
		}
	case *ast.SetRoleStmt, *ast.SetDefaultRoleStmt:
		info.Kind = Set
		info.Sets = []SetVar{{Name: "role", Value: restore(x)}}
	case *ast.UseStmt:
		info.Kind = Use
		info.UseDB = x.DBName
	case *ast.ExplainStmt:
		if x.Analyze {
			// EXPLAIN ANALYZE runs the statement.
			inner := analyzeStmt(x.Stmt, sql)
			inner.Kind = Other
			inner.Cacheable = false
			inner.WhyNot = "not-select"
			inner.Point, inner.SetCols, inner.Insert, inner.OnDuplicate = nil, nil, nil, false
			return inner
		}
		info.Kind = Show
	case *ast.FlushStmt:
		info.Kind = Other
		if x.Tp != ast.FlushTables {
			break // of logs, statistics, the query cache: no row changes
		}
		// FLUSH TABLES closes tables, and the server reads their files
		// afresh when it opens them next: files changed outside it (a
		// MyISAM table copied in, a CSV file written) take effect. So it
		// changes every table it names, or, without names, any.
		info.Kind = DDL
		info.MayWrite = true
		for _, t := range x.Tables {
			info.Writes = appendTable(info.Writes, tableOf(t))
		}
		if len(x.Tables) == 0 {
			unmappedGlobal(info)
		}
		return info
	case *ast.HelpStmt, *ast.DoStmt, *ast.LockTablesStmt, *ast.UnlockTablesStmt,
		*ast.PrepareStmt, *ast.DeallocateStmt, *ast.KillStmt, *ast.AnalyzeTableStmt:
		// Known not to change data. DO may call a stored function that
		// writes, like any SELECT may; that is out of reach here.
		info.Kind = Other
	case *ast.CreateDatabaseStmt:
		info.Kind = DDL
		unmappedDB(info, x.Name.O)
	case *ast.AlterDatabaseStmt:
		info.Kind = DDL
		unmappedDB(info, x.Name.O)
	case *ast.DropDatabaseStmt:
		info.Kind = DDL
		unmappedDB(info, x.Name.O)
	case *ast.ProcedureInfo:
		info.Kind = DDL
		unmappedDB(info, routineDB(x.ProcedureName))
		// The body is not run now; its tables are not this statement's.
		return info
	case *ast.DropProcedureStmt:
		info.Kind = DDL
		unmappedDB(info, routineDB(x.ProcedureName))
		return info
	case *ast.CreateTableStmt:
		info.Kind = DDL
		info.MayWrite = true
		info.Temporary = x.TemporaryKeyword != ast.TemporaryNone
		info.Writes = []Table{tableOf(x.Table)}
		w.skip = append(w.skip, x.Table)
		// Foreign keys name tables whose data does not change.
		for _, c := range x.Constraints {
			if c.Refer != nil && c.Refer.Table != nil {
				w.skip = append(w.skip, c.Refer.Table)
			}
		}
	case *ast.CreateViewStmt:
		info.Kind = DDL
		info.Writes = []Table{tableOf(x.ViewName)}
		w.skip = append(w.skip, x.ViewName)
		unmappedDB(info, x.ViewName.Schema.O)
	case *ast.DropTableStmt:
		info.Kind = DDL
		info.MayWrite = true
		info.Temporary = x.TemporaryKeyword != ast.TemporaryNone
		for _, t := range x.Tables {
			info.Writes = appendTable(info.Writes, tableOf(t))
			if x.IsView {
				unmappedDB(info, t.Schema.O)
			}
		}
		return info
	case ast.DDLNode:
		// Every other DDL (ALTER, TRUNCATE, RENAME, indexes, sequences,
		// OPTIMIZE, REPAIR) changes every table it names.
		info.Kind = DDL
		info.MayWrite = true
		info.Writes = allTables(s)
		if o, ok := s.(*ast.OptimizeTableStmt); ok {
			// Its node does not walk its tables. InnoDB rebuilds them:
			// statements prepared on them are prepared again.
			for _, t := range o.Tables {
				info.Writes = appendTable(info.Writes, tableOf(t))
			}
		}
		if len(info.Writes) == 0 {
			// DDL whose tables the parse does not show: it may have
			// changed any.
			unmappedGlobal(info)
		}
		return info
	case *ast.SetPwdStmt, *ast.CreateUserStmt, *ast.AlterUserStmt, *ast.DropUserStmt,
		*ast.RenameUserStmt, *ast.GrantStmt, *ast.GrantRoleStmt, *ast.GrantProxyStmt,
		*ast.RevokeStmt, *ast.RevokeRoleStmt:
		// A privilege change can turn any cached result into an error.
		info.Kind = Other
		unmappedGlobal(info)
		return info
	default:
		// EXECUTE and everything unknown: may write anything.
		info.Kind = Other
		unmappedGlobal(info)
	}
	s.Accept(w)
	if callsByIdentifier(sql) {
		w.routine = true
		w.reject("stored-function:called-by-identifier")
	}
	info.Reads = w.reads
	info.NoCacheHint = w.noHint
	info.CallsRoutine = w.routine
	info.Dated = w.dated
	for _, t := range w.seqWrites {
		info.MayWrite = true
		if t.Name == "" {
			unmappedGlobal(info)
			continue
		}
		info.Writes = appendTable(info.Writes, t)
	}
	keyInfo(info, s, sql, w.subquery)
	switch {
	case info.Kind != Select:
		info.WhyNot = "not-select"
	case w.whyNot != "":
		info.WhyNot = w.whyNot
	default:
		info.Cacheable = true
	}
	if info.MayWrite && !info.Unmapped && len(info.Writes) == 0 {
		// A write that names no table must still invalidate something.
		unmappedGlobal(info)
	}
	return info
}

func unmappedGlobal(info *Info) {
	info.MayWrite = true
	info.Unmapped = true
	info.Global = true
}

func unmappedDB(info *Info, db string) {
	info.MayWrite = true
	info.Unmapped = true
	info.DBWide = appendString(info.DBWide, db)
}

func routineDB(t *ast.TableName) string {
	if t == nil {
		return ""
	}
	return t.Schema.O
}

// tableCollector gathers every table name under a node.
type tableCollector struct{ ts []Table }

func (c *tableCollector) Enter(n ast.Node) (ast.Node, bool) {
	if t, ok := n.(*ast.TableName); ok {
		c.ts = appendTable(c.ts, tableOf(t))
	}
	return n, false
}

func (c *tableCollector) Leave(n ast.Node) (ast.Node, bool) { return n, true }

func allTables(n ast.Node) []Table {
	c := &tableCollector{}
	n.Accept(c)
	return c.ts
}

// joinTable is one base table of a FROM clause and the name it goes by.
type joinTable struct {
	name  *ast.TableName
	alias string
}

// joinTables lists the base tables at the top level of a join, not inside
// derived tables, which are not writable.
func joinTables(n ast.ResultSetNode) []joinTable {
	var out []joinTable
	var walk func(n ast.ResultSetNode)
	walk = func(n ast.ResultSetNode) {
		switch x := n.(type) {
		case *ast.Join:
			if x.Left != nil {
				walk(x.Left)
			}
			if x.Right != nil {
				walk(x.Right)
			}
		case *ast.TableSource:
			if t, ok := x.Source.(*ast.TableName); ok {
				alias := x.AsName.O
				if alias == "" {
					alias = t.Name.O
				}
				out = append(out, joinTable{name: t, alias: alias})
			} else if j, ok := x.Source.(*ast.Join); ok {
				walk(j)
			}
		case *ast.TableName:
			out = append(out, joinTable{name: x, alias: x.Name.O})
		}
	}
	if n != nil {
		walk(n)
	}
	return out
}

// resolve finds the join table that a qualifier (db.)name refers to.
func resolve(jts []joinTable, db, name string) (Table, bool) {
	for _, jt := range jts {
		if db == "" && jt.alias == name {
			return tableOf(jt.name), true
		}
		if db != "" && jt.name.Schema.O == db && jt.name.Name.O == name && jt.alias == name {
			return tableOf(jt.name), true
		}
	}
	return Table{}, false
}

func allJoin(jts []joinTable) []Table {
	var out []Table
	for _, jt := range jts {
		out = appendTable(out, tableOf(jt.name))
	}
	return out
}

// updateTargets returns the tables an UPDATE changes: those named by its SET
// columns, or every table of the join when a column is unqualified and the
// join has more than one.
func updateTargets(x *ast.UpdateStmt) []Table {
	if x.TableRefs == nil {
		return nil
	}
	jts := joinTables(x.TableRefs.TableRefs)
	if len(jts) <= 1 {
		return allJoin(jts)
	}
	var out []Table
	for _, a := range x.List {
		if a.Column == nil || a.Column.Table.O == "" {
			return allJoin(jts)
		}
		t, ok := resolve(jts, a.Column.Schema.O, a.Column.Table.O)
		if !ok {
			return allJoin(jts)
		}
		out = appendTable(out, t)
	}
	return out
}

// deleteTargets returns the tables a DELETE removes rows from.
func deleteTargets(x *ast.DeleteStmt) []Table {
	if x.TableRefs == nil {
		return nil
	}
	jts := joinTables(x.TableRefs.TableRefs)
	if !x.IsMultiTable || x.Tables == nil {
		return allJoin(jts)
	}
	var out []Table
	for _, tn := range x.Tables.Tables {
		t, ok := resolve(jts, tn.Schema.O, tn.Name.O)
		if !ok {
			return allJoin(jts)
		}
		out = appendTable(out, t)
	}
	return out
}

// setVars lists the assignments of a SET statement, expanding SET NAMES and
// SET CHARACTER SET into the variables they set.
//
// SET NAMES x COLLATE y also sets the collation that result columns are
// described in, which no variable shows (character_set_results says x
// only): ResultsCollation names it, a variable of mycached's own, "" for
// the charset's default.
func setVars(x *ast.SetStmt) []SetVar {
	var out []SetVar
	for _, v := range x.Variables {
		switch v.Name {
		case ast.SetNames:
			cs := restoreValue(v.Value)
			out = append(out,
				SetVar{Name: "character_set_client", Value: cs},
				SetVar{Name: "character_set_connection", Value: cs},
				SetVar{Name: "character_set_results", Value: cs})
			if v.ExtendValue != nil {
				coll := restoreValue(v.ExtendValue)
				out = append(out, SetVar{Name: "collation_connection", Value: coll},
					SetVar{Name: ResultsCollation, Value: coll})
			} else {
				// The connection collation follows the charset's default.
				out = append(out, SetVar{Name: "collation_connection", Value: cs},
					SetVar{Name: ResultsCollation})
			}
		case ast.SetCharset:
			cs := restoreValue(v.Value)
			out = append(out,
				SetVar{Name: "character_set_client", Value: cs},
				SetVar{Name: "character_set_results", Value: cs},
				SetVar{Name: ResultsCollation},
				// The connection charset becomes character_set_database's.
				SetVar{Name: "character_set_connection", Value: "@@character_set_database"})
		default:
			name := strings.ToLower(v.Name)
			if strings.HasSuffix(name, "_one_shot") {
				name = "transaction"
			}
			out = append(out, SetVar{
				Name:   name,
				Value:  restoreValue(v.Value),
				Global: v.IsGlobal,
				User:   !v.IsSystem,
			})
			if name == "character_set_results" && v.IsSystem && !v.IsGlobal {
				out = append(out, SetVar{Name: ResultsCollation})
			}
		}
	}
	return out
}

func restoreValue(e ast.ExprNode) string {
	if e == nil {
		return "DEFAULT"
	}
	if d, ok := e.(*ast.DefaultExpr); ok && d.Name == nil {
		return "DEFAULT"
	}
	return restore(e)
}

// restoreFlags renders SQL text canonically, so equal settings give equal
// text whatever the client's spelling.
const restoreFlags = format.RestoreStringSingleQuotes | format.RestoreStringWithoutCharset | format.RestoreKeyWordUppercase |
	format.RestoreNameBackQuotes | format.RestoreSpacesAroundBinaryOperation

func restore(n ast.Node) string {
	var sb strings.Builder
	if err := n.Restore(format.NewRestoreCtx(restoreFlags, &sb)); err != nil {
		return ""
	}
	return sb.String()
}

// ResultsCollation is the name setVars gives the collation SET NAMES ...
// COLLATE gives result columns.
const ResultsCollation = "mycached:results_collation"
