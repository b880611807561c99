// Package relay is mycached's relay core: one client connection and its
// backend connection, the connection phase with its auth relay, the
// command loop, and the raw relay of responses. It knows nothing of
// caching, key/value or admin statements: a Handler decides what happens
// to the commands that carry statements, and the session relays
// everything the Handler leaves to it.
package relay

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/mycached/mycached/mysqlproxy/internal/sqlinfo"
	"github.com/mycached/mycached/mysqlproxy/internal/wire"
)

// Error codes mycached uses for errors of its own making.
//
// CodeBackendUnreachable answers a client mycached cannot connect to the
// server, in the connection phase: a server's code ("unable to connect to
// foreign data source"), because a server sends nothing else there, and
// MariaDB Connector/C takes a client library's code in a server's ERR
// before the handshake for a malformed packet (2027); with a server's, it
// reports 2002 "can't connect" with mycached's message, as it reports the
// refused connection directly.
//
// CodeBackendLost, the client library's code for "lost connection", is
// what a client would have seen of a server gone in mid-session.
const (
	CodeBackendUnreachable = mysql.ER_CONNECT_TO_FOREIGN_DATA_SOURCE
	CodeBackendLost        = 2013
)

// handshakeTimeout bounds the connection phase, so a client that connects
// and says nothing does not hold a backend connection forever. A client
// has clientHandshakeTimeout, MariaDB's default connect_timeout, as it
// would directly: on the kv listener, with no server to close it, a
// client that says nothing holds a connection slot no longer.
const (
	handshakeTimeout       = 30 * time.Second
	clientHandshakeTimeout = 10 * time.Second
)

// ErrQuit ends a session because the client said goodbye.
var ErrQuit = errors.New("relay: client quit")

// BackendTLS says whether a session uses TLS on its backend connection.
type BackendTLS string

// The backend TLS modes, as named on the command line.
const (
	BackendTLSOff       BackendTLS = "off"       // never, even when the backend offers it
	BackendTLSPreferred BackendTLS = "preferred" // when the backend offers it, without verifying its certificate
	BackendTLSRequired  BackendTLS = "required"  // always; fail when the backend does not offer it
	BackendTLSVerify    BackendTLS = "verify"    // always, and verify the certificate against the system roots (or a CA file)
)

// Options is what every session of a server shares. It is read-only once
// sessions run.
type Options struct {
	Backend        string // host:port
	ConnectTimeout time.Duration
	BackendTLS     BackendTLS
	BackendTLSConf *tls.Config // for the backend hop
	ClientTLS      *tls.Config // offered to clients; nil masks CLIENT_SSL
	MaxPacket      int         // the largest client command accepted, within the server's max_allowed_packet
	// ProxyProtocol sends the client's address ahead of everything on
	// the backend connection (proxyHeader).
	ProxyProtocol bool
	// SecureNetworks are the client addresses whose connections without
	// TLS count as a secure transport, as the server counts its own Unix
	// socket (secureTransport); nil means loopback.
	SecureNetworks []netip.Prefix
	// Draining reports that the server is shutting down: a session ends
	// between commands.
	Draining func() bool
	// Reached, when set, is called each time a session's dial of the
	// backend succeeds.
	Reached func()

	// starts are the start values the last session that read them all
	// left to the next (startsnap.go).
	starts startSnaps
}

// Handler decides what happens to the commands that carry statements. A
// session calls it on its own goroutine, one command at a time, so a
// Handler needs no locking of its own per-session state.
type Handler interface {
	// Command is offered every command packet before the session relays
	// it. It returns false to let the session handle the command as a
	// plain relay would.
	Command(p []byte) (handled bool, err error)
	// Reset tells the handler that the backend forgot the session's state
	// (COM_RESET_CONNECTION, or COM_CHANGE_USER).
	Reset()
	// TxEnded tells the handler that a transaction ended on a command the
	// handler did not handle, or handled without seeing it end.
	TxEnded()
	// RowCountZeroed tells the handler that the server answered a
	// command that is not a statement with an OK packet, which set
	// ROW_COUNT() to 0 (COM_PING, COM_INIT_DB, COM_REFRESH).
	RowCountZeroed()
}

