package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"syscall"
	"time"
)

// runRelay accepts on -listen and copies bytes both ways to a new
// connection to -backend, until ctx ends. It is deliberately the simplest
// relay Go allows, so that it measures the cost of the hop itself. With
// -delay it holds every chunk that long in each direction, which makes a
// loopback server look like one across a network.
func runRelay(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("relay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:3308", "accept clients on this host:port")
	backend := fs.String("backend", "127.0.0.1:3306", "relay each client to this host:port")
	delay := fs.Duration("delay", 0, "hold every chunk this long in each direction (0: none)")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	half := copyHalf
	if *delay > 0 {
		half = func(dst, src net.Conn) { delayedHalf(dst, src, *delay) }
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("relay: %w", err)
	}
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	var d net.Dialer
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("relay: %w", err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			relay(ctx, &d, c, *backend, half)
		}()
	}
}

// relay copies between client and a new backend connection until either
// side closes.
func relay(ctx context.Context, d *net.Dialer, client net.Conn, backend string, copyHalf func(dst, src net.Conn)) {
	defer client.Close()
	b, err := d.DialContext(ctx, "tcp", backend)
	if err != nil {
		slog.Warn("relay: dial backend", "backend", backend, "err", err)
		return
	}
	defer b.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		copyHalf(client, b)
	}()
	copyHalf(b, client)
	<-done
}

// copyHalf copies src to dst and then half-closes dst, so that the other
// direction still drains; errors just end the copy, as for any relay.
func copyHalf(dst, src net.Conn) {
	if _, err := io.Copy(dst, src); err != nil && !errors.Is(err, net.ErrClosed) {
		slog.Debug("relay: copy", "err", err)
	}
	if tc, ok := dst.(*net.TCPConn); ok {
		tc.CloseWrite()
	} else {
		dst.Close()
	}
}

// chunk is bytes read at a time, on their way.
type chunk struct {
	due time.Time
	b   []byte
}

// delayedHalf is copyHalf with every chunk held for delay from the moment
// it was read: latency, not bandwidth, the way a network adds it.
func delayedHalf(dst, src net.Conn, delay time.Duration) {
	q := make(chan chunk, 1024)
	go func() {
		defer close(q)
		for {
			b := make([]byte, 64<<10)
			n, err := src.Read(b)
			if n > 0 {
				q <- chunk{due: time.Now().Add(delay), b: b[:n]}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range q {
		if d := time.Until(c.due); d > 0 {
			sleepPrecise(d)
		}
		if _, err := dst.Write(c.b); err != nil {
			break
		}
	}
	for range q {
	}
	if tc, ok := dst.(*net.TCPConn); ok {
		tc.CloseWrite()
	} else {
		dst.Close()
	}
}

// sleepPrecise waits about d. The runtime's timers round sub-millisecond
// waits up to a millisecond here, and spinning would take a CPU from the
// servers being measured, so the goroutine sleeps in the system call,
// whose timer is precise to tens of microseconds.
func sleepPrecise(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for {
		var rem syscall.Timespec
		if err := syscall.Nanosleep(&ts, &rem); err != syscall.EINTR {
			return
		}
		ts = rem
	}
}
