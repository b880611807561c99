package main

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
)

// runKV measures one kv read path from -clients concurrent clients for
// -duration: SELECT "key" through mycached (-target sql), or a direct
// gomemcache Get of the same memcached item (-target memcached). It first
// stores the value through mycached and checks that memcached holds the
// same bytes, so both targets read the same items. Without -memcached,
// -target sql measures a mycached that keeps its pairs in L1. With -keys N the
// clients read N pairs (key0 to key<N-1>) at random instead of one, so
// that concurrent reads are mostly of different keys. It prints one line:
// target, clients, ops/s, p50, p99, and the CPU this client spent per read
// (user and system), which on a host it shares with the servers is part
// of what the ops/s compare.
func runKV(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("kv", flag.ContinueOnError)
	dsn := fs.String("dsn", "", "go-sql-driver/mysql DSN of a mycached listener with kv rights")
	mcAddr := fs.String("memcached", "", "the memcached server mycached stores kv pairs in; empty for a mycached that keeps them in L1 (-target sql only)")
	target := fs.String("target", "sql", `what to measure: "sql" (SELECT "key" through mycached) or "memcached" (gomemcache Get)`)
	clients := fs.Int("clients", 1, "concurrent clients")
	duration := fs.Duration("duration", 10*time.Second, "how long to run")
	key := fs.String("key", "bench:k", "the kv key")
	prefix := fs.String("prefix", "kv:", "mycached's --kv-prefix")
	valueBytes := fs.Int("value-bytes", 100, "size of the value")
	nkeys := fs.Int("keys", 1, "read this many pairs at random rather than one")
	if err := fs.Parse(args); err != nil {
		return errUsage
	}
	if *dsn == "" || *clients < 1 || *nkeys < 1 || (*target != "sql" && *target != "memcached") || (*target == "memcached" && *mcAddr == "") {
		fmt.Fprintln(fs.Output(), `kv: -dsn is required, and -memcached with -target memcached; -clients and -keys must be positive, -target is sql or memcached`)
		return errUsage
	}
	keys := []string{*key}
	if *nkeys > 1 {
		keys = make([]string, *nkeys)
		for i := range keys {
			keys[i] = *key + strconv.Itoa(i)
		}
	}
	db, err := sql.Open("mysql", *dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(*clients)
	db.SetMaxIdleConns(*clients)
	var mc *memcache.Client
	if *mcAddr != "" {
		mc = memcache.New(*mcAddr)
		// gomemcache keeps two idle connections by default; more clients
		// than that would measure connection churn, not Get.
		mc.MaxIdleConns = *clients
		mc.Timeout = 5 * time.Second // a shared, busy machine can stall a read for long; that is latency, not failure
	}

	val := bytes.Repeat([]byte("v"), *valueBytes)
	queries := make([]string, len(keys))
	for i, k := range keys {
		if _, err := db.ExecContext(ctx, "INSERT ? = ?", k, val); err != nil {
			return fmt.Errorf("kv: INSERT through mycached: %w", err)
		}
		if mc != nil {
			it, err := mc.Get(*prefix + k)
			if err != nil || !bytes.Equal(it.Value, val) {
				return fmt.Errorf("kv: memcached does not hold what mycached stored under %q: %v", *prefix+k, err)
			}
		}
		queries[i] = `SELECT "` + k + `"`
	}
	// Each SQL client pins one connection, as each gomemcache Get reuses
	// an idle one: database/sql's pool would otherwise check the
	// connection's liveness (a system call) before every query. Ops get
	// no context of their own either: a cancellable one costs
	// database/sql and the driver a goroutine hand-off per query, and
	// gomemcache's Get takes none. The loop checks the run's end between
	// ops.
	conns := make([]*sql.Conn, *clients)
	for i := range conns {
		if *target == "sql" {
			if conns[i], err = db.Conn(ctx); err != nil {
				return fmt.Errorf("kv: connect: %w", err)
			}
			defer conns[i].Close()
		}
	}
	op := func(conn *sql.Conn, i int) error {
		if conn == nil {
			it, err := mc.Get(*prefix + keys[i])
			if err == nil && len(it.Value) != len(val) {
				err = errors.New("short value")
			}
			return err
		}
		return kvSelect(conn, queries[i], len(val))
	}
	// One untimed op per client opens the connections.
	for _, c := range conns {
		if err := op(c, 0); err != nil {
			return fmt.Errorf("kv: warm-up: %w", err)
		}
	}

	rngs := make([]*rand.Rand, *clients)
	for i := range rngs {
		rngs[i] = rand.New(rand.NewPCG(uint64(i), 0))
	}
	cpu0 := cpuTime()
	all, elapsed, err := timedRun(ctx, *clients, *duration, func(_ context.Context, i int) error {
		return op(conns[i], rngs[i].IntN(len(keys)))
	})
	if err != nil {
		return fmt.Errorf("kv: %w", err)
	}
	cpu := cpuTime() - cpu0
	fmt.Fprintf(stdout, "target=%s clients=%d ops=%d seconds=%.2f ops_per_sec=%.1f p50_ms=%.3f p99_ms=%.3f client_cpu_us=%.2f\n",
		*target, *clients, len(all), elapsed.Seconds(), float64(len(all))/elapsed.Seconds(), msf(pct(all, 50)), msf(pct(all, 99)),
		float64(cpu.Microseconds())/float64(max(len(all), 1)))
	return nil
}

// cpuTime returns the user and system CPU this process has used, or 0 if
// the system will not say.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// kvSelect runs a kv SELECT as text and checks that it returned the value.
func kvSelect(conn *sql.Conn, query string, n int) error {
	rows, err := conn.QueryContext(context.Background(), query)
	if err != nil {
		return err
	}
	defer rows.Close()
	var k, v sql.RawBytes
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return err
		}
		return errors.New("no row for " + strings.TrimPrefix(query, "SELECT "))
	}
	if err := rows.Scan(&k, &v); err != nil {
		return err
	}
	if len(v) != n {
		return fmt.Errorf("value of %d bytes, want %d", len(v), n)
	}
	for rows.Next() {
	}
	return rows.Err()
}