// Session is one client connection and its backend connection. All of
// its fields are owned by the session's goroutine, except idle, which a
// draining server reads.
type Session struct {
	opts    *Options
	ID      uint64
	Log     *slog.Logger
	Client  *wire.Conn
	Backend *wire.Conn // nil on a listener with no backend
	idle    atomic.Bool
	// idleInTx is idle inside a transaction.
	idleInTx atomic.Bool

	Hello      Hello  // user, database and capabilities from the handshake
	Caps       uint32 // capabilities both the client and the backend agreed on
	TLS        bool
	ConnID     uint32 // the backend's connection id, which the client sees too
	Status     uint16 // server status flags from the last OK or EOF
	ClientAddr string
	// multiSet says COM_SET_OPTION set multi-statements since the
	// handshake, to multiOn (see MultiStatements).
	multiSet, multiOn bool
	// ErrSeq is the sequence id for an error packet of mycached's own.
	ErrSeq byte
	// Last is the parsed view of the last response the client got.
	Last Response

	// Track says the backend session reports its state changes
	// (CLIENT_SESSION_TRACK, with every tracker on); ClientTrack says the
	// client asked for them too.
	Track, ClientTrack bool
	// backendTrack says the backend connection negotiated
	// CLIENT_SESSION_TRACK: its OK packets may carry state changes (of
	// the server's default trackers, when mycached's could not be set)
	// that a client which did not ask for them must not get.
	backendTrack bool
	mariadb      bool // the backend is MariaDB
	// ExtMeta says column definitions carry MariaDB's extended metadata
	// (MARIADB_CLIENT_EXTENDED_METADATA), so mycached's own carry it too.
	ExtMeta         bool
	clientTrack     clientTrackers
	trackersChanged bool // the client changed the trackers: turn ours back on
	// restoreDue says stored code may have changed the trackers unseen:
	// turn ours back on before the next command that does not read the
	// diagnostics, which the reading would clear.
	restoreDue     bool
	tracksPrepared bool // PREPARE of a text that names the trackers
	handed         bool // the backend session has the client's trackers, not mycached's
	// Vars are the session variables changed since the session began, as
	// the server reports them; VarsGen counts their changes.
	Vars    map[string]string
	VarsGen uint64
	// maxAllowed is the server's max_allowed_packet, 0 until known.
	maxAllowed int
	// Identity is the scope of the session's entries: the account the
	// server matched and hashes of its SHOW GRANTS, at login and now
	// (see setIdentity); IdentityStale says the grants may have changed
	// since (SET ROLE, or a change no tracker shows).
	Identity      string
	IdentityStale bool
	// abortWith is the server's error for the client's first command,
	// when the server ended the session before it (init_connect failed).
	abortWith []byte
	// QueryLimited says the account has MAX_QUERIES_PER_HOUR: the
	// server counts its every read, and refuses them past the limit.
	QueryLimited bool
	// StaleVars are session variables a statement set that no tracker
	// reported (MariaDB reports SET @@x = ... without a scope only as
	// "the state changed"): their values are read again before the next
	// read that the cache may answer.
	StaleVars []string
	// tsAsked says the timestamp being noted was changed by the
	// session's statement (setVar); tsNear is the last such reading near
	// the clock (settleTimestamp).
	tsAsked bool
	tsNear  string
	// sentAt is no later than when the statement whose answer is being
	// read was sent: when the client's command was read (Loop), or when
	// mycached's own statements were (ownQueries). The server's clock, as
	// the statement's start, is no earlier than that, however long the
	// answer took to be read.
	sentAt time.Time
	// CondsHeld says the server's diagnostics area may hold the warnings
	// or errors of an earlier statement: one reported some, and no
	// statement that opens a table ran since (the cache package clears
	// it). A statement that opens no table (SELECT 1, DO) leaves them for
	// SHOW WARNINGS; so mycached's own reads of the session's state must
	// wait.
	CondsHeld bool
	// slow is long_query_time as of VarsGen+1 = gen (QueryWasSlow).
	slow struct {
		gen   uint64
		after time.Duration
		known bool
	}
	// Account is the account alone ("user@host"), "" when not known.
	Account string
	// GrantsTurn says why the grants are read next (see setIdentity);
	// reading them sets it back to TurnUnknown.
	GrantsTurn GrantsTurn
	// The server fixes a session's global privileges at login and at
	// SET ROLE, and its privileges on the current database at login, at
	// SET ROLE and at USE, and keeps them whatever GRANT or REVOKE says
	// since. grantsGlobal and grantsDB are the hashes of SHOW GRANTS read
	// at the last of those turns; grantsUnknown chains those read after
	// statements that may or may not have been such a turn (a SET ROLE
	// in stored code). Two sessions share a scope only when the three
	// are the same.
	grantsGlobal, grantsDB, grantsUnknown string
	// beforeOwnRead, when set, runs once between sending statements of
	// mycached's own and reading their answers (see finishAuth).
	beforeOwnRead func() error

	buf       []byte // the command packet being handled
	cursorCmd bool   // the command forwarded last asked for a cursor

	// backendWatch watches the backend while the session waits for the
	// client; clientWatch the client while a command runs.
	backendWatch, clientWatch watcher
	// dead says the backend closed the session; deadBytes are what it
	// sent before, for the client.
	dead      atomic.Bool
	deadBytes []byte
	deadReset bool
	// waitedLong says the session waited at least peekAfter for the
	// client's current command.
	waitedLong bool
	waited     bool // it has read a command
	// sweepMu protects the two fields below, which SweepIdle and the
	// session's goroutine share: busySince is when the session began to
	// wait for its client's next command holding its buffers (zero when
	// it does not), and swept says SweepIdle woke that wait.
	sweepMu    sync.Mutex
	busySince  time.Time
	swept      bool
	serverAddr string // ServerAddr, once found
	// authData says the client's last packet of its auth exchange had
	// data: the server's "using password".
	authData bool
	stmts    map[uint32]*Stmt
	// lastStmt is the statement the server takes the id 0xffffffff for
	// (the last one prepared), 0 when none. After a prepare the server
	// refused, lastUnsure says it may be lastStmt or none.
	lastStmt   uint32
	lastUnsure bool
	handler    Handler
}

// NewSession returns a session for the client connection c.
func NewSession(opts *Options, id uint64, c net.Conn, log *slog.Logger) *Session {
	s := &Session{opts: opts, ID: id, Client: wire.NewConn(c), ClientAddr: c.RemoteAddr().String()}
	s.Log = log.With("session", id, "client", s.ClientAddr)
	return s
}

// DB returns the session's current database.
func (s *Session) DB() string { return s.Hello.DB }

// SetDB records a change of the current database.
func (s *Session) SetDB(db string) { s.Hello.DB = db }

// DeprecateEOF reports whether result sets end in OK rather than EOF.
func (s *Session) DeprecateEOF() bool { return s.Caps&mysql.CLIENT_DEPRECATE_EOF != 0 }

// MultiStatements reports whether the server reads a text as several
// statements: the client asked for it at the handshake, or turned it on
// since with COM_SET_OPTION.
func (s *Session) MultiStatements() bool {
	if s.multiSet {
		return s.multiOn
	}
	return s.Caps&mysql.CLIENT_MULTI_STATEMENTS != 0
}

// Idle reports whether the session is waiting for the client's next
// command.
func (s *Session) Idle() bool { return s.idle.Load() }

// IdleInTransaction reports whether the session waits for its client's
// next command inside a transaction: a draining server lets it read on.
func (s *Session) IdleInTransaction() bool { return s.idleInTx.Load() }

