package binlog

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/mycached/mycached/mysqlproxy/internal/deps"
	"github.com/mycached/mycached/mysqlproxy/internal/meta"
	"github.com/mycached/mycached/mysqlproxy/internal/sqlinfo"
)

// maxRowDeps bounds the row generations one transaction bumps in one
// table; past it the table's non-key generation stands for them all, and
// those already named are dropped: every bump of the transaction's then
// costs memcached two keys for the table, not a thousand (a follower
// that bumps a large transaction early, at its end and once more after
// it sends each of them three times, as every other sidecar's does).
const maxRowDeps = deps.MaxRows

// txn is the event group being read: one transaction, or one standalone
// statement (DDL, or an XA COMMIT of a prepared transaction).
type txn struct {
	gtid       *mysql.MariadbGTID
	ts         uint32
	standalone bool
	deps       map[string]struct{}
	rows       map[string]int // row generations added per table
	// The statement being read: the text MariaDB annotates its row
	// events with ("" when not sent), and the tables it writes, as its
	// table maps name them.
	annotate string
	mapped   []sqlinfo.Table
	// events are the kinds of rows events each mapped table got.
	events map[sqlinfo.Table]meta.CoEvent
	// began is when the transaction's first event was read; early holds
	// what was bumped before its commit event (see earlyBump), last at
	// earlyAt.
	began   time.Time
	early   map[string]struct{}
	earlyAt time.Time
}

func (t *txn) start(g mysql.MariadbGTID, ts uint32, standalone bool) {
	t.gtid, t.ts, t.standalone = &g, ts, standalone
	clear(t.deps)
	clear(t.rows)
	clear(t.early)
	t.began, t.earlyAt = time.Now(), time.Time{}
	t.annotate, t.mapped = "", t.mapped[:0]
	clear(t.events)
}

// rowsEvent notes the kind of a rows event on a table.
func (t *txn) rowsEvent(typ replication.EventType, e *replication.RowsEvent) {
	if e.Table == nil {
		return
	}
	var ev meta.CoEvent
	switch typ {
	case replication.WRITE_ROWS_EVENTv0, replication.WRITE_ROWS_EVENTv1, replication.WRITE_ROWS_EVENTv2,
		replication.MARIADB_WRITE_ROWS_COMPRESSED_EVENT_V1:
		ev = meta.CoInsert
	case replication.UPDATE_ROWS_EVENTv0, replication.UPDATE_ROWS_EVENTv1, replication.UPDATE_ROWS_EVENTv2,
		replication.MARIADB_UPDATE_ROWS_COMPRESSED_EVENT_V1, replication.PARTIAL_UPDATE_ROWS_EVENT:
		ev = meta.CoUpdate
	case replication.DELETE_ROWS_EVENTv0, replication.DELETE_ROWS_EVENTv1, replication.DELETE_ROWS_EVENTv2,
		replication.MARIADB_DELETE_ROWS_COMPRESSED_EVENT_V1:
		ev = meta.CoDelete
	default:
		return
	}
	if t.events == nil {
		t.events = make(map[sqlinfo.Table]meta.CoEvent)
	}
	t.events[sqlinfo.Table{DB: string(e.Table.Schema), Name: string(e.Table.Table)}] |= ev
}

func (t *txn) add(ds ...string) {
	if t.deps == nil {
		t.deps = make(map[string]struct{})
	}
	for _, d := range ds {
		t.deps[d] = struct{}{}
	}
}

// addTable adds what any change to table changes: its range and non-key
// generations.
func (t *txn) addTable(table string) { t.add(table, deps.NonKey(table)) }

// addRow adds one row's generation, or the table's non-key generation
// once the transaction has named too many rows of it.
func (t *txn) addRow(table string, key []string) {
	if t.rows == nil {
		t.rows = make(map[string]int)
	}
	switch n := t.rows[table]; {
	case n > maxRowDeps:
		return // the non-key generation stands for its rows
	case n == maxRowDeps:
		t.rows[table]++
		prefix := deps.RowJoined(table, "")
		for d := range t.deps {
			if strings.HasPrefix(d, prefix) {
				delete(t.deps, d)
				delete(t.early, d) // early stays a subset of deps
			}
		}
		t.add(deps.NonKey(table))
		return
	}
	t.rows[table]++
	t.add(deps.Row(table, key))
}

