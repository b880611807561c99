// Package kvproxy answers the key/value pseudo-queries over MySQL's wire
// protocol: on the main listener for the accounts allowed them, beside
// the SQL they relay, and on a kv-only listener with no backend.
package kvproxy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/mycached/mycached/mysqlproxy/internal/sqlinfo"

	"github.com/mycached/mycached/mysqlproxy/internal/kv"
	"github.com/mycached/mycached/mysqlproxy/internal/metrics"
	"github.com/mycached/mycached/mysqlproxy/internal/relay"
	"github.com/mycached/mycached/mysqlproxy/internal/store"
	"github.com/mycached/mycached/mysqlproxy/internal/wire"
)

// localStmtBase marks statement ids that mycached hands out for the kv
// pseudo-queries it prepares itself. MariaDB counts statement ids up from
// 1 across the whole server, so the top half of the space is free.
const localStmtBase = 1 << 31

// Config is what kv needs of the server's configuration.
type Config struct {
	Prefix   string   // namespace of the pairs in the cache tier
	MaxBytes int      // largest value accepted
	Users    []string // who may use kv on the main listener; empty: everyone
	PerUser  bool     // a namespace per user
	// Timeout bounds each kv statement as a whole, and each policy
	// script's cache.get, set and delete (default kv.DefaultTimeout).
	Timeout time.Duration
	// Passwords are the users the kv-only listener accepts, with their
	// passwords in the clear or as MySQL's "*" + 40 hex digits hash.
	Passwords map[string]string
	// Replies bounds the bytes of large replies held while clients read
	// them (the cache's fill memory); nil: no bound.
	Replies *wire.Budget
	// Metrics, when set, gets the kv statements' counters.
	Metrics *metrics.Registry
}

// Server is the kv state every session shares. Its methods are safe for
// concurrent use.
type Server struct {
	cfg Config
	kv  kvStore
	// ops counts the statements run, by kind; errs the error replies.
	ops  *metrics.CounterVec
	errs *metrics.Counter
}

// New returns a kv server storing its pairs in st's raw namespace; l1Only
// says no memcached is configured, so values have no item size limit.
func New(cfg Config, st *store.Store, l1Only bool) *Server {
	srv := &Server{cfg: cfg, kv: kvStore{st: st, l1Only: l1Only}}
	if cfg.Metrics != nil {
		srv.ops = cfg.Metrics.CounterVec("mycached_kv_statements_total", "Key/value pseudo-queries run, by statement.", "op")
		srv.errs = cfg.Metrics.Counter("mycached_kv_errors_total", "Key/value pseudo-queries answered with an error, those that did not parse included.")
		// Every kind shows from the start, at 0.
		for _, op := range []kv.Op{kv.OpInsert, kv.OpSelect, kv.OpDelete, kv.OpSelectAll, kv.OpDrop} {
			srv.ops.With(opLabel(op))
		}
	}
	return srv
}

// Session is one client session's kv state. It is owned by the session's
// goroutine.
type Session struct {
	srv       *Server
	s         *relay.Session
	kvOnly    bool                // on the kv-only listener, where every form is kv
	local     map[uint32]*kv.Stmt // kv pseudo-queries mycached prepared itself
	nextLocal uint32
	long      map[uint32]bool   // local statements sent COM_STMT_SEND_LONG_DATA since their last execute
	types     map[uint32][]byte // the parameter types the last execute of each local statement sent
	// last is the local statement that the id 0xffffffff names (the
	// statement prepared last) when the last prepare was answered here,
	// noLast when that prepare was refused here, and 0 when the server
	// answered it.
	last uint32
}

// noLast stands for a last prepare refused by mycached: the id
// relay.LastStmtID then names no statement.
const noLast = relay.LastStmtID

// NewSession returns the kv state of the session s.
func (srv *Server) NewSession(s *relay.Session) *Session {
	return &Session{srv: srv, s: s}
}

// Reset forgets the session's kv statements.
func (k *Session) Reset() {
	clear(k.local)
	clear(k.long)
	clear(k.types)
	k.last = 0
}

// ServerPrepared notes that the server answered the session's last
// prepare: the id 0xffffffff is the server's to read again.
func (k *Session) ServerPrepared() { k.last = 0 }