// InTransaction reports whether the backend said a transaction is open.
func (s *Session) InTransaction() bool { return s.Status&mysql.SERVER_STATUS_IN_TRANS != 0 }

// Run serves a relaying session until either side goes away: it dials the
// backend, relays the connection phase, and then serves commands, asking
// newHandler's handler about each.
func (s *Session) Run(newHandler func(*Session) Handler) {
	defer s.Client.Release()
	defer s.Client.Close()

	bc, err := (&net.Dialer{Timeout: s.opts.ConnectTimeout}).Dial("tcp", s.opts.Backend)
	if err != nil {
		s.SendError(0, CodeBackendUnreachable, "", "mycached: backend "+s.opts.Backend+" unreachable: "+err.Error(), false)
		if endLogs.allow(s.Log) {
			s.Log.Warn("backend unreachable", "err", err)
		}
		return
	}
	if s.opts.ProxyProtocol {
		// Ahead of the client's first packet, which the server reads it
		// with: written now, it is not in the way of the greeting.
		_ = bc.SetWriteDeadline(time.Now().Add(s.opts.ConnectTimeout))
		_, err := bc.Write(proxyHeader(s.Client.NetConn.RemoteAddr(), s.Client.NetConn.LocalAddr()))
		_ = bc.SetWriteDeadline(time.Time{})
		if err != nil {
			bc.Close()
			s.SendError(0, CodeBackendUnreachable, "", "mycached: backend "+s.opts.Backend+" unreachable: "+err.Error(), false)
			return
		}
	}
	if s.opts.Reached != nil {
		s.opts.Reached()
	}
	s.Backend = wire.NewConn(bc)
	defer s.Backend.Release()
	defer s.Backend.Close()
	// Made once: a timer of the handshake's watch may still be ending.
	s.backendWatch = watcher{c: s.Backend, event: s.backendEvent}

	wire.SetDeadline(s.Client.NetConn, clientHandshakeTimeout)
	wire.SetDeadline(s.Backend.NetConn, handshakeTimeout)
	ok, err := s.handshake()
	if err != nil {
		s.LogEnd("handshake failed", err)
		return
	}
	if !ok {
		return // the backend's access-denied error has gone to the client
	}
	wire.SetDeadline(s.Client.NetConn, 0)
	wire.SetDeadline(s.Backend.NetConn, 0)
	s.Log = s.Log.With("user", s.Hello.User)
	s.handler = newHandler(s)
	s.clientWatch = watcher{c: s.Client, event: s.clientEvent}
	defer s.backendWatch.stop()
	defer s.clientWatch.stop()
	s.Loop(s.relayCommand)
}

// ErrBackendGone means the backend closed the session while it waited
// for the client's next command.
var ErrBackendGone = errors.New("relay: the backend closed the session")

// Dead reports whether the backend closed the session; nothing may then
// be answered on it, from the cache or otherwise.
func (s *Session) Dead() bool { return s.dead.Load() }

// BackendEnded reports whether the server has ended the session, as far
// as can be told without waiting: the watcher notices only once the
// backend has been idle a while (watchDelay), and a read answered by
// mycached alone must not be served on a session the server killed a
// moment ago. Once the watcher waits on the backend, the poller wakes it
// when the server closes the session, but the watcher's goroutine may
// not have run yet when the client's next command comes: the socket is
// then peeked too, unless the command came right after the one before
// (within peekAfter), so that a session answered from the cache back to
// back spends no system call on it.
func (s *Session) BackendEnded() bool {
	if s.dead.Load() {
		return true
	}
	if s.backendWatch.peeking() && !s.waitedLong {
		return false
	}
	return connClosed(s.Backend.NetConn)
}

// errSwept is a wait for the client's next command that SweepIdle woke.
var errSwept = errors.New("relay: the client is idle")

// idleSweep is how long a session waits for its client's next command
// holding its buffers before SweepIdle has it give them back.
const idleSweep = time.Second

// awaitBusy waits for the client's next command to begin, holding the
// session's buffers: its client did not pause before its last command,
// and a busy client's next command comes at once, with no system call
// spent on parking. A client that stops after a burst (a pool's
// connection) is found by SweepIdle, which wakes the wait: errSwept. Any
// other error is the client read's.
func (s *Session) awaitBusy(since time.Time) error {
	if !s.Client.CanWaitReadable() {
		return nil // read at once, as before
	}
	s.sweepMu.Lock()
	s.busySince, s.swept = since, false
	s.sweepMu.Unlock()
	_, err := s.Client.R.Peek(1)
	s.sweepMu.Lock()
	swept := s.swept
	s.busySince, s.swept = time.Time{}, false
	s.sweepMu.Unlock()
	if !swept {
		return err
	}
	// The sweep's deadline is lifted. Another that came meanwhile (the
	// backend's end, a drain) is found by Loop from the top, as each
	// sets its flag before its deadline.
	_ = s.Client.NetConn.SetReadDeadline(time.Time{})
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		return errSwept
	}
	return err
}

// SweepIdle wakes the session if it has waited at least idleSweep for its
// client's next command holding its buffers (awaitBusy), so that it waits
// on without them. The server calls it now and then for every session.
func (s *Session) SweepIdle(now time.Time) {
	s.sweepMu.Lock()
	defer s.sweepMu.Unlock()
	if !s.busySince.IsZero() && !s.swept && now.Sub(s.busySince) >= idleSweep {
		s.swept = true
		_ = s.Client.NetConn.SetReadDeadline(now)
	}
}

// peekAfter is how long a session waits for a command before
// BackendEnded peeks at the backend's socket even while the watcher waits
// on it.
const peekAfter = time.Millisecond

