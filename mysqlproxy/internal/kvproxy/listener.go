package kvproxy

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"net"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/mycached/mycached/mysqlproxy/internal/kv"
	"github.com/mycached/mycached/mysqlproxy/internal/relay"
	"github.com/mycached/mycached/mysqlproxy/internal/wire"
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
const kvOnlyMsg = "mycached: this listener serves only the key/value pseudo-queries (INSERT \"k\" = \"v\", SELECT \"k\", DELETE \"k\", SELECT *, DROP); send SQL to the main listener"

// RunKV serves one kv-only connection: its own handshake, then commands.
// The session has no backend, and nothing on this path touches one.
func (srv *Server) RunKV(s *relay.Session) {
	defer s.Client.Release()
	defer s.Client.Close()

	k := srv.NewSession(s)
	k.kvOnly = true
	s.ConnID = uint32(s.ID)
	s.StartHandshakeDeadline()
	ok, err := k.kvHandshake()
	if err != nil {
		s.LogEnd("kv handshake failed", err)
		return
	}
	if !ok {
		return
	}
	s.EndHandshakeDeadline()
	s.Log = s.Log.With("user", s.Hello.User)
	// No server limits the commands here: the largest kv statement is a
	// value of the largest size, hex-encoded, and its key.
	s.SetPacketLimit(2*k.srv.cfg.MaxBytes + 1<<16)
	s.Loop(k.dispatchKV)
}

// kvHandshake sends the greeting, reads the client's reply and checks its
// password, switching the client to mysql_native_password when it began
// with another plugin. It returns whether the client is in; a refused
// client has had its access-denied error.
func (k *Session) kvHandshake() (bool, error) {
	scramble, err := newScramble()
	if err != nil {
		return false, err
	}
	if _, err := k.s.Client.WritePacket(kvGreeting(k.s.ConnID, scramble), 0); err != nil {
		return false, relay.ClientError{Err: err}
	}
	if err := k.s.Flush(); err != nil {
		return false, err
	}
	resp, seq, err := k.s.Client.ReadPacket(nil, 1<<20)
	if err != nil {
		return false, relay.ClientError{Err: err}
	}
	if seq != 1 {
		return false, k.outOfOrder(1)
	}
	if len(resp) == relay.SSLRequestLen {
		// CLIENT_SSL was not offered; a client that asks anyway cannot be
		// served in the clear it did not want.
		k.s.SendError(seq+1, mysql.ER_NOT_SUPPORTED_YET, "08004", "mycached: the kv listener does not offer TLS", true)
		return false, nil
	}
	hello, auth, err := parseKVHello(resp)
	if err != nil {
		k.s.SendError(seq+1, mysql.ER_HANDSHAKE_ERROR, "08S01", "mycached: bad handshake", true)
		return false, err
	}
	k.s.Hello = hello
	k.s.Caps = hello.Caps & kvCaps
	if hello.Plugin != "" && hello.Plugin != nativePassword {
		// The client hashed for another plugin (caching_sha2_password,
		// say): ask again, for mysql_native_password and a fresh scramble.
		if scramble, err = newScramble(); err != nil {
			return false, err
		}
		sw := append([]byte{mysql.EOF_HEADER}, nativePassword...)
		sw = append(sw, 0)
		sw = append(append(sw, scramble...), 0)
		if _, err := k.s.Client.WritePacket(sw, seq+1); err != nil {
			return false, relay.ClientError{Err: err}
		}
		if err := k.s.Flush(); err != nil {
			return false, err
		}
		want := seq + 2
		if auth, seq, err = k.s.Client.ReadPacket(nil, 1<<16); err != nil {
			return false, relay.ClientError{Err: err}
		}
		if seq != want {
			return false, k.outOfOrder(want)
		}
	}
	if !k.srv.passwordOK(hello.User, auth, scramble) {
		using := "NO"
		if len(auth) > 0 {
			using = "YES"
		}
		host, _, _ := net.SplitHostPort(k.s.ClientAddr)
		k.s.SendError(seq+1, mysql.ER_ACCESS_DENIED_ERROR, "28000",
			"Access denied for user '"+hello.User+"'@'"+host+"' (using password: "+using+"); the kv listener accepts the users of --kv-users-file", true)
		if relay.EndLogAllowed(k.s.Log) {
			k.s.Log.Info("kv access denied", "user", hello.User)
		}
		return false, nil
	}
	k.s.Status = mysql.SERVER_STATUS_AUTOCOMMIT
	b := wire.AppendOK(make([]byte, 0, 16), 0, 0, k.s.Status, 0)
	if _, err := k.s.Client.WritePacket(b, seq+1); err != nil {
		return false, relay.ClientError{Err: err}
	}
	return true, k.s.Flush()
}

// outOfOrder refuses a handshake reply out of sequence, in the server's
// words, and hangs up; at is the sequence id the error goes out with.
func (k *Session) outOfOrder(at byte) error {
	k.s.SendError(at, mysql.ER_NET_PACKETS_OUT_OF_ORDER, "08S01", "Got packets out of order", true)
	return errHandshakeOutOfOrder
}

// errHandshakeOutOfOrder is a handshake reply with the wrong sequence id.
var errHandshakeOutOfOrder = errors.New("kvproxy: handshake reply out of order")

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

