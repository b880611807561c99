// Package cache is mycached's read cache on a relayed session: it serves
// cacheable reads from the store or fills it from the backend, and makes
// every write it relays invalidate what it touched. The Engine holds what
// all sessions share; a Session is one client's state.
package cache

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/mycached/mycached/cachepolicy"
	"github.com/mycached/mycached/mysqlproxy/internal/deps"
	"github.com/mycached/mycached/mysqlproxy/internal/meta"
	"github.com/mycached/mycached/mysqlproxy/internal/relay"
	"github.com/mycached/mycached/mysqlproxy/internal/sqlinfo"
	"github.com/mycached/mycached/mysqlproxy/internal/store"
	"github.com/mycached/mycached/mysqlproxy/internal/store/flight"
	"github.com/mycached/mycached/mysqlproxy/internal/wire"
)

// InTransactions says which reads inside a transaction may use the cache.
type InTransactions string

// The modes of --cache-in-transactions.
const (
	UntilWrite InTransactions = "until-write" // until the transaction has written
	// AfterFirstRead is UntilWrite, but the server runs the read that
	// begins a transaction (autocommit off) and the one that takes its
	// snapshot, as it would without the cache.
	AfterFirstRead InTransactions = "after-first-read"
	ReadOnly       InTransactions = "read-only" // only in transactions started READ ONLY
	Never          InTransactions = "never"     // never inside a transaction
)

// Consistency says how a hit is checked against writes.
type Consistency string

// The consistency levels of --consistency.
const (
	// Strict checks the generations in memcached, which every write
	// through a sidecar bumps before its OK, on every hit.
	Strict Consistency = "strict"
	// Bounded checks the sidecar's own view of the generations, which its
	// writes and its binlog follower bump, while the follower is within
	// MaxStaleness of the server; past it, hits are checked as Strict.
	Bounded Consistency = "bounded"
)

// Config is what the cache needs of the server's configuration.
type Config struct {
	Passthrough    bool  // cache nothing; writes still invalidate
	TableLevel     bool  // no row-level dependencies
	MaxResultBytes int64 // the largest response stored
	// Fill bounds the bytes of responses held, by every session at once,
	// while they are filled into the cache: their copies for the cache,
	// and what clients that read slowly have not read yet. nil: a bound
	// of DefaultFillMemory.
	Fill                *wire.Budget
	CacheInTransactions InTransactions
	Consistency         Consistency   // default Strict
	MaxStaleness        time.Duration // Bounded's bound
}

// DefaultFillMemory is the bound of a nil Config.Fill.
const DefaultFillMemory = 256 << 20

// Follower is what the cache asks of the binlog follower.
type Follower interface {
	// FreshAsOf returns a time before which every committed change has
	// been applied to the local view.
	FreshAsOf() time.Time
	// CurrentAsOf waits until everything committed before t has been
	// applied, and reports whether it was before ctx ended.
	CurrentAsOf(ctx context.Context, t time.Time) bool
	// SettleWindow is how long after a transaction's first bump an entry
	// may still hold the rows from before it.
	SettleWindow() time.Duration
	// Applied reports whether the transaction of a GTID (@@last_gtid)
	// has been applied.
	Applied(gtid string) bool
	// WaitApplied waits until the transaction of a GTID has been
	// applied, and reports whether it was before ctx ended.
	WaitApplied(ctx context.Context, gtid string) bool
	// AppliedSeqs returns the applied position, a sequence number per
	// domain.
	AppliedSeqs() map[uint32]uint64
	// DepsThrough returns the dependencies bumped for the transactions
	// applied after from up to gtid (and maybe more), or false when it
	// cannot tell them all.
	DepsThrough(from map[uint32]uint64, gtid string) ([]string, bool)
}