func (t *txn) list() []string {
	out := make([]string, 0, len(t.deps))
	for d := range t.deps {
		out = append(out, d)
	}
	return out
}

// handle applies one event to the group being read.
func (f *Follower) handle(t *txn, ev *replication.BinlogEvent) {
	if ev.Header != nil && ev.Header.LogPos != 0 {
		f.evEnd = ev.Header.LogPos
	}
	switch e := ev.Event.(type) {
	case *replication.RotateEvent:
		f.file = string(e.NextLogName)
	case *replication.HeartbeatEvent:
		f.heartbeat(t, e.Filename, ev.Header.LogPos)
	case *replication.MariadbGTIDEvent:
		f.lastTxn.Store(time.Now().UnixNano())
		t.start(e.GTID, ev.Header.Timestamp, e.IsStandalone())
	case *replication.MariadbAnnotateRowsEvent:
		t.annotate, t.mapped = string(e.Query), t.mapped[:0]
	case *replication.TableMapEvent:
		tb := sqlinfo.Table{DB: string(e.Schema), Name: string(e.Table)}
		if !slices.Contains(t.mapped, tb) {
			t.mapped = append(t.mapped, tb)
		}
	case *replication.RowsEvent:
		t.rowsEvent(ev.Header.EventType, e)
		f.rows(t, ev.Header.EventType, e)
		f.earlyBump(t)
		if e.Flags&replication.RowsEventStmtEndFlag != 0 {
			f.statementEnd(t)
		}
	case *replication.FormatDescriptionEvent:
		f.mu.Lock()
		if f.born[0].file != f.file {
			f.born[1] = f.born[0]
		}
		f.born[0] = fileBorn{f.file, ev.Header.Timestamp}
		f.mu.Unlock()
		f.format(e.CreateTimestamp)
	case *replication.QueryEvent:
		f.query(t, e)
	case *replication.ExecuteLoadQueryEvent:
		// LOAD DATA logged as a statement: its rows, and what triggers
		// did with them, are not in the binlog.
		t.add(deps.Global)
		if t.standalone {
			f.apply(t)
		}
	case *replication.XIDEvent:
		f.apply(t)
	case *replication.GenericEvent:
		switch ev.Header.EventType {
		case replication.XA_PREPARE_LOG_EVENT:
			f.xaPrepare(t, e.Data)
		case replication.INCIDENT_EVENT:
			// The server could not log some changes (LOST_EVENTS), and
			// tells replicas so: they stop, and so would a follower that
			// went on as if nothing were missing.
			f.log.Error("binlog: the server logged an incident (changes it could not log); every cached entry is invalidated")
			f.unknownChanges()
		}
	}
}

// heartbeat notes where the server's binlog ends, which it says while it
// has nothing to send: once every transaction read has been applied,
// that is where the applied position lies, for a follower that has
// applied none since it started from the server's position.
func (f *Follower) heartbeat(t *txn, file string, end uint32) {
	if file == "" || end == 0 || t.gtid != nil || len(f.group.txns) > 0 {
		return
	}
	f.file = file
	f.mu.Lock()
	f.at = binlogAt{file, end}
	f.mu.Unlock()
}

// format notes a binlog's format event. Its creation time is set only in
// the binlog a server opens when it starts, which is how replicas tell a
// restart: one that is not the binlog the follower first read from means
// the server restarted since. A restart empties MEMORY tables, and the
// server logs the TRUNCATE that says so only when something first opens
// each table, which a cache hit never does: every entry is invalidated.
//
// The follower is not fresh on a new stream until it has read the
// stream's first format event: see formatRead.
func (f *Follower) format(created uint32) {
	defer func() {
		f.mu.Lock()
		f.formatRead = true
		f.advanceLocked()
		f.mu.Unlock()
	}()
	first := !f.formatSeen
	f.formatSeen = true
	defer func() { f.savedRun.Store(int64(f.runStart)) }()
	if created == 0 || created == f.runStart {
		return
	}
	f.runStart = created
	if !first {
		f.log.Warn("binlog: the server restarted; every cached entry is invalidated (its MEMORY tables are empty now)")
		f.unlogged.Add(1)
		f.restarted()
		f.opts.Bump(f.ctx, []string{deps.Global})
	}
}

