package store

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/mycached/mycached/mysqlproxy/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Run(m)) }

// startMemcached starts a private memcached for one test.
func startMemcached(t testing.TB, opts testenv.MemcachedOptions) *testenv.Memcached {
	t.Helper()
	mc, err := testenv.StartMemcached(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mc.Close() })
	return mc
}

func newStore(t testing.TB, opts Options) *Store {
	t.Helper()
	if opts.Timeout == 0 {
		// Generous, so that a loaded test machine does not turn a slow
		// reply into a spurious cache error.
		opts.Timeout = time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := New(opts)
	t.Cleanup(s.Close)
	return s
}

// mode is one way of running the store: L1 only, or with memcached.
type mode struct {
	name string
	opts func(t *testing.T) Options
}

var modes = []mode{
	{"l1", func(t *testing.T) Options { return Options{} }},
	{"memcached", func(t *testing.T) Options {
		return Options{Servers: []string{startMemcached(t, testenv.MemcachedOptions{}).Addr}}
	}},
	{"memcached-no-l1", func(t *testing.T) Options {
		return Options{Servers: []string{startMemcached(t, testenv.MemcachedOptions{}).Addr}, L1Bytes: -1}
	}},
}

// forEachMode runs fn against every mode, like gomemcache's testWithClient.
func forEachMode(t *testing.T, fn func(t *testing.T, opts Options)) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) { fn(t, m.opts(t)) })
	}
}

func qkey(n int) string {
	var h [16]byte
	copy(h[:], strconv.Itoa(n))
	return QueryKey(h)
}

// fill looks key up (expecting a miss) and puts an entry built from the
// returned generations, as the proxy does around a backend query.
func fill(t *testing.T, s *Store, key string, check, payload []byte, deps []string) *Entry {
	t.Helper()
	ctx := context.Background()
	_, _, cur, st := s.Lookup(ctx, key, check, deps)
	if st != Miss {
		t.Fatalf("fill %s: got status %v, want miss", key, st)
	}
	e := &Entry{Check: check, Payload: payload, Deps: deps, Gens: cur, Expires: time.Now().Add(time.Hour)}
	if err := s.Put(ctx, key, e); err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
	return e
}

func wantLookup(t *testing.T, s *Store, key string, check []byte, deps []string, want Status, payload []byte) Tier {
	t.Helper()
	e, tier, _, st := s.Lookup(context.Background(), key, check, deps)
	if st != want {
		t.Fatalf("lookup %s: got status %v, want %v", key, st, want)
	}
	if (want == Hit || want == Stale) && !bytes.Equal(e.Payload, payload) {
		t.Fatalf("lookup %s: got payload of %d bytes, want %d bytes", key, len(e.Payload), len(payload))
	}
	return tier
}

var deps1 = []string{"*", "db.*", "db.t1"}

func TestLookupHitMiss(t *testing.T) {
	forEachMode(t, func(t *testing.T, opts Options) {
		s := newStore(t, opts)
		check := []byte("alice|SELECT 1 FROM t1")
		fill(t, s, qkey(1), check, []byte("rows"), deps1)
		tier := wantLookup(t, s, qkey(1), check, deps1, Hit, []byte("rows"))
		wantTier := TierL1
		if opts.L1Bytes < 0 {
			wantTier = TierMemcached
		}
		if tier != wantTier {
			t.Errorf("got tier %v, want %v", tier, wantTier)
		}
		// A hash collision: same key, another statement.
		wantLookup(t, s, qkey(1), []byte("alice|SELECT 2 FROM t1"), deps1, Miss, nil)
		// Other deps than stored: never trusted.
		wantLookup(t, s, qkey(1), check, []string{"*", "db.*", "db.t2"}, Miss, nil)
		wantLookup(t, s, qkey(2), check, deps1, Miss, nil)
		if err := s.Delete(context.Background(), qkey(1)); err != nil {
			t.Fatal(err)
		}
		wantLookup(t, s, qkey(1), check, deps1, Miss, nil)
	})
}

