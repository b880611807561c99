package cache

import (
	"bufio"
	"context"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/mycached/mycached/cachepolicy"
	"github.com/mycached/mycached/mysqlproxy/internal/deps"
	"github.com/mycached/mycached/mysqlproxy/internal/meta"
	"github.com/mycached/mycached/mysqlproxy/internal/sqlinfo"
	"github.com/mycached/mycached/mysqlproxy/internal/wire"
)

// readDeps are the dependencies of a read: its tables ("db.table", as
// policies see them), and every generation it depends on.
type readDeps struct {
	tables []string
	all    []string
	point  bool       // a primary-key lookup: rows and the non-key generation
	keys   [][]string // the primary-key values of its rows
	keyStr []string   // the same, one string a row, as policies see them
	// why says why the read must not be cached after all, from what meta
	// knows of its tables: a view over information_schema, a table that
	// does not exist (a temporary one), a table meta cannot read.
	why string
	// runsCode says a view it reads calls a stored function.
	runsCode bool
	// readsDiag says a view it reads reads FOUND_ROWS() or ROW_COUNT().
	readsDiag bool
	// dated says it may take the current date (sqlinfo.Info.Dated,
	// meta.Table.Dated).
	dated bool
	gen   uint64 // meta's Gen when computed
	// pt is, for the table-level dependencies of a primary-key lookup
	// that can be row-level, what every lookup of the shape shares.
	pt *pointDeps
}

// pointDeps is what the row-level dependencies of a primary-key lookup
// share with every other lookup of its shape in its database.
type pointDeps struct {
	table string   // the generation name of its table
	pk    []string // the table's primary-key columns
	tail  []string // after the rows: the non-key, database and global generations
}

// depsMemo memoizes the dependencies of an analysis in a database, so the
// hot path builds no strings. Analyses are shared and immutable, so the
// pointer is a sound key: a map keyed by the pointer alone is read with
// no hashing of strings, and what it holds is a short list of the
// databases the analysis was read in. An entry computed before meta last
// forgot a table is computed again.
type depsMemo struct {
	m     [2]sync.Map // by depsKey.rows: *sqlinfo.Info -> *memoDeps
	n     sync.Mutex
	k     int
	bytes int // what the entries pin: their analyses' digests, mostly
}

type depsKey struct {
	info *sqlinfo.Info
	db   string
	rows bool // the dependencies with row-level ones, not the table-level base
}

// memoDeps is one analysis's dependencies in one database, and in the
// others it was read in; lists are never changed once stored.
type memoDeps struct {
	db   string
	d    *readDeps
	next *memoDeps
}

// maxMemoDBs bounds the databases one analysis keeps dependencies for.
const maxMemoDBs = 4

// maxDepsMemo bounds the entries of the memo, and maxDepsMemoBytes what
// they pin: a statement of a new shape each time, megabytes long, is
// analysed afresh and memoized under a new analysis each time.
const (
	maxDepsMemo      = 20000
	maxDepsMemoBytes = 16 << 20
)

// schemaGen counts the DDL the engine has seen, relayed or applied by
// the follower: what a shape reads may have changed since.
func (e *Engine) schemaGen() uint64 { return e.metaGen() + e.ddlSeen.Load() }

func (e *Engine) metaGen() uint64 {
	if e.meta() == nil {
		return 0
	}
	return e.meta().Gen()
}

