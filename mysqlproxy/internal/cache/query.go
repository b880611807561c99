package cache

import (
	"bufio"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/mycached/mycached/cachepolicy"
	"github.com/mycached/mycached/mysqlproxy/internal/deps"
	"github.com/mycached/mycached/mysqlproxy/internal/meta"
	"github.com/mycached/mycached/mysqlproxy/internal/relay"
	"github.com/mycached/mycached/mysqlproxy/internal/sqlinfo"
	"github.com/mycached/mycached/mysqlproxy/internal/wire"
)

// Query handles a COM_QUERY that no other feature answered: a cacheable
// read goes through the cache, and everything else is relayed, with
// writes invalidating what they touched before the client hears they are
// done.
func (c *Session) Query(p []byte, sql string) error {
	c.db, c.started = c.s.Hello.DB, time.Now()
	if c.e.cfg.Passthrough && sqlinfo.FirstKeyword(sql) == "SELECT" && !strings.Contains(sql, "(") && c.e.meta() == nil {
		// Nothing is cached, and a SELECT that calls no function writes
		// nothing (SELECT ... INTO OUTFILE writes a file, not a table):
		// no analysis needed. One that may call a stored function, in
		// its text or through a view (which only a sidecar that reads
		// the schema knows of), is analysed, so that what it wrote is
		// invalidated for the sidecars that cache.
		return c.s.RelayMode(p, relay.ModeResult)
	}
	info, shapeOnly := c.e.Analyzer.AnalyzeShapeIn(sql, c.dialect(), c.unjudgedHook(p, sql))
	c.unjudgedP, c.unjudgedSQL = nil, ""
	if shapeOnly {
		// A rejected shape's read its admission does not judge.
		before := c.s.Status
		err := c.relayRejected(p, c.unjudgedStat, c.unjudgedStat.admission())
		c.relayedRead(before, info, sql, nil)
		return err
	}
	if c.lexStale() && (info.Kind == sqlinfo.Select && info.Cacheable && !c.keepsConds(info) || mayWrite(info) && !relay.Inert(p)) {
		// A SET @@sql_mode or @@character_set_client that no tracker
		// reported: the server reads this text by the new value, which
		// may hide a function or a table in what the old value read as
		// a string. A read that may be cached, or a write, reads it
		// first (a cached read would anyway), and is read again by it;
		// a DO of constants writes nothing, and keeps the warnings.
		if err := c.s.RefreshIdentity(); err != nil {
			return err
		}
		info = c.e.Analyzer.AnalyzeIn(sql, c.dialect())
	}
	if info.Kind == sqlinfo.Select && info.Cacheable {
		return c.read(p, info, sql, nil)
	}
	if info.Kind == sqlinfo.Select || info.Kind == sqlinfo.Show {
		c.e.Stats.bypass(whyNotCacheable)
		c.e.Queries.note(info.Digest, info.WhyNot, 0)
	}
	execDiag := c.notePrepared(sql)
	// Stored code, or statements the text does not show, may read the
	// diagnostics (SHOW WARNINGS, GET DIAGNOSTICS in a procedure,
	// FOUND_ROWS() in a function). USE leaves the diagnostics as they
	// were, which a rerun of the hit after it, in another database,
	// could not make (hitAcrossUse).
	if info.Kind == sqlinfo.Use {
		if err := c.hitAcrossUse(); err != nil {
			return err
		}
	}
	if c.lastHit != nil && (c.hitDiag&diagnosticsRead(sql) != 0 || execDiag || runsHiddenStatements(info, sql) || info.CallsRoutine ||
		c.foundRowsUnsure(info, sql) || c.viewsReadDiagnostics(info)) {
		if err := c.rerunLastHit(); err != nil {
			return err
		}
	}
	return c.execute(p, info, sql)
}

// lexStale reports whether a variable that decides how the server reads a
// text (sql_mode's quotes and escapes, the client's character set) may
// have changed unseen.
func (c *Session) lexStale() bool {
	return !c.s.NoSchema() && slices.ContainsFunc(c.s.StaleVars, func(n string) bool {
		return n == "sql_mode" || n == "character_set_client"
	})
}

// hitPayloadMax is the largest hit response a session keeps, to count
// its rows should a USE follow: 64 KiB. A larger one's rows are counted
// as it is served, up to tablelessRows (hitCount).
const hitPayloadMax = 64 << 10

// hitRows returns what FOUND_ROWS() is after the last hit, when it can
// be told from its response and made again by foundRowsSQL: its response
// was kept, and the server has JSON_TABLE (MariaDB 10.6, MySQL 8.0.4).
// It is the count of the rows sent: a SELECT SQL_CALC_FOUND_ROWS, whose
// count is another, is never cached.
func (c *Session) hitRows() (int, bool) {
	if !foundRowsSent(c.lastHitSQL) {
		return 0, false
	}
	v := sqlinfo.ServerVersion()
	n, ok := c.hitCount, c.hitCount >= 0
	if c.hitPayload != nil {
		n, ok = resultRows(c.hitPayload, c.s.DeprecateEOF())
	}
	if !ok || !c.tableless(n) && !(v >= 100600 || v >= 80004 && v < 100000) {
		return 0, false
	}
	return n, true
}

// foundRowsSent reports whether FOUND_ROWS() after sql, a read without
// SQL_CALC_FOUND_ROWS (which is never cached), is the count of the rows
// it sent. It is not after an OFFSET, whose skipped rows the server
// counts too, nor after a UNION, INTERSECT or EXCEPT with a LIMIT, where
// it counts the rows before the limit, nor with LIMIT ROWS EXAMINED. It
// reads the text on the safe side: such a word in a name, a string or a
// comment only has the hit run again for its count.
func foundRowsSent(sql string) bool {
	if !sqlinfo.ContainsFold(sql, "limit") {
		return true
	}
	low := strings.ToLower(sql)
	if i := strings.Index(low, "limit"); i < 0 || strings.Contains(low[i:], ",") {
		return false // LIMIT offset, count
	}
	for _, w := range []string{"offset", "union", "intersect", "except", "examined"} {
		if strings.Contains(low, w) {
			return false
		}
	}
	return true
}

// tablelessRows is the most rows foundRowsSQL reads with no table, which
// leaves the warnings of the statement before it for SHOW WARNINGS: its
// 180 KB take the server about 0.2 s, in the rare sequence that needs it
// (a hit, a statement that leaves warnings, then FOUND_ROWS()).
const tablelessRows = 10000

// tableless reports whether a UNION of n constants fits in a command the
// server accepts and within tablelessRows: foundRowsSQL(n, true) is one.
func (c *Session) tableless(n int) bool {
	return n <= tablelessRows && len("SELECT 1")+len(unionOne)*n < c.s.PacketLimit()
}

const unionOne = " UNION ALL SELECT 1"

// foundRowsSQL returns a statement that reads n rows of nothing, with no
// database and no table: after it FOUND_ROWS() is n. With tableless
// (see Session.tableless), it reads no table at all (a UNION of
// constants), and leaves the warnings as they were; without, it reads
// JSON_TABLE (MariaDB 10.6, MySQL 8.0.4), which clears them.
func foundRowsSQL(n int, tableless bool) string {
	switch {
	case n == 0:
		return "SELECT 1 FROM DUAL WHERE 0"
	case tableless:
		return "SELECT 1" + strings.Repeat(unionOne, n-1)
	}
	return "SELECT 1 FROM JSON_TABLE('[" + strings.Repeat("0,", n-1) + "0]', '$[*]' COLUMNS (i INT PATH '$')) AS mycached_found_rows"
}

// resultRows counts the rows of a stored response (a payload as
// replay reads it) of one result set. It reports false for anything
// else.
func resultRows(payload []byte, deprecateEOF bool) (int, bool) {
	return resultRowsUpTo(payload, deprecateEOF, -1)
}

// resultRowsUpTo is resultRows, which gives up (false) past most rows
// when most is not negative.
func resultRowsUpTo(payload []byte, deprecateEOF bool, most int) (int, bool) {
	if len(payload) < 2 {
		return 0, false
	}
	raw := payload[2+4*int(binary.LittleEndian.Uint16(payload)):]
	next := func() ([]byte, bool) {
		if len(raw) < 4 {
			return nil, false
		}
		n := int(raw[0]) | int(raw[1])<<8 | int(raw[2])<<16
		if len(raw) < 4+n || n == wire.MaxPayload {
			return nil, false
		}
		b := raw[4 : 4+n]
		raw = raw[4+n:]
		return b, true
	}
	head, ok := next()
	if !ok || len(head) == 0 || head[0] == mysql.OK_HEADER || head[0] == mysql.ERR_HEADER {
		return 0, false
	}
	cols, k := wire.Lenenc(head)
	if k == 0 || cols == 0 {
		return 0, false
	}
	skip := int(cols)
	if !deprecateEOF {
		skip++
	}
	for range skip {
		if _, ok := next(); !ok {
			return 0, false
		}
	}
	rows := 0
	for {
		b, ok := next()
		switch {
		case !ok || len(b) > 0 && b[0] == mysql.ERR_HEADER:
			return 0, false
		case len(b) > 0 && wire.IsTerminator(b[0], len(b)):
			if len(raw) > 0 {
				return 0, false // more result sets
			}
			return rows, true
		}
		rows++
		if most >= 0 && rows > most {
			return 0, false
		}
	}
}

// notePrepared follows the statements the session prepares by name, and
// reports whether sql executes one that may read diagnostics: one
// prepared from such a text or from a variable, or EXECUTE IMMEDIATE of
// a variable.
func (c *Session) notePrepared(sql string) bool {
	kw := sqlinfo.FirstKeyword(sql)
	if kw != "PREPARE" && kw != "EXECUTE" && kw != "DEALLOCATE" && kw != "DROP" {
		return false
	}
	f := strings.Fields(sql)
	name := func(i int) string { return preparedName(f, i) }
	switch kw {
	case "PREPARE":
		n := name(1)
		if n == "" {
			return false
		}
		fromVar := len(f) > 3 && strings.HasPrefix(f[3], "@")
		if readsDiagnostics(sql) || fromVar {
			if c.diagStmts == nil {
				c.diagStmts = map[string]bool{}
			}
			c.diagStmts[n] = true
		} else {
			delete(c.diagStmts, n)
		}
		if text := strings.Join(f[min(3, len(f)):], " "); fromVar || meta.MayHideWrites.MatchString(text) {
			if c.hideStmts == nil {
				c.hideStmts = map[string]bool{}
			}
			c.hideStmts[n] = true
		} else {
			delete(c.hideStmts, n)
		}
	case "EXECUTE":
		if name(1) == "immediate" {
			return len(f) > 2 && strings.HasPrefix(f[2], "@")
		}
		return c.diagStmts[name(1)]
	default: // DEALLOCATE PREPARE name, DROP PREPARE name
		delete(c.diagStmts, name(2))
		delete(c.hideStmts, name(2))
	}
	return false
}

// preparedName returns the statement name that field i of a PREPARE,
// EXECUTE or DEALLOCATE text names, as the server matches it, or "".
func preparedName(f []string, i int) string {
	if i >= len(f) {
		return ""
	}
	return strings.ToLower(strings.Trim(strings.TrimRight(f[i], ";"), "`"))
}

