package cache

import (
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/mycached/mycached/mysqlproxy/internal/relay"
	"github.com/mycached/mycached/mysqlproxy/internal/sqlinfo"
	"github.com/mycached/mycached/mysqlproxy/internal/wire"
)

// Row-level invalidation. A table "db.t" has three kinds of generation:
//
//   - "db.t", the range generation: every write to the table bumps it, and
//     every read that is not a primary-key lookup depends on it;
//   - "db.t!nk", the non-key generation: every write that is not by primary
//     key bumps it, and every primary-key lookup depends on it;
//   - "db.t#<key>", one per row: a write by primary key bumps the rows it
//     names, and a primary-key lookup depends on the rows it names.
//
// So an UPDATE by primary key invalidates the lookups of its rows and the
// range reads of the table, and leaves every other cached row alone.

// nonKey returns the non-key generation's name of a table.
func nonKey(table string) string { return table + "!nk" }

// rowDep returns the generation name of one row.
func rowDep(table string, key []string) string {
	return table + "#" + strings.Join(key, ",")
}

// pkInfo is what mycached knows of a table's primary key.
type pkInfo struct {
	cols    []string // lower-case, in key order; nil: no primary key
	autoInc bool     // the key is one AUTO_INCREMENT column
	incr    uint64   // @@auto_increment_increment when learned
	// consecutive: a multi-row insert gets consecutive ids
	// (innodb_autoinc_lock_mode 0 or 1).
	consecutive bool
	until       time.Time
}

// pkCache remembers primary keys per "db.t", learned from
// information_schema on first need and forgotten on DDL.
type pkCache struct {
	m sync.Map // "db.t" -> *pkInfo
}

// pkNegativeTTL bounds how long "no primary key" (or "could not tell") is
// believed: the user who asked may lack the rights to see the table.
const pkNegativeTTL = time.Minute

func (c *pkCache) forget(table string) { c.m.Delete(table) }

// primaryKey returns the table's primary key, learning it on this
// session's backend connection if needed. It runs between the client's
// statements, just before one that resets the same diagnostics area, so
// the client cannot tell.
func (c *Session) primaryKey(t sqlinfo.Table) *pkInfo {
	name := t.String()
	if v, ok := c.e.pks.m.Load(name); ok {
		pk := v.(*pkInfo)
		if pk.until.IsZero() || time.Now().Before(pk.until) {
			return pk
		}
	}
	pk := c.learnPrimaryKey(t)
	c.e.pks.m.Store(name, pk)
	return pk
}

func (c *Session) learnPrimaryKey(t sqlinfo.Table) *pkInfo {
	// SHOW statements, not SELECTs from information_schema, so that
	// MariaDB's Com_select, which operators watch, counts only clients.
	negative := &pkInfo{until: time.Now().Add(pkNegativeTTL)}
	table := quoteIdent(t.DB) + "." + quoteIdent(t.Name)
	keys, err := c.internalQuery("SHOW KEYS FROM " + table + " WHERE Key_name = 'PRIMARY'")
	if err != nil || len(keys) == 0 {
		return negative
	}
	pk := &pkInfo{}
	for _, r := range keys { // Table, Non_unique, Key_name, Seq_in_index, Column_name, ...
		if len(r) < 5 {
			return negative
		}
		pk.cols = append(pk.cols, strings.ToLower(r[4]))
	}
	if len(pk.cols) > 1 {
		return pk
	}
	cols, err := c.internalQuery("SHOW COLUMNS FROM " + table + " LIKE '" + mysql.Escape(keys[0][4]) + "'")
	if err != nil || len(cols) != 1 || len(cols[0]) < 6 { // Field, Type, Null, Key, Default, Extra
		return pk
	}
	if !strings.Contains(strings.ToLower(cols[0][5]), "auto_increment") {
		return pk
	}
	vars, err := c.internalQuery("SHOW VARIABLES WHERE Variable_name IN ('auto_increment_increment', 'innodb_autoinc_lock_mode')")
	if err != nil {
		return pk
	}
	pk.autoInc = true
	for _, v := range vars {
		switch {
		case len(v) < 2:
		case v[0] == "auto_increment_increment":
			pk.incr, _ = strconv.ParseUint(v[1], 10, 64)
		case v[0] == "innodb_autoinc_lock_mode":
			// Under lock mode 2 the ids of one multi-row insert may
			// interleave with another's; only single rows are then known.
			pk.consecutive = v[1] == "0" || v[1] == "1"
		}
	}
	return pk
}

func quoteIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

// internalQuery runs a query of mycached's own on the session's backend
// connection and returns its rows as strings (NULL as ""). The response
// goes nowhere but here.
func (c *Session) internalQuery(q string) ([][]string, error) {
	p := append([]byte{mysql.COM_QUERY}, q...)
	if err := c.s.Forward(p); err != nil {
		return nil, err
	}
	var buf []byte
	read := func() ([]byte, error) {
		b, _, err := c.s.Backend.ReadPacket(buf, 1<<30)
		if err != nil {
			return nil, relay.BackendError{Err: err}
		}
		buf = b
		return b, nil
	}
	first, err := read()
	if err != nil {
		return nil, err
	}
	if len(first) == 0 || first[0] == mysql.ERR_HEADER || first[0] == mysql.OK_HEADER {
		return nil, errors.New("cache: internal query failed")
	}
	cols, _ := wire.Lenenc(first)
	for i := uint64(0); i < cols; i++ {
		if _, err := read(); err != nil {
			return nil, err
		}
	}
	if !c.s.DeprecateEOF() {
		if _, err := read(); err != nil {
			return nil, err
		}
	}
	var rows [][]string
	for {
		b, err := read()
		if err != nil {
			return nil, err
		}
		if len(b) > 0 && b[0] == mysql.ERR_HEADER {
			return nil, errors.New("cache: internal query failed")
		}
		if len(b) > 0 && wire.IsTerminator(b[0], len(b)) {
			return rows, nil
		}
		row := make([]string, 0, cols)
		for len(b) > 0 {
			if b[0] == 0xfb {
				row = append(row, "")
				b = b[1:]
				continue
			}
			n, k := wire.Lenenc(b)
			if k == 0 || uint64(len(b)-k) < n {
				return nil, errors.New("cache: internal query: bad row")
			}
			row = append(row, string(b[k:k+int(n)]))
			b = b[k+int(n):]
		}
		rows = append(rows, row)
	}
}

