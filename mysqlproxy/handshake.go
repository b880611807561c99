package mysqlproxy

import (
	"crypto/tls"
	"encoding/binary"
	"errors"
	"net"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// maskedCaps are capabilities mycached never lets a client and the backend
// agree on, because the relay would then misread the stream: compression
// (not implemented; clients fall back to plain), query attributes (they
// change COM_QUERY's layout) and optional result set metadata.
const maskedCaps = mysql.CLIENT_COMPRESS | mysql.CLIENT_ZSTD_COMPRESSION_ALGORITHM |
	mysql.CLIENT_QUERY_ATTRIBUTES | mysql.CLIENT_OPTIONAL_RESULTSET_METADATA

// sslRequestLen is the length of the short handshake response that asks
// for TLS before the real one.
const sslRequestLen = 32

var (
	errBadGreeting  = errors.New("mysqlproxy: malformed backend greeting")
	errBadHandshake = errors.New("mysqlproxy: malformed handshake response")
	errNoBackendTLS = errors.New("mysqlproxy: backend does not offer TLS and --backend-tls requires it")
)

// greeting is the backend's initial handshake packet, with the offsets of
// the fields mycached rewrites.
type greeting struct {
	payload  []byte
	caps     uint32
	capLo    int // offset of the lower capability bytes
	capHi    int // offset of the upper capability bytes; 0 if absent
	extCaps  int // offset of MariaDB's extended capabilities; 0 if absent
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
	ver, rest, ok := cstring(p[1:])
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
		// Progress reports, bulk execution and metadata caching all change
		// the shape of responses; none is needed for correctness.
		binary.LittleEndian.PutUint32(g.payload[g.extCaps:], 0)
	}
}

// clientHello is what mycached reads from a client's handshake response
// (or COM_CHANGE_USER) as it passes through.
type clientHello struct {
	caps    uint32
	charset byte
	user    string
	db      string
	plugin  string
}

func parseHandshakeResponse(p []byte) (clientHello, error) {
	var h clientHello
	if len(p) < sslRequestLen {
		return h, errBadHandshake
	}
	h.caps = binary.LittleEndian.Uint32(p)
	if h.caps&mysql.CLIENT_PROTOCOL_41 == 0 {
		return h, errBadHandshake
	}
	h.charset = p[8]
	user, rest, ok := cstring(p[sslRequestLen:])
	if !ok {
		return h, errBadHandshake
	}
	h.user = user
	switch {
	case h.caps&mysql.CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA != 0:
		n, k := lenenc(rest)
		if k == 0 || uint64(len(rest)-k) < n {
			return h, errBadHandshake
		}
		rest = rest[k+int(n):]
	case h.caps&mysql.CLIENT_SECURE_CONNECTION != 0:
		if len(rest) < 1 || len(rest) < 1+int(rest[0]) {
			return h, errBadHandshake
		}
		rest = rest[1+int(rest[0]):]
	default:
		_, rest, _ = cstring(rest)
	}
	if h.caps&mysql.CLIENT_CONNECT_WITH_DB != 0 && len(rest) > 0 {
		h.db, rest, _ = cstring(rest)
	}
	if h.caps&mysql.CLIENT_PLUGIN_AUTH != 0 && len(rest) > 0 {
		h.plugin, _, _ = cstring(rest)
	}
	return h, nil
}

// parseChangeUser reads COM_CHANGE_USER's user and schema; the capabilities
// are the connection's.
func parseChangeUser(p []byte, caps uint32) (clientHello, error) {
	h := clientHello{caps: caps}
	user, rest, ok := cstring(p[1:])
	if !ok {
		return h, errBadHandshake
	}
	h.user = user
	if caps&mysql.CLIENT_SECURE_CONNECTION != 0 {
		if len(rest) < 1 || len(rest) < 1+int(rest[0]) {
			return h, errBadHandshake
		}
		rest = rest[1+int(rest[0]):]
	} else {
		_, rest, _ = cstring(rest)
	}
	h.db, rest, _ = cstring(rest)
	if len(rest) >= 2 {
		h.charset = rest[0]
		rest = rest[2:]
	}
	if caps&mysql.CLIENT_PLUGIN_AUTH != 0 && len(rest) > 0 {
		h.plugin, _, _ = cstring(rest)
	}
	return h, nil
}

// setCaps rewrites the capability flags of a handshake response for the
// backend side: CLIENT_SSL must say whether this hop is encrypted, since a
// server that sees it expects a TLS hello next.
func setCaps(p []byte, backendTLS bool) {
	caps := binary.LittleEndian.Uint32(p) &^ (maskedCaps | mysql.CLIENT_SSL)
	if backendTLS {
		caps |= mysql.CLIENT_SSL
	}
	binary.LittleEndian.PutUint32(p, caps)
	if caps&mysql.CLIENT_LONG_PASSWORD == 0 && len(p) >= sslRequestLen {
		binary.LittleEndian.PutUint32(p[28:], 0) // MariaDB extended capabilities
	}
}

