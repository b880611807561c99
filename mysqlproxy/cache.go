package mysqlproxy

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/hex"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/mycached/mycached/cachepolicy"
	"github.com/mycached/mycached/mysqlproxy/internal/sqlinfo"
	"github.com/mycached/mycached/mysqlproxy/internal/store"
)

// Bypass reasons, as counted in metrics and shown by SHOW MYCACHED QUERIES.
const (
	whyNotCacheable = "not-cacheable"
	whyWriteTx      = "in-write-transaction"
	whyTx           = "in-transaction"
	whyTooLarge     = "too-large"
	whyPolicy       = "policy"
	whyCacheError   = "cache-error"
	whyPending      = "pending-invalidation"
	whySessionOff   = "session-off"
	whyHint         = "no-cache-hint"
	whyTemporary    = "temporary-table"
	whyCursor       = "cursor"
	whyLongData     = "long-data"
	whyTainted      = "session-state-unknown"
	whyNotStored    = "not-stored"
)

// statusMask are the status flags a hit takes from the session rather than
// from the response that filled the entry.
const statusMask = mysql.SERVER_STATUS_IN_TRANS | mysql.SERVER_STATUS_AUTOCOMMIT | mysql.SERVER_STATUS_IN_TRANS_READONLY

// cacheRead serves a cacheable read (a COM_QUERY, or a COM_STMT_EXECUTE
// when st is set) from the cache, or relays it and stores the response.
func (s *session) cacheRead(p []byte, info *sqlinfo.Info, sql string, st *stmt) error {
	srv := s.srv
	if why := s.bypassReason(info, st, p); why != "" {
		srv.stats.bypass(why)
		srv.queries.note(info.Digest, why, 0)
		return s.relayMode(p, modeResult)
	}
	var params []paramValue
	if st != nil && info.Point != nil {
		params = decodeParams(p, int(st.params), st.types)
	}
	deps := s.readDepsFor(info, params)
	q := &s.q
	*q = cachepolicy.Query{
		SQL: sql, Digest: info.Digest, Kind: info.Kind.String(), Tables: deps.tables,
		DB: s.hello.db, User: s.hello.user, ClientAddr: s.clientAddr, Prepared: st != nil,
		InTransaction: s.status&mysql.SERVER_STATUS_IN_TRANS != 0, Cacheable: true,
		PointLookup: deps.point, Keys: deps.keyStr,
	}
	dec, ok := srv.policy.Cache(q)
	if !ok || dec.TTL <= 0 {
		srv.stats.bypass(whyPolicy)
		srv.queries.note(info.Digest, whyPolicy, 0)
		return s.relayMode(p, modeResult)
	}
	all := deps.all
	if len(dec.Depends) > 0 {
		all = append(append(make([]string, 0, len(all)+len(dec.Depends)), all...), dec.Depends...)
	}
	check := s.checkBytes(dec.Scope, p, st)
	key := cacheKey(check)

	start := time.Now()
	e, tier, cur, status := srv.store.Lookup(context.Background(), key, check, all)
	switch status {
	case store.Hit, store.Stale:
		srv.stats.hit(tier, time.Since(start))
		srv.queries.note(info.Digest, "", 1)
		if err := s.replay(e.Payload, p); err != nil || status != store.Stale || st != nil {
			// Prepared statements are refreshed at the hard ttl instead:
			// their parameters are not a COM_QUERY to re-run.
			return err
		}
		s.refresh(key, check, all, cur, dec, p)
		return nil
	case store.Bypass:
		srv.stats.bypass(whyPending)
		srv.queries.note(info.Digest, whyPending, 0)
		return s.relayMode(p, modeResult)
	case store.Error:
		srv.stats.bypass(whyCacheError)
		return s.relayMode(p, modeResult)
	}
	srv.stats.miss()
	srv.queries.note(info.Digest, "", -1)
	return s.fill(p, key, check, all, cur, dec, start)
}

