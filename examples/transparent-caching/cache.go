package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"strconv"
)

// cacheStatus reads SHOW MYCACHED STATUS. ok is false when the statement
// fails, which is what MariaDB itself, or a user mycached does not let run
// admin queries, answers.
func cacheStatus(ctx context.Context, db *sql.DB) (st map[string]int64, ok bool) {
	rows, err := db.QueryContext(ctx, "SHOW MYCACHED STATUS")
	if err != nil {
		return nil, false
	}
	defer rows.Close()
	st = make(map[string]int64)
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			return nil, false
		}
		if v, err := strconv.ParseInt(value, 10, 64); err == nil {
			st[name] = v
		}
	}
	return st, rows.Err() == nil
}

// printCache prints what the cache did during the workload: the change in
// mycached's counters between before and after.
func printCache(w io.Writer, before, after map[string]int64) {
	d := func(k string) int64 { return after[k] - before[k] }
	l1, mc, miss := d("Hits_l1"), d("Hits_memcached"), d("Misses")
	ratio := 0.0
	if l1+mc+miss > 0 {
		ratio = 100 * float64(l1+mc) / float64(l1+mc+miss)
	}
	fmt.Fprintf(w, "cache: hits=%d (l1=%d memcached=%d) misses=%d stores=%d invalidations=%d hit_ratio=%.1f%%\n",
		l1+mc, l1, mc, miss, d("Stores"), d("Invalidations"), ratio)
}
