package mysqlproxy_test

import (
	"context"
	"database/sql"
	"encoding/binary"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/mycached/mycached/mysqlproxy"
)

// commandGate relays connections to a backend, holding every command
// packet (sequence id 0) sent toward the backend until it is opened;
// connection-phase packets, and everything the backend sends, pass at
// once.
type commandGate struct {
	addr     string
	open     chan struct{}
	once     sync.Once
	held     chan struct{} // closed when a command was first held
	heldOnce sync.Once
}

func startCommandGate(t *testing.T, backend string) *commandGate {
	t.Helper()
	g := &commandGate{open: make(chan struct{}), held: make(chan struct{})}
	g.addr = newRelay(t, backend, g.up).addr()
	// Before the relay's own cleanup, which closes the connections.
	t.Cleanup(g.release)
	return g
}

// up copies packets from src to dst, holding commands until g opens.
func (g *commandGate) up(dst io.Writer, src io.Reader) {
	var h [4]byte
	for {
		if _, err := io.ReadFull(src, h[:]); err != nil {
			return
		}
		p := make([]byte, 4+int(binary.LittleEndian.Uint32(append(h[:3:3], 0))))
		copy(p, h[:])
		if _, err := io.ReadFull(src, p[4:]); err != nil {
			return
		}
		if h[3] == 0 {
			g.heldOnce.Do(func() { close(g.held) })
			<-g.open
		}
		if _, err := dst.Write(p); err != nil {
			return
		}
	}
}

func (g *commandGate) release() { g.once.Do(func() { close(g.open) }) }

// TestE2EConnectOKBeforeSetup checks that a client's connection phase
// through mycached takes no more round trips to the server than it does
// directly: the client gets its OK while the statements mycached runs
// to set the backend session up are still held on their way to the
// server. Drivers that pipeline their first statements behind the
// handshake give the whole exchange a short bound (MariaDB Connector/J:
// 500 ms), which a loaded server made mycached miss.
func TestE2EConnectOKBeforeSetup(t *testing.T) {
	t.Parallel()
	m := testenvShared(t)
	gate := startCommandGate(t, m.Addr)
	p := startProxy(t, mysqlproxy.Config{Backend: gate.addr})

	db := openDB(t, rootDSN(p.addr, "", ""))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	connected := make(chan error, 1)
	var conn *sql.Conn
	go func() {
		c, err := db.Conn(ctx)
		if err == nil {
			conn = c
		}
		connected <- err
	}()
	// The client's OK may come before mycached's statements reach the
	// gate, or after; it must come while they are held there.
	select {
	case err := <-connected:
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the client's connection phase waited for mycached's own statements to the server")
	}
	select {
	case <-gate.held:
	case <-ctx.Done():
		t.Fatal("mycached sent no statement of its own to set the session up")
	}
	gate.release()
	defer conn.Close()
	// The session was set up behind the OK: it knows its account.
	var user string
	if err := conn.QueryRowContext(ctx, "SELECT CURRENT_USER()").Scan(&user); err != nil || user != "root@%" && user != "root@localhost" && user != "root@127.0.0.1" {
		t.Fatalf("SELECT CURRENT_USER() after the set-up: %q, %v", user, err)
	}
}