// execMayHide reports whether an EXECUTE or EXECUTE IMMEDIATE alone in
// its text may have turned sql_log_bin off and on again unseen, and
// written what no binlog shows: it runs a text that may
// (meta.MayHideWrites), or one that is a variable's or an expression's.
func (c *Session) execMayHide(sql string) bool {
	f := strings.Fields(sql)
	if len(f) < 2 {
		return true
	}
	if !strings.EqualFold(f[1], "immediate") {
		return c.hideStmts[preparedName(f, 1)]
	}
	if len(f) < 3 || f[2][0] != '\'' && f[2][0] != '"' {
		return true
	}
	return meta.MayHideWrites.MatchString(strings.Join(f[2:], " "))
}

// readsDiagnostics reports whether a statement may read what the
// session's previous statements left behind: ROW_COUNT(), FOUND_ROWS(),
// warnings and errors.
func readsDiagnostics(sql string) bool { return diagnosticsRead(sql) != 0 }

// diagnostics are what a session's statements leave behind for the next
// to read, each with a lifetime of its own on the server.
type diagnostics uint8

const (
	// diagRowCount is ROW_COUNT(), which every statement sets.
	diagRowCount diagnostics = 1 << iota
	// diagFoundRows is FOUND_ROWS(), which a SELECT or SHOW sets.
	diagFoundRows
	// diagWarnings are the warnings and errors (SHOW WARNINGS,
	// @@warning_count), which a statement replaces when it uses a table
	// or has a message of its own.
	diagWarnings
	// diagStatus is the cost of the session's last statement (SHOW
	// STATUS LIKE 'Last_query_cost'), which any statement the server runs
	// replaces. The counters that add up every statement of the session
	// (Com_select, Handler_read_key) leave its hits out, as the server's
	// other counters do: a read of them does not run the hit.
	diagStatus
	diagAll = diagRowCount | diagFoundRows | diagWarnings | diagStatus
)

// diagnosticsRead returns what of the diagnostics a statement may read.
func diagnosticsRead(sql string) diagnostics {
	var d diagnostics
	for _, w := range diagnosticWords {
		if sqlinfo.ContainsFold(sql, w.word) {
			d |= w.reads
		}
	}
	return d
}

var diagnosticWords = []struct {
	word  string
	reads diagnostics
}{
	{"row_count", diagRowCount}, {"found_rows", diagFoundRows},
	{"warning", diagWarnings}, {"error", diagWarnings}, {"diagnostics", diagAll},
	{"last_query_cost", diagStatus},
}

// ranSinceHit notes a statement the backend ran after the session's last
// hit, which the backend did not run: what of the diagnostics the
// statement left as they were is still the hit's to make, should a later
// statement read it.
func (c *Session) ranSinceHit(info *sqlinfo.Info, sql string, resp *relay.Response) {
	if (len(info.Reads) > 0 || len(info.Writes) > 0) && !resp.Failed() && resp.Warnings == 0 {
		// It opened a table, which cleared the diagnostics.
		c.s.CondsHeld = false
	}
	if c.lastHit == nil {
		return
	}
	hidden := runsHiddenStatements(info, sql) || c.runsCode(info)
	c.hitDiag &^= diagRowCount | diagStatus
	c.zeroedRowCount = resp.Kind == relay.RespOK && resp.Results <= 1 && resp.Affected == 0 && !hidden
	switch {
	case info.Kind == sqlinfo.Use:
		// USE leaves FOUND_ROWS() as it was: the hit's, to be made
		// again by a statement of as many rows; or the hit ran before
		// it.
		if c.hitFound < 0 {
			c.hitDiag &^= diagFoundRows
		}
	case foundRowsAfter(info, sql) == foundRowsKept:
	case info.Kind == sqlinfo.Select && resp.Kind == relay.RespErr:
		// A read the server refused leaves FOUND_ROWS() alone.
	default:
		// A SELECT set it; any other statement that may have was
		// preceded by the hit's rerun (see foundRowsUnsure).
		c.hitDiag &^= diagFoundRows
		c.serverFound = -1
		if info.Kind == sqlinfo.Select && resp.Kind == relay.RespResultSet && resp.Results == 1 &&
			!sqlinfo.ContainsFold(sql, "sql_calc_found_rows") {
			c.serverFound = int(resp.Rows)
		}
	}
	if hidden || resp.Failed() || resp.Warnings > 0 || len(info.Reads) > 0 || len(info.Writes) > 0 {
		c.hitDiag &^= diagWarnings
	}
	if hidden {
		c.hitDiag = 0
	}
	if c.hitDiag == 0 {
		c.forgetHit()
	}
}

// What a statement the server runs does to FOUND_ROWS().
type foundRowsEffect int

const (
	foundRowsUnsure foundRowsEffect = iota // may set it or leave it
	foundRowsKept                          // surely leaves it
	foundRowsSet                           // surely sets it
)

// foundRowsAfter says what a statement does to FOUND_ROWS(). Whatever
// runs a SELECT of a table sets it: a SELECT, a subquery in SET, DO,
// INSERT or DDL, a multi-table UPDATE or DELETE, the SHOW statements that
// read information_schema, DESCRIBE. Which do is the server's business,
// and not the same for every subquery (a constant one leaves it): what
// is not known for sure is unsure.
func foundRowsAfter(info *sqlinfo.Info, sql string) foundRowsEffect {
	kept := func(b bool) foundRowsEffect {
		if b {
			return foundRowsKept
		}
		return foundRowsUnsure
	}
	selects := sqlinfo.ContainsFold(sql, "select")
	switch info.Kind {
	case sqlinfo.Select:
		return foundRowsSet
	case sqlinfo.Begin, sqlinfo.Commit, sqlinfo.Rollback, sqlinfo.Savepoint, sqlinfo.LoadData:
		return foundRowsKept
	case sqlinfo.Set, sqlinfo.Insert, sqlinfo.Replace, sqlinfo.DDL:
		return kept(!selects)
	case sqlinfo.Update, sqlinfo.Delete:
		return kept(!selects && !sqlinfo.ContainsFold(sql, "join") && len(info.Reads) <= 1 && len(info.Writes) <= 1 &&
			(len(info.Reads) == 0 || len(info.Writes) == 0 || info.Reads[0] == info.Writes[0]))
	case sqlinfo.Call, sqlinfo.Use:
		return foundRowsUnsure
	}
	second := sqlinfo.SecondKeyword(sql)
	switch sqlinfo.FirstKeyword(sql) {
	case "SHOW":
		switch second {
		case "WARNINGS", "ERRORS", "GRANTS", "CREATE", "PROCESSLIST", "MASTER", "BINARY", "SLAVE", "REPLICA",
			"PROFILES", "PRIVILEGES", "ENGINE", "EXPLAIN":
			return foundRowsKept
		case "TABLES", "VARIABLES", "STATUS", "SESSION", "GLOBAL", "INDEX", "INDEXES", "KEYS", "DATABASES", "SCHEMAS",
			"COLUMNS", "FIELDS", "TABLE", "ENGINES", "OPEN", "TRIGGERS", "PROCEDURE", "FUNCTION", "CHARACTER",
			"COLLATION", "PLUGINS", "EVENTS", "COUNT":
			// Reads of information_schema.
			return foundRowsSet
		}
	case "DO":
		return kept(!selects)
	case "ANALYZE":
		// ANALYZE SELECT runs the SELECT; ANALYZE TABLE does not.
		switch second {
		case "TABLE", "TABLES", "LOCAL", "NO_WRITE_TO_BINLOG":
			return foundRowsKept
		}
	case "EXPLAIN", "DESC", "DESCRIBE":
		// The plan of a statement; of a table, its columns (SHOW
		// COLUMNS).
		switch second {
		case "SELECT", "UPDATE", "DELETE", "INSERT", "REPLACE", "FORMAT", "EXTENDED", "PARTITIONS":
			return foundRowsKept
		}
	case "PREPARE":
		return foundRowsKept
	case "DEALLOCATE", "DROP", "FLUSH", "CHECK", "CHECKSUM", "OPTIMIZE", "REPAIR", "HELP", "LOCK", "UNLOCK",
		"XA", "KILL", "RESET", "CACHE", "LOAD", "SIGNAL", "RESIGNAL", "GRANT", "REVOKE", "TRUNCATE", "RENAME",
		"HANDLER", "GET":
		return kept(!selects)
	}
	return foundRowsUnsure
}

// foundRowsUnsure reports a statement that may set FOUND_ROWS() or
// leave it, after a hit whose count it still is: the hit is run again
// before it, so that the server leaves what it would have.
func (c *Session) foundRowsUnsure(info *sqlinfo.Info, sql string) bool {
	return c.hitDiag&diagFoundRows != 0 && info.Kind != sqlinfo.Use && foundRowsAfter(info, sql) == foundRowsUnsure
}

// rerunLastHit runs the read last answered from the cache on the backend,
// its answer going nowhere, so that what the session's previous statement
// left behind is what it would have been without the cache.
func (c *Session) rerunLastHit() error {
	p, sql := c.lastHit, c.lastHitSQL
	n, counted := c.hitRows()
	c.forgetHit()
	w := discard()
	defer putDiscard(w)
	switch {
	case c.hitFound >= 0:
		if err := c.discardOn([]byte("\x03"+foundRowsSQL(c.hitFound, c.tableless(c.hitFound))), w); err != nil {
			return err
		}
	case c.hitDiag&diagWarnings == 0 && c.hitDiag&diagFoundRows != 0 && counted && c.tableless(n):
		// The warnings the server holds are a later statement's: the
		// hit's FOUND_ROWS() is made by a statement that leaves them.
		if err := c.discardOn([]byte("\x03"+foundRowsSQL(n, true)), w); err != nil {
			return err
		}
	default:
		if p[0] == mysql.COM_STMT_EXECUTE {
			if err := c.s.ReplayExecute(sql, p, w); err != nil {
				return err
			}
		} else if err := c.discardOn(p, w); err != nil {
			return err
		}
		if c.hitDiag&diagFoundRows == 0 && c.serverFound >= 0 && c.tableless(c.serverFound) {
			// A later SELECT's FOUND_ROWS(), which the rerun changed.
			if err := c.discardOn([]byte("\x03"+foundRowsSQL(c.serverFound, true)), w); err != nil {
				return err
			}
		}
	}
	if c.hitDiag&diagRowCount == 0 && c.zeroedRowCount {
		// ROW_COUNT() was the later statement's 0, not the hit's -1;
		// DO leaves FOUND_ROWS() and sets it to 0 again.
		return c.discardOn([]byte("\x03DO 0"), w)
	}
	return nil
}

// discardOn runs command p on the backend, its answer going to w.
func (c *Session) discardOn(p []byte, w *bufio.Writer) error {
	if err := c.s.Forward(p); err != nil {
		return err
	}
	r := relay.Relayer{S: c.s, Dst: w}
	err := r.Relay(relay.ModeResult)
	c.s.Done(&r)
	return err
}

