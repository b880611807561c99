package mysqlproxy_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	gmysql "github.com/go-mysql-org/go-mysql/mysql"
	gserver "github.com/go-mysql-org/go-mysql/server"
	"github.com/go-sql-driver/mysql"

	"github.com/mycached/mycached/mysqlproxy"
)

// Users of the fake MySQL 8 server.
const (
	sha2User   = "sha2user"
	sha2Pass   = "sha2-secret"
	nativeUser = "nativeuser"
	nativePass = "native-secret"
	// fakeAnswer is what the fake server returns for every SELECT, so a
	// client can tell its query reached it.
	fakeAnswer = "from-fake-mysql8"
)

// wireChunk is a run of bytes that went one way on a connection.
type wireChunk struct {
	fromServer bool
	data       []byte
}

// wireLog records both directions of one connection in order. The
// connection phase strictly alternates between the peers (a side only
// speaks once it has the other's packet), so consecutive bytes in one
// direction are whole packets.
type wireLog struct {
	mu     sync.Mutex
	chunks []wireChunk
}

func (l *wireLog) add(fromServer bool, p []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := len(l.chunks); n > 0 && l.chunks[n-1].fromServer == fromServer {
		l.chunks[n-1].data = append(l.chunks[n-1].data, p...)
		return
	}
	l.chunks = append(l.chunks, wireChunk{fromServer: fromServer, data: slices.Clone(p)})
}

// wirePacket is one MySQL packet as it went over the wire.
type wirePacket struct {
	fromServer bool
	seq        byte
	payload    []byte
}

// authPackets returns the connection phase: every packet up to and
// including the server's first OK or ERR.
func (l *wireLog) authPackets() ([]wirePacket, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var pkts []wirePacket
	for _, c := range l.chunks {
		data := c.data
		for len(data) > 0 {
			if len(data) < 4 {
				return pkts, fmt.Errorf("truncated packet header % x", data)
			}
			n := int(data[0]) | int(data[1])<<8 | int(data[2])<<16
			if len(data) < 4+n {
				return pkts, fmt.Errorf("truncated packet: header says %d bytes, %d recorded", n, len(data)-4)
			}
			p := wirePacket{fromServer: c.fromServer, seq: data[3], payload: data[4 : 4+n]}
			pkts = append(pkts, p)
			data = data[4+n:]
			if p.fromServer && n > 0 && (p.payload[0] == gmysql.OK_HEADER || p.payload[0] == gmysql.ERR_HEADER) {
				return pkts, nil
			}
		}
	}
	return pkts, errors.New("no OK or ERR from the server")
}

// describe names each packet of a connection phase, so that a test can
// state the exchange it expects.
func describe(pkts []wirePacket) []string {
	var out []string
	clientPackets := 0
	for _, p := range pkts {
		b := p.payload
		var s string
		switch {
		case !p.fromServer:
			clientPackets++
			switch {
			case clientPackets == 1:
				s = "C handshake-response"
			case len(b) == 1 && b[0] == 2:
				s = "C request-public-key"
			case len(b) == 256:
				// RSA-OAEP with a 2048-bit key: the password, encrypted.
				s = "C rsa-encrypted-password"
			case len(b) == 20:
				s = "C native-scramble"
			default:
				s = fmt.Sprintf("C %d bytes % x", len(b), b)
			}
		case len(b) == 0:
			s = "S empty"
		case b[0] == 10:
			s = "S greeting"
		case b[0] == gmysql.OK_HEADER:
			s = "S OK"
		case b[0] == gmysql.ERR_HEADER && len(b) >= 3:
			s = fmt.Sprintf("S ERR %d", binary.LittleEndian.Uint16(b[1:]))
		case b[0] == gmysql.EOF_HEADER:
			name, _, _ := bytes.Cut(b[1:], []byte{0})
			s = "S auth-switch " + string(name)
		case b[0] == gmysql.MORE_DATE_HEADER && len(b) == 2 && b[1] == gmysql.CACHE_SHA2_FAST_AUTH:
			s = "S fast-auth-ok"
		case b[0] == gmysql.MORE_DATE_HEADER && len(b) == 2 && b[1] == gmysql.CACHE_SHA2_FULL_AUTH:
			s = "S full-auth"
		case b[0] == gmysql.MORE_DATE_HEADER && bytes.HasPrefix(b[1:], []byte("-----BEGIN PUBLIC KEY-----")):
			s = "S public-key"
		default:
			s = fmt.Sprintf("S %d bytes % x", len(b), b)
		}
		out = append(out, s)
	}
	return out
}

