package mysqlproxy

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"net"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/mycached/mycached/mysqlproxy/internal/kv"
)

// This file is the kv-only listener: MySQL's wire protocol with no backend
// behind it, serving only the key/value pseudo-queries, as MySQL Proxy's
// proxydb script did. With no backend to check passwords, mycached does
// the mysql_native_password exchange itself against Config.KVPasswords.

// kvServerVersion is what the kv-only listener calls itself. The "5.5.5-"
// prefix is MariaDB's: clients strip it, and old ones that compare
// versions see something recent enough to talk protocol 4.1 with.
const kvServerVersion = "5.5.5-10.11.0-mycached-kv"

// nativePassword is the only auth plugin the kv-only listener speaks.
const nativePassword = "mysql_native_password"

// kvCaps are the capabilities the kv-only listener offers. Left out:
// CLIENT_SSL (no TLS there), compression, multi-statements, LOCAL INFILE,
// session tracking and query attributes, none of which the kv language
// needs. Both EOF styles are served, so CLIENT_DEPRECATE_EOF is offered
// and used only when the client asks for it too.
const kvCaps = mysql.CLIENT_LONG_PASSWORD | mysql.CLIENT_FOUND_ROWS | mysql.CLIENT_LONG_FLAG |
	mysql.CLIENT_CONNECT_WITH_DB | mysql.CLIENT_IGNORE_SPACE | mysql.CLIENT_PROTOCOL_41 |
	mysql.CLIENT_INTERACTIVE | mysql.CLIENT_TRANSACTIONS | mysql.CLIENT_SECURE_CONNECTION |
	mysql.CLIENT_MULTI_RESULTS | mysql.CLIENT_PS_MULTI_RESULTS | mysql.CLIENT_PLUGIN_AUTH |
	mysql.CLIENT_CONNECT_ATTRS | mysql.CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA | mysql.CLIENT_DEPRECATE_EOF

// kvOnlyMsg is the error for anything but the kv language on the kv-only
// listener.
// SELECT 'k' is SQL on the main listener and stays so here, so that the
// language is the same on both; the message says how to write the key.
const kvOnlyMsg = "mycached: this listener serves only the key/value pseudo-queries (INSERT \"k\" = \"v\", SELECT \"k\", DELETE \"k\", SELECT *, DROP; SELECT takes keys in double quotes or as prepared ? parameters); send SQL to the main listener"

var errKVAuth = errors.New("mysqlproxy: kv listener: malformed auth exchange")

// ServeKV accepts connections on ln for the kv-only listener until Close
// or Shutdown. It needs no backend: it authenticates users against
// Config.KVPasswords itself (mysql_native_password; clients that start
// with another plugin are switched to it) and answers only the key/value
// pseudo-queries, text or prepared. Other SQL gets an error and the
// connection goes on. Each connection gets its own goroutine, which
// recovers from panics as Serve's do.
func (s *Server) ServeKV(ln net.Listener) error {
	return s.serve(ln, "kv", (*session).runKV)
}

// runKV serves one kv-only connection: its own handshake, then commands.
// The session has no backend, and nothing on this path touches one.
func (s *session) runKV() {
	defer s.srv.forget(s)
	defer s.client.release()
	defer s.client.close()

	s.connID = uint32(s.id)
	setDeadline(s.client.conn, handshakeTimeout)
	ok, err := s.kvHandshake()
	if err != nil {
		s.logEnd("kv handshake failed", err)
		return
	}
	if !ok {
		return
	}
	setDeadline(s.client.conn, 0)
	s.log = s.log.With("user", s.hello.user)
	s.state.reset(s.hello.charset)
	s.loop(s.dispatchKV)
}

