package meta

import (
	"context"
	"errors"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/mycached/mycached/mysqlproxy/internal/deps"
	"github.com/mycached/mycached/mysqlproxy/internal/sqlinfo"
)

// Kind is what a name in a schema is.
type Kind uint8

// The kinds.
const (
	Base     Kind = iota // a base table
	View                 // a view
	Sequence             // a MariaDB sequence
)

// Column is one column of a table's primary key.
type Column struct {
	Name     string // lower case
	Pos      int    // 0-based position in the table
	Int      bool   // an integer type: its values compare as numbers
	Unsigned bool
}

// Table is what mycached knows of one table or view.
type Table struct {
	DB, Name string
	Dep      string // its range generation's name
	Kind     Kind
	Engine   string // as the server names it; "" for views
	// Transactional says that the engine keeps a transaction's changes
	// invisible to other sessions until it commits.
	Transactional bool
	Columns       int      // how many columns a row has
	PK            []Column // in key order; nil when there is none
	AutoInc       string   // the AUTO_INCREMENT column, lower case, or ""
	// Also are the range generations of the tables that a read of this
	// one reads too, and that a write to it changes too: a view's base
	// tables, a MERGE table's union, recursively.
	Also []string
	// Uncacheable says why a read of it must not be cached (a view over
	// information_schema, or one calling a nondeterministic function), or
	// "".
	Uncacheable string
	// Dated says that a read of it may take the current date: it has a
	// TIME column (of its own, or of a view's base tables), or is a view
	// that makes a TIME value, which takes it when read as a date.
	Dated bool
	// RunsCode says that reading or writing it may run stored code,
	// which may change the session unseen: a table with triggers, a view
	// that calls a stored function.
	RunsCode bool
	// ReadsDiagnostics says that it is a view that reads what the
	// session's last statement left (FOUND_ROWS(), ROW_COUNT()), itself
	// or through a view it reads.
	ReadsDiagnostics bool
	parents          []string // tables whose row changes change this one's rows (foreign keys)
}

// IntKey reports whether every column of the primary key is an integer.
func (t *Table) IntKey() bool {
	if len(t.PK) == 0 {
		return false
	}
	for _, c := range t.PK {
		if !c.Int {
			return false
		}
	}
	return true
}

// maxViewDepth bounds the nesting of views resolved.
const maxViewDepth = 16

// Table returns what is known of db.name, learning it on first use.
// ErrNoTable means there is no such table or view; an error of the
// server (a missing privilege, say) is returned as is, and the caller
// treats the table as unknown.
func (m *Meta) Table(ctx context.Context, db, name string) (*Table, error) {
	return m.table(ctx, db, name, 0)
}

func (m *Meta) table(ctx context.Context, db, name string, depth int) (*Table, error) {
	key := m.namer.Table(db, name)
	now := time.Now()
	m.mu.Lock()
	e := m.tables[key]
	m.mu.Unlock()
	if e != nil && (e.until.IsZero() || now.Before(e.until)) {
		return e.t, e.err
	}
	var err error
	learn := func() (any, error) {
		m.mu.Lock()
		gen := m.gen
		m.mu.Unlock()
		t, err := m.learn(ctx, db, name, depth)
		e := &entry{t: t, err: err}
		if err != nil {
			e.until = failedUntil(err)
		}
		m.mu.Lock()
		switch {
		case lockedOut(err):
			if m.relearn == nil {
				m.relearn = make(map[string][2]string)
			}
			m.relearn[key] = [2]string{db, name}
		case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
			// Asked again at the next poll.
		default:
			// Learned, gone, or refused for good (a grant): waiting on
			// it would not help.
			delete(m.relearn, key)
		}
		if m.gen == gen && (err == nil || !errors.Is(err, context.Canceled)) {
			m.tables[key] = e
			if t != nil {
				for _, p := range t.parents {
					if m.children[p] == nil {
						m.children[p] = make(map[string]bool)
					}
					if !m.children[p][t.Dep] {
						m.children[p][t.Dep] = true
						m.coVersion++ // saved with the co-writes
					}
				}
			}
		}
		m.mu.Unlock()
		return t, err
	}
	var v any
	if depth == 0 {
		v, err, _ = m.flight.Do(key, learn)
	} else {
		// A view's base tables are learned inside the view's flight; the
		// server refuses views that read themselves, and the depth bound
		// stops the rest.
		v, err = learn()
	}
	t, _ := v.(*Table)
	return t, err
}

