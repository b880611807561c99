package relay

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/mycached/mycached/mysqlproxy/internal/sqlinfo"
	"github.com/mycached/mycached/mysqlproxy/internal/wire"
)

// Stmt is a prepared statement as the client and the backend know it.
type Stmt struct {
	ID      uint32
	SQL     string
	Params  uint16
	Columns uint16
	// Types are the parameter types the server holds for the statement,
	// bound by the last execute that sent them; nil when unknown.
	Types    []byte
	LongData bool // COM_STMT_SEND_LONG_DATA since the last execute
	// serverTypes are the types the server was last sent; behind is
	// the last execute answered from the cache since, which bound other
	// types, and which the server has not run (see SyncTypes).
	serverTypes []byte
	behind      []byte
	// typesSent says the execute being answered sent types.
	typesSent bool
	// Unsure says a command may have changed the statement on the server
	// unseen (one that named it by LastStmtID when mycached could not
	// tell): it is relayed as it is, and never answered from the cache.
	Unsure bool
	// CursorOpen says the server may hold a cursor of the statement,
	// which only an execute or a reset it runs closes.
	CursorOpen bool
	// namesTrackers says the text names the session's trackers.
	namesTrackers bool
	// Ext is the handler's own note on the statement, such as its
	// analysis.
	Ext any
}

// Prepare relays a COM_STMT_PREPARE and, when the backend prepared the
// statement, registers it and returns it; otherwise it returns nil.
func (s *Session) Prepare(p []byte) (*Stmt, error) {
	if err := s.Forward(p); err != nil {
		return nil, err
	}
	r := Relayer{S: s}
	sp, err := r.relayPrepare()
	s.Done(&r)
	if err != nil || r.Resp.Kind != RespOK {
		if err == nil {
			s.lastUnsure = true
		}
		return nil, err
	}
	s.lastStmt, s.lastUnsure = sp.id, false
	if s.stmts == nil {
		s.stmts = make(map[uint32]*Stmt)
	}
	st := &Stmt{ID: sp.id, SQL: string(p[1:]), Params: sp.params, Columns: sp.columns,
		namesTrackers: sqlinfo.ContainsFold(p[1:], "session_track_")}
	s.stmts[sp.id] = st
	return st, nil
}

// Stmt returns the prepared statement that a COM_STMT_* packet p names,
// or nil.
func (s *Session) Stmt(p []byte) *Stmt {
	id, ok := s.stmtID(p)
	if !ok {
		return nil
	}
	return s.stmts[id]
}

// LastStmtID is the id by which a command names the statement prepared
// last (MariaDB's; Connector/J and Connector/C use it to send a prepare
// and its execute at once).
const LastStmtID = 0xffffffff

// stmtID returns the id of the statement a COM_STMT_* packet p names,
// reading LastStmtID as the server does. It reports false when p names
// none, or names the last statement after a prepare the server refused,
// when the server may take it for the statement prepared before or for
// none: that statement is then Unsure.
func (s *Session) stmtID(p []byte) (uint32, bool) {
	if len(p) < 5 {
		return 0, false
	}
	id := wire.Le32(p[1:])
	if id != LastStmtID {
		return id, true
	}
	if s.lastUnsure {
		if st := s.stmts[s.lastStmt]; st != nil {
			st.Unsure = true
		}
		return 0, false
	}
	return s.lastStmt, s.lastStmt != 0
}

// forgetStmts forgets the session's prepared statements, which the
// server dropped (a reset, a change of user).
func (s *Session) forgetStmts() {
	clear(s.stmts)
	s.lastStmt, s.lastUnsure = 0, false
}

// NoteParamTypes remembers the parameter types an execute binds; later
// executes may leave them out and mean the same ones.
func NoteParamTypes(st *Stmt, p []byte) {
	if st.Params == 0 {
		return
	}
	types, sent := SentTypes(p, int(st.Params))
	st.typesSent = sent
	switch {
	case !sent:
	case types == nil:
		st.Types = nil // the server reads what there is, and refuses it
	default:
		st.Types = append(st.Types[:0], types...)
	}
}