// Prepare relays a COM_STMT_PREPARE and notes the statement's analysis on
// it. It returns the statement, or nil when the backend refused it.
func (c *Session) Prepare(p []byte) (*relay.Stmt, error) {
	if len(c.s.StaleVars) > 0 && len(p) > 1 && !c.s.NoSchema() {
		// The statement's key keeps the state it is parsed under: read
		// it first, for a statement that may be cached. The reading
		// changes the diagnostics, which a statement that is not cached,
		// such as SHOW WARNINGS or SELECT FOUND_ROWS(), may read: it is
		// prepared as it comes, and keeps no key.
		if info := c.e.Analyzer.AnalyzeIn(string(p[1:]), c.dialect()); info.Kind == sqlinfo.Select && info.Cacheable && !c.keepsConds(info) {
			if err := c.s.RefreshIdentity(); err != nil {
				return nil, err
			}
		}
	}
	known := !c.tainted && len(c.s.StaleVars) == 0
	st, err := c.s.Prepare(p)
	if st != nil {
		st.Ext = &stmtNote{
			info: c.e.Analyzer.AnalyzeIn(st.SQL, c.dialect()), db: c.s.Hello.DB,
			state: c.state.digestOf(c.s), known: known, schema: c.e.schemaGen(),
			diag: diagnosticsRead(st.SQL), keyText: sqlinfo.KeyText(st.SQL, c.dialect()),
		}
	}
	return st, err
}

// LongData handles a COM_STMT_SEND_LONG_DATA before the session relays
// it. The server reads long data by the parameter types it holds, which
// after a hit are the last ones it ran, not the hit's (relay.SyncTypes):
// in a transaction, or with autocommit off, the hit's execute runs first,
// as a read in the transaction, and the session follows the transaction
// it began or the snapshot it took. A hit made before the transaction
// began runs inside it then, and takes the snapshot that the
// transaction's first read would have taken directly (README). Not
// where a read takes shared locks (SERIALIZABLE, or a level mycached
// cannot see): a deadlock there would roll back the transaction, and the
// client would not be told.
func (c *Session) LongData(p []byte) error {
	st := c.s.Stmt(p)
	if st == nil || !relay.Behind(st) || c.s.Status&mysql.SERVER_STATUS_AUTOCOMMIT != 0 && !c.s.InTransaction() {
		return nil
	}
	note, _ := st.Ext.(*stmtNote)
	if note == nil || c.txUnknownIsolation || c.nextTxUnknown || c.isolation(c.s.InTransaction()) == "SERIALIZABLE" {
		return nil
	}
	before := c.s.Status
	c.started = time.Now()
	if err := c.s.SyncTypesInTransaction(st); err != nil {
		return err
	}
	c.ran(before, note.info)
	return nil
}

// Execute handles a COM_STMT_EXECUTE of st like Query, keyed by the
// prepared SQL and the bound parameters. Its parameter types have been
// noted (relay.NoteParamTypes).
func (c *Session) Execute(p []byte, st *relay.Stmt) error {
	defer relay.ExecuteDone(st, &c.s.Last)
	note, _ := st.Ext.(*stmtNote)
	if note == nil {
		return c.s.RelayMode(p, relay.ModeResult)
	}
	info := note.info
	c.db, c.started = note.db, time.Now()
	if c.e.cfg.Passthrough && info.Kind == sqlinfo.Select || relay.UntypedLast(st, p) {
		// Nothing is served from the cache, so the backend has seen every
		// execute and its types: relay it as it is. An execute by the
		// last statement's id without types is refused by the server,
		// and must be, through mycached too.
		return c.s.RelayMode(p, relay.ModeResult)
	}
	p = relay.WithTypes(st, p)
	if c.lastHit != nil && (c.hitDiag&note.diag != 0 || runsHiddenStatements(info, st.SQL) || info.CallsRoutine ||
		c.foundRowsUnsure(info, st.SQL) || c.viewsReadDiagnostics(info)) {
		if err := c.rerunLastHit(); err != nil {
			return err
		}
	}
	if info.Kind == sqlinfo.Select && info.Cacheable && (st.Params == 0 || st.Types != nil) {
		if !note.known {
			// Prepared under a state mycached did not know: its key
			// cannot say how the server parsed it.
			return c.relayRead(p, info, st.SQL, whyTainted)
		}
		if gen := c.e.schemaGen(); note.schema != gen {
			// DDL since the server prepared it: the server prepares it
			// again for this execute if what it reads changed, and says
			// so (METADATA_CHANGED), so that the client reads the new
			// columns. A hit would not.
			err := c.relayRead(p, info, st.SQL, whyPreparedBeforeDDL)
			if err == nil {
				note.schema = gen
			}
			return err
		}
		if relay.FallsBehind(st, p) {
			// Too large to run again before long data: the server
			// runs it, and holds its types, as it would directly.
			return c.relayRead(p, info, st.SQL, whyTypesBehind)
		}
		err := c.read(p, info, st.SQL, st)
		if c.hitServed {
			relay.AnsweredByCache(st, p)
		}
		return err
	}
	var params []wire.Param
	if info.Point != nil || info.Insert != nil {
		params = relay.ExecuteParams(st, p)
	}
	return c.executeParams(p, info, st.SQL, params)
}

// relayRead relays a cacheable read that must not use the cache, for
// reason why, and follows what it did to the session as read does.
func (c *Session) relayRead(p []byte, info *sqlinfo.Info, sql, why string) error {
	c.e.Stats.bypass(why)
	c.e.Queries.note(info.Digest, why, 0)
	before := c.s.Status
	err := c.s.RelayMode(p, relay.ModeResult)
	c.ran(before, info)
	c.ranSinceHit(info, sql, &c.s.Last)
	return err
}

// read handles a cacheable read, and follows the transaction it may have
// begun or joined on the server.
func (c *Session) read(p []byte, info *sqlinfo.Info, sql string, st *relay.Stmt) error {
	before := c.s.Status
	c.hitServed = false
	err := c.cacheRead(p, info, sql, st)
	if !c.hitServed {
		c.relayedRead(before, info, sql, st)
	}
	return err
}

// relayedRead follows what a cacheable read the server ran did to the
// session, whose status was before before it.
func (c *Session) relayedRead(before uint16, info *sqlinfo.Info, sql string, st *relay.Stmt) {
	c.ran(before, info)
	c.ranSinceHit(info, sql, &c.s.Last)
	_, lqt := c.s.Last.Tracked.Vars["long_query_time"]
	_, lsqt := c.s.Last.Tracked.Vars["log_slow_query_time"]
	if (lqt || lsqt) && st == nil && sqlinfo.FirstKeyword(sql) == "SET" {
		// SET STATEMENT long_query_time = ... FOR a read: the server
		// reports the value the read ran with, not the session's,
		// which is read again.
		c.s.StaleVars = append(c.s.StaleVars, "long_query_time")
	}
}

// unjudgedHook returns what tells, of the shape of a text read whose
// command is p (of text sql), whether it is enough for its read: a read of a rejected
// shape its admission does not judge (see cacheRead), which is relayed
// at once, and pays no more than a passthrough, a probe of the exact
// memo and a scan of its text.
// Whatever else would change the read's path or its count takes the full
// analysis: a hit to rerun, stored code the read runs, a text read by a
// changed sql_mode, a state to read again, any reason to bypass the
// cache. A probe it draws is kept for cacheRead. It is nil when the
// session's state already says the read takes the full path.
func (c *Session) unjudgedHook(p []byte, sql string) func(*sqlinfo.Info) bool {
	c.probed, c.unjudgedStat = false, nil
	if c.lastHit != nil || c.s.Dead() || c.lexStale() {
		return nil
	}
	c.unjudgedP, c.unjudgedSQL = p, sql
	if c.unjudgedFn == nil {
		c.unjudgedFn = c.unjudged
	}
	return c.unjudgedFn
}

// unjudged is unjudgedHook's test of a shape, for the command
// c.unjudgedP. It leaves the shape's counts in c.unjudgedStat.
func (c *Session) unjudged(shape *sqlinfo.Info) bool {
	p := c.unjudgedP
	if shape.Kind != sqlinfo.Select || !shape.Cacheable {
		return false
	}
	// The shape's admission first: it is all an admitted shape's reads
	// pay here.
	qs := c.e.Queries.stat(shape.Digest)
	adm := qs.admission()
	if !adm.rejected() || adm.policyForces.Load() || c.sampled(p, c.unjudgedSQL, nil) ||
		c.runsCode(shape) || c.keepsConds(shape) || c.bypassReason(shape, nil, p) != "" {
		return false
	}
	if adm.probe() {
		c.probed = true
		return false
	}
	c.unjudgedStat = qs
	return true
}

// ran follows the session's transaction across a read the server ran.
func (c *Session) ran(before uint16, info *sqlinfo.Info) {
	wasIn := before&mysql.SERVER_STATUS_IN_TRANS != 0
	isIn := c.s.InTransaction()
	stored := c.runsStoredCode(info)
	switch {
	case wasIn && !isIn:
		c.endTransaction()
	case isIn && !wasIn:
		c.beginTransaction()
	case !isIn && (c.nextTxUnknown || stored) && c.endsOneShot(info, &c.s.Last):
		// It ran as a transaction of its own, which took a one-shot
		// isolation level, and ended one its stored code set.
		c.nextTxUnknown, stored = false, false
	}
	if stored {
		c.nextTxUnknown = true
	}
	if isIn {
		c.tookSnapshot()
	}
}

// runsStoredCode reports whether a statement ran stored code: a stored
// function it calls, a function a view it reads calls, a trigger of a
// table it writes. Such code may have run an unscoped SET
// @@tx_isolation, which sets the next transaction's level as SET
// TRANSACTION does, and which no tracker reports. The server forgets it
// at the end of the transaction it ran in, when that is the statement's
// own (endsOneShot).
func (c *Session) runsStoredCode(info *sqlinfo.Info) bool {
	return info.CallsRoutine || c.runsCode(info)
}

// runsHiddenStatements reports whether a statement may run statements its
// text does not show: a procedure, EXECUTE (IMMEDIATE), a compound
// statement, a multi-statement text, a text that did not parse.
func runsHiddenStatements(info *sqlinfo.Info, sql string) bool {
	if info.Kind == sqlinfo.Call || info.ParseError || info.WhyNot == "multi-statement" {
		return true
	}
	switch sqlinfo.FirstKeyword(sql) {
	case "EXECUTE", "IF", "CASE", "LOOP", "WHILE", "REPEAT", "FOR":
		return true
	case "BEGIN":
		return info.Kind != sqlinfo.Begin
	}
	return false
}

// refusedRead reports a SELECT the parser refused (MariaDB's own syntax:
// CAST(x AS INT), LIMIT ROWS EXAMINED) that calls no function but the
// server's, or a refused SHOW WARNINGS or SHOW ERRORS (with LIMIT), that
// the server answered with one result: a statement of its own, which ran
// no hidden code and changed nothing of the session.
func refusedRead(info *sqlinfo.Info, sql string, resp *relay.Response) bool {
	if !info.ParseError || info.WhyNot != "parse-error" || info.CallsRoutine ||
		resp.Results > 1 || resp.Status&mysql.SERVER_MORE_RESULTS_EXISTS != 0 {
		return false
	}
	switch info.Kind {
	case sqlinfo.Select:
		return true
	case sqlinfo.Show:
		// SHOW WARNINGS LIMIT 1, SHOW COUNT(*) ERRORS: no function runs.
		switch sqlinfo.SecondKeyword(sql) {
		case "WARNINGS", "ERRORS", "COUNT":
			return true
		}
	}
	return false
}

