package mysqlproxy_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/mycached/mycached/mysqlproxy"
	"github.com/mycached/mycached/mysqlproxy/internal/testenv"
)

// TestE2EFaultBackendUnreachable points the proxy at a closed port: the
// client gets a MySQL error saying so, at once, not a hang or a bare close.
func TestE2EFaultBackendUnreachable(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	p := startProxy(t, mysqlproxy.Config{Backend: closed, ConnectTimeout: 2 * time.Second})

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = openDB(t, rootDSN(p.addr, "", "")).PingContext(ctx)
	if ctx.Err() != nil {
		t.Fatalf("ping through a proxy whose backend is down: no answer in 10s")
	}
	me := mysqlErr(t, err)
	if me.Number != 1429 || !strings.Contains(me.Message, "unreachable") || !strings.Contains(me.Message, closed) {
		t.Errorf("ping with the backend down: got %d %q, want 1429 naming %s as unreachable", me.Number, me.Message, closed)
	}

	// MariaDB Connector/C reads a client library's code in an ERR before
	// the handshake as a malformed packet (2027); it shows a server's.
	host, port, _ := net.SplitHostPort(p.addr)
	out, err := exec.Command("mariadb", "-h", host, "-P", port, "-uroot", "-p"+rootPass, "--connect-timeout=10", "-e", "SELECT 1").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "unreachable") || strings.Contains(string(out), "2027") {
		t.Errorf("mariadb CLI with the backend down: got %v %q, want an error saying the backend is unreachable", err, out)
	}
}

// TestE2EFaultBackendKilled kills a private MariaDB while a query runs
// through the proxy, then restarts it: the client gets an error promptly,
// new clients get "unreachable" while it is down, and the same proxy
// serves new connections once it is back.
func TestE2EFaultBackendKilled(t *testing.T) {
	t.Parallel()
	m, err := testenv.StartMariaDB(testenv.MariaDBOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr, ConnectTimeout: 2 * time.Second})
	ctx := context.Background()
	pool := openDB(t, rootDSN(p.addr, "", ""))
	victim, err := pool.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer victim.Close()

	done := make(chan error, 1)
	go func() {
		var v int
		done <- victim.QueryRowContext(ctx, "SELECT SLEEP(20) /* killed-backend */").Scan(&v)
	}()
	waitForQuery(t, m, "killed-backend")
	if err := m.Kill(); err != nil {
		t.Fatalf("kill MariaDB: %v", err)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Fatalf("SELECT SLEEP(20) with the backend killed: got a row, want an error")
		}
		// The proxy tells the client what happened, as 2013 "lost
		// connection"; a client that reads its own EOF first may report
		// a bad connection instead, which is an error all the same.
		if me, ok := errors.AsType[*mysql.MySQLError](err); ok && (me.Number != 2013 || !strings.Contains(me.Message, "lost connection")) {
			t.Errorf("SELECT SLEEP(20) with the backend killed: got %d %q, want 2013 lost connection", me.Number, me.Message)
		}
		t.Logf("client saw: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatalf("SELECT SLEEP(20) still waiting 10s after the backend was killed")
	}

	// While it is down, a new client is told so.
	down := openDB(t, rootDSN(p.addr, "", ""))
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err = down.PingContext(pctx)
	cancel()
	if me := mysqlErr(t, err); me.Number != 1429 {
		t.Errorf("connect with the backend down: got %d %q, want 1429", me.Number, me.Message)
	}

	if err := m.Restart(); err != nil {
		t.Fatalf("restart MariaDB: %v", err)
	}
	fresh := openDB(t, rootDSN(p.addr, "", ""))
	var got string
	if err := fresh.QueryRowContext(ctx, "SELECT CONCAT('back ', 1 + 1)").Scan(&got); err != nil || got != "back 2" {
		t.Fatalf("query through the same proxy after restart: got %q, %v; want \"back 2\"", got, err)
	}
}