// backendEvent runs when the backend sends something, or closes, while
// the session waits for the client. A server speaks unasked only to end
// a session (an error such as "connection was killed", then the close):
// the client gets those bytes and its connection is closed at once.
func (s *Session) backendEvent(err error) {
	if n := s.Backend.R.Buffered(); n > 0 {
		b, _ := s.Backend.R.Peek(n)
		s.deadBytes = append([]byte(nil), b...)
	}
	// A server that resets the connection (rather than closing it in
	// order) is reset on the client too: drivers tell the two apart, as
	// "server has gone away" against "lost connection".
	s.deadReset = errors.Is(err, syscall.ECONNRESET)
	s.dead.Store(true)
	// Wake the session's goroutine if it waits for the client.
	_ = s.Client.NetConn.SetReadDeadline(time.Now())
}

// clientEvent runs when the client sends something, or goes away, while
// a command runs. A client that went away takes its statement with it:
// closing the backend connection makes the server abort it, as it would
// directly. Anything it sent waits for the session's goroutine.
func (s *Session) clientEvent(err error) {
	if err == nil {
		return
	}
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return // a drain's deadline, not the client
	}
	// Closed in order, TLS would first send a close_notify alert: bytes
	// the server finds waiting on the socket, which tell it the client
	// is still there. The socket beneath tells it the truth.
	c, _ := wire.Socket(s.Backend.NetConn)
	if tc, ok := c.(*net.TCPConn); ok && errors.Is(err, io.EOF) {
		// The client closed its side, and may still read (a shutdown
		// for writing): the server sees the same, aborts what it would
		// abort for that, and answers the rest as it would directly.
		_ = tc.CloseWrite()
		return
	}
	_ = c.Close()
}

// endDead tells the client what the backend said when it closed the
// session.
func (s *Session) endDead() {
	if len(s.deadBytes) > 0 {
		_ = s.Client.NetConn.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = s.Client.NetConn.Write(s.deadBytes)
	}
	if t, underTLS := s.clientSocket(); underTLS {
		// The server ends such a session's TLS with no close_notify, and
		// its client reports the end as a TLS error (2026, where a
		// close_notify makes it 2013): the socket closes under the TLS.
		defer t.Close()
	}
	if s.deadReset {
		s.resetClient()
	}
	s.Log.Info("the backend closed the session; closing the client's connection")
}

// resetClient makes the close of the client's connection abortive, as
// the server's is where it resets one: a session it ended that way, or a
// client cut off because it read none of a response for its session's
// net_write_timeout, whose socket's unsent bytes are then dropped, not
// sent at the pace of a client that does not read.
func (s *Session) resetClient() {
	t, _ := s.clientSocket()
	if tc, ok := t.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
}

// clientSocket returns the socket under the client connection's
// compression and TLS, and whether TLS was over it.
func (s *Session) clientSocket() (net.Conn, bool) { return wire.Socket(s.Client.NetConn) }

// StartHandshakeDeadline bounds the connection phase of a session that
// runs its own (the kv-only listener); EndHandshakeDeadline lifts it.
func (s *Session) StartHandshakeDeadline() {
	wire.SetDeadline(s.Client.NetConn, clientHandshakeTimeout)
}

// EndHandshakeDeadline lifts StartHandshakeDeadline's bound.
func (s *Session) EndHandshakeDeadline() { wire.SetDeadline(s.Client.NetConn, 0) }

// Loop reads commands one at a time and hands each to dispatch, until the
// client or dispatch ends the session.
func (s *Session) Loop(dispatch func(p []byte) error) {
	for {
		s.idle.Store(true)
		inTx := s.InTransaction()
		s.idleInTx.Store(inTx)
		if s.opts.Draining != nil && s.opts.Draining() {
			if !inTx {
				return
			}
			// An open transaction may end, within the drain: its
			// COMMIT is read (the drain may have woken the read).
			wire.SetDeadline(s.Client.NetConn, 0)
		}
		s.clientWatch.stop()
		if s.dead.Load() {
			s.endDead()
			return
		}
		if s.Backend != nil && s.abortWith == nil {
			s.backendWatch.arm()
		}
		waitStart := time.Now()
		var err error
		if s.waitedLong || !s.waited {
			// A session whose client paused before its last command
			// (or that has had none) may wait long (a pool's idle
			// connection): its buffers go back to the pools meanwhile,
			// at the cost of a system call. The backend's reader stays:
			// the watcher reads into it.
			if s.Backend != nil {
				s.Backend.ParkWriter()
			}
			s.Client.WaitReadable(true)
			if s.Backend != nil {
				s.Backend.UnparkWriter()
			}
		} else if err = s.awaitBusy(waitStart); errors.Is(err, errSwept) {
			// The client paused after all: wait again, from the top
			// (the backend may have ended the session meanwhile, or
			// the server begun to drain), without the buffers.
			s.waitedLong = true
			continue
		}
		var p []byte
		var seq byte
		if err == nil {
			p, seq, err = s.Client.ReadCommand(s.buf, s.packetLimit())
		}
		// The command's statement reaches the server after this.
		s.sentAt = time.Now()
		s.waitedLong = s.sentAt.Sub(waitStart) >= peekAfter
		s.waited = true
		s.idle.Store(false)
		s.idleInTx.Store(false)
		if s.dead.Load() {
			s.endDead()
			return
		}
		if err != nil {
			switch {
			case errors.Is(err, wire.ErrPacketTooLarge):
				s.refuseTooLarge()
			case errors.Is(err, wire.ErrOutOfOrder):
				// At the sequence id the server expected next, as it
				// answers.
				s.SendError(s.Client.LastSeq+1, mysql.ER_NET_PACKETS_OUT_OF_ORDER, "08S01", "Got packets out of order", true)
			}
			s.LogEnd("client read", err)
			return
		}
		if s.abortWith != nil {
			if _, err := s.Client.WritePacket(s.abortWith, seq+1); err == nil {
				_ = s.Client.W.Flush()
			}
			s.LogEnd("backend", errors.New("the server aborted the session: init_connect failed"))
			return
		}
		if seq != 0 {
			// The server's answer, and it hangs up too. It judges the
			// packet by its header and leaves the payload unread, so
			// its kernel resets the connection (wire.Conn.Close).
			s.SendError(0, mysql.ER_NET_PACKETS_OUT_OF_ORDER, "08S01", "Got packets out of order", true)
			if len(p) > 0 {
				s.resetClient()
			}
			s.LogEnd("client read", wire.ErrOutOfOrder)
			return
		}
		if len(p) == 0 {
			// The server's answer; the session goes on.
			s.SendError(1, mysql.ER_UNKNOWN_COM_ERROR, "08S01", "Unknown command", true)
			continue
		}
		s.ErrSeq = s.Client.LastSeq + 1
		err = dispatch(p)
		// A huge command's buffer is not worth keeping for the next one.
		if cap(p) <= 1<<20 {
			s.buf = p[:0]
		} else {
			s.buf = nil
		}
		if err != nil {
			if errors.Is(err, ErrQuit) {
				return
			}
			if s.dead.Load() || errors.Is(err, ErrBackendGone) {
				s.endDead()
				return
			}
			// A backend lost mid-command: the client's connection closes
			// with no word of mycached's own, and its library reports the
			// lost connection (2013) as it would directly.
			s.LogEnd("session ended", err)
			if ce, ok := errors.AsType[ClientError](err); ok {
				if ne, ok := errors.AsType[net.Error](ce.Err); ok && ne.Timeout() {
					s.resetClient()
				}
			}
			return
		}
	}
}