// parsedNothing reports a response that is the server's syntax error and
// nothing before it: no statement ran.
func parsedNothing(resp *relay.Response) bool {
	return resp.Kind == relay.RespErr && resp.Results <= 1 &&
		(resp.ErrCode == mysql.ER_PARSE_ERROR || resp.ErrCode == mysql.ER_SYNTAX_ERROR)
}

// opensTables reports whether a statement opens a table, and so, run on
// its own, is the transaction a one-shot isolation level is for. One that
// opens none (DO 1, SELECT @@tx_isolation, a driver's ping) leaves the
// level for the next; so, to be safe, does a read of information_schema
// or performance_schema alone.
func opensTables(info *sqlinfo.Info) bool {
	for _, ts := range [][]sqlinfo.Table{info.Reads, info.Writes} {
		for _, t := range ts {
			if !strings.EqualFold(t.DB, "information_schema") && !strings.EqualFold(t.DB, "performance_schema") {
				return true
			}
		}
	}
	return false
}

// endsOneShot reports whether a statement that ran on its own, outside a
// transaction, was the transaction a one-shot isolation level is for:
// one that succeeded, and read or wrote a table of a transactional
// engine. One that failed, or used no such table (MyISAM, Aria, MEMORY
// or SEQUENCE tables, information_schema), or showed metadata, leaves
// the level for the next; so, to be safe, does one that used only a
// view, a temporary table or a table not learned yet. Without the
// backend's metadata, a statement that opens a table is taken to.
func (c *Session) endsOneShot(info *sqlinfo.Info, resp *relay.Response) bool {
	if resp.Failed() || !opensTables(info) {
		return false
	}
	switch info.Kind {
	case sqlinfo.Select, sqlinfo.Insert, sqlinfo.Update, sqlinfo.Delete, sqlinfo.Replace, sqlinfo.LoadData:
	default:
		return false
	}
	m := c.e.meta()
	if m == nil {
		return true
	}
	for _, ts := range [][]sqlinfo.Table{info.Reads, info.Writes} {
		for _, t := range sqlinfo.Qualify(ts, c.db) {
			if _, temp := c.temps[t.String()]; temp {
				continue
			}
			if tm := m.Known(c.e.namer().Table(t.DB, t.Name)); tm != nil && tm.Kind == meta.Base && tm.Transactional {
				return true
			}
		}
	}
	return false
}

// beginTransaction notes that a transaction began with the statement
// just run.
func (c *Session) beginTransaction() {
	c.txStart = c.started
	c.txUnknownIsolation = c.nextTxUnknown
	c.nextTxUnknown = false
	// Its isolation is the session's now; a SET SESSION TRANSACTION inside
	// it is for the next one.
	c.txIsolation = c.sessionIsolation()
}

// execute relays a statement that is not served from the cache, and then
// does what its success means: session state changes, and invalidation.
func (c *Session) execute(p []byte, info *sqlinfo.Info, sql string) error {
	return c.executeParams(p, info, sql, nil)
}

// executeParams is execute for a statement with bound parameters.
func (c *Session) executeParams(p []byte, info *sqlinfo.Info, sql string, params []wire.Param) error {
	if !slices.Contains(c.s.StaleVars, "sql_log_bin") {
		c.logBinUnseen = false
	}
	if !info.CallsRoutine && info.Kind != sqlinfo.Call && c.viewsRunCode(info) {
		// A view it reads calls a stored function, which may write: what
		// it wrote is invalidated, and the session reads it, as after
		// SELECT f().
		ran := *info
		ran.CallsRoutine = true
		info = &ran
	}
	before, lastGTID := c.s.Status, c.s.Vars["last_gtid"]
	c.callFrom = nil
	if f := c.e.follower.Load(); f != nil && (info.Kind == sqlinfo.Call || info.CallsRoutine || c.coWritesUnseen(info) ||
		(info.Kind == sqlinfo.Commit && len(c.txUnseen) > 0) || executesOne(sql)) {
		// Where the follower stands before a statement that runs stored
		// code, or may: see callWrites.
		c.callFrom = (*f).AppliedSeqs()
	}
	forward := c.s.Forward
	if c.logBinUnseen && mayWrite(info) && !relay.Inert(p) {
		// A procedure or EXECUTE may have turned sql_log_bin off, which
		// no tracker reports: whether the binlog will show this write is
		// read right before it, in the same round trip. A DO of
		// constants writes nothing, and leaves the warnings the reading
		// would clear.
		forward = c.s.RefreshVarsAndForward
	}
	flying := c.inFlightTables(info)
	c.e.inFlight.begin(flying)
	defer c.e.inFlight.end(flying)
	if err := forward(p); err != nil {
		return err
	}
	if !slices.Contains(c.s.StaleVars, "sql_log_bin") {
		c.logBinUnseen = false // read now
	}
	c.logBinStale = c.logBinUnseen
	r := relay.Relayer{S: c.s, NoFlush: true}
	err := r.Relay(relay.ModeResult)
	c.s.Done(&r)
	// The invalidation happens even when the relay failed half-way: the
	// statement may have run.
	c.after(info, sql, &r.Resp, before, params, lastGTID)
	if err != nil {
		return err
	}
	return c.s.Flush()
}

// BulkExecute handles a COM_STMT_BULK_EXECUTE of st: the write it
// prepared, for rows of parameters the server runs as one statement.
// They are not decoded: what it writes is invalidated as a whole table
// (no row generations, no inserted keys), and the statement's parameter
// types are unknown after it (relay.ForgetTypes).
func (c *Session) BulkExecute(p []byte, st *relay.Stmt) error {
	note, _ := st.Ext.(*stmtNote)
	if note == nil {
		return c.s.RelayMode(p, relay.ModeResult)
	}
	info := *note.info
	info.Point, info.Insert = nil, nil
	c.db, c.started = note.db, time.Now()
	return c.executeParams(p, &info, st.SQL, nil)
}

// decides are the variables in no key whose values mycached reads all
// the same: to know what ids a statement inserted, how COMMIT ends a
// transaction, and a hit's status.
var decides = map[string]bool{
	"completion_type": true, "auto_increment_increment": true, "long_query_time": true,
}

func isolationVar(name string) bool { return name == "tx_isolation" || name == "transaction_isolation" }

// varsUnknown reports whether any of names has been set, since it was
// last read, in a way no tracker reported.
func (c *Session) varsUnknown(names ...string) bool {
	for _, n := range names {
		if slices.Contains(c.s.StaleVars, n) {
			return true
		}
	}
	return false
}

// noteUntracked marks the session variables of sets that can change a
// read and that the trackers did not report (tracked holds those they
// did) to be read again from the server before the next cacheable read.
func (c *Session) noteUntracked(sets []sqlinfo.SetVar, tracked map[string]string) {
	for _, v := range sets {
		name := v.Name
		if name == "log_slow_query_time" {
			name = "long_query_time" // its other name
		}
		if _, seen := tracked[name]; name == "sql_log_bin" && !seen && !v.User && !v.Global {
			// SET @@sql_log_bin = 0, which no tracker reports: whether
			// the binlog shows the session's next write (a CALL's, a
			// trigger's, which only the follower sees) is read right
			// before it.
			c.logBinUnseen = true
			if !slices.Contains(c.s.StaleVars, name) {
				c.s.StaleVars = append(c.s.StaleVars, name)
			}
			continue
		}
		if v.User || v.Global || digestFree[name] && !decides[name] || name == "role" || name == "transaction" {
			continue
		}
		if name == sqlinfo.ResultsCollation {
			// No variable shows it, nor any tracker: a read of the
			// variables has it, in its columns' definitions.
			name = "character_set_results"
		} else if _, ok := tracked[name]; ok && name != "timestamp" {
			// (MariaDB reports SET timestamp = DEFAULT, of a timestamp
			// that was set, with the value it had: it is read again.)
			continue
		}
		if !slices.Contains(c.s.StaleVars, name) {
			c.s.StaleVars = append(c.s.StaleVars, name)
		}
	}
}

