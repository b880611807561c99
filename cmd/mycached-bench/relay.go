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
)

// runRelay accepts on -listen and copies bytes both ways to a new
// connection to -backend, until ctx ends. It is deliberately the simplest
// relay Go allows, so that it measures the cost of the hop itself.
func runRelay(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("relay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:3308", "accept clients on this host:port")
	backend := fs.String("backend", "127.0.0.1:3306", "relay each client to this host:port")
	if err := fs.Parse(args); err != nil {
		return errUsage
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
			relay(ctx, &d, c, *backend)
		}()
	}
}

// relay copies between client and a new backend connection until either
// side closes.
func relay(ctx context.Context, d *net.Dialer, client net.Conn, backend string) {
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