// fill runs a missed read on the backend, streaming it to the client while
// teeing it, and stores it when it qualifies. Concurrent misses of the same
// key and generations run it once: the others wait and replay the result,
// or run it themselves if it could not be stored. The generations are part
// of the flight's key, so a client that arrives after a write never joins
// a flight that read before it.
func (s *session) fill(p []byte, key string, check []byte, deps []string, gens []uint64, dec cachepolicy.Decision, start time.Time) error {
	srv := s.srv
	fk := flightKey(key, gens)
	leader := false
	var relayErr error
	v, _, _ := srv.flight.Do(fk, func() (any, error) {
		leader = true
		payload, why, err := s.relayTee(p, dec, nil)
		relayErr = err
		if why != "" {
			srv.stats.bypass(why)
		}
		if payload == nil {
			return nil, nil
		}
		s.put(key, check, deps, gens, dec, payload)
		srv.stats.missLatency.Observe(time.Since(start).Seconds())
		return payload, nil
	})
	if leader {
		return relayErr
	}
	if payload, ok := v.([]byte); ok && payload != nil {
		srv.stats.shared.Inc()
		return s.replay(payload, p)
	}
	return s.relayMode(p, modeResult)
}

// relayTee relays a read to dst (nil: the client) and returns its
// response in cacheable form, or nil and the reason it must not be stored.
func (s *session) relayTee(p []byte, dec cachepolicy.Decision, dst *bufio.Writer) ([]byte, string, error) {
	if err := s.forward(p); err != nil {
		return nil, "", err
	}
	limit := s.srv.cfg.MaxResultBytes
	if dec.MaxBytes > 0 && dec.MaxBytes < limit {
		limit = dec.MaxBytes
	}
	r := relayer{s: s, dst: dst, teeMax: int(limit) + payloadHeaderMax}
	r.tee = append(s.srv.getTee(), 0, 0) // room for the count of status offsets
	defer func() { s.srv.putTee(r.tee) }()
	err := r.relay(modeResult)
	s.errSeq = r.lastSeq + 1
	s.last = r.resp
	if err != nil {
		return nil, "", err
	}
	if why := storable(&r.resp, r.tee, dec); why != "" {
		return nil, why, nil
	}
	return r.payload(), "", nil
}

// put stores a response with the generations read before it ran.
func (s *session) put(key string, check []byte, deps []string, gens []uint64, dec cachepolicy.Decision, payload []byte) {
	now := time.Now()
	e := &store.Entry{
		Check: append([]byte(nil), check...), Payload: payload,
		Deps: deps, Gens: gens, Expires: now.Add(dec.TTL),
	}
	if dec.SoftTTL > 0 && dec.SoftTTL < dec.TTL {
		e.Soft = now.Add(dec.SoftTTL)
	}
	if err := s.srv.store.Put(context.Background(), key, e); err == nil {
		s.srv.stats.stores.Inc()
	}
}

// storable says why a relayed response must not be stored, or "".
func storable(resp *Response, tee []byte, dec cachepolicy.Decision) string {
	switch {
	case tee == nil:
		return whyTooLarge
	case resp.Kind != RespResultSet || resp.Failed() || resp.Results != 1 || resp.Cursor || resp.LocalInfile:
		return whyNotStored
	case resp.Warnings != 0:
		return whyNotStored
	case resp.Rows == 0 && !dec.CacheEmpty:
		return whyNotStored
	}
	return ""
}

// payloadHeaderMax bounds the status-offset table at the head of a stored
// response: a result set has at most two status fields.
const payloadHeaderMax = 2 + 2*4

// payload lays out the teed response as stored: the number of status
// offsets, the offsets, then the raw packets.
func (r *relayer) payload() []byte {
	n := len(r.statusOffs)
	out := make([]byte, 2+4*n, 2+4*n+len(r.tee)-2)
	binary.LittleEndian.PutUint16(out, uint16(n))
	for i, off := range r.statusOffs {
		binary.LittleEndian.PutUint32(out[2+4*i:], uint32(off-2))
	}
	return append(out, r.tee[2:]...)
}

// replay writes a stored response to the client with this session's
// transaction status flags, and flushes once.
func (s *session) replay(payload, p []byte) error {
	if len(payload) < 2 {
		return s.relayMode(p, modeResult) // cannot happen: stored payloads have a header
	}
	n := int(binary.LittleEndian.Uint16(payload))
	raw := payload[2+4*n:]
	w := s.client.w
	pos := 0
	for i := 0; i < n; i++ {
		off := int(binary.LittleEndian.Uint32(payload[2+4*i:]))
		if off < pos || off+2 > len(raw) {
			break
		}
		if _, err := w.Write(raw[pos:off]); err != nil {
			return clientErr{err}
		}
		st := binary.LittleEndian.Uint16(raw[off:])&^statusMask | s.status&statusMask
		var b [2]byte
		binary.LittleEndian.PutUint16(b[:], st)
		if _, err := w.Write(b[:]); err != nil {
			return clientErr{err}
		}
		pos = off + 2
	}
	if _, err := w.Write(raw[pos:]); err != nil {
		return clientErr{err}
	}
	s.last = Response{Kind: RespResultSet, Status: s.status, Results: 1, Bytes: int64(len(raw))}
	if err := w.Flush(); err != nil {
		return clientErr{err}
	}
	return nil
}

