package mysqlproxy_test

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	mysqlc "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-sql-driver/mysql"

	"github.com/mycached/mycached/mysqlproxy"
)

// TestInsecureClientRefused: over a backend hop with TLS, the server
// would let in any client of mycached whose account requires TLS, or
// while it requires TLS of every connection (require_secure_transport).
// A client that reached mycached without TLS from outside the secure
// networks is refused as the server refuses it directly (1045); with TLS
// to mycached, or from a secure network, it is let in.
func TestInsecureClientRefused(t *testing.T) {
	t.Parallel()
	m := tlsMariaDB(t)
	serverTLS, _ := selfSignedTLS(t)
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr, TLS: serverTLS,
		SecureNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
	m.Exec(t, "CREATE USER req@'%' IDENTIFIED BY 'pw' REQUIRE SSL")
	m.Exec(t, "CREATE USER plain@'%' IDENTIFIED BY 'pw'")
	// 127.0.0.2 stands for a client on another host.
	other := dialFrom("127.0.0.2")
	ctx := context.Background()
	login := func(user, proto, addr, params string) error {
		db, err := sql.Open("mysql", user+":pw@"+proto+"("+addr+")/?readTimeout=10s&"+params)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var one int
		return db.QueryRowContext(ctx, "SELECT 1").Scan(&one)
	}
	denied := func(err error, user string) bool {
		var me *mysql.MySQLError
		return errors.As(err, &me) && me.Number == 1045 && string(me.SQLState[:]) == "28000" &&
			strings.HasPrefix(me.Message, "Access denied for user '"+user+"'@'")
	}
	check := func(what string, err error, want bool, user string) {
		t.Helper()
		switch {
		case want && err != nil:
			t.Errorf("%s: %v, want a login", what, err)
		case !want && !denied(err, user):
			t.Errorf("%s: %v, want Access denied (1045, 28000) as directly", what, err)
		}
	}
	if err := login("req", other, m.Addr, "tls=false"); !denied(err, "req") {
		t.Fatalf("directly, REQUIRE SSL without TLS: %v, want Access denied", err)
	}
	check("REQUIRE SSL, no TLS, from outside the secure networks", login("req", other, p.addr, "tls=false"), false, "req")
	waitFor(t, 5*time.Second, "a log line saying why the login was refused", func() bool {
		return strings.Contains(p.logs.String(), "login refused: the client reached mycached without TLS from outside the secure networks: user 'req': its account requires TLS")
	})
	check("REQUIRE SSL, TLS to mycached", login("req", other, p.addr, "tls=skip-verify"), true, "req")
	check("REQUIRE SSL, no TLS, from a secure network", login("req", "tcp", p.addr, "tls=false"), true, "req")
	check("no requirement, no TLS, from outside", login("plain", other, p.addr, "tls=false"), true, "plain")

	// A change of user to an account that requires TLS: the same answer.
	m.Exec(t, "CREATE USER req2@'%' REQUIRE SSL") // no password
	from2 := func(ctx context.Context, network, addr string) (net.Conn, error) {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
		return d.DialContext(ctx, network, addr)
	}
	var answers [2]string
	for i, addr := range []string{m.Addr, p.addr} {
		c, err := client.ConnectWithDialer(ctx, "tcp", addr, "plain", "pw", "", from2, func(c *client.Conn) error {
			c.ReadTimeout, c.WriteTimeout = 20*time.Second, 20*time.Second
			return nil
		})
		if err != nil {
			t.Fatalf("connect to %s as plain from 127.0.0.2: %v", addr, err)
		}
		rc := &rawConn{Conn: c, deprecateEOF: true}
		if err := rc.command(append([]byte{mysqlc.COM_CHANGE_USER}, "req2\x00\x00\x00\x2d\x00mysql_native_password\x00\x00"...)...); err != nil {
			t.Fatal(err)
		}
		pk, err := rc.ReadPacket()
		for err == nil && len(pk) > 1 && pk[0] == 0xfe {
			// An auth switch: answered with no password.
			if err = rc.WritePacket(make([]byte, 4)); err == nil {
				pk, err = rc.ReadPacket()
			}
		}
		if err != nil {
			t.Fatalf("%s: change user: %v", addr, err)
		}
		answers[i] = fmt.Sprintf("%q", pk)
		if len(pk) < 3 || pk[0] != 0xff || binary.LittleEndian.Uint16(pk[1:]) != 1045 {
			t.Errorf("%s: a change of user to a REQUIRE SSL account without TLS got %q, want Access denied", addr, pk)
		}
		if i == 1 {
			// mycached ends the session; it does not go on as req2.
			if res, err := rc.Execute("SELECT CURRENT_USER()"); err == nil {
				u, _ := res.GetString(0, 0)
				if strings.HasPrefix(u, "req2@") {
					t.Errorf("after the refused change of user, the session is %s's", u)
				}
			}
		}
		c.Close()
	}
	if answers[0] != answers[1] {
		t.Errorf("change-user answers: mycached %s, MariaDB %s", answers[1], answers[0])
	}

	// A refused login ends its backend session in order: the server
	// counts no aborted client, and logs none.
	aborted := m.GlobalStatus(t, "Aborted_clients")
	for range 3 {
		check("REQUIRE SSL, no TLS, from outside, again", login("req", other, p.addr, "tls=false"), false, "req")
	}
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if n := m.GlobalStatus(t, "Aborted_clients"); n != aborted {
			t.Errorf("refused logins: Aborted_clients went from %d to %d, want no aborted session", aborted, n)
			break
		}
	}

	// A failed init_connect ends the session: the client has its OK, and
	// the server's error to its first statement, as directly.
	m.Exec(t, "SET GLOBAL init_connect = 'SELECT * FROM nonexistent.nonexistent'")
	for _, addr := range []string{m.Addr, p.addr} {
		db, err := sql.Open("mysql", "plain:pw@"+other+"("+addr+")/?tls=false&readTimeout=10s")
		if err != nil {
			t.Fatal(err)
		}
		c, err := db.Conn(ctx)
		if err != nil {
			t.Errorf("%s: a failed init_connect, no TLS, from outside: login: %v, want a login", addr, err)
		} else {
			var me *mysql.MySQLError
			if err := c.QueryRowContext(ctx, "SELECT 1").Scan(new(int)); !errors.As(err, &me) || me.Number != 1184 {
				t.Errorf("%s: a failed init_connect, no TLS, from outside: first statement: %v, want error 1184", addr, err)
			}
			_ = c.Close()
		}
		db.Close()
	}
	m.Exec(t, "SET GLOBAL init_connect = ''")

	m.Exec(t, "SET GLOBAL require_secure_transport = ON")
	defer m.Exec(t, "SET GLOBAL require_secure_transport = OFF")
	if err := login("plain", other, m.Addr, "tls=false"); !denied(err, "plain") {
		t.Fatalf("directly, require_secure_transport without TLS: %v, want Access denied", err)
	}
	check("require_secure_transport, no TLS, from outside", login("plain", other, p.addr, "tls=false"), false, "plain")
	check("require_secure_transport, TLS to mycached", login("plain", other, p.addr, "tls=skip-verify"), true, "plain")
	check("require_secure_transport, no TLS, from a secure network", login("plain", "tcp", p.addr, "tls=false"), true, "plain")
}

