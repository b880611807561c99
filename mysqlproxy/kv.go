package mysqlproxy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/mycached/mycached/mysqlproxy/internal/kv"
	"github.com/mycached/mycached/mysqlproxy/internal/store"
)

// localStmtBase marks statement ids that mycached hands out for the kv
// pseudo-queries it prepares itself. MariaDB counts statement ids up from
// 1 across the whole server, so the top half of the space is free.
const localStmtBase = 1 << 31

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
		return fmt.Errorf("%w: %w", kv.ErrTooLarge, err)
	}
	return err
}

func (k kvStore) Delete(ctx context.Context, key string) (bool, error) {
	return k.st.RawDelete(ctx, key)
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

// kvAllowed reports whether this session's user may use kv.
func (s *session) kvAllowed() bool {
	u := s.srv.cfg.KVUsers
	return len(u) == 0 || slices.Contains(u, s.hello.user)
}

func (s *session) kvNamespace() string {
	if s.srv.cfg.KVPerUser {
		return s.hello.user + ":"
	}
	return ""
}

// parseKV parses sql as a kv pseudo-query, under the session's escaping
// rules.
func (s *session) parseKV(sql string) (*kv.Stmt, bool, error) {
	if s.status&mysql.SERVER_STATUS_NO_BACKSLASH_ESCAPED != 0 {
		return kv.ParseNoBackslashEscapes(sql)
	}
	return kv.Parse(sql)
}

// kvQuery answers a kv pseudo-query sent as text, and reports false for
// SQL. A SELECT of double-quoted literals from a user without kv rights is
// SQL (MySQL returns the strings); the other forms are not SQL at all, so
// such a user gets an error.
func (s *session) kvQuery(sql string) (bool, error) {
	st, ok, err := s.parseKV(sql)
	if !ok {
		return false, nil
	}
	if !s.kvAllowed() {
		if st != nil && st.Op == kv.OpSelect {
			return false, nil
		}
		return true, s.writeErr(mysql.ER_SPECIFIC_ACCESS_DENIED_ERROR, "42000", "mycached: user "+s.hello.user+" may not use key/value pseudo-queries (see --kv-users)")
	}
	if err != nil {
		return true, s.writeKVResult(kv.ErrorResult(err), false)
	}
	if st.Params > 0 {
		return true, s.writeKVResult(kv.ErrorResult(kv.ErrUnbound), false)
	}
	return true, s.writeKVResult(s.execKV(st), false)
}

func (s *session) execKV(st *kv.Stmt) kv.Result {
	return kv.Exec(context.Background(), s.srv.kv, s.kvOptions(), s.kvNamespace(), st)
}

// kvOptions are the kv language's options from the server's config.
func (s *session) kvOptions() kv.Options {
	return kv.Options{Prefix: s.srv.cfg.KVPrefix, MaxBytes: s.srv.cfg.KVMaxBytes}
}

func (s *session) writeKVResult(r kv.Result, binary bool) error {
	switch {
	case r.IsError():
		return s.writeErr(r.Code, r.State, r.Msg)
	case r.IsRows:
		return s.writeRows(r.Columns, len(r.Rows), func(row, col int) ([]byte, bool) {
			return r.Rows[row][col], true
		}, binary)
	}
	return s.writeOK(r.Affected)
}

// kvPrepare answers COM_STMT_PREPARE of a kv pseudo-query itself, and
// reports false for SQL. A prepared SELECT of placeholders is valid SQL
// too: it is prepared on the backend as well and returned as dual, and
// each execute decides by the values bound (see comStmtExecute).
func (s *session) kvPrepare(sql string) (handled bool, dual *kv.Stmt, err error) {
	st, ok, perr := s.parseKV(sql)
	if !ok || !s.kvAllowed() || perr != nil {
		if ok && perr != nil && s.kvAllowed() {
			return true, nil, s.writeKVResult(kv.ErrorResult(perr), false)
		}
		return false, nil, nil
	}
	if st.Op == kv.OpSelect && st.Params > 0 {
		return false, st, nil
	}
	return true, nil, s.kvPrepareLocal(st)
}

// kvPrepareLocal answers COM_STMT_PREPARE with a statement only mycached
// knows.
func (s *session) kvPrepareLocal(st *kv.Stmt) error {
	s.nextLocal++
	id := uint32(localStmtBase) + s.nextLocal
	if s.localStmts == nil {
		s.localStmts = make(map[uint32]*kv.Stmt)
	}
	s.localStmts[id] = st
	cols := 0
	if st.Op == kv.OpSelect || st.Op == kv.OpSelectAll {
		cols = 2
	}
	// COM_STMT_PREPARE_OK, then the parameter and column definitions.
	b := []byte{mysql.OK_HEADER}
	b = append(b, byte(id), byte(id>>8), byte(id>>16), byte(id>>24))
	b = append(b, byte(cols), byte(cols>>8), byte(st.Params), byte(st.Params>>8), 0, 0, 0)
	seq, err := s.client.writePacket(b, s.replySeq())
	if err != nil {
		return clientErr{err}
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
			if seq, err = s.client.writePacket(appendColumnDef(nil, name), seq); err != nil {
				return clientErr{err}
			}
		}
		if !s.deprecateEOF() {
			if seq, err = s.client.writePacket(appendEOF(nil, s.status), seq); err != nil {
				return clientErr{err}
			}
		}
	}
	return s.flush()
}