// noteLongData remembers a COM_STMT_SEND_LONG_DATA of the local
// statement id: its execute will lack that parameter.
func (k *Session) noteLongData(id uint32) {
	if k.long == nil {
		k.long = make(map[uint32]bool)
	}
	k.long[id] = true
}

// executeLocal runs an execute of the local statement id. One that follows
// COM_STMT_SEND_LONG_DATA is refused: the parameter sent so is not in the
// execute, and the values after it would be misread as other keys.
func (k *Session) executeLocal(id uint32, st *kv.Stmt, p []byte) error {
	if k.long[id] {
		delete(k.long, id)
		return k.writeKVErr(mysql.ER_WRONG_ARGUMENTS, "HY000", "mycached: key/value parameters must be bound in the execute, not sent by COM_STMT_SEND_LONG_DATA")
	}
	// A driver sends the types with the first execute and leaves them
	// out after, meaning the same ones.
	if t, _ := relay.SentTypes(p, st.Params); t != nil {
		if k.types == nil {
			k.types = make(map[uint32][]byte)
		}
		k.types[id] = append(k.types[id][:0], t...)
	}
	return k.kvExecute(st, p, k.types[id])
}

// kvStore adapts the cache tiers' raw namespace to the kv language.
type kvStore struct {
	st     *store.Store
	l1Only bool
}

func (k kvStore) GetMulti(ctx context.Context, keys []string) ([][]byte, error) {
	return k.st.RawGet(ctx, keys)
}

func (k kvStore) Set(ctx context.Context, key string, val []byte, ttl time.Duration) error {
	err := k.st.RawSet(ctx, key, val, ttl)
	if errors.Is(err, store.ErrTooLarge) {
		if k.l1Only {
			return fmt.Errorf("%w: %w", kv.ErrTooLargeForMemory, err)
		}
		return fmt.Errorf("%w: %w", kv.ErrTooLarge, err)
	}
	return err
}

func (k kvStore) DeleteMulti(ctx context.Context, keys []string) (int, error) {
	return k.st.RawDeleteMulti(ctx, keys)
}

func (k kvStore) Keys(ctx context.Context, prefix string) ([]string, error) {
	return k.st.RawKeys(ctx, prefix)
}

func (k kvStore) ItemSizeMax(ctx context.Context) int {
	if k.l1Only {
		return 0 // L1 has no item limit; --kv-max-bytes bounds values
	}
	return k.st.ItemSizeMax(ctx)
}

// kvAllowed reports whether this session may use kv: every session of
// the kv-only listener, and on the main listener the accounts listed in
// Config.Users (none by default), since SELECT "x" is SQL too.
func (k *Session) kvAllowed() bool {
	return k.kvOnly || k.s.IsAccount(k.srv.cfg.Users)
}

// ansiQuotes reports whether the session's sql_mode makes "x" an
// identifier, so that SELECT "x" is SQL that cannot mean kv. A sql_mode
// set where no tracker reports it (SET @@sql_mode with no scope, stored
// code) is read from the server first; while it cannot be read,
// ANSI_QUOTES may be on, and the text is SQL.
func (k *Session) ansiQuotes() bool {
	if k.kvOnly {
		return false
	}
	if slices.Contains(k.s.StaleVars, "sql_mode") {
		if k.s.NoSchema() || k.s.RefreshIdentity() != nil || slices.Contains(k.s.StaleVars, "sql_mode") {
			return true
		}
	}
	return strings.Contains(strings.ToUpper(k.s.Vars["sql_mode"]), "ANSI_QUOTES")
}

// trailBackslashCollations are the handshake collations of the character
// sets whose characters may end in the byte of a backslash: big5, sjis,
// gbk, cp932, and MySQL's gb18030.
var trailBackslashCollations = map[byte]bool{1: true, 84: true, 13: true, 88: true, 28: true, 87: true,
	95: true, 96: true, 248: true, 249: true, 250: true}

// kvNamespace is the session's namespace under PerUser: the user name
// of the account the server matched on the main listener (not the name
// the client typed, which an anonymous account accepts for anyone), the
// user mycached authenticated on the kv-only listener.
func (k *Session) kvNamespace() string {
	if !k.srv.cfg.PerUser {
		return ""
	}
	if k.kvOnly {
		return kv.UserNamespace(k.s.Hello.User)
	}
	return kv.UserNamespace(k.s.AccountUser())
}

