// Package cache is mycached's read cache on a relayed session: it serves
// cacheable reads from the store or fills it from the backend, and makes
// every write it relays invalidate what it touched. The Engine holds what
// all sessions share; a Session is one client's state.
package cache

import (
	"sync"

	"github.com/mycached/mycached/cachepolicy"
	"github.com/mycached/mycached/mysqlproxy/internal/relay"
	"github.com/mycached/mycached/mysqlproxy/internal/sqlinfo"
	"github.com/mycached/mycached/mysqlproxy/internal/store"
	"github.com/mycached/mycached/mysqlproxy/internal/store/flight"
)

// InTransactions says which reads inside a transaction may use the cache.
type InTransactions string

// The modes of --cache-in-transactions.
const (
	UntilWrite InTransactions = "until-write" // until the transaction has written
	ReadOnly   InTransactions = "read-only"   // only in transactions started READ ONLY
	Never      InTransactions = "never"       // never inside a transaction
)

// Config is what the cache needs of the server's configuration.
type Config struct {
	Passthrough         bool  // cache nothing; writes still invalidate
	TableLevel          bool  // no row-level dependencies
	MaxResultBytes      int64 // the largest response stored
	CacheInTransactions InTransactions
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

	flight   flight.Group
	depsMemo depsMemo
	pks      pkCache
	tees     sync.Pool // *[]byte tee buffers
}

// NewEngine returns an engine over an analyzer, a store, a policy and
// the counters it keeps.
func NewEngine(cfg Config, a *sqlinfo.Analyzer, st *store.Store, p cachepolicy.Policy, stats *Stats) *Engine {
	return &Engine{cfg: cfg, Analyzer: a, Store: st, Policy: p, Stats: stats}
}

// Session is one client session's cache state. It is owned by the
// session's goroutine.
type Session struct {
	e *Engine
	s *relay.Session

	state    sessState           // what can change a read's result
	CacheOff bool                // SET @mycached_cache = 0
	tainted  bool                // session state changed in ways we cannot see
	txWrote  bool                // the open transaction has written
	txDeps   map[string]struct{} // what it wrote, bumped again when it ends
	temps    map[string]struct{} // temporary tables ("db.t"), which shadow real ones
	q        cachepolicy.Query   // reused for each policy call
	checkBuf []byte
}

// NewSession returns the cache state of the relayed session s, which has
// just finished its handshake.
func (e *Engine) NewSession(s *relay.Session) *Session {
	c := &Session{e: e, s: s}
	c.state.reset(s.Hello.Charset)
	return c
}

// Tables returns the qualified tables ("db.t") a cacheable analysis
// reads in database db, as policies see them.
func (e *Engine) Tables(info *sqlinfo.Info, db string) []string {
	return e.deps(info, db).tables
}