// restarted reads again the server settings only a restart changes (the
// binlog filters above all: a database they now leave out must not be
// cached), and what was learned of tables, which was learned under the
// old ones.
func (f *Follower) restarted() {
	ctx, cancel := context.WithTimeout(f.ctx, 10*time.Second)
	defer cancel()
	if err := f.opts.Meta.ReadFacts(ctx); err != nil {
		f.log.Warn("binlog: reading the server's settings after its restart failed; those read before stand", "err", err)
	}
	for _, g := range f.opts.Meta.Facts().Gaps() {
		f.log.Error("binlog follower: " + g)
	}
	f.forgetTables()
	f.opts.Meta.PrivilegesLoaded() // from the grant tables, at its start
}

// rows adds what a row event changed: its table, and the rows it names
// by primary key when the key is known and made of integers.
func (f *Follower) rows(t *txn, typ replication.EventType, e *replication.RowsEvent) {
	if e.Table == nil {
		return
	}
	db, name := string(e.Table.Schema), string(e.Table.Table)
	if strings.EqualFold(db, "mysql") {
		// The grant tables: any cached result may now be refused.
		t.add(deps.Global)
		f.mysqlWritten(name)
		return
	}
	table := f.namer.Table(db, name)
	t.add(table)
	info, err := f.opts.Meta.Table(f.ctx, db, name)
	if err != nil {
		info = nil
	}
	insert := isWrite(typ)
	if info != nil {
		for _, a := range info.Also {
			t.addTable(a)
		}
	}
	if !insert {
		for _, c := range f.opts.Meta.Children(table) {
			t.addTable(c)
		}
	}
	key := keyColumns(e.Table, info)
	if key == nil {
		t.add(deps.NonKey(table))
		return
	}
	for _, row := range e.Rows {
		k, complete, absent := rowKey(row, key)
		switch {
		case complete:
			t.addRow(table, k)
		case !absent:
			// Part of the key is in the image: it moved, to a key that
			// cannot be told.
			t.add(deps.NonKey(table))
		}
		// A key absent altogether is an update's after image that left
		// the key alone; the before image named the row.
	}
}

// A transaction the follower takes long to read (a statement that
// changed a hundred thousand rows is tens of megabytes of events, which a
// busy machine decodes in seconds) is already committed: the server logs
// a transaction once it commits. What it changed is bumped as its events
// are read, once it has been read for earlyAfter or has named more rows
// of a table than maxRowDeps, at most every earlyEvery, rather than only
// at its end: reads of what it wrote stop being served from the cache
// while the rest is decoded. Its end bumps everything again, and the
// settle bump after it, so a read that stored a result in between (the
// server's engine commit can follow its binlog write by a moment) is
// invalidated as for any transaction. An XA PREPARE's changes, bumped
// early the same way, are not visible yet: the reads in between store
// what they read, and the XA COMMIT's bump invalidates it.
const (
	earlyAfter = 20 * time.Millisecond
	earlyEvery = 20 * time.Millisecond
)

// earlyBump bumps what the transaction being read changed so far and
// has not bumped yet, when it is long (see earlyAfter).
func (f *Follower) earlyBump(t *txn) {
	if t.gtid == nil || len(t.deps) == len(t.early) {
		return
	}
	now := time.Now()
	long := now.Sub(t.began) >= earlyAfter
	if !long {
		for _, n := range t.rows {
			if n >= maxRowDeps {
				long = true
				break
			}
		}
	}
	if !long || now.Sub(t.earlyAt) < earlyEvery {
		return
	}
	if t.early == nil {
		t.early = make(map[string]struct{}, len(t.deps))
	}
	var ds []string
	for d := range t.deps {
		if _, ok := t.early[d]; !ok {
			t.early[d] = struct{}{}
			ds = append(ds, d)
		}
	}
	if len(ds) == 0 {
		return
	}
	t.earlyAt = now
	f.opts.Bump(f.ctx, ds)
	f.bumps.Add(uint64(len(ds)))
	f.earlyBumps.Add(1)
}

