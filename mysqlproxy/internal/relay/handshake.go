package relay

import (
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/mycached/mycached/mysqlproxy/internal/sqlinfo"
	"github.com/mycached/mycached/mysqlproxy/internal/wire"
)

// maskedCaps are capabilities mycached never lets a client and the backend
// agree on, because the relay would then misread the stream: zstd
// compression (clients fall back to zlib's, or to none), query
// attributes (they change COM_QUERY's layout) and optional result set
// metadata. CLIENT_COMPRESS (zlib) passes: both hops then compress, as
// the client and the server agreed (see wire.Conn.Compress).
const maskedCaps = mysql.CLIENT_ZSTD_COMPRESSION_ALGORITHM |
	mysql.CLIENT_QUERY_ATTRIBUTES | mysql.CLIENT_OPTIONAL_RESULTSET_METADATA

// SSLRequestLen is the length of the short handshake response that asks
// for TLS before the real one.
const SSLRequestLen = 32

var (
	errBadGreeting   = errors.New("mysqlproxy: malformed backend greeting")
	errBadHandshake  = errors.New("mysqlproxy: malformed handshake response")
	errNoBackendTLS  = errors.New("mysqlproxy: backend does not offer TLS and --backend-tls requires it")
	errBackendHungUp = errors.New("mysqlproxy: the backend closed the connection while the client's reply was awaited (its connect_timeout)")
)

// greeting is the backend's initial handshake packet, with the offsets of
// the fields mycached rewrites.
type greeting struct {
	payload  []byte
	caps     uint32
	capLo    int    // offset of the lower capability bytes
	capHi    int    // offset of the upper capability bytes; 0 if absent
	extCaps  int    // offset of MariaDB's extended capabilities; 0 if absent
	ext      uint32 // the extended capabilities offered to the client
	connID   uint32
	version  string
	charset  byte
	mariadb  bool
	authData []byte
}

func parseGreeting(p []byte) (*greeting, error) {
	g := &greeting{payload: p}
	if len(p) < 1 || p[0] != 10 {
		return nil, errBadGreeting
	}
	ver, rest, ok := wire.CString(p[1:])
	if !ok || len(rest) < 4+8+1+2 {
		return nil, errBadGreeting
	}
	g.version = ver
	off := len(p) - len(rest)
	g.connID = binary.LittleEndian.Uint32(p[off:])
	g.authData = append(g.authData, p[off+4:off+12]...)
	g.capLo = off + 13
	g.caps = uint32(binary.LittleEndian.Uint16(p[g.capLo:]))
	if len(p) >= g.capLo+2+1+2+2+1+10 {
		g.charset = p[g.capLo+2]
		g.capHi = g.capLo + 5
		g.caps |= uint32(binary.LittleEndian.Uint16(p[g.capHi:])) << 16
		reserved := g.capHi + 3
		// MariaDB reuses the last four reserved bytes for its own
		// capabilities, and says so by clearing CLIENT_LONG_PASSWORD.
		if g.caps&mysql.CLIENT_LONG_PASSWORD == 0 {
			g.extCaps = reserved + 6
			g.mariadb = true
		}
		if part2 := reserved + 10; part2 < len(p) {
			g.authData = append(g.authData, p[part2:]...)
		}
	}
	return g, nil
}

// mask rewrites the greeting's capabilities to what mycached supports.
func (g *greeting) mask(offerTLS bool) {
	caps := g.caps &^ (maskedCaps | mysql.CLIENT_SSL)
	if offerTLS {
		caps |= mysql.CLIENT_SSL
	}
	binary.LittleEndian.PutUint16(g.payload[g.capLo:], uint16(caps))
	if g.capHi != 0 {
		binary.LittleEndian.PutUint16(g.payload[g.capHi:], uint16(caps>>16))
	}
	if g.extCaps != 0 {
		// Progress reports and metadata caching change the shape of
		// responses, and neither is needed for correctness; extended
		// metadata (JSON, INET6, UUID, geometry types) only adds a field
		// to column definitions, which the relay copies as they are; bulk
		// execution is a command of its own, relayed as it is
		// (COM_STMT_BULK_EXECUTE), which a batch needs to run as one
		// statement, as it does directly.
		ext := binary.LittleEndian.Uint32(g.payload[g.extCaps:])
		g.ext = ext & extAllowed
		binary.LittleEndian.PutUint32(g.payload[g.extCaps:], g.ext)
	}
}