// kvHandshake sends the greeting, reads the client's reply and checks its
// password, switching the client to mysql_native_password when it began
// with another plugin. It returns whether the client is in; a refused
// client has had its access-denied error.
func (s *session) kvHandshake() (bool, error) {
	scramble, err := newScramble()
	if err != nil {
		return false, err
	}
	if _, err := s.client.writePacket(kvGreeting(s.connID, scramble), 0); err != nil {
		return false, clientErr{err}
	}
	if err := s.flush(); err != nil {
		return false, err
	}
	resp, seq, err := s.client.readPacket(nil, 1<<20)
	if err != nil {
		return false, clientErr{err}
	}
	if len(resp) == sslRequestLen {
		// CLIENT_SSL was not offered; a client that asks anyway cannot be
		// served in the clear it did not want.
		s.sendError(seq+1, mysql.ER_NOT_SUPPORTED_YET, "08004", "mycached: the kv listener does not offer TLS", true)
		return false, nil
	}
	hello, auth, err := parseKVHello(resp)
	if err != nil {
		s.sendError(seq+1, mysql.ER_HANDSHAKE_ERROR, "08S01", "mycached: bad handshake", true)
		return false, err
	}
	s.hello = hello
	s.caps = hello.caps & kvCaps
	if hello.plugin != "" && hello.plugin != nativePassword {
		// The client hashed for another plugin (caching_sha2_password,
		// say): ask again, for mysql_native_password and a fresh scramble.
		if scramble, err = newScramble(); err != nil {
			return false, err
		}
		sw := append([]byte{mysql.EOF_HEADER}, nativePassword...)
		sw = append(sw, 0)
		sw = append(append(sw, scramble...), 0)
		if _, err := s.client.writePacket(sw, seq+1); err != nil {
			return false, clientErr{err}
		}
		if err := s.flush(); err != nil {
			return false, err
		}
		if auth, seq, err = s.client.readPacket(nil, 1<<16); err != nil {
			return false, clientErr{err}
		}
	}
	if !s.srv.kvPasswordOK(hello.user, auth, scramble) {
		using := "NO"
		if len(auth) > 0 {
			using = "YES"
		}
		host, _, _ := net.SplitHostPort(s.clientAddr)
		s.sendError(seq+1, mysql.ER_ACCESS_DENIED_ERROR, "28000",
			"Access denied for user '"+hello.user+"'@'"+host+"' (using password: "+using+"); the kv listener accepts the users of --kv-users-file", true)
		s.log.Info("kv access denied", "user", hello.user)
		return false, nil
	}
	s.status = mysql.SERVER_STATUS_AUTOCOMMIT
	b := appendOK(make([]byte, 0, 16), 0, 0, s.status, 0)
	if _, err := s.client.writePacket(b, seq+1); err != nil {
		return false, clientErr{err}
	}
	return true, s.flush()
}

// newScramble returns a fresh 20-byte auth scramble. The scramble is
// NUL-terminated on the wire and clients copy it with C string functions,
// so it holds no zero byte; MySQL keeps it to 7 bits as well.
func newScramble() ([]byte, error) {
	b := make([]byte, 20)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	for i, c := range b {
		if b[i] = c & 0x7f; b[i] == 0 {
			b[i] = 1
		}
	}
	return b, nil
}

// kvPasswordOK checks a mysql_native_password reply against the user's
// entry in Config.KVPasswords. An empty password matches only an empty
// reply. A password written as mysql.user stores it ("*" and 40 hex
// digits, MySQL's PASSWORD()) is taken as the SHA1(SHA1(password)) hash
// the check needs, so the file need not hold the password itself.
func (srv *Server) kvPasswordOK(user string, reply, scramble []byte) bool {
	pw, ok := srv.cfg.KVPasswords[user]
	switch {
	case !ok:
		return false
	case pw == "":
		return len(reply) == 0
	case len(reply) != 20:
		return false
	}
	stored := mysql.NativePasswordHash([]byte(pw))
	if len(pw) == 41 && pw[0] == '*' {
		if h, err := mysql.DecodePasswordHex(pw); err == nil {
			stored = h
		}
	}
	return mysql.CompareNativePassword(reply, stored, scramble)
}

// kvGreeting builds a protocol-10 initial handshake packet.
func kvGreeting(connID uint32, scramble []byte) []byte {
	caps := uint32(kvCaps)
	b := make([]byte, 0, 128)
	b = append(b, 10)
	b = append(b, kvServerVersion...)
	b = append(b, 0)
	b = binary.LittleEndian.AppendUint32(b, connID)
	b = append(b, scramble[:8]...)
	b = append(b, 0)
	b = binary.LittleEndian.AppendUint16(b, uint16(caps))
	b = append(b, 45) // utf8mb4_general_ci
	b = binary.LittleEndian.AppendUint16(b, mysql.SERVER_STATUS_AUTOCOMMIT)
	b = binary.LittleEndian.AppendUint16(b, uint16(caps>>16))
	b = append(b, byte(len(scramble)+1))
	b = append(b, make([]byte, 10)...) // reserved; CLIENT_LONG_PASSWORD says these are not MariaDB's
	b = append(b, scramble[8:]...)
	b = append(b, 0)
	b = append(b, nativePassword...)
	return append(b, 0)
}

