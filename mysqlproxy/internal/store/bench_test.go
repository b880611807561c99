package store

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/mycached/mycached/mysqlproxy/internal/testenv"
)

func benchLookup(b *testing.B, opts Options, payload int) {
	s := newStore(b, opts)
	ctx := context.Background()
	deps := []string{"*", "sbtest.*", "sbtest.sbtest1"}
	check := []byte("sbtest|SELECT c FROM sbtest1 WHERE id=42")
	key := QueryKey([16]byte{1, 2, 3})
	gens, ok := s.Snapshot(ctx, deps)
	if !ok {
		b.Fatal("snapshot failed")
	}
	e := &Entry{Check: check, Payload: make([]byte, payload), Deps: deps, Gens: gens, Expires: time.Now().Add(time.Hour)}
	if err := s.Put(ctx, key, e); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu := startCPU()
	for b.Loop() {
		if _, _, _, st := s.Lookup(ctx, key, check, deps); st != Hit {
			b.Fatalf("got %v, want hit", st)
		}
	}
	cpu.report(b)
}

// cpuClock measures the CPU time of this process (not memcached's), which
// a shared machine disturbs far less than wall time: a lookup against
// memcached is mostly waiting for the round trip.
type cpuClock time.Duration

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func startCPU() cpuClock { return cpuClock(processCPU()) }

// report adds the CPU time per operation as the "cpu-ns/op" metric.
func (c cpuClock) report(b *testing.B) {
	b.ReportMetric(float64(processCPU()-time.Duration(c))/float64(b.N), "cpu-ns/op")
}

// BenchmarkLookupMemcachedHitParallel is BenchmarkLookupMemcachedHit from
// several goroutines, as the proxy runs it.
func BenchmarkLookupMemcachedHitParallel(b *testing.B) {
	mc := startMemcached(b, testenv.MemcachedOptions{})
	s := newStore(b, Options{Servers: []string{mc.Addr}, L1Bytes: -1})
	ctx := context.Background()
	deps := []string{"*", "sbtest.*", "sbtest.sbtest1"}
	check := []byte("sbtest|SELECT c FROM sbtest1 WHERE id=42")
	key := QueryKey([16]byte{1, 2, 3})
	gens, ok := s.Snapshot(ctx, deps)
	if !ok {
		b.Fatal("snapshot failed")
	}
	e := &Entry{Check: check, Payload: make([]byte, 200), Deps: deps, Gens: gens, Expires: time.Now().Add(time.Hour)}
	if err := s.Put(ctx, key, e); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetParallelism(4)
	b.ResetTimer()
	cpu := startCPU()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, _, _, st := s.Lookup(ctx, key, check, deps); st != Hit {
				b.Errorf("got %v, want hit", st)
				return
			}
		}
	})
	cpu.report(b)
}

// BenchmarkLookupL1Hit is the embedded hot path: no memcached.
func BenchmarkLookupL1Hit(b *testing.B) {
	benchLookup(b, Options{}, 200)
}

func BenchmarkLookupL1HitParallel(b *testing.B) {
	s := newStore(b, Options{})
	ctx := context.Background()
	deps := []string{"*", "db.*", "db.t"}
	check := []byte("c")
	key := qkey(1)
	gens, _ := s.Snapshot(ctx, deps)
	s.Put(ctx, key, &Entry{Check: check, Payload: make([]byte, 200), Deps: deps, Gens: gens})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, _, _, st := s.Lookup(ctx, key, check, deps); st != Hit {
				b.Errorf("got %v, want hit", st)
				return
			}
		}
	})
}

// BenchmarkLookupMemcachedL1Hit is an L1 hit that still reads the
// generations from memcached (one get_multi).
func BenchmarkLookupMemcachedL1Hit(b *testing.B) {
	mc := startMemcached(b, testenv.MemcachedOptions{})
	benchLookup(b, Options{Servers: []string{mc.Addr}}, 200)
}

// BenchmarkLookupMemcachedHit fetches entry and generations from memcached.
func BenchmarkLookupMemcachedHit(b *testing.B) {
	mc := startMemcached(b, testenv.MemcachedOptions{})
	benchLookup(b, Options{Servers: []string{mc.Addr}, L1Bytes: -1}, 200)
}

func BenchmarkLookupMemcachedHit64K(b *testing.B) {
	mc := startMemcached(b, testenv.MemcachedOptions{})
	benchLookup(b, Options{Servers: []string{mc.Addr}, L1Bytes: -1}, 64<<10)
}
