package main

import (
	"bytes"
	"context"
	"database/sql"
	"regexp"
	"strconv"
	"testing"
)

// TestThroughMycached runs the example against MariaDB directly and then
// through mycached, and checks what its README promises: reads are served
// from the cache, and every stock a client writes is read back new.
func TestThroughMycached(t *testing.T) {
	backend := startMariaDB(t)
	proxy := startMycached(t, backend, startMemcached(t))
	ctx := context.Background()

	base := config{threads: 4, writeEvery: 10, products: 200, customers: 50, orders: 2000}
	setupCfg := base
	setupCfg.dsn, setupCfg.setup = dsn(backend), true
	if err := run(ctx, setupCfg, new(bytes.Buffer)); err != nil {
		t.Fatalf("setup against MariaDB: %v", err)
	}

	for _, tc := range []struct {
		name, addr string
		cached     bool
	}{
		{"direct", backend, false},
		{"mycached", proxy, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base
			c.dsn, c.ops = dsn(tc.addr), 3000
			var out bytes.Buffer
			// run fails on any stale read-back or failed request.
			if err := run(ctx, c, &out); err != nil {
				t.Fatalf("run: %v\n%s", err, out.String())
			}
			m := regexp.MustCompile(`hit_ratio=([0-9.]+)%`).FindStringSubmatch(out.String())
			if !tc.cached {
				if m != nil {
					t.Errorf("direct run reported a cache: %s", out.String())
				}
				return
			}
			if m == nil {
				t.Fatalf("no hit ratio in the output:\n%s", out.String())
			}
			if ratio, _ := strconv.ParseFloat(m[1], 64); ratio <= 0 {
				t.Errorf("got hit ratio %v%%, want > 0\n%s", ratio, out.String())
			}
		})
	}
}

// TestStockReadBack caches a stock read through mycached, updates the row
// through it, and reads it again: the new value must come back, on the
// same connection and on another one.
func TestStockReadBack(t *testing.T) {
	backend := startMariaDB(t)
	proxy := startMycached(t, backend, startMemcached(t))
	ctx := context.Background()
	c := config{dsn: dsn(backend), setup: true, threads: 1, products: 10, customers: 2, orders: 10}
	if err := run(ctx, c, new(bytes.Buffer)); err != nil {
		t.Fatalf("setup: %v", err)
	}
	db, err := sql.Open("mysql", dsn(proxy))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	other, err := sql.Open("mysql", dsn(proxy))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()

	read := func(db *sql.DB) int {
		t.Helper()
		var qty int
		if err := db.QueryRowContext(ctx, sqlStock, 3).Scan(&qty); err != nil {
			t.Fatalf("read stock: %v", err)
		}
		return qty
	}
	before, _ := cacheStatus(ctx, db)
	for range 3 {
		read(db)
		read(other)
	}
	after, ok := cacheStatus(ctx, db)
	if !ok {
		t.Fatal("SHOW MYCACHED STATUS failed through mycached")
	}
	if hits := after["Hits_l1"] + after["Hits_memcached"] - before["Hits_l1"] - before["Hits_memcached"]; hits == 0 {
		t.Fatalf("got 0 hits for 6 identical reads, want some")
	}
	for i, want := range []int{111, 222, 333} {
		if _, err := db.ExecContext(ctx, sqlUpdateStock, want, 3); err != nil {
			t.Fatalf("update %d: %v", i, err)
		}
		for name, d := range map[string]*sql.DB{"same pool": db, "other pool": other} {
			if got := read(d); got != want {
				t.Errorf("update %d, %s: got stock %d, want %d", i, name, got, want)
			}
		}
	}
}
