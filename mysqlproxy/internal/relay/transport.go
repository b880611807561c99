package relay

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/mycached/mycached/mysqlproxy/internal/wire"
)

// TLS ends at mycached, so the server judges an account's REQUIRE SSL
// (X509, ISSUER, SUBJECT, CIPHER) and its require_secure_transport by
// mycached's connection to it. Over a backend hop without TLS the server
// refuses such a client itself. Over one with TLS it would let in a
// client that reached mycached in the clear, across a network: mycached
// refuses that client as the server would have. A client on a secure
// network (loopback unless Options.SecureNetworks says otherwise) counts
// as secure without TLS, as the server counts its own Unix socket: a
// sidecar's clients reach it on the same host.

// errInsecureTransport ends a session whose client reached mycached in the
// clear, from outside the secure networks, as an account that requires
// TLS (or a server that requires it of everyone).
var errInsecureTransport = errors.New("relay: login refused: the client reached mycached without TLS from outside the secure networks")

// secureTransport reports whether the client's connection to mycached
// counts as a secure transport: TLS, a Unix socket, or an address in the
// secure networks.
func (s *Session) secureTransport() bool {
	if s.TLS {
		return true
	}
	ta, ok := s.Client.NetConn.RemoteAddr().(*net.TCPAddr)
	if !ok {
		return true // a Unix socket
	}
	ip, ok := netip.AddrFromSlice(ta.IP)
	if !ok {
		return false
	}
	ip = ip.Unmap()
	if s.opts.SecureNetworks == nil {
		return ip.IsLoopback()
	}
	for _, p := range s.opts.SecureNetworks {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// checkTransport runs after the server accepted a login (seq is its OK's
// sequence id toward the client), before the client hears of it. A
// client in the clear from outside the secure networks, logged in over a
// backend hop with TLS, is refused when its account requires TLS or the
// server requires it of every connection: it gets the server's own
// answer to such a client, Access denied, and the session ends. An
// account whose requirement cannot be read (its password has expired,
// and the server refuses every statement but SET) is refused too. When
// init_connect failed, the server has ended the session: that error is
// returned, for the client to have after its OK, as directly.
func (s *Session) checkTransport(seq byte) error {
	if _, backendTLS := wire.Transport(s.Backend.NetConn).(*tls.Conn); !backendTLS || s.secureTransport() {
		return nil
	}
	res, err := s.ownQueries("SHOW CREATE USER CURRENT_USER", "SHOW GLOBAL VARIABLES LIKE 'require_secure_transport'")
	if err != nil {
		return err
	}
	why := ""
	switch {
	case res[0].err != nil || len(res[0].rows) == 0 || len(res[0].rows[0]) == 0:
		why = "its account's TLS requirement could not be read"
	case requiresTLS(res[0].rows[0][0]):
		why = "its account requires TLS"
	case res[1].err != nil:
		why = "the server's require_secure_transport could not be read"
	case len(res[1].rows) > 0 && len(res[1].rows[0]) > 1 && strings.EqualFold(res[1].rows[0][1], "ON"):
		// A server without the variable (before MariaDB 10.5.2) shows
		// no row, and requires nothing.
		why = "the server's require_secure_transport is ON"
	default:
		return nil
	}
	host := s.Client.NetConn.RemoteAddr().String()
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	using := "NO"
	if s.authData {
		using = "YES"
	}
	// Ended in order: a connection dropped mid-session is one the server
	// counts, and logs, as aborted.
	if _, err := s.Backend.WritePacket([]byte{mysql.COM_QUIT}, 0); err == nil {
		_ = s.Backend.W.Flush()
	}
	s.SendError(seq, mysql.ER_ACCESS_DENIED_ERROR, "28000", "Access denied for user '"+s.Hello.User+"'@'"+host+"' (using password: "+using+")", true)
	return fmt.Errorf("%w: user '%s': %s", errInsecureTransport, s.Hello.User, why)
}

// requiresTLS reads SHOW CREATE USER's statement: whether it has a
// REQUIRE clause (SSL, X509, ISSUER, SUBJECT or CIPHER), outside its
// quoted strings and names.
func requiresTLS(create string) bool {
	var quote byte
	for i := 0; i < len(create); i++ {
		c := create[i]
		switch {
		case quote != 0:
			if c == '\\' && quote == '\'' {
				i++
			} else if c == quote {
				quote = 0
			}
		case c == '\'' || c == '`' || c == '"':
			quote = c
		case (c == 'R' || c == 'r') && (i == 0 || create[i-1] == ' ') && len(create)-i >= 8 &&
			strings.EqualFold(create[i:i+7], "REQUIRE") && create[i+7] == ' ':
			rest := strings.TrimLeft(create[i+8:], " ")
			return !strings.HasPrefix(strings.ToUpper(rest), "NONE")
		}
	}
	return false
}