// Engine is the part of the cache every session shares. Its methods are
// safe for concurrent use.
type Engine struct {
	cfg      Config
	Analyzer *sqlinfo.Analyzer
	Store    *store.Store
	Policy   cachepolicy.Policy
	Stats    *Stats
	Queries  QueryStats

	fill     *wire.Budget              // Config.Fill
	metaP    atomic.Pointer[meta.Meta] // nil: no metadata, every dependency table-level
	follower atomic.Pointer[Follower]
	// followerDue says a follower is configured and has not yet given
	// up: until it runs, nothing says what changed while no sidecar
	// was following the binlog.
	followerDue atomic.Bool
	peers       atomic.Pointer[Peers]

	flights flight.Early
	ghosts  ghosts
	proven  provenSet // accounts' proofs for shared entries
	// ddlSeen counts the DDL this process relayed: with what the
	// metadata forgot, it ends the proofs (see sharedProof).
	ddlSeen atomic.Uint64
	replays replaying // large responses being replayed, against fill
	// snapWaiting counts the bytes of snapshot reads' entries waiting
	// for the follower (putWhenCurrent).
	snapWaiting atomic.Int64
	depsMemo    depsMemo
	inFlight    writesInFlight
	// globalSeen is the global generation the last miss read from
	// memcached (see metaStale); 0 before the first.
	globalSeen atomic.Uint64
}

// NewEngine returns an engine over an analyzer, a store, a policy and
// the counters it keeps. m may be nil: then mycached knows nothing of
// the schema, and every dependency is table-level.
func NewEngine(cfg Config, a *sqlinfo.Analyzer, st *store.Store, p cachepolicy.Policy, stats *Stats, m *meta.Meta) *Engine {
	if cfg.Consistency == "" {
		cfg.Consistency = Strict
	}
	if cfg.Fill == nil {
		cfg.Fill = wire.NewBudget(DefaultFillMemory)
	}
	e := &Engine{cfg: cfg, Analyzer: a, Store: st, Policy: p, Stats: stats, fill: cfg.Fill}
	e.SetMeta(m)
	if stats != nil && stats.reg != nil {
		stats.reg.GaugeFunc("mycached_fill_memory_bytes", "Bytes of responses held while they are filled into the cache (bounded by --fill-memory).",
			func() float64 { return float64(e.fill.Used()) })
	}
	return e
}

// SetMeta gives the engine the metadata connection, once it is up. The
// global generation is read first, so that a move of it after anything
// is learned tells that it may be stale (metaStale).
func (e *Engine) SetMeta(m *meta.Meta) {
	if m != nil && e.Store != nil && e.Store.Shared() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		if g, err := e.Store.SharedGen(ctx, deps.Global); err == nil {
			e.globalSeen.Store(g)
		}
		cancel()
	}
	e.metaP.Store(m)
}

// meta returns the metadata connection, or nil.
func (e *Engine) meta() *meta.Meta { return e.metaP.Load() }

// namer names dependencies as the backend compares table names.
func (e *Engine) namer() deps.Namer {
	if m := e.meta(); m != nil {
		return m.Namer()
	}
	return deps.Namer{}
}

// BumpFromBinlog invalidates what the binlog follower says a committed
// transaction changed.
func (e *Engine) BumpFromBinlog(ctx context.Context, ds []string) {
	e.Store.BumpApplied(ctx, ds)
	e.Stats.invalidations.Add(uint64(len(ds)))
}

// SetFollower gives the engine the binlog follower that keeps its local
// view current, once it runs; nil means none.
func (e *Engine) SetFollower(f Follower) {
	if f == nil {
		e.follower.Store(nil)
		return
	}
	e.follower.Store(&f)
}

// Peers is what the cache asks of the links to the fleet's other
// sidecars (package peers).
type Peers interface {
	// Trusted reports whether every write another sidecar has
	// acknowledged to its client has bumped the local view.
	Trusted() bool
}

// SetPeers gives the engine the links to the fleet's other sidecars;
// nil means none.
func (e *Engine) SetPeers(p Peers) {
	if p == nil {
		e.peers.Store(nil)
		return
	}
	e.peers.Store(&p)
}

