package cachepolicy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/mycached/mycached/scripts"
)

// defaultScriptName is the chunk name of the embedded default, as it
// appears in error messages.
const defaultScriptName = scripts.DefaultName

// Errors returned by Load, Reload and the hooks.
var (
	// ErrCompile reports a script that does not parse or compile.
	ErrCompile = errors.New("cachepolicy: script does not compile")
	// ErrTopLevel reports a script whose top level fails to run.
	ErrTopLevel = errors.New("cachepolicy: script top level failed")
	// ErrRead reports a script file that cannot be read.
	ErrRead = errors.New("cachepolicy: cannot read script")
	// ErrClosed reports a Reload after Close.
	ErrClosed = errors.New("cachepolicy: engine closed")
)

// KVStore is the kv namespace that scripts reach through cache.get, set and
// delete. A missing key is (nil, false, nil).
type KVStore interface {
	Get(key string) ([]byte, bool, error)
	Set(key string, val []byte, ttl time.Duration) error
	Delete(key string) error
}

// Options configures an Engine. Zero values are replaced by the defaults
// named on each field.
type Options struct {
	// Timeout bounds each hook call, including the hooks it reaches
	// through next, and the library functions it calls. A call past it is
	// killed: the statement is served and not cached. Default DefaultTimeout.
	Timeout time.Duration
	// MaxMemory bounds the bytes each hook call may allocate through the
	// string and table libraries, the kv store and the .. operator, on top
	// of twice the size of the statement it is given (its SQL text,
	// digest and string parameters), so that a query hook can rewrite a
	// statement of any size. A call past it is killed like one past its
	// deadline. Default DefaultMaxMemory (4 MiB).
	MaxMemory int64
	// Logger receives script errors (once per minute per site) and the
	// scripts' own log.info and log.warn lines. Default: discard.
	Logger *slog.Logger
	// KV backs cache.get/set/delete. Nil makes them report an error.
	KV KVStore
	// Metrics increments the counter "script_"+name for metrics.inc(name).
	// Nil drops the increments.
	Metrics func(name string)
	// MaxPool bounds the number of Lua states, and so the number of hook
	// calls that run at once. Default 2 × GOMAXPROCS.
	MaxPool int
	// MemoSize bounds the number of memoized decisions. Default 65536.
	MemoSize int
	// DefaultTTL is the ttl of the built-in default, which scripts read as
	// require("mycached").default_ttl (seconds). Default 60s.
	DefaultTTL time.Duration
}

// Stats are the engine's counters since Load. Reloads do not reset them.
type Stats struct {
	Calls      uint64 // hook calls that entered Lua
	MemoHits   uint64 // cache decisions answered from the memo
	Kills      uint64 // hook calls stopped by their deadline, their memory budget or Close
	Errors     uint64 // hook calls that raised an error
	BadResults uint64 // hook results of the wrong shape
}

// DefaultTimeout is a hook call's deadline when Options.Timeout is not
// set, and the default of --policy-timeout.
const DefaultTimeout = 5 * time.Millisecond

// Engine runs an ordered list of Lua policy scripts. It implements Policy
// and is safe for concurrent use.
type Engine struct {
	opts  Options
	files []string // as given to Load; empty means the embedded default

	// ctx is the parent of every call's budget; Close cancels it, which
	// stops every call in flight at once.
	ctx    context.Context
	stop   context.CancelFunc
	closed atomic.Bool

	cur atomic.Pointer[scriptSet] // swapped whole by Reload

	calls, memoHits, kills, errs, bad atomic.Uint64
	blamed                            map[string]*scriptCounts // by script name; read-only after Load

	scriptLogs logLimiter          // bounds the scripts' own log lines
	logMu      sync.Mutex          // protects logged
	logged     map[string]*siteLog // site -> when it was last logged
	builtin    Default             // what next(q) returns below the first script
}

var _ Policy = (*Engine)(nil)

// Load compiles files in order and runs their top levels once to check
// them. With no files it loads the embedded default.lua. A later script's
// hooks wrap the earlier ones': each hook gets next as its second argument.
func Load(files []string, opts Options) (*Engine, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MaxPool <= 0 {
		opts.MaxPool = 2 * runtime.GOMAXPROCS(0)
	}
	if opts.MemoSize <= 0 {
		opts.MemoSize = 1 << 16
	}
	if opts.DefaultTTL <= 0 {
		opts.DefaultTTL = 60 * time.Second
	}
	if opts.MaxMemory <= 0 {
		opts.MaxMemory = DefaultMaxMemory
	}
	e := &Engine{
		opts:    opts,
		files:   append([]string(nil), files...),
		logged:  make(map[string]*siteLog),
		builtin: Default{TTL: opts.DefaultTTL},
	}
	e.blamed = make(map[string]*scriptCounts)
	for _, f := range e.Files() {
		e.blamed[f] = &scriptCounts{}
	}
	e.ctx, e.stop = context.WithCancel(context.Background())
	set, err := e.compile()
	if err != nil {
		e.stop()
		return nil, err
	}
	e.cur.Store(set)
	return e, nil
}