// after applies what a relayed statement did to the session and the cache.
func (c *Session) after(info *sqlinfo.Info, sql string, resp *relay.Response, before uint16, params []wire.Param, lastGTID string) {
	ok := !resp.Failed()
	c.ranSinceHit(info, sql, resp)
	if len(info.Sets) > 0 {
		// SET statements, alone or anywhere in a multi-statement text
		// (where some may have run before one failed).
		multi := info.WhyNot == "multi-statement"
		if ok && !c.s.Track && !multi {
			c.state.apply(info.Sets)
			for _, v := range info.Sets {
				if (decides[v.Name] || isolationVar(v.Name)) && !v.User && !v.Global {
					// Without the trackers nothing reads it back.
					c.tainted = true
				}
			}
		}
		if c.s.Track && (ok || multi) {
			c.noteUntracked(info.Sets, resp.Tracked.Vars)
		}
		for _, v := range info.Sets {
			switch v.Name {
			case "role":
				c.s.IdentityStale = true
			case "transaction":
				// SET TRANSACTION ISOLATION LEVEL for the next transaction
				// alone: no tracker reports it.
				c.nextTxUnknown = true
			default:
				// Unscoped, SET @@tx_isolation is SET TRANSACTION: the
				// session's level stays, and no tracker reports the
				// change. A session that does not track reports nothing.
				if _, seen := resp.Tracked.Vars[v.Name]; isolationVar(v.Name) && !seen && !v.Global && !v.User {
					c.nextTxUnknown = true
				}
			}
		}
	}
	oneRead := refusedRead(info, sql, resp)
	if hidesSets(info) && !oneRead || c.runsCode(info) {
		c.hiddenCodeRan()
	}
	if c.runsStoredCode(info) && !oneRead {
		c.nextTxUnknown = true
	}
	if runsHiddenStatements(info, sql) && !oneRead && !parsedNothing(resp) && !c.namedNothing(info, sql, resp) {
		// It may have run SET TRANSACTION for the next transaction, or
		// SET @@sql_log_bin (stored functions and triggers may not, but
		// may run SET @@tx_isolation: runsStoredCode).
		c.nextTxUnknown = true
		if c.s.Track {
			c.s.MarkVarsStale()
			c.logBinUnseen = true
		}
	}
	if info.Kind == sqlinfo.DDL {
		// ALTER TABLE tmp RENAME TO t, of a temporary table made unseen:
		// what was found of a name may have changed.
		clear(c.tempsChecked)
		if ok && !info.Temporary {
			// What a shape reads (SELECT *, a view) may have changed.
			c.e.ddlSeen.Add(1)
		}
	}
	if loadsRoutine(info, sql) {
		// Read again before the next cacheable read, not now: a read of
		// mycached's own would take the statement's warnings from the
		// client (SHOW CREATE PROCEDURE of a routine that no longer
		// parses, say).
		c.s.IdentityStale = true
	}
	if ok && info.Kind == sqlinfo.Use || resp.Tracked.SchemaMoved || c.s.IdentityStale && setsRole(info) {
		// The server fixed the session's privileges on its database (USE)
		// or its global ones (SET ROLE) just now: the grants are read
		// before the client has the answer, so that they are those in
		// force then, not after a REVOKE that follows. A failure leaves
		// them stale, read again before the next cacheable read. The
		// server also reports the schema, unchanged, after statements
		// that use none (CREATE USER after a read of mysql.user, a CALL
		// of a procedure of another database): that reading would take
		// the statement's warnings from the client, so it is made only
		// for a schema that moved. A USE of the same database changes
		// no grant.
		c.s.IdentityStale, c.s.GrantsTurn = true, relay.TurnUse
		switch {
		case setsRole(info) && ok:
			c.s.GrantsTurn = relay.TurnRole
		case setsRole(info):
			c.s.GrantsTurn = relay.TurnUnknown // it may have run, or not
		}
		switch {
		case resp.Tracked.SchemaMoved && c.s.Hello.DB == "" && resp.Warnings > 0 && !setsRole(info):
			// The session's database is gone (DROP DATABASE, here or
			// in a procedure): no privilege is fixed on a database,
			// and the grants are read before the next cacheable read,
			// not now, which would take the statement's notes from the
			// client.
		case ok && resp.Kind == relay.RespOK:
			_ = c.s.RefreshIdentityAfterOK()
		default:
			_ = c.s.RefreshIdentity()
		}
	}
	switch info.Kind {
	case sqlinfo.Use:
		if ok && !c.s.Track {
			c.s.SetDB(info.UseDB)
		}
	case sqlinfo.Call:
		if !c.s.Track {
			// A procedure can change session variables or the database
			// we cannot see; this session stops caching rather than guess.
			c.tainted = true
		}
	}
	if info.WhyNot == "multi-statement" && !c.s.Track {
		c.tainted = true
	}
	if resp.Tracked.Unseen && unseenMatters(info) {
		// The state changed in a way no tracker shows, from a statement
		// whose effect cannot be read from its text (or from a trigger):
		// a temporary table may shadow a real one now, and the roles or
		// variables may have changed.
		c.tempsMayHide()
		c.s.IdentityStale = true
		if c.s.Track {
			c.s.MarkVarsStale()
		}
	}
	switch {
	case info.LocksTables:
		// Under table locks the server refuses reads of other tables;
		// the cache must not answer them. A lock statement that failed
		// may have released the locks held before, or not: the session
		// is taken to hold some.
		c.lockedTables = true
	case info.UnlocksTables && ok:
		c.lockedTables = false
	}
	if info.Temporary && ok {
		c.noteTemporary(info)
	} else if info.Kind == sqlinfo.DDL && ok && c.namesTemporary(info.Writes) {
		// ALTER TABLE tmp RENAME TO t, RENAME TABLE tmp TO t: the new name
		// is a temporary table of the session now.
		for _, t := range sqlinfo.Qualify(info.Writes, c.db) {
			c.temps[t.String()] = struct{}{}
		}
	}
	if info.MayWrite && !(c.refusedBeforeRunning(info, resp) && !runsRoutines(info, sql) || c.namedNothing(info, sql, resp)) {
		routine, known := c.callWrites(info, sql, resp, lastGTID)
		if !known && c.callFrom != nil && info.Kind != sqlinfo.Call && !info.CallsRoutine {
			// A first write whose triggers' tables are unknown, and the
			// follower late: a trigger may write any database.
			routine, known = []string{deps.Global}, true
		}
		c.invalidate(info, sql, resp, params, routine, known)
	}
	if info.Kind == sqlinfo.Commit && len(c.txUnseen) > 0 && c.callFrom != nil {
		// What the triggers of the transaction's first writes wrote.
		if ds, known := c.callWrites(info, sql, resp, lastGTID); known {
			c.addTxDeps(ds)
			c.txUnseen = c.txUnseen[:0]
		}
	}
	if info.CallsRoutine && !info.MayWrite && c.e.follower.Load() != nil {
		// A stored function's writes: bumped like a CALL's when that can
		// be done; otherwise other sessions see them when the follower
		// applies them, and this one waits for that (noteOwnWrite).
		if ds, ok := c.callWrites(info, sql, resp, lastGTID); ok && len(ds) > 0 {
			c.e.Store.Bump(context.Background(), ds)
			c.e.Stats.invalidations.Add(uint64(len(ds)))
		} else if !ok && c.unlogged(sql, resp) && !c.refusedBeforeRunning(info, resp) {
			// What it wrote is in no binlog: no follower will apply it.
			ds := []string{deps.Global, deps.Unlogged}
			if c.s.InTransaction() {
				c.txWrote = true
				c.addTxDeps(ds)
			}
			// In a transaction too: what it wrote to tables that are
			// not transactional, others see now.
			c.e.Store.Bump(context.Background(), ds)
			c.e.Stats.invalidations.Add(uint64(len(ds)))
		} else if !ok && !c.refusedBeforeRunning(info, resp) {
			// The follower could not say in time what it wrote (it is
			// late, the state was not seen, or the writes are not
			// committed yet).
			if c.s.InTransaction() {
				// The COMMIT waits for the follower, and bumps what
				// it applied, or else everything.
				if !slices.Contains(c.txUnseen, deps.Global) {
					c.txUnseen = append(c.txUnseen, deps.Global)
				}
				if resp.Tracked.Unseen || c.s.Vars["last_gtid"] != lastGTID {
					// It committed some of it already: writes to
					// non-transactional tables, which others see now.
					c.e.Store.Bump(context.Background(), []string{deps.Global})
					c.e.Stats.invalidations.Inc()
				}
			} else {
				// Bumped as with no follower, as a CALL's would be.
				c.routineRan(lastGTID, resp.Tracked.Unseen)
			}
		}
	}
	if c.e.follower.Load() != nil && !c.refusedBeforeRunning(info, resp) {
		c.noteOwnWrite(lastGTID, info, sql)
	} else if info.CallsRoutine && !c.refusedBeforeRunning(info, resp) {
		c.routineRan(lastGTID, resp.Tracked.Unseen)
	}
	c.transition(info, sql, before, resp)
	if (info.CallsRoutine || info.ParseError) && c.s.InTransaction() {
		// A stored function may have written: the transaction's reads
		// must not store what it has not committed.
		c.txWrote = true
	}
}

// noteOwnWrite notes a write the session made through this sidecar,
// whose triggers, cascades and routines may have written what its text
// does not say: the follower bumps that when it applies the write, and
// until then the session's reads go to the server, so that it sees its
// own writes. The server reports in @@last_gtid the GTID of each
// transaction the session commits to the binlog: a statement after which
// it changed (prev is its value before) is the write waited for. With no
// trackers, a statement that may have written waits for the follower to
// be fresh as of now.
func (c *Session) noteOwnWrite(prev string, info *sqlinfo.Info, sql string) {
	if !c.s.Track {
		mayWrite := info.MayWrite || info.ParseError || info.Kind == sqlinfo.Commit || runsRoutines(info, sql)
		if mayWrite && !c.s.InTransaction() {
			c.ownWrite, c.ownWriteAt = "", time.Now()
		}
		return
	}
	if cur := c.s.Vars["last_gtid"]; cur != prev && cur != "" {
		c.ownWrite, c.ownWriteAt = cur, time.Time{}
	}
}

// ownWritePending reports whether the session's last write through this
// sidecar is still to be applied by the follower.
func (c *Session) ownWritePending() bool {
	if c.ownWrite == "" && c.ownWriteAt.IsZero() {
		return false
	}
	f := c.e.follower.Load()
	switch {
	case f == nil:
	case c.ownWrite != "" && !(*f).Applied(c.ownWrite):
		return true
	case !c.ownWriteAt.IsZero() && (*f).FreshAsOf().Before(c.ownWriteAt):
		return true
	}
	c.ownWrite, c.ownWriteAt = "", time.Time{}
	return false
}

// refusedBeforeRunning reports whether the server refused a statement
// before running any of it: its first answer is an error the server
// raises before it executes anything (syntax, unknown table or column,
// access denied). Nothing changed, so there is nothing to invalidate: a
// typo does not flush the fleet's cache.
//
// A trigger may raise the same errors after the statement has written
// rows: an InnoDB table's statement is rolled back, a MyISAM table's is
// not. Only a syntax error is surely raised before anything ran, or an
// error of a statement whose every table is known to be transactional.
func (c *Session) refusedBeforeRunning(info *sqlinfo.Info, resp *relay.Response) bool {
	if resp.Kind != relay.RespErr {
		return false
	}
	switch resp.ErrCode {
	case mysql.ER_PARSE_ERROR, mysql.ER_SYNTAX_ERROR:
		return true
	case mysql.ER_NO_SUCH_TABLE, mysql.ER_BAD_FIELD_ERROR,
		mysql.ER_BAD_DB_ERROR, mysql.ER_NO_DB_ERROR, mysql.ER_TABLEACCESS_DENIED_ERROR,
		mysql.ER_COLUMNACCESS_DENIED_ERROR, mysql.ER_DBACCESS_DENIED_ERROR, mysql.ER_ACCESS_DENIED_ERROR,
		mysql.ER_SPECIFIC_ACCESS_DENIED_ERROR, mysql.ER_UNKNOWN_STMT_HANDLER:
		return c.allTransactional(info)
	}
	return false
}

// executesOne reports an EXECUTE or EXECUTE IMMEDIATE alone in its text:
// like a CALL, it runs statements its text does not show, and what they
// committed is told by the session's last GTID and the follower. A ';'
// anywhere, in a string too, may end it where the server reads another
// statement after it (NO_BACKSLASH_ESCAPES, ANSI_QUOTES).
func executesOne(sql string) bool {
	return sqlinfo.FirstKeyword(sql) == "EXECUTE" && !strings.Contains(strings.TrimRight(sql, "; \t\r\n"), ";")
}

// namedNothing reports a CALL of a procedure, or an EXECUTE of a
// prepared statement, that the server refused because what it names does
// not exist: nothing ran. The error must name what the statement names;
// one that names another (a procedure the called one calls, a statement
// it executes) came after the code had run, and may follow its writes.
func (c *Session) namedNothing(info *sqlinfo.Info, sql string, resp *relay.Response) bool {
	switch {
	case resp.ErrCode == mysql.ER_SP_DOES_NOT_EXIST && info.Kind == sqlinfo.Call && info.Procedure != nil:
		db := info.Procedure.DB
		if db == "" {
			db = c.db
		}
		return db != "" && strings.EqualFold(resp.ErrMsg, "PROCEDURE "+db+"."+info.Procedure.Name+" does not exist")
	case resp.ErrCode == mysql.ER_UNKNOWN_STMT_HANDLER && sqlinfo.FirstKeyword(sql) == "EXECUTE":
		name := sqlinfo.SecondKeyword(sql)
		return name != "" && name != "IMMEDIATE" &&
			strings.EqualFold(resp.ErrMsg, "Unknown prepared statement handler ("+name+") given to EXECUTE")
	}
	return false
}