// Gen counts Forget and ForgetAll calls: what a caller derived from
// tables when Gen was n holds while it still is n.
func (m *Meta) Gen() uint64 { return m.genA.Load() }

// Children returns the tables whose rows change when rows of table (a
// range generation's name) are deleted or updated, through foreign keys,
// as far as the tables learned so far tell, transitively. The table
// itself is among them when a chain of keys leads back to it (a key to
// itself, a cycle): its other rows change then, which the binlog does
// not list.
func (m *Meta) Children(table string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	seen := map[string]bool{}
	queue := []string{table}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for c := range m.children[p] {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
				queue = append(queue, c)
			}
		}
	}
	slices.Sort(out)
	return out
}

// Bounds of what NoteCoWrites keeps: the writers (CoKeys) it knows
// co-writes of, the co-written tables of each, and the co-written tables
// of all. Past the last two a writer's co-written tables are deps.Global;
// a writer past the first is not noted, and stays unseen.
const (
	maxCoWriters    = 1 << 18
	maxCoWritten    = 64
	maxCoWrittenAll = 1 << 18
)

// CoEvent is a kind of write to a table: each fires the table's triggers
// for that event only, and the binlog maps, before a statement's rows,
// the tables its own events' triggers may write.
type CoEvent uint8

const (
	CoInsert CoEvent = 1 << iota
	CoUpdate
	CoDelete
	CoAll = CoInsert | CoUpdate | CoDelete
)

var coEventNames = [...]struct {
	e      CoEvent
	suffix string
}{{CoInsert, "#insert"}, {CoUpdate, "#update"}, {CoDelete, "#delete"}}

// CoKeys returns the names NoteCoWrites, CoWritesSeen and CoWritten know
// a table's writes of the events ev by: one per event. A range
// generation's name escapes '#'.
func CoKeys(table string, ev CoEvent) []string {
	var out []string
	for _, n := range coEventNames {
		if ev&n.e != 0 {
			out = append(out, table+n.suffix)
		}
	}
	return out
}

// StatementEvents returns the events whose triggers a write like info
// fires. Surely, those it certainly fires, which its binlog maps: what it
// teaches of them holds. Otherwise every event it may fire, which a write
// of it must bump (LOAD DATA ... REPLACE deletes; a REPLACE may update).
func StatementEvents(info *sqlinfo.Info, surely bool) CoEvent {
	switch info.Kind {
	case sqlinfo.Insert:
		if info.OnDuplicate {
			return CoInsert | CoUpdate
		}
		return CoInsert
	case sqlinfo.Update:
		return CoUpdate
	case sqlinfo.Delete:
		return CoDelete
	case sqlinfo.LoadData:
		if surely {
			return CoInsert
		}
		return CoInsert | CoDelete
	case sqlinfo.Replace:
		if surely {
			return CoInsert | CoDelete
		}
	}
	if surely {
		return 0
	}
	return CoAll
}

// NoteCoWrites records that one statement that wrote each of writers
// wrote every table of written too (range generations' names), as the
// binlog shows a statement's writes: those of the triggers it fired, and
// of the stored functions it called, are among them. A trigger is not
// visible to an account without the TRIGGER privilege, and its writes,
// unlike those of foreign keys, are not declared on the table: this is
// how mycached learns them. Writers are noted as seen (CoWritesSeen) even
// when written is empty.
func (m *Meta) NoteCoWrites(writers, written []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.noteCoWritesLocked(writers, written, true)
}

