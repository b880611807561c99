package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	_ "github.com/go-sql-driver/mysql" // registers the "mysql" driver
)

// runQuery runs one query in a loop from -threads connections for
// -duration and prints one line: ops/s, p50 and p99 latency.
func runQuery(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("query", flag.ContinueOnError)
	dsn := fs.String("dsn", "", "go-sql-driver/mysql DSN")
	query := fs.String("query", "", "the SQL to run; every row is read")
	threads := fs.Int("threads", 1, "concurrent connections")
	duration := fs.Duration("duration", 10*time.Second, "how long to run")
	warmup := fs.Int("warmup", 1, "runs of the query per connection before timing, to fill caches")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if *dsn == "" || *query == "" || *threads < 1 {
		fmt.Fprintln(fs.Output(), "query: -dsn and -query are required, -threads must be positive")
		return errUsage
	}
	db, err := sql.Open("mysql", *dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(*threads)
	db.SetMaxIdleConns(*threads)
	for range *warmup {
		if err := drain(db.QueryContext(ctx, *query)); err != nil {
			return fmt.Errorf("query: warm-up: %w", err)
		}
	}
	all, elapsed, err := timedRun(ctx, *threads, *duration, func(ctx context.Context, _ int) error {
		return drain(db.QueryContext(ctx, *query))
	})
	if err != nil {
		return fmt.Errorf("query: %w", err)
	}
	fmt.Fprintf(stdout, "ops=%d seconds=%.2f ops_per_sec=%.1f p50_ms=%.3f p99_ms=%.3f\n",
		len(all), elapsed.Seconds(), float64(len(all))/elapsed.Seconds(), msf(pct(all, 50)), msf(pct(all, 99)))
	return nil
}

// timedRun runs op in a loop from n goroutines for d and returns the
// latency of every op, sorted, and the time the run took. op gets the
// goroutine's index and a context that ends with the run; an op that fails
// before then stops its goroutine, and the run returns the failures.
func timedRun(ctx context.Context, n int, d time.Duration, op func(ctx context.Context, i int) error) ([]time.Duration, time.Duration, error) {
	runCtx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	lats := make([][]time.Duration, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lats[i] = make([]time.Duration, 0, 1<<16)
			for runCtx.Err() == nil {
				t0 := time.Now()
				if err := op(runCtx, i); err != nil {
					if runCtx.Err() == nil {
						errs[i] = err
					}
					return
				}
				lats[i] = append(lats[i], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	all := slices.Concat(lats...)
	slices.Sort(all)
	return all, elapsed, errors.Join(errs...)
}

// drain reads every row, so that the client pays for the whole result.
func drain(rows *sql.Rows, err error) error {
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	vals := make([]sql.RawBytes, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
	}
	return rows.Err()
}

// pct returns the p-th percentile of sorted latencies, or 0 for none.
func pct(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100
	return sorted[max(i-1, 0)]
}

func msf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