// passwordOK checks a mysql_native_password reply against the user's
// entry in Config.KVPasswords. An empty password matches only an empty
// reply. A password written as mysql.user stores it ("*" and 40 hex
// digits, MySQL's PASSWORD()) is taken as the SHA1(SHA1(password)) hash
// the check needs, so the file need not hold the password itself.
func (srv *Server) passwordOK(user string, reply, scramble []byte) bool {
	pw, ok := srv.cfg.Passwords[user]
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
func parseKVHello(p []byte) (relay.Hello, []byte, error) {
	h, err := relay.ParseHandshakeResponse(p)
	if err != nil {
		return h, nil, err
	}
	_, rest, _ := wire.CString(p[relay.SSLRequestLen:])
	var auth []byte
	switch {
	case h.Caps&mysql.CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA != 0:
		n, k := wire.Lenenc(rest)
		auth = rest[k : k+int(n)] // parseHandshakeResponse checked the bounds
	case h.Caps&mysql.CLIENT_SECURE_CONNECTION != 0:
		auth = rest[1 : 1+int(rest[0])]
	default:
		a, _, _ := wire.CString(rest)
		auth = []byte(a)
	}
	return h, auth, nil
}

// dispatchKV answers one command on the kv-only listener.
func (k *Session) dispatchKV(p []byte) error {
	switch p[0] {
	case mysql.COM_QUERY:
		return k.kvOnlyQuery(string(p[1:]))
	case mysql.COM_QUIT:
		return relay.ErrQuit
	case mysql.COM_PING, mysql.COM_SET_OPTION:
		return k.s.WriteOK(0)
	case mysql.COM_INIT_DB:
		// There are no databases, but clients that name one at connect or
		// with USE should carry on.
		k.s.Hello.DB = string(p[1:])
		return k.s.WriteOK(0)
	case mysql.COM_RESET_CONNECTION:
		clear(k.local)
		return k.s.WriteOK(0)
	case mysql.COM_STATISTICS:
		if _, err := k.s.Client.WritePacket([]byte("mycached key/value listener"), k.s.ReplySeq()); err != nil {
			return relay.ClientError{Err: err}
		}
		return k.s.Flush()
	case mysql.COM_STMT_PREPARE:
		st, ok, err := k.parseKV(string(p[1:]))
		switch {
		case !ok:
			return k.writeKVErr(mysql.ER_NOT_SUPPORTED_YET, "42000", kvOnlyMsg)
		case err != nil:
			return k.writeKVResult(kv.ErrorResult(err), false)
		}
		return k.kvPrepareLocal(st)
	case mysql.COM_STMT_EXECUTE:
		if len(p) >= 10 {
			if id := wire.Le32(p[1:]); k.local[id] != nil {
				return k.executeLocal(id, k.local[id], p)
			}
		}
		return k.s.WriteErr(mysql.ER_UNKNOWN_STMT_HANDLER, "HY000", unknownStmt(p))
	case mysql.COM_STMT_CLOSE:
		if len(p) >= 5 {
			delete(k.local, wire.Le32(p[1:]))
			delete(k.long, wire.Le32(p[1:]))
		}
		return nil // no response
	case mysql.COM_STMT_SEND_LONG_DATA:
		if len(p) >= 5 && k.local[wire.Le32(p[1:])] != nil {
			k.noteLongData(wire.Le32(p[1:]))
		}
		return nil // no response
	case mysql.COM_STMT_RESET:
		if len(p) >= 5 && k.local[wire.Le32(p[1:])] != nil {
			delete(k.long, wire.Le32(p[1:]))
			return k.s.WriteOK(0)
		}
		return k.s.WriteErr(mysql.ER_UNKNOWN_STMT_HANDLER, "HY000", unknownStmt(p))
	}
	return k.s.WriteErr(mysql.ER_UNKNOWN_COM_ERROR, "08S01", "mycached: the kv listener does not support this command")
}

// kvOnlyQuery answers COM_QUERY on the kv-only listener.
func (k *Session) kvOnlyQuery(sql string) error {
	st, ok, err := k.parseKV(sql)
	switch {
	case ok && err != nil:
		return k.writeKVResult(kv.ErrorResult(err), false)
	case ok && st.Params > 0:
		return k.writeKVResult(kv.ErrorResult(kv.ErrUnbound), false)
	case ok:
		return k.writeKVResult(k.execKV(st), false)
	}
	if kvSessionStatement(sql) {
		// Drivers set up their sessions at connect (PyMySQL sends SET NAMES
		// and SET autocommit) and commit after writes. The kv store has no
		// session state that these change, and no transactions.
		return k.s.WriteOK(0)
	}
	if a, ok := readVars(sql, sysVars(2*k.srv.cfg.MaxBytes+1<<16)); ok {
		return k.writeVars(a)
	}
	return k.writeKVErr(mysql.ER_NOT_SUPPORTED_YET, "42000", kvOnlyMsg)
}

// kvSessionStatement reports whether sql is one of the few statements
// the kv-only listener accepts without doing anything: SET, COMMIT and
// ROLLBACK.
func kvSessionStatement(sql string) bool {
	f := strings.Fields(strings.ToLower(strings.TrimRight(strings.TrimSpace(sql), "; \t\r\n")))
	switch {
	case len(f) == 0:
		return false
	case f[0] == "set" && len(f) > 1:
		return true
	}
	return len(f) == 1 && (f[0] == "commit" || f[0] == "rollback")
}