// mode returns how a hit wanting consistency c may be checked now, or
// false when it must not use the cache at all: Bounded, with no shared
// tier to fall back on, and a follower that is not current.
//
// A Strict hit is checked against the local view, as a Bounded one,
// while the peers are trusted: every sidecar's acknowledged writes have
// bumped it, and the follower is current for the writes that bypass
// them.
func (e *Engine) mode(c Consistency) (store.Mode, bool) {
	if c == "" {
		c = e.cfg.Consistency
	}
	if c != Bounded {
		if e.followerLate() {
			// The generations in memcached are only as current as the
			// followers that bump them: this one is late (it resumes
			// after a restart, or cannot reconnect), and so may every
			// other, as after a fleet's restart. The read goes to the
			// server until it has caught up.
			e.Stats.strictFallbacks.Inc()
			return store.Strict, false
		}
		if p := e.peers.Load(); p != nil && (*p).Trusted() && e.followerCurrent() {
			e.Stats.peerChecked.Inc()
			return store.Bounded, true
		}
		return store.Strict, true
	}
	if !e.followerCurrent() {
		// The follower is further behind than the bound: so, most
		// likely, are the others, whose bumps a strict check reads. The
		// read goes to the server.
		e.Stats.fallbacks.Inc()
		return store.Strict, false
	}
	return store.Bounded, true
}

// strictLag is how far behind the server a follower may be before strict
// reads stop trusting the generations it bumps, if MaxStaleness is less:
// strict hits are as current as the followers, whose lag under a burst
// of writes is no reason to stop serving them; a follower that cannot
// reconnect, or has not caught up since it started or since its stream
// was last cut (FreshAsOf is zero then), is.
const strictLag = 5 * time.Second

// followerLate reports whether a follower is configured and further
// behind than strictLag (or MaxStaleness): it is running and behind, it
// cannot reconnect, or it is due and not running yet. A sidecar whose
// follower cannot run (the binlog is off, a grant is missing) relies on
// the parse of the writes it relays, as without one.
func (e *Engine) followerLate() bool {
	if e.follower.Load() == nil {
		return e.followerDue.Load()
	}
	return !e.followerWithin(max(e.cfg.MaxStaleness, strictLag))
}

// FollowerDue says whether a follower is configured and expected to run
// soon: until SetFollower gives it, strict reads go to the server.
func (e *Engine) FollowerDue(due bool) { e.followerDue.Store(due) }

// followerCurrent reports whether the follower is within MaxStaleness.
func (e *Engine) followerCurrent() bool { return e.followerWithin(e.cfg.MaxStaleness) }

// followerWithin reports whether a follower runs and was last known to
// have applied everything less than d ago.
func (e *Engine) followerWithin(d time.Duration) bool {
	f := e.follower.Load()
	return f != nil && time.Since((*f).FreshAsOf()) <= d
}