// refresh re-runs a read whose soft ttl has passed, after its client has
// been served from the entry, and stores the fresh response; the other
// clients go on being served the entry meanwhile. mycached holds no
// passwords, so the refresh runs on this session's own backend
// connection, and its response goes nowhere but the cache.
func (s *session) refresh(key string, check []byte, deps []string, gens []uint64, dec cachepolicy.Decision, p []byte) {
	// The store hands Stale to one lookup per key at a time, so one
	// session refreshes while the others are served the entry.
	discard := s.srv.discard()
	defer s.srv.putDiscard(discard)
	if payload, _, err := s.relayTee(p, dec, discard); err == nil && payload != nil {
		s.put(key, check, deps, gens, dec, payload)
	}
}

// bypassReason says why a cacheable read must not use the cache on this
// session now, or "".
func (s *session) bypassReason(info *sqlinfo.Info, st *stmt, p []byte) string {
	switch {
	case s.cacheOff:
		return whySessionOff
	case s.tainted:
		return whyTainted
	case info.NoCacheHint:
		return whyHint
	case len(p) >= maxPayload:
		// A stored response's sequence ids follow a one-packet command.
		return whyTooLarge
	}
	if ok, why := info.CacheableIn(s.hello.db); !ok {
		return why
	}
	if s.status&mysql.SERVER_STATUS_IN_TRANS != 0 {
		switch s.srv.cfg.CacheInTransactions {
		case CacheNever:
			return whyTx
		case CacheReadOnly:
			if s.status&mysql.SERVER_STATUS_IN_TRANS_READONLY == 0 {
				return whyTx
			}
		}
		if s.txWrote {
			return whyWriteTx
		}
	}
	if len(s.temps) > 0 {
		for _, t := range sqlinfo.Qualify(info.Reads, s.hello.db) {
			if _, ok := s.temps[t.String()]; ok {
				return whyTemporary
			}
		}
	}
	if st != nil {
		if st.longData {
			return whyLongData
		}
		if len(p) > 5 && p[5]&0x0f != 0 { // CURSOR_TYPE_*: rows come by fetch
			return whyCursor
		}
	}
	return ""
}

// checkBytes builds the text that identifies an entry: scope, database,
// session state, wire format and statement. It is hashed into the key and
// stored in the entry, where a hit compares it whole, so a hash collision
// can never serve another statement's rows.
func (s *session) checkBytes(scope cachepolicy.Scope, p []byte, st *stmt) []byte {
	b := s.checkBuf[:0]
	if scope == cachepolicy.ScopeShared {
		b = append(b, 0)
	} else {
		b = append(b, 1)
		b = append(b, s.hello.user...)
	}
	b = append(b, 0)
	b = append(b, s.hello.db...)
	b = append(b, 0)
	b = binary.LittleEndian.AppendUint64(b, s.state.digest)
	format := byte('t')
	if st != nil {
		format = 'b'
	}
	if s.deprecateEOF() {
		format++
	}
	b = append(b, format)
	if st == nil {
		b = append(b, p[1:]...)
	} else {
		b = append(b, st.sql...)
		b = append(b, 0)
		b = append(b, st.types...)
		b = append(b, 0)
		if len(p) > 10 {
			b = append(b, p[10:]...) // null bitmap, bound flag, types, values
		}
	}
	s.checkBuf = b
	return b
}

func cacheKey(check []byte) string {
	var h [8]byte
	binary.BigEndian.PutUint64(h[:], xxhash.Sum64(check))
	var k [2 + 16]byte
	k[0], k[1] = 'q', ':'
	hex.Encode(k[2:], h[:])
	return string(k[:])
}

func flightKey(key string, gens []uint64) string {
	d := xxhash.New()
	var b [8]byte
	for _, g := range gens {
		binary.LittleEndian.PutUint64(b[:], g)
		_, _ = d.Write(b[:])
	}
	binary.LittleEndian.PutUint64(b[:], d.Sum64())
	return key + string(b[:])
}