// relayCommand handles one command of a relaying session. A transaction
// that ended without a statement the handler saw end it (a reset, a
// change of user) is reported to the handler.
func (s *Session) relayCommand(p []byte) error {
	if s.restoreDue && p[0] != mysql.COM_QUIT && !readsDiagnosticsOnly(p) && !Inert(p) {
		s.restoreDue = false
		if err := s.restoreTrackers(false); err != nil {
			return err
		}
	}
	handed := false
	if s.Track && s.namesTrackers(p) {
		var err error
		if handed, err = s.handOverTrackers(); err != nil {
			return err
		}
	}
	before := s.Status
	err := s.dispatch(p)
	if (p[0] == mysql.COM_PING || p[0] == mysql.COM_INIT_DB || p[0] == mysql.COM_REFRESH) && err == nil && s.Last.Kind == RespOK {
		s.handler.RowCountZeroed()
	}
	if before&mysql.SERVER_STATUS_IN_TRANS != 0 && s.Status&mysql.SERVER_STATUS_IN_TRANS == 0 {
		s.handler.TxEnded()
	}
	switch {
	case err != nil:
	case handed || s.trackersChanged:
		err = s.restoreTrackers(handed)
	case s.hidTrackerChange(p):
		s.restoreDue = true
	}
	return err
}

// readsDiagnosticsOnly reports whether command p is a statement that reads
// what the last one left in the diagnostics area and changes nothing: SHOW
// WARNINGS, SHOW COUNT(*) ERRORS, GET DIAGNOSTICS, SELECT @@warning_count
// or ROW_COUNT() with no table. A statement of mycached's own before it
// would clear what it reads.
func readsDiagnosticsOnly(p []byte) bool {
	switch p[0] {
	case mysql.COM_PING, mysql.COM_STATISTICS, mysql.COM_SET_OPTION, mysql.COM_STMT_CLOSE:
		// Commands that leave the diagnostics as they are.
		return true
	}
	if len(p) < 2 || p[0] != mysql.COM_QUERY {
		return false
	}
	sql := p[1:]
	switch sqlinfo.FirstKeyword(string(sql)) {
	case "SHOW":
		return sqlinfo.ContainsFold(sql, "warnings") || sqlinfo.ContainsFold(sql, "errors")
	case "GET":
		return sqlinfo.ContainsFold(sql, "diagnostics")
	case "SELECT":
		if sqlinfo.ContainsFold(sql, "from") || sqlinfo.ContainsFold(sql, "into") || sqlinfo.ContainsFold(sql, ":=") {
			return false
		}
		for _, w := range []string{"warning_count", "error_count", "row_count", "found_rows"} {
			if sqlinfo.ContainsFold(sql, w) {
				return true
			}
		}
	}
	return false
}

// Inert reports whether command p is a SELECT or DO of constants alone
// (SELECT 1, a pool's check): it reads no table, calls nothing, names
// no variable, and so leaves the diagnostics of the statement before it
// and every variable as they are. Letters appear only in its strings,
// which hold no backslash (sql_mode may make it an escape or not), and
// it has no comment.
func Inert(p []byte) bool {
	if len(p) < 2 || p[0] != mysql.COM_QUERY {
		return false
	}
	sql := p[1:]
	kw := sqlinfo.FirstKeyword(string(sql))
	if kw != "SELECT" && kw != "DO" {
		return false
	}
	i := bytes.IndexFunc(sql, func(r rune) bool { return r != ' ' && r != '\t' && r != '\n' && r != '\r' })
	if i < 0 || !strings.EqualFold(string(sql[i:min(i+len(kw), len(sql))]), kw) {
		return false
	}
	for i += len(kw); i < len(sql); i++ {
		switch c := sql[i]; {
		case c == '\'':
			j := bytes.IndexByte(sql[i+1:], '\'')
			if j < 0 || bytes.IndexByte(sql[i+1:i+1+j], '\\') >= 0 {
				return false
			}
			i += 1 + j
		case c >= '0' && c <= '9', c == ' ', c == '\t', c == '\n', c == '\r', c == ',', c == '(', c == ')',
			c == '+', c == '*', c == '%', c == '.', c == '<', c == '>', c == '=', c == ';' && i == len(sql)-1:
		case c == '-' && (i+1 == len(sql) || sql[i+1] != '-'), c == '/' && (i+1 == len(sql) || sql[i+1] != '*'):
		default:
			return false
		}
	}
	return true
}

