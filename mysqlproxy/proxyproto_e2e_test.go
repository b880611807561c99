package mysqlproxy_test

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/mycached/mycached/mysqlproxy"
	"github.com/mycached/mycached/mysqlproxy/internal/testenv"
)

// dialFrom returns the name of a go-sql-driver network that dials from
// the address src, which stands for a client on another host.
func dialFrom(src string) string {
	network := "from" + strings.ReplaceAll(src, ".", "_")
	mysql.RegisterDialContext(network, func(ctx context.Context, addr string) (net.Conn, error) {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
		return d.DialContext(ctx, "tcp", addr)
	})
	return network
}

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
		return openDB(t, fmt.Sprintf("%s:pw@%s(%s)/%s", user, dialFrom(src), addr, db))
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

// TestGrantsByAddress: the server gives a session its privileges on
// databases and tables by the address it comes from, from grants to the
// same user name, or to the anonymous user, at other hosts, which SHOW
// GRANTS does not list. Two sessions of one account from two addresses
// must not share entries when such a grant exists, and share them when
// none does. With ProxyProtocol the server sees each client's address;
// without it, sidecars on two hosts are two addresses.
func TestGrantsByAddress(t *testing.T) {
	t.Parallel()
	m := privateDB(t, "--proxy-protocol-networks=127.0.0.1")
	db, db9 := m.NewDatabase(t), m.NewDatabase(t)
	for _, s := range []string{
		"CREATE TABLE " + db + ".t7 (id INT PRIMARY KEY, v VARCHAR(20))",
		"INSERT INTO " + db + ".t7 VALUES (7, 'only-for-.7')",
		"CREATE TABLE " + db9 + ".t9 (id INT PRIMARY KEY, v VARCHAR(20))",
		"INSERT INTO " + db9 + ".t9 VALUES (9, 'anonymous-.7')",
		"CREATE TABLE " + db + ".pub (id INT PRIMARY KEY, v VARCHAR(20))",
		"INSERT INTO " + db + ".pub VALUES (1, 'everyone')",
		// u logs in as u@'127.0.0.%' from every address; from .7 it
		// also holds what u@'%.0.0.7' and ''@'%.0.0.7' were granted.
		"CREATE USER u@'127.0.0.%' IDENTIFIED BY 'pw'",
		"GRANT SELECT ON " + db + ".pub TO u@'127.0.0.%'",
		"CREATE USER u@'%.0.0.7' IDENTIFIED BY 'other'",
		"GRANT SELECT ON " + db + ".t7 TO u@'%.0.0.7'",
		// v has no grant that depends on the address.
		"CREATE USER v@'127.0.0.%' IDENTIFIED BY 'pw'",
		"GRANT SELECT ON " + db + ".* TO v@'127.0.0.%'",
	} {
		m.Exec(t, s)
	}
	p := startProxy(t, withBinlog(mysqlproxy.Config{Backend: m.Addr, ProxyProtocol: true}))
	from := func(src, user, addr string) *sql.DB {
		return openDB(t, fmt.Sprintf("%s:pw@%s(%s)/%s", user, dialFrom(src), addr, db))
	}
	// read returns the rows of q, or the error number.
	read := func(pool *sql.DB, q string) string {
		t.Helper()
		out, err := queryDump(context.Background(), pool, q)
		if err != nil {
			return fmt.Sprintf("error %d", mysqlErr(t, err).Number)
		}
		return out
	}
	admin := openDB(t, testenv.DSNFor(p.addr, "root", m.RootPassword, "", ""))
	// Without such grants the account's sessions share entries, from
	// any address.
	q := "SELECT v FROM pub"
	seven, three := from("127.0.0.7", "v", p.addr), from("127.0.0.3", "v", p.addr)
	waitFor(t, 10*time.Second, "v's read from .7 cached", func() bool {
		before := hits(t, admin)
		read(seven, q)
		return hits(t, admin) > before
	})
	before := hits(t, admin)
	if got := read(three, q); !strings.Contains(got, "everyone") {
		t.Fatalf("%s from .3: got %s", q, got)
	}
	if hits(t, admin) == before {
		t.Errorf("v from .3 did not share v from .7's entry")
	}
	// A grant at another host, made directly, is seen: the sessions'
	// entries part.
	m.Exec(t, "CREATE USER v@'%.0.0.7' IDENTIFIED BY 'other'")
	m.Exec(t, "GRANT SELECT ON "+db+".pub TO v@'%.0.0.7'")
	waitFor(t, 10*time.Second, "the grant seen", func() bool {
		read(seven, q)
		before := hits(t, admin)
		read(three, q)
		return hits(t, admin) == before
	})
	// The anonymous user's database grants count for every user name.
	m.Exec(t, "CREATE USER ''@'%.0.0.7'")
	m.Exec(t, "GRANT SELECT ON "+db9+".* TO ''@'%.0.0.7'")
	// sharedVia reads q as user from .7 through p until it is a hit, then
	// from .3, each checked against the same read made directly; it
	// reports whether the read from .3 was a hit on .7's entry.
	sharedVia := func(p *proxy, user, q string) bool {
		t.Helper()
		admin := openDB(t, testenv.DSNFor(p.addr, "root", m.RootPassword, "", ""))
		seven, three := from("127.0.0.7", user, p.addr), from("127.0.0.3", user, p.addr)
		direct7, direct3 := from("127.0.0.7", user, m.Addr), from("127.0.0.3", user, m.Addr)
		want7 := read(direct7, q)
		waitFor(t, 10*time.Second, q+" from .7 cached", func() bool {
			before := hits(t, admin)
			if got := read(seven, q); got != want7 {
				t.Fatalf("%s from .7: got %s, want %s", q, got, want7)
			}
			return hits(t, admin) > before
		})
		before := hits(t, admin)
		if got, want := read(three, q), read(direct3, q); got != want {
			t.Errorf("%s from .3 after .7 read it: got %s, want %s", q, got, want)
		}
		return hits(t, admin) > before
	}
	shared := func(user, q string) bool { t.Helper(); return sharedVia(p, user, q) }
	for _, q := range []string{"SELECT v FROM t7 WHERE id = 7", "SELECT v FROM " + db9 + ".t9 WHERE id = 9", "SELECT v FROM pub"} {
		if shared("u", q) {
			t.Errorf("%s from .3 was a hit on .7's entry", q)
		}
	}
	// A grant-table row deleted directly holds on the server until FLUSH
	// PRIVILEGES: the tables no longer tell it, and until then the
	// account's sessions from the two addresses stay apart. (The
	// anonymous user's grant would keep them apart anyway: it goes.)
	for _, s := range []string{
		"DROP USER ''@'%.0.0.7'",
		"CREATE USER w@'127.0.0.%' IDENTIFIED BY 'pw'",
		"GRANT SELECT ON " + db + ".pub TO w@'127.0.0.%'",
		"CREATE USER w@'%.0.0.7' IDENTIFIED BY 'other'",
		"GRANT SELECT ON " + db + ".t7 TO w@'%.0.0.7'",
		"DELETE FROM mysql.tables_priv WHERE User = 'w' AND Host = '%.0.0.7'",
	} {
		m.Exec(t, s)
	}
	if err := p.srv.WaitBinlog(context.Background()); err != nil {
		t.Fatal(err)
	}
	if shared("w", "SELECT v FROM t7 WHERE id = 7") {
		t.Errorf("w from .3 was a hit on .7's entry of a table only .7 may read, until FLUSH PRIVILEGES")
	}
	// A sidecar started now saw no write to the tables: the grants the
	// server holds in force keep the sessions apart.
	late := startProxy(t, withBinlog(mysqlproxy.Config{Backend: m.Addr, ProxyProtocol: true}))
	if sharedVia(late, "w", "SELECT v FROM t7 WHERE id = 7") {
		t.Errorf("through a sidecar started before FLUSH PRIVILEGES, w from .3 was a hit on .7's entry of a table only .7 may read")
	}
	// Loaded again, the tables tell the grants: the entries are shared.
	m.Exec(t, "FLUSH PRIVILEGES")
	if err := p.srv.WaitBinlog(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !shared("w", "SELECT v FROM pub WHERE id = 1") {
		t.Errorf("w from .3 did not share w from .7's entry after FLUSH PRIVILEGES")
	}
}