// Reload re-reads and recompiles the files given to Load. On failure the
// scripts in force stay and the error names file:line. A successful reload
// forgets every memoized decision.
func (e *Engine) Reload() error {
	if e.closed.Load() {
		return ErrClosed
	}
	set, err := e.compile()
	if err != nil {
		e.opts.Logger.Error("policy reload failed; keeping the old scripts", "err", err)
		return err
	}
	e.cur.Store(set)
	// The new scripts' failures are logged as they come, not held back
	// by the old ones'.
	e.logMu.Lock()
	clear(e.logged)
	e.logMu.Unlock()
	e.opts.Logger.Info("policy reloaded", "files", e.Files())
	return nil
}

// Close stops every hook call in flight and makes later calls answer at
// once without Lua: Cache says don't cache, Invalidate and Query say
// nothing. It never waits for a hook: a call it stops returns by itself
// within one budget check, and its state is dropped then. Close is for
// shutdown, so that draining sessions never wait on a script.
func (e *Engine) Close() {
	if e.closed.Swap(true) {
		return
	}
	e.stop()
	set := e.cur.Load()
	for {
		select {
		case st := <-set.pool:
			st.L.Close()
		default:
			return
		}
	}
}

// Files returns the script names in load order.
func (e *Engine) Files() []string {
	if len(e.files) == 0 {
		return []string{defaultScriptName}
	}
	return append([]string(nil), e.files...)
}

// HasQueryHook reports whether any loaded script defines query, so that
// the proxy can skip the call entirely when none does.
func (e *Engine) HasQueryHook() bool {
	return e.cur.Load().has[hookQuery]
}

// Stats returns a snapshot of the counters.
func (e *Engine) Stats() Stats {
	return Stats{
		Calls:      e.calls.Load(),
		MemoHits:   e.memoHits.Load(),
		Kills:      e.kills.Load(),
		Errors:     e.errs.Load(),
		BadResults: e.bad.Load(),
	}
}

// ScriptStats are one script's share of the engine's errors and kills:
// those whose site, file:line, is in the script. A kill is blamed on the
// line it stopped in, or else on the outermost hook, which is the last
// script's that defines it.
type ScriptStats struct {
	Name   string // as given to Load, or the embedded default's name
	Errors uint64
	Kills  uint64
}

type scriptCounts struct{ errs, kills atomic.Uint64 }

// ScriptStats returns each script's counts, in load order.
func (e *Engine) ScriptStats() []ScriptStats {
	var out []ScriptStats
	for _, f := range e.Files() {
		c := e.blamed[f]
		out = append(out, ScriptStats{Name: f, Errors: c.errs.Load(), Kills: c.kills.Load()})
	}
	return out
}

// blame counts a failed call against the script that site is in.
func (e *Engine) blame(site string, killed bool) {
	i := strings.LastIndexByte(site, ':')
	if i < 0 {
		return
	}
	c := e.blamed[site[:i]]
	if c == nil {
		return
	}
	if killed {
		c.kills.Add(1)
	} else {
		c.errs.Add(1)
	}
}

// compile reads, compiles and checks the scripts, and returns a new set
// holding one ready state.
func (e *Engine) compile() (*scriptSet, error) {
	var srcs []source
	if len(e.files) == 0 {
		b, err := scripts.FS.ReadFile(scripts.DefaultName)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrRead, err)
		}
		srcs = []source{{name: defaultScriptName, text: b}}
	}
	for _, f := range e.files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrRead, err)
		}
		srcs = append(srcs, source{name: f, text: b})
	}
	set := &scriptSet{
		eng:  e,
		pool: make(chan *state, e.opts.MaxPool),
		sem:  make(chan struct{}, e.opts.MaxPool),
		memo: newMemo(e.opts.MemoSize),
	}
	for _, s := range srcs {
		p, err := compileChunk(s.name, s.text)
		if err != nil {
			return nil, err
		}
		set.protos = append(set.protos, p)
	}
	// The first state both validates the top levels and learns which
	// hooks exist; it then seeds the pool.
	set.sem <- struct{}{}
	st, err := newState(set)
	if err != nil {
		return nil, err
	}
	set.has = st.has
	set.memoOK = st.memoOK
	set.pool <- st
	return set, nil
}

// source is one script's name and text.
type source struct {
	name string
	text []byte
}

// logSite logs err at most once per minute per site, so that a script
// failing on every statement does not flood the log.
func (e *Engine) logSite(site, msg string, args ...any) {
	e.logKind(site, "", msg, args...)
}

// logKind is logSite for failures of several kinds at one site (the
// malformed results a hook's several returns give, which all report the
// function's line): each kind is limited on its own.
func (e *Engine) logKind(site, kind, msg string, args ...any) {
	key := site
	if kind != "" {
		key += "\x00" + kind
	}
	now := time.Now()
	e.logMu.Lock()
	l, seen := e.logged[key]
	if seen && now.Sub(l.at) < time.Minute {
		l.dropped++
		e.logMu.Unlock()
		return
	}
	if len(e.logged) >= 1024 {
		clear(e.logged) // bound the map; worst case a site logs early
	}
	dropped := 0
	if seen {
		dropped = l.dropped
	}
	e.logged[key] = &siteLog{at: now}
	e.logMu.Unlock()
	args = append([]any{"at", site}, args...)
	if dropped > 0 {
		args = append(args, "not_logged_since_last", dropped)
	}
	e.opts.Logger.Warn(msg, args...)
}