// noteCoWritesLocked is NoteCoWrites; seen says whether writers are noted
// as seen. m.mu must be held.
func (m *Meta) noteCoWritesLocked(writers, written []string, seen bool) {
	changed := false
	for _, w := range writers {
		if len(written) > 0 {
			set := m.coWrites[w]
			if set == nil {
				if len(m.coWrites) >= maxCoWriters {
					// No room for what it writes: it is not seen, and
					// its writes wait for the follower.
					changed = changed || !m.coWritersFull || m.coSeen[w]
					m.coWritersFull = true
					delete(m.coSeen, w)
					continue
				}
				if m.coWrites == nil {
					m.coWrites = make(map[string]map[string]bool)
				}
				set = make(map[string]bool)
				m.coWrites[w] = set
			}
			self := w
			if i := strings.LastIndexByte(w, '#'); i >= 0 {
				self = w[:i] // a CoKeys name
			}
			for _, t := range written {
				switch {
				case t == w || t == self || set[t]:
				case len(set) < maxCoWritten && m.coWritten < maxCoWrittenAll:
					set[t] = true
					m.coWritten++
					changed = true
				default:
					// Too many to name: a write to it changes anything.
					set[deps.Global] = true
					changed = true
				}
			}
		}
		switch {
		case !seen || m.coSeen[w]:
		case len(m.coSeen) >= maxCoWriters:
			// Not seen: its writes wait for the follower.
			changed = changed || !m.coWritersFull
			m.coWritersFull = true
		default:
			if m.coSeen == nil {
				m.coSeen = make(map[string]bool)
			}
			m.coSeen[w] = true
			changed = true
		}
	}
	if changed {
		m.coVersion++
	}
}

// CoWrites is what NoteCoWrites learned, as kept across restarts: the
// tables seen (CoWritesSeen), and what writes to each were seen to write
// too (CoWritten).
type CoWrites struct {
	Seen   []string            `json:"seen"`
	Writes map[string][]string `json:"writes"`
	// Full says a writer was not noted for want of room (it stays
	// unseen).
	Full bool `json:"full,omitempty"`
	// Children are the foreign-key children known of each parent (see
	// Children). A restart that resumes the binlog where it stopped
	// must know them before it has learned the children again: a
	// parent's write cascades to a child whose entries are cached.
	Children map[string][]string `json:"children,omitempty"`
}

// CoWritesVersion returns a number that changes whenever what
// SnapshotCoWrites returns does.
func (m *Meta) CoWritesVersion() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.coVersion
}

// SnapshotCoWrites returns what NoteCoWrites learned and CoWritesVersion
// at once.
func (m *Meta) SnapshotCoWrites() (CoWrites, uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := CoWrites{Seen: slices.Sorted(maps.Keys(m.coSeen)), Writes: make(map[string][]string, len(m.coWrites)), Full: m.coWritersFull}
	for w, set := range m.coWrites {
		c.Writes[w] = slices.Sorted(maps.Keys(set))
	}
	if len(m.children) > 0 {
		c.Children = make(map[string][]string, len(m.children))
		for p, set := range m.children {
			c.Children[p] = slices.Sorted(maps.Keys(set))
		}
	}
	return c, m.coVersion
}

// RestoreCoWrites adds what a SnapshotCoWrites returned, in an earlier
// run, to what is known, within the same bounds as NoteCoWrites. The
// caller vouches that no DDL since may have changed it, as the binlog
// follower does when it resumes from the position the snapshot held at:
// what it reads on from there makes tables unseen again as it would have.
func (m *Meta) RestoreCoWrites(c CoWrites) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for w, ts := range c.Writes {
		// What was learned stays when a table is no longer seen
		// (ForgetAll): only Seen are seen.
		m.noteCoWritesLocked([]string{w}, ts, false)
	}
	m.noteCoWritesLocked(c.Seen, nil, true)
	for p, cs := range c.Children {
		if m.children[p] == nil {
			m.children[p] = make(map[string]bool)
		}
		for _, t := range cs {
			m.children[p][t] = true
		}
	}
	if c.Full && !m.coWritersFull {
		m.coWritersFull = true
		m.coVersion++
	}
}