// allTransactional reports whether every table info writes is known to
// be transactional; a table that does not exist counts, as nothing can
// have written it.
func (c *Session) allTransactional(info *sqlinfo.Info) bool {
	if info.Unmapped {
		// It would bump everything: as before, for a refusal of one.
		return true
	}
	if c.e.meta() == nil {
		return false
	}
	for _, t := range sqlinfo.Qualify(info.Writes, c.db) {
		m, err := c.e.meta().Table(context.Background(), t.DB, t.Name)
		if errors.Is(err, meta.ErrNoTable) {
			continue
		}
		if err != nil || m.Kind != meta.Base || !m.Transactional {
			return false
		}
	}
	return true
}

// runsRoutines reports whether a statement may run stored code, which
// may write before it fails.
func runsRoutines(info *sqlinfo.Info, sql string) bool {
	return info.Kind == sqlinfo.Call || info.CallsRoutine || sqlinfo.FirstKeyword(sql) == "EXECUTE"
}

// hidesSets reports whether a statement may have set session variables
// or roles that neither its text nor the server's reports show (MariaDB
// reports neither an unscoped SET @@name nor a SET ROLE run by stored
// code): a multi-statement text, a text the parse cannot read, or one
// that runs SQL the parse does not see (EXECUTE, EXECUTE IMMEDIATE, a
// procedure, a stored function, which no cached read calls), or a read
// run by SET STATEMENT, whose variables the server may report as they
// were while it ran. A DDL statement whose writes are database-wide (a
// view, a routine, a database) runs none: it stores code, and sets
// nothing.
func hidesSets(info *sqlinfo.Info) bool {
	return info.ParseError || info.WhyNot == "multi-statement" || info.WhyNot == sqlinfo.WhySetStatement ||
		info.Kind == sqlinfo.Call || (info.Unmapped && info.Kind != sqlinfo.DDL) || info.CallsRoutine
}

// unseenMatters reports whether a state change no tracker shows may
// matter to cached reads after a statement like info: one that might have
// created a temporary table or changed the roles. User variables,
// prepared statements and the temporary tables mycached parses do not.
func unseenMatters(info *sqlinfo.Info) bool {
	if info.CallsRoutine {
		// A stored function run by any statement (SELECT f(), DO f(),
		// SET @x = f(), INSERT ... VALUES (f())) may have done anything
		// a procedure may.
		return true
	}
	switch info.Kind {
	case sqlinfo.Insert, sqlinfo.Update, sqlinfo.Delete, sqlinfo.Replace:
		// Triggers run stored code.
		return true
	case sqlinfo.Select, sqlinfo.Show:
		return info.WhyNot == "multi-statement" || info.ParseError
	case sqlinfo.Set:
		return info.ParseError
	case sqlinfo.DDL:
		return !info.Temporary && info.ParseError
	case sqlinfo.Other:
		return info.Unmapped // EXECUTE, EXECUTE IMMEDIATE and anything unknown
	}
	return info.Kind == sqlinfo.Call || info.ParseError
}

// transition follows the session's transactions: it bumps again what an
// ended one wrote, however it ended (COMMIT, ROLLBACK, COMMIT AND CHAIN,
// a BEGIN or DDL that commits implicitly, SET autocommit=1, LOCK TABLES),
// and notes when a new one begins. A statement that may have committed
// and begun anew within itself (a procedure, a multi-statement text,
// EXECUTE of anything) bumps what the transaction wrote so far too,
// without forgetting it.
func (c *Session) transition(info *sqlinfo.Info, sql string, before uint16, resp *relay.Response) {
	ok := !resp.Failed()
	wasIn := before&mysql.SERVER_STATUS_IN_TRANS != 0
	isIn := c.s.InTransaction()
	// The statements after the first in a text of several, which the
	// first's kind does not tell of.
	hidden := info.WhyNot == "multi-statement"
	switch info.Kind {
	case sqlinfo.Begin, sqlinfo.Commit, sqlinfo.Rollback:
		if c.txUnknownIsolation && info.Kind != sqlinfo.Begin && c.chains(sql) {
			// The chained transaction has the ended one's isolation.
			c.nextTxUnknown = true
		}
		if hidden && isIn {
			// The statements after it in the text may have written in
			// the transaction it began, and read in it: what was
			// written is bumped now and kept for the transaction's end,
			// with what the session knows of it.
			c.bumpTx()
			if !wasIn {
				c.beginTransaction()
			}
			c.tookSnapshot()
			if info.Kind == sqlinfo.Begin && sqlinfo.FirstKeyword(sql) == "XA" {
				c.xa = true
			}
			return
		}
		c.endTransaction()
		wasIn = false
		if info.Kind == sqlinfo.Begin && ok && sqlinfo.FirstKeyword(sql) == "XA" {
			c.xa = true
		}
	default:
		switch {
		case wasIn && !isIn:
			c.endTransaction()
		case isIn && mayCommit(info):
			c.bumpTx()
		}
	}
	if isIn && !wasIn {
		c.beginTransaction()
	}
	switch {
	case !isIn && !wasIn && c.nextTxUnknown && !runsHiddenStatements(info, sql) && c.endsOneShot(info, resp):
		// A statement that ran as a transaction of its own took a
		// one-shot isolation level.
		c.nextTxUnknown = false
	case isIn && (hidden || takesSnapshot(info, sql)):
		c.tookSnapshot()
	}
}

// mayWrite reports whether a statement may write a table: anything but
// a read, a SET or a USE that calls no stored function.
func mayWrite(info *sqlinfo.Info) bool {
	switch info.Kind {
	case sqlinfo.Select, sqlinfo.Show, sqlinfo.Set, sqlinfo.Use:
		return info.CallsRoutine
	}
	return true
}

// chains reports whether a COMMIT or ROLLBACK starts a new transaction
// with the same characteristics: AND CHAIN, or completion_type CHAIN
// without AND NO CHAIN.
func (c *Session) chains(sql string) bool {
	if sqlinfo.ContainsFold(sql, "no chain") {
		return false
	}
	ct := c.s.Vars["completion_type"]
	return c.varsUnknown("completion_type") || sqlinfo.ContainsFold(sql, "chain") || strings.EqualFold(ct, "CHAIN") || ct == "1"
}

// mayCommit reports whether a statement may commit a transaction and
// begin another in one go, which the session's status before and after
// cannot show.
func mayCommit(info *sqlinfo.Info) bool {
	if info.ParseError || info.WhyNot == "multi-statement" {
		return true
	}
	switch info.Kind {
	case sqlinfo.Select, sqlinfo.Show, sqlinfo.Insert, sqlinfo.Update, sqlinfo.Delete,
		sqlinfo.Replace, sqlinfo.Set, sqlinfo.Use, sqlinfo.Savepoint:
		return false
	}
	return true
}

// invalidate bumps the generations of everything a write may have changed.
//
// Inside a transaction the bumps are remembered, and bumped (again) when
// it ends: a reader could otherwise fill from pre-commit data under the
// post-write generation. A write whose every table keeps its changes
// invisible until COMMIT (InnoDB) is not bumped at all until then: no
// other session can see it before, and this session's own reads bypass
// the cache once its transaction has written.
func (c *Session) invalidate(info *sqlinfo.Info, sql string, resp *relay.Response, params []wire.Param, routine []string, routineKnown bool) {
	e := c.e
	ds := make([]string, 0, len(info.Writes)+2)
	tables := make([]string, 0, len(info.Writes))
	written := sqlinfo.Qualify(info.Writes, c.db)
	for _, t := range written {
		ds = append(ds, c.writeDeps(info, t, resp, params)...)
		tables = append(tables, t.String())
	}
	if routineKnown {
		ds = append(ds, routine...)
	} else if info.Unmapped {
		ds = c.unmappedDeps(ds, info)
		if info.Kind != sqlinfo.Call && e.meta() != nil {
			// It may have been DDL mycached could not read: what it knows
			// of keys, views and foreign keys is no longer trusted.
			e.meta().ForgetAll()
		}
	}
	extra := e.Policy.Invalidate(&cachepolicy.Write{Tables: tables, Kind: info.Kind.String(), SQL: sql, DB: c.db, User: c.user()})
	for _, t := range extra {
		if t == cachepolicy.Everything {
			ds = append(ds, deps.Global)
			continue
		}
		t = e.policyTable(t)
		ds = append(ds, t, deps.NonKey(t))
	}
	if len(ds) == 0 {
		return
	}
	if e.follower.Load() != nil && c.unlogged(sql, resp) {
		ds = append(ds, deps.Unlogged)
		if (info.Kind == sqlinfo.DDL || info.Unmapped && info.Kind != sqlinfo.Call) && !info.Temporary {
			// What the other sidecars know of the tables may have
			// changed, and no binlog event tells them: the global bump
			// has their meta forget it (Engine.metaStale).
			ds = append(ds, deps.Global)
		}
	}
	inTx := c.s.Status&mysql.SERVER_STATUS_IN_TRANS != 0
	if !inTx || !c.deferrable(info, written, extra) {
		e.Store.Bump(context.Background(), ds)
		e.Stats.invalidations.Add(uint64(len(ds)))
	}
	if inTx {
		c.txWrote = true
		c.addTxDeps(ds)
		if c.e.follower.Load() != nil && c.unseenCoWrites(info) && !slices.Contains(c.txUnseen, deps.Global) {
			// Unless the follower shows them by the COMMIT, what the
			// triggers wrote may be in any database.
			c.txUnseen = append(c.txUnseen, deps.Global)
		}
	}
}

// addTxDeps adds ds to what the transaction's end bumps.
func (c *Session) addTxDeps(ds []string) {
	if c.txDeps == nil {
		c.txDeps = make(map[string]struct{})
	}
	for _, d := range ds {
		c.txDeps[d] = struct{}{}
	}
}

// coWritesUnseen reports a write, outside a transaction, to a table
// whose triggers' tables the follower has not learned yet (see
// meta.NoteCoWrites): the first write to each after the sidecar starts.
// It waits, as a CALL does, for the follower to apply it, and bumps what
// the follower bumped, so that what its triggers wrote is fresh at once.
func (c *Session) coWritesUnseen(info *sqlinfo.Info) bool {
	if c.s.Status&(mysql.SERVER_STATUS_IN_TRANS|mysql.SERVER_STATUS_AUTOCOMMIT) != mysql.SERVER_STATUS_AUTOCOMMIT {
		// A transaction's COMMIT waits instead (txUnseen).
		return false
	}
	return c.unseenCoWrites(info)
}

// unseenCoWrites reports a write to a table whose triggers' tables the
// follower has not learned (a base table learned to have no trigger, by
// an account that may see every trigger, has none). When the follower is
// late, such a write does not wait for it: it bumps the global
// generation (see the caller), since a trigger may write any database.
func (c *Session) unseenCoWrites(info *sqlinfo.Info) bool {
	switch info.Kind {
	case sqlinfo.Insert, sqlinfo.Update, sqlinfo.Delete, sqlinfo.Replace, sqlinfo.LoadData:
	default:
		return false
	}
	m := c.e.meta()
	if m == nil {
		return false
	}
	if m.RelearnPending() {
		// A table whose foreign keys are not known (a lock kept it
		// from being learned after DDL) may be any table's child.
		return true
	}
	for _, t := range sqlinfo.Qualify(info.Writes, c.db) {
		if _, temp := c.temps[t.String()]; temp {
			continue
		}
		name := c.e.namer().Table(t.DB, t.Name)
		tm := m.Known(name)
		if tm != nil && tm.Kind == meta.Base && !tm.RunsCode && m.Facts().SeesTriggers() {
			continue // no trigger: what it writes with it are its children
		}
		// A view is never in the binlog: its base tables are.
		ev := meta.StatementEvents(info, false)
		if (tm == nil || tm.Kind != meta.View) && !m.CoWritesSeenFor(name, ev) {
			return true
		}
		if tm != nil {
			for _, a := range tm.Also {
				if !m.CoWritesSeenFor(a, ev) {
					return true
				}
			}
		}
	}
	return false
}