// extAllowed are MariaDB's extended capabilities mycached lets through:
// MARIADB_CLIENT_STMT_BULK_OPERATIONS and MARIADB_CLIENT_EXTENDED_METADATA.
const extAllowed = extBulk | extMetadata

const (
	extBulk     = 1 << 2
	extMetadata = 1 << 3
)

// clientExt returns the MariaDB extended capabilities of a handshake
// response: the four reserved bytes before the user name, when the
// client speaks MariaDB's dialect (it clears CLIENT_LONG_PASSWORD).
func clientExt(p []byte) uint32 {
	if len(p) < SSLRequestLen || binary.LittleEndian.Uint32(p)&mysql.CLIENT_LONG_PASSWORD != 0 {
		return 0
	}
	return binary.LittleEndian.Uint32(p[28:])
}

// Hello is what mycached reads from a client's handshake response
// (or COM_CHANGE_USER) as it passes through.
type Hello struct {
	Caps    uint32
	Charset byte
	User    string
	DB      string
	Plugin  string
	// Password says the response carried auth data, as the server's
	// "using password" says.
	Password bool
}

func ParseHandshakeResponse(p []byte) (Hello, error) {
	var h Hello
	if len(p) < SSLRequestLen {
		return h, errBadHandshake
	}
	h.Caps = binary.LittleEndian.Uint32(p)
	if h.Caps&mysql.CLIENT_PROTOCOL_41 == 0 {
		return h, errBadHandshake
	}
	h.Charset = p[8]
	user, rest, ok := wire.CString(p[SSLRequestLen:])
	if !ok {
		return h, errBadHandshake
	}
	h.User = user
	switch {
	case h.Caps&mysql.CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA != 0:
		n, k := wire.Lenenc(rest)
		if k == 0 || uint64(len(rest)-k) < n {
			return h, errBadHandshake
		}
		h.Password = n > 0
		rest = rest[k+int(n):]
	case h.Caps&mysql.CLIENT_SECURE_CONNECTION != 0:
		if len(rest) < 1 || len(rest) < 1+int(rest[0]) {
			return h, errBadHandshake
		}
		h.Password = rest[0] > 0
		rest = rest[1+int(rest[0]):]
	default:
		var auth string
		auth, rest, _ = wire.CString(rest)
		h.Password = auth != ""
	}
	if h.Caps&mysql.CLIENT_CONNECT_WITH_DB != 0 && len(rest) > 0 {
		h.DB, rest, _ = wire.CString(rest)
	}
	if h.Caps&mysql.CLIENT_PLUGIN_AUTH != 0 && len(rest) > 0 {
		h.Plugin, _, _ = wire.CString(rest)
	}
	return h, nil
}

// parseChangeUser reads COM_CHANGE_USER's user and schema; the capabilities
// are the connection's.
func parseChangeUser(p []byte, caps uint32) (Hello, error) {
	h := Hello{Caps: caps}
	if len(p) < 1 {
		return h, errBadHandshake
	}
	user, rest, ok := wire.CString(p[1:])
	if !ok {
		return h, errBadHandshake
	}
	h.User = user
	if caps&mysql.CLIENT_SECURE_CONNECTION != 0 {
		if len(rest) < 1 || len(rest) < 1+int(rest[0]) {
			return h, errBadHandshake
		}
		h.Password = rest[0] > 0
		rest = rest[1+int(rest[0]):]
	} else {
		var auth string
		auth, rest, _ = wire.CString(rest)
		h.Password = auth != ""
	}
	h.DB, rest, _ = wire.CString(rest)
	if len(rest) >= 2 {
		h.Charset = rest[0]
		rest = rest[2:]
	}
	if caps&mysql.CLIENT_PLUGIN_AUTH != 0 && len(rest) > 0 {
		h.Plugin, _, _ = wire.CString(rest)
	}
	return h, nil
}

// setCaps rewrites the capability flags of a handshake response for the
// backend side: CLIENT_SSL must say whether this hop is encrypted, since a
// server that sees it expects a TLS hello next.
func setCaps(p []byte, backendTLS, track bool) {
	caps := binary.LittleEndian.Uint32(p) &^ (maskedCaps | mysql.CLIENT_SSL)
	if backendTLS {
		caps |= mysql.CLIENT_SSL
	}
	if track {
		// Asked for whatever the client asked: mycached reads the state
		// changes, and passes on only what the client asked for.
		caps |= mysql.CLIENT_SESSION_TRACK
	}
	binary.LittleEndian.PutUint32(p, caps)
	if caps&mysql.CLIENT_LONG_PASSWORD == 0 && len(p) >= SSLRequestLen {
		// MariaDB extended capabilities.
		binary.LittleEndian.PutUint32(p[28:], binary.LittleEndian.Uint32(p[28:])&extAllowed)
	}
}