func TestExpiryAndSoftTTL(t *testing.T) {
	forEachMode(t, func(t *testing.T, opts Options) {
		var mu sync.Mutex
		now := time.Now()
		opts.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
		advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
		s := newStore(t, opts)
		ctx := context.Background()
		check := []byte("c")
		_, _, cur, _ := s.Lookup(ctx, qkey(1), check, deps1)
		e := &Entry{Check: check, Payload: []byte("p"), Deps: deps1, Gens: cur,
			Soft: now.Add(10 * time.Second), Expires: now.Add(time.Hour)}
		if err := s.Put(ctx, qkey(1), e); err != nil {
			t.Fatal(err)
		}
		wantLookup(t, s, qkey(1), check, deps1, Hit, []byte("p"))
		advance(11 * time.Second)
		wantLookup(t, s, qkey(1), check, deps1, Stale, []byte("p"))
		// One caller refreshes; the others are served meanwhile.
		wantLookup(t, s, qkey(1), check, deps1, Hit, []byte("p"))
		advance(refreshClaim)
		wantLookup(t, s, qkey(1), check, deps1, Stale, []byte("p"))
		advance(time.Hour)
		wantLookup(t, s, qkey(1), check, deps1, Miss, nil)
	})
}

func TestBumpInvalidates(t *testing.T) {
	forEachMode(t, func(t *testing.T, opts Options) {
		s := newStore(t, opts)
		ctx := context.Background()
		other := []string{"*", "db.*", "db.t2"}
		fill(t, s, qkey(1), []byte("a"), []byte("p1"), deps1)
		fill(t, s, qkey(2), []byte("b"), []byte("p2"), other)
		s.Bump(ctx, []string{"db.t1"})
		wantLookup(t, s, qkey(1), []byte("a"), deps1, Miss, nil)
		wantLookup(t, s, qkey(2), []byte("b"), other, Hit, []byte("p2"))
		// Database-wide and global generations reach everything under them.
		fill(t, s, qkey(1), []byte("a"), []byte("p1"), deps1)
		s.Bump(ctx, []string{"db.*"})
		wantLookup(t, s, qkey(1), []byte("a"), deps1, Miss, nil)
		wantLookup(t, s, qkey(2), []byte("b"), other, Miss, nil)
	})
}

// TestSnapshotBumpPutRace is the fill race: generations are read, a writer
// bumps, and only then does the (now stale) result get stored. It must
// never be served.
func TestSnapshotBumpPutRace(t *testing.T) {
	forEachMode(t, func(t *testing.T, opts Options) {
		reader := newStore(t, opts)
		writer := reader
		if len(opts.Servers) > 0 {
			writer = newStore(t, opts) // another sidecar
		}
		storeAcrossBump(t, reader, writer, []byte("c"))
	})
}

// storeAcrossBump reads deps1's generations on reader, bumps db.t1 on
// writer, and then stores old rows under what reader read, as a fill
// racing a write does: neither store may serve them.
func storeAcrossBump(t *testing.T, reader, writer *Store, check []byte) {
	t.Helper()
	ctx := context.Background()
	gens, ok := reader.Snapshot(ctx, deps1)
	if !ok {
		t.Fatal("snapshot not ok")
	}
	writer.Bump(ctx, []string{"db.t1"})
	e := &Entry{Check: check, Payload: []byte("old rows"), Deps: deps1, Gens: gens, Expires: time.Now().Add(time.Hour)}
	if err := reader.Put(ctx, qkey(1), e); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*Store{reader, writer} {
		wantLookup(t, s, qkey(1), check, deps1, Miss, nil)
	}
}

func TestFlush(t *testing.T) {
	forEachMode(t, func(t *testing.T, opts Options) {
		s := newStore(t, opts)
		ctx := context.Background()
		fill(t, s, qkey(1), []byte("a"), []byte("p1"), deps1)
		if err := s.RawSet(ctx, "kv:k", []byte("v"), 0); err != nil {
			t.Fatal(err)
		}
		if err := s.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		wantLookup(t, s, qkey(1), []byte("a"), deps1, Miss, nil)
		got, err := rawGet(ctx, s, "kv:k")
		if err != nil || string(got["kv:k"]) != "v" {
			t.Errorf("got kv %q (%v) after flush, want %q", got["kv:k"], err, "v")
		}
	})
}

func TestTwoStoresShareBumps(t *testing.T) {
	mc := startMemcached(t, testenv.MemcachedOptions{})
	a := newStore(t, Options{Servers: []string{mc.Addr}})
	b := newStore(t, Options{Servers: []string{mc.Addr}})
	ctx := context.Background()
	fill(t, a, qkey(1), []byte("c"), []byte("p"), deps1)
	if tier := wantLookup(t, b, qkey(1), []byte("c"), deps1, Hit, []byte("p")); tier != TierMemcached {
		t.Errorf("got tier %v on the other sidecar, want memcached", tier)
	}
	if tier := wantLookup(t, b, qkey(1), []byte("c"), deps1, Hit, []byte("p")); tier != TierL1 {
		t.Errorf("got tier %v on the second lookup, want l1", tier)
	}
	b.Bump(ctx, []string{"db.t1"})
	// a still holds the entry in L1; the bump must reach it anyway.
	wantLookup(t, a, qkey(1), []byte("c"), deps1, Miss, nil)
	// b refills; a finds the fresh entry in memcached though its L1 copy
	// was stale.
	fill(t, b, qkey(1), []byte("c"), []byte("p2"), deps1)
	wantLookup(t, a, qkey(1), []byte("c"), deps1, Hit, []byte("p2"))
}

