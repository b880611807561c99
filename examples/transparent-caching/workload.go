package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// The requests the workload makes, as a web shop's handlers would.
const (
	opProductPage = iota // a product's catalog row and its stock
	opCustomerOrders
	opTopProducts
	opUpdateStock // a write, then the same stock read back
	numOps
)

var opNames = [numOps]string{"product_page", "customer_orders", "top_products", "update_stock"}

// The SQL of each request. The workload uses placeholders as an
// application would; with interpolateParams=true in the DSN they reach the
// server as text queries, otherwise as prepared statements.
const (
	sqlProduct = "SELECT id, name, description, price FROM products WHERE id = ?"
	sqlStock   = "SELECT qty FROM inventory WHERE product_id = ?"
	sqlOrders  = `SELECT o.id, o.qty, o.created_at, p.name, p.price
		FROM orders o JOIN products p ON p.id = o.product_id
		WHERE o.customer_id = ? ORDER BY o.id DESC LIMIT 20`
	sqlTop = `SELECT p.id, p.name, SUM(o.qty) AS sold, SUM(o.qty * p.price) AS revenue
		FROM orders o JOIN products p ON p.id = o.product_id
		GROUP BY p.id, p.name ORDER BY sold DESC, p.id LIMIT 10`
	sqlUpdateStock = "UPDATE inventory SET qty = ? WHERE product_id = ?"
)

// results are what the workload measured.
type results struct {
	elapsed  time.Duration
	threads  int
	lat      [numOps][]time.Duration // successful requests
	errors   int
	errs     [numOps]int
	stale    int
	firstErr error
}

// worker is one client's state. Each worker updates only the products whose
// id is congruent to its index, so that when it reads a stock back nobody
// else can have changed it, and any other value is a stale read.
type worker struct {
	db    *sql.DB
	c     config
	idx   int
	rng   *rand.Rand
	zipf  *rand.Zipf
	reads int
	next  int // next stock value written; unique per worker
	res   results
}

// runWorkload runs c.threads workers until c.duration passes or c.ops
// requests are done, whichever is set.
func runWorkload(ctx context.Context, db *sql.DB, c config) (*results, error) {
	if c.ops == 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.duration)
		defer cancel()
	}
	var budget atomic.Int64
	budget.Store(int64(c.ops))
	workers := make([]*worker, c.threads)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range workers {
		rng := rand.New(rand.NewSource(int64(i) + 42))
		w := &worker{
			db: db, c: c, idx: i, rng: rng,
			// Popular products get most views, as in any shop.
			zipf: rand.NewZipf(rng, 1.1, 1, uint64(c.products-1)),
			next: 1000000 * (i + 1),
		}
		workers[i] = w
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if c.ops > 0 && budget.Add(-1) < 0 {
					return
				}
				w.step(ctx)
			}
		}()
	}
	wg.Wait()
	total := &results{elapsed: time.Since(start), threads: c.threads}
	for _, w := range workers {
		for op := range numOps {
			total.lat[op] = append(total.lat[op], w.res.lat[op]...)
			total.errs[op] += w.res.errs[op]
		}
		total.errors += w.res.errors
		total.stale += w.res.stale
		if total.firstErr == nil {
			total.firstErr = w.res.firstErr
		}
	}
	for op := range numOps {
		slices.Sort(total.lat[op])
	}
	return total, nil
}

// step makes one request and records it.
func (w *worker) step(ctx context.Context) {
	op := w.pick()
	t0 := time.Now()
	var err error
	switch op {
	case opProductPage:
		err = w.productPage(ctx)
	case opCustomerOrders:
		err = w.customerOrders(ctx)
	case opTopProducts:
		err = w.topProducts(ctx)
	case opUpdateStock:
		err = w.updateStock(ctx)
	}
	d := time.Since(t0)
	switch {
	case err == nil:
		w.res.lat[op] = append(w.res.lat[op], d)
	case errors.Is(err, errStale):
		w.res.stale++
		w.res.lat[op] = append(w.res.lat[op], d)
	case ctx.Err() != nil:
		// The run ended while the request was in flight; it does not count.
	default:
		w.res.errors++
		w.res.errs[op]++
		if w.res.firstErr == nil {
			w.res.firstErr = fmt.Errorf("%s: %w", opNames[op], err)
		}
	}
}

// pick chooses the next request: a stock update every writeEvery reads,
// and otherwise mostly product pages.
func (w *worker) pick() int {
	if w.c.writeEvery > 0 && w.reads >= w.c.writeEvery {
		w.reads = 0
		return opUpdateStock
	}
	w.reads++
	switch r := w.rng.Intn(100); {
	case r < 70:
		return opProductPage
	case r < 95:
		return opCustomerOrders
	default:
		return opTopProducts
	}
}

func (w *worker) productPage(ctx context.Context) error {
	id := 1 + int(w.zipf.Uint64())
	var (
		name, desc, price string
		pid, qty          int
	)
	if err := w.db.QueryRowContext(ctx, sqlProduct, id).Scan(&pid, &name, &desc, &price); err != nil {
		return err
	}
	return w.db.QueryRowContext(ctx, sqlStock, id).Scan(&qty)
}

func (w *worker) customerOrders(ctx context.Context) error {
	return drain(w.db.QueryContext(ctx, sqlOrders, 1+w.rng.Intn(w.c.customers)))
}

func (w *worker) topProducts(ctx context.Context) error {
	return drain(w.db.QueryContext(ctx, sqlTop))
}

// updateStock writes a value no one has written before to one of this
// worker's products and reads it back.
func (w *worker) updateStock(ctx context.Context) error {
	n := w.c.products / w.c.threads
	if n == 0 {
		return nil // fewer products than workers: this one owns none
	}
	id := w.idx + 1 + w.c.threads*int(w.zipf.Uint64()%uint64(n))
	w.next++
	if _, err := w.db.ExecContext(ctx, sqlUpdateStock, w.next, id); err != nil {
		return err
	}
	var got int
	if err := w.db.QueryRowContext(ctx, sqlStock, id).Scan(&got); err != nil {
		return err
	}
	if got != w.next {
		return fmt.Errorf("product %d: read stock %d after writing %d: %w", id, got, w.next, errStale)
	}
	return nil
}

// drain reads every row of a query, as a handler rendering a page would.
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

// print writes the per-request table and a one-line total that scripts can
// parse.
func (r *results) print(w io.Writer) {
	var all []time.Duration
	fmt.Fprintf(w, "%-16s %9s %7s %10s %10s\n", "request", "count", "errors", "p50", "p99")
	for op := range numOps {
		l := r.lat[op]
		all = append(all, l...)
		fmt.Fprintf(w, "%-16s %9d %7d %10s %10s\n", opNames[op], len(l), r.errs[op], ms(pct(l, 50)), ms(pct(l, 99)))
	}
	slices.Sort(all)
	rate := float64(len(all)) / r.elapsed.Seconds()
	fmt.Fprintf(w, "total: requests=%d errors=%d stale=%d seconds=%.1f threads=%d rate=%.0f/s p50=%s p99=%s\n",
		len(all), r.errors, r.stale, r.elapsed.Seconds(), r.threads, rate, ms(pct(all, 50)), ms(pct(all, 99)))
	if r.firstErr != nil {
		fmt.Fprintf(w, "first error: %v\n", r.firstErr)
	}
}

// pct returns the p-th percentile of sorted latencies, or 0 for none.
func pct(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100
	return sorted[max(i-1, 0)]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.3fms", float64(d)/float64(time.Millisecond)) }