// Session is one client session's cache state. It is owned by the
// session's goroutine.
type Session struct {
	e *Engine
	s *relay.Session

	// The execute the policy is deciding on, for q.params (policyParams).
	policyExec []byte
	policyStmt *relay.Stmt
	paramsFn   func() []any

	state    sessState           // what can change a read's result
	CacheOff bool                // SET @mycached_cache = 0
	tainted  bool                // session state changed in ways we cannot see
	txWrote  bool                // the open transaction has written
	xa       bool                // an XA transaction is open: its end may come from another session
	txDeps   map[string]struct{} // what it wrote, bumped again when it ends
	// txRoutine says the open transaction ran a stored function with no
	// follower to apply what it wrote, and txRoutineGTID is @@last_gtid
	// before it: see routineRan.
	txRoutine     bool
	txRoutineGTID string
	// txUnseen are the databases of the tables the transaction wrote
	// whose triggers' tables the follower had not learned (see
	// coWritesUnseen): its COMMIT waits for the follower.
	txUnseen []string
	// callFrom is the follower's applied position when the CALL being
	// handled was sent (see callWrites).
	callFrom map[uint32]uint64
	temps    map[string]struct{} // temporary tables ("db.t"), which shadow real ones
	// tempsUnknown says a statement may have created temporary tables
	// no parse or tracker shows (MariaDB reports none made by CREATE
	// TEMPORARY TABLE ... SELECT, and none made by stored code or
	// EXECUTE can be parsed): each table a read names is then asked
	// about once (tempsChecked holds those found real) before the cache
	// serves or stores it.
	tempsUnknown bool
	tempsChecked map[string]struct{}
	q            cachepolicy.Query // reused for each policy call
	checkBuf     []byte

	// ownWrite is the GTID of the session's last write through this
	// sidecar, while the follower has not applied it, and ownWriteAt
	// when it returned (for a write whose GTID the server did not report).
	ownWrite   string
	ownWriteAt time.Time

	// db is the database the statement being handled binds its tables
	// in: the session's current one, or for a prepared statement the one
	// current when it was prepared.
	db string
	// started is when the statement being handled was sent.
	started time.Time
	// txStart is when the open transaction began: a read in it sees a
	// snapshot no older than that (REPEATABLE READ takes it at the first
	// read), so what was bumped since may be newer than what it reads.
	txStart time.Time
	// txUnknownIsolation says the open transaction's isolation was set
	// for it alone (SET TRANSACTION), and is not known.
	txUnknownIsolation, nextTxUnknown bool
	// addrScope is what byAddress found for the identity checked, at
	// meta's GrantsGen gen, and the scope with the address for the
	// identity of.
	addrScope struct {
		checked, of, scope string
		gen                uint64
		byAddr             bool
	}
	// txIsolation is the open transaction's isolation level, as it began.
	txIsolation string
	// logBinUnseen says state changed unseen since sql_log_bin was last
	// read (it may be off); logBinStale says the statement being handled
	// began so.
	logBinUnseen, logBinStale bool
	// lockedTables says the session holds LOCK TABLES.
	lockedTables bool
	// txSnap says the open transaction may have taken its snapshot, and
	// txSnapAt when the statement that may have taken it began.
	txSnap   bool
	txSnapAt time.Time
	// txSnapEnd is when that statement ended: the snapshot holds no
	// commit made after it. txSnapCurrent says the follower has applied
	// every commit made before it.
	txSnapEnd     time.Time
	txSnapCurrent bool
	// hitServed says the read being handled was answered from the cache.
	hitServed bool
	// probed says the read being handled is a rejected shape's probe
	// (admission.probe), drawn before its text was analysed (unjudged).
	probed bool
	// unjudgedFn is c.unjudged, made once; unjudgedP is the command it
	// judges, unjudgedSQL its text, and unjudgedStat the counts of the
	// shape it found enough.
	unjudgedFn   func(*sqlinfo.Info) bool
	unjudgedP    []byte
	unjudgedSQL  string
	unjudgedStat *queryStat
	// lastHit is the command last answered from the cache: the backend
	// did not run it, so what the session's previous statement left
	// (ROW_COUNT(), warnings, FOUND_ROWS()) is not what it would be.
	lastHit    []byte
	lastHitSQL string // its statement's text
	// hitPayload is the hit's response, when small (hitPayloadMax): what
	// FOUND_ROWS() is after it can be read from it. hitFound is that
	// count once a USE moved the session away from the hit's database:
	// a statement of as many rows (foundRowsSQL) then makes
	// FOUND_ROWS() in place of the hit's rerun; -1 otherwise.
	hitPayload []byte
	// hitCount is the rows of a hit whose response was too large to
	// keep, counted as it was served; -1 when not counted.
	hitCount int
	hitFound int
	// serverFound is FOUND_ROWS() on the server once a SELECT since the
	// hit set it (the hit's no longer matters), -1 when not known: a
	// rerun of the hit for its warnings makes it again after.
	serverFound int
	// zeroedRowCount says the statements run since the hit left
	// ROW_COUNT() at 0 (a SET, a DO, a BEGIN): the hit's rerun, for
	// what else they left as the hit's, sets it to -1, and is followed
	// by a DO that sets it back.
	zeroedRowCount bool
	// until is when the current read's entry must expire at the latest:
	// its session's next midnight, for a read that may take the current
	// date (readDeps.dated); zero otherwise.
	until time.Time
	// hitDiag is what of the diagnostics the statements run since the
	// hit left as they were: the hit's to make.
	hitDiag diagnostics
	// diagStmts are the statements the session prepared by name (PREPARE
	// name FROM ...) whose text may read diagnostics, or is a variable's.
	diagStmts map[string]bool
	// hideStmts are the statements the session prepared by name whose
	// text may run stored code or set sql_log_bin (see execMayHide).
	hideStmts map[string]bool

	// dia is how the server reads the session's texts, computed for
	// the session state diaGen and diaState describe.
	dia      sqlinfo.Dialect
	diaGen   uint64
	diaState uint64
	diaSet   bool
}

