package mysqlproxy

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"sync/atomic"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/mycached/mycached/cachepolicy"
	"github.com/mycached/mycached/mysqlproxy/internal/kv"
	"github.com/mycached/mycached/mysqlproxy/internal/sqlinfo"
)

// handshakeTimeout bounds the connection phase, so a client that connects
// and says nothing does not hold a backend connection forever.
const handshakeTimeout = 30 * time.Second

// errQuit ends a session because the client said goodbye.
var errQuit = errors.New("mysqlproxy: client quit")

// session is one client connection and its backend connection. All of its
// fields are owned by the session's goroutine, except idle, which Shutdown
// reads.
type session struct {
	srv     *Server
	id      uint64
	log     *slog.Logger
	client  *pconn
	backend *pconn
	idle    atomic.Bool

	hello  clientHello // user, database and capabilities from the handshake
	caps   uint32      // capabilities both the client and the backend agreed on
	tls    bool
	connID uint32 // the backend's connection id, which the client sees too
	status uint16 // server status flags from the last OK or EOF
	errSeq byte   // sequence id for an error packet of mycached's own

	buf          []byte // the command packet being handled
	stmts        map[uint32]*stmt
	localStmts   map[uint32]*kv.Stmt // kv pseudo-queries mycached prepared itself
	nextLocal    uint32
	lastPrepared uint32
	clientAddr   string

	// Cache state.
	state    sessState           // what can change a read's result
	cacheOff bool                // SET @mycached_cache = 0
	tainted  bool                // session state changed in ways we cannot see
	txWrote  bool                // the open transaction has written
	txDeps   map[string]struct{} // what it wrote, bumped again when it ends
	temps    map[string]struct{} // temporary tables ("db.t"), which shadow real ones
	q        cachepolicy.Query   // reused for each policy call
	checkBuf []byte

	last Response // the parsed view of the last relayed response
}

// stmt is a prepared statement as the client and backend know it.
type stmt struct {
	sql      string
	info     *sqlinfo.Info
	params   uint16
	columns  uint16
	types    []byte   // parameter types bound by the last execute that sent them
	kv       *kv.Stmt // a kv SELECT this SQL also is: executes binding strings go to kv
	longData bool     // SEND_LONG_DATA since the last execute
}

// User returns the authenticated user name.
func (s *session) User() string { return s.hello.user }

// DB returns the session's current database.
func (s *session) DB() string { return s.hello.db }

func (s *session) deprecateEOF() bool { return s.caps&mysql.CLIENT_DEPRECATE_EOF != 0 }

// run serves the session until either side goes away.
func (s *session) run() {
	defer s.srv.forget(s)
	defer s.client.release()
	defer s.client.close()

	bc, err := (&net.Dialer{Timeout: s.srv.cfg.ConnectTimeout}).Dial("tcp", s.srv.cfg.Backend)
	if err != nil {
		s.sendError(0, codeBackendUnreachable, "", "mycached: backend "+s.srv.cfg.Backend+" unreachable: "+err.Error(), false)
		s.log.Warn("backend unreachable", "err", err)
		return
	}
	s.backend = newPconn(bc)
	defer s.backend.release()
	defer s.backend.close()

	setDeadline(s.client.conn, handshakeTimeout)
	setDeadline(s.backend.conn, handshakeTimeout)
	ok, err := s.handshake()
	if err != nil {
		s.logEnd("handshake failed", err)
		return
	}
	if !ok {
		return // the backend's access-denied error has gone to the client
	}
	setDeadline(s.client.conn, 0)
	setDeadline(s.backend.conn, 0)
	s.log = s.log.With("user", s.hello.user)
	s.state.reset(s.hello.charset)
	s.loop(s.relayCommand)
}

