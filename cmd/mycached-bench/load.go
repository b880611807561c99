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

// loadConfig is what the load command was asked to do.
type loadConfig struct {
	dsn, query, statusDSN string
	adminDSN              string
	threads               int
	duration              time.Duration
	idMin, idMax          int
	prepared, warm, once  bool
	stderr                io.Writer // where errors are reported as they are counted
}

// runLoad runs one query from -threads pinned connections and prints a
// Stats object as JSON to stdout and a summary line to stderr. A query
// with a ? gets a random id in [-id-min, -id-max]. With -once every
// connection runs the query exactly once, all released together (a
// stampede), and -status-dsn names the backend whose Com_select delta is
// reported as the number of executions.
func runLoad(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := loadConfig{stderr: stderr}
	fs.StringVar(&c.dsn, "dsn", "", "go-sql-driver/mysql DSN (add interpolateParams=true for text queries)")
	fs.StringVar(&c.query, "query", "", "the SQL to run; one ? takes a random id; every row is read")
	fs.IntVar(&c.threads, "threads", 1, "concurrent connections, each pinned for the whole run")
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "how long to run")
	fs.IntVar(&c.idMin, "id-min", 1, "smallest id bound to ?")
	fs.IntVar(&c.idMax, "id-max", 1, "largest id bound to ?")
	fs.BoolVar(&c.prepared, "prepared", false, "use server-side prepared statements, one per connection")
	fs.BoolVar(&c.warm, "warm", false, "before timing, run the query once for every id, spread over the connections")
	fs.BoolVar(&c.once, "once", false, "run the query once per connection, all at the same moment")
	fs.StringVar(&c.statusDSN, "status-dsn", "", "backend DSN whose Com_select delta is reported as executions")
	fs.StringVar(&c.adminDSN, "admin-dsn", "", "mycached DSN for the hit ratio from SHOW MYCACHED STATUS (default: none)")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if c.dsn == "" || c.query == "" || c.threads < 1 || c.idMax < c.idMin {
		fmt.Fprintln(stderr, "load: -dsn and -query are required, -threads must be positive, -id-max >= -id-min")
		return errUsage
	}
	st, err := load(ctx, c)
	if err != nil {
		return err
	}
	fmt.Fprintln(stderr, summaryLine(st)+"  "+notes(st))
	return json.NewEncoder(stdout).Encode(st)
}

// worker is one pinned connection and, with -prepared, its statement.
type worker struct {
	conn *sql.Conn
	stmt *sql.Stmt
}

func (w *worker) run(ctx context.Context, query string, arg []any) error {
	if w.stmt != nil {
		return drain(w.stmt.QueryContext(ctx, arg...))
	}
	return drain(w.conn.QueryContext(ctx, query, arg...))
}

func (w *worker) close() {
	if w.stmt != nil {
		w.stmt.Close()
	}
	w.conn.Close()
}