// TestSSLFlagWithoutTLS: a handshake response (not an SSL request) that
// sets CLIENT_SSL is taken at its word by a server that offers TLS, which
// waits for its TLS hello: what comes instead gets Bad handshake, through
// mycached as directly.
func TestSSLFlagWithoutTLS(t *testing.T) {
	t.Parallel()
	m := tlsMariaDB(t)
	serverTLS, _ := selfSignedTLS(t)
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr, TLS: serverTLS})
	body := binary.LittleEndian.AppendUint32(nil, mysqlc.CLIENT_PROTOCOL_41|mysqlc.CLIENT_SECURE_CONNECTION|mysqlc.CLIENT_PLUGIN_AUTH|mysqlc.CLIENT_SSL)
	body = binary.LittleEndian.AppendUint32(body, 1<<24)
	body = append(body, 45)
	body = append(body, make([]byte, 23)...)
	body = append(body, "root\x00\x00mysql_native_password\x00"...)
	pkt := append([]byte{byte(len(body)), byte(len(body) >> 8), byte(len(body) >> 16), 1}, body...)
	query := []byte{9, 0, 0, 0, mysqlc.COM_QUERY, 'S', 'E', 'L', 'E', 'C', 'T', ' ', '1'}
	var got [2]string
	for i, addr := range []string{m.Addr, p.addr} {
		nc := dialGreeted(t, addr)
		if _, err := nc.Write(append(pkt, query...)); err != nil {
			t.Fatal(err)
		}
		got[i] = readUntilClosed(t, nc)
	}
	if !strings.Contains(got[0], "Bad handshake") {
		t.Fatalf("directly: %q, want Bad handshake", got[0])
	}
	if got[1] != got[0] {
		t.Errorf("through mycached: %q, want %q as directly", got[1], got[0])
	}
}