// loop reads commands one at a time and hands each to dispatch, until the
// client or dispatch ends the session.
func (s *session) loop(dispatch func(p []byte) error) {
	for {
		s.idle.Store(true)
		if s.srv.draining.Load() {
			return
		}
		p, seq, err := s.client.readPacket(s.buf, s.srv.cfg.MaxPacket)
		s.idle.Store(false)
		if err != nil {
			if errors.Is(err, errPacketTooLarge) {
				s.sendTooLarge(s.client.lastSeq + 1)
			}
			s.logEnd("client read", err)
			return
		}
		if seq != 0 || len(p) == 0 {
			s.log.Warn("malformed client packet, closing", "seq", seq, "len", len(p))
			return
		}
		s.errSeq = s.client.lastSeq + 1
		err = dispatch(p)
		// A huge command's buffer is not worth keeping for the next one.
		if cap(p) <= 1<<20 {
			s.buf = p[:0]
		} else {
			s.buf = nil
		}
		if err != nil {
			if errors.Is(err, errQuit) {
				return
			}
			var be backendErr
			if errors.As(err, &be) {
				s.sendError(s.errSeq, codeBackendLost, "08S01", "mycached: lost connection to backend "+s.srv.cfg.Backend+": "+be.err.Error(), true)
			}
			s.logEnd("session ended", err)
			return
		}
	}
}

// relayCommand handles one command of a relaying session. A transaction
// that ended without a statement mycached saw end it (a reset, a change of
// user) still gets its second invalidation.
func (s *session) relayCommand(p []byte) error {
	before := s.status
	err := s.dispatch(p)
	if before&mysql.SERVER_STATUS_IN_TRANS != 0 && s.status&mysql.SERVER_STATUS_IN_TRANS == 0 {
		s.endTransaction()
	}
	return err
}

// dispatch handles one command packet.
func (s *session) dispatch(p []byte) error {
	switch p[0] {
	case mysql.COM_QUERY:
		return s.comQuery(p)
	case mysql.COM_QUIT:
		_ = s.forward(p)
		return errQuit
	case mysql.COM_STMT_CLOSE:
		if len(p) >= 5 {
			id := le32(p[1:])
			if _, ok := s.localStmts[id]; ok {
				delete(s.localStmts, id)
				return nil
			}
			delete(s.stmts, id)
		}
		return s.forward(p) // no response
	case mysql.COM_STMT_SEND_LONG_DATA:
		if len(p) >= 5 && s.localStmts[le32(p[1:])] != nil {
			return nil // kv parameters come inline; the execute will say so
		}
		if len(p) >= 5 {
			if st := s.stmts[le32(p[1:])]; st != nil {
				st.longData = true
			}
		}
		return s.forward(p) // no response
	case mysql.COM_STATISTICS:
		return s.relayRaw(p)
	case mysql.COM_STMT_PREPARE:
		handled, dual, err := s.kvPrepare(string(p[1:]))
		if handled {
			return err
		}
		if err := s.prepare(p); err != nil {
			return err
		}
		if st := s.stmts[s.lastPrepared]; dual != nil && st != nil {
			st.kv = dual
		}
		return nil
	case mysql.COM_STMT_RESET:
		if len(p) >= 5 && s.localStmts[le32(p[1:])] != nil {
			return s.writeOK(0)
		}
		return s.relayMode(p, modeResult)
	case mysql.COM_FIELD_LIST:
		return s.relayMode(p, modeFieldList)
	case mysql.COM_STMT_FETCH:
		return s.relayMode(p, modeRows)
	case mysql.COM_CHANGE_USER:
		return s.changeUser(p)
	case mysql.COM_BINLOG_DUMP, mysql.COM_BINLOG_DUMP_GTID, mysql.COM_REGISTER_SLAVE, mysql.COM_TABLE_DUMP:
		s.sendError(1, mysql.ER_NOT_SUPPORTED_YET, "42000", "mycached: replication commands are not relayed; connect a replica to the server directly", true)
		return nil
	case mysql.COM_INIT_DB:
		if err := s.relayMode(p, modeResult); err != nil {
			return err
		}
		if s.last.Kind == RespOK {
			s.hello.db = string(p[1:])
		}
		return nil
	case mysql.COM_RESET_CONNECTION:
		if err := s.relayMode(p, modeResult); err != nil {
			return err
		}
		if s.last.Kind == RespOK {
			s.resetState()
		}
		return nil
	case mysql.COM_STMT_EXECUTE:
		return s.comStmtExecute(p)
	default:
		return s.relayMode(p, modeResult)
	}
}

