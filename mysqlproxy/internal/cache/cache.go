package cache

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"io"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/mycached/mycached/cachepolicy"
	"github.com/mycached/mycached/mysqlproxy/internal/relay"
	"github.com/mycached/mycached/mysqlproxy/internal/sqlinfo"
	"github.com/mycached/mycached/mysqlproxy/internal/store"
	"github.com/mycached/mycached/mysqlproxy/internal/wire"
)

// Bypass reasons, as counted in metrics and shown by SHOW MYCACHED QUERIES.
const (
	whyNotCacheable      = "not-cacheable"
	whyWriteTx           = "in-write-transaction"
	whyTx                = "in-transaction"
	whyTooLarge          = "too-large"
	whyFillMemory        = "fill-memory-full"
	whyPolicy            = "policy"
	whyCacheError        = "cache-error"
	whyPending           = "pending-invalidation"
	whyServersDiffer     = "memcached-servers-differ"
	whySessionOff        = "session-off"
	whyHint              = "no-cache-hint"
	whyTemporary         = "temporary-table"
	whyCursor            = "cursor"
	whyLongData          = "long-data"
	whyTainted           = "session-state-unknown"
	whyNotStored         = "not-stored"
	whyUnknownTable      = "unknown-table"
	whyNoMetadata        = "metadata-unavailable"
	whyFollowerBehind    = "binlog-follower-behind"
	whyNotPaying         = "admission-rejected"
	whyTxStart           = "starts-transaction"
	whyTxSnapshot        = "takes-snapshot"
	whyTxTracked         = "transaction-tracked"
	whyUncommitted       = "read-uncommitted"
	whyIsolationUnknown  = "isolation-unknown"
	whyOwnWrite          = "own-write-unapplied"
	whyWriteInFlight     = "write-in-flight"
	whyLockingRead       = "serializable-locks"
	whyStmtUnsure        = "statement-unsure"
	whySharedUnproven    = "shared-unproven"
	whyHitDiagnostics    = "after-a-hit-diagnostics"
	whyPreparedBeforeDDL = "prepared-before-ddl"
	whyMetaStale         = "schema-may-have-changed"
	whySnapshotOlder     = "snapshot-predates-change"
	whyTypesBehind       = "types-behind"
	whyTraced            = "session-traced"
)

// bypassReasons returns the reasons above, which NewStats shows on
// /metrics from the start.
func bypassReasons() []string {
	return []string{
		whyNotCacheable, whyWriteTx, whyTx, whyTooLarge, whyPolicy, whyCacheError,
		whyPending, whyServersDiffer, whySessionOff, whyHint, whyTemporary, whyCursor, whyLongData,
		whyTainted, whyNotStored, whyUnknownTable, whyNoMetadata, whyFollowerBehind,
		whyNotPaying, whyTxStart, whyTxSnapshot, whyTxTracked, whyUncommitted, whyIsolationUnknown, whyOwnWrite, whyWriteInFlight,
		whyLockingRead, whyStmtUnsure, whyFillMemory, whySharedUnproven, whyHitDiagnostics, whyPreparedBeforeDDL,
		whyMetaStale, whySnapshotOlder, whyTypesBehind, whyTraced,
	}
}

// statusMask are the status flags a hit takes from the session rather than
// from the response that filled the entry.
// NO_BACKSLASH_ESCAPES tells clients how to escape strings, and a routine
// may leave it set on its session after restoring sql_mode.
const statusMask = mysql.SERVER_STATUS_IN_TRANS | mysql.SERVER_STATUS_AUTOCOMMIT | mysql.SERVER_STATUS_IN_TRANS_READONLY |
	mysql.SERVER_STATUS_NO_BACKSLASH_ESCAPED