func TestMemcachedRestartServesNoStaleHit(t *testing.T) {
	mc := startMemcached(t, testenv.MemcachedOptions{})
	s := newStore(t, Options{Servers: []string{mc.Addr}})
	ctx := context.Background()
	fill(t, s, qkey(1), []byte("c"), []byte("p"), deps1)
	wantLookup(t, s, qkey(1), []byte("c"), deps1, Hit, []byte("p"))
	if err := mc.Restart(); err != nil {
		t.Fatal(err)
	}
	// The entry survives in L1, but a bump made while memcached was away
	// may have been lost with it: the recreated generations must differ.
	var st Status
	for range 3 { // the first ops after a restart may hit dead pooled conns
		if _, _, _, st = s.Lookup(ctx, qkey(1), []byte("c"), deps1); st != Error {
			break
		}
	}
	if st != Miss {
		t.Fatalf("got %v after restart, want miss", st)
	}
}

func TestMemcachedDownBumpPending(t *testing.T) {
	mc := startMemcached(t, testenv.MemcachedOptions{})
	s := newStore(t, Options{Servers: []string{mc.Addr}, Timeout: time.Second})
	ctx := context.Background()
	fill(t, s, qkey(1), []byte("c"), []byte("p"), deps1)
	if err := mc.Kill(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, _, _, st := s.Lookup(ctx, qkey(1), []byte("c"), deps1); st != Error {
		t.Errorf("got %v with memcached down, want error", st)
	}
	// Not a performance assertion: only that a dead server cannot hang a
	// query.
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("lookup took %v with memcached down", d)
	}
	s.Bump(ctx, []string{"db.t1"})
	if got := s.Stats().PendingBumps; got != 1 {
		t.Fatalf("got %d pending bumps, want 1", got)
	}
	if _, _, _, st := s.Lookup(ctx, qkey(1), []byte("c"), deps1); st != Bypass {
		t.Errorf("got %v for a dep with a pending bump, want bypass", st)
	}
	if _, ok := s.Snapshot(ctx, deps1); ok {
		t.Error("snapshot ok with a pending bump, want not ok")
	}
	if err := s.Put(ctx, qkey(1), &Entry{Deps: deps1, Gens: make([]uint64, 3)}); !errors.Is(err, ErrPending) {
		t.Errorf("got put err %v, want ErrPending", err)
	}
	// Deps without a pending bump are only errors, not bypasses.
	if _, _, _, st := s.Lookup(ctx, qkey(2), []byte("c"), []string{"*", "db.*", "db.t2"}); st != Error {
		t.Errorf("got %v for other deps, want error", st)
	}
	if err := mc.Restart(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the pending bump to land", func() bool { return s.Stats().PendingBumps == 0 })
	wantLookup(t, s, qkey(1), []byte("c"), deps1, Miss, nil)
	c := memcache.New(mc.Addr)
	if _, err := c.Get(genKey("db.t1")); err != nil {
		t.Errorf("generation of db.t1 not in memcached after the bump landed: %v", err)
	}
}

// waitFor polls cond. It bounds the wait only so that a broken build fails
// instead of hanging.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func randomBytes(t testing.TB, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	rand.Read(b)
	return b
}

func TestChunking(t *testing.T) {
	mc := startMemcached(t, testenv.MemcachedOptions{})
	s := newStore(t, Options{Servers: []string{mc.Addr}, L1Bytes: -1})
	ctx := context.Background()
	if got := s.ItemSizeMax(ctx); got != 1<<20 {
		t.Errorf("got item_size_max %d, want %d", got, 1<<20)
	}
	payload := randomBytes(t, 3<<20)
	fill(t, s, qkey(1), []byte("c"), payload, deps1)
	if got := s.Stats().ChunkedStores; got != 1 {
		t.Errorf("got %d chunked stores, want 1", got)
	}
	wantLookup(t, s, qkey(1), []byte("c"), deps1, Hit, payload)

	// Lose one chunk: the entry must be a miss, not a truncated hit.
	c := memcache.New(mc.Addr)
	it, err := c.Get(qkey(1))
	if err != nil {
		t.Fatal(err)
	}
	h, ok := decodeChunkHeader(it.Value)
	if !ok || h.n != 4 {
		t.Fatalf("got chunk header %+v (ok %v), want 4 chunks", h, ok)
	}
	if err := c.Delete(chunkKey(qkey(1), h.nonce, 2)); err != nil {
		t.Fatal(err)
	}
	wantLookup(t, s, qkey(1), []byte("c"), deps1, Miss, nil)
}

