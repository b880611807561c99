package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// mixConfig is what the mix command was asked to do.
type mixConfig struct {
	dsn, adminDSN, table string
	threads, hot         int
	readPct              float64
	duration             time.Duration
	stderr               io.Writer // where errors are reported
}

// runMix reads and writes a hot set of rows from -threads connections and
// checks every read of a row that this run wrote against the last write
// that was acknowledged. Client i owns the rows whose id mod -threads is
// i, so that no one else writes them and its last acknowledged write is
// the only right answer. It prints a Stats object whose Extra holds the
// stale reads, the checked reads and, with -admin-dsn (a mycached DSN of
// an admin user), the hit ratio and invalidations per second from SHOW
// MYCACHED STATUS.
func runMix(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mix", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := mixConfig{stderr: stderr}
	fs.StringVar(&c.dsn, "dsn", "", "go-sql-driver/mysql DSN")
	fs.StringVar(&c.adminDSN, "admin-dsn", "", "mycached DSN for SHOW MYCACHED STATUS (default: none)")
	fs.StringVar(&c.table, "table", "mix", "table of (id INT PRIMARY KEY, val BIGINT) with ids 1..-hot")
	fs.IntVar(&c.threads, "threads", 8, "concurrent connections")
	fs.IntVar(&c.hot, "hot", 1000, "rows in the hot set")
	fs.Float64Var(&c.readPct, "read-pct", 90, "percentage of operations that are reads")
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "how long to run")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if c.dsn == "" || c.threads < 1 || c.hot < c.threads {
		fmt.Fprintln(stderr, "mix: -dsn is required, -hot must be at least -threads")
		return errUsage
	}
	st, err := mix(ctx, c)
	if err != nil {
		return err
	}
	fmt.Fprintln(stderr, summaryLine(st)+"  "+notes(st))
	return json.NewEncoder(stdout).Encode(st)
}

// mixClient is one connection and what it knows it wrote.
type mixClient struct {
	id      int
	conn    *sql.Conn
	last    map[int]int64 // row id -> last acknowledged value
	lats    []time.Duration
	reads   int64
	writes  int64
	checked int64
	stale   int64
	errs    int64
}

func mix(ctx context.Context, c mixConfig) (Stats, error) {
	db, err := sql.Open("mysql", c.dsn)
	if err != nil {
		return Stats{}, err
	}
	defer db.Close()
	db.SetMaxOpenConns(c.threads)
	clients := make([]*mixClient, c.threads)
	for i := range clients {
		conn, err := db.Conn(ctx)
		if err != nil {
			return Stats{}, fmt.Errorf("mix: connect: %w", err)
		}
		defer conn.Close()
		clients[i] = &mixClient{id: i, conn: conn, last: map[int]int64{}}
	}
	before, err := mycachedStatus(ctx, c.adminDSN)
	if err != nil {
		return Stats{}, err
	}
	runCtx, cancel := context.WithTimeout(ctx, c.duration)
	defer cancel()
	read := "SELECT val FROM " + c.table + " WHERE id = ?"
	write := "UPDATE " + c.table + " SET val = ? WHERE id = ?"
	var firstErr atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for _, cl := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(cl.id)))
			var seq int64
			for runCtx.Err() == nil {
				t0 := time.Now()
				var err error
				if rng.Float64()*100 < c.readPct {
					err = cl.read(runCtx, read, 1+rng.IntN(c.hot), c.threads)
				} else {
					// A row this client owns: id ≡ client (mod threads).
					row := cl.id + c.threads*rng.IntN(c.hot/c.threads)
					if row == 0 {
						row = c.threads
					}
					seq++
					err = cl.write(runCtx, write, row, int64(cl.id)<<40|seq)
				}
				if err != nil {
					if runCtx.Err() != nil {
						return
					}
					cl.errs++
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				cl.lats = append(cl.lats, time.Since(t0))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	var all []time.Duration
	var reads, writes, checked, stale, errs int64
	for _, cl := range clients {
		all = append(all, cl.lats...)
		reads, writes, checked, stale, errs = reads+cl.reads, writes+cl.writes, checked+cl.checked, stale+cl.stale, errs+cl.errs
	}
	if e := firstErr.Load(); e != nil {
		fmt.Fprintf(c.stderr, "mix: %d errors, the first: %s\n", errs, e)
	}
	st := statsOf(all, elapsed, errs)
	st.Extra = map[string]float64{
		"reads": float64(reads), "writes": float64(writes),
		"checked_reads": float64(checked), "stale_reads": float64(stale),
	}
	after, err := mycachedStatus(ctx, c.adminDSN)
	if err != nil {
		return Stats{}, err
	}
	addCacheDeltas(&st, before, after, elapsed)
	return st, nil
}

// read reads row; when this client owns the row and has written it, the
// value must be the last one it wrote.
func (cl *mixClient) read(ctx context.Context, query string, row, threads int) error {
	var v int64
	if err := cl.conn.QueryRowContext(ctx, query, row).Scan(&v); err != nil {
		return err
	}
	cl.reads++
	if row%threads == cl.id%threads {
		if want, ok := cl.last[row]; ok {
			cl.checked++
			if v != want {
				cl.stale++
			}
		}
	}
	return nil
}

func (cl *mixClient) write(ctx context.Context, query string, row int, v int64) error {
	if _, err := cl.conn.ExecContext(ctx, query, v, row); err != nil {
		// The write may or may not have happened: forget the row, so that
		// no read of it is judged against a value that is not known.
		delete(cl.last, row)
		return err
	}
	cl.writes++
	cl.last[row] = v
	return nil
}

// mycachedStatus returns SHOW MYCACHED STATUS as numbers, or nil when dsn
// is empty.
func mycachedStatus(ctx context.Context, dsn string) (map[string]float64, error) {
	if dsn == "" {
		return nil, nil
	}
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, "SHOW MYCACHED STATUS")
	if err != nil {
		return nil, fmt.Errorf("mycached-bench: SHOW MYCACHED STATUS: %w", err)
	}
	defer rows.Close()
	m := map[string]float64{}
	for rows.Next() {
		var name, v string
		if err := rows.Scan(&name, &v); err != nil {
			return nil, err
		}
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			m[name] = f
		}
	}
	return m, errors.Join(rows.Err(), rows.Close())
}

// addCacheDeltas puts the hits, misses, hit ratio and invalidations per
// second between two SHOW MYCACHED STATUS readings into st.Extra.
func addCacheDeltas(st *Stats, before, after map[string]float64, elapsed time.Duration) {
	if before == nil || after == nil {
		return
	}
	if st.Extra == nil {
		st.Extra = map[string]float64{}
	}
	hits := after["Hits_l1"] + after["Hits_memcached"] - before["Hits_l1"] - before["Hits_memcached"]
	misses := after["Misses"] - before["Misses"]
	st.Extra["hits"], st.Extra["misses"] = hits, misses
	if hits+misses > 0 {
		st.Extra["hit_ratio"] = hits / (hits + misses)
	}
	if elapsed > 0 {
		st.Extra["invalidations_per_sec"] = (after["Invalidations"] - before["Invalidations"]) / elapsed.Seconds()
	}
}