// statementEnd teaches Meta what one statement's row events wrote
// together. Before its first row event the server maps every table the
// statement may write: those it names, and those the triggers it fires
// and the functions it calls write, whether they wrote this time or not.
// The statement's annotation tells the tables it names from the others;
// when there is none, or it names none of them, each table is taken to
// co-write all the others. Inside a transaction, what a statement wrote
// to non-transactional tables is logged apart, with the annotation again
// and only those tables mapped: they are taken to be written by the
// tables the annotation names, in the database it names or in theirs.
//
// A statement maps the tables of the triggers of its own events only (an
// UPDATE those of UPDATE triggers): what it teaches is for the events a
// writer's rows showed (see meta.CoKeys). A table that got rows of an
// event in the statement had that event's triggers mapped with it,
// whether the statement or a trigger wrote it.
func (f *Follower) statementEnd(t *txn) {
	// The annotation stays for the statement's next part, if any: its
	// writes to tables of another kind of engine, logged apart with
	// their own table maps, and without the text again.
	mapped, annotate, events := t.mapped, t.annotate, t.events
	t.mapped = t.mapped[:0]
	defer clear(t.events)
	if len(mapped) == 0 {
		return
	}
	var writes []sqlinfo.Table
	var stmtEvents meta.CoEvent
	if annotate != "" {
		info := statementAnalyzer.AnalyzeIn(annotate, sqlinfo.Dialect{Unknown: true})
		writes = info.Writes
		stmtEvents = meta.StatementEvents(info, true)
	}
	// A writer's rows show the events whose triggers were mapped, but
	// for one: a REPLACE may update a row in place, with no UPDATE
	// trigger mapped. So a writer's rows count only for the events its
	// statement has, and without the text an update's not at all.
	keys := func(tb sqlinfo.Table, ev meta.CoEvent) []string {
		if annotate != "" {
			ev &= stmtEvents
		} else {
			ev &^= meta.CoUpdate
		}
		return meta.CoKeys(f.name(tb), ev)
	}
	if len(mapped) == 1 && (annotate == "" || nearStart(annotate, mapped[0].Name)) {
		// One table, which the statement most likely names: seen to
		// write no other.
		f.opts.Meta.NoteCoWrites(keys(mapped[0], events[mapped[0]]), nil)
		return
	}
	named := make([]bool, len(mapped))
	ambiguous := make([]bool, len(mapped))
	anyNamed := false
	for _, w := range writes {
		var matched []int
		for i, tb := range mapped {
			// The annotation's current database is not logged: an
			// unqualified name is any mapped table of that name.
			if strings.EqualFold(tb.Name, w.Name) && (w.DB == "" || strings.EqualFold(tb.DB, w.DB)) {
				named[i], anyNamed = true, true
				matched = append(matched, i)
			}
		}
		if len(matched) > 1 {
			// Tables of one name in several databases: the statement
			// wrote one, and its triggers may have written the others.
			for _, i := range matched {
				ambiguous[i] = true
			}
		}
	}
	var writers, written []string
	switch {
	case anyNamed:
		for i, tb := range mapped {
			if named[i] {
				writers = append(writers, keys(tb, events[tb])...)
			}
			if !named[i] || ambiguous[i] {
				written = append(written, f.name(tb))
			}
		}
	case len(writes) > 0:
		// Named tables that are not mapped (a view's): the events are
		// the statement's.
		for _, tb := range mapped {
			written = append(written, f.name(tb))
		}
		for _, w := range writes {
			if w.DB != "" {
				writers = append(writers, keys(w, stmtEvents)...)
				continue
			}
			for _, tb := range mapped {
				writers = append(writers, keys(sqlinfo.Table{DB: tb.DB, Name: w.Name}, stmtEvents)...)
			}
		}
	default:
		for _, tb := range mapped {
			writers = append(writers, keys(tb, events[tb])...)
			written = append(written, f.name(tb))
		}
	}
	f.opts.Meta.NoteCoWrites(writers, written)
}

