// Command transparent-caching is a small shop backend on database/sql that
// shows mycached caching its reads without a code change: the same binary
// runs against MariaDB directly and through mycached, and only the DSN
// differs.
//
// It runs a workload loop of web-style requests (a product page, a
// customer's orders, the best sellers, and a stock update every few reads)
// and prints per-operation counts and latencies. When the DSN points at
// mycached, it also prints the hit ratio from SHOW MYCACHED STATUS.
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"time"

	_ "github.com/go-sql-driver/mysql" // registers the "mysql" driver
)

// config is the command line.
type config struct {
	dsn        string
	setup      bool
	duration   time.Duration
	ops        int
	threads    int
	writeEvery int
	products   int
	customers  int
	orders     int
}

func main() {
	var c config
	fs := flag.NewFlagSet("transparent-caching", flag.ContinueOnError)
	fs.StringVar(&c.dsn, "dsn", "root@tcp(127.0.0.1:3307)/shop?interpolateParams=true", "go-sql-driver/mysql DSN of mycached (or of MariaDB, to compare)")
	fs.BoolVar(&c.setup, "setup", false, "drop, create and seed the shop tables before the workload")
	fs.DurationVar(&c.duration, "duration", 5*time.Second, "how long the workload runs; 0 with -ops 0 runs only -setup")
	fs.IntVar(&c.ops, "ops", 0, "stop after this many operations in total instead of after -duration")
	fs.IntVar(&c.threads, "threads", 4, "concurrent clients")
	fs.IntVar(&c.writeEvery, "write-every", 20, "each client updates a product's stock once every this many reads; 0: never")
	fs.IntVar(&c.products, "products", 1000, "products created by -setup")
	fs.IntVar(&c.customers, "customers", 200, "customers created by -setup")
	fs.IntVar(&c.orders, "orders", 20000, "orders created by -setup")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if c.threads < 1 || c.writeEvery < 0 || c.products < 1 || c.customers < 1 || c.ops < 0 {
		fmt.Fprintln(os.Stderr, "transparent-caching: -threads, -products and -customers must be positive; -ops and -write-every not negative")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, c, os.Stdout); err != nil {
		slog.Error("transparent-caching", "err", err)
		os.Exit(1)
	}
}

// run sets up the schema if asked, runs the workload and prints its report
// to w. It fails when a request failed or a read after a write was stale.
func run(ctx context.Context, c config, w io.Writer) error {
	db, err := sql.Open("mysql", c.dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(c.threads + 1)
	db.SetMaxIdleConns(c.threads + 1)
	if err := db.PingContext(ctx); err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	if c.setup {
		if err := setup(ctx, db, c); err != nil {
			return err
		}
		fmt.Fprintf(w, "setup: %d products, %d customers, %d orders\n", c.products, c.customers, c.orders)
	}
	if c.duration <= 0 && c.ops == 0 {
		return nil
	}
	// The products table may hold more or fewer rows than the flags say
	// when -setup was run earlier with other values.
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM products").Scan(&c.products); err != nil {
		return fmt.Errorf("count products: %w", err)
	}
	before, cached := cacheStatus(ctx, db)
	res, err := runWorkload(ctx, db, c)
	if err != nil {
		return err
	}
	res.print(w)
	if cached {
		after, _ := cacheStatus(ctx, db)
		printCache(w, before, after)
	} else {
		fmt.Fprintln(w, "cache: SHOW MYCACHED STATUS not available (not connected through mycached, or the account is not one of its --admin-users)")
	}
	if res.stale > 0 {
		return fmt.Errorf("%d stale reads after a write: %w", res.stale, errStale)
	}
	if res.errors > 0 {
		return fmt.Errorf("%d requests failed: %w", res.errors, errFailed)
	}
	return nil
}

// Errors that make the run fail after its report is printed.
var (
	errStale  = errors.New("transparent-caching: stale read")
	errFailed = errors.New("transparent-caching: request failed")
)