// deps returns the table-level dependencies of a read in database db.
// They depend on its shape alone, which is what they are memoized by.
func (e *Engine) deps(info *sqlinfo.Info, db string) *readDeps {
	k := depsKey{info.ShapeKey(), db, false}
	gen := e.metaGen()
	if d := e.depsMemo.load(k, gen); d != nil {
		return d
	}
	d := &readDeps{gen: gen, dated: info.Dated}
	var dbs []string
	add := func(dep, db string) {
		if !slices.Contains(d.all, dep) {
			d.all = append(d.all, dep)
		}
		if !slices.Contains(dbs, db) {
			dbs = append(dbs, db)
		}
	}
	for _, t := range sqlinfo.Qualify(info.Reads, db) {
		d.tables = append(d.tables, t.String())
		add(e.namer().Table(t.DB, t.Name), e.namer().DB(t.DB))
		if e.meta() == nil {
			continue
		}
		m, err := e.meta().Table(context.Background(), t.DB, t.Name)
		switch {
		case errors.Is(err, meta.ErrNoTable):
			d.why = whyUnknownTable
		case err != nil:
			d.why = whyNoMetadata
		case m.Uncacheable != "":
			d.why = m.Uncacheable
		default:
			for _, a := range m.Also {
				adb, _, _ := strings.Cut(a, ".")
				add(a, adb+".*")
			}
		}
		if err == nil && m.RunsCode && m.Kind != meta.Base {
			d.runsCode = true
		}
		if err == nil && m.ReadsDiagnostics {
			d.readsDiag = true
		}
		if err == nil && m.Dated {
			d.dated = true
		}
	}
	d.all = append(d.all, dbs...)
	d.all = append(d.all, deps.Global)
	learned := d.why != whyNoMetadata
	if d.why == "" && info.Point != nil && len(info.Reads) == 1 && !e.cfg.TableLevel && e.meta() != nil {
		t := sqlinfo.Qualify([]sqlinfo.Table{info.Point.Table}, db)[0]
		m := e.tableMeta(t)
		if pk := pkCols(m); pk != nil {
			name := e.namer().Table(t.DB, t.Name)
			d.pt = &pointDeps{table: name, pk: pk, tail: []string{deps.NonKey(name), e.namer().DB(t.DB), deps.Global}}
		}
		learned = learned && m != nil
	}
	if learned {
		// A failure to learn a table is kept only as long as meta keeps
		// it: a lock a client held is gone a second later.
		e.depsMemo.store(k, d)
	}
	return d
}

func (m *depsMemo) load(k depsKey, gen uint64) *readDeps {
	v, ok := m.m[b2i(k.rows)].Load(k.info)
	if !ok {
		return nil
	}
	for e := v.(*memoDeps); e != nil; e = e.next {
		if e.db == k.db {
			if e.d.gen == gen {
				return e.d
			}
			return nil
		}
	}
	return nil
}