// keyRows returns, for a statement that pins columns of its table, the
// primary-key values of every row it names, or nil when it does not pin
// the whole primary key to integer constants. params are the bound values
// of a prepared statement.
func keyRows(pk *pkInfo, cols []string, rows [][]sqlinfo.Value, params []wire.Param) [][]string {
	if pk == nil || len(pk.cols) == 0 || len(rows) == 0 {
		return nil
	}
	idx := make([]int, len(pk.cols))
	for i, c := range pk.cols {
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

// canonicalKey returns a key value as the decimal integer it denotes.
// Only integers are taken: a string key compares under its column's
// collation (case, trailing spaces, accents), which mycached cannot mirror
// without knowing it, so such lookups stay table-level.
func canonicalKey(v sqlinfo.Value, params []wire.Param) (string, bool) {
	if v.Expr || v.Null {
		return "", false
	}
	lit := v.Lit
	if v.Param >= 0 {
		if v.Param >= len(params) || params[v.Param].Null || !params[v.Param].OK {
			return "", false
		}
		lit = params[v.Param].Text
	}
	lit = strings.TrimSpace(lit)
	if i, err := strconv.ParseInt(lit, 10, 64); err == nil {
		return strconv.FormatInt(i, 10), true
	}
	if u, err := strconv.ParseUint(lit, 10, 64); err == nil {
		return strconv.FormatUint(u, 10), true
	}
	return "", false
}

// readDepsFor returns the dependencies of a read: row-level for a
// primary-key lookup, table-level otherwise.
//
// A statement's text fixes its key values, so without parameters the
// result is memoized per analysis and database, like table-level ones;
// DDL clears the memo, since it may change a primary key.
func (c *Session) readDepsFor(info *sqlinfo.Info, params []wire.Param) *readDeps {
	if info.Point == nil || len(info.Reads) != 1 || c.e.cfg.TableLevel {
		return c.e.deps(info, c.s.Hello.DB)
	}
	k := depsKey{info, c.s.Hello.DB, true}
	if params == nil {
		if v, ok := c.e.depsMemo.m.Load(k); ok {
			return v.(*readDeps)
		}
	}
	deps := c.e.deps(info, c.s.Hello.DB)
	t := sqlinfo.Qualify([]sqlinfo.Table{info.Point.Table}, c.s.Hello.DB)[0]
	keys := keyRows(c.primaryKey(t), info.Point.Cols, info.Point.Rows, params)
	if keys == nil {
		return deps
	}
	name := t.String()
	d := &readDeps{tables: deps.tables, point: true, keys: keys}
	d.all = make([]string, 0, len(keys)+3)
	d.keyStr = make([]string, len(keys))
	for i, k := range keys {
		d.all = append(d.all, rowDep(name, k))
		d.keyStr[i] = strings.Join(k, ",")
	}
	d.all = append(d.all, nonKey(name), t.DB+".*", "*")
	if params == nil {
		c.e.depsMemo.store(k, d)
	}
	return d
}

// writeDeps returns what a confirmed write bumps in one table.
func (c *Session) writeDeps(info *sqlinfo.Info, t sqlinfo.Table, resp *relay.Response, params []wire.Param) []string {
	name := t.String()
	all := []string{name, nonKey(name)}
	if c.e.cfg.TableLevel {
		return all
	}
	switch info.Kind {
	case sqlinfo.Update, sqlinfo.Delete:
		if info.Point == nil || len(info.Writes) != 1 {
			return all
		}
		pk := c.primaryKey(t)
		keys := keyRows(pk, info.Point.Cols, info.Point.Rows, params)
		if keys == nil {
			return all
		}
		out := []string{name}
		if info.Kind == sqlinfo.Update && overlaps(info.SetCols, pk.cols) {
			out = append(out, nonKey(name)) // the key itself moves: rows appear where lookups found none
		}
		for _, k := range keys {
			out = append(out, rowDep(name, k))
		}
		return out
	case sqlinfo.Insert:
		if info.OnDuplicate || len(info.Writes) != 1 {
			return all
		}
		pk := c.primaryKey(t)
		if pk == nil || len(pk.cols) == 0 {
			return all
		}
		if info.Insert == nil || info.Insert.Cols == nil {
			return all
		}
		if keys := keyRows(pk, info.Insert.Cols, info.Insert.Rows, params); keys != nil && !(pk.autoInc && zeroKeys(keys)) {
			out := []string{name}
			for _, k := range keys {
				out = append(out, rowDep(name, k))
			}
			return out
		}
		if !pk.autoInc || contains(info.Insert.Cols, pk.cols[0]) {
			return all
		}
		// The key comes from AUTO_INCREMENT: ids from the first one the OK
		// packet reports, one per row of the statement (rows skipped by
		// IGNORE still take theirs), consecutive under the default lock
		// mode.
		n := uint64(len(info.Insert.Rows))
		if resp.InsertID == 0 || n == 0 || n > 10000 || pk.incr == 0 || (n > 1 && !pk.consecutive) {
			return all
		}
		out := []string{name}
		for i := uint64(0); i < n; i++ {
			out = append(out, rowDep(name, []string{strconv.FormatUint(resp.InsertID+i*pk.incr, 10)}))
		}
		return out
	case sqlinfo.DDL:
		c.e.pks.forget(name)
		c.e.depsMemo.clear()
	}
	return all
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