// TestE2EFaultClientDisconnect closes a client's TCP connection after one
// row of a large result: the proxy must close the backend connection too,
// so the backend thread goes away.
func TestE2EFaultClientDisconnect(t *testing.T) {
	t.Parallel()
	m, p := sharedProxy(t)
	var mu sync.Mutex
	var conns []net.Conn
	network := "mcraw" + strconv.FormatInt(time.Now().UnixNano(), 36)
	mysql.RegisterDialContext(network, func(ctx context.Context, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err == nil {
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
		return c, err
	})
	pool := openDB(t, fmt.Sprintf("root:%s@%s(%s)/%s", rootPass, network, p.addr, testenv.TestDatabase))
	ctx := context.Background()
	c, err := pool.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	id := connID(t, c)

	rows, err := c.QueryContext(ctx, "SELECT seq, REPEAT('x', 200) FROM seq_1_to_5000000")
	if err != nil {
		t.Fatal(err)
	}
	if !rows.Next() {
		t.Fatalf("first row of a large result: %v", rows.Err())
	}
	mu.Lock()
	for _, nc := range conns {
		nc.Close()
	}
	mu.Unlock()
	rows.Close()
	waitFor(t, 15*time.Second, fmt.Sprintf("backend thread %d to go after its client left", id), func() bool {
		return !processExists(t, m, id)
	})
}

// readAllClosed reads c until the proxy closes it, and fails t if that
// does not happen within d.
func readAllClosed(t testing.TB, c net.Conn, d time.Duration) []byte {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(d))
	b, err := io.ReadAll(c)
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		t.Fatalf("the proxy kept the connection open for %v after a malformed packet (read %x)", d, b)
	}
	return b
}

// readGreeting reads the proxy's relayed greeting from a raw connection.
func readGreeting(t testing.TB, c net.Conn) []byte {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var h [4]byte
	if _, err := io.ReadFull(c, h[:]); err != nil {
		t.Fatalf("greeting header: %v", err)
	}
	p := make([]byte, int(h[0])|int(h[1])<<8|int(h[2])<<16)
	if _, err := io.ReadFull(c, p); err != nil {
		t.Fatalf("greeting: %v", err)
	}
	if len(p) == 0 || p[0] != 10 {
		t.Fatalf("greeting: got %x, want protocol 10", p)
	}
	return p
}