func TestItemSizeMaxFollowsServer(t *testing.T) {
	mc := startMemcached(t, testenv.MemcachedOptions{ItemSizeMax: "2m"})
	s := newStore(t, Options{Servers: []string{mc.Addr}, L1Bytes: -1})
	if got := s.ItemSizeMax(context.Background()); got != 2<<20 {
		t.Errorf("got item_size_max %d, want %d", got, 2<<20)
	}
	payload := randomBytes(t, 3<<20/2)
	fill(t, s, qkey(1), []byte("c"), payload, deps1)
	if got := s.Stats().ChunkedStores; got != 0 {
		t.Errorf("got %d chunked stores for 1.5 MiB under a 2 MiB limit, want 0", got)
	}
	wantLookup(t, s, qkey(1), []byte("c"), deps1, Hit, payload)
}

func TestCompression(t *testing.T) {
	mc := startMemcached(t, testenv.MemcachedOptions{})
	s := newStore(t, Options{Servers: []string{mc.Addr}, L1Bytes: -1, CompressMinBytes: 1024})
	payload := bytes.Repeat([]byte("row 12345, hello world; "), 200000) // 4.8 MB
	fill(t, s, qkey(1), []byte("c"), payload, deps1)
	it, err := memcache.New(mc.Addr).Get(qkey(1))
	if err != nil {
		t.Fatal(err)
	}
	if len(it.Value) >= len(payload)/10 || it.Value[2]&flagCompressed == 0 {
		t.Errorf("got a stored value of %d bytes (flags %x) for a %d-byte payload, want it compressed", len(it.Value), it.Value[2], len(payload))
	}
	if got := s.Stats().ChunkedStores; got != 0 {
		t.Errorf("got %d chunked stores, want 0 once compressed", got)
	}
	wantLookup(t, s, qkey(1), []byte("c"), deps1, Hit, payload)
	// Small payloads are stored as they are.
	fill(t, s, qkey(2), []byte("c"), []byte("tiny"), deps1)
	wantLookup(t, s, qkey(2), []byte("c"), deps1, Hit, []byte("tiny"))
}

func TestRawNamespace(t *testing.T) {
	forEachMode(t, func(t *testing.T, opts Options) {
		s := newStore(t, opts)
		ctx := context.Background()
		if err := s.RawSet(ctx, "kv:a", []byte("1"), 0); err != nil {
			t.Fatal(err)
		}
		if err := s.RawSet(ctx, "kv:b%/ü", []byte("2"), time.Hour); err != nil {
			t.Fatal(err)
		}
		if err := s.RawSet(ctx, "other", []byte("3"), 0); err != nil {
			t.Fatal(err)
		}
		fill(t, s, qkey(1), []byte("c"), []byte("p"), deps1)
		got, err := rawGet(ctx, s, "kv:a", "kv:b%/ü", "kv:none")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || string(got["kv:a"]) != "1" || string(got["kv:b%/ü"]) != "2" {
			t.Errorf("got %q, want kv:a=1 and kv:b%%/ü=2", got)
		}
		keys, err := s.RawKeys(ctx, "kv:")
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(keys)
		if want := []string{"kv:a", "kv:b%/ü"}; !slices.Equal(keys, want) {
			t.Errorf("got keys %q, want %q", keys, want)
		}
		keys, _ = s.RawKeys(ctx, "")
		for _, k := range keys {
			if isReserved(k) {
				t.Errorf("RawKeys listed reserved key %q", k)
			}
		}
		for _, k := range []string{"q:x", "g:db.t1", "i:c:1"} {
			if err := s.RawSet(ctx, k, []byte("x"), 0); !errors.Is(err, ErrReservedKey) {
				t.Errorf("RawSet(%q): got %v, want ErrReservedKey", k, err)
			}
		}
		if err := s.RawSet(ctx, "kv:has space", []byte("x"), 0); !errors.Is(err, ErrBadKey) {
			t.Errorf("got %v for a key with a space, want ErrBadKey", err)
		}
		for _, want := range []bool{true, false} {
			existed, err := s.RawDelete(ctx, "kv:a")
			if err != nil || existed != want {
				t.Errorf("RawDelete: got (%v, %v), want (%v, nil)", existed, err, want)
			}
		}
	})
}