// cacheRead serves a cacheable read (a COM_QUERY, or a COM_STMT_EXECUTE
// when st is set) from the cache, or relays it and stores the response.
func (c *Session) cacheRead(p []byte, info *sqlinfo.Info, sql string, st *relay.Stmt) error {
	e := c.e
	probed := c.probed
	c.probed = false
	if c.s.Dead() {
		// Nothing is answered on a session the server has closed.
		return relay.ErrBackendGone
	}
	qs := e.Queries.stat(info.Digest)
	if !c.s.NoSchema() {
		if c.keepsConds(info) {
			// Reading the state would clear the warnings the read
			// leaves for SHOW WARNINGS: it is relayed, and the state
			// is read before a later one.
			e.Stats.bypass(whyTainted)
			qs.note(whyTainted, 0)
			return c.relayRunningCode(p, info, sql)
		}
		if err := c.s.RefreshIdentity(); err != nil {
			return err
		}
	}
	if why := c.bypassReason(info, st, p); why != "" {
		e.Stats.bypass(why)
		qs.note(why, 0)
		return c.relayRunningCode(p, info, sql)
	}
	var params []wire.Param
	if st != nil && info.Point != nil {
		params = relay.ExecuteParams(st, p)
	}
	adm := qs.admission()
	// A read of a rejected shape is judged (asks the policy, is looked up
	// in the ghosts and counted) only when its text falls in the shape's
	// sample, or now and then: the others are relayed at once, at the cost
	// of a passthrough, unless the policy forces some of the shape's reads.
	judged := !adm.rejected() || c.sampled(p, sql, st) || probed || adm.probe()
	if !judged && !adm.policyForces.Load() {
		return c.relayUnpaying(p, info, sql, qs, adm)
	}
	if why, err := c.checkTemps(info); err != nil {
		return err
	} else if why != "" {
		e.Stats.bypass(why)
		qs.note(why, 0)
		return c.s.RelayMode(p, relay.ModeResult)
	}
	deps := c.readDepsFor(info, params, !adm.rejected())
	if why := deps.why; why != "" || e.inFlight.any(deps.all) {
		// deps is shared by the shape's reads: not written.
		if why == "" {
			why = whyWriteInFlight
		}
		e.Stats.bypass(why)
		qs.note(why, 0)
		return c.relayRunningCode(p, info, sql)
	}
	c.until = time.Time{}
	if deps.dated || st != nil && relay.TimeParam(st, p) {
		c.until = c.nextMidnight(time.Now())
	}
	q := &c.q
	*q = cachepolicy.Query{
		SQL: sql, Digest: info.Digest, Kind: info.Kind.String(), Tables: deps.tables,
		DB: c.db, User: c.user(), ClientAddr: c.s.ClientAddr, Prepared: st != nil,
		InTransaction: c.s.Status&mysql.SERVER_STATUS_IN_TRANS != 0, Cacheable: true,
		PointLookup: deps.point, Keys: deps.keyStr,
	}
	if st != nil && st.Params > 0 {
		// Decoded only if the policy reads them.
		c.policyExec, c.policyStmt = p, st
		if c.paramsFn == nil {
			c.paramsFn = c.policyParams
		}
		q.ParamsFunc, q.ParamsSize = c.paramsFn, len(p)
	}
	dec, ok := e.Policy.Cache(q)
	c.policyExec, c.policyStmt = nil, nil
	if !ok || dec.TTL <= 0 {
		e.Stats.bypass(whyPolicy)
		qs.note(whyPolicy, 0)
		return c.s.RelayMode(p, relay.ModeResult)
	}
	if dec.Admit == cachepolicy.AdmitNever {
		e.Stats.bypass(whyPolicy)
		qs.note(whyPolicy, 0)
		return c.s.RelayMode(p, relay.ModeResult)
	}
	if dec.Admit == cachepolicy.AdmitAlways {
		adm.forced()
	} else if !judged {
		return c.relayUnpaying(p, info, sql, qs, adm)
	}
	all := deps.all
	if len(dec.Depends) > 0 {
		all = append(make([]string, 0, len(all)+len(dec.Depends)), all...)
		for _, t := range dec.Depends {
			all = append(all, e.policyTable(t))
		}
	}
	check := c.checkBytes(dec.Scope, p, sql, st)
	kh := xxhash.Sum64(check)
	key := cacheKey(kh)

	// A read its admission relays serves nothing from the cache: it
	// does not ask how current the follower is, which has the follower
	// read the server's position every Poll while it is asked.
	relayed := dec.Admit != cachepolicy.AdmitAlways && !adm.admit(dec.Admit)
	var mode store.Mode
	if !relayed {
		var ok bool
		if mode, ok = e.mode(Consistency(dec.Consistency)); !ok {
			e.Stats.bypass(whyFollowerBehind)
			qs.note(whyFollowerBehind, 0)
			return c.s.RelayMode(p, relay.ModeResult)
		}
	}
	ghost := false
	if dec.Admit == cachepolicy.AdmitAlways {
		adm = nil
	} else {
		var gens uint64
		if adm.wantsGhosts() {
			gens = e.Store.LocalHash(all)
			_, stores := c.snapshotRule()
			ghost = e.ghosts.seen(kh, gens, stores)
		}
		if !deps.point && adm != nil && adm.state.Load() == admProbation {
			if gens == 0 {
				gens = e.Store.LocalHash(all)
			}
			adm.gens(gens)
		}
		if relayed {
			adm.looked(false, false, ghost, 0)
			return c.relayUnpaying(p, info, sql, qs, adm)
		}
	}
	start := time.Now()
	ent, tier, cur, status := e.Store.LookupMode(context.Background(), key, check, all, mode)
	switch status {
	case store.Hit:
		if c.s.BackendEnded() {
			// The server ended the session: the client gets what it
			// would directly.
			return c.s.RelayMode(p, relay.ModeResult)
		}
		if c.snapshotPredates(all) {
			// The transaction's snapshot is older than the entry: the
			// server answers from the snapshot (and it is not stored).
			e.Stats.bypass(whySnapshotOlder)
			qs.note(whySnapshotOlder, 0)
			return c.s.RelayMode(p, relay.ModeResult)
		}
		if dec.Scope == cachepolicy.ScopeShared {
			// The server decides whether this account may read the
			// shape; once it has answered, the entries are the
			// account's too (proven.go).
			pr := c.entryProof(c.proofShape(info, sql, check), ent)
			if !e.proven.has(pr) {
				e.Stats.bypass(whySharedUnproven)
				qs.note(whySharedUnproven, 0)
				return c.relayProving(p, pr)
			}
		}
		// A client that does not read holds the response while its
		// replay waits: it counts against the fill memory.
		if !e.replays.hold(ent.Payload, e.fill) {
			e.Stats.bypass(whyFillMemory)
			qs.note(whyFillMemory, 0)
			return c.s.RelayMode(p, relay.ModeResult)
		}
		defer e.replays.release(ent.Payload, e.fill)
		adm.looked(true, true, ghost, 0)
		e.Stats.hit(tier, time.Since(start))
		qs.note("", 1)
		c.lastHit = append(c.lastHit[:0], p...)
		c.lastHitSQL, c.hitDiag = sql, diagAll
		if !c.s.CondsHeld {
			// No entry holds warnings: the server's diagnostics are
			// empty, as the hit's would be.
			c.hitDiag &^= diagWarnings
		}
		c.hitPayload, c.hitCount, c.hitFound, c.serverFound = nil, -1, -1, -1
		if len(ent.Payload) <= hitPayloadMax {
			c.hitPayload = ent.Payload
		} else if n, ok := resultRowsUpTo(ent.Payload, c.s.DeprecateEOF(), tablelessRows); ok {
			c.hitCount = n
		}
		c.hitServed = true
		return c.replay(ent.Payload, p)
	case store.Stale:
		// The entry is past its soft ttl, and this is the one read (per
		// key and process) told so: it reads afresh, as a miss, and its
		// fill replaces the entry, while the others are served the entry
		// meanwhile. The refresh rides on a read its client waits for
		// anyway, never in front of the client's next command.
		e.Stats.refreshes.Inc()
	case store.Bypass:
		why := whyPending
		if e.Store.RingHeld() {
			why = whyServersDiffer
		}
		e.Stats.bypass(why)
		qs.note(why, 0)
		return c.s.RelayMode(p, relay.ModeResult)
	case store.Error:
		e.Stats.bypass(whyCacheError)
		qs.note(whyCacheError, 0)
		return c.s.RelayMode(p, relay.ModeResult)
	}
	if e.metaStale(deps, all, cur.Gens) {
		// Derived again from what meta learns now: the same
		// dependencies keep the generations just read, others do not.
		again := c.readDepsFor(info, params, !adm.rejected())
		if again.why != "" || !slices.Equal(again.all, deps.all) || again.gen != e.metaGen() ||
			again.dated != deps.dated || again.runsCode != deps.runsCode || again.readsDiag != deps.readsDiag {
			e.Stats.bypass(whyMetaStale)
			qs.note(whyMetaStale, 0)
			return c.s.RelayMode(p, relay.ModeResult)
		}
	}
	adm.looked(true, false, ghost, time.Since(start))
	e.Stats.miss()
	qs.note("", -1)
	snap, shared := c.snapshotRule()
	if !shared {
		// A read whose snapshot may be older than its start, or that may
		// see uncommitted rows, answers only its own client.
		since, later := c.snapshotStorable()
		var pr *proof
		if later && dec.Scope == cachepolicy.ScopeShared {
			v := c.sharedProof(c.proofShape(info, sql, check), all, cur.Gens, cur.Local)
			pr = &v
		}
		sent := time.Now()
		payload, why, err := c.relayTee(p, dec, nil)
		if why != "" {
			e.Stats.bypass(why)
		}
		adm.relayed(time.Since(sent))
		switch {
		case err != nil || payload == nil:
		case snap != noStore:
			c.put(key, check, all, cur, dec, payload, snap)
		case later:
			if pr != nil {
				e.proven.add(*pr) // the server answered this account
			}
			if ent := c.entry(check, all, cur, dec, payload, since); ent != nil {
				e.putWhenCurrent(key, ent, sent)
			}
		}
		return err
	}
	var pr *proof
	if dec.Scope == cachepolicy.ScopeShared {
		// Another account's fill of the key is no proof for this one.
		v := c.sharedProof(c.proofShape(info, sql, check), all, cur.Gens, cur.Local)
		pr = &v
	}
	return c.fill(p, key, check, all, cur, dec, start, adm, pr)
}