// dialect returns how the server reads the session's statement texts:
// its sql_mode and character_set_client, as the server reports them, or
// as the session's SETs left them when the server does not track state.
func (c *Session) dialect() sqlinfo.Dialect {
	if c.diaSet && c.diaGen == c.s.VarsGen && c.diaState == c.state.digest {
		return c.dia
	}
	mode, cs := c.s.Vars["sql_mode"], c.s.Vars["character_set_client"]
	if !c.s.Track {
		if v, ok := c.state.vars["sql_mode"]; ok {
			mode = v
		}
		if v, ok := c.state.vars["character_set_client"]; ok {
			cs = v
		}
	}
	c.dia, c.diaGen, c.diaState, c.diaSet = sqlinfo.DialectOf(mode, cs), c.s.VarsGen, c.state.digest, true
	c.dia.NoSchema = c.s.NoSchema()
	return c.dia
}

// stmtNote is what the cache keeps of a prepared statement.
type stmtNote struct {
	info *sqlinfo.Info
	db   string // the database current at PREPARE, in which its tables were bound
	// The session state at PREPARE, which the server parsed the text
	// under (sql_mode's ANSI_QUOTES, the character sets), kept for every
	// execute; known says whether mycached knew it then.
	state uint64
	known bool
	// schema is the engine's schemaGen when the server last prepared
	// the statement, at PREPARE or at an execute it ran.
	schema uint64
	// diag is what of the diagnostics the statement may read
	// (diagnosticsRead of its text), read once at PREPARE.
	diag diagnostics
	// keyText is the statement's text as its entries are keyed
	// (sqlinfo.KeyText), as the server parsed it at PREPARE.
	keyText string
}

// user is the session's user name as policies see it: the account's.
func (c *Session) user() string { return c.s.User() }

// scope is who an entry filled by this session is for: the account the
// server matched, with its roles in force, and the address the server
// sees the session come from when the account's privileges may depend on
// it (meta.GrantsByAddress).
func (c *Session) scope() string {
	if c.s.Identity == "" {
		return c.s.Hello.User
	}
	if !c.byAddress() {
		return c.s.Identity
	}
	if c.addrScope.of != c.s.Identity {
		c.addrScope.of, c.addrScope.scope = c.s.Identity, c.s.Identity+"@"+c.s.ServerAddr()
	}
	return c.addrScope.scope
}

// byAddress reports whether the session's privileges may depend on the
// address the server sees it come from, as last found for its account
// and grants.
func (c *Session) byAddress() bool {
	if c.s.Identity[0] == '?' {
		return false // a scope of its own already
	}
	m := c.e.meta()
	if m == nil {
		return true
	}
	a := &c.addrScope
	if gen := m.GrantsGen(); a.checked != c.s.Identity || a.gen != gen {
		a.checked, a.gen = c.s.Identity, gen
		a.byAddr = m.GrantsByAddress(context.Background(), c.s.AccountUser(), c.s.AccountHost())
	}
	return a.byAddr
}

// NewSession returns the cache state of the relayed session s, which has
// just finished its handshake.
func (e *Engine) NewSession(s *relay.Session) *Session {
	c := &Session{e: e, s: s}
	c.state.reset(s.Hello.Charset)
	c.loggedIn()
	return c
}

// Tables returns the qualified tables ("db.t") a cacheable analysis
// reads in database db, as policies see them.
func (e *Engine) Tables(info *sqlinfo.Info, db string) []string {
	return e.deps(info, db).tables
}