// callWrites returns what a CALL, or a statement that calls a stored
// function, changed that its text cannot say, as the binlog follower
// applied it, and true; or false when that cannot be known: a CALL then
// bumps the global generation, and a function's writes are bumped when
// the followers apply them.
//
// The server reports @@last_gtid as each binlogged transaction of the
// session commits (prev is its value before the statement). A CALL after
// which it did not change committed nothing to the binlog, where every
// change of a table that is not temporary goes: it changed nothing a
// cached read depends on, and a procedure that only reads costs the
// fleet's caches nothing. One after which it did waits, briefly, for the
// follower to apply that transaction, and bumps again, now that its
// changes are surely visible to every session, what the follower bumped
// for every transaction it applied since the CALL began.
//
// That holds on MariaDB, with the binlog written in full (the follower
// runs and is current; no binlog_do_db or binlog_ignore_db filters it),
// for a CALL that succeeded, left no transaction open (its writes would
// commit later), changed no state that no tracker shows, ran with
// sql_log_bin on (not set off before, nor set at all while it ran: a
// procedure may turn it off and on again) and stayed in its GTID domain.
func (c *Session) callWrites(info *sqlinfo.Info, sql string, resp *relay.Response, prev string) ([]string, bool) {
	if (info.Kind != sqlinfo.Call && !info.CallsRoutine && c.callFrom == nil) || info.ParseError && !executesOne(sql) || info.WhyNot == "multi-statement" ||
		!c.s.Track || resp.Failed() || resp.Tracked.Unseen || c.s.InTransaction() {
		return nil, false
	}
	m, fp := c.e.meta(), c.e.follower.Load()
	if m == nil || fp == nil || !c.e.followerCurrent() {
		return nil, false
	}
	if f := m.Facts(); !f.MariaDB || len(f.BinlogDoDB) > 0 || len(f.BinlogIgnoreDB) > 0 {
		return nil, false
	}
	for _, v := range [...]string{"sql_log_bin", "gtid_domain_id"} {
		if _, set := resp.Tracked.Vars[v]; set || sqlinfo.ContainsFold(sql, v) {
			return nil, false
		}
	}
	if c.logBinOff() {
		return nil, false
	}
	cur := c.s.Vars["last_gtid"]
	if cur == prev {
		if p := info.Procedure; info.Kind == sqlinfo.Call && p != nil {
			// It may have turned sql_log_bin off and on again with an
			// unscoped SET, which no tracker reports, and written
			// unlogged: its body tells.
			db := cmp.Or(p.DB, c.db)
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			if db == "" || m.ProcedureMayHideWrites(ctx, db, p.Name) {
				return nil, false
			}
		} else if sqlinfo.FirstKeyword(sql) == "EXECUTE" && c.execMayHide(sql) {
			return nil, false
		}
		return nil, true
	}
	if c.callFrom == nil {
		return nil, false
	}
	f := *fp
	ctx, cancel := context.WithTimeout(context.Background(), callApplyWait)
	defer cancel()
	if !f.WaitApplied(ctx, cur) {
		return nil, false
	}
	return f.DepsThrough(c.callFrom, cur)
}

// unlogged reports a statement whose writes the binlog may not show: the
// session's sql_log_bin is off, or the statement set it (SET STATEMENT,
// a procedure that turns it off and on again). Only the sidecar that
// relays such a write knows of it; the others hear of it through
// deps.Unlogged.
func (c *Session) unlogged(sql string, resp *relay.Response) bool {
	if _, set := resp.Tracked.Vars["sql_log_bin"]; set || sqlinfo.ContainsFold(sql, "sql_log_bin") {
		return true
	}
	return c.logBinOff()
}

// logBinOff reports whether the session's writes may have gone to no
// binlog when its statement began: the server keeps none (log_bin), or
// the session's sql_log_bin was off: the server said so, or stored code
// or EXECUTE may have set it unseen (relay.Session.MarkVarsStale), and
// it could not be read since.
func (c *Session) logBinOff() bool {
	return c.logBinStale || c.serverLogBinOff() || c.varOff("sql_log_bin")
}

// serverLogBinOff reports a server that keeps no binlog, as the session
// read when it began (log_bin OFF): then no write changes the session's
// @@last_gtid, which cannot tell whether stored code wrote.
func (c *Session) serverLogBinOff() bool { return c.varOff("log_bin") }

// varOff reports whether the session read the boolean variable name,
// and read it off.
func (c *Session) varOff(name string) bool {
	v, ok := c.s.Vars[name]
	return ok && !strings.EqualFold(v, "ON") && v != "1"
}

// varOn reports whether the session read the boolean variable name on.
func (c *Session) varOn(name string) bool {
	v := c.s.Vars[name]
	return strings.EqualFold(v, "ON") || v == "1"
}

// callApplyWait bounds how long a CALL that wrote waits for the follower
// to apply its transaction before it bumps the global generation
// instead.
const callApplyWait = 250 * time.Millisecond

// routineRan handles a statement that ran a stored function (SELECT f(),
// DO f(), INSERT ... VALUES (f())) on a sidecar with no follower, which
// would otherwise apply what the function wrote, or whose follower could
// not say in time (unseen: the state changed in ways no tracker showed):
// its text cannot say, so
// the global generation is bumped once the writes are committed. The
// server tells whether they were where it reports @@last_gtid (prev is its
// value before the statement), which changes with each transaction the
// session commits to the binlog: a function that only reads costs
// nothing. With no trackers, or in a transaction (bumped when it ends,
// if it committed anything), it is bumped all the same.
func (c *Session) routineRan(prev string, unseen bool) {
	now := !c.s.Track || unseen || c.s.Vars["last_gtid"] != prev || c.serverLogBinOff()
	if c.s.InTransaction() {
		if !c.txRoutine {
			c.txRoutine, c.txRoutineGTID = true, prev
		}
		// Bumped when it ends; and now too where the server may have
		// committed some of it already (writes to tables that are not
		// transactional, which others see at once): it logged them,
		// or it keeps no binlog to tell.
		now = c.s.Track && (unseen || c.s.Vars["last_gtid"] != prev) || c.serverLogBinOff()
	}
	if now {
		c.e.Store.Bump(context.Background(), []string{deps.Global})
		c.e.Stats.invalidations.Inc()
	}
}

// deferrable reports whether a write inside a transaction may wait for
// its end to be bumped: a single DML statement, outside XA, whose every
// table is known to be transactional and to change no other table the
// transaction does not also hold back (a view's or MERGE table's bases).
func (c *Session) deferrable(info *sqlinfo.Info, written []sqlinfo.Table, extra []string) bool {
	switch info.Kind {
	case sqlinfo.Insert, sqlinfo.Update, sqlinfo.Delete, sqlinfo.Replace:
	default:
		return false
	}
	if c.xa || info.Unmapped || len(extra) > 0 || len(written) == 0 || info.WhyNot == "multi-statement" || c.e.meta() == nil {
		return false
	}
	for _, t := range written {
		m := c.e.tableMeta(t)
		if m == nil || m.Kind != meta.Base || !m.Transactional || len(m.Also) > 0 {
			return false
		}
		for _, ch := range append(c.e.meta().Children(c.e.namer().Table(t.DB, t.Name)), c.coWritten(info, t)...) {
			// Foreign keys exist between transactional tables only, but
			// a child whose engine is unknown is bumped at once; so is a
			// table triggers write, unless transactional.
			cm := c.e.meta().Known(ch)
			if cm == nil || !cm.Transactional {
				return false
			}
		}
	}
	return true
}

// unmappedDeps adds the database-wide (or global) generations that a write
// whose tables cannot be known bumps.
func (c *Session) unmappedDeps(ds []string, info *sqlinfo.Info) []string {
	if info.Global {
		return append(ds, deps.Global)
	}
	for _, db := range info.DBWide {
		if db == "" {
			db = c.db
		}
		if db == "" {
			return append(ds, deps.Global)
		}
		ds = append(ds, c.e.namer().DB(db))
	}
	if len(info.DBWide) == 0 {
		if c.db == "" {
			return append(ds, deps.Global)
		}
		ds = append(ds, c.e.namer().DB(c.db))
	}
	return ds
}

// TxEnded bumps again what the transaction that just ended wrote.
func (c *Session) TxEnded() { c.endTransaction() }

func (c *Session) endTransaction() {
	if c.txRoutine && (!c.s.Track || c.s.Vars["last_gtid"] != c.txRoutineGTID || c.serverLogBinOff()) {
		// Its stored functions may have written anything (routineRan).
		if c.txDeps == nil {
			c.txDeps = make(map[string]struct{})
		}
		c.txDeps[deps.Global] = struct{}{}
	}
	// A transaction that wrote tables whose triggers' tables are unknown,
	// and ended otherwise than by a COMMIT that waited for the follower
	// (a statement that commits implicitly, a late follower, a ROLLBACK,
	// which leaves what its triggers wrote to MyISAM tables): the
	// databases of those tables.
	c.addTxDeps(c.txUnseen)
	c.bumpTx()
	clear(c.txDeps)
	c.txWrote, c.xa, c.txSnap, c.txRoutine = false, false, false, false
	c.txUnseen = c.txUnseen[:0]
}

// tookSnapshot notes that the open transaction may have taken its
// snapshot, in the statement that began at c.started, unless it had
// already.
func (c *Session) tookSnapshot() {
	if !c.txSnap {
		c.txSnap, c.txSnapAt, c.txSnapEnd, c.txSnapCurrent = true, c.started, time.Now(), false
	}
}

// snapshotPredates reports whether the open transaction reads a snapshot
// that may have been taken before one of deps changed, as far as this
// sidecar has seen the changes (its own writes, its peers' and its binlog
// follower's): a hit would show it rows its snapshot does not.
//
// The snapshot also holds what was committed before it and not yet
// bumped (a write whose OK is still on its way): with a follower, a hit
// is served only once the follower has applied every commit made before
// the snapshot was taken, so that no entry older than the snapshot is
// still valid. It waits for that at most snapshotCurrentWait, once per
// transaction. The follower bumps a transaction when it reads it, which
// may be before it is visible: a read between the two fills an entry
// with the rows from before it, valid until the follower's second bump
// (SettleWindow). So a dependency bumped that long before the snapshot
// counts as changed since it too.
func (c *Session) snapshotPredates(deps []string) bool {
	if !c.txSnap || !c.s.InTransaction() || !c.snapshotIsolation() {
		return false
	}
	since := c.txSnapAt
	if f := c.e.follower.Load(); f != nil {
		if !c.txSnapCurrent {
			if c.txSnapEnd.IsZero() {
				return true
			}
			ctx, cancel := context.WithTimeout(context.Background(), snapshotCurrentWait)
			c.txSnapCurrent = (*f).CurrentAsOf(ctx, c.txSnapEnd)
			cancel()
			if !c.txSnapCurrent {
				return true
			}
		}
		since = since.Add(-(*f).SettleWindow())
	}
	return c.e.Store.ChangedSince(deps, since)
}

