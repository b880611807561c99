package mysqlproxy

import (
	"context"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/mycached/mycached/cachepolicy"
	"github.com/mycached/mycached/mysqlproxy/internal/sqlinfo"
)

// comQuery handles COM_QUERY: pseudo-queries are answered here, cacheable
// reads go through the cache, and everything else is relayed, with writes
// invalidating what they touched before the client hears they are done.
func (s *session) comQuery(p []byte) error {
	sql := string(p[1:])
	if e := s.srv.engine; e != nil && e.HasQueryHook() {
		var handled bool
		var err error
		if p, sql, handled, err = s.queryHook(e, p, sql); handled {
			return err
		}
	}
	if handled, err := s.kvQuery(sql); handled {
		return err
	}
	if handled, err := s.pseudo(sql); handled {
		return err
	}
	if s.srv.cfg.Passthrough && sqlinfo.FirstKeyword(sql) == "SELECT" {
		// Nothing is cached, and a SELECT writes nothing (SELECT ... INTO
		// OUTFILE writes a file, not a table): no analysis needed.
		return s.relayMode(p, modeResult)
	}
	info := s.srv.analyzer.Analyze(sql)
	if info.Kind == sqlinfo.Select && info.Cacheable {
		return s.cacheRead(p, info, sql, nil)
	}
	if info.Kind == sqlinfo.Select || info.Kind == sqlinfo.Show {
		s.srv.stats.bypass(whyNotCacheable)
		s.srv.queries.note(info.Digest, info.WhyNot, 0)
	}
	return s.execute(p, info, sql)
}

// queryHook runs the policy's query hook, MySQL Proxy's read_query: it
// may answer the statement, or rewrite it.
func (s *session) queryHook(e *cachepolicy.Engine, p []byte, sql string) ([]byte, string, bool, error) {
	info := s.srv.analyzer.Analyze(sql)
	q := &s.q
	*q = cachepolicy.Query{
		SQL: sql, Digest: info.Digest, Kind: info.Kind.String(), DB: s.hello.db, User: s.hello.user,
		ClientAddr: s.clientAddr, InTransaction: s.status&mysql.SERVER_STATUS_IN_TRANS != 0,
		Cacheable: info.Cacheable, WhyNot: info.WhyNot,
	}
	if info.Cacheable {
		q.Tables = s.srv.deps(info, s.hello.db).tables
	}
	res := e.Query(q)
	switch res.Kind {
	case cachepolicy.QueryRewrite:
		return append([]byte{mysql.COM_QUERY}, res.SQL...), res.SQL, false, nil
	case cachepolicy.QueryResultSet:
		return p, sql, true, s.writeResult(res.Columns, res.Rows)
	case cachepolicy.QueryAffected:
		return p, sql, true, s.writeOK(res.Affected)
	case cachepolicy.QueryError:
		code := res.ErrCode
		if code == 0 {
			code = mysql.ER_UNKNOWN_ERROR
		}
		return p, sql, true, s.writeErr(code, "HY000", res.ErrMsg)
	}
	return p, sql, false, nil
}

// comStmtExecute handles COM_STMT_EXECUTE like comQuery, keyed by the
// prepared SQL and the bound parameters.
func (s *session) comStmtExecute(p []byte) error {
	if len(p) < 10 {
		return s.relayMode(p, modeResult)
	}
	if ks := s.localStmts[le32(p[1:])]; ks != nil {
		return s.kvExecute(ks, p)
	}
	st := s.stmts[le32(p[1:])]
	if st == nil || st.info == nil {
		return s.relayMode(p, modeResult)
	}
	if st.kv != nil && stringParams(p, int(st.params), st.types) && s.kvKeysValid(p, int(st.params), st.types) {
		s.noteParamTypes(st, p)
		return s.kvExecute(st.kv, p)
	}
	s.noteParamTypes(st, p)
	if s.srv.cfg.Passthrough && st.info.Kind == sqlinfo.Select {
		// Nothing is served from the cache, so the backend has seen every
		// execute and its types: relay it as it is.
		return s.relayMode(p, modeResult)
	}
	p = withTypes(st, p)
	defer func() { st.longData = false }()
	if st.info.Kind == sqlinfo.Select && st.info.Cacheable && (st.params == 0 || st.types != nil) {
		return s.cacheRead(p, st.info, st.sql, st)
	}
	var params []paramValue
	if st.info.Point != nil || st.info.Insert != nil {
		params = decodeParams(p, int(st.params), st.types)
	}
	return s.executeParams(p, st.info, st.sql, params)
}