// policyParams gives the policy the parameters of the execute it is
// deciding on: nil for NULL, and for a value mycached does not read (a
// floating-point or temporal one, or one sent in pieces); an integer as
// an int64 (a uint64 past its range); any other value as a string.
func (c *Session) policyParams() []any {
	if c.policyStmt == nil {
		return nil
	}
	ps := relay.ExecuteParams(c.policyStmt, c.policyExec)
	out := make([]any, int(c.policyStmt.Params))
	for i, p := range ps {
		switch {
		case p.Null || !p.OK:
		case p.Int:
			if n, err := strconv.ParseInt(p.Text, 10, 64); err == nil {
				out[i] = n
			} else if u, err := strconv.ParseUint(p.Text, 10, 64); err == nil {
				out[i] = u
			}
		default:
			out[i] = p.Text
		}
	}
	return out
}

// relayRunningCode relays a read that is not served from the cache,
// which may run stored code through a view it reads: then it is run as
// a statement that calls a stored function, whose writes are invalidated
// (see executeParams).
func (c *Session) relayRunningCode(p []byte, info *sqlinfo.Info, sql string) error {
	if !c.runsCode(info) {
		if c.lastHit != nil && c.viewsReadDiagnostics(info) {
			// A view it reads reads the diagnostics, which are the
			// hit's.
			if err := c.rerunLastHit(); err != nil {
				return err
			}
		}
		return c.s.RelayMode(p, relay.ModeResult)
	}
	if c.lastHit != nil {
		// The code may read the diagnostics, which are the hit's.
		if err := c.rerunLastHit(); err != nil {
			return err
		}
	}
	err := c.execute(p, info, sql)
	c.hiddenCodeRan()
	return err
}