// nearStart reports whether name is in the first 4 KiB of q, in any case:
// where a statement names the table it writes.
func nearStart(q, name string) bool {
	q = q[:min(len(q), 4096)]
	for i := 0; i+len(name) <= len(q); i++ {
		// The whole name: not a part of a longer one.
		if strings.EqualFold(q[i:i+len(name)], name) &&
			(i == 0 || !identByte(q[i-1])) && (i+len(name) == len(q) || !identByte(q[i+len(name)])) {
			return true
		}
	}
	return false
}

// identByte reports a byte that may be part of an unquoted identifier.
func identByte(b byte) bool {
	return b == '_' || b == '$' || b >= 0x80 || '0' <= b && b <= '9' || 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z'
}

// name is a table's range generation's name; the grant tables are
// deps.Global, as a write to them changes what anyone may read.
func (f *Follower) name(tb sqlinfo.Table) string {
	if strings.EqualFold(tb.DB, "mysql") {
		return deps.Global
	}
	return f.namer.Table(tb.DB, tb.Name)
}

func isWrite(typ replication.EventType) bool {
	switch typ {
	case replication.WRITE_ROWS_EVENTv0, replication.WRITE_ROWS_EVENTv1, replication.WRITE_ROWS_EVENTv2,
		replication.MARIADB_WRITE_ROWS_COMPRESSED_EVENT_V1:
		return true
	}
	return false
}

// keyCol is a primary-key column as a row image holds it.
type keyCol struct {
	pos      int
	unsigned bool
	bits     uint // the column's width, to read a negative unsigned value
}

// keyColumns returns the integer primary key of the table an event
// changed: from the event's own metadata (binlog_row_metadata=FULL), or
// from what meta learned when the table's columns still line up with the
// event's. It returns nil when the key is unknown or not all integers;
// such a table is invalidated as a whole.
func keyColumns(tm *replication.TableMapEvent, info *meta.Table) []keyCol {
	if len(tm.PrimaryKey) > 0 {
		unsigned := tm.UnsignedMap()
		out := make([]keyCol, 0, len(tm.PrimaryKey))
		for _, p := range tm.PrimaryKey {
			bits := intBits(tm, int(p))
			if bits == 0 {
				return nil
			}
			out = append(out, keyCol{pos: int(p), unsigned: unsigned[int(p)], bits: bits})
		}
		return out
	}
	if info == nil || !info.IntKey() || info.Columns != int(tm.ColumnCount) {
		return nil
	}
	out := make([]keyCol, 0, len(info.PK))
	for _, c := range info.PK {
		bits := intBits(tm, c.Pos)
		if bits == 0 {
			return nil
		}
		out = append(out, keyCol{pos: c.Pos, unsigned: c.Unsigned, bits: bits})
	}
	return out
}

// intBits returns the width of column i when the event says it is an
// integer, or 0.
func intBits(tm *replication.TableMapEvent, i int) uint {
	if i >= len(tm.ColumnType) {
		return 0
	}
	switch tm.ColumnType[i] {
	case mysql.MYSQL_TYPE_TINY:
		return 8
	case mysql.MYSQL_TYPE_SHORT:
		return 16
	case mysql.MYSQL_TYPE_INT24:
		return 24
	case mysql.MYSQL_TYPE_LONG:
		return 32
	case mysql.MYSQL_TYPE_LONGLONG:
		return 64
	}
	return 0
}

// rowKey reads a row image's key values as the decimal integers that
// point lookups name. complete says every key column was in the image;
// absent says none was.
func rowKey(row []any, key []keyCol) (k []string, complete, absent bool) {
	k = make([]string, 0, len(key))
	present := 0
	for _, c := range key {
		if c.pos >= len(row) || row[c.pos] == nil {
			continue
		}
		present++
		s, ok := intText(row[c.pos], c.unsigned, c.bits)
		if !ok {
			return nil, false, false
		}
		k = append(k, s)
	}
	return k, present == len(key), present == 0
}