// parseKVHello reads a handshake response: what parseHandshakeResponse
// reads, and the auth response too, which the relay never needs.
func parseKVHello(p []byte) (clientHello, []byte, error) {
	h, err := parseHandshakeResponse(p)
	if err != nil {
		return h, nil, err
	}
	_, rest, _ := cstring(p[sslRequestLen:])
	var auth []byte
	switch {
	case h.caps&mysql.CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA != 0:
		n, k := lenenc(rest)
		auth = rest[k : k+int(n)] // parseHandshakeResponse checked the bounds
	case h.caps&mysql.CLIENT_SECURE_CONNECTION != 0:
		auth = rest[1 : 1+int(rest[0])]
	default:
		a, _, _ := cstring(rest)
		auth = []byte(a)
	}
	return h, auth, nil
}

// dispatchKV answers one command on the kv-only listener.
func (s *session) dispatchKV(p []byte) error {
	switch p[0] {
	case mysql.COM_QUERY:
		return s.kvOnlyQuery(string(p[1:]))
	case mysql.COM_QUIT:
		return errQuit
	case mysql.COM_PING, mysql.COM_SET_OPTION:
		return s.writeOK(0)
	case mysql.COM_INIT_DB:
		// There are no databases, but clients that name one at connect or
		// with USE should carry on.
		s.hello.db = string(p[1:])
		return s.writeOK(0)
	case mysql.COM_RESET_CONNECTION:
		clear(s.localStmts)
		return s.writeOK(0)
	case mysql.COM_STATISTICS:
		if _, err := s.client.writePacket([]byte("mycached key/value listener"), s.replySeq()); err != nil {
			return clientErr{err}
		}
		return s.flush()
	case mysql.COM_STMT_PREPARE:
		st, ok, err := s.parseKV(string(p[1:]))
		switch {
		case !ok:
			return s.writeErr(mysql.ER_NOT_SUPPORTED_YET, "42000", kvOnlyMsg)
		case err != nil:
			return s.writeKVResult(kv.ErrorResult(err), false)
		}
		return s.kvPrepareLocal(st)
	case mysql.COM_STMT_EXECUTE:
		if len(p) >= 10 {
			if st := s.localStmts[le32(p[1:])]; st != nil {
				return s.kvExecute(st, p)
			}
		}
		return s.writeErr(mysql.ER_UNKNOWN_STMT_HANDLER, "HY000", "mycached: unknown prepared statement handler")
	case mysql.COM_STMT_CLOSE:
		if len(p) >= 5 {
			delete(s.localStmts, le32(p[1:]))
		}
		return nil // no response
	case mysql.COM_STMT_SEND_LONG_DATA:
		return nil // no response; kv parameters come inline, and the execute says so
	case mysql.COM_STMT_RESET:
		if len(p) >= 5 && s.localStmts[le32(p[1:])] != nil {
			return s.writeOK(0)
		}
		return s.writeErr(mysql.ER_UNKNOWN_STMT_HANDLER, "HY000", "mycached: unknown prepared statement handler")
	}
	return s.writeErr(mysql.ER_UNKNOWN_COM_ERROR, "08S01", "mycached: the kv listener does not support this command")
}

// kvOnlyQuery answers COM_QUERY on the kv-only listener.
func (s *session) kvOnlyQuery(sql string) error {
	st, ok, err := s.parseKV(sql)
	switch {
	case ok && err != nil:
		return s.writeKVResult(kv.ErrorResult(err), false)
	case ok && st.Params > 0:
		return s.writeKVResult(kv.ErrorResult(kv.ErrUnbound), false)
	case ok:
		return s.writeKVResult(s.execKV(st), false)
	}
	switch kvSessionStatement(sql) {
	case "set", "commit", "rollback":
		// Drivers set up their sessions at connect (PyMySQL sends SET NAMES
		// and SET autocommit) and commit after writes. The kv store has no
		// session state that these change, and no transactions.
		return s.writeOK(0)
	case "version_comment":
		// The mariadb client asks this when it starts, for its banner.
		v := "mycached key/value listener"
		return s.writeResult([]string{"@@version_comment"}, [][]*string{{&v}})
	}
	return s.writeErr(mysql.ER_NOT_SUPPORTED_YET, "42000", kvOnlyMsg)
}

// kvSessionStatement classifies the few SQL statements the kv-only
// listener accepts without doing anything: "set", "commit", "rollback" or
// "version_comment"; "" for everything else.
func kvSessionStatement(sql string) string {
	f := strings.Fields(strings.ToLower(strings.TrimRight(strings.TrimSpace(sql), "; \t\r\n")))
	switch {
	case len(f) == 0:
		return ""
	case f[0] == "set" && len(f) > 1:
		return "set"
	case len(f) == 1 && (f[0] == "commit" || f[0] == "rollback"):
		return f[0]
	case strings.Join(f, " ") == "select @@version_comment limit 1":
		return "version_comment"
	}
	return ""
}