// relayUnpaying relays a read of a shape whose reads do not pay for
// their lookups, and notes the backend time it took. One that runs
// stored code, through a view that calls a function, or that follows a
// hit whose diagnostics a view reads, is relayed as relayRunningCode
// relays it: what the code wrote is invalidated.
func (c *Session) relayUnpaying(p []byte, info *sqlinfo.Info, sql string, qs *queryStat, adm *admission) error {
	if c.runsCode(info) || c.lastHit != nil && c.viewsReadDiagnostics(info) {
		c.e.Stats.bypass(whyNotPaying)
		qs.note(whyNotPaying, 0)
		return c.relayRunningCode(p, info, sql)
	}
	return c.relayRejected(p, qs, adm)
}

// relayRejected is relayUnpaying for a read known to run no stored code
// and to follow no hit (unjudged).
func (c *Session) relayRejected(p []byte, qs *queryStat, adm *admission) error {
	c.e.Stats.bypass(whyNotPaying)
	qs.note(whyNotPaying, 0)
	sent := time.Now()
	err := c.s.RelayMode(p, relay.ModeResult)
	adm.relayed(time.Since(sent))
	return err
}

// sampled reports whether a read falls in its shape's sample: one text
// (or set of parameters) in admSample, the same ones in every session
// and sidecar, so that a sampled read's ghost sees the sampled reads of
// the same key before it.
func (c *Session) sampled(p []byte, sql string, st *relay.Stmt) bool {
	b := p[1:]
	if st != nil {
		// COM_STMT_EXECUTE: the statement id, flags and iteration count
		// differ between sessions; the parameters follow them.
		if len(p) < 10 {
			return true
		}
		b = p[10:]
	} else if sqlinfo.HasComment(sql) && string(b) == sql {
		// By its key's text: a read with a trace id in a comment is in
		// the sample when the read without it is.
		return xxhash.Sum64String(sqlinfo.KeyText(sql, c.dialect()))%admSample == 0
	}
	return xxhash.Sum64(b)%admSample == 0
}

// noStore is a since time that keeps a fill from being stored at all.
var noStore = time.Unix(1<<62, 0)

// snapshotRule says how the fill of a miss may be stored: since is zero
// (stored as usual) or noStore; shared says whether it may answer other
// clients' concurrent misses too.
//
// A read outside a transaction, or at READ COMMITTED, sees the latest
// committed rows. So does the first read of a REPEATABLE READ (or
// SERIALIZABLE) transaction, which takes its snapshot; a later one reads
// that snapshot, which may predate writes made since, anywhere in the
// fleet, and is not stored. A read at READ UNCOMMITTED, or at an
// isolation set for one transaction that mycached cannot see, is not
// stored either.
func (c *Session) snapshotRule() (since time.Time, shared bool) {
	inTx := c.s.InTransaction()
	iso := c.isolation(inTx)
	switch {
	case iso == "READ-UNCOMMITTED":
		return noStore, false
	case !inTx:
		if c.nextTxUnknown {
			return noStore, false // this read is the next transaction
		}
		return time.Time{}, true
	case iso == "READ-COMMITTED":
		return time.Time{}, true
	case c.txUnknownIsolation, c.txSnap:
		return noStore, false
	}
	return time.Time{}, true
}

// snapshotStorable says whether a miss that snapshotRule keeps from
// being stored may be stored once the binlog follower proves its
// snapshot current, and since when that snapshot may date: the open
// transaction reads a snapshot (REPEATABLE READ or SERIALIZABLE, a level
// mycached knows), taken no earlier than since. If nothing the read
// depends on changed from since until the read began, as far as a
// follower that has applied everything committed before the read began
// can tell, the snapshot's rows are the committed rows of that moment,
// and the entry is stored under the generations read before it ran, as
// any other miss is (putWhenCurrent).
func (c *Session) snapshotStorable() (since time.Time, ok bool) {
	inTx := c.s.InTransaction()
	if !inTx || !c.txSnap || c.txUnknownIsolation || c.e.follower.Load() == nil {
		return time.Time{}, false
	}
	switch c.isolation(inTx) {
	case "REPEATABLE-READ", "SERIALIZABLE":
		return c.txSnapAt, !c.txSnapAt.IsZero()
	}
	return time.Time{}, false
}