// intText formats an integer column value. The decoder reads a column it
// does not know to be unsigned as signed, so an unsigned column's high
// values come out negative and are corrected by the column's width.
func intText(v any, unsigned bool, bits uint) (string, bool) {
	var n int64
	switch x := v.(type) {
	case int8:
		n = int64(x)
	case int16:
		n = int64(x)
	case int32:
		n = int64(x)
	case int64:
		n = x
	case int:
		n = int64(x)
	case uint8:
		return strconv.FormatUint(uint64(x), 10), true
	case uint16:
		return strconv.FormatUint(uint64(x), 10), true
	case uint32:
		return strconv.FormatUint(uint64(x), 10), true
	case uint64:
		return strconv.FormatUint(x, 10), true
	default:
		return "", false
	}
	if unsigned && n < 0 {
		if bits == 64 {
			return strconv.FormatUint(uint64(n), 10), true
		}
		return strconv.FormatUint(uint64(n+1<<bits), 10), true
	}
	return strconv.FormatInt(n, 10), true
}

// xidRe reads an XA transaction id as the binlog writes it.
var xidRe = regexp.MustCompile(`(?i)X'([0-9a-f]*)',\s*X'([0-9a-f]*)',\s*(\d+)`)

// xidKey returns the canonical form of an xid in an XA statement.
func xidKey(q string) (string, bool) {
	m := xidRe.FindStringSubmatch(q)
	if m == nil {
		return "", false
	}
	return strings.ToLower(m[1]) + "," + strings.ToLower(m[2]) + "," + m[3], true
}

// xaPrepare records a prepared XA transaction's dependencies: it is not
// visible to other sessions until its XA COMMIT, which may come from any
// session, any time later.
func (f *Follower) xaPrepare(t *txn, data []byte) {
	// one_phase(1) formatID(4) gtrid_length(4) bqual_length(4) data
	if len(data) >= 13 {
		format := binary.LittleEndian.Uint32(data[1:])
		gl := int(binary.LittleEndian.Uint32(data[5:]))
		bl := int(binary.LittleEndian.Uint32(data[9:]))
		if gl >= 0 && bl >= 0 && 13+gl+bl <= len(data) {
			key := hex.EncodeToString(data[13:13+gl]) + "," + hex.EncodeToString(data[13+gl:13+gl+bl]) + "," + strconv.FormatUint(uint64(format), 10)
			f.mu.Lock()
			if len(f.xa) < 1<<16 {
				f.xa[key] = t.list()
			}
			f.mu.Unlock()
		}
	}
	f.queue(t, false)
}

// statementAnalyzer analyzes the statements of QUERY events; their
// analyses are not shared with clients'.
var statementAnalyzer = sqlinfo.NewAnalyzer(sqlinfo.Options{ExactCap: 1000, DigestCap: 1000})

// query handles a QUERY event: transaction control, XA, DDL, privilege
// changes, and statement-format DML.
func (f *Follower) query(t *txn, e *replication.QueryEvent) {
	q := strings.TrimSpace(string(e.Query))
	w1, rest := word(q)
	w2, _ := word(rest)
	switch {
	case w1 == "BEGIN":
		return
	case w1 == "COMMIT" || (w1 == "ROLLBACK" && w2 == ""):
		// ROLLBACK reaches the binlog only when a transaction changed a
		// table that cannot roll back: its changes stay.
		f.apply(t)
		return
	case w1 == "XA":
		f.xa1(t, w2, q)
		return
	case w1 == "SAVEPOINT" || (w1 == "ROLLBACK" && w2 == "TO"):
		return
	}
	d, ok := queryDialect(e.StatusVars, f.opts.Meta.Facts().Charsets)
	if !ok {
		// Read as the default dialect: right for any text without the
		// bytes the dialects read differently, and otherwise unreadable.
		d = sqlinfo.Dialect{Unknown: true}
	}
	f.statement(t, string(e.Schema), q, w1, w2, d)
	if t.standalone {
		f.apply(t)
	}
}

// xa1 handles one XA statement.
func (f *Follower) xa1(t *txn, verb, q string) {
	switch verb {
	case "COMMIT":
		if strings.Contains(strings.ToUpper(q), "ONE PHASE") {
			f.apply(t)
			return
		}
		key, ok := xidKey(q)
		f.mu.Lock()
		ds, found := f.xa[key]
		delete(f.xa, key)
		f.mu.Unlock()
		if ok && found {
			t.add(ds...)
		} else {
			// Prepared before this follower's position: what it changed
			// is not known.
			t.add(deps.Global)
		}
		f.apply(t)
	case "ROLLBACK":
		if key, ok := xidKey(q); ok {
			f.mu.Lock()
			delete(f.xa, key)
			f.mu.Unlock()
		}
		f.apply(t)
	}
}