// SentTypes returns the parameter types an execute of params parameters
// sends, and whether its flag says it sends them; the types are nil when
// the packet ends before them.
func SentTypes(p []byte, params int) ([]byte, bool) {
	at := 10 + (params+7)/8
	if params == 0 || len(p) <= at || p[at] == 0 { // any other flag sends the types, as the server reads it
		return nil, false
	}
	if end := at + 1 + 2*params; len(p) >= end {
		return p[at+1 : end], true
	}
	return nil, true
}

// ExecuteDone notes how the server answered an execute of st. One it
// refused before running (error 1210 "Incorrect arguments", 1835
// "Malformed packet") keeps the long data sent for the next execute;
// when it sent types, the server may hold them or the ones bound before
// (it takes types it can read before it reads the values), so they are
// unknown until an execute sends types again. Any other answer ends the
// long data.
func ExecuteDone(st *Stmt, resp *Response) {
	sent := st.typesSent
	st.typesSent = false
	if resp.Kind == RespErr && (resp.ErrCode == 1210 || resp.ErrCode == 1835) {
		if sent {
			st.Types = nil
		}
		return
	}
	st.LongData = false
}

// AnsweredByCache notes that exec, an execute of st (with its types),
// was answered without the server, which then holds the parameters it
// was last sent, not perhaps the types this execute bound.
func AnsweredByCache(st *Stmt, exec []byte) {
	st.behind = st.behind[:0]
	if st.Types != nil && !bytes.Equal(st.Types, st.serverTypes) && len(exec) <= maxBehind {
		st.behind = append(st.behind, exec...)
	}
}

// maxBehind bounds the execute a statement keeps for SyncTypes; past it
// the server could not be brought up to date, and the execute is not
// answered from the cache (FallsBehind).
const maxBehind = 64 << 10

// FallsBehind reports whether answering exec, an execute of st with its
// types, from the cache would leave the server with other types than
// the client's, which SyncTypes could not bring up to date.
func FallsBehind(st *Stmt, exec []byte) bool {
	return len(exec) > maxBehind && st.Types != nil && !bytes.Equal(st.Types, st.serverTypes)
}

// Behind reports whether the server holds other parameter types for st
// than the client's last execute, which the cache answered, bound.
func Behind(st *Stmt) bool { return len(st.behind) > 0 }

// sentTypes notes the types an execute the server runs sends.
func (st *Stmt) sentTypes(p []byte) {
	if types, sent := SentTypes(p, int(st.Params)); sent && types != nil {
		st.serverTypes = append(st.serverTypes[:0], types...)
		st.behind = st.behind[:0]
	}
}

// SyncTypes brings the server up to date with the client's execute of st
// that the cache answered, before the client's first
// COM_STMT_SEND_LONG_DATA after it: the server reads long data by the
// parameters it holds (a value sent for a parameter last bound as an
// integer is dropped when the next execute binds a string), and directly
// it would hold that execute's. The execute runs, without a cursor, and
// its answer is discarded; only a cacheable read is answered from the
// cache, so it writes nothing. Nothing is done while the statement has a
// cursor open, which an execute would close, nor outside autocommit or
// in a transaction, where the read would begin or join one: the cache
// does that there (SyncTypesInTransaction), and follows it.
func (s *Session) SyncTypes(st *Stmt) error {
	if s.Status&mysql.SERVER_STATUS_AUTOCOMMIT == 0 || s.InTransaction() {
		return nil
	}
	return s.SyncTypesInTransaction(st)
}

// SyncTypesInTransaction is SyncTypes in a transaction too, or with
// autocommit off: the execute runs as a read in the transaction, where
// the caller follows what it does to the transaction.
func (s *Session) SyncTypesInTransaction(st *Stmt) error {
	if len(st.behind) == 0 || st.LongData || st.CursorOpen || st.Unsure {
		return nil
	}
	q := st.behind
	st.behind = nil
	binary.LittleEndian.PutUint32(q[1:], st.ID) // not the last statement's id: another may have been prepared since
	q[5] = 0                                    // no cursor
	return s.discard(q, bufio.NewWriter(io.Discard))
}

// ComStmtBulkExecute is MariaDB's COM_STMT_BULK_EXECUTE: one execute of
// a prepared statement for many rows of parameters, run by the server as
// one statement.
const ComStmtBulkExecute = 0xfa