// parseKV parses sql as a kv pseudo-query, under the session's escaping
// rules: its sql_mode's, as the server would read the text. The status
// flag NO_BACKSLASH_ESCAPES is not the server's reading: a routine that
// sets sql_mode leaves the flag as it set it, and restores sql_mode.
// A sql_mode set where no tracker reports it is read again first, only
// for a text that is kv under either escaping (reading it would take the
// last statement's warnings from SQL that follows, SHOW WARNINGS among
// it); while it cannot be read, the text is not taken as kv (the server
// answers it).
func (k *Session) parseKV(sql string) (*kv.Stmt, bool, error) {
	if k.kvOnly {
		if trailBackslashCollations[k.s.Hello.Charset] && strings.ContainsFunc(sql, func(r rune) bool { return r >= 0x80 }) {
			// The handshake's character set is big5, gbk, sjis, cp932 or
			// gb18030, where a character may end in 0x5C: the kv parser
			// would read half a character as a backslash, and store
			// another key or value than the client's.
			return nil, true, fmt.Errorf("%w: the client's character set may hide a backslash in a character; "+
				"send keys and values in utf8mb4 or as hex literals (X'...')", kv.ErrSyntax)
		}
		return kv.ParseUnambiguous(sql)
	}
	if strings.ContainsFunc(sql, func(r rune) bool { return r >= 0x80 }) &&
		(slices.Contains(k.s.StaleVars, "character_set_client") || sqlinfo.TrailBackslash(k.s.Vars["character_set_client"])) {
		// In big5, gbk or sjis a character may end in 0x5C, which the
		// kv parser would read as a backslash: SELECT "ソ" AS x is SQL
		// there. Such a text is the server's.
		return nil, false, nil
	}
	if slices.Contains(k.s.StaleVars, "sql_mode") {
		_, ok, _ := kv.Parse(sql)
		_, nok, _ := kv.ParseNoBackslashEscapes(sql)
		if !ok && !nok || k.s.NoSchema() || k.s.RefreshIdentity() != nil || slices.Contains(k.s.StaleVars, "sql_mode") {
			return nil, false, nil
		}
	}
	if sqlinfo.DialectOf(k.s.Vars["sql_mode"], "").NoBackslashEscapes {
		return kv.ParseNoBackslashEscapes(sql)
	}
	return kv.Parse(sql)
}

// Query answers a kv pseudo-query sent as text, and reports false for
// SQL. For a session not allowed kv every text is SQL, and goes to the
// server, which says what it says of INSERT "k" = "v"; a SELECT of
// double-quoted literals is SQL too under ANSI_QUOTES.
func (k *Session) Query(sql string) (bool, error) {
	if !k.kvAllowed() {
		return false, nil
	}
	st, ok, err := k.parseKV(sql)
	if !ok || (st != nil && st.Op == kv.OpSelect && k.ansiQuotes()) {
		return false, nil
	}
	if err != nil {
		return true, k.writeKVResult(kv.ErrorResult(err), false)
	}
	if st.Params > 0 {
		return true, k.writeKVResult(kv.ErrorResult(kv.ErrUnbound), false)
	}
	return true, k.writeKVResult(k.execKV(st), false)
}

func (k *Session) execKV(st *kv.Stmt) kv.Result {
	if k.srv.ops != nil {
		k.srv.ops.With(opLabel(st.Op)).Inc()
	}
	return kv.Exec(context.Background(), k.srv.kv, k.kvOptions(), k.kvNamespace(), st)
}

// opLabel names op as the statements counter's label does.
func opLabel(op kv.Op) string {
	return strings.ReplaceAll(strings.ToLower(op.String()), " *", "_all")
}

// kvOptions are the kv language's options from the server's config.
func (k *Session) kvOptions() kv.Options {
	o := kv.Options{Prefix: k.srv.cfg.Prefix, MaxBytes: k.srv.cfg.MaxBytes, Timeout: k.srv.cfg.Timeout}
	if k.srv.cfg.Replies != nil {
		o.Replies = k.srv.cfg.Replies
	}
	return o
}