// recordingConn copies everything read and written to a wireLog.
type recordingConn struct {
	net.Conn
	log             *wireLog
	readsFromServer bool // true on a client's connection
}

func (c *recordingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.log.add(c.readsFromServer, p[:n])
	}
	return n, err
}

func (c *recordingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if n > 0 {
		c.log.add(!c.readsFromServer, p[:n])
	}
	return n, err
}

// fakeHandler answers every SELECT with one row of fakeAnswer and every
// other statement with OK.
type fakeHandler struct{ gserver.EmptyHandler }

func (fakeHandler) HandleQuery(query string) (*gmysql.Result, error) {
	if len(query) < 6 || !bytes.EqualFold([]byte(query[:6]), []byte("SELECT")) {
		return &gmysql.Result{}, nil
	}
	rs, err := gmysql.BuildSimpleResultset([]string{"answer"}, [][]any{{fakeAnswer}}, false)
	if err != nil {
		return nil, err
	}
	return gmysql.NewResult(rs), nil
}

// fakeMySQL8 is a MySQL 8-like backend without TLS whose default
// authentication is caching_sha2_password, so that a client without TLS
// must fetch its RSA public key for full authentication. MariaDB has no
// such plugin.
type fakeMySQL8 struct {
	addr string
	// auths receives each connection's wire log once its connection
	// phase is over, in accept order.
	auths chan *wireLog
}