// namesTrackers reports whether command p may change the session's
// trackers, or read them: its text names them, or it executes a statement
// prepared from a text that does (after a PREPARE of such a text, any
// EXECUTE). The server does not report a change of
// session_track_system_variables that leaves it out of the new list.
func (s *Session) namesTrackers(p []byte) bool {
	switch p[0] {
	case mysql.COM_QUERY:
		if sqlinfo.ContainsFold(p[1:], "session_track_") {
			if sqlinfo.FirstKeyword(string(p[1:])) == "PREPARE" {
				s.tracksPrepared = true
			}
			return true
		}
		return s.tracksPrepared && sqlinfo.FirstKeyword(string(p[1:])) == "EXECUTE"
	case mysql.COM_STMT_EXECUTE:
		if len(p) >= 5 {
			st := s.Stmt(p)
			return st != nil && st.namesTrackers
		}
	}
	return false
}

// hidTrackerChange reports whether command p, just answered, may have
// changed the trackers without naming them: an EXECUTE or CALL after
// which the state changed in a way no tracker showed.
func (s *Session) hidTrackerChange(p []byte) bool {
	if !s.Last.Tracked.Unseen {
		return false
	}
	switch p[0] {
	case mysql.COM_QUERY:
		kw := sqlinfo.FirstKeyword(string(p[1:]))
		return kw == "EXECUTE" || kw == "CALL"
	case mysql.COM_STMT_EXECUTE:
		return true
	}
	return false
}

// RefreshIdentity learns the session's account and roles again, when they
// may have changed. It runs a statement of mycached's own, so call it just
// before relaying a statement that resets what that one leaves behind
// (ROW_COUNT(), warnings): a read.
//
// It reads again, the same way, the session variables in StaleVars.
func (s *Session) RefreshIdentity() error { return s.refreshIdentity() }

// RefreshIdentityAfterOK is RefreshIdentity right after a statement that
// answered OK with no rows (USE, SET ROLE): it leaves ROW_COUNT() as
// that statement did.
func (s *Session) RefreshIdentityAfterOK() error { return s.refreshIdentity("DO 0") }

// RefreshVarsAndForward reads again the session variables in StaleVars
// and sends command p behind those statements, in one round trip: their
// answers are read here, and p's is the caller's to relay.
func (s *Session) RefreshVarsAndForward(p []byte) error {
	q := s.staleVarsSQL()
	if q == "" {
		return s.Forward(p)
	}
	s.beforeOwnRead = func() error { return s.Forward(p) }
	res, err := s.ownQueries(s.varsSQL(q)...)
	if s.beforeOwnRead != nil {
		s.beforeOwnRead = nil
		if err == nil {
			err = s.Forward(p)
		}
	}
	if err != nil {
		return err
	}
	s.noteVarsRead(res[0])
	return nil
}

// noteVarsRead notes the answer to a reading of the variables in
// StaleVars; one that failed leaves every variable unknown, and the
// session's reads bypass the cache until a later reading succeeds.
func (s *Session) noteVarsRead(r ownResult) {
	if r.err != nil {
		s.MarkVarsStale()
		return
	}
	// The trackers are read again after stored code, which may have
	// turned them all off, and with them every report of what the
	// session's next statements change: such values are the client's
	// now, and mycached's are turned back on after this command.
	if s.Track {
		r.rows = slices.DeleteFunc(slices.Clone(r.rows), func(row []string) bool {
			own, ok := ownTrackers[strings.ToLower(row[0])]
			if ok && len(row) == 2 && row[1] != own {
				s.trackersChanged = true
			}
			return ok && len(row) == 2 && row[1] == own
		})
	}
	s.noteStartValues(r)
}

func (s *Session) refreshIdentity(tail ...string) error {
	var qs []string
	probe := false
	if len(s.StaleVars) > 0 {
		// @@timestamp is read twice, in two statements (settleTimestamp).
		if probe = slices.Contains(s.StaleVars, "timestamp"); probe {
			qs = append(qs, timestampSQL)
		}
		qs = append(qs, s.varsSQL(s.staleVarsSQL())...)
	}
	grants := s.IdentityStale
	if grants {
		qs = append(qs, showGrants)
	}
	if len(qs) == 0 {
		return nil
	}
	// All in one round trip.
	res, err := s.ownQueries(append(qs, tail...)...)
	if err != nil {
		return err
	}
	res = res[:len(qs)]
	if grants {
		s.setIdentity(res[len(res)-1])
		res = res[:len(res)-1]
	}
	var first ownResult
	if probe {
		first, res = res[0], res[1:]
	}
	if len(res) > 0 {
		s.tsAsked = probe
		s.noteVarsRead(res[0])
		s.tsAsked = false
	}
	if probe {
		s.settleTimestamp(first)
	}
	return nil
}

