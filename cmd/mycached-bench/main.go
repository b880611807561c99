// Command mycached-bench holds the tools the benchmarks need beside
// sysbench: a plain TCP relay to measure mycached's relaying against, and
// a load generator for one query.
//
// Usage:
//
//	mycached-bench relay -listen 127.0.0.1:P -backend 127.0.0.1:Q
//	mycached-bench query -dsn DSN -query SQL [-threads N] [-duration D]
//
// examples/bench/relay.sh and examples/bench/cache.sh (make bench-relay,
// make bench-cache) drive them.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
)

const usage = `Usage:
  mycached-bench relay -listen ADDR -backend ADDR
      relay TCP connections with io.Copy, nothing else: the baseline cost
      of one extra hop
  mycached-bench query -dsn DSN -query SQL [-threads N] [-duration D]
      run one query from N clients for D and print ops/s, p50 and p99
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "relay":
		err = runRelay(ctx, args, os.Stderr)
	case "query":
		err = runQuery(ctx, args, os.Stdout)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(os.Stdout, usage)
		return
	default:
		fmt.Fprintf(os.Stderr, "mycached-bench: unknown command %q\n%s", cmd, usage)
		os.Exit(2)
	}
	if err != nil {
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		slog.Error("mycached-bench", "err", err)
		os.Exit(1)
	}
}

// errUsage means the flags were wrong and the flag package said so.
var errUsage = errors.New("mycached-bench: usage")