// mayReadUncommitted says why the next read may run at READ
// UNCOMMITTED, or "": the session's level or the transaction's is READ
// UNCOMMITTED (whyUncommitted), or a level mycached cannot see may have
// been set for the transaction or the next one, by a statement it could
// not read (whyIsolationUnknown).
func (c *Session) mayReadUncommitted() string {
	inTx := c.s.InTransaction()
	switch {
	case inTx && c.txUnknownIsolation || !inTx && c.nextTxUnknown:
		return whyIsolationUnknown
	case c.isolation(inTx) == "READ-UNCOMMITTED":
		return whyUncommitted
	}
	return ""
}

// locksReads reports whether a plain read takes shared locks: at
// SERIALIZABLE, inside a transaction or with autocommit off (a read with
// autocommit on is a transaction of its own, and reads a snapshot).
func (c *Session) locksReads() bool {
	inTx := c.s.InTransaction()
	if !inTx && c.s.Status&mysql.SERVER_STATUS_AUTOCOMMIT != 0 {
		return false
	}
	return c.isolation(inTx) == "SERIALIZABLE"
}

// isolation returns the level a read runs at: the transaction's while
// one is open (inTx) and its level is known, else the session's.
func (c *Session) isolation(inTx bool) string {
	if inTx && c.txIsolation != "" {
		return c.txIsolation
	}
	return c.sessionIsolation()
}

// snapshotIsolation reports whether the open transaction reads a
// snapshot taken by its first read: REPEATABLE READ, SERIALIZABLE, or an
// isolation mycached cannot see.
func (c *Session) snapshotIsolation() bool {
	if c.txUnknownIsolation {
		return true
	}
	iso := c.isolation(true)
	return iso != "READ-COMMITTED" && iso != "READ-UNCOMMITTED"
}

// sessionIsolation returns the session's isolation level, as the server
// reports it: that of its next transaction.
func (c *Session) sessionIsolation() string {
	if v, ok := c.s.Vars["transaction_isolation"]; ok {
		return v
	}
	if v, ok := c.s.Vars["tx_isolation"]; ok {
		return v
	}
	return "REPEATABLE-READ"
}

// fill runs a missed read on the backend and stores it when it
// qualifies. Concurrent misses of the same key and generations run it
// once: the others wait and replay the result, or run it themselves if it
// cannot be stored. The generations are part of the flight's key, so a
// client that arrives after a write never joins a flight that read
// before it.
//
// The leader reads the response into a spool at the backend's pace and
// hands it to the others before it writes it to its own client, so a
// client that reads slowly, or not at all, holds up no one else. A
// response too large to store is written through to the leader's client
// as it comes, and the others are told at once to run it themselves.
func (c *Session) fill(p []byte, key string, check []byte, deps []string, gens store.Snap, dec cachepolicy.Decision, start time.Time, adm *admission, pr *proof) error {
	e := c.e
	call, leader := e.flights.Join(flightKey(key, gens))
	if !leader {
		payload, ok := call.Wait().([]byte)
		if pr != nil && !e.proven.has(*pr) {
			// A shared entry's fill answers only accounts the server
			// has let read its shape.
			e.Stats.bypass(whySharedUnproven)
			return c.relayProving(p, *pr)
		}
		if ok && payload != nil && e.replays.hold(payload, e.fill) {
			defer e.replays.release(payload, e.fill)
			e.Stats.shared.Inc()
			return c.replay(payload, p)
		}
		if ok && payload != nil {
			e.Stats.bypass(whyFillMemory)
		}
		return c.s.RelayMode(p, relay.ModeResult)
	}
	var payload []byte
	// call is nil once finished: its value is the response, which a
	// client that reads slowly must not keep alive while its spool (in
	// the fill memory) drains.
	defer func() {
		if call != nil {
			call.Finish(payload)
		}
	}()
	tee := wire.NewTeeIn(c.teeMax(dec), e.fill)
	starved := false
	sp := e.getSpool(c.s, c.teeMax(dec)+spoolSlack, func(memory bool) {
		if call != nil {
			call.Finish(nil)
		}
		if memory {
			// Going at its client's pace, the response is not stored:
			// its copy for the cache is given back at once.
			starved = true
			tee.Starve()
			e.Stats.bypass(whyFillMemory)
		}
	})
	defer e.putSpool(sp)
	sent := time.Now()
	payload, why, err := c.relayTeeWith(p, dec, sp.w, tee)
	if why != "" && !starved {
		e.Stats.bypass(why)
	}
	adm.relayed(time.Since(sent))
	if err != nil {
		return err
	}
	if pr != nil && c.s.Last.Kind == relay.RespResultSet && !c.s.Last.Failed() {
		e.proven.add(*pr) // the server answered this account
	}
	call.Finish(payload)
	if payload != nil {
		c.put(key, check, deps, gens, dec, payload, time.Time{})
		e.Stats.missLatency.Observe(time.Since(start).Seconds())
	}
	call, payload = nil, nil
	return sp.drain(c.s)
}