// dispatch handles one command packet: the handler first, then the
// session's own relay.
func (s *Session) dispatch(p []byte) error {
	if handled, err := s.handler.Command(p); handled {
		return err
	}
	switch p[0] {
	case mysql.COM_QUIT:
		_ = s.Forward(p)
		return ErrQuit
	case mysql.COM_STMT_CLOSE:
		if id, ok := s.stmtID(p); ok {
			delete(s.stmts, id)
			if id == s.lastStmt {
				s.lastStmt, s.lastUnsure = 0, false
			}
		}
		return s.Forward(p) // no response
	case mysql.COM_STMT_SEND_LONG_DATA:
		if st := s.Stmt(p); st != nil {
			if err := s.SyncTypes(st); err != nil {
				return err
			}
			st.LongData = true
		}
		return s.Forward(p) // no response
	case mysql.COM_SET_OPTION:
		if err := s.RelayMode(p, ModeResult); err != nil {
			return err
		}
		if s.Last.Kind != RespErr && len(p) >= 3 {
			s.multiSet, s.multiOn = true, p[1] == 0 && p[2] == 0 // MYSQL_OPTION_MULTI_STATEMENTS_ON
		}
		return nil
	case mysql.COM_STATISTICS:
		return s.relayRaw(p)
	case mysql.COM_STMT_PREPARE:
		_, err := s.Prepare(p)
		return err
	case mysql.COM_FIELD_LIST:
		return s.RelayMode(p, ModeFieldList)
	case mysql.COM_STMT_FETCH:
		return s.RelayMode(p, ModeRows)
	case mysql.COM_CHANGE_USER:
		return s.changeUser(p)
	case mysql.COM_BINLOG_DUMP_GTID:
		// MySQL's, which MariaDB answers as any command it does not know.
		s.SendError(1, mysql.ER_UNKNOWN_COM_ERROR, "08S01", "Unknown command", true)
		return nil
	case mysql.COM_REGISTER_SLAVE:
		// The server checks the account's grant, and answers OK or the
		// error it gives directly.
		return s.RelayMode(p, ModeResult)
	case mysql.COM_BINLOG_DUMP:
		return s.relayDump(p)
	case mysql.COM_INIT_DB:
		if err := s.Forward(p); err != nil {
			return err
		}
		r := Relayer{S: s, NoFlush: true}
		err := r.Relay(ModeResult)
		s.Done(&r)
		if err != nil {
			return err
		}
		if s.Last.Kind == RespOK {
			s.Hello.DB = string(p[1:])
			// The server fixed the session's privileges on the database
			// now: read the grants before the client knows it is in.
			s.IdentityStale, s.GrantsTurn = true, TurnUse
			if err := s.RefreshIdentityAfterOK(); err != nil {
				return err
			}
		}
		return s.Flush()
	case mysql.COM_RESET_CONNECTION:
		if err := s.RelayMode(p, ModeResult); err != nil {
			return err
		}
		if s.Last.Kind == RespOK {
			s.forgetStmts()
			// The reset turned the trackers back to their defaults; it
			// keeps the privileges the session had, and its role.
			if err := s.setupSession(TurnUnknown); err != nil {
				return err
			}
			if err := s.readDBAfterInit(); err != nil {
				return err
			}
			s.handler.Reset()
		}
		return nil
	}
	return s.RelayMode(p, ModeResult)
}

// Forward sends a command packet to the backend.
func (s *Session) Forward(p []byte) error {
	// An execute with a cursor type answers with the metadata alone, and
	// the rows come by COM_STMT_FETCH.
	s.cursorCmd = len(p) > 5 && p[0] == mysql.COM_STMT_EXECUTE && p[5]&0x0f != 0
	if len(p) >= 5 && (p[0] == mysql.COM_STMT_EXECUTE || p[0] == mysql.COM_STMT_RESET) {
		// An execute the server runs closes the statement's cursor, and
		// opens one if it asks for it; a reset closes it.
		if st := s.Stmt(p); st != nil {
			st.CursorOpen = s.cursorCmd
			if p[0] == mysql.COM_STMT_EXECUTE {
				st.sentTypes(p)
			}
		}
	}
	s.backendWatch.stop()
	if s.dead.Load() {
		return ErrBackendGone
	}
	s.clientWatch.arm()
	if _, err := s.Backend.WritePacket(p, 0); err != nil {
		return BackendError{err}
	}
	if err := s.Backend.W.Flush(); err != nil {
		return BackendError{err}
	}
	return nil
}

// RelayMode forwards a command and relays its response to the client.
func (s *Session) RelayMode(p []byte, mode RespMode) error {
	if err := s.Forward(p); err != nil {
		return err
	}
	r := Relayer{S: s}
	err := r.Relay(mode)
	s.Done(&r)
	return err
}

// Done records what a relayed response was, once the relayer r is
// through with it.
func (s *Session) Done(r *Relayer) {
	s.ErrSeq = r.LastSeq + r.shift + 1
	s.Last = r.Resp
	if r.Resp.Warnings > 0 || r.Resp.Failed() {
		s.CondsHeld = true
	}
}

// RefreshPending reports whether the session's state is to be read
// again (RefreshIdentity) before a read that the cache may answer.
func (s *Session) RefreshPending() bool { return len(s.StaleVars) > 0 || s.IdentityStale }

// relayRaw forwards a command whose response is one packet of no fixed
// shape (COM_STATISTICS).
func (s *Session) relayRaw(p []byte) error {
	if err := s.Forward(p); err != nil {
		return err
	}
	r := Relayer{S: s}
	if _, _, err := r.packet(); err != nil {
		return err
	}
	s.Last = Response{Kind: RespOK, Bytes: r.Resp.Bytes}
	return s.Flush()
}

// relayDump relays a binlog dump (a replica, mariadb-binlog
// --read-from-remote-server) packet by packet, as the server streams it:
// the events, then an EOF or an error when the stream ends (a
// non-blocking dump at the end of the log, a missing file or grant),
// after which the server closes the session, and so mycached closes the
// client's. What the stream carries is the server's to allow; nothing of
// it is cached.
func (s *Session) relayDump(p []byte) error {
	if err := s.Forward(p); err != nil {
		return err
	}
	r := Relayer{S: s, NoFlush: true}
	for {
		if _, _, err := r.packet(); err != nil {
			if ferr := s.Flush(); ferr != nil {
				return ferr
			}
			return err
		}
		if s.Backend.R.Buffered() == 0 {
			// An event goes to the replica as soon as it comes.
			if err := s.Flush(); err != nil {
				return err
			}
		}
	}
}