// handshake relays the connection phase: greeting, optional TLS on each
// hop, the handshake response and the whole auth exchange, until the
// backend says OK or ERR. It returns whether authentication succeeded.
func (s *Session) handshake() (bool, error) {
	cfg := s.opts
	gp, seq, err := s.Backend.ReadPacket(nil, 1<<16)
	if err != nil {
		return false, s.backendFailure(err)
	}
	if len(gp) > 0 && gp[0] == mysql.ERR_HEADER {
		// The backend refused us (too many connections, host blocked):
		// the client gets its words.
		_, _ = s.Client.WritePacket(gp, seq)
		return false, s.Client.W.Flush()
	}
	g, err := parseGreeting(gp)
	if err != nil {
		s.SendError(0, CodeBackendUnreachable, "08S01", "mycached: backend "+cfg.Backend+" sent a malformed greeting", false)
		return false, err
	}
	s.ConnID = g.connID
	s.mariadb = g.mariadb
	// The analysis reads executable comments by the server's version.
	sqlinfo.SetServerVersion(g.version)
	backendOffersTLS := g.caps&mysql.CLIENT_SSL != 0
	g.mask(s.opts.ClientTLS != nil)
	if _, err := s.Client.WritePacket(g.payload, seq); err != nil {
		return false, ClientError{err}
	}
	if err := s.Client.W.Flush(); err != nil {
		return false, ClientError{err}
	}

	// The client's reply: maybe an SSL request first.
	resp, cseq, err := s.readReplyAt(s.buf, int(seq+1))
	if errors.Is(err, errReplyOutOfOrder) {
		// The server's words for a reply out of sequence; it hangs up.
		s.SendError(seq+1, mysql.ER_NET_PACKETS_OUT_OF_ORDER, "08S01", "Got packets out of order", true)
		return false, errBadHandshake
	}
	if errors.Is(err, wire.ErrPacketTooLarge) {
		return false, s.refuseLargeReply(cseq)
	}
	if err != nil {
		return false, err
	}
	clientTLS := false
	// A client that sets CLIENT_SSL in its whole response, not in an SSL
	// request, is taken at its word by a server that offers TLS, which
	// then waits for its TLS hello; one that offers none reads the
	// response as it is.
	if wantsTLS := len(resp) >= SSLRequestLen && binary.LittleEndian.Uint32(resp)&mysql.CLIENT_SSL != 0; wantsTLS && (len(resp) == SSLRequestLen || s.opts.ClientTLS != nil) {
		if s.opts.ClientTLS == nil {
			// TLS was not offered: the server's answer to a client
			// that asks anyway.
			s.SendError(cseq+1, mysql.ER_HANDSHAKE_ERROR, "08S01", "Bad handshake", true)
			return false, errBadHandshake
		}
		s.Client.Upgrade(func(c net.Conn) net.Conn { return tls.Server(c, s.opts.ClientTLS) })
		tc := s.Client.NetConn.(*tls.Conn)
		if err := tc.Handshake(); err != nil {
			var rh tls.RecordHeaderError
			if errors.As(err, &rh) && rh.Conn != nil {
				// Not TLS at all: the server's answer, in the clear.
				b := wire.AppendErr(make([]byte, 4, 64), mysql.ER_HANDSHAKE_ERROR, "08S01", "Bad handshake", true)
				n := len(b) - 4
				b[0], b[1], b[2], b[3] = byte(n), byte(n>>8), byte(n>>16), cseq+1
				_, _ = rh.Conn.Write(b)
			}
			return false, ClientError{err}
		}
		clientTLS = true
		if resp, cseq, err = s.readReply(resp); errors.Is(err, wire.ErrPacketTooLarge) {
			return false, s.refuseLargeReply(cseq)
		} else if err != nil {
			return false, err
		}
		cseq = s.Client.LastSeq
	}
	s.ErrSeq = cseq + 1
	want := seq + 1
	if clientTLS {
		want++ // the SSL request took one
	}
	if cseq != want {
		// The server's words for a reply out of sequence; it hangs up.
		s.SendError(seq+1, mysql.ER_NET_PACKETS_OUT_OF_ORDER, "08S01", "Got packets out of order", true)
		return false, errBadHandshake
	}
	hello, err := ParseHandshakeResponse(resp)
	if err != nil {
		s.refuseHandshake(resp, cseq, cfg.BackendTLS == BackendTLSOff || !backendOffersTLS)
		return false, err
	}
	s.Hello = hello
	s.Caps = hello.Caps & g.caps
	s.TLS = clientTLS
	s.Track = g.caps&mysql.CLIENT_SESSION_TRACK != 0
	s.backendTrack = s.Track
	s.ClientTrack = s.Caps&mysql.CLIENT_SESSION_TRACK != 0
	s.ExtMeta = g.mariadb && g.ext&clientExt(resp)&extMetadata != 0

	// The backend hop: TLS when offered and allowed.
	backendTLS := false
	switch {
	case cfg.BackendTLS == BackendTLSOff:
	case backendOffersTLS:
		backendTLS = true
	case cfg.BackendTLS == BackendTLSRequired || cfg.BackendTLS == BackendTLSVerify:
		s.SendError(cseq+1, CodeBackendUnreachable, "08S01", "mycached: backend "+cfg.Backend+" does not offer TLS, and --backend-tls="+string(cfg.BackendTLS)+" requires it", true)
		return false, errNoBackendTLS
	}
	bseq := byte(1)
	if backendTLS {
		var req [SSLRequestLen]byte
		copy(req[:], resp[:SSLRequestLen])
		setCaps(req[:], true, s.Track)
		if _, err := s.Backend.WritePacket(req[:], bseq); err != nil {
			return false, s.backendFailure(err)
		}
		if err := s.Backend.W.Flush(); err != nil {
			return false, s.backendFailure(err)
		}
		s.Backend.Upgrade(func(c net.Conn) net.Conn { return tls.Client(c, s.opts.BackendTLSConf) })
		if err := s.Backend.NetConn.(*tls.Conn).Handshake(); err != nil {
			s.SendError(cseq+1, CodeBackendUnreachable, "08S01", "mycached: TLS to backend "+cfg.Backend+" failed: "+err.Error(), true)
			return false, err
		}
		bseq++
	}
	setCaps(resp, backendTLS, s.Track)
	// The two hops may differ by one packet (each SSL request takes a
	// sequence id), so every auth packet is renumbered by the difference.
	delta := bseq - cseq
	ok, okp, okSeq, err := s.authExchange(resp, cseq+delta, delta, hello.Password)
	if !ok || err != nil {
		return ok, err
	}
	if s.Caps&mysql.CLIENT_COMPRESS != 0 {
		// Both hops compress from the OK on: the server's side now, the
		// client's once it has its OK.
		s.Backend.Compress(true)
	}
	return true, s.finishAuth(okp, okSeq)
}

