package testenv

import (
	"io"
	"net"
	"sync"
	"testing"
)

// BlackHole starts a TCP listener on a free loopback port that accepts
// connections and reads whatever is sent, but never answers: a server
// that hangs, as a memcached does behind a dead route or in a stopped
// process. It returns the listener's host:port and closes it, and every
// connection it accepted, when t ends.
func BlackHole(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testenv: black hole: %v", err)
	}
	AcceptAll(t, ln, func(c net.Conn) []net.Conn {
		go io.Copy(io.Discard, c)
		return []net.Conn{c}
	})
	return ln.Addr().String()
}

// AcceptAll accepts every connection ln takes and hands it to serve,
// which starts what it needs and returns the connections it opened (the
// accepted one among them), until t ends; then ln and those connections
// are closed. A nil return closes nothing more.
func AcceptAll(t testing.TB, ln net.Listener, serve func(net.Conn) []net.Conn) {
	var mu sync.Mutex // protects conns
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			opened := serve(c)
			mu.Lock()
			conns = append(conns, opened...)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
}
