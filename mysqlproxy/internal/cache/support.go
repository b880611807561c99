package cache

import (
	"bufio"
	"context"
	"io"
	"strconv"
	"sync"

	"github.com/mycached/mycached/mysqlproxy/internal/sqlinfo"
	"github.com/mycached/mycached/mysqlproxy/internal/wire"
)

// readDeps are the dependencies of a read: its tables ("db.table"), and
// all of them plus the database-wide and global generations.
type readDeps struct {
	tables []string
	all    []string
	point  bool       // a primary-key lookup: rows and the non-key generation
	keys   [][]string // the primary-key values of its rows
	keyStr []string   // the same, one string a row, as policies see them
}

// depsMemo memoizes the dependencies of an analysis in a database, so the
// hot path builds no strings. Analyses are shared and immutable, so the
// pointer is a sound key.
type depsMemo struct {
	m sync.Map // depsKey -> *readDeps
	n sync.Mutex
	k int
}

type depsKey struct {
	info *sqlinfo.Info
	db   string
	rows bool // the dependencies with row-level ones, not the table-level base
}

const maxDepsMemo = 20000

func (e *Engine) deps(info *sqlinfo.Info, db string) *readDeps {
	k := depsKey{info, db, false}
	if v, ok := e.depsMemo.m.Load(k); ok {
		return v.(*readDeps)
	}
	d := &readDeps{}
	dbs := map[string]bool{}
	for _, t := range sqlinfo.Qualify(info.Reads, db) {
		d.tables = append(d.tables, t.String())
		dbs[t.DB] = true
	}
	d.all = append(d.all, d.tables...)
	for x := range dbs {
		d.all = append(d.all, x+".*")
	}
	d.all = append(d.all, "*")
	e.depsMemo.store(k, d)
	return d
}

func (m *depsMemo) store(k depsKey, d *readDeps) {
	m.n.Lock()
	if m.k >= maxDepsMemo {
		m.m.Clear()
		m.k = 0
	}
	m.k++
	m.n.Unlock()
	m.m.Store(k, d)
}

// clear forgets every memoized dependency list: what mycached knows of
// primary keys may have changed.
func (m *depsMemo) clear() {
	m.n.Lock()
	m.m.Clear()
	m.k = 0
	m.n.Unlock()
}

func (e *Engine) getTee() []byte {
	if b, ok := e.tees.Get().(*[]byte); ok {
		return (*b)[:0]
	}
	return make([]byte, 0, 16<<10)
}

func (e *Engine) putTee(b []byte) {
	if b == nil || cap(b) > 1<<20 {
		return
	}
	b = b[:0]
	e.tees.Put(&b)
}

// StatusRows are the counters SHOW MYCACHED STATUS shows, with the count
// of open sessions.
func (e *Engine) StatusRows(sessions int) [][2]string {
	st := e.Store.Stats()
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	return [][2]string{
		{"Sessions", strconv.Itoa(sessions)},
		{"Hits_l1", u(e.Stats.hits.With("l1").Value())},
		{"Hits_memcached", u(e.Stats.hits.With("memcached").Value())},
		{"Misses", u(e.Stats.misses.Value())},
		{"Stores", u(e.Stats.stores.Value())},
		{"Singleflight_shared", u(e.Stats.shared.Value())},
		{"Invalidations", u(e.Stats.invalidations.Value())},
		{"L1_bytes", i(st.L1Bytes)},
		{"L1_entries", i(st.L1Entries)},
		{"Pending_bumps", i(int64(st.PendingBumps))},
		{"Memcached_errors", i(int64(st.MemcachedErrors))},
		{"Memcached_gets", u(st.MemcachedGets)},
		{"Memcached_get_writes", u(st.MemcachedGetWrites)},
	}
}

// Invalidate bumps the generations of the table name ("db.t"), as MYCACHED
// INVALIDATE TABLE asks.
func (e *Engine) Invalidate(ctx context.Context, name string) {
	e.Store.Bump(ctx, []string{name, nonKey(name)})
	e.Stats.invalidations.Inc()
}

var discardPool = sync.Pool{New: func() any { return bufio.NewWriterSize(io.Discard, wire.BufSize) }}

func discard() *bufio.Writer { return discardPool.Get().(*bufio.Writer) }

func putDiscard(w *bufio.Writer) {
	w.Reset(io.Discard)
	discardPool.Put(w)
}