// readReply reads the client's next packet of the connection phase,
// watching the backend meanwhile: a server hangs up on a client slower
// than its connect_timeout, resetting the connection, and mycached does
// the same to the client at once.
func (s *Session) readReply(buf []byte) ([]byte, byte, error) {
	return s.readReplyAt(buf, -1)
}

// errReplyOutOfOrder is a handshake reply whose header has a sequence id
// other than the one the server expects.
var errReplyOutOfOrder = errors.New("mysqlproxy: handshake reply out of order")

// readReplyAt is readReply for a reply that must have sequence id want
// (-1: any). The server judges a reply by its header alone: one out of
// order gets its error at once, however long it says it is, and so
// errReplyOutOfOrder is returned before its payload is read.
func (s *Session) readReplyAt(buf []byte, want int) ([]byte, byte, error) {
	s.backendWatch.arm()
	if want >= 0 && !s.Client.Compressed() {
		if h, err := s.Client.R.Peek(4); err == nil && int(h[3]) != want {
			s.backendWatch.stop()
			wire.SetDeadline(s.Backend.NetConn, handshakeTimeout)
			return nil, h[3], errReplyOutOfOrder
		}
	}
	p, seq, err := s.Client.ReadPacket(buf, 1<<20)
	s.backendWatch.stop()
	wire.SetDeadline(s.Backend.NetConn, handshakeTimeout) // stop cleared it
	switch {
	case s.dead.Load():
		s.endDead() // reset, as the server reset it
		return nil, 0, errBackendHungUp
	case err != nil && !errors.Is(err, wire.ErrPacketTooLarge):
		return nil, 0, ClientError{err}
	}
	return p, seq, err
}