// stringParams reports whether every parameter an execute binds is a
// string: only then is a dual SELECT a kv lookup. Keys are strings; a
// driver that binds a number, a time or NULL means SQL.
func stringParams(p []byte, n int, types []byte) bool {
	nb := (n + 7) / 8
	at := 10 + nb
	if len(p) <= at {
		return false
	}
	for i := 0; i < n; i++ {
		if p[10+i/8]&(1<<(i%8)) != 0 {
			return false
		}
	}
	if p[at] == 1 {
		if len(p) < at+1+2*n {
			return false
		}
		types = p[at+1 : at+1+2*n]
	}
	if len(types) < 2*n {
		return false
	}
	for i := 0; i < n; i++ {
		switch types[2*i] {
		case mysql.MYSQL_TYPE_STRING, mysql.MYSQL_TYPE_VAR_STRING, mysql.MYSQL_TYPE_VARCHAR,
			mysql.MYSQL_TYPE_BLOB, mysql.MYSQL_TYPE_TINY_BLOB, mysql.MYSQL_TYPE_MEDIUM_BLOB, mysql.MYSQL_TYPE_LONG_BLOB:
		default:
			return false
		}
	}
	return true
}

// kvExecute runs a kv statement mycached prepared.
func (s *session) kvExecute(st *kv.Stmt, p []byte) error {
	args := make([][]byte, st.Params)
	params := decodeParams(p, st.Params, nil)
	if st.Params > 0 && params == nil {
		return s.writeErr(mysql.ER_WRONG_ARGUMENTS, "HY000", "mycached: cannot read the parameters of this execute")
	}
	for i, pv := range params {
		if !pv.null {
			if !pv.ok {
				return s.writeErr(mysql.ER_WRONG_ARGUMENTS, "HY000", "mycached: key/value parameters must be strings or integers")
			}
			args[i] = []byte(pv.text)
		}
	}
	bound, err := st.Bind(args)
	if err != nil {
		return s.writeKVResult(kv.ErrorResult(err), true)
	}
	return s.writeKVResult(s.execKV(bound), true)
}

// kvKeysValid reports whether the strings an execute binds could all be
// kv keys. A dual SELECT binding something that can never be a key (a
// formatted time with its space, say) is SQL.
func (s *session) kvKeysValid(p []byte, n int, types []byte) bool {
	room := 250 - len(s.srv.cfg.KVPrefix) - len(s.kvNamespace())
	for _, pv := range decodeParams(p, n, types) {
		if !pv.ok || pv.text == "" || len(pv.text) > room {
			return false
		}
		for i := 0; i < len(pv.text); i++ {
			if c := pv.text[i]; c <= ' ' || c == 0x7f {
				return false
			}
		}
	}
	return true
}

// luaKV gives policy scripts the kv namespace: cache.get/set/delete.
type luaKV struct {
	kv     kvStore
	prefix string
}

func (l luaKV) Get(key string) ([]byte, bool, error) {
	vals, err := l.kv.GetMulti(context.Background(), []string{l.prefix + key})
	if err != nil {
		return nil, false, err
	}
	return vals[0], vals[0] != nil, nil
}

func (l luaKV) Set(key string, val []byte, ttl time.Duration) error {
	return l.kv.Set(context.Background(), l.prefix+key, val, ttl)
}

func (l luaKV) Delete(key string) error {
	_, err := l.kv.Delete(context.Background(), l.prefix+key)
	return err
}
