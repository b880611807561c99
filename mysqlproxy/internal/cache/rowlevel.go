package cache

import (
	"context"
	"strconv"
	"strings"

	"github.com/mycached/mycached/mysqlproxy/internal/deps"
	"github.com/mycached/mycached/mysqlproxy/internal/meta"
	"github.com/mycached/mycached/mysqlproxy/internal/relay"
	"github.com/mycached/mycached/mysqlproxy/internal/sqlinfo"
	"github.com/mycached/mycached/mysqlproxy/internal/wire"
)

// Row-level invalidation (see package deps for the generations): a
// primary-key lookup depends on the rows it names and on its table's
// non-key generation; a write by primary key bumps only its rows and the
// table's range generation, so other cached rows of the table stay valid.
// Keys come from meta, on a connection of mycached's own; without it every
// dependency is table-level.

// pkCols returns the primary key's columns of a table that row-level
// dependencies can name (a base table with an all-integer key), or nil.
func pkCols(t *meta.Table) []string {
	if t == nil || t.Kind != meta.Base || len(t.Also) > 0 || !t.IntKey() {
		return nil
	}
	cols := make([]string, len(t.PK))
	for i, c := range t.PK {
		cols[i] = c.Name
	}
	return cols
}

// tableMeta returns what meta knows of t, or nil without meta or when it
// cannot tell.
func (e *Engine) tableMeta(t sqlinfo.Table) *meta.Table {
	if e.meta() == nil {
		return nil
	}
	m, err := e.meta().Table(context.Background(), t.DB, t.Name)
	if err != nil {
		return nil
	}
	return m
}

// maxKeyRows is the most rows a statement is keyed by. A read or write
// naming more (IN with thousands of values) depends on its table alone:
// a generation per row would cost a memcached key per row on each hit
// and each write, for a statement that seldom repeats.
const maxKeyRows = sqlinfo.MaxPointRows

// keyRows returns, for a statement that pins columns of its table, the
// primary-key values of every row it names, or nil when it does not pin
// the whole primary key to integer values the server surely reads as
// those rows. params are the bound values of a prepared statement.
func keyRows(pk []string, cols []string, rows [][]sqlinfo.Value, params []wire.Param) [][]string {
	if len(pk) == 0 || len(rows) == 0 || len(rows) > maxKeyRows {
		return nil
	}
	idx := make([]int, len(pk))
	for i, c := range pk {
		idx[i] = -1
		for j, pc := range cols {
			if pc == c {
				idx[i] = j
			}
		}
		if idx[i] < 0 {
			return nil
		}
	}
	out := make([][]string, 0, len(rows))
	for _, r := range rows {
		key := make([]string, len(idx))
		for i, j := range idx {
			if j >= len(r) {
				return nil
			}
			v, ok := canonicalKey(r[j], params)
			if !ok {
				return nil
			}
			key[i] = v
		}
		out = append(out, key)
	}
	return out
}

// canonicalKey returns the integer key value a literal or a bound
// parameter names, in decimal, when the server certainly compares it with
// an integer column as that integer: an integer literal, an integer
// parameter, or a string that is a plain decimal integer ('5', ' 5',
// '+05'). Everything else (0x35 and b'110101' are 53 in that context,
// '1e1' is 10, 5.0 may be 5) stays table-level.
func canonicalKey(v sqlinfo.Value, params []wire.Param) (string, bool) {
	if v.Expr || v.Null {
		return "", false
	}
	if v.Param >= 0 {
		if v.Param >= len(params) || params[v.Param].Null || !params[v.Param].OK {
			return "", false
		}
		p := params[v.Param]
		if p.Int {
			return p.Text, true
		}
		return decimalText(p.Text)
	}
	switch v.Type {
	case sqlinfo.IntLit:
		return decimalText(v.Lit)
	case sqlinfo.StringLit:
		return decimalText(v.Lit)
	}
	return "", false
}