// refuseLargeReply answers a handshake response larger than any client
// sends (over 1 MiB of connection attributes) as the server answers a
// malformed one: Bad handshake, once it has read the whole response, as
// the server reads it before it answers (a connection closed with bytes
// unread is reset, and the client would see the reset, not the error).
// That is the rest of the wire packet whose header announced it, within
// the handshake's 10 s, however the client paces it; and when that packet
// is continued (a response of 16 MiB or more), what follows for as long
// as it keeps coming (a second of silence ends it), 16 MiB in all. A
// client that stops short of the packet's end hears nothing, and when the
// 10 s are up its connection is reset, as the server resets it.
func (s *Session) refuseLargeReply(cseq byte) error {
	end := time.Now().Add(clientHandshakeTimeout)
	_ = s.Client.NetConn.SetReadDeadline(end)
	rest := int64(s.Client.Unread)
	if n, err := io.CopyN(io.Discard, s.Client.R, rest); err != nil {
		s.resetClient()
		return fmt.Errorf("%w: a response over 1 MiB refused; %d of its last %d bytes read: %v", errBadHandshake, n, rest, err)
	}
	left := int64(0) // of a continued packet, what may follow
	if rest >= wire.MaxPayload {
		left = 1<<24 - rest
	}
	for left > 0 && time.Now().Before(end) {
		d := time.Now().Add(time.Second)
		if d.After(end) {
			d = end
		}
		_ = s.Client.NetConn.SetReadDeadline(d)
		n, err := io.CopyN(io.Discard, s.Client.R, min(left, 64<<10))
		left -= n
		if err != nil {
			break
		}
	}
	s.SendError(cseq+1, mysql.ER_HANDSHAKE_ERROR, "08S01", "Bad handshake", true)
	return errBadHandshake
}

// refuseHandshake answers a handshake response mycached cannot read with
// the server's own answer to it: the response goes to the backend as it
// came, and the client gets the backend's error (Bad handshake, or Access
// denied for a pre-4.1 client). Should the backend take it, the client
// gets Bad handshake all the same: mycached relays no session it cannot
// read.
//
// The response goes to the backend only where this hop would be plain
// anyway: it may hold a password's scramble.
func (s *Session) refuseHandshake(resp []byte, cseq byte, plain bool) {
	if s.askBackend(resp, cseq, plain) {
		return
	}
	s.SendError(cseq+1, mysql.ER_HANDSHAKE_ERROR, "08S01", "Bad handshake", says41(resp))
}

// says41 reports whether the server answers a handshake response with the
// SQL state in its errors: it takes a response too short to hold the
// client's capabilities as a 4.1 client's, and reads the first two bytes
// of one too short for four.
func says41(resp []byte) bool {
	switch {
	case len(resp) < 2:
		return true
	case len(resp) < 4:
		return uint32(binary.LittleEndian.Uint16(resp))&mysql.CLIENT_PROTOCOL_41 != 0
	}
	return binary.LittleEndian.Uint32(resp)&mysql.CLIENT_PROTOCOL_41 != 0
}

// askBackend sends a handshake response the backend's way unread, and
// relays the backend's answer to the client if it is an error.
func (s *Session) askBackend(resp []byte, cseq byte, plain bool) bool {
	if !plain {
		return false
	}
	if _, err := s.Backend.WritePacket(resp, 1); err != nil || s.Backend.W.Flush() != nil {
		return false
	}
	_ = s.Backend.NetConn.SetReadDeadline(time.Now().Add(s.opts.ConnectTimeout))
	p, _, err := s.Backend.ReadPacket(nil, 1<<16)
	if err != nil || len(p) == 0 || p[0] != mysql.ERR_HEADER {
		return false
	}
	if _, err := s.Client.WritePacket(p, cseq+1); err == nil {
		_ = s.Client.W.Flush()
	}
	return true
}