func (s *Session) changeUser(p []byte) error {
	// One mycached cannot read goes to the server all the same, which
	// answers it (error 1047) and goes on, as it does directly.
	h, perr := parseChangeUser(p, s.Hello.Caps)
	ok, okp, okSeq, err := s.authExchange(p, 0, 0, h.Password)
	if err != nil {
		return err
	}
	if ok && perr != nil {
		return perr // logged in as someone mycached cannot name
	}
	if !ok {
		if code, _, _ := wire.ParseErr(okp); code == mysql.ER_NET_PACKETS_OUT_OF_ORDER {
			// A reply out of order: the server answers nothing more on
			// the session, and ends it only when the client goes. The
			// client has the error; the session ends now.
			return errChangeUserOutOfOrder
		}
		// The server refused, and the session stays the old user's, in
		// its database, with its privileges; but the server reset it
		// first (variables, temporary tables, user variables), as for a
		// change that succeeds.
		if err := s.setupSession(TurnUnknown); err != nil {
			return err
		}
		if err := s.readDBAfterInit(); err != nil {
			return err
		}
		s.handler.Reset()
		return nil
	}
	s.Hello.User, s.Hello.DB = h.User, h.DB
	if h.Charset != 0 {
		s.Hello.Charset = h.Charset
	}
	s.forgetStmts()
	s.grantsGlobal, s.grantsDB, s.grantsUnknown = "", "", "" // a new login
	if err := s.finishAuth(okp, okSeq); err != nil {
		return err
	}
	s.handler.Reset()
	s.Log = s.Log.With("user", h.User)
	return nil
}

// errChangeUserOutOfOrder ends a session whose COM_CHANGE_USER the server
// refused for a reply out of order.
var errChangeUserOutOfOrder = errors.New("relay: COM_CHANGE_USER refused: the client's reply was out of order")

// SendError sends an error packet of mycached's own making.
func (s *Session) SendError(seq byte, code uint16, state, msg string, withState bool) {
	b := wire.AppendErr(make([]byte, 0, 16+len(msg)), code, state, msg, withState)
	if _, err := s.Client.WritePacket(b, seq); err == nil {
		_ = s.Client.W.Flush()
	}
}

// packetLimit is the largest command the session accepts: the server's
// max_allowed_packet, within --max-packet.
func (s *Session) packetLimit() int {
	if s.maxAllowed > 0 && s.maxAllowed < s.opts.MaxPacket {
		return s.maxAllowed
	}
	return s.opts.MaxPacket
}

// PacketLimit is the largest command the session sends the server.
func (s *Session) PacketLimit() int { return s.packetLimit() }

// SetPacketLimit lowers the largest command the session accepts, where
// no server says.
func (s *Session) SetPacketLimit(n int) { s.maxAllowed = n }

// refuseTooLarge answers a command over the packet limit as the server
// does: error 1153, numbered after the part whose header passed the limit,
// and the session ends with the rest of the command unread. The client
// then sees what it sees directly: closing a socket with unread bytes
// resets the connection, so a client still writing gets the reset, and
// one that wrote it all reads the error.
func (s *Session) refuseTooLarge() {
	s.SendError(s.Client.LastSeq+1, mysql.ER_NET_PACKET_TOO_LARGE, "08S01", "Got a packet bigger than 'max_allowed_packet' bytes", true)
}

// backendFailure tells the client that the backend went away during the
// connection phase, and returns the error to end the session with.
func (s *Session) backendFailure(err error) error {
	code := uint16(CodeBackendLost)
	if s.ErrSeq == 0 {
		code = CodeBackendUnreachable // in answer to the greeting
	}
	msg := "mycached: lost connection to backend " + s.opts.Backend + ": " + err.Error()
	if s.opts.ProxyProtocol {
		// MariaDB drops a connection whose PROXY header it does not
		// accept, with no error packet.
		msg += " (a PROXY protocol header was sent: the server must accept it from mycached's address, in proxy_protocol_networks)"
	}
	s.SendError(s.ErrSeq, code, "08S01", msg, s.ErrSeq != 0)
	return BackendError{err}
}

// LogEnd logs why a session ended, once, unless it ended the ordinary way.
func (s *Session) LogEnd(msg string, err error) {
	var ce ClientError
	if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || (errors.As(err, &ce) && errors.Is(ce.Err, io.EOF)) {
		return
	}
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() && s.opts.Draining != nil && s.opts.Draining() {
		return
	}
	if endLogs.allow(s.Log) {
		s.Log.Warn(msg, "err", err)
	}
}

// endLogs bounds the lines sessions log as they end badly: a flood of
// malformed or broken connections must not fill the disk.
var endLogs = rateLog{limit: 20}

// EndLogAllowed is for the lines other packages log as a session ends badly
// (a refused login): it reports whether log may have one more now,
// within the same bound as the session's own.
func EndLogAllowed(log *slog.Logger) bool { return endLogs.allow(log) }

// rateLog lets limit lines a second through, and says how many it
// dropped once the second is over.
type rateLog struct {
	limit   int
	clock   func() int64 // the second it is; time.Now's when nil
	mu      sync.Mutex
	second  int64
	n       int
	dropped int
}

func (l *rateLog) allow(log *slog.Logger) bool {
	now := time.Now().Unix()
	if l.clock != nil {
		now = l.clock()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if now != l.second {
		if l.dropped > 0 {
			log.Warn("sessions ended badly faster than logged; lines dropped", "dropped", l.dropped, "limit_per_second", l.limit)
		}
		l.second, l.n, l.dropped = now, 0, 0
	}
	if l.n >= l.limit {
		l.dropped++
		return false
	}
	l.n++
	return true
}

// BackendError marks an error reading from or writing to the backend.
type BackendError struct{ Err error }

func (e BackendError) Error() string { return "backend: " + e.Err.Error() }
func (e BackendError) Unwrap() error { return e.Err }

// ClientError marks an error writing to the client, as opposed to the
// backend; the session ends either way, but only a backend error is worth
// telling the client about.
type ClientError struct{ Err error }

func (e ClientError) Error() string { return "client: " + e.Err.Error() }
func (e ClientError) Unwrap() error { return e.Err }

// clientErr maps an error of wire.CopyPayload writing to the client.
func clientErr(err error) error {
	if de, ok := err.(wire.DstError); ok {
		return ClientError{de.Err}
	}
	return ClientError{err}
}