// siteLog is when a failure at a site was last logged, and how many there
// have been since that were not.
type siteLog struct {
	at      time.Time
	dropped int
}

// stateUnavailable logs that no state could be built for a call, unless
// the engine is closed, which stops the top levels of new states too.
func (e *Engine) stateUnavailable(err error) {
	if !e.closed.Load() {
		e.logSite("state", "policy state unavailable", "err", err)
	}
}

// Cache implements Policy. It answers from the memo when an earlier call
// for the same shape read only shape fields; otherwise it runs the cache
// hooks. A script error, kill or malformed result means "don't cache".
// The returned Depends slice may be shared: callers must not modify it.
func (e *Engine) Cache(q *Query) (Decision, bool) {
	if e.closed.Load() {
		return Decision{}, false
	}
	set := e.cur.Load()
	if !set.has[hookCache] {
		return e.builtin.Cache(q)
	}
	if set.memoOK {
		if d, ok, hit := set.memo.get(q); hit {
			e.memoHits.Add(1)
			return d, ok
		}
	}
	st, err := set.get()
	if err != nil {
		e.stateUnavailable(err)
		return Decision{}, false
	}
	st.beginQuery(q)
	ret, site, err := st.call(hookCache)
	var d Decision
	var ok bool
	if err == nil {
		d, ok, err = parseDecision(ret)
		if err != nil {
			e.bad.Add(1)
			e.logKind(site, badKind(err), "policy cache() returned a malformed decision", "err", err)
		}
	}
	memoizable := err == nil && st.memoizable()
	st.end()
	set.put(st)
	if err != nil {
		return Decision{}, false
	}
	if memoizable && set.memoOK {
		set.memo.put(q, d, ok)
	}
	return d, ok
}

// Invalidate implements Policy: it returns the extra tables the invalidate
// hooks name for a confirmed write, or nil. When a hook fails (an error,
// its deadline, a malformed result), it returns Everything: the hook may
// have named any table.
func (e *Engine) Invalidate(w *Write) []string {
	if e.closed.Load() {
		return nil
	}
	set := e.cur.Load()
	if !set.has[hookInvalidate] {
		return nil
	}
	st, err := set.get()
	if err != nil {
		e.stateUnavailable(err)
		return []string{Everything}
	}
	st.beginWrite(w)
	ret, site, err := st.call(hookInvalidate)
	var tables []string
	if err == nil {
		tables, err = parseTables(ret)
		if err != nil {
			e.bad.Add(1)
			e.logKind(site, badKind(err), "policy invalidate() returned a malformed list", "err", err)
		}
	}
	st.end()
	set.put(st)
	if err != nil {
		return []string{Everything}
	}
	return tables
}

// Query runs the query hooks, MySQL Proxy's read_query: the result says
// whether to answer the client directly, run other SQL, or go on.
func (e *Engine) Query(q *Query) QueryResult {
	if e.closed.Load() {
		return QueryResult{}
	}
	set := e.cur.Load()
	if !set.has[hookQuery] {
		return QueryResult{}
	}
	st, err := set.get()
	if err != nil {
		e.stateUnavailable(err)
		return QueryResult{}
	}
	st.beginQuery(q)
	ret, site, err := st.call(hookQuery)
	var r QueryResult
	if err == nil {
		r, err = parseQueryResult(ret, st.null)
		if err != nil {
			e.bad.Add(1)
			e.logKind(site, badKind(err), "policy query() returned a malformed result", "err", err)
		}
	}
	st.end()
	set.put(st)
	return r
}

// scriptSet is one compiled generation of the scripts with its own pool
// of states and its own memo, so that Reload swaps all three at once and
// states of the old generation simply die with it.
type scriptSet struct {
	eng    *Engine
	protos []*lua.FunctionProto // shared by every state; read-only
	has    [numHooks]bool       // which hooks any script defines
	memoOK bool                 // no script set memo = false
	pool   chan *state          // idle states
	sem    chan struct{}        // one token per live state; bounds the pool
	memo   *memo
}

// get returns an idle state, creates one while fewer than MaxPool exist,
// or waits for one to come back.
func (s *scriptSet) get() (*state, error) {
	select {
	case st := <-s.pool:
		return st, nil
	default:
	}
	select {
	case st := <-s.pool:
		return st, nil
	case s.sem <- struct{}{}:
		st, err := newState(s)
		if err != nil {
			<-s.sem
			return nil, err
		}
		return st, nil
	}
}

// put returns a state to the pool. A state whose call was killed may have
// been stopped halfway through changing its script's variables, so it is
// dropped and its slot freed instead; so is every state once the engine is
// closed.
func (s *scriptSet) put(st *state) {
	if st.broken || s.eng.closed.Load() {
		st.L.Close()
		<-s.sem
		return
	}
	s.pool <- st // never blocks: at most cap(pool) states exist
}
