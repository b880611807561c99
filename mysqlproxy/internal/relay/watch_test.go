package relay

import (
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/mycached/mycached/mysqlproxy/internal/wire"
)

// tcpPair returns both ends of a loopback TCP connection.
func tcpPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	a, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// A server that ends an idle session wakes the backend's watcher through
// the poller, but the watcher's goroutine may run after the client's next
// command has come in. A command that came after the session waited
// (peekAfter) must still find the session ended.
func TestBackendEndedBeforeWatcherRuns(t *testing.T) {
	backend, server := tcpPair(t)
	client, _ := tcpPair(t)
	s := &Session{Backend: wire.NewConn(backend), Client: wire.NewConn(client)}
	s.backendWatch = watcher{c: s.Backend, event: s.backendEvent}
	defer s.backendWatch.stop()
	s.backendWatch.arm()
	for deadline := time.Now().Add(5 * time.Second); !s.backendWatch.peeking(); {
		if time.Now().After(deadline) {
			t.Fatal("the watcher never waited on the backend")
		}
		time.Sleep(time.Millisecond)
	}
	s.waitedLong = true
	// With one P, the watcher's goroutine cannot run before this one
	// blocks or yields: the check comes first, as it may under load.
	procs := runtime.GOMAXPROCS(1)
	server.Close()
	ended, dead := s.BackendEnded(), s.Dead()
	runtime.GOMAXPROCS(procs)
	if dead {
		t.Skip("the watcher ran first: nothing to tell")
	}
	if !ended {
		t.Error("a command that came after a wait was answered on a session the server had ended")
	}
}