// CoWritesSeen reports whether the binlog has shown what a statement
// writing table (a range generation's name, or one of its CoKeys) writes
// with it, so that CoWritten tells them all: triggers' tables are mapped
// even when they write nothing. DDL on the table, or DDL mycached cannot
// map (Forget, ForgetAll), makes it unseen again, as it may have changed
// its triggers. A writer past the bound of those noted stays unseen.
func (m *Meta) CoWritesSeen(table string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.coSeen[table]
}

// CoWritesSeenFor is CoWritesSeen of every one of the events ev of table.
func (m *Meta) CoWritesSeenFor(table string, ev CoEvent) bool {
	keys := CoKeys(table, ev)
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, k := range keys {
		if !m.coSeen[k] {
			return false
		}
	}
	return true
}

// CoWrittenFor returns the tables that writes of the events ev to table
// were seen to write too, sorted.
func (m *Meta) CoWrittenFor(table string, ev CoEvent) []string {
	var out []string
	for _, k := range CoKeys(table, ev) {
		out = append(out, m.CoWritten(k)...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// CoWritten returns the tables (range generations' names) that a
// statement writing table was seen to write too (NoteCoWrites), sorted.
func (m *Meta) CoWritten(table string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	set := m.coWrites[table]
	if len(set) == 0 {
		return nil
	}
	out := make([]string, 0, len(set))
	for t := range set {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// Known returns what has been learned of the table named by its range
// generation, without asking the server, or nil.
func (m *Meta) Known(table string) *Table {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := m.tables[table]; e != nil && e.err == nil {
		return e.t
	}
	return nil
}

// Forget drops what is known of the table named by its range generation,
// after DDL that may have changed it. Views built on it are dropped too.
func (m *Meta) Forget(table string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gen++
	m.genA.Add(1)
	delete(m.tables, table)
	for _, k := range append(CoKeys(table, CoAll), table) {
		if m.coSeen[k] {
			delete(m.coSeen, k)
			m.coVersion++
		}
	}
	for k, e := range m.tables {
		if e.t != nil && slices.Contains(e.t.Also, table) {
			delete(m.tables, k)
		}
	}
}

// ForgetAll drops everything known of tables, after DDL mycached could
// not map to tables, and what writes to them were seen to write. The
// foreign keys learned stay: the tables that
// declared them may not be learned again before their parents are
// written, and a link that no longer holds costs only a bump.
func (m *Meta) ForgetAll() {
	// What moved the global generation (FLUSH PRIVILEGES, a write to the
	// grant tables) may have changed the grants too.
	m.ForgetGrants()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gen++
	m.genA.Add(1)
	clear(m.tables)
	// CREATE TRIGGER and DROP TRIGGER are such DDL: what writes to each
	// table write too is learned again. What was learned stays: a table
	// a trigger no longer writes costs a bump, where one it writes, which
	// a write in a transaction would not bump at once, costs a stale read.
	if len(m.coSeen) > 0 {
		clear(m.coSeen)
		m.coVersion++
	}
}

// ShareChildren gives each of tables (range generations' names) the
// children of all of them, after DDL that may have renamed one to
// another.
func (m *Meta) ShareChildren(tables []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	all := map[string]bool{}
	for _, t := range tables {
		for c := range m.children[t] {
			all[c] = true
		}
	}
	if len(all) == 0 {
		return
	}
	for _, t := range tables {
		if m.children[t] == nil {
			m.children[t] = make(map[string]bool)
		}
		for c := range all {
			if c != t {
				m.children[t][c] = true
			}
		}
	}
}

// learn asks the server about db.name.
func (m *Meta) learn(ctx context.Context, db, name string, depth int) (*Table, error) {
	rows, err := m.query(ctx, "SHOW FULL TABLES FROM "+QuoteIdent(db)+" LIKE "+quoteLike(name))
	if err != nil {
		if isNoDB(err) {
			return nil, ErrNoTable
		}
		return nil, err
	}
	var typ string
	for _, r := range rows {
		for k, v := range r {
			if k == "table_type" {
				typ = v
			}
		}
	}
	if len(rows) != 1 || typ == "" {
		return nil, ErrNoTable
	}
	t := &Table{DB: db, Name: name, Dep: m.namer.Table(db, name)}
	qname := QuoteIdent(db) + "." + QuoteIdent(name)
	switch strings.ToUpper(typ) {
	case "VIEW":
		t.Kind = View
		return t, m.learnView(ctx, t, qname, depth)
	case "SEQUENCE":
		t.Kind = Sequence
	case "BASE TABLE":
	default: // SYSTEM VIEW, and anything newer
		t.Uncacheable = "system-table"
		return t, nil
	}
	if err := m.learnTable(ctx, t, qname, depth); err != nil {
		return nil, err
	}
	if !m.Facts().Logged(db) {
		// The binlog holds none of its changes: writes that bypass
		// mycached would never invalidate.
		t.Uncacheable = "binlog-filtered"
	}
	return t, nil
}

var (
	engineRe = regexp.MustCompile(`\)\s*ENGINE=(\w+)`)
	unionRe  = regexp.MustCompile(`UNION=\(([^)]*)\)`)
	fkRe     = regexp.MustCompile("FOREIGN KEY \\([^)]*\\) REFERENCES (?:`((?:[^`]|``)+)`\\.)?`((?:[^`]|``)+)` \\([^)]*\\)(.*)$")
	pkRe     = regexp.MustCompile("^\\s*PRIMARY KEY \\(((?:`(?:[^`]|``)+`(?:\\(\\d+\\))?(?: (?:ASC|DESC))?,?)+)\\)")
	keyColRe = regexp.MustCompile("`((?:[^`]|``)+)`")
	identRe  = regexp.MustCompile("`((?:[^`]|``)+)`(?:\\.`((?:[^`]|``)+)`)?")
)

func unquote(s string) string { return strings.ReplaceAll(s, "``", "`") }

func (m *Meta) learnTable(ctx context.Context, t *Table, qname string, depth int) error {
	rows, err := m.query(ctx, "SHOW CREATE TABLE "+qname)
	if err != nil {
		return err
	}
	if len(rows) != 1 {
		return ErrNoTable
	}
	create := rows[0]["create table"]
	if create == "" {
		create = rows[0]["create sequence"]
	}
	// The patterns run on a copy of the text whose quoted strings and
	// names cannot match them (a COMMENT ') ENGINE=InnoDB', a column
	// `p)`, a name with a newline); what they find is read from the text.
	mk := maskQuoted(create)
	if ix := engineRe.FindStringSubmatchIndex(mk); ix != nil {
		t.Engine = create[ix[2]:ix[3]]
	}
	t.Transactional = transactional(t.Engine)
	if elsewhere(t.Engine) {
		t.Uncacheable = "engine:" + strings.ToLower(t.Engine)
	}
	why, dated := generatedVaries(create, mk)
	if why != "" && t.Uncacheable == "" {
		t.Uncacheable = why
	}
	t.Dated = dated
	forLines(create, mk, func(line, ml string) {
		if ix := fkRe.FindStringSubmatchIndex(ml); ix != nil && changesChild(line[ix[6]:ix[7]]) {
			pdb := t.DB
			if ix[2] >= 0 {
				pdb = unquote(line[ix[2]:ix[3]])
			}
			t.parents = append(t.parents, m.namer.Table(pdb, unquote(line[ix[4]:ix[5]])))
		}
	})
	if strings.HasPrefix(strings.ToUpper(t.Engine), "MRG_") {
		if ix := unionRe.FindStringSubmatchIndex(mk); ix != nil {
			list, ml := create[ix[2]:ix[3]], mk[ix[2]:ix[3]]
			for _, id := range identRe.FindAllStringSubmatchIndex(ml, -1) {
				udb, uname := t.DB, unquote(list[id[2]:id[3]])
				if id[4] >= 0 {
					udb, uname = unquote(list[id[2]:id[3]]), unquote(list[id[4]:id[5]])
				}
				t.Also = appendUniq(t.Also, m.namer.Table(udb, uname))
				if !m.Facts().Logged(udb) {
					t.Uncacheable = "binlog-filtered"
				}
			}
		}
	}
	// Unknown triggers count as some.
	trg, err := m.query(ctx, "SHOW TRIGGERS FROM "+QuoteIdent(t.DB)+" LIKE "+quoteLike(t.Name))
	t.RunsCode = err != nil || len(trg) > 0
	cols, err := m.query(ctx, "SHOW COLUMNS FROM "+qname)
	if err != nil {
		return err
	}
	pos := map[string]int{}
	types := map[string]string{}
	for i, c := range cols {
		f := strings.ToLower(c["field"])
		if _, dup := pos[f]; dup {
			// Two columns the server tells apart, and Go's case folding
			// does not (letters newer than the server's tables, as
			// Georgian capitals): which one a name means is unknown, so
			// rows are not keyed at all.
			t.Columns, t.AutoInc = len(cols), ""
			return nil
		}
		pos[f], types[f] = i, strings.ToLower(c["type"])
		if typ := types[f]; typ == "time" || strings.HasPrefix(typ, "time(") {
			t.Dated = true
		}
		if strings.Contains(strings.ToLower(c["extra"]), "auto_increment") {
			t.AutoInc = f
		}
	}
	t.Columns = len(cols)
	// The key comes from SHOW CREATE TABLE, not SHOW KEYS: SHOW KEYS
	// asks the engine for each index's cardinality, which makes InnoDB
	// compute statistics that the optimizer would otherwise not have yet,
	// and changes the plans (and EXPLAIN) of the application's queries.
	var pkErr error
	found := false
	forLines(create, mk, func(line, ml string) {
		ix := pkRe.FindStringSubmatchIndex(ml)
		if ix == nil || found {
			return
		}
		found = true
		cols, mcols := line[ix[2]:ix[3]], ml[ix[2]:ix[3]]
		for _, id := range keyColRe.FindAllStringSubmatchIndex(mcols, -1) {
			f := strings.ToLower(unquote(cols[id[2]:id[3]]))
			p, ok := pos[f]
			if !ok {
				pkErr = errors.New("meta: primary key column " + f + " of " + qname + " not among its columns")
				return
			}
			typ := types[f]
			t.PK = append(t.PK, Column{Name: f, Pos: p, Int: intType(typ), Unsigned: strings.Contains(typ, "unsigned")})
		}
	})
	if pkErr != nil {
		return pkErr
	}
	return nil
}

// generatedAs marks a generated column's expression in SHOW CREATE TABLE.
const generatedAs = " GENERATED ALWAYS AS ("

// generatedVaries says why reads of a table whose CREATE TABLE is create
// must not be cached because of its generated columns, or "". MariaDB
// lets a VIRTUAL column call NOW(), RAND(), CONNECTION_ID() or
// CURRENT_USER(): its values change with no write to the table, so no
// generation covers them. dated says that one reads a TIME value as a
// date, as CAST(SEC_TO_TIME(n) AS DATETIME) does: its values change at
// midnight, whatever type the column has.
func generatedVaries(create, mk string) (why string, dated bool) {
	forLines(create, mk, func(line, ml string) {
		i := strings.Index(ml, generatedAs)
		if why != "" || i < 0 || !strings.HasPrefix(strings.TrimSpace(ml), "`") {
			return
		}
		expr, ok := parenthesized(line[i+len(generatedAs)-1:])
		if !ok {
			why = "generated-unreadable"
			return
		}
		info := viewAnalyzer.Analyze("SELECT " + expr)
		if info.ParseError || info.Unmapped {
			why = "generated-unreadable"
			return
		}
		if ok, w := info.CacheableIn(""); !ok {
			why = "generated:" + w
		}
		dated = dated || info.Dated
	})
	return why, dated
}

// maskQuoted returns create with what is inside its quoted strings, and
// the bytes of its quoted names that the patterns read as structure,
// replaced byte for byte: offsets into it are offsets into create.
func maskQuoted(create string) string {
	b := []byte(create)
	for i := 0; i < len(b); i++ {
		q := b[i]
		if q != '\'' && q != '"' && q != '`' {
			continue
		}
		for i++; i < len(b); i++ {
			c := b[i]
			if c == q {
				if i+1 < len(b) && b[i+1] == q {
					i++ // a doubled quote: one inside
					if q != '`' {
						b[i-1], b[i] = 'x', 'x'
					}
					continue
				}
				break
			}
			if c == '\\' && q != '`' && i+1 < len(b) {
				b[i] = 'x'
				i++
				b[i] = 'x'
				continue
			}
			switch {
			case q != '`':
				b[i] = 'x'
			case strings.IndexByte("()=,.\n\r \t", c) >= 0:
				b[i] = '_'
			}
		}
	}
	return string(b)
}

// forLines calls f with each line of create and the same line of its
// masked copy mk, split where mk has a newline (never in a quoted name or
// string).
func forLines(create, mk string, f func(line, masked string)) {
	for start := 0; start <= len(mk); {
		end := strings.IndexByte(mk[start:], '\n')
		if end < 0 {
			end = len(mk)
		} else {
			end += start
		}
		f(create[start:end], mk[start:end])
		start = end + 1
	}
}

// parenthesized returns what is inside the parenthesis that s starts with,
// up to its matching close, skipping quoted strings and names.
func parenthesized(s string) (string, bool) {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return s[1:i], true
			}
		case '\'', '"', '`':
			for i++; i < len(s) && s[i] != c; i++ {
				if s[i] == '\\' && c != '`' {
					i++
				}
			}
		}
	}
	return "", false
}

// intType reports whether a column type, as SHOW COLUMNS gives it, is an
// integer type.
func intType(typ string) bool {
	base, _, _ := strings.Cut(typ, "(")
	base, _, _ = strings.Cut(base, " ")
	switch base {
	case "tinyint", "smallint", "mediumint", "int", "integer", "bigint":
		return true
	}
	return false
}

// transactional reports whether an engine keeps uncommitted changes from
// other sessions.
func transactional(engine string) bool {
	switch strings.ToLower(engine) {
	case "innodb", "xtradb", "tokudb", "rocksdb":
		return true
	}
	return false
}

// elsewhere reports an engine whose rows change without a write to the
// table: they live on another server or in files outside the server
// (FEDERATED, CONNECT, SPIDER, SPHINX; CSV, whose files other programs
// write), or are computed from another table the engine does not name
// to mycached (OQGRAPH). No binlog event of this server says when a read
// of such a table changes.
func elsewhere(engine string) bool {
	switch strings.ToLower(engine) {
	case "federated", "connect", "spider", "sphinx", "oqgraph", "csv":
		return true
	}
	return false
}

// changesChild reports whether the referential actions after REFERENCES
// change the child's rows when the parent's change.
func changesChild(actions string) bool {
	a := strings.ToUpper(actions)
	for _, on := range []string{"ON DELETE ", "ON UPDATE "} {
		i := strings.Index(a, on)
		if i < 0 {
			continue
		}
		rest := a[i+len(on):]
		if strings.HasPrefix(rest, "CASCADE") || strings.HasPrefix(rest, "SET NULL") || strings.HasPrefix(rest, "SET DEFAULT") {
			return true
		}
	}
	return false
}

// viewRe finds the SELECT of a SHOW CREATE VIEW statement.
var viewRe = regexp.MustCompile("(?s)^CREATE .*?VIEW `(?:[^`]|``)+`(?:\\.`(?:[^`]|``)+`)? AS (.*)$")

// viewAnalyzer analyzes view definitions; the analyses are not shared
// with the clients' statements.
var viewAnalyzer = sqlinfo.NewAnalyzer(sqlinfo.Options{ExactCap: 1000, DigestCap: 1000})

func (m *Meta) learnView(ctx context.Context, t *Table, qname string, depth int) error {
	if depth >= maxViewDepth {
		t.Uncacheable = "view-too-deep"
		t.Also = appendUniq(t.Also, deps.Global)
		return nil
	}
	rows, err := m.query(ctx, "SHOW CREATE VIEW "+qname)
	if err != nil {
		return err
	}
	if len(rows) != 1 {
		return ErrNoTable
	}
	mm := viewRe.FindStringSubmatch(rows[0]["create view"])
	if mm == nil {
		t.Uncacheable = "view-unreadable"
		t.Also = appendUniq(t.Also, deps.Global)
		return nil
	}
	// The check option is the view's, not its SELECT's.
	def := checkOptionRe.ReplaceAllString(mm[1], "")
	info := viewAnalyzer.Analyze(def)
	if info.ParseError || info.Unmapped {
		// What it reads is unknown: a write through it may change
		// anything.
		t.Uncacheable = "view-unreadable"
		t.Also = appendUniq(t.Also, deps.Global)
		return nil
	}
	// The base tables are learned even when reads of the view are not
	// cached (it calls NOW(), CURRENT_USER()): a write through it
	// changes them.
	why := ""
	if ok, w := info.CacheableIn(t.DB); !ok {
		why = "view:" + w
	}
	t.RunsCode = info.CallsRoutine
	t.Dated = info.Dated
	t.ReadsDiagnostics = readsDiagnostics(def)
	for _, r := range sqlinfo.Qualify(info.Reads, t.DB) {
		t.Also = appendUniq(t.Also, m.namer.Table(r.DB, r.Name))
		base, err := m.table(ctx, r.DB, r.Name, depth+1)
		if err != nil {
			return err
		}
		if base.Uncacheable != "" && why == "" {
			why = base.Uncacheable
		}
		t.RunsCode = t.RunsCode || base.RunsCode && base.Kind != Base
		t.ReadsDiagnostics = t.ReadsDiagnostics || base.ReadsDiagnostics
		t.Dated = t.Dated || base.Dated
		for _, a := range base.Also {
			t.Also = appendUniq(t.Also, a)
		}
	}
	t.Uncacheable = why
	return nil
}

// readsDiagnostics reports a view definition that names what a
// session's last statement leaves: FOUND_ROWS(), ROW_COUNT(). (A view
// cannot read @@warning_count.)
func readsDiagnostics(def string) bool {
	for _, w := range []string{"found_rows", "row_count"} {
		if sqlinfo.ContainsFold(def, w) {
			return true
		}
	}
	return false
}

// checkOptionRe finds the check option that may end a view's definition.
var checkOptionRe = regexp.MustCompile(`(?is)\s+WITH\s+(?:CASCADED\s+|LOCAL\s+)?CHECK\s+OPTION\s*$`)

func appendUniq(ss []string, s string) []string {
	if slices.Contains(ss, s) {
		return ss
	}
	return append(ss, s)
}

// isNoDB reports the server's "unknown database" error.
func isNoDB(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1049
}