// relayTee relays a read to dst (nil: the client) and returns its
// response in cacheable form, or nil and the reason it must not be stored.
func (c *Session) relayTee(p []byte, dec cachepolicy.Decision, dst *bufio.Writer) ([]byte, string, error) {
	return c.relayTeeWith(p, dec, dst, wire.NewTeeIn(c.teeMax(dec), c.e.fill))
}

// relayTeeWith is relayTee keeping the response in tee.
func (c *Session) relayTeeWith(p []byte, dec cachepolicy.Decision, dst *bufio.Writer, tee *wire.Tee) ([]byte, string, error) {
	if err := c.s.Forward(p); err != nil {
		return nil, "", err
	}
	r := relay.Relayer{S: c.s, Dst: dst, Tee: tee}
	defer r.Tee.Release()
	err := r.Relay(relay.ModeResult)
	c.s.Done(&r)
	if err != nil {
		return nil, "", err
	}
	if r.Tee.Starved() {
		return nil, whyFillMemory, nil
	}
	if why := storable(&r.Resp, r.Tee.On(), dec); why != "" {
		return nil, why, nil
	}
	return payload(&r), "", nil
}

// replayFree is the size up to which a response replayed to a client is
// not counted against the fill memory: what a connection's buffers hold
// anyway.
const replayFree = wire.BufSize

// replaying counts the large responses being replayed to clients against
// the fill memory, each once however many clients it is replayed to: an
// entry, or a fill's response, is one array that they share, and that a
// client that does not read keeps alive after the cache has let go of it.
type replaying struct {
	mu sync.Mutex
	m  map[*byte]int // first byte of a response -> replays holding it
}

// hold counts payload as held by one more replay, and reports whether b
// had room for it; payloads of at most replayFree bytes always do.
func (r *replaying) hold(payload []byte, b *wire.Budget) bool {
	if len(payload) <= replayFree {
		return true
	}
	k := &payload[0]
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := r.m[k]; n > 0 {
		r.m[k] = n + 1
		return true
	}
	if !b.Take(int64(len(payload))) {
		return false
	}
	if r.m == nil {
		r.m = make(map[*byte]int)
	}
	r.m[k] = 1
	return true
}

// release ends a replay that hold let through.
func (r *replaying) release(payload []byte, b *wire.Budget) {
	if len(payload) <= replayFree {
		return
	}
	k := &payload[0]
	r.mu.Lock()
	defer r.mu.Unlock()
	if n := r.m[k]; n > 1 {
		r.m[k] = n - 1
		return
	}
	delete(r.m, k)
	b.Give(int64(len(payload)))
}

// teeMax is the most bytes of a response that may be stored under dec.
func (c *Session) teeMax(dec cachepolicy.Decision) int {
	limit := c.e.cfg.MaxResultBytes
	if dec.MaxBytes > 0 && dec.MaxBytes < limit {
		limit = dec.MaxBytes
	}
	return int(limit)
}

// put stores a response with the generations read before it ran; since
// is when its snapshot may date from, when older than that.
func (c *Session) put(key string, check []byte, deps []string, gens store.Snap, dec cachepolicy.Decision, payload []byte, since time.Time) {
	e := c.entry(check, deps, gens, dec, payload, since)
	if e == nil {
		return
	}
	if err := c.e.Store.PutAsync(key, e); err == nil {
		c.e.Stats.stores.Inc()
	}
}

// entry makes the entry of a response, or nil when it must not be
// stored: it may hold the current date, and midnight has passed since
// its read began.
func (c *Session) entry(check []byte, deps []string, gens store.Snap, dec cachepolicy.Decision, payload []byte, since time.Time) *store.Entry {
	now := time.Now()
	e := &store.Entry{
		Check: append([]byte(nil), check...), Payload: payload,
		Deps: deps, Gens: gens.Gens, Local: gens.Local, Expires: now.Add(dec.TTL), Since: since,
	}
	if dec.SoftTTL > 0 && dec.SoftTTL < dec.TTL {
		e.Soft = now.Add(dec.SoftTTL)
	}
	if !c.until.IsZero() {
		// The result may hold the current date: it is not served past
		// the midnight after its read began.
		if !c.until.After(now) {
			return nil
		}
		e.Expires = minTime(e.Expires, c.until)
		if !e.Soft.IsZero() {
			e.Soft = minTime(e.Soft, c.until)
		}
	}
	return e
}

// storable says why a relayed response must not be stored, or "".
func storable(resp *relay.Response, teed bool, dec cachepolicy.Decision) string {
	switch {
	case !teed:
		return whyTooLarge
	case resp.Kind != relay.RespResultSet || resp.Failed() || resp.Results != 1 || resp.Cursor || resp.LocalInfile:
		return whyNotStored
	case resp.Warnings != 0:
		return whyNotStored
	case changesResults(resp.Tracked.Vars):
		// The session's variables changed under the read (the server
		// reports a trigger's SET @@name with the statement after it):
		// the key was made from their values before.
		return whyNotStored
	case resp.Rows == 0 && !dec.CacheEmpty:
		return whyNotStored
	}
	return ""
}

