//go:build unix

package wire

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// TestWaitReadableParks: while it waits, a plain socket's Conn holds no
// buffer; it returns when a packet comes, which then reads whole, and
// when the peer closes or the read deadline passes, which the read that
// follows reports.
func TestWaitReadableParks(t *testing.T) {
	a, b := pair(t)
	c := NewConn(a)
	defer c.Release()
	parked := make(chan bool, 1)
	go func() {
		time.Sleep(50 * time.Millisecond)
		parked <- true
		_, _ = b.Write([]byte{3, 0, 0, 0, 'a', 'b', 'c'})
	}()
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.WaitReadable(true)
	}()
	<-parked
	<-done
	if c.R == nil || c.W == nil {
		t.Fatal("the buffers were not taken back")
	}
	p, seq, err := c.ReadPacket(nil, 1<<10)
	if err != nil || seq != 0 || string(p) != "abc" {
		t.Fatalf("read after the wait: %q %d %v", p, seq, err)
	}
	// A deadline that passes ends the wait; the read says so.
	_ = a.SetReadDeadline(time.Now().Add(30 * time.Millisecond))
	c.WaitReadable(true)
	if _, _, err := c.ReadPacket(nil, 1<<10); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("after the deadline: %v, want a timeout", err)
	}
	_ = a.SetReadDeadline(time.Time{})
	// A close ends it; the read sees the end.
	go func() { time.Sleep(20 * time.Millisecond); b.Close() }()
	c.WaitReadable(false)
	if _, _, err := c.ReadPacket(nil, 1<<10); !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("after the peer closed: %v, want EOF", err)
	}
}

// TestWaitReadableKeepsReset: a peer that resets its connection while
// the Conn waits is read as a reset, not an orderly close: the wait
// consumes nothing, not even the socket's error.
func TestWaitReadableKeepsReset(t *testing.T) {
	a, b := pair(t)
	c := NewConn(a)
	defer c.Release()
	go func() {
		time.Sleep(20 * time.Millisecond)
		_ = b.(*net.TCPConn).SetLinger(0)
		b.Close()
	}()
	c.WaitReadable(true)
	if _, _, err := c.ReadPacket(nil, 1<<10); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("after the peer reset: %v, want ECONNRESET", err)
	}
}

// TestWaitReadableKeepsBuffered: bytes already read ahead, or not yet
// written, keep their buffers; the wait returns at once.
func TestWaitReadableKeepsBuffered(t *testing.T) {
	a, b := pair(t)
	c := NewConn(a)
	defer c.Release()
	_, _ = b.Write([]byte{1, 0, 0, 0, 'x', 1, 0, 0, 0, 'y'})
	if p, _, err := c.ReadPacket(nil, 1<<10); err != nil || string(p) != "x" {
		t.Fatalf("first packet: %q %v", p, err)
	}
	r := c.R
	c.WaitReadable(true)
	if c.R != r {
		t.Fatal("a reader holding a packet was given back")
	}
	if p, _, err := c.ReadPacket(nil, 1<<10); err != nil || string(p) != "y" {
		t.Fatalf("second packet: %q %v", p, err)
	}
	if _, err := c.WritePacket([]byte("z"), 1); err != nil {
		t.Fatal(err)
	}
	w := c.W
	c.ParkWriter()
	if c.W != w {
		t.Fatal("a writer holding bytes was given back")
	}
	if err := c.W.Flush(); err != nil {
		t.Fatal(err)
	}
	c.ParkWriter()
	if c.W != nil {
		t.Fatal("an empty writer was kept")
	}
	c.UnparkWriter()
	if c.W == nil {
		t.Fatal("the writer was not taken back")
	}
}
