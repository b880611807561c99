// Command mycached-bench holds the tools the benchmarks need beside
// sysbench: a plain TCP relay to measure mycached's relaying against, and
// a load generator for one query.
//
// Usage:
//
//	mycached-bench relay -listen 127.0.0.1:P -backend 127.0.0.1:Q [-delay D]
//	mycached-bench query -dsn DSN -query SQL [-threads N] [-duration D]
//	mycached-bench load -dsn DSN -query SQL [-threads N] [-duration D] [-once] ...
//	mycached-bench mix -dsn DSN [-admin-dsn DSN] [-read-pct P] ...
//	mycached-bench sysbench < sysbench-output
//	mycached-bench report -in results.jsonl [-out report.md] [-png chart.png]
//
// examples/bench/relay.sh and examples/bench/cache.sh (make bench-relay,
// make bench-cache) and examples/bench/bench.sh (make bench) drive them.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
)

const usage = `Usage:
  mycached-bench relay -listen ADDR -backend ADDR [-delay D]
      relay TCP connections with io.Copy, nothing else: the baseline cost
      of one extra hop; -delay holds each chunk D in each direction, as a
      network would
  mycached-bench query -dsn DSN -query SQL [-threads N] [-duration D]
      run one query from N clients for D and print ops/s, p50 and p99
  mycached-bench kv -dsn DSN [-memcached ADDR] -target sql|memcached [-clients N] [-duration D] [-keys N]
      read one kv pair from N clients for D, as SELECT "key" through
      mycached or as a direct gomemcache Get, and print ops/s, p50 and p99;
      without -memcached, mycached keeps the pairs in L1
      (examples/bench/kv.sh, make bench-kv)
  mycached-bench load -dsn DSN -query SQL [-threads N] [-duration D]
        [-id-min A -id-max B] [-prepared] [-warm] [-once] [-status-dsn DSN]
      run one query from N pinned connections, a ? taking a random id, and
      print ops/s, percentiles and a histogram as JSON; -once releases every
      connection at the same moment and -status-dsn counts what the backend
      executed (Com_select)
  mycached-bench mix -dsn DSN [-admin-dsn DSN] [-threads N] [-hot ROWS]
        [-read-pct P] [-duration D]
      read and write a hot set, checking every read of a row this client
      wrote against its last acknowledged write; prints JSON with the stale
      reads, and the hit ratio and invalidations/s from -admin-dsn
  mycached-bench staleness -direct DSN -via DSN,DSN [-rate N] [-readers N] [-duration D]
      write one row directly at N writes/s and read it through every
      sidecar as fast as they answer; print, as JSON, how long after each
      write's OK the first read through a sidecar showed it
  mycached-bench sysbench
      read sysbench --histogram=on output on stdin and print it as JSON
  mycached-bench report -in RESULTS [-out report.md] [-png chart.png] [-header FILE]
      write the Markdown report and the PNG chart of a make bench run

MYCACHED_BENCH_CPUPROFILE=FILE writes a CPU profile of the load generator
itself to FILE, to see what the client side of a measurement costs.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if f := os.Getenv("MYCACHED_BENCH_CPUPROFILE"); f != "" {
		out, err := os.Create(f)
		if err == nil {
			err = pprof.StartCPUProfile(out)
		}
		if err != nil {
			slog.Error("mycached-bench: cpu profile", "err", err)
			os.Exit(1)
		}
		defer func() { pprof.StopCPUProfile(); out.Close() }()
	}
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "relay":
		err = runRelay(ctx, args, os.Stderr)
	case "query":
		err = runQuery(ctx, args, os.Stdout)
	case "kv":
		err = runKV(ctx, args, os.Stdout)
	case "load":
		err = runLoad(ctx, args, os.Stdout, os.Stderr)
	case "mix":
		err = runMix(ctx, args, os.Stdout, os.Stderr)
	case "staleness":
		err = runStaleness(ctx, args, os.Stdout, os.Stderr)
	case "sysbench":
		err = runSysbench(args, os.Stdin, os.Stdout, os.Stderr)
	case "report":
		err = runReport(args, os.Stdout, os.Stderr)
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