// changesResults reports whether vars, as the server's trackers report
// them, name a variable that can change what a read returns. SET
// STATEMENT max_statement_time=N FOR SELECT ... reports the one it set.
func changesResults(vars map[string]string) bool {
	for name := range vars {
		if !digestFree[name] {
			return true
		}
	}
	return false
}

// payload lays out the teed response as stored: the number of status
// offsets, the offsets, then the raw packets.
func payload(r *relay.Relayer) []byte {
	n := len(r.StatusOffs)
	out := make([]byte, 2+4*n, 2+4*n+r.Tee.Len())
	binary.LittleEndian.PutUint16(out, uint16(n))
	for i, off := range r.StatusOffs {
		binary.LittleEndian.PutUint32(out[2+4*i:], uint32(off))
	}
	return r.Tee.AppendTo(out)
}

// replay writes a stored response to the client with this session's
// transaction status flags, and flushes once.
func (c *Session) replay(payload, p []byte) error {
	if len(payload) < 2 {
		return c.s.RelayMode(p, relay.ModeResult) // cannot happen: stored payloads have a header
	}
	n := int(binary.LittleEndian.Uint16(payload))
	raw := payload[2+4*n:]
	var w io.Writer = c.s.Client.W
	if len(payload) > replayFree {
		// It counts against the fill memory while the client reads it.
		g := newStallGuard(c.s)
		defer g.end()
		w = g
	}
	pos := 0
	for i := 0; i < n; i++ {
		off := int(binary.LittleEndian.Uint32(payload[2+4*i:]))
		if off < pos || off+2 > len(raw) {
			break
		}
		if _, err := w.Write(raw[pos:off]); err != nil {
			return relay.ClientError{Err: err}
		}
		// METADATA_CHANGED says the server prepared the statement again
		// for the execute that filled the entry: a hit prepares nothing.
		// QUERY_WAS_SLOW says the filler's read took longer than its
		// long_query_time; the hit's is this session's.
		st := binary.LittleEndian.Uint16(raw[off:])&^(statusMask|mysql.SERVER_STATUS_METADATA_CHANGED|mysql.SERVER_QUERY_WAS_SLOW) | c.s.Status&statusMask
		if i == n-1 && c.s.QueryWasSlow(time.Since(c.started)) {
			st |= mysql.SERVER_QUERY_WAS_SLOW
		}
		var b [2]byte
		binary.LittleEndian.PutUint16(b[:], st)
		if _, err := w.Write(b[:]); err != nil {
			return relay.ClientError{Err: err}
		}
		pos = off + 2
	}
	if _, err := w.Write(raw[pos:]); err != nil {
		return relay.ClientError{Err: err}
	}
	c.s.Last = relay.Response{Kind: relay.RespResultSet, Status: c.s.Status, Results: 1, Bytes: int64(len(raw))}
	return c.s.Flush()
}

// keepsConds reports a read of no table, which leaves the diagnostics
// as they are, on a session whose diagnostics may hold an earlier
// statement's warnings and whose state is to be read again: the reading
// would clear them.
func (c *Session) keepsConds(info *sqlinfo.Info) bool {
	return c.s.CondsHeld && c.s.RefreshPending() && len(info.Reads) == 0
}

// bypassReason says why a cacheable read must not use the cache on this
// session now, or "".
func (c *Session) bypassReason(info *sqlinfo.Info, st *relay.Stmt, p []byte) string {
	switch {
	case c.CacheOff:
		return whySessionOff
	case c.lockedTables:
		return "lock-tables"
	case c.s.QueryLimited:
		// A hit would not count against the account's limit.
		return "account-query-limit"
	case c.tainted, len(c.s.StaleVars) > 0, c.s.NoSchema():
		// The state the read runs in is not known: a reading of it
		// failed, or cannot be made (for a client with CLIENT_NO_SCHEMA,
		// the server looks for the tables behind SHOW in the session's
		// database).
		return whyTainted
	case info.NoCacheHint:
		return whyHint
	case len(p) >= wire.MaxPayload:
		// A stored response's sequence ids follow a one-packet command.
		return whyTooLarge
	case c.lastHit != nil && c.hitDiag&diagWarnings != 0 && len(info.Reads) == 0:
		// A read of no table leaves the warnings as they are: those of
		// the last hit, which the server has not run. A hit of it would
		// take the last hit's place.
		return whyHitDiagnostics
	}
	if ok, why := info.CacheableIn(c.db); !ok {
		return why
	}
	if c.ownWritePending() {
		return whyOwnWrite
	}
	if why := c.mayReadUncommitted(); why != "" {
		// Directly, the read would see other sessions' uncommitted rows.
		return why
	}
	if c.locksReads() {
		// Directly, the read would take shared locks on what it reads,
		// and wait for other sessions' uncommitted writes.
		return whyLockingRead
	}
	if c.varOn("sql_auto_is_null") {
		// WHERE id IS NULL then finds the row last inserted by the
		// session, in the text or in a view it reads.
		return "sql_auto_is_null"
	}
	if c.traced() {
		return whyTraced
	}
	// A client that tracks its transactions' state sees each read's; and
	// after-first-read has the server begin every transaction.
	firstRead := c.e.cfg.CacheInTransactions == AfterFirstRead
	if (firstRead || c.s.ClientTracksTransactions()) && c.s.Status&(mysql.SERVER_STATUS_AUTOCOMMIT|mysql.SERVER_STATUS_IN_TRANS) == 0 {
		// With autocommit off, this read begins a transaction.
		return whyTxStart
	}
	if c.s.Status&mysql.SERVER_STATUS_IN_TRANS != 0 {
		if c.s.ClientTracksTransactions() {
			// Each read may change the state the client tracks.
			return whyTxTracked
		}
		if firstRead && !c.txSnap && c.snapshotIsolation() {
			// The first read takes the transaction's snapshot, which
			// the reads the server runs later see.
			return whyTxSnapshot
		}
		switch c.e.cfg.CacheInTransactions {
		case Never:
			return whyTx
		case ReadOnly:
			if c.s.Status&mysql.SERVER_STATUS_IN_TRANS_READONLY == 0 {
				return whyTx
			}
		}
		if c.txWrote {
			return whyWriteTx
		}
	}
	if len(c.temps) > 0 {
		for _, t := range sqlinfo.Qualify(info.Reads, c.db) {
			if _, ok := c.temps[t.String()]; ok {
				return whyTemporary
			}
		}
	}
	if st != nil {
		if st.LongData {
			return whyLongData
		}
		if st.Unsure {
			return whyStmtUnsure
		}
		if len(p) > 5 && p[5]&0x0f != 0 { // CURSOR_TYPE_*: rows come by fetch
			return whyCursor
		}
		if st.CursorOpen {
			// An execute the server runs closes the cursor an earlier
			// one opened; a hit would leave it open for COM_STMT_FETCH.
			return whyCursor
		}
	}
	return ""
}