// decimalText returns s as a canonical decimal integer when it is one: an
// optional sign and digits, with spaces around.
func decimalText(s string) (string, bool) {
	s = strings.Trim(s, " ")
	if s == "" {
		return "", false
	}
	digits := s
	if digits[0] == '+' || digits[0] == '-' {
		digits = digits[1:]
	}
	if digits == "" {
		return "", false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return "", false
		}
	}
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return strconv.FormatInt(i, 10), true
	}
	if u, err := strconv.ParseUint(strings.TrimPrefix(s, "+"), 10, 64); err == nil {
		return strconv.FormatUint(u, 10), true
	}
	return "", false
}

// readDepsFor returns the dependencies of a read: row-level for a
// primary-key lookup, table-level otherwise.
//
// A statement's text fixes its key values, so without parameters the
// result is memoized per analysis and database when memo is set: for a
// shape whose reads may hit. What the lookups of a shape share is
// memoized with its table-level dependencies, so the rest is cheap to
// build for a text seen once.
func (c *Session) readDepsFor(info *sqlinfo.Info, params []wire.Param, memo bool) *readDeps {
	base := c.e.deps(info, c.db)
	pt := base.pt
	if pt == nil {
		return base
	}
	memo = memo && params == nil
	k := depsKey{info, c.db, true}
	if memo {
		if d := c.e.depsMemo.load(k, base.gen); d != nil {
			return d
		}
	}
	keys := keyRows(pt.pk, info.Point.Cols, info.Point.Rows, params)
	if keys == nil {
		return base
	}
	d := &readDeps{tables: base.tables, point: true, keys: keys, gen: base.gen, dated: base.dated}
	d.all = make([]string, 0, len(keys)+len(pt.tail))
	d.keyStr = make([]string, len(keys))
	for i, k := range keys {
		d.keyStr[i] = strings.Join(k, ",")
		d.all = append(d.all, deps.RowJoined(pt.table, d.keyStr[i]))
	}
	d.all = append(d.all, pt.tail...)
	if memo {
		c.e.depsMemo.store(k, d)
	}
	return d
}

// writeDeps returns what a confirmed write bumps for one table it names:
// what the write changed in the table, and in the tables that writes to
// it (or to a view's or MERGE table's bases) were seen to change too, as
// triggers do (meta.NoteCoWrites).
func (c *Session) writeDeps(info *sqlinfo.Info, t sqlinfo.Table, resp *relay.Response, params []wire.Param) []string {
	ds := c.tableWriteDeps(info, t, resp, params)
	for _, cw := range c.coWritten(info, t) {
		if cw == deps.Global {
			ds = append(ds, cw)
		} else {
			ds = append(ds, cw, deps.NonKey(cw))
		}
	}
	return ds
}

// coWritten returns the tables that writes like info's (of its events)
// to t, or to its bases, were seen to change too. With no follower
// running, nothing is seen: a write to a table known to have triggers
// (or to a view whose bases have) may have changed any database.
func (c *Session) coWritten(info *sqlinfo.Info, t sqlinfo.Table) []string {
	m := c.e.meta()
	if m == nil {
		return nil
	}
	ev := meta.StatementEvents(info, false)
	name := c.e.namer().Table(t.DB, t.Name)
	out := m.CoWrittenFor(name, ev)
	tm := m.Known(name)
	if tm != nil {
		for _, a := range tm.Also {
			out = append(out, m.CoWrittenFor(a, ev)...)
		}
	}
	if c.e.follower.Load() == nil && runsTriggers(m, tm) {
		out = append(out, deps.Global)
	}
	return out
}

// runsTriggers reports whether a write to tm, or through it to its
// bases, may run stored code mycached knows of: a table's triggers, or a
// view's functions.
func runsTriggers(m *meta.Meta, tm *meta.Table) bool {
	switch {
	case tm == nil:
		return false
	case tm.RunsCode:
		return true
	case tm.Kind == meta.Base:
		return false
	}
	for _, a := range tm.Also {
		if b := m.Known(a); b != nil && b.Kind == meta.Base && b.RunsCode {
			return true
		}
	}
	return false
}

