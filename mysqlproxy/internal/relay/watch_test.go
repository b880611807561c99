package relay

import (
	"errors"
	"log/slog"
	"net"
	"runtime"
	"strings"
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

// TestRateLog: lines past the limit in a second are dropped, and counted
// in one line once the second is over.
func TestRateLog(t *testing.T) {
	var b strings.Builder
	log := slog.New(slog.NewTextHandler(&b, nil))
	sec := int64(1)
	l := rateLog{limit: 3, clock: func() int64 { return sec }}
	n := 0
	for range 10 {
		if l.allow(log) {
			n++
		}
	}
	if n != 3 {
		t.Errorf("%d of 10 lines allowed in a second, want 3", n)
	}
	sec++ // the second is over
	if !l.allow(log) {
		t.Error("a line of the next second is dropped")
	}
	if !strings.Contains(b.String(), "dropped=7") {
		t.Errorf("the dropped lines are not counted: %q", b.String())
	}
}

// TestSweepNeverCutsACommand: the sweep may wake a session's wait for its
// client's next command just as the command comes. Whichever comes
// first, the command is read whole, and the wait after it has no
// deadline left behind.
func TestSweepNeverCutsACommand(t *testing.T) {
	client, server := tcpPair(t)
	s := &Session{Client: wire.NewConn(server)}
	cmd := []byte{5, 0, 0, 0, 0x03, 'S', 'E', 'L', '1'}
	swept := 0
	for i := range 300 {
		pause := time.Duration(i%7) * 30 * time.Microsecond
		done := make(chan struct{}, 2)
		go func() {
			time.Sleep(pause)
			_, _ = client.Write(cmd)
			done <- struct{}{}
		}()
		go func() {
			time.Sleep(time.Duration(i%5) * 40 * time.Microsecond)
			s.SweepIdle(time.Now())
			done <- struct{}{}
		}()
		err := s.awaitBusy(time.Now().Add(-2 * idleSweep))
		if errors.Is(err, errSwept) {
			swept++
			s.Client.WaitReadable(true)
		} else if err != nil {
			t.Fatalf("round %d: the wait failed: %v", i, err)
		}
		p, seq, err := s.Client.ReadCommand(nil, 1<<20)
		if err != nil || seq != 0 || string(p) != "\x03SEL1" {
			t.Fatalf("round %d: read %q (seq %d), %v; want the command whole", i, p, seq, err)
		}
		<-done
		<-done
	}
	if swept == 0 {
		t.Log("no wait was swept before its command came")
	}
	// Nothing is left to wake the next wait: it waits for the client.
	go func() {
		time.Sleep(50 * time.Millisecond)
		_, _ = client.Write(cmd)
	}()
	if err := s.awaitBusy(time.Now()); err != nil {
		t.Fatalf("a wait after the sweeps: %v", err)
	}
}