// handshake relays the connection phase: greeting, optional TLS on each
// hop, the handshake response and the whole auth exchange, until the
// backend says OK or ERR. It returns whether authentication succeeded.
func (s *session) handshake() (bool, error) {
	cfg := &s.srv.cfg
	gp, seq, err := s.backend.readPacket(nil, 1<<16)
	if err != nil {
		return false, s.backendFailure(err)
	}
	if len(gp) > 0 && gp[0] == mysql.ERR_HEADER {
		// The backend refused us (too many connections, host blocked):
		// the client gets its words.
		_, _ = s.client.writePacket(gp, seq)
		return false, s.client.w.Flush()
	}
	g, err := parseGreeting(gp)
	if err != nil {
		s.sendError(0, codeBackendUnreachable, "08S01", "mycached: backend "+cfg.Backend+" sent a malformed greeting", false)
		return false, err
	}
	s.connID = g.connID
	backendOffersTLS := g.caps&mysql.CLIENT_SSL != 0
	g.mask(s.srv.tlsConfig != nil)
	if _, err := s.client.writePacket(g.payload, seq); err != nil {
		return false, clientErr{err}
	}
	if err := s.client.w.Flush(); err != nil {
		return false, clientErr{err}
	}

	// The client's reply: maybe an SSL request first.
	resp, cseq, err := s.client.readPacket(s.buf, 1<<20)
	if err != nil {
		return false, clientErr{err}
	}
	clientTLS := false
	if len(resp) == sslRequestLen && binary.LittleEndian.Uint32(resp)&mysql.CLIENT_SSL != 0 {
		if s.srv.tlsConfig == nil {
			return false, errBadHandshake
		}
		s.client.upgrade(func(c net.Conn) net.Conn { return tls.Server(c, s.srv.tlsConfig) })
		if err := s.client.conn.(*tls.Conn).Handshake(); err != nil {
			return false, clientErr{err}
		}
		clientTLS = true
		if resp, _, err = s.client.readPacket(resp, 1<<20); err != nil {
			return false, clientErr{err}
		}
		cseq = s.client.lastSeq
	}
	s.errSeq = cseq + 1
	hello, err := parseHandshakeResponse(resp)
	if err != nil {
		return false, err
	}
	s.hello = hello
	s.caps = hello.caps & g.caps
	s.tls = clientTLS

	// The backend hop: TLS when offered and allowed.
	backendTLS := false
	switch {
	case cfg.BackendTLS == BackendTLSOff:
	case backendOffersTLS:
		backendTLS = true
	case cfg.BackendTLS == BackendTLSRequired || cfg.BackendTLS == BackendTLSVerify:
		s.sendError(cseq+1, codeBackendUnreachable, "08S01", "mycached: backend "+cfg.Backend+" does not offer TLS, and --backend-tls="+string(cfg.BackendTLS)+" requires it", true)
		return false, errNoBackendTLS
	}
	bseq := byte(1)
	if backendTLS {
		var req [sslRequestLen]byte
		copy(req[:], resp[:sslRequestLen])
		setCaps(req[:], true)
		if _, err := s.backend.writePacket(req[:], bseq); err != nil {
			return false, s.backendFailure(err)
		}
		if err := s.backend.w.Flush(); err != nil {
			return false, s.backendFailure(err)
		}
		s.backend.upgrade(func(c net.Conn) net.Conn { return tls.Client(c, s.srv.backendTLS) })
		if err := s.backend.conn.(*tls.Conn).Handshake(); err != nil {
			s.sendError(cseq+1, codeBackendUnreachable, "08S01", "mycached: TLS to backend "+cfg.Backend+" failed: "+err.Error(), true)
			return false, err
		}
		bseq++
	}
	setCaps(resp, backendTLS)
	// The two hops may differ by one packet (each SSL request takes a
	// sequence id), so every auth packet is renumbered by the difference.
	delta := bseq - cseq
	return s.authExchange(resp, cseq+delta, delta)
}

// authExchange forwards first (the handshake response or COM_CHANGE_USER)
// to the backend with sequence id seq, then relays the auth exchange in
// both directions until OK or ERR. Backend packets go to the client
// renumbered by -delta, client packets to the backend by +delta.
func (s *session) authExchange(first []byte, seq, delta byte) (bool, error) {
	buf := first
	if _, err := s.backend.writePacket(first, seq); err != nil {
		return false, s.backendFailure(err)
	}
	if err := s.backend.w.Flush(); err != nil {
		return false, s.backendFailure(err)
	}
	for {
		p, bseq, err := s.backend.readPacket(buf, 1<<20)
		if err != nil {
			return false, s.backendFailure(err)
		}
		buf = p
		if _, err := s.client.writePacket(p, bseq-delta); err != nil {
			return false, clientErr{err}
		}
		if err := s.client.w.Flush(); err != nil {
			return false, clientErr{err}
		}
		if len(p) == 0 {
			return false, errBadGreeting
		}
		switch {
		case p[0] == mysql.OK_HEADER:
			if o, ok := parseOK(p); ok {
				s.status = o.status
			}
			return true, nil
		case p[0] == mysql.ERR_HEADER:
			return false, nil
		case p[0] == mysql.MORE_DATE_HEADER && len(p) == 2 && p[1] == 3:
			// caching_sha2_password's fast-auth success: the server's OK
			// follows with nothing from the client.
			continue
		}
		c, cseq, err := s.client.readPacket(buf, 1<<20)
		if err != nil {
			return false, clientErr{err}
		}
		buf = c
		s.errSeq = cseq + 1
		if _, err := s.backend.writePacket(c, cseq+delta); err != nil {
			return false, s.backendFailure(err)
		}
		if err := s.backend.w.Flush(); err != nil {
			return false, s.backendFailure(err)
		}
	}
}