// TestE2EFaultMalformedPackets sends garbage at different points of a
// connection: the proxy closes that connection, frees its backend
// connection, and keeps serving others.
func TestE2EFaultMalformedPackets(t *testing.T) {
	t.Parallel()
	m, p := sharedProxy(t)
	dial := func(t *testing.T) net.Conn {
		c, err := net.Dial("tcp", p.addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	handshakeCases := []struct {
		name string
		send []byte
	}{
		{"garbage handshake response", []byte{10, 0, 0, 1, 'g', 'a', 'r', 'b', 'a', 'g', 'e', '!', '!', 0}},
		{"ssl request without a proxy certificate", append([]byte{32, 0, 0, 1, 0x00, 0xaa, 0xff, 0xff, 0, 0, 0, 1, 45}, make([]byte, 23)...)},
		{"protocol 3.20 response", append([]byte{40, 0, 0, 1, 0x05, 0x00, 0, 0, 0, 0, 0, 0, 45}, make([]byte, 31)...)},
		{"empty packet", []byte{0, 0, 0, 1}},
		{"header then hang up", []byte{0xff, 0xff, 0x00, 1, 1, 2, 3}},
	}
	for _, tc := range handshakeCases {
		t.Run(tc.name, func(t *testing.T) {
			c := dial(t)
			g := readGreeting(t, c)
			// The connection id follows the NUL-terminated server version.
			i := strings.IndexByte(string(g[1:]), 0) + 2
			id := int64(g[i]) | int64(g[i+1])<<8 | int64(g[i+2])<<16 | int64(g[i+3])<<24
			if _, err := c.Write(tc.send); err != nil {
				t.Fatal(err)
			}
			if tc.name == "header then hang up" {
				c.(*net.TCPConn).CloseWrite()
			}
			readAllClosed(t, c, 10*time.Second)
			waitFor(t, 10*time.Second, "the backend connection to go", func() bool { return !processExists(t, m, id) })
		})
	}

	commandCases := []struct {
		name   string
		seq    byte
		packet []byte
	}{
		// The server's answer to it is TestMalformedPacketsAnswerAsServer's;
		// an empty command gets an error there, and the session goes on.
		{"command out of sequence", 3, []byte{0x03, 'S', 'E', 'L', 'E', 'C', 'T', ' ', '1'}},
	}
	for _, tc := range commandCases {
		t.Run(tc.name, func(t *testing.T) {
			c := dialRaw(t, p.addr, "root", rootPass, "", true)
			id := int64(c.GetConnectionID())
			if err := c.Ping(); err != nil {
				t.Fatal(err)
			}
			c.ResetSequence()
			c.Sequence = tc.seq
			if err := c.WritePacket(append(make([]byte, 4), tc.packet...)); err != nil {
				t.Fatal(err)
			}
			if resp, err := c.ReadPacket(); err == nil {
				t.Errorf("after a malformed command: got packet %x, want the connection closed", resp)
			}
			waitFor(t, 10*time.Second, "the backend connection to go", func() bool { return !processExists(t, m, id) })
		})
	}

	// Everyone else is still served.
	var one int
	if err := openDB(t, rootDSN(p.addr, "", "")).QueryRow("SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("query through the proxy after malformed clients: got %d, %v", one, err)
	}
}

// TestShutdownLetsTransactionsEnd: a session idle inside a transaction
// when the drain begins, and one busy with a statement of a transaction,
// go on until they COMMIT (within the drain): the transactions' writes
// are kept. Sessions outside a transaction are closed.
func TestShutdownLetsTransactionsEnd(t *testing.T) {
	t.Parallel()
	m := testenvShared(t)
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr})
	db := m.NewDatabase(t)
	m.Exec(t, "CREATE TABLE "+db+".t (id INT PRIMARY KEY)")
	ctx := context.Background()
	pool := openDB(t, rootDSN(p.addr, db, ""))
	idleTx, busyTx, idle := conn(t, pool), conn(t, pool), conn(t, pool)
	execConn(t, idleTx, "BEGIN")
	execConn(t, idleTx, "INSERT INTO t VALUES (1)")
	execConn(t, busyTx, "BEGIN")
	if err := idle.PingContext(ctx); err != nil {
		t.Fatal(err)
	}
	busyDone := make(chan error, 1)
	go func() {
		_, err := busyTx.ExecContext(ctx, "INSERT INTO t SELECT 2 FROM (SELECT SLEEP(1)) s")
		busyDone <- err
	}()
	time.Sleep(300 * time.Millisecond) // the busy statement is under way
	shut := make(chan error, 1)
	go func() {
		sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		shut <- p.srv.Shutdown(sctx)
	}()
	time.Sleep(300 * time.Millisecond) // the drain has begun
	hs := httptest.NewServer(p.srv.AdminHandler())
	defer hs.Close()
	if resp, err := hs.Client().Get(hs.URL + "/healthz"); err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("/healthz during the drain: %v, %v; want 503", resp, err)
	} else {
		resp.Body.Close()
	}
	if err := idle.PingContext(ctx); err == nil {
		t.Error("a session outside a transaction is still served during the drain")
	}
	if err := <-busyDone; err != nil {
		t.Fatalf("the busy transaction's statement: %v", err)
	}
	execConn(t, busyTx, "COMMIT")
	execConn(t, idleTx, "COMMIT")
	if err := <-shut; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if got := m.QueryString(t, "SELECT GROUP_CONCAT(id ORDER BY id) FROM "+db+".t"); got != "1,2" {
		t.Errorf("after the drain, the table holds %q, want both transactions' rows 1,2", got)
	}
}

// TestE2EShutdown calls Shutdown with a statement in flight: the statement
// completes, Shutdown returns, idle clients are disconnected and new
// connections are refused.
func TestE2EShutdown(t *testing.T) {
	t.Parallel()
	m, p := sharedProxy(t)
	ctx := context.Background()
	pool := openDB(t, rootDSN(p.addr, "", ""))
	busy, err := pool.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	idle, err := pool.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	if err := idle.PingContext(ctx); err != nil {
		t.Fatal(err)
	}

	marker := fmt.Sprintf("shutdown-%d", time.Now().UnixNano())
	type result struct {
		v   int
		err error
	}
	queried := make(chan result, 1)
	go func() {
		var r result
		r.err = busy.QueryRowContext(ctx, "SELECT SLEEP(1) /* "+marker+" */").Scan(&r.v)
		queried <- r
	}()
	waitForQuery(t, m, marker)

	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := p.srv.Shutdown(sctx); err != nil {
		t.Errorf("Shutdown with one statement in flight: got %v, want nil", err)
	}
	select {
	case r := <-queried:
		if r.err != nil || r.v != 0 {
			t.Errorf("statement in flight during Shutdown: got %d, %v; want 0 and no error", r.v, r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("statement in flight during Shutdown: no answer 10s after Shutdown returned")
	}
	if err := idle.PingContext(ctx); err == nil {
		t.Errorf("idle connection after Shutdown: ping succeeded, want the connection closed")
	}
	if c, err := net.DialTimeout("tcp", p.addr, 5*time.Second); err == nil {
		c.Close()
		t.Errorf("dial %s after Shutdown: connected, want refused", p.addr)
	}
}