// ForgetTypes makes st's parameter types unknown, after a bulk execute:
// whether the server keeps its types for the executes that follow
// without types, as it keeps an execute's, is not mycached's to assume.
// Until an execute sends types again, executes without them are relayed
// as they are, and not answered from the cache.
func ForgetTypes(st *Stmt) { st.Types = nil }

// ExecuteParams decodes the parameters an execute of st binds, or returns
// nil when it cannot. A parameter sent by COM_STMT_SEND_LONG_DATA since
// the last execute has no value (nor a meaningful null bit) in the
// execute, so every value after it would be misread as another: rows
// keyed or invalidated by such values would be the wrong ones.
func ExecuteParams(st *Stmt, p []byte) []wire.Param {
	if st.LongData {
		return nil
	}
	return wire.DecodeParams(p, int(st.Params), st.Types)
}

// TimeParam reports whether an execute of st binds a parameter as a TIME
// value (wire.HasTimeParam).
func TimeParam(st *Stmt, p []byte) bool {
	return wire.HasTimeParam(p, int(st.Params), st.Types)
}

// UntypedLast reports whether p, an execute of st, names the statement by
// LastStmtID and carries no parameter types for parameters st has. MariaDB
// refuses such an execute (1835, malformed packet): it takes the types of
// a statement named so from the execute alone. It is relayed as it is,
// neither given types nor answered from the cache.
func UntypedLast(st *Stmt, p []byte) bool {
	if st.Params == 0 || len(p) < 5 || wire.Le32(p[1:]) != LastStmtID {
		return false
	}
	at := 10 + (int(st.Params)+7)/8
	return len(p) <= at || p[at] == 0
}

// WithTypes returns an execute that carries its parameter types. A client
// sends them once and leaves them out after; if that first execute was
// answered without the backend, the backend never saw them, so every
// execute mycached forwards carries them again.
func WithTypes(st *Stmt, p []byte) []byte {
	if st.Params == 0 || st.Types == nil || st.Unsure {
		return p
	}
	at := 10 + (int(st.Params)+7)/8
	if len(p) <= at || p[at] != 0 {
		return p
	}
	q := make([]byte, 0, len(p)+len(st.Types))
	q = append(q, p[:at]...)
	q = append(q, 1)
	q = append(q, st.Types...)
	return append(q, p[at+1:]...)
}

// ReplayExecute runs exec, a COM_STMT_EXECUTE of the statement sql, on
// the backend with its response discarded into dst: on the statement
// itself while the client has it prepared, or else on one prepared for
// the purpose and closed after. A cache hit that the session's next
// statement looks behind (ROW_COUNT(), warnings) is replayed so.
func (s *Session) ReplayExecute(sql string, exec []byte, dst *bufio.Writer) error {
	if s.Stmt(exec) != nil {
		return s.discard(exec, dst)
	}
	if err := s.Forward(append([]byte{mysql.COM_STMT_PREPARE}, sql...)); err != nil {
		return err
	}
	r := Relayer{S: s, Dst: dst}
	sp, err := r.relayPrepare()
	s.Done(&r)
	if err != nil || r.Resp.Kind != RespOK {
		return err
	}
	q := append([]byte(nil), exec...)
	binary.LittleEndian.PutUint32(q[1:], sp.id)
	if err := s.discard(q, dst); err != nil {
		return err
	}
	// COM_STMT_CLOSE has no response.
	var c [5]byte
	c[0] = mysql.COM_STMT_CLOSE
	binary.LittleEndian.PutUint32(c[1:], sp.id)
	if _, err := s.Backend.WritePacket(c[:], 0); err != nil {
		return BackendError{err}
	}
	if err := s.Backend.W.Flush(); err != nil {
		return BackendError{err}
	}
	return nil
}

// discard forwards a command and relays its response into dst.
func (s *Session) discard(p []byte, dst *bufio.Writer) error {
	if err := s.Forward(p); err != nil {
		return err
	}
	r := Relayer{S: s, Dst: dst}
	err := r.Relay(ModeResult)
	s.Done(&r)
	return err
}