// forward sends a command packet to the backend.
func (s *session) forward(p []byte) error {
	if _, err := s.backend.writePacket(p, 0); err != nil {
		return backendErr{err}
	}
	if err := s.backend.w.Flush(); err != nil {
		return backendErr{err}
	}
	return nil
}

// relayMode forwards a command and relays its response.
func (s *session) relayMode(p []byte, mode respMode) error {
	if err := s.forward(p); err != nil {
		return err
	}
	r := relayer{s: s}
	err := r.relay(mode)
	s.errSeq = r.lastSeq + 1
	s.last = r.resp
	return err
}

// relayRaw forwards a command whose response is one packet of no fixed
// shape (COM_STATISTICS).
func (s *session) relayRaw(p []byte) error {
	if err := s.forward(p); err != nil {
		return err
	}
	r := relayer{s: s}
	if _, _, err := r.packet(); err != nil {
		return err
	}
	s.last = Response{Kind: RespOK, Bytes: r.resp.Bytes}
	if err := s.client.w.Flush(); err != nil {
		return clientErr{err}
	}
	return nil
}

func (s *session) prepare(p []byte) error {
	if err := s.forward(p); err != nil {
		return err
	}
	r := relayer{s: s}
	sp, err := r.relayPrepare()
	s.errSeq = r.lastSeq + 1
	s.last = r.resp
	if err != nil {
		return err
	}
	if r.resp.Kind == RespOK {
		if s.stmts == nil {
			s.stmts = make(map[uint32]*stmt)
		}
		sql := string(p[1:])
		s.lastPrepared = sp.id
		s.stmts[sp.id] = &stmt{sql: sql, info: s.srv.analyzer.Analyze(sql), params: sp.params, columns: sp.columns}
	}
	return nil
}

func (s *session) changeUser(p []byte) error {
	h, err := parseChangeUser(p, s.hello.caps)
	if err != nil {
		return err
	}
	ok, err := s.authExchange(p, 0, 0)
	if err != nil {
		return err
	}
	if ok {
		s.hello.user, s.hello.db = h.user, h.db
		if h.charset != 0 {
			s.hello.charset = h.charset
		}
		s.resetState()
		s.log = s.srv.log.With("session", s.id, "user", h.user)
	}
	return nil
}

// sendError sends an error packet of mycached's own making.
func (s *session) sendError(seq byte, code uint16, state, msg string, withState bool) {
	b := appendErr(make([]byte, 0, 16+len(msg)), code, state, msg, withState)
	if _, err := s.client.writePacket(b, seq); err == nil {
		_ = s.client.w.Flush()
	}
}

// sendTooLarge answers a command over --max-packet, before the session
// ends; seq follows the packet that made it too large.
func (s *session) sendTooLarge(seq byte) {
	s.sendError(seq, mysql.ER_NET_PACKET_TOO_LARGE, "08S01", "mycached: packet larger than --max-packet", true)
}

// backendFailure tells the client that the backend went away during the
// connection phase, and returns the error to end the session with.
func (s *session) backendFailure(err error) error {
	s.sendError(s.errSeq, codeBackendLost, "08S01", "mycached: lost connection to backend "+s.srv.cfg.Backend+": "+err.Error(), s.errSeq != 0)
	return backendErr{err}
}

// logEnd logs why a session ended, once, unless it ended the ordinary way.
func (s *session) logEnd(msg string, err error) {
	var ce clientErr
	if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || (errors.As(err, &ce) && errors.Is(ce.err, io.EOF)) {
		return
	}
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() && s.srv.draining.Load() {
		return
	}
	s.log.Warn(msg, "err", err)
}

func le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}