// checkBytes builds the text that identifies an entry: scope, database,
// session state, wire format and statement. It is hashed into the key and
// stored in the entry, where a hit compares it whole, so a hash collision
// can never serve another statement's rows.
func (c *Session) checkBytes(scope cachepolicy.Scope, p []byte, sql string, st *relay.Stmt) []byte {
	b := c.checkBuf[:0]
	if scope == cachepolicy.ScopeShared {
		b = append(b, 0)
	} else {
		b = append(b, 1)
		b = append(b, c.scope()...)
	}
	b = append(b, 0)
	b = append(b, c.db...)
	b = append(b, 0)
	b = binary.LittleEndian.AppendUint64(b, c.state.digestOf(c.s))
	if !c.s.Track {
		// The digest is of the session's SETs alone: it does not name
		// the server, which the variables read at its start do.
		for _, n := range relay.ServerIdentity {
			b = append(b, c.s.Vars[n]...)
			b = append(b, 0)
		}
	}
	format := byte('t')
	if st != nil {
		format = 'b'
	}
	if c.s.DeprecateEOF() {
		format++
	}
	if c.s.ExtMeta {
		format += 2 // column definitions carry MariaDB's extended metadata
	}
	if st == nil && c.s.MultiStatements() && bytes.IndexByte(p, ';') >= 0 {
		// A text whose statement ends in ";" and a comment is two
		// statements to a session with multi-statements on: the rows
		// then come with a second, empty, result.
		format += 4
	}
	b = append(b, format)
	if st == nil {
		if sqlinfo.HasComment(sql) && string(p[1:]) == sql {
			// Without the comments before and after the statement.
			b = append(b, sqlinfo.KeyText(sql, c.dialect())...)
		} else {
			b = append(b, p[1:]...)
		}
	} else {
		text := st.SQL
		if note, ok := st.Ext.(*stmtNote); ok {
			b = binary.LittleEndian.AppendUint64(b, note.state)
			text = note.keyText
		}
		b = append(b, text...)
		b = append(b, 0)
		b = append(b, st.Types...)
		b = append(b, 0)
		if len(p) > 10 {
			b = append(b, p[10:]...) // null bitmap, bound flag, types, values
		}
	}
	c.checkBuf = b
	return b
}

// cacheKey is the key of an entry whose check text hashes to sum.
func cacheKey(sum uint64) string {
	var h [8]byte
	binary.BigEndian.PutUint64(h[:], sum)
	var k [2 + 16]byte
	k[0], k[1] = 'q', ':'
	hex.Encode(k[2:], h[:])
	return string(k[:])
}

func flightKey(key string, gens store.Snap) string {
	d := xxhash.New()
	var b [8]byte
	for _, g := range append(gens.Gens, gens.Local...) {
		binary.LittleEndian.PutUint64(b[:], g)
		_, _ = d.Write(b[:])
	}
	binary.LittleEndian.PutUint64(b[:], d.Sum64())
	return key + string(b[:])
}

// traced reports whether the session has the server trace or profile
// the statements it runs (optimizer_trace, profiling): the server does
// not run a hit, so the session's optimizer trace would then be an
// earlier statement's, and SHOW PROFILES would leave the hit out.
func (c *Session) traced() bool {
	return c.varOn("profiling") || sqlinfo.ContainsFold(c.s.Vars["optimizer_trace"], "enabled=on")
}