// noteParamTypes remembers the parameter types an execute binds; later
// executes may leave them out and mean the same ones.
func (s *session) noteParamTypes(st *stmt, p []byte) {
	if st.params == 0 {
		return
	}
	nb := (int(st.params) + 7) / 8
	at := 10 + nb
	if len(p) <= at || p[at] != 1 {
		return
	}
	end := at + 1 + 2*int(st.params)
	if len(p) < end {
		return
	}
	st.types = append(st.types[:0], p[at+1:end]...)
}

// withTypes returns an execute that carries its parameter types. A client
// sends them once and leaves them out after; if that first execute was a
// cache hit, the backend never saw them, so every execute mycached may
// forward carries them again.
func withTypes(st *stmt, p []byte) []byte {
	if st.params == 0 || st.types == nil {
		return p
	}
	at := 10 + (int(st.params)+7)/8
	if len(p) <= at || p[at] != 0 {
		return p
	}
	q := make([]byte, 0, len(p)+len(st.types))
	q = append(q, p[:at]...)
	q = append(q, 1)
	q = append(q, st.types...)
	return append(q, p[at+1:]...)
}

// execute relays a statement that is not served from the cache, and then
// does what its success means: session state changes, and invalidation.
func (s *session) execute(p []byte, info *sqlinfo.Info, sql string) error {
	return s.executeParams(p, info, sql, nil)
}

// executeParams is execute for a statement with bound parameters.
func (s *session) executeParams(p []byte, info *sqlinfo.Info, sql string, params []paramValue) error {
	before := s.status
	s.prefetchKeys(info)
	if err := s.forward(p); err != nil {
		return err
	}
	r := relayer{s: s, noFlush: true}
	err := r.relay(modeResult)
	s.errSeq = r.lastSeq + 1
	s.last = r.resp
	// The invalidation happens even when the relay failed half-way: the
	// statement may have run.
	s.after(info, sql, &r.resp, before, params)
	if err != nil {
		return err
	}
	if err := s.client.w.Flush(); err != nil {
		return clientErr{err}
	}
	return nil
}

// after applies what a relayed statement did to the session and the cache.
func (s *session) after(info *sqlinfo.Info, sql string, resp *Response, before uint16, params []paramValue) {
	ok := !resp.Failed()
	switch info.Kind {
	case sqlinfo.Set:
		if ok {
			s.state.apply(info.Sets)
		}
	case sqlinfo.Use:
		if ok {
			s.hello.db = info.UseDB
		}
	case sqlinfo.Call:
		// A procedure can change session variables or the database we
		// cannot see; this session stops caching rather than guess.
		s.tainted = true
	}
	if info.WhyNot == "multi-statement" {
		s.tainted = true
	}
	if info.Temporary && ok {
		s.noteTemporary(info)
	}
	if info.MayWrite {
		s.invalidate(info, sql, resp, params)
	}
	if before&mysql.SERVER_STATUS_IN_TRANS != 0 && s.status&mysql.SERVER_STATUS_IN_TRANS == 0 {
		s.endTransaction()
	}
}