// privilegeWords are statements whose effect is on privileges: any cached
// result may now be refused to someone.
var privilegeWords = map[string]bool{"GRANT": true, "REVOKE": true}

// statement adds what a statement changed.
func (f *Follower) statement(t *txn, schema, q, w1, w2 string, d sqlinfo.Dialect) {
	if privilegeWords[w1] || (w1 == "FLUSH" && w2 == "PRIVILEGES") ||
		((w1 == "CREATE" || w1 == "DROP" || w1 == "ALTER" || w1 == "RENAME") && (w2 == "USER" || w2 == "ROLE")) ||
		(w1 == "SET" && (w2 == "PASSWORD" || w2 == "DEFAULT")) {
		t.add(deps.Global)
		if w1 == "FLUSH" && f.opts.Meta != nil {
			f.opts.Meta.PrivilegesLoaded()
		} else {
			f.forgetGrants()
		}
		return
	}
	info := statementAnalyzer.AnalyzeIn(q, d)
	switch info.Kind {
	case sqlinfo.Select, sqlinfo.Insert, sqlinfo.Update, sqlinfo.Delete, sqlinfo.Replace, sqlinfo.Call, sqlinfo.LoadData:
		// A write logged as a statement (binlog_format STATEMENT or
		// MIXED, for the server or for the session): its text names the
		// tables it writes, but not what its triggers, the functions it
		// calls or its foreign keys wrote.
		t.add(deps.Global)
		for _, tb := range sqlinfo.Qualify(info.Writes, schema) {
			if strings.EqualFold(tb.DB, "mysql") {
				f.mysqlWritten(tb.Name)
			}
		}
		return
	}
	if !info.MayWrite {
		return
	}
	written := sqlinfo.Qualify(info.Writes, schema)
	if info.Kind == sqlinfo.DDL {
		f.ddlKeys(written)
	}
	for _, tb := range written {
		if strings.EqualFold(tb.DB, "mysql") {
			t.add(deps.Global)
			f.mysqlWritten(tb.Name)
			continue
		}
		table := f.namer.Table(tb.DB, tb.Name)
		t.addTable(table)
		if info.Kind == sqlinfo.DDL {
			continue
		}
		if m, err := f.opts.Meta.Table(f.ctx, tb.DB, tb.Name); err == nil {
			for _, a := range m.Also {
				t.addTable(a)
			}
		}
		for _, c := range f.opts.Meta.Children(table) {
			t.addTable(c)
		}
	}
	if info.Unmapped {
		if info.Kind == sqlinfo.DDL || info.Kind == sqlinfo.Other {
			f.opts.Meta.ForgetAll()
		}
		if info.Global {
			t.add(deps.Global)
			return
		}
		for _, db := range info.DBWide {
			if db == "" {
				db = schema
			}
			if db == "" {
				t.add(deps.Global)
				return
			}
			t.add(f.namer.DB(db))
		}
	}
}

// ddlKeys follows DDL on tables in what is known of their foreign keys.
// A renamed parent keeps its children: they are given to every table the
// statement names (a child too many costs a bump, a child too few a
// stale read). The tables are then learned again at once, so that a
// foreign key the statement added is known before the next write to its
// parent.
func (f *Follower) ddlKeys(tables []sqlinfo.Table) {
	names := make([]string, 0, len(tables))
	for _, tb := range tables {
		names = append(names, f.namer.Table(tb.DB, tb.Name))
	}
	f.opts.Meta.ShareChildren(names)
	for i, tb := range tables {
		f.opts.Meta.Forget(names[i])
		_, _ = f.opts.Meta.Table(f.ctx, tb.DB, tb.Name)
	}
}

// word returns the first word of s in upper case, and the rest.
func word(s string) (string, string) {
	s = strings.TrimLeft(s, " \t\r\n")
	i := strings.IndexAny(s, " \t\r\n(;")
	if i < 0 {
		return strings.ToUpper(s), ""
	}
	return strings.ToUpper(s[:i]), s[i:]
}