// writeKVErr answers a pseudo-query (or what was sent as one) with an
// error of mycached's own, counted with the others.
func (k *Session) writeKVErr(code uint16, state, msg string) error {
	if k.srv.errs != nil {
		k.srv.errs.Inc()
	}
	return k.s.WriteErr(code, state, msg)
}

func (k *Session) writeKVResult(r kv.Result, binary bool) error {
	// A client that does not read holds its reply: what a large one holds
	// of the fill memory, taken as its values were read, is given back
	// once it has gone out.
	defer r.Release()
	switch {
	case r.IsError():
		return k.writeKVErr(r.Code, r.State, r.Msg)
	case r.IsRows:
		return k.s.WriteRows(r.Columns, collations(r), len(r.Rows), func(row, col int) ([]byte, bool) {
			return r.Rows[row][col], true
		}, binary)
	}
	return k.s.WriteOK(r.Affected)
}

// Prepare answers COM_STMT_PREPARE of a kv pseudo-query itself, and
// reports false for SQL.
func (k *Session) Prepare(sql string) (handled bool, err error) {
	if !k.kvAllowed() {
		return false, nil
	}
	st, ok, perr := k.parseKV(sql)
	switch {
	case !ok:
		return false, nil
	case perr != nil:
		k.last = noLast
		return true, k.writeKVResult(kv.ErrorResult(perr), false)
	case st.Op == kv.OpSelect && !k.kvOnly:
		// SELECT ? and SELECT "k" are SQL on the main listener: the
		// server prepares them and tells the client their columns, and
		// every execute must give what that said.
		return false, nil
	}
	return true, k.kvPrepareLocal(st)
}

// kvPrepareLocal answers COM_STMT_PREPARE with a statement only mycached
// knows.
func (k *Session) kvPrepareLocal(st *kv.Stmt) error {
	k.nextLocal++
	id := uint32(localStmtBase) + k.nextLocal
	if k.local == nil {
		k.local = make(map[uint32]*kv.Stmt)
	}
	k.local[id] = st
	k.last = id
	cols := 0
	if st.Op == kv.OpSelect || st.Op == kv.OpSelectAll {
		cols = 2
	}
	// COM_STMT_PREPARE_OK, then the parameter and column definitions.
	b := []byte{mysql.OK_HEADER}
	b = append(b, byte(id), byte(id>>8), byte(id>>16), byte(id>>24))
	b = append(b, byte(cols), byte(cols>>8), byte(st.Params), byte(st.Params>>8), 0, 0, 0)
	seq, err := k.s.Client.WritePacket(b, k.s.ReplySeq())
	if err != nil {
		return relay.ClientError{Err: err}
	}
	for _, n := range []int{st.Params, cols} {
		if n == 0 {
			continue
		}
		for i := 0; i < n; i++ {
			name := "?"
			if n == cols {
				name = kv.Columns()[i]
			}
			if seq, err = k.s.Client.WritePacket(wire.AppendColumnDef(nil, name, k.s.ExtMeta), seq); err != nil {
				return relay.ClientError{Err: err}
			}
		}
		if !k.s.DeprecateEOF() {
			if seq, err = k.s.Client.WritePacket(wire.AppendEOF(nil, k.s.Status), seq); err != nil {
				return relay.ClientError{Err: err}
			}
		}
	}
	return k.s.Flush()
}

// Command answers the COM_STMT_EXECUTE, COM_STMT_CLOSE,
// COM_STMT_SEND_LONG_DATA and COM_STMT_RESET of the statements mycached
// prepared itself, and reports false for every other command.
func (k *Session) Command(p []byte) (bool, error) {
	if len(p) < 5 {
		return false, nil
	}
	id := wire.Le32(p[1:])
	if id == relay.LastStmtID && k.last != 0 {
		// The statement prepared last was answered here, not by the
		// server, whose last statement is another one.
		if k.last == noLast {
			switch p[0] {
			case mysql.COM_STMT_CLOSE, mysql.COM_STMT_SEND_LONG_DATA:
				return true, nil // no response
			}
			return true, k.s.WriteErr(mysql.ER_UNKNOWN_STMT_HANDLER, "HY000", unknownStmt(p))
		}
		id = k.last
	}
	st := k.local[id]
	if st == nil {
		return false, nil
	}
	switch p[0] {
	case mysql.COM_STMT_EXECUTE:
		return true, k.executeLocal(id, st, p)
	case mysql.COM_STMT_CLOSE:
		delete(k.local, id)
		delete(k.long, id)
		delete(k.types, id)
		if id == k.last {
			k.last = noLast
		}
		return true, nil // no response
	case mysql.COM_STMT_SEND_LONG_DATA:
		k.noteLongData(id)
		return true, nil // no response
	case mysql.COM_STMT_RESET:
		delete(k.long, id)
		return true, k.s.WriteOK(0)
	}
	return false, nil
}