func TestRawInteropWithPlainClient(t *testing.T) {
	mc := startMemcached(t, testenv.MemcachedOptions{})
	s := newStore(t, Options{Servers: []string{mc.Addr}})
	c := memcache.New(mc.Addr)
	ctx := context.Background()
	if err := s.RawSet(ctx, "kv:page", []byte("<html>"), time.Minute); err != nil {
		t.Fatal(err)
	}
	it, err := c.Get("kv:page")
	if err != nil || string(it.Value) != "<html>" {
		t.Fatalf("plain client got (%v, %v), want <html>", it, err)
	}
	if err := c.Set(&memcache.Item{Key: "kv:from-elsewhere", Value: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	keys, err := s.RawKeys(ctx, "kv:")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	if want := []string{"kv:from-elsewhere", "kv:page"}; !slices.Equal(keys, want) {
		t.Errorf("got keys %q, want %q", keys, want)
	}
}

func TestMultipleServers(t *testing.T) {
	var servers []string
	var mcs []*testenv.Memcached
	for range 3 {
		mc := startMemcached(t, testenv.MemcachedOptions{})
		mcs = append(mcs, mc)
		servers = append(servers, mc.Addr)
	}
	s := newStore(t, Options{Servers: servers, L1Bytes: -1})
	ctx := context.Background()
	for i := range 60 {
		fill(t, s, qkey(i), []byte("c"), []byte(strconv.Itoa(i)), deps1)
	}
	for i := range 60 {
		wantLookup(t, s, qkey(i), []byte("c"), deps1, Hit, []byte(strconv.Itoa(i)))
	}
	for _, mc := range mcs {
		if n := mc.Stats(t, "")["curr_items"]; n == "0" {
			t.Errorf("server %s holds no items, want keys spread over every server", mc.Addr)
		}
	}
	if err := s.RawSet(ctx, "kv:x", []byte("1"), 0); err != nil {
		t.Fatal(err)
	}
	keys, err := s.RawKeys(ctx, "kv:")
	if err != nil || !slices.Equal(keys, []string{"kv:x"}) {
		t.Errorf("got keys %q (%v), want [kv:x]", keys, err)
	}
}

func TestBadKeys(t *testing.T) {
	s := newStore(t, Options{})
	ctx := context.Background()
	if _, _, _, st := s.Lookup(ctx, "kv:x", nil, nil); st != Error {
		t.Errorf("got %v for a non-query key, want error", st)
	}
	if err := s.Put(ctx, "kv:x", &Entry{}); !errors.Is(err, ErrBadKey) {
		t.Errorf("got %v, want ErrBadKey", err)
	}
	if err := s.Put(ctx, qkey(1), &Entry{Deps: deps1}); !errors.Is(err, ErrBadEntry) {
		t.Errorf("got %v, want ErrBadEntry", err)
	}
	if k := QueryKey([16]byte{0xab}); k != "q:ab000000000000000000000000000000" {
		t.Errorf("got %q", k)
	}
	long := string(bytes.Repeat([]byte("x"), 300))
	if k := genKey(long); len(k) > 250 || !legalKey(k) {
		t.Errorf("got gen key %q for a long dep, want a legal one", k)
	}
	if k := genKey("db.t 1"); !legalKey(k) {
		t.Errorf("got gen key %q for a dep with a space, want a legal one", k)
	}
}

func TestRawKeysConcurrent(t *testing.T) {
	mc := startMemcached(t, testenv.MemcachedOptions{})
	s := newStore(t, Options{Servers: []string{mc.Addr}})
	ctx := context.Background()
	for i := range 2000 {
		if err := s.RawSet(ctx, "kv:"+strconv.Itoa(i), []byte("v"), 0); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			keys, err := s.RawKeys(ctx, "kv:")
			if err != nil || len(keys) != 2000 {
				t.Errorf("got %d keys (%v), want 2000", len(keys), err)
			}
		}()
	}
	wg.Wait()
}

// TestBumpPipelined: the bumps of several deps, spread over two servers,
// go out pipelined; generations that exist are incremented, and missing
// or clobbered ones are created, all newer than before.
func TestBumpPipelined(t *testing.T) {
	mc1 := startMemcached(t, testenv.MemcachedOptions{})
	mc2 := startMemcached(t, testenv.MemcachedOptions{})
	var logs testenv.LogBuffer
	s := newStore(t, Options{Servers: []string{mc1.Addr, mc2.Addr}, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	ctx := context.Background()
	var deps []string
	for i := range 40 {
		deps = append(deps, fmt.Sprintf("db.t%d", i))
	}
	before, ok := s.Snapshot(ctx, deps[:20]) // these exist; the others do not
	if !ok {
		t.Fatal("Snapshot failed")
	}
	// One is clobbered with a non-number.
	if err := s.mc.Set(&memcache.Item{Key: s.keys.key(deps[3]), Value: []byte("junk")}); err != nil {
		t.Fatal(err)
	}
	if err := s.bump(ctx, deps); err != nil {
		t.Fatalf("bump: %v", err)
	}
	after, ok := s.Snapshot(ctx, deps)
	if !ok {
		t.Fatal("Snapshot failed")
	}
	for i := range deps[:20] {
		if i != 3 && after[i] != before[i]+1 {
			t.Errorf("%s: generation %d after one bump, want %d", deps[i], after[i], before[i]+1)
		}
	}
	if after[3] == before[3] {
		t.Errorf("%s: the clobbered generation was not renewed", deps[3])
	}
	if st := s.Stats(); st.PendingBumps != 0 || st.MemcachedErrors != 0 {
		t.Errorf("pending %d, errors %d; want none", st.PendingBumps, st.MemcachedErrors)
	}
	// A server gone: its deps are pending, the other's bumped.
	mc2.Close()
	if err := s.bump(ctx, deps); !errors.Is(err, ErrPending) {
		t.Errorf("bump with a server down: %v, want ErrPending", err)
	}
	if n := s.Stats().PendingBumps; n == 0 || n == int64(len(deps)) {
		t.Errorf("%d pending of %d deps over two servers, one down; want some", n, len(deps))
	}
	// The warning says why, not only that.
	if out := logs.String(); !strings.Contains(out, "bump failed; pending") || !strings.Contains(out, "err=") {
		t.Errorf("log %q: want the failed bump with its error", out)
	}
}

// TestFailedLookupIsLogged: with memcached gone, a lookup fails open (a
// miss, which the server answers), is counted, and is logged with its
// error, a line a second at most however many fail.
func TestFailedLookupIsLogged(t *testing.T) {
	mc := startMemcached(t, testenv.MemcachedOptions{})
	var logs testenv.LogBuffer
	s := newStore(t, Options{Servers: []string{mc.Addr}, L1Bytes: -1, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	fill(t, s, qkey(1), []byte("c"), []byte("rows"), deps1)
	mc.Close()
	for i := range 50 {
		if _, _, _, st := s.Lookup(context.Background(), qkey(i), []byte("c"), deps1); st == Hit {
			t.Fatalf("lookup %d with memcached gone: a hit", i)
		}
	}
	if n := s.Stats().MemcachedErrors; n == 0 {
		t.Errorf("memcached errors %d after failed lookups, want some", n)
	}
	out := logs.String()
	if n := strings.Count(out, "memcached operation failed"); n < 1 || n > 2 || !strings.Contains(out, "err=") {
		t.Errorf("log %q: want one or two lines of the failed lookups, with their error", out)
	}
}

// TestCorruptValueIsMiss damages a cached value in memcached, a byte of
// its rows, and reads it back: a miss, never the damaged rows.
func TestCorruptValueIsMiss(t *testing.T) {
	mc := startMemcached(t, testenv.MemcachedOptions{})
	s := newStore(t, Options{Servers: []string{mc.Addr}, L1Bytes: -1})
	payload := []byte("\x01\x00\x00\x01\x01rows of the result")
	fill(t, s, qkey(1), []byte("c"), payload, deps1)
	wantLookup(t, s, qkey(1), []byte("c"), deps1, Hit, payload)

	c := memcache.New(mc.Addr)
	it, err := c.Get(qkey(1))
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(it.Value, []byte("rows"))
	if i < 0 {
		t.Fatalf("rows not found in the stored value %q", it.Value)
	}
	it.Value[i] = 'R'
	if err := c.Set(it); err != nil {
		t.Fatal(err)
	}
	wantLookup(t, s, qkey(1), []byte("c"), deps1, Miss, nil)
}

// TestBumpOfMissingGeneration: a bump leaves a generation that memcached
// no longer holds missing (no round trips to create it), and no entry
// stored under its old value is served again, by this sidecar or another,
// while a read racing the write still cannot store stale rows.
func TestBumpOfMissingGeneration(t *testing.T) {
	mc := startMemcached(t, testenv.MemcachedOptions{})
	opts := Options{Servers: []string{mc.Addr}}
	a, b := newStore(t, opts), newStore(t, opts)
	ctx := context.Background()
	fill(t, a, qkey(1), []byte("a"), []byte("old"), deps1)
	wantLookup(t, b, qkey(1), []byte("a"), deps1, Hit, []byte("old"))
	// memcached evicts the table's generation, not the entry.
	if err := a.mc.Delete(a.keys.key("db.t1")); err != nil {
		t.Fatal(err)
	}
	a.Bump(ctx, []string{"db.t1"})
	if _, err := a.mc.Get(a.keys.key("db.t1")); !errors.Is(err, memcache.ErrCacheMiss) {
		t.Fatalf("after a bump of a missing generation: %v, want it still missing", err)
	}
	if st := a.Stats(); st.PendingBumps != 0 {
		t.Fatalf("a bump of a missing generation is pending")
	}
	// Neither sidecar serves the entry: b checks memcached (no local
	// bump reached it), and the read recreates the generation afresh.
	wantLookup(t, b, qkey(1), []byte("a"), deps1, Miss, nil)
	wantLookup(t, a, qkey(1), []byte("a"), deps1, Miss, nil)
	// The race: generations read (creating the missing one), a write
	// bumps, then the read's old rows are stored: never served.
	if err := a.mc.Delete(a.keys.key("db.t1")); err != nil {
		t.Fatal(err)
	}
	storeAcrossBump(t, b, a, []byte("a"))
}

// TestLookupCreatesGenerationsInItsGet: the generations a sidecar has
// never seen are created in the lookup's own round trip (an add without a
// reply, just before the get), not by a second one after it; an add never
// changes a generation that exists, so what another sidecar stored under
// it still hits, and a write between the read and its store still keeps
// the read's rows out.
func TestLookupCreatesGenerationsInItsGet(t *testing.T) {
	mc := startMemcached(t, testenv.MemcachedOptions{})
	opts := Options{Servers: []string{mc.Addr}}
	a, b := newStore(t, opts), newStore(t, opts)
	fill(t, a, qkey(1), []byte("a"), []byte("rows"), deps1)
	if n := a.stats.genCreates.Load(); n != 0 {
		t.Errorf("a lookup of generations never seen took %d more round trips to create them", n)
	}
	gens := map[string]string{}
	for _, d := range deps1 {
		it, err := a.mc.Get(a.keys.key(d))
		if err != nil {
			t.Fatalf("generation of %s after a lookup: %v", d, err)
		}
		if _, ok := parseGen(it.Value); !ok {
			t.Fatalf("generation of %s after a lookup: %q", d, it.Value)
		}
		gens[d] = string(it.Value)
	}
	// b has never seen them either: its adds leave them as they are.
	wantLookup(t, b, qkey(1), []byte("a"), deps1, Hit, []byte("rows"))
	for _, d := range deps1 {
		if it, err := a.mc.Get(a.keys.key(d)); err != nil || string(it.Value) != gens[d] {
			t.Fatalf("generation of %s after another sidecar's lookup: %v %v, want %s", d, it, err, gens[d])
		}
	}
	if n := b.stats.genCreates.Load(); n != 0 {
		t.Errorf("a lookup of generations that exist took %d more round trips", n)
	}
	// A read racing a write, on generations created by the read.
	if err := a.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	c := newStore(t, opts)
	ctx := context.Background()
	_, _, cur, st := c.Lookup(ctx, qkey(2), []byte("b"), deps1)
	if st != Miss {
		t.Fatalf("lookup after a flush: %v, want a miss", st)
	}
	b.Bump(ctx, []string{"db.t1"})
	e := &Entry{Check: []byte("b"), Payload: []byte("old rows"), Deps: deps1, Gens: cur, Expires: time.Now().Add(time.Hour)}
	if err := c.Put(ctx, qkey(2), e); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*Store{a, b, c} {
		wantLookup(t, s, qkey(2), []byte("b"), deps1, Miss, nil)
	}
}

// TestPendingBumpsBounded: while memcached is away, bumps of ever more
// rows give way to one pending bump of the global generation, so the set
// (and the journal written with each new dep) stays small; every entry
// is bypassed meanwhile, and the global bump lands once memcached is back.
func TestPendingBumpsBounded(t *testing.T) {
	mc := startMemcached(t, testenv.MemcachedOptions{})
	j := &memJournal{}
	s := newStore(t, Options{Servers: []string{mc.Addr}, Timeout: time.Second, Journal: j})
	ctx := context.Background()
	fill(t, s, qkey(1), []byte("c"), []byte("p"), deps1)
	if err := mc.Kill(); err != nil {
		t.Fatal(err)
	}
	for i := range pendingMax + 500 {
		s.Bump(ctx, []string{fmt.Sprintf("db.rows#%d", i)})
	}
	if got := s.Stats().PendingBumps; got != 1 {
		t.Fatalf("got %d pending bumps after %d rows, want the global one alone", got, pendingMax+500)
	}
	if got := j.last(); len(got) != 1 || got[0] != "*" {
		t.Fatalf("journal: %q, want the global generation alone", got)
	}
	if j.saves() > pendingMax+1 {
		t.Errorf("the journal was written %d times for %d bumps", j.saves(), pendingMax+500)
	}
	if _, _, _, st := s.Lookup(ctx, qkey(2), []byte("c"), []string{"db.*", "db.other"}); st != Bypass {
		t.Errorf("got %v for an entry of another table, want bypass", st)
	}
	if err := mc.Restart(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the global bump to land", func() bool { return s.Stats().PendingBumps == 0 })
	if got := j.last(); len(got) != 0 {
		t.Errorf("journal after the bump landed: %q, want empty", got)
	}
	wantLookup(t, s, qkey(1), []byte("c"), deps1, Miss, nil)
}

// memJournal is a Journal in memory that counts its saves.
type memJournal struct {
	mu   sync.Mutex
	deps []string
	n    int
}

func (j *memJournal) Load() ([]string, error) { return nil, nil }

func (j *memJournal) Save(deps []string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.deps, j.n = append([]string(nil), deps...), j.n+1
	return nil
}

func (j *memJournal) last() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.deps
}

func (j *memJournal) saves() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.n
}

// TestRawKeysSkipsUnnamableKeys: a key another memcached client stored
// through the meta protocol, in base64, with a space in it, is not
// listed: it would make every read of the list fail.
func TestRawKeysSkipsUnnamableKeys(t *testing.T) {
	mc := startMemcached(t, testenv.MemcachedOptions{})
	s := newStore(t, Options{Servers: []string{mc.Addr}})
	ctx := context.Background()
	if err := s.RawSet(ctx, "kv:ok", []byte("1"), 0); err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", mc.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	key := base64.StdEncoding.EncodeToString([]byte("kv:sp ace"))
	if _, err := fmt.Fprintf(c, "ms %s 1 b\r\nx\r\n", key); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || line != "HD\r\n" {
		t.Fatalf("ms of a base64 key: %q %v", line, err)
	}
	keys, err := s.RawKeys(ctx, "kv:")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(keys, []string{"kv:ok"}) {
		t.Errorf("RawKeys = %q, want only kv:ok", keys)
	}
	if _, err := rawGet(ctx, s, keys...); err != nil {
		t.Errorf("reading the listed keys: %v", err)
	}
}

func TestLogEvery(t *testing.T) {
	var l logEvery
	t0 := time.Unix(1000, 0)
	if ok, held := l.allow(t0); !ok || held != 0 {
		t.Fatalf("first line: %v %d, want let through, none held", ok, held)
	}
	for i := range 5 {
		if ok, _ := l.allow(t0.Add(time.Duration(i) * 100 * time.Millisecond)); ok {
			t.Fatalf("line %d within the second was let through", i)
		}
	}
	if ok, held := l.allow(t0.Add(time.Second)); !ok || held != 5 {
		t.Fatalf("a second later: %v %d, want let through with 5 held", ok, held)
	}
}

// TestRawKeysConcurrent: memcached lists keys for one client at a time
// and answers the others BUSY. Sixteen listings at once of a tiny namespace
// each take milliseconds; none may fail by its deadline because it kept
// losing the race for the crawler.
func TestRawKeysManyAtOnce(t *testing.T) {
	s := newStore(t, Options{Servers: []string{startMemcached(t, testenv.MemcachedOptions{}).Addr}, RawTimeout: 2 * time.Second})
	ctx := context.Background()
	for i := range 20 {
		if err := s.RawSet(ctx, fmt.Sprintf("kv:k%d", i), []byte("v"), 0); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	var failed atomic.Int64
	var first atomic.Value
	for range 16 {
		wg.Go(func() {
			for range 30 {
				keys, err := s.RawKeys(ctx, "kv:")
				if err != nil || len(keys) != 20 {
					failed.Add(1)
					first.CompareAndSwap(nil, fmt.Sprintf("%d keys, %v", len(keys), err))
				}
			}
		})
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		t.Errorf("%d of 480 concurrent listings failed or missed keys; the first: %v", n, first.Load())
	}
}