// invalidate bumps the generations of everything a write may have changed.
// Inside a transaction the tables are remembered, and bumped again when it
// ends: a reader could otherwise fill from pre-commit data under the
// post-write generation.
func (s *session) invalidate(info *sqlinfo.Info, sql string, resp *Response, params []paramValue) {
	srv := s.srv
	deps := make([]string, 0, len(info.Writes)+2)
	tables := make([]string, 0, len(info.Writes))
	for _, t := range sqlinfo.Qualify(info.Writes, s.hello.db) {
		deps = append(deps, s.writeDeps(info, t, resp, params)...)
		tables = append(tables, t.String())
	}
	if info.Unmapped {
		deps = s.unmappedDeps(deps, info)
		if info.Kind != sqlinfo.Call {
			// It may have been DDL mycached could not read: what it knows
			// of primary keys is no longer trusted.
			srv.pks.m.Clear()
			srv.depsMemo.clear()
		}
	}
	if extra := srv.policy.Invalidate(&cachepolicy.Write{Tables: tables, Kind: info.Kind.String(), SQL: sql, DB: s.hello.db, User: s.hello.user}); len(extra) > 0 {
		for _, t := range extra {
			deps = append(deps, t, nonKey(t))
		}
	}
	if len(deps) == 0 {
		return
	}
	srv.store.Bump(context.Background(), deps)
	srv.stats.invalidations.Add(uint64(len(deps)))
	if s.status&mysql.SERVER_STATUS_IN_TRANS != 0 {
		s.txWrote = true
		if s.txDeps == nil {
			s.txDeps = make(map[string]struct{})
		}
		for _, d := range deps {
			s.txDeps[d] = struct{}{}
		}
	}
}

// prefetchKeys learns the primary key of the table a keyed write names
// before the write runs: learning it afterwards would run a query of
// mycached's own between the write and the client's next statement, and
// reset what ROW_COUNT() and SHOW WARNINGS tell the client.
func (s *session) prefetchKeys(info *sqlinfo.Info) {
	if len(info.Writes) != 1 || (info.Point == nil && info.Insert == nil) {
		return
	}
	switch info.Kind {
	case sqlinfo.Update, sqlinfo.Delete, sqlinfo.Insert:
		s.primaryKey(sqlinfo.Qualify(info.Writes, s.hello.db)[0])
	}
}

// unmappedDeps adds the database-wide (or global) generations that a write
// whose tables cannot be known bumps.
func (s *session) unmappedDeps(deps []string, info *sqlinfo.Info) []string {
	if info.Global {
		return append(deps, "*")
	}
	for _, db := range info.DBWide {
		if db == "" {
			db = s.hello.db
		}
		if db == "" {
			return append(deps, "*")
		}
		deps = append(deps, db+".*")
	}
	if len(info.DBWide) == 0 {
		if s.hello.db == "" {
			return append(deps, "*")
		}
		deps = append(deps, s.hello.db+".*")
	}
	return deps
}

func (s *session) endTransaction() {
	if len(s.txDeps) > 0 {
		deps := make([]string, 0, len(s.txDeps))
		for d := range s.txDeps {
			deps = append(deps, d)
		}
		s.srv.store.Bump(context.Background(), deps)
		s.srv.stats.invalidations.Add(uint64(len(deps)))
		clear(s.txDeps)
	}
	s.txWrote = false
}

func (s *session) noteTemporary(info *sqlinfo.Info) {
	if s.temps == nil {
		s.temps = make(map[string]struct{})
	}
	for _, t := range sqlinfo.Qualify(info.Writes, s.hello.db) {
		if info.Kind == sqlinfo.DDL && isDrop(info.Digest) {
			delete(s.temps, t.String())
		} else {
			s.temps[t.String()] = struct{}{}
		}
	}
}

func isDrop(digest string) bool {
	return len(digest) >= 4 && (digest[:4] == "drop" || digest[:4] == "DROP")
}

// resetState forgets everything the session learned since the handshake:
// COM_RESET_CONNECTION and COM_CHANGE_USER start afresh.
func (s *session) resetState() {
	clear(s.stmts)
	clear(s.localStmts)
	clear(s.temps)
	s.state.reset(s.hello.charset)
	s.cacheOff, s.tainted = false, false
	s.endTransaction()
}