// kvExecute runs a kv statement mycached prepared.
func (k *Session) kvExecute(st *kv.Stmt, p []byte, types []byte) error {
	args := make([][]byte, st.Params)
	params := wire.DecodeParams(p, st.Params, types)
	if st.Params > 0 && params == nil {
		return k.writeKVErr(mysql.ER_WRONG_ARGUMENTS, "HY000", "mycached: cannot read the parameters of this execute")
	}
	for i, pv := range params {
		if !pv.Null {
			if !pv.OK {
				return k.writeKVErr(mysql.ER_WRONG_ARGUMENTS, "HY000", "mycached: key/value parameters must be strings or integers")
			}
			args[i] = []byte(pv.Text)
		}
	}
	bound, err := st.Bind(args)
	if err != nil {
		return k.writeKVResult(kv.ErrorResult(err), true)
	}
	return k.writeKVResult(k.execKV(bound), true)
}

// LuaKV gives policy scripts the kv namespace: cache.get/set/delete.
func (srv *Server) LuaKV() LuaKV {
	return LuaKV{kv: srv.kv, prefix: srv.cfg.Prefix, timeout: srv.cfg.Timeout}
}

// LuaKV is the kv namespace as policy scripts see it. A script's hook
// stops waiting at its own deadline; each call also ends by the kv
// timeout, so that one the hook abandoned does not linger.
type LuaKV struct {
	kv      kvStore
	prefix  string
	timeout time.Duration
}

func (l LuaKV) ctx() (context.Context, context.CancelFunc) {
	t := l.timeout
	if t <= 0 {
		t = kv.DefaultTimeout
	}
	return context.WithTimeout(context.Background(), t)
}

func (l LuaKV) Get(key string) ([]byte, bool, error) {
	ctx, cancel := l.ctx()
	defer cancel()
	vals, err := l.kv.GetMulti(ctx, []string{l.prefix + key})
	if err != nil {
		return nil, false, err
	}
	return vals[0], vals[0] != nil, nil
}

func (l LuaKV) Set(key string, val []byte, ttl time.Duration) error {
	ctx, cancel := l.ctx()
	defer cancel()
	return l.kv.Set(ctx, l.prefix+key, val, ttl)
}

func (l LuaKV) Delete(key string) error {
	ctx, cancel := l.ctx()
	defer cancel()
	_, err := l.kv.DeleteMulti(ctx, []string{l.prefix + key})
	return err
}

// collations labels each column of a kv result utf8mb4 when all its
// values are UTF-8, and binary otherwise, as MariaDB labels a string
// literal and an X'...' one: a client decoding a binary value as text
// would fail (PyMySQL and MySQLdb raise, and break the connection) or
// garble it.
func collations(r kv.Result) []uint16 {
	out := make([]uint16, len(r.Columns))
	for c := range out {
		out[c] = wire.CollationUTF8MB4
		for _, row := range r.Rows {
			if c < len(row) && !utf8.Valid(row[c]) {
				out[c] = wire.CollationBinary
				break
			}
		}
	}
	return out
}

// unknownStmt is the server's message for a COM_STMT_* command p that
// names no statement.
func unknownStmt(p []byte) string {
	id := "0"
	if len(p) >= 5 {
		id = strconv.FormatUint(uint64(wire.Le32(p[1:])), 10)
	}
	fn := "mysqld_stmt_execute"
	switch p[0] {
	case mysql.COM_STMT_RESET:
		fn = "mysqld_stmt_reset"
	case mysql.COM_STMT_FETCH:
		fn = "mysqld_stmt_fetch"
	}
	return "Unknown prepared statement handler (" + id + ") given to " + fn
}