func load(ctx context.Context, c loadConfig) (Stats, error) {
	db, err := sql.Open("mysql", c.dsn)
	if err != nil {
		return Stats{}, err
	}
	defer db.Close()
	db.SetMaxOpenConns(c.threads)
	db.SetMaxIdleConns(c.threads)
	ws, err := pin(ctx, db, c)
	if err != nil {
		return Stats{}, err
	}
	defer func() {
		for _, w := range ws {
			w.close()
		}
	}()
	hasArg := containsPlaceholder(c.query)
	argOf := func(id int) []any {
		if !hasArg {
			return nil
		}
		return []any{id}
	}
	if c.warm {
		if err := warm(ctx, ws, c, argOf); err != nil {
			return Stats{}, fmt.Errorf("load: warm-up: %w", err)
		}
	}
	var status *sql.DB
	var before int64
	if c.statusDSN != "" {
		if status, err = sql.Open("mysql", c.statusDSN); err != nil {
			return Stats{}, err
		}
		defer status.Close()
		if before, err = comSelect(ctx, status); err != nil {
			return Stats{}, err
		}
	}
	cacheBefore, err := mycachedStatus(ctx, c.adminDSN)
	if err != nil {
		return Stats{}, err
	}
	runCtx, cancel := context.WithTimeout(ctx, c.duration)
	if c.once {
		// A stampede runs to completion however long it takes.
		runCtx, cancel = context.WithCancel(ctx)
	}
	defer cancel()
	lats := make([][]time.Duration, len(ws))
	var errs atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for i, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(i)))
			<-gate
			for runCtx.Err() == nil {
				t0 := time.Now()
				err := w.run(runCtx, c.query, argOf(c.idMin+rng.IntN(c.idMax-c.idMin+1)))
				if err != nil {
					if runCtx.Err() != nil {
						return
					}
					errs.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				} else {
					lats[i] = append(lats[i], time.Since(t0))
				}
				if c.once {
					return
				}
			}
		}()
	}
	start := time.Now()
	close(gate)
	wg.Wait()
	elapsed := time.Since(start)
	var all []time.Duration
	for _, l := range lats {
		all = append(all, l...)
	}
	st := statsOf(all, elapsed, errs.Load())
	cacheAfter, err := mycachedStatus(ctx, c.adminDSN)
	if err != nil {
		return Stats{}, err
	}
	addCacheDeltas(&st, cacheBefore, cacheAfter, elapsed)
	if e := firstErr.Load(); e != nil {
		fmt.Fprintf(c.stderr, "load: %d errors, the first: %s\n", errs.Load(), e)
	}
	if status != nil {
		// The window after the burst, of the same length, with nothing
		// sent, measures what else runs SELECTs on the backend.
		after, err := comSelect(ctx, status)
		if err != nil {
			return Stats{}, err
		}
		time.Sleep(min(elapsed, 5*time.Second))
		idle, err := comSelect(ctx, status)
		if err != nil {
			return Stats{}, err
		}
		if st.Extra == nil {
			st.Extra = map[string]float64{}
		}
		st.Extra["com_select_delta"] = float64(after - before)
		st.Extra["com_select_idle"] = float64(idle - after)
		st.Extra["executions"] = float64(after - before - (idle - after))
	}
	return st, nil
}

// pin opens every connection (and statement) before the clock starts, so
// that connecting is not measured and a stampede is truly simultaneous.
func pin(ctx context.Context, db *sql.DB, c loadConfig) ([]*worker, error) {
	ws := make([]*worker, c.threads)
	errs := make([]error, c.threads)
	var wg sync.WaitGroup
	for i := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := db.Conn(ctx)
			if err != nil {
				errs[i] = err
				return
			}
			w := &worker{conn: conn}
			if c.prepared {
				if w.stmt, err = conn.PrepareContext(ctx, c.query); err != nil {
					conn.Close()
					errs[i] = err
					return
				}
			}
			ws[i] = w
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, w := range ws {
			if w != nil {
				w.close()
			}
		}
		return nil, fmt.Errorf("load: connect: %w", err)
	}
	return ws, nil
}

// warm runs the query for every id once, each connection taking every
// len(ws)-th id, so that the measured run starts with a full cache.
func warm(ctx context.Context, ws []*worker, c loadConfig, argOf func(int) []any) error {
	n := min(len(ws), 16)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := c.idMin + i; id <= c.idMax; id += n {
				if err := ws[i].run(ctx, c.query, argOf(id)); err != nil {
					errs[i] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// comSelect reads the backend's global Com_select counter. SHOW STATUS
// counts as Com_show_status, so reading it does not move it.
func comSelect(ctx context.Context, db *sql.DB) (int64, error) {
	var name, v string
	if err := db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Com_select'").Scan(&name, &v); err != nil {
		return 0, fmt.Errorf("load: read Com_select: %w", err)
	}
	return strconv.ParseInt(v, 10, 64)
}

// containsPlaceholder reports whether query has a ? outside quotes.
func containsPlaceholder(query string) bool {
	var quote rune
	for _, r := range query {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"' || r == '`':
			quote = r
		case r == '?':
			return true
		}
	}
	return false
}
