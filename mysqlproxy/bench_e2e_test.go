package mysqlproxy_test

import (
	"database/sql"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mycached/mycached/cachepolicy"
	"github.com/mycached/mycached/mysqlproxy"
	"github.com/mycached/mycached/mysqlproxy/internal/testenv"
)

// copyRelay is the baseline every proxy is measured against: a plain TCP
// relay with io.Copy in each direction.
func copyRelay(b *testing.B, backend string) string {
	b.Helper()
	return relayDown(b, backend, func(dst io.Writer, src io.Reader) { _, _ = io.Copy(dst, src) })
}

// relayDown listens on a free port and relays each connection to backend,
// with down copying what the backend sends.
func relayDown(t testing.TB, backend string, down func(dst io.Writer, src io.Reader)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				bc, err := net.Dial("tcp", backend)
				if err != nil {
					return
				}
				defer bc.Close()
				go func() { _, _ = io.Copy(bc, c); bc.Close() }()
				down(c, bc)
			}()
		}
	}()
	return ln.Addr().String()
}

// BenchmarkPointSelect compares, in one run, point-select throughput and
// latency at 8 client goroutines for MariaDB direct, a plain io.Copy relay,
// mycached relaying (passthrough) and mycached serving hits from L1.
func BenchmarkPointSelect(b *testing.B) {
	m := testenv.Shared(b).DB
	db := m.NewDatabase(b)
	m.Exec(b, "CREATE TABLE "+db+".sbtest1 (id INT PRIMARY KEY, k INT, c CHAR(120), pad CHAR(60))")
	var ins strings.Builder
	ins.WriteString("INSERT INTO " + db + ".sbtest1 VALUES ")
	const rows = 1000
	for i := 1; i <= rows; i++ {
		if i > 1 {
			ins.WriteByte(',')
		}
		fmt.Fprintf(&ins, "(%d,%d,'%0120d','%060d')", i, i, i, i)
	}
	m.Exec(b, ins.String())
	targets := []struct {
		name string
		addr func() string
	}{
		{"direct", func() string { return m.Addr }},
		{"io-copy-relay", func() string { return copyRelay(b, m.Addr) }},
		{"mycached-relay", func() string {
			return startProxy(b, mysqlproxy.Config{Backend: m.Addr, Passthrough: true}).addr
		}},
		{"mycached-l1-hits", func() string { return startProxy(b, mysqlproxy.Config{Backend: m.Addr}).addr }},
	}
	for _, tg := range targets {
		for _, mode := range []string{"text", "prepared"} {
			b.Run(tg.name+"/"+mode, func(b *testing.B) {
				params := "interpolateParams=true"
				if mode == "prepared" {
					params = ""
				}
				c := openDB(b, rootDSN(tg.addr(), db, params))
				c.SetMaxIdleConns(16)
				stmt, err := c.Prepare("SELECT c FROM sbtest1 WHERE id = ?")
				if err != nil {
					b.Fatal(err)
				}
				defer stmt.Close()
				for i := 1; i <= rows; i++ { // warm: every id cached where caching is on
					var s string
					if err := stmt.QueryRow(i).Scan(&s); err != nil {
						b.Fatal(err)
					}
				}
				var mu sync.Mutex
				var lat []time.Duration
				b.SetParallelism(4) // 4 x GOMAXPROCS(2) = 8 clients
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					local := make([]time.Duration, 0, 1024)
					var s string
					for pb.Next() {
						t0 := time.Now()
						if err := stmt.QueryRow(rand.IntN(rows) + 1).Scan(&s); err != nil && err != sql.ErrNoRows {
							b.Error(err)
							return
						}
						local = append(local, time.Since(t0))
					}
					mu.Lock()
					lat = append(lat, local...)
					mu.Unlock()
				})
				b.StopTimer()
				slices.Sort(lat)
				if n := len(lat); n > 0 {
					b.ReportMetric(float64(lat[n/2].Microseconds()), "p50-µs")
					b.ReportMetric(float64(lat[n*99/100].Microseconds()), "p99-µs")
				}
			})
		}
	}
}

// BenchmarkPolicyLuaVsBuiltin compares L1 hits under the Lua default.lua
// with hits under the built-in Go default, in one run: the Lua policy's
// memoized decisions should cost within a few percent.
func BenchmarkPolicyLuaVsBuiltin(b *testing.B) {
	m := testenv.Shared(b).DB
	db := m.NewDatabase(b)
	loadRows(b, m, db+".t", 1000)
	for _, tc := range []struct {
		name string
		cfg  mysqlproxy.Config
	}{
		{"builtin", mysqlproxy.Config{Backend: m.Addr, PolicyEngine: cachepolicy.Default{TTL: time.Minute}}},
		{"lua-default", mysqlproxy.Config{Backend: m.Addr}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			benchPointHits(b, startProxy(b, tc.cfg).addr, db, 1000)
		})
	}
}

// BenchmarkPointLookupHit compares a primary-key lookup hit served with
// row-level dependencies against the same hit with table-level ones, from
// memcached: both cost one get_multi.
func BenchmarkPointLookupHit(b *testing.B) {
	m := testenv.Shared(b).DB
	mc := testenv.Shared(b).MC
	db := m.NewDatabase(b)
	loadRows(b, m, db+".t", 1000)
	for _, tc := range []struct {
		name       string
		tableLevel bool
	}{{"row-level", false}, {"table-level", true}} {
		b.Run(tc.name, func(b *testing.B) {
			p := startProxy(b, mysqlproxy.Config{Backend: m.Addr, Memcached: []string{mc.Addr}, CacheMemory: -1, TableLevel: tc.tableLevel})
			benchPointHits(b, p.addr, db, 1000)
		})
	}
}

// benchPointHits warms every id, then measures point-lookup hits from 8
// goroutines.
func benchPointHits(b *testing.B, addr, db string, rows int) {
	c := openDB(b, rootDSN(addr, db, "interpolateParams=true"))
	c.SetMaxIdleConns(16)
	for i := 1; i <= rows; i++ {
		var v int
		if err := c.QueryRow("SELECT v FROM t WHERE id = ?", i).Scan(&v); err != nil {
			b.Fatal(err)
		}
	}
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var v int
		for pb.Next() {
			if err := c.QueryRow("SELECT v FROM t WHERE id = ?", rand.IntN(rows)+1).Scan(&v); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