// tableWriteDeps returns what a confirmed write bumps for one table it
// names, of that table (and of a view's or MERGE table's bases, and of
// foreign keys' children).
func (c *Session) tableWriteDeps(info *sqlinfo.Info, t sqlinfo.Table, resp *relay.Response, params []wire.Param) []string {
	name := c.e.namer().Table(t.DB, t.Name)
	all := []string{name, deps.NonKey(name)}
	if info.Kind == sqlinfo.DDL {
		if c.e.meta() != nil {
			c.e.meta().Forget(name)
		}
		return all
	}
	m := c.e.tableMeta(t)
	if m != nil {
		// A view's base tables or a MERGE table's union change with it,
		// and foreign keys may change other tables' rows.
		for _, a := range m.Also {
			all = append(all, a, deps.NonKey(a))
		}
		if info.Kind != sqlinfo.Insert || info.OnDuplicate || info.Kind == sqlinfo.Replace {
			for _, ch := range c.e.meta().Children(name) {
				all = append(all, ch, deps.NonKey(ch))
			}
		}
	}
	pk := pkCols(m)
	if c.e.cfg.TableLevel || pk == nil || len(info.Writes) != 1 || len(all) > 2 {
		return all
	}
	if resp != nil && resp.Warnings > 0 {
		// The server may have read a key otherwise than its text says:
		// out of range and clipped, truncated, converted.
		return all
	}
	switch info.Kind {
	case sqlinfo.Update, sqlinfo.Delete:
		if info.Point == nil {
			return all
		}
		keys := keyRows(pk, info.Point.Cols, info.Point.Rows, params)
		if keys == nil {
			return all
		}
		out := []string{name}
		if info.Kind == sqlinfo.Update && overlaps(info.SetCols, pk) {
			out = append(out, deps.NonKey(name)) // the key itself moves: rows appear where lookups found none
		}
		for _, k := range keys {
			out = append(out, deps.Row(name, k))
		}
		return out
	case sqlinfo.Insert:
		if info.OnDuplicate || info.Insert == nil || info.Insert.Cols == nil {
			return all
		}
		autoInc := m.AutoInc != "" && len(pk) == 1 && pk[0] == m.AutoInc
		if keys := keyRows(pk, info.Insert.Cols, info.Insert.Rows, params); keys != nil && !(autoInc && zeroKeys(keys)) {
			out := []string{name}
			for _, k := range keys {
				out = append(out, deps.Row(name, k))
			}
			return out
		}
		if !autoInc || contains(info.Insert.Cols, pk[0]) {
			return all
		}
		// The key comes from AUTO_INCREMENT: ids from the first one the OK
		// packet reports, one per row of the statement (rows skipped by
		// IGNORE still take theirs), auto_increment_increment apart under
		// the lock modes that keep one statement's ids together.
		n := uint64(len(info.Insert.Rows))
		incr, consecutive := c.autoIncrement()
		if resp.InsertID == 0 || n == 0 || n > deps.MaxRows || incr == 0 || (n > 1 && !consecutive) {
			return all
		}
		out := []string{name}
		for i := uint64(0); i < n; i++ {
			out = append(out, deps.Row(name, []string{strconv.FormatUint(resp.InsertID+i*incr, 10)}))
		}
		return out
	}
	return all
}

// autoIncrement returns the session's auto_increment_increment, and
// whether one statement's ids are consecutive steps of it.
func (c *Session) autoIncrement() (incr uint64, consecutive bool) {
	if c.varsUnknown("auto_increment_increment") {
		return 0, false
	}
	f := c.e.meta().Facts()
	incr = f.AutoIncIncrement
	v, ok := c.s.Vars["auto_increment_increment"]
	if !c.s.Track {
		v, ok = c.state.vars["auto_increment_increment"]
	}
	if ok {
		n, err := strconv.ParseUint(strings.Trim(v, "'"), 10, 64)
		if err != nil {
			return 0, false
		}
		incr = n
	}
	return incr, f.AutoIncLockMode == 0 || f.AutoIncLockMode == 1
}

func zeroKeys(keys [][]string) bool {
	for _, k := range keys {
		if len(k) == 1 && k[0] == "0" {
			return true
		}
	}
	return false
}

func overlaps(a, b []string) bool {
	for _, x := range a {
		if contains(b, x) {
			return true
		}
	}
	return false
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
