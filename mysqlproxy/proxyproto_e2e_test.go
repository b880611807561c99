package mysqlproxy_test

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/mycached/mycached/mysqlproxy"
)

// TestProxyProtocolClientAddress: with ProxyProtocol, the server matches
// each client's account by the client's address, as it does directly:
// an account of 127.0.0.3 logs in from there and not from 127.0.0.1, and
// an account of 127.0.0.1 the other way round; the processlist shows the
// client's address. The binlog follower's connections, which send no
// header, are let in too. Without it, the server sees mycached's address
// for every client.
func TestProxyProtocolClientAddress(t *testing.T) {
	t.Parallel()
	m := privateDB(t, "--proxy-protocol-networks=127.0.0.1")
	db := m.NewDatabase(t)
	for _, s := range []string{
		"CREATE TABLE " + db + ".t (id INT PRIMARY KEY, v INT)",
		"INSERT INTO " + db + ".t VALUES (1, 10)",
		"CREATE USER here@'127.0.0.1' IDENTIFIED BY 'pw'",
		"GRANT SELECT ON " + db + ".* TO here@'127.0.0.1'",
		"CREATE USER there@'127.0.0.3' IDENTIFIED BY 'pw'",
		"GRANT SELECT ON " + db + ".* TO there@'127.0.0.3'",
	} {
		m.Exec(t, s)
	}
	with := startProxy(t, withBinlog(mysqlproxy.Config{Backend: m.Addr, ProxyProtocol: true}))
	without := startProxy(t, mysqlproxy.Config{Backend: m.Addr})
	// from opens a pool as user, dialing addr from the address src.
	from := func(src, user, addr string) *sql.DB {
		network := "from" + strings.ReplaceAll(src, ".", "_")
		mysql.RegisterDialContext(network, func(ctx context.Context, addr string) (net.Conn, error) {
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
			return d.DialContext(ctx, "tcp", addr)
		})
		return openDB(t, fmt.Sprintf("%s:pw@%s(%s)/%s", user, network, addr, db))
	}
	// login returns CURRENT_USER() and the processlist's host of the
	// session, or the error number of the login.
	login := func(src, user, addr string) (string, uint16) {
		t.Helper()
		pool := from(src, user, addr)
		defer pool.Close()
		var who, host string
		err := pool.QueryRow("SELECT CURRENT_USER(), SUBSTRING_INDEX(host, ':', 1) FROM information_schema.processlist WHERE id = CONNECTION_ID()").Scan(&who, &host)
		if err != nil {
			return "", mysqlErr(t, err).Number
		}
		// A cached read answers with the account's rows.
		for range 2 {
			if got := readInt(t, pool, "SELECT v FROM t WHERE id = 1"); got != 10 {
				t.Errorf("%s from %s: read %d, want 10", user, src, got)
			}
		}
		return who + " " + host, 0
	}
	for _, c := range []struct{ src, user string }{
		{"127.0.0.3", "there"}, {"127.0.0.3", "here"}, {"127.0.0.1", "here"}, {"127.0.0.1", "there"},
	} {
		wantWho, wantErr := login(c.src, c.user, m.Addr)
		if gotWho, gotErr := login(c.src, c.user, with.addr); gotWho != wantWho || gotErr != wantErr {
			t.Errorf("%s from %s through mycached with the PROXY header: %q, error %d; directly %q, error %d", c.user, c.src, gotWho, gotErr, wantWho, wantErr)
		}
	}
	// Over TLS to the backend: the header goes ahead of the SSL request.
	tm := tlsMariaDB(t)
	tm.Exec(t, "SET GLOBAL proxy_protocol_networks = '127.0.0.1'")
	tm.Exec(t, "CREATE DATABASE "+db)
	tm.Exec(t, "CREATE USER there@'127.0.0.3' IDENTIFIED BY 'pw'")
	tm.Exec(t, "GRANT SELECT ON *.* TO there@'127.0.0.3'")
	overTLS := startProxy(t, mysqlproxy.Config{Backend: tm.Addr, ProxyProtocol: true, BackendTLS: mysqlproxy.BackendTLSRequired})
	pool := from("127.0.0.3", "there", overTLS.addr)
	var who, cipher string
	if err := pool.QueryRow("SELECT CURRENT_USER(), VARIABLE_VALUE FROM information_schema.SESSION_STATUS WHERE VARIABLE_NAME = 'Ssl_cipher'").Scan(&who, &cipher); err != nil {
		t.Errorf("there from 127.0.0.3 through mycached over TLS with the PROXY header: %v", err)
	} else if who != "there@127.0.0.3" || cipher == "" {
		t.Errorf("there from 127.0.0.3 through mycached over TLS with the PROXY header: %s, cipher %q; want there@127.0.0.3 over TLS", who, cipher)
	}
	pool.Close()
	// A server that does not accept the header says so (1130), or drops
	// the connection before its error is read: the client is told what
	// to check.
	other := privateDB(t)
	refused := startProxy(t, mysqlproxy.Config{Backend: other.Addr, ProxyProtocol: true})
	var one int
	err := openDB(t, rootDSN(refused.addr, "", "")).QueryRow("SELECT 1").Scan(&one)
	if err == nil || !strings.Contains(err.Error(), "proxy_protocol_networks") && !strings.Contains(err.Error(), "Proxy header is not accepted") {
		t.Errorf("a server that does not accept the PROXY header: %v, want the server's refusal, or an error that names proxy_protocol_networks", err)
	}
	// Without the header, the server sees mycached's address.
	if who, _ := login("127.0.0.3", "here", without.addr); !strings.HasPrefix(who, "here@127.0.0.1 ") {
		t.Errorf("here from 127.0.0.3 through mycached without the header: %q, want here@127.0.0.1 (mycached's address)", who)
	}
}