// snapshotCurrentWait bounds how long a hit in a transaction waits for
// the follower to apply what was committed before its snapshot; past it,
// the server answers from the snapshot.
const snapshotCurrentWait = 20 * time.Millisecond

// takesSnapshot reports whether a statement run in a transaction may
// have taken its consistent-read snapshot: anything that reads, and
// START TRANSACTION WITH CONSISTENT SNAPSHOT.
func takesSnapshot(info *sqlinfo.Info, sql string) bool {
	switch info.Kind {
	case sqlinfo.Begin:
		return sqlinfo.ContainsFold(sql, "snapshot")
	case sqlinfo.Set, sqlinfo.Use, sqlinfo.Savepoint, sqlinfo.Commit, sqlinfo.Rollback:
		return false
	}
	return true
}

// bumpTx bumps everything the open transaction wrote so far.
func (c *Session) bumpTx() {
	if len(c.txDeps) == 0 {
		return
	}
	deps := make([]string, 0, len(c.txDeps))
	for d := range c.txDeps {
		deps = append(deps, d)
	}
	c.e.Store.Bump(context.Background(), deps)
	c.e.Stats.invalidations.Add(uint64(len(deps)))
}

func (c *Session) noteTemporary(info *sqlinfo.Info) {
	if c.temps == nil {
		c.temps = make(map[string]struct{})
	}
	for _, t := range sqlinfo.Qualify(info.Writes, c.db) {
		if info.Kind == sqlinfo.DDL && isDrop(info.Digest) {
			delete(c.temps, t.String())
		} else {
			c.temps[t.String()] = struct{}{}
		}
	}
}

// ChangingDB notes a COM_INIT_DB, which the session relays: the server
// keeps the warnings and FOUND_ROWS(), as USE does (hitAcrossUse), and
// sets ROW_COUNT().
func (c *Session) ChangingDB() error {
	if err := c.hitAcrossUse(); err != nil || c.lastHit == nil {
		return err
	}
	if c.hitDiag &= diagFoundRows; c.hitDiag == 0 {
		c.forgetHit()
	}
	return nil
}

// hitAcrossUse readies what the last hit has yet to make of the
// diagnostics for a change of database (USE, COM_INIT_DB), which leaves
// the warnings and FOUND_ROWS() as they were, and after which the hit
// must not run again: the warnings it would have cleared are cleared by
// its rerun now, before the change; its FOUND_ROWS() is held
// (holdHitFound).
func (c *Session) hitAcrossUse() error {
	switch {
	case c.lastHit == nil:
		return nil
	case c.hitDiag&diagWarnings != 0:
		return c.rerunLastHit()
	case c.hitDiag&diagFoundRows != 0:
		return c.holdHitFound()
	}
	return nil
}

// forgetHit drops the last hit: nothing of the diagnostics is left for it
// to make.
func (c *Session) forgetHit() { c.lastHit, c.hitPayload, c.hitCount = nil, nil, -1 }

// RowCountZeroed notes a command that the server answered with an OK
// packet, which set ROW_COUNT() to 0 (COM_PING, COM_INIT_DB,
// COM_REFRESH): the -1 a hit before it left is gone.
func (c *Session) RowCountZeroed() {
	if c.lastHit == nil {
		return
	}
	c.zeroedRowCount = true
	if c.hitDiag &^= diagRowCount; c.hitDiag == 0 {
		c.forgetHit()
	}
}

// holdHitFound keeps the hit's FOUND_ROWS() across a change of database,
// in which the hit must not run again: its count, made later by a
// statement of as many rows (hitFound), or else the hit runs now.
func (c *Session) holdHitFound() error {
	if c.hitFound >= 0 {
		return nil
	}
	if n, ok := c.hitRows(); ok {
		c.hitFound = n
		return nil
	}
	return c.rerunLastHit()
}

// hiddenCodeRan notes that SQL the parse did not see ran on the session:
// its variables, roles and temporary tables may have changed unseen.
func (c *Session) hiddenCodeRan() {
	if c.s.Track {
		c.s.MarkVarsStale()
	}
	c.s.IdentityStale = true
	c.tempsMayHide()
}

// viewsRunCode reports whether a view the statement reads calls a stored
// function.
func (c *Session) viewsRunCode(info *sqlinfo.Info) bool {
	return c.e.meta() != nil && len(info.Reads) > 0 && c.e.deps(info, c.db).runsCode
}

// viewsReadDiagnostics reports a statement that reads a view whose
// definition reads what the session's last statement left: FOUND_ROWS(),
// ROW_COUNT().
func (c *Session) viewsReadDiagnostics(info *sqlinfo.Info) bool {
	return c.e.meta() != nil && len(info.Reads) > 0 && c.e.deps(info, c.db).readsDiag
}

// runsCode reports whether a statement ran stored code that its text
// does not show: a trigger of a table it writes, a stored function a
// view it reads calls.
func (c *Session) runsCode(info *sqlinfo.Info) bool {
	if c.e.meta() == nil {
		return false
	}
	switch info.Kind {
	case sqlinfo.Select:
		// Memoized with the read's dependencies.
		return c.e.deps(info, c.db).runsCode
	case sqlinfo.Insert, sqlinfo.Update, sqlinfo.Delete, sqlinfo.Replace:
	default:
		return false
	}
	for _, t := range sqlinfo.Qualify(info.Writes, c.db) {
		m := c.e.tableMeta(t)
		if m == nil {
			continue
		}
		if m.RunsCode {
			return true
		}
		for _, a := range m.Also {
			// A write through a view fires the triggers of its base
			// tables.
			if k := c.e.meta().Known(a); k != nil && k.RunsCode && k.Kind == meta.Base {
				return true
			}
		}
	}
	return false
}

// loadsRoutine reports a SHOW that may load a stored routine: the server
// then switches to the routine's database and back, which fixes the
// session's privileges on its own database again, when the routine was
// not loaded already.
func loadsRoutine(info *sqlinfo.Info, sql string) bool {
	if info.Kind != sqlinfo.Show {
		return false
	}
	for _, w := range [...]string{"procedure", "function", "package"} {
		if sqlinfo.ContainsFold(sql, w) {
			return true
		}
	}
	return false
}

// setsRole reports whether a statement sets the session's role.
func setsRole(info *sqlinfo.Info) bool {
	for _, v := range info.Sets {
		if v.Name == "role" {
			return true
		}
	}
	return false
}

// tempsMayHide notes that temporary tables may exist that the session
// has not seen created.
func (c *Session) tempsMayHide() {
	c.tempsUnknown = true
	clear(c.tempsChecked)
}

// checkTemps asks the server, for each table a read names that it has
// not asked about since the last statement that may have created
// temporary tables unseen, whether the name is a temporary table of the
// session. It returns why the read must bypass the cache, or "".
func (c *Session) checkTemps(info *sqlinfo.Info) (string, error) {
	if !c.tempsUnknown {
		return "", nil
	}
	var ask []string
	var names [][2]string
	for _, t := range sqlinfo.Qualify(info.Reads, c.db) {
		k := t.String()
		if _, ok := c.tempsChecked[k]; !ok && !slices.Contains(ask, k) {
			ask = append(ask, k)
			names = append(names, [2]string{t.DB, t.Name})
		}
	}
	if len(ask) == 0 {
		return "", nil
	}
	temp, err := c.s.Temporary(names)
	if err != nil {
		return "", err
	}
	why := ""
	for i, k := range ask {
		switch temp[i] {
		case relay.TableReal:
			if c.tempsChecked == nil {
				c.tempsChecked = make(map[string]struct{})
			}
			c.tempsChecked[k] = struct{}{}
		case relay.TableTemporary:
			if c.temps == nil {
				c.temps = make(map[string]struct{})
			}
			c.temps[k] = struct{}{}
			why = whyTemporary
		default:
			why = whyTemporary // unknown: asked again next time
		}
	}
	return why, nil
}

// namesTemporary reports whether ts name a temporary table of the
// session.
func (c *Session) namesTemporary(ts []sqlinfo.Table) bool {
	for _, t := range sqlinfo.Qualify(ts, c.db) {
		if _, ok := c.temps[t.String()]; ok {
			return true
		}
	}
	return false
}

func isDrop(digest string) bool {
	return len(digest) >= 4 && (digest[:4] == "drop" || digest[:4] == "DROP")
}

// Reset forgets everything the session learned since the handshake:
// COM_RESET_CONNECTION and COM_CHANGE_USER start afresh.
func (c *Session) Reset() {
	clear(c.temps)
	c.tempsUnknown = false
	clear(c.tempsChecked)
	clear(c.diagStmts)
	clear(c.hideStmts)
	c.forgetHit()
	c.nextTxUnknown, c.txUnknownIsolation = false, false
	c.state.reset(c.s.Hello.Charset)
	c.CacheOff, c.tainted, c.lockedTables = false, false, false
	c.endTransaction()
	c.loggedIn()
}

// loggedIn notes what the server may have run on the session, unseen,
// before its first command: init_connect, which runs after the login of
// an account without the privilege to skip it. A SET TRANSACTION there
// is for the next transaction alone, a procedure it calls may run one,
// and a transaction it opens may have taken its snapshot already.
func (c *Session) loggedIn() {
	if text := c.s.Vars["init_connect"]; text != "" {
		c.initConnect(text)
	}
	if c.s.InTransaction() {
		c.started = time.Now()
		c.beginTransaction()
		c.tookSnapshot()
		// The snapshot may date from init_connect, before the login
		// ended: from any time at all, as far as the session knows.
		c.txSnapAt, c.txSnapEnd = time.Time{}, time.Time{}
	}
}

// initConnect notes what the statements of an init_connect text may have
// done to the session. The variables it set, the roles, the database
// (relay.Session) and a transaction it opened are read from the server;
// what no variable shows is taken from the text, to the safe side.
func (c *Session) initConnect(text string) {
	for _, stmt := range strings.Split(text, ";") {
		if strings.TrimSpace(stmt) == "" {
			continue
		}
		info := c.e.Analyzer.AnalyzeIn(stmt, c.dialect())
		switch {
		case info.ParseError || runsHiddenStatements(info, stmt):
			// A procedure, EXECUTE or compound statement (or a text cut
			// at a ';' in a string): it may have set the next
			// transaction's isolation, or created temporary tables.
			c.nextTxUnknown = true
			c.tempsMayHide()
		case info.LocksTables:
			c.lockedTables = true
		case info.Temporary || info.Kind == sqlinfo.DDL:
			c.tempsMayHide()
		}
		for _, v := range info.Sets {
			switch v.Name {
			case "transaction":
				c.nextTxUnknown = true
			case "timestamp":
				// The session's clock, which no start value shows, is
				// what a TIME read as a date takes its day from.
				c.tainted = true
			}
		}
	}
}