// startFakeMySQL8 starts a fakeMySQL8 with users sha2User (stored for
// caching_sha2_password) and nativeUser (mysql_native_password), and
// stops it when t ends.
func startFakeMySQL8(t *testing.T) *fakeMySQL8 {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatalf("rsa.GenerateKey: %v", err)
	}
	srv := gserver.NewServer("8.0.36-fake", gmysql.DEFAULT_COLLATION_ID, gmysql.AUTH_CACHING_SHA2_PASSWORD, key, nil)
	users := gserver.NewInMemoryAuthenticationHandler(gmysql.AUTH_CACHING_SHA2_PASSWORD)
	if err := users.AddUser(sha2User, sha2Pass); err != nil {
		t.Fatalf("AddUser(%s): %v", sha2User, err)
	}
	if err := users.AddUser(nativeUser, nativePass, gmysql.AUTH_NATIVE_PASSWORD); err != nil {
		t.Fatalf("AddUser(%s): %v", nativeUser, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	f := &fakeMySQL8{addr: ln.Addr().String(), auths: make(chan *wireLog, 16)}
	done := make(chan struct{})
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns = map[net.Conn]bool{}
	)
	serve := func(c net.Conn) {
		defer wg.Done()
		defer func() {
			mu.Lock()
			delete(conns, c)
			mu.Unlock()
			c.Close()
		}()
		log := &wireLog{}
		conn, err := srv.NewCustomizedConn(&recordingConn{Conn: c, log: log}, users, fakeHandler{})
		select {
		case f.auths <- log:
		case <-done:
			return
		}
		if err != nil {
			return // the client has had its ERR
		}
		for conn.HandleCommand() == nil {
		}
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns[c] = true
			mu.Unlock()
			wg.Add(1)
			go serve(c)
		}
	}()
	t.Cleanup(func() {
		close(done)
		ln.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return f
}

// nextAuth returns the wire log of the fake server's next connection.
func (f *fakeMySQL8) nextAuth(t *testing.T) *wireLog {
	t.Helper()
	select {
	case l := <-f.auths:
		return l
	case <-time.After(10 * time.Second):
		t.Fatalf("gave up after 10s waiting for a connection to the fake backend")
		return nil
	}
}

// TestSha2AuthThroughProxy logs in through mycached to a backend whose
// users authenticate with caching_sha2_password (and, for one user,
// mysql_native_password after an auth switch), and checks both what the
// client sees and the packets exchanged on each hop. No hop has TLS, so
// full authentication must fetch the server's RSA public key.
func TestSha2AuthThroughProxy(t *testing.T) {
	fake := startFakeMySQL8(t)
	p := startProxy(t, mysqlproxy.Config{Backend: fake.addr, BackendTLS: mysqlproxy.BackendTLSOff})

	fullAuth := []string{
		"S greeting", "C handshake-response", "S full-auth",
		"C request-public-key", "S public-key", "C rsa-encrypted-password",
	}
	fastAuth := []string{"S greeting", "C handshake-response", "S fast-auth-ok", "S OK"}
	nativeSwitch := []string{
		"S greeting", "C handshake-response",
		"S auth-switch " + gmysql.AUTH_NATIVE_PASSWORD, "C native-scramble",
	}
	// The steps run in order: the server's cache of caching_sha2
	// verifiers starts empty and is filled by the first good login.
	steps := []struct {
		name     string
		user     string
		pass     string
		wantCode uint16 // 0 means the login succeeds
		wantWire []string
	}{
		{"first login does full auth with a public-key request", sha2User, sha2Pass, 0, append(slices.Clone(fullAuth), "S OK")},
		{"second login does fast auth from the server's cache", sha2User, sha2Pass, 0, fastAuth},
		{"wrong password is denied after full auth", sha2User, "not-the-password", 1045, append(slices.Clone(fullAuth), "S ERR 1045")},
		{"login after a denied one is still fast", sha2User, sha2Pass, 0, fastAuth},
		{"native password user after an auth switch", nativeUser, nativePass, 0, append(slices.Clone(nativeSwitch), "S OK")},
		{"native password user with a wrong password", nativeUser, "nope", 1045, append(slices.Clone(nativeSwitch), "S ERR 1045")},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			ctx := context.Background()
			clientLog := &wireLog{}
			cfg := mysql.NewConfig()
			cfg.User, cfg.Passwd = st.user, st.pass
			cfg.Net, cfg.Addr = "tcp", p.addr
			cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
				c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				return &recordingConn{Conn: c, log: clientLog, readsFromServer: true}, nil
			}
			connector, err := mysql.NewConnector(cfg)
			if err != nil {
				t.Fatalf("NewConnector: %v", err)
			}
			db := sql.OpenDB(connector)
			defer db.Close()

			conn, loginErr := db.Conn(ctx)
			if loginErr == nil {
				defer conn.Close()
			}
			// The backend's log is taken first, whatever the outcome, so
			// that a failed step does not leave it for the next one.
			backendLog := fake.nextAuth(t)
			checkAuthWire(t, backendLog, clientLog, st.wantWire)

			if st.wantCode != 0 {
				if loginErr == nil {
					t.Fatalf("login as %s with password %q: got success, want error %d", st.user, st.pass, st.wantCode)
				}
				if got := mysqlErr(t, loginErr).Number; got != st.wantCode {
					t.Errorf("login error: got %d (%v), want %d", got, loginErr, st.wantCode)
				}
				return
			}
			if loginErr != nil {
				t.Fatalf("login as %s: %v", st.user, loginErr)
			}
			var got string
			if err := conn.QueryRowContext(ctx, "SELECT answer FROM anything").Scan(&got); err != nil {
				t.Fatalf("query after login: %v", err)
			}
			if got != fakeAnswer {
				t.Errorf("query after login: got %q, want %q", got, fakeAnswer)
			}
		})
	}
}

// checkAuthWire checks that the connection phase on both hops was the
// exchange want, and that past the greeting and handshake response (whose
// capability flags mycached rewrites) it was relayed byte for byte, with
// the same sequence ids since neither hop spends one on an SSL request.
func checkAuthWire(t *testing.T, backendLog, clientLog *wireLog, want []string) {
	t.Helper()
	backendPkts, backendErr := backendLog.authPackets()
	clientPkts, clientErr := clientLog.authPackets()
	if got := describe(backendPkts); backendErr != nil || !slices.Equal(got, want) {
		t.Errorf("backend hop (%v):\ngot  %q\nwant %q", backendErr, got, want)
	}
	if got := describe(clientPkts); clientErr != nil || !slices.Equal(got, want) {
		t.Errorf("client hop (%v):\ngot  %q\nwant %q", clientErr, got, want)
	}
	for i := 2; i < min(len(backendPkts), len(clientPkts)); i++ {
		b, c := backendPkts[i], clientPkts[i]
		if b.seq != c.seq || !bytes.Equal(b.payload, c.payload) {
			t.Errorf("packet %d (%s): backend hop seq %d % x, client hop seq %d % x",
				i, describe(backendPkts)[i], b.seq, b.payload, c.seq, c.payload)
		}
	}
}