func (m *depsMemo) store(k depsKey, d *readDeps) {
	size := 512 + len(k.info.Digest) + len(k.db)
	if size > maxDepsMemoBytes/64 {
		return // computed each time
	}
	m.n.Lock()
	defer m.n.Unlock()
	if m.k >= maxDepsMemo || m.bytes+size > maxDepsMemoBytes {
		m.m[0].Clear()
		m.m[1].Clear()
		m.k, m.bytes = 0, 0
	}
	m.k++
	m.bytes += size
	// The new list: this database first, then up to maxMemoDBs-1 others.
	head := &memoDeps{db: k.db, d: d}
	tail := head
	if v, ok := m.m[b2i(k.rows)].Load(k.info); ok {
		for e, n := v.(*memoDeps), 1; e != nil && n < maxMemoDBs; e = e.next {
			if e.db != k.db {
				tail.next = &memoDeps{db: e.db, d: e.d}
				tail = tail.next
				n++
			}
		}
	}
	m.m[b2i(k.rows)].Store(k.info, head)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// StatusRows are the counters SHOW MYCACHED STATUS shows, with the count
// of open sessions.
func (e *Engine) StatusRows(sessions int) [][2]string {
	st := e.Store.Stats()
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	return [][2]string{
		{"Sessions", strconv.Itoa(sessions)},
		{"Hits_l1", u(e.Stats.hitsL1.Value())},
		{"Hits_memcached", u(e.Stats.hitsMemcached.Value())},
		{"Misses", u(e.Stats.misses.Value())},
		{"Stores", u(e.Stats.stores.Value())},
		{"Snapshot_stores", u(e.Stats.snapshotStores.With("stored").Value())},
		{"Snapshot_stores_changed", u(e.Stats.snapshotStores.With("changed").Value())},
		{"Snapshot_stores_dropped", u(e.Stats.snapshotStores.With("dropped").Value())},
		{"Stores_queued", i(st.StoresQueued)},
		{"Stores_dropped", u(st.StoresDropped)},
		{"Singleflight_shared", u(e.Stats.shared.Value())},
		{"Invalidations", u(e.Stats.invalidations.Value())},
		{"L1_bytes", i(st.L1Bytes)},
		{"L1_entries", i(st.L1Entries)},
		{"Fill_memory_bytes", i(e.fill.Used())},
		{"Pending_bumps", i(int64(st.PendingBumps))},
		{"Memcached_errors", i(int64(st.MemcachedErrors))},
		{"Memcached_list_mismatches", u(st.RingMismatches)},
		{"Memcached_gets", u(st.MemcachedGets)},
		{"Memcached_get_writes", u(st.MemcachedGetWrites)},
	}
}

// metaStale reports whether what meta knew when a read's dependencies d
// were derived may be stale, so that its miss must not store under them:
// meta forgot a table since, or the global generation the miss read from
// memcached (gens, aligned with all) moved since the last miss.
//
// Every sidecar bumps the global generation when it relays DDL that the
// binlog will not show (sql_log_bin off): a view's new definition, a
// MERGE table's new union, a new column. The others' followers cannot
// tell them, and what their meta derived from the old definition (the
// tables a view reads) would key new entries to tables no write to the
// new ones bumps. So a moved global generation, rare otherwise (FLUSH, a
// lost binlog position, a write mycached cannot map), has meta forget
// everything. Meta forgets before globalSeen moves, so that a concurrent
// miss that finds it moved derived its dependencies after the forget.
// The miss derives them again, and stores only when they are the same.
func (e *Engine) metaStale(d *readDeps, all []string, gens []uint64) bool {
	if e.meta() == nil || !e.Store.Shared() {
		return false
	}
	if i := slices.Index(all, deps.Global); i >= 0 && i < len(gens) {
		switch old := e.globalSeen.Load(); {
		case old == 0:
			// Not read when meta came up (memcached was away): this
			// is the first reading, nothing to compare it with.
			e.globalSeen.CompareAndSwap(0, gens[i])
		case gens[i] != old:
			e.meta().ForgetAll()
			e.globalSeen.CompareAndSwap(old, gens[i])
			return true
		}
	}
	return d.gen != e.metaGen()
}

// policyTable returns the range generation's name of a table a policy
// names ("db.table", checked by cachepolicy.SplitTableName), named as
// every other path names it: folded under lower_case_table_names, its
// special bytes escaped.
func (e *Engine) policyTable(name string) string {
	db, table, ok := cachepolicy.SplitTableName(name)
	if !ok {
		return deps.Global // not one the policy engine lets through
	}
	return e.namer().Table(db, table)
}

// Invalidate bumps the generations of db.table, as MYCACHED INVALIDATE
// TABLE asks. No binlog shows it: deps.Unlogged tells the sidecars whose
// hits trust their follower.
func (e *Engine) Invalidate(ctx context.Context, db, table string) {
	name := e.namer().Table(db, table)
	e.Store.Bump(ctx, []string{name, deps.NonKey(name), deps.Unlogged})
	e.Stats.invalidations.Inc()
}

// Flush invalidates every entry, in every sidecar, as MYCACHED FLUSH
// asks (store.Flush), and tells the sidecars whose hits trust their
// follower (deps.Unlogged).
func (e *Engine) Flush(ctx context.Context) error {
	err := e.Store.Flush(ctx)
	e.Store.Bump(ctx, []string{deps.Unlogged})
	return err
}

var discardPool = sync.Pool{New: func() any { return bufio.NewWriterSize(io.Discard, wire.BufSize) }}

func discard() *bufio.Writer { return discardPool.Get().(*bufio.Writer) }

func putDiscard(w *bufio.Writer) {
	w.Reset(io.Discard)
	discardPool.Put(w)
}
