package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// runStaleness writes one row directly to MariaDB at a steady rate and
// reads it through every sidecar as fast as they answer, and reports how
// long after each write's OK the first read through a sidecar showed it:
// how stale a cached read can be when writes bypass mycached.
func runStaleness(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("staleness", flag.ContinueOnError)
	fs.SetOutput(stderr)
	directDSN := fs.String("direct", "", "MariaDB DSN the writes go to")
	via := fs.String("via", "", "comma-separated DSNs of the sidecars the reads go through")
	rate := fs.Int("rate", 100, "writes per second")
	readers := fs.Int("readers", 2, "reading connections per sidecar")
	duration := fs.Duration("duration", 10*time.Second, "how long to write")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if *directDSN == "" || *via == "" || *rate < 1 || *readers < 1 {
		fmt.Fprintln(stderr, "staleness: -direct and -via are required; -rate and -readers must be positive")
		return errUsage
	}
	direct, err := sql.Open("mysql", *directDSN)
	if err != nil {
		return err
	}
	defer direct.Close()
	if _, err := direct.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS staleness (id INT PRIMARY KEY, v BIGINT NOT NULL)"); err != nil {
		return err
	}
	if _, err := direct.ExecContext(ctx, "REPLACE INTO staleness VALUES (1, 0)"); err != nil {
		return err
	}
	var sidecars []*sql.DB
	for _, dsn := range strings.Split(*via, ",") {
		db, err := sql.Open("mysql", dsn)
		if err != nil {
			return err
		}
		defer db.Close()
		db.SetMaxIdleConns(*readers)
		sidecars = append(sidecars, db)
	}
	st, err := staleness(ctx, direct, sidecars, *rate, *readers, *duration)
	if err != nil {
		return err
	}
	fmt.Fprintln(stderr, summaryLine(st)+"  "+notes(st))
	return json.NewEncoder(stdout).Encode(st)
}

// staleRun is what one staleness run shares between its writer and its
// readers.
type staleRun struct {
	mu   sync.Mutex  // protects the fields below
	oks  []time.Time // oks[v] is when the write of v was acknowledged
	seen []int64     // per sidecar, the highest v a read showed
	lats []time.Duration
}

// observe records that a read through sidecar i, done at t, showed v.
func (r *staleRun) observe(i int, v int64, t time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for w := r.seen[i] + 1; w <= v && w < int64(len(r.oks)); w++ {
		if !r.oks[w].IsZero() {
			r.lats = append(r.lats, max(t.Sub(r.oks[w]), 0))
		}
	}
	r.seen[i] = max(r.seen[i], v)
}

func staleness(ctx context.Context, direct *sql.DB, sidecars []*sql.DB, rate, readers int, d time.Duration) (Stats, error) {
	n := int(d.Seconds()*float64(rate)) + 1
	run := &staleRun{oks: make([]time.Time, n+1), seen: make([]int64, len(sidecars))}
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	var readErrs atomic.Int64
	for i, db := range sidecars {
		for range readers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for rctx.Err() == nil {
					var v int64
					if err := db.QueryRowContext(rctx, "SELECT v FROM staleness WHERE id = 1").Scan(&v); err != nil {
						if rctx.Err() == nil {
							readErrs.Add(1)
						}
						continue
					}
					run.observe(i, v, time.Now())
				}
			}()
		}
	}
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	start := time.Now()
	var errs int64
	for v := 1; v <= n; v++ {
		select {
		case <-ctx.Done():
			return Stats{}, ctx.Err()
		case <-tick.C:
		}
		if _, err := direct.ExecContext(ctx, "UPDATE staleness SET v = ? WHERE id = 1", v); err != nil {
			errs++
			continue
		}
		run.mu.Lock()
		run.oks[v] = time.Now()
		run.mu.Unlock()
	}
	// The last writes get a second to show before the readers stop.
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		run.mu.Lock()
		done := true
		for _, s := range run.seen {
			done = done && s >= int64(n)
		}
		run.mu.Unlock()
		if done {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	stop()
	wg.Wait()
	run.mu.Lock()
	defer run.mu.Unlock()
	missing := 0
	for _, s := range run.seen {
		missing += n - int(s)
	}
	st := statsOf(run.lats, time.Since(start), errs)
	st.Extra = map[string]float64{"writes": float64(n), "never_seen": float64(missing),
		"sidecars": float64(len(sidecars)), "read_errors": float64(readErrs.Load())}
	return st, nil
}