// finishAuth tells the client it is in, with the OK the backend sent (seq
// is its sequence id toward the client), then sets the authenticated
// backend session up. The client gets its OK as soon as it would
// directly: the set-up statements cost the client a round trip to the
// server only if it waits for its first command's answer, and drivers
// that pipeline their first statements behind the handshake bound that
// wait tightly (MariaDB Connector/J gives it 500 ms). The commands the
// client sends meanwhile wait for the set-up in the session's buffer.
//
// The OK's session state is the client's as it stands: the backend
// session still has the trackers a new session starts with, which are
// the client's own; mycached's own go on only with the set-up.
//
// The set-up statements are sent before the client has its OK, and read
// after: the server reads the grants it fixed at login right behind the
// login, before the client can act on being in. A GRANT or REVOKE from
// another session that lands between the login and that read is taken
// as the grants the session logged in with (the README says so).
func (s *Session) finishAuth(okp []byte, seq byte) error {
	o, perr := wire.ParseOKPacket(okp, s.Track)
	if perr == nil {
		okp = wire.AppendOKPacket(nil, o, s.ClientTrack)
	}
	sendOK := func() error {
		if _, err := s.Client.WritePacket(okp, seq); err != nil {
			return ClientError{err}
		}
		if err := s.Client.W.Flush(); err != nil {
			return ClientError{err}
		}
		if s.Caps&mysql.CLIENT_COMPRESS != 0 {
			s.Client.Compress(false)
		}
		return nil
	}
	err := s.checkTransport(seq)
	if err == nil {
		s.beforeOwnRead = sendOK
		err = s.setupSession(TurnLogin)
	} else if errors.As(err, new(sessionAborted)) {
		s.beforeOwnRead = sendOK // the client has its OK, then the error
	}
	if f := s.beforeOwnRead; f != nil {
		s.beforeOwnRead = nil
		if ferr := f(); err == nil {
			err = ferr
		}
	}
	var aborted sessionAborted
	if errors.As(err, &aborted) {
		// The client's first command gets the server's error, as it
		// would directly, and the session ends.
		s.abortWith = aborted.packet
		return nil
	}
	if err != nil {
		return err
	}
	if perr == nil {
		// The transaction's state is the server's now, after what
		// init_connect ran; the rest is the login's.
		const txBits = mysql.SERVER_STATUS_IN_TRANS | mysql.SERVER_STATUS_AUTOCOMMIT | mysql.SERVER_STATUS_IN_TRANS_READONLY
		s.Status = o.Status&^txBits | s.Status&txBits
		if o.State != nil {
			var t Tracked
			s.noteState(o.State, &t)
		}
	}
	return s.readDBAfterInit()
}

// authExchange forwards first (the handshake response or COM_CHANGE_USER)
// to the backend with sequence id seq, then relays the auth exchange in
// both directions until OK or ERR. Backend packets go to the client
// renumbered by -delta, client packets to the backend by +delta; the
// final OK is returned instead, with its sequence id toward the client,
// for finishAuth.
func (s *Session) authExchange(first []byte, seq, delta byte, authData bool) (bool, []byte, byte, error) {
	s.backendWatch.stop()
	s.clientWatch.stop()
	s.authData = authData
	buf := first
	if _, err := s.Backend.WritePacket(first, seq); err != nil {
		return false, nil, 0, s.backendFailure(err)
	}
	if err := s.Backend.W.Flush(); err != nil {
		return false, nil, 0, s.backendFailure(err)
	}
	for {
		p, bseq, err := s.Backend.ReadPacket(buf, 1<<20)
		if err != nil {
			return false, nil, 0, s.backendFailure(err)
		}
		buf = p
		if len(p) == 0 {
			return false, nil, 0, errBadGreeting
		}
		if p[0] == mysql.OK_HEADER {
			return true, append([]byte(nil), p...), bseq - delta, nil
		}
		if _, err := s.Client.WritePacket(p, bseq-delta); err != nil {
			return false, nil, 0, ClientError{err}
		}
		if err := s.Client.W.Flush(); err != nil {
			return false, nil, 0, ClientError{err}
		}
		switch {
		case p[0] == mysql.ERR_HEADER:
			return false, append([]byte(nil), p...), bseq - delta, nil
		case p[0] == mysql.MORE_DATE_HEADER && len(p) == 2 && p[1] == 3:
			// caching_sha2_password's fast-auth success: the server's OK
			// follows with nothing from the client.
			continue
		}
		c, cseq, err := s.readReply(buf)
		if err != nil {
			return false, nil, 0, err
		}
		if s.Client.Compressed() {
			// The frames number a compressed client's packets, and the
			// packet's own id is given as 0 (see wire.Conn.ReadPacket):
			// the reply is the one after the packet it answers.
			cseq = bseq - delta + 1
		}
		buf = c
		s.ErrSeq = cseq + 1
		s.authData = len(c) > 0
		if _, err := s.Backend.WritePacket(c, cseq+delta); err != nil {
			return false, nil, 0, s.backendFailure(err)
		}
		if err := s.Backend.W.Flush(); err != nil {
			return false, nil, 0, s.backendFailure(err)
		}
	}
}
