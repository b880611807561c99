package store

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mycached/mycached/mysqlproxy/internal/testenv"
)

// gatedMemcached answers gets from a fixed map, but only when the test
// lets each one through: every get line received is sent on lines, and
// its reply waits for a value on release.
type gatedMemcached struct {
	ln      net.Listener
	values  map[string]string
	lines   chan string
	release chan struct{}
	wg      sync.WaitGroup
}

func startGatedMemcached(t *testing.T, values map[string]string) *gatedMemcached {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &gatedMemcached{ln: ln, values: values, lines: make(chan string, 100), release: make(chan struct{})}
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			g.wg.Add(1)
			go g.handle(nc)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		close(g.release)
		g.wg.Wait()
	})
	return g
}

func (g *gatedMemcached) handle(nc net.Conn) {
	defer g.wg.Done()
	defer nc.Close()
	r := bufio.NewReader(nc)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimRight(line, "\r\n")
		g.lines <- line
		if _, ok := <-g.release; !ok {
			return
		}
		var reply strings.Builder
		for _, k := range strings.Fields(line)[1:] {
			if v, ok := g.values[k]; ok {
				fmt.Fprintf(&reply, "VALUE %s 0 %d\r\n%s\r\n", k, len(v), v)
			}
		}
		reply.WriteString("END\r\n")
		if _, err := nc.Write([]byte(reply.String())); err != nil {
			return
		}
	}
}

func (g *gatedMemcached) nextLine(t *testing.T) string {
	t.Helper()
	select {
	case l := <-g.lines:
		return l
	case <-time.After(30 * time.Second):
		t.Fatal("gave up waiting for a get")
		return ""
	}
}

// queued returns the number of lookups waiting in the store's batcher for
// raw (kv) reads.
func queued(s *Store) int {
	b := s.pools[0].batchers[s.opts.RawTimeout]
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.queue)
}

type rawResult struct {
	keys []string
	vals [][]byte
	err  error
}

func rawGetAsync(s *Store, keys ...string) chan rawResult {
	return rawGetAsyncCtx(s, false, keys...)
}

// rawGetAsyncCtx is rawGetAsync, as a kv statement makes it when
// statement is set: with a context whose deadline is RawTimeout away.
func rawGetAsyncCtx(s *Store, statement bool, keys ...string) chan rawResult {
	ch := make(chan rawResult, 1)
	go func() {
		ctx, cancel := context.Background(), func() {}
		if statement {
			ctx, cancel = context.WithTimeout(ctx, s.opts.RawTimeout)
		}
		defer cancel()
		vals, err := s.RawGet(ctx, keys)
		ch <- rawResult{keys, vals, err}
	}()
	return ch
}

// TestBatchedLookupsShareOneGet holds every get in flight so that the
// next lookups queue, then checks that the queued ones went out as one get of
// their distinct keys and that each lookup got exactly its own values. The
// reads of kv statements, each with its deadline, share gets too.
func TestBatchedLookupsShareOneGet(t *testing.T) {
	for _, statement := range []bool{false, true} {
		t.Run(fmt.Sprintf("statement deadline %v", statement), func(t *testing.T) {
			testBatchedLookupsShareOneGet(t, statement)
		})
	}
}

func testBatchedLookupsShareOneGet(t *testing.T, statement bool) {
	values := map[string]string{"kv:a": "1", "kv:b": "22", "kv:c": "", "kv:d": "4444"}
	g := startGatedMemcached(t, values)
	s := newStore(t, Options{Servers: []string{g.ln.Addr().String()}, NoServerMarks: true, RawTimeout: 30 * time.Second})

	// Fill every place in flight.
	firstKeys := [][]string{{"kv:a"}, {"kv:b", "kv:zz"}, {"kv:c"}}[:DefaultGetsInFlight]
	var first []chan rawResult
	var want, inFlight []string
	for _, keys := range firstKeys {
		first = append(first, rawGetAsyncCtx(s, statement, keys...))
		want = append(want, "get "+strings.Join(keys, " "))
		inFlight = append(inFlight, g.nextLine(t))
	}
	slices.Sort(want)
	slices.Sort(inFlight)
	if !slices.Equal(inFlight, want) {
		t.Fatalf("in flight: got %q, want %q", inFlight, want)
	}
	lookups := [][]string{
		{"kv:a"}, {"kv:c", "kv:a"}, {"kv:zz"}, {"kv:d", "kv:b", "kv:c"}, {"kv:a"},
		{"kv:b"}, {"kv:d"}, {"kv:zz", "kv:yy"}, {"kv:c"}, {"kv:a", "kv:b", "kv:c", "kv:d"},
	}
	var rest []chan rawResult
	for i, keys := range lookups {
		rest = append(rest, rawGetAsyncCtx(s, statement, keys...))
		waitFor(t, "the lookup to queue", func() bool { return queued(s) == i+1 })
	}

	// One get in flight answers, and its lookup hands the lead to the
	// first queued one.
	g.release <- struct{}{}
	batch := g.nextLine(t)
	// Distinct keys, in the order the queued lookups first ask for them.
	if want := "get kv:a kv:c kv:zz kv:d kv:b kv:yy"; batch != want {
		t.Errorf("queued lookups sent %q, want %q", batch, want)
	}
	// The gets still in flight, and the batch.
	for range DefaultGetsInFlight {
		g.release <- struct{}{}
	}
	for _, ch := range append(first, rest...) {
		r := <-ch
		if r.err != nil {
			t.Errorf("lookup %q: %v", r.keys, r.err)
			continue
		}
		for i, k := range r.keys {
			want, ok := values[k]
			switch got := r.vals[i]; {
			case !ok && got != nil:
				t.Errorf("lookup %q: key %s: got %q, want a miss", r.keys, k, got)
			case ok && (got == nil || string(got) != want):
				t.Errorf("lookup %q: key %s: got %q, want %q", r.keys, k, got, want)
			}
		}
	}
	st := s.Stats()
	if want := uint64(DefaultGetsInFlight + len(lookups)); st.MemcachedGets != want || st.MemcachedGetWrites != DefaultGetsInFlight+1 {
		t.Errorf("got %d gets in %d writes, want %d in %d", st.MemcachedGets, st.MemcachedGetWrites, want, DefaultGetsInFlight+1)
	}
	select {
	case l := <-g.lines:
		t.Errorf("unexpected get %q", l)
	default:
	}
}

// TestQueuedLookupPastDeadline: a lookup whose deadline passes while it
// waits in the queue fails without being sent, and the others go on.
func TestQueuedLookupPastDeadline(t *testing.T) {
	g := startGatedMemcached(t, map[string]string{"kv:a": "1"})
	s := newStore(t, Options{Servers: []string{g.ln.Addr().String()}, NoServerMarks: true})
	b := s.pools[0].batchers[s.opts.RawTimeout]
	get := func(key string, deadline time.Time) chan rawResult {
		ch := make(chan rawResult, 1)
		go func() {
			vals := make([][]byte, 1)
			err := b.get([]string{key}, vals, deadline, nil)
			ch <- rawResult{[]string{key}, vals, err}
		}()
		return ch
	}
	long := time.Now().Add(30 * time.Second)
	var first []chan rawResult
	for range DefaultGetsInFlight {
		first = append(first, get("kv:a", long))
		g.nextLine(t)
	}
	late := get("kv:late", time.Now().Add(50*time.Millisecond))
	waitFor(t, "the lookup to queue", func() bool { return queued(s) == 1 })
	next := get("kv:a", long)
	waitFor(t, "the lookup to queue", func() bool { return queued(s) == 2 })
	time.Sleep(100 * time.Millisecond)
	g.release <- struct{}{}
	if l := g.nextLine(t); l != "get kv:a" {
		t.Errorf("the queue sent %q, want \"get kv:a\" (the late lookup must not be sent)", l)
	}
	for range DefaultGetsInFlight {
		g.release <- struct{}{}
	}
	var ne net.Error
	if r := <-late; !errors.As(r.err, &ne) || !ne.Timeout() {
		t.Errorf("late lookup: got %q, %v, want a timeout", r.vals, r.err)
	}
	for _, ch := range append(first, next) {
		if r := <-ch; r.err != nil || string(r.vals[0]) != "1" {
			t.Errorf("lookup: got %q, %v, want \"1\"", r.vals, r.err)
		}
	}
}

// TestConcurrentLookupsGetTheirOwnValues runs many concurrent lookups of
// overlapping keys, some missing and some empty, against a real memcached
// and checks every value each one got.
func TestConcurrentLookupsGetTheirOwnValues(t *testing.T) {
	mc := startMemcached(t, testenv.MemcachedOptions{})
	s := newStore(t, Options{Servers: []string{mc.Addr}})
	ctx := context.Background()
	want := map[string]string{}
	var keys []string
	for i := range 40 {
		k := fmt.Sprintf("kv:conc-%d", i)
		keys = append(keys, k)
		if i%5 == 4 {
			continue // missing
		}
		v := strings.Repeat(fmt.Sprint(i), i%7*30)
		want[k] = v
		if err := s.RawSet(ctx, k, []byte(v), 0); err != nil {
			t.Fatal(err)
		}
	}
	before := s.Stats().MemcachedGets
	const workers, each = 32, 200
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for range each {
				ks := make([]string, 1+rng.IntN(5))
				for i := range ks {
					ks[i] = keys[rng.IntN(len(keys))]
				}
				vals, err := s.RawGet(ctx, ks)
				if err != nil {
					errs <- err
					return
				}
				for i, k := range ks {
					v, ok := want[k]
					if (vals[i] != nil) != ok || string(vals[i]) != v {
						errs <- fmt.Errorf("key %s: got %q (present %v), want %q (present %v)", k, vals[i], vals[i] != nil, v, ok)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	st := s.Stats()
	if got := st.MemcachedGets - before; got != workers*each {
		t.Errorf("got %d gets, want %d", got, workers*each)
	}
	t.Logf("%d lookups in %d writes", st.MemcachedGets, st.MemcachedGetWrites)
}

// TestBatcherNarrowsUnderLoad: a load that keeps the queue filling
// narrows a batcher to one get in flight, and a lighter one widens it
// again. A load is given as its batch size with two gets in flight and
// with one (with one, batches are larger: the queue fills for a whole
// round trip).
func TestBatcherNarrowsUnderLoad(t *testing.T) {
	b := &batcher{maxInFlight: 2}
	steps := []struct {
		wide, narrow, limit int
	}{
		{1, 1, 2}, // idle
		{2, 3, 2}, // 8 readers
		{5, 8, 1}, // 32 readers
		{4, 7, 1},
		{2, 3, 2}, // back to 8
		{3, 5, 2},
		{6, 10, 1},
		{1, 1, 2},
	}
	for i, st := range steps {
		for range 3 * meanDecay {
			n := st.wide
			if b.limit() == 1 {
				n = st.narrow
			}
			b.noteBatch(n)
		}
		if got := b.limit(); got != st.limit {
			t.Errorf("step %d (batches of %d, or %d with one get in flight): limit %d, want %d (mean %d/16)",
				i, st.wide, st.narrow, got, st.limit, b.meanSize*16/meanUnit)
		}
	}
}

// TestBatcherHoldsItsWidthUnderUnevenBatches: under a steady load the
// batch sizes swing (narrowed at 32 readers, a lookup or two, then nearly
// all of them), and a streak of small batches must not widen the
// batcher, nor a few large ones narrow it at a light load.
func TestBatcherHoldsItsWidthUnderUnevenBatches(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pattern []int // batch sizes in the state the load settles in
		limit   int
	}{
		{"32 readers, narrowed", []int{1, 1, 1, 2, 1, 30, 1, 3, 1, 28, 1, 1, 2, 25}, 1},
		{"8 readers, two in flight", []int{1, 1, 1, 1, 2, 1, 3, 1, 6, 1, 1, 6, 7}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &batcher{maxInFlight: 2}
			if tc.limit == 1 {
				b.narrow, b.meanSize = true, widenBelow+meanUnit
			}
			changes := 0
			for range 200 {
				for _, n := range tc.pattern {
					was := b.limit()
					b.noteBatch(n)
					if b.limit() != was {
						changes++
					}
				}
			}
			if changes != 0 || b.limit() != tc.limit {
				t.Errorf("limit changed %d times and ended at %d, want no change from %d (mean %d/%d)",
					changes, b.limit(), tc.limit, b.meanSize, meanUnit)
			}
		})
	}
}

// TestNarrowedBatcherRetiresAGet: once narrowed, a get that ends while
// another is still in flight gives up its place instead of taking the
// queue, and the other hands the whole queue on as one get.
func TestNarrowedBatcherRetiresAGet(t *testing.T) {
	values := map[string]string{"kv:a": "1", "kv:b": "2", "kv:c": "3"}
	g := startGatedMemcached(t, values)
	s := newStore(t, Options{Servers: []string{g.ln.Addr().String()}, NoServerMarks: true, RawTimeout: 30 * time.Second})
	b := s.pools[0].batchers[s.opts.RawTimeout]
	first := []chan rawResult{rawGetAsync(s, "kv:a"), rawGetAsync(s, "kv:a")}
	g.nextLine(t)
	g.nextLine(t)
	b.mu.Lock()
	b.narrow = true
	b.meanSize = widenBelow + meanUnit
	b.mu.Unlock()
	var rest []chan rawResult
	for i, k := range []string{"kv:b", "kv:c", "kv:b"} {
		rest = append(rest, rawGetAsync(s, k))
		waitFor(t, "the lookup to queue", func() bool { return queued(s) == i+1 })
	}
	g.release <- struct{}{}
	waitFor(t, "a get to retire", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.inFlight == 1
	})
	if n := queued(s); n != 3 {
		t.Fatalf("got %d queued after a get retired, want 3", n)
	}
	g.release <- struct{}{}
	if l := g.nextLine(t); l != "get kv:b kv:c" {
		t.Errorf("the queue sent %q, want \"get kv:b kv:c\"", l)
	}
	g.release <- struct{}{}
	for _, ch := range append(first, rest...) {
		r := <-ch
		if r.err != nil || string(r.vals[0]) != values[r.keys[0]] {
			t.Errorf("lookup %q: got %q, %v", r.keys, r.vals, r.err)
		}
	}
}

// TestBatchHandsOnAfterItsLookupsResume: a get's place in flight passes
// on only once every lookup it answered has resumed, and the lookups that
// arrive meanwhile wait to join the next get.
func TestBatchHandsOnAfterItsLookupsResume(t *testing.T) {
	values := map[string]string{"kv:a": "1", "kv:b": "2", "kv:c": "3"}
	g := startGatedMemcached(t, values)
	s := newStore(t, Options{Servers: []string{g.ln.Addr().String()}, NoServerMarks: true, RawTimeout: 30 * time.Second, GetsInFlight: 1})
	b := s.pools[0].batchers[s.opts.RawTimeout]
	first := rawGetAsync(s, "kv:a")
	g.nextLine(t)
	second := rawGetAsync(s, "kv:b")
	waitFor(t, "the lookup to queue", func() bool { return queued(s) == 1 })
	// A lookup whose goroutine the test plays, so that it can be slow to
	// resume: it queues behind the second and shares its get.
	held := &getReq{keys: []string{"kv:b"}, vals: make([][]byte, 1), deadline: time.Now().Add(30 * time.Second), done: make(chan struct{}, 1)}
	b.mu.Lock()
	b.queue = append(b.queue, held)
	b.mu.Unlock()

	g.release <- struct{}{}
	if l := g.nextLine(t); l != "get kv:b" {
		t.Fatalf("the queue sent %q, want \"get kv:b\"", l)
	}
	third := rawGetAsync(s, "kv:c")
	waitFor(t, "the lookup to queue", func() bool { return queued(s) == 1 })
	g.release <- struct{}{}
	<-held.done
	if held.err != nil || string(held.vals[0]) != "2" {
		t.Errorf("held lookup: got %q, %v, want \"2\"", held.vals, held.err)
	}
	if r := <-second; r.err != nil || string(r.vals[0]) != "2" {
		t.Errorf("second lookup: got %q, %v, want \"2\"", r.vals, r.err)
	}
	// The second has resumed and returned; the held lookup has not.
	select {
	case l := <-g.lines:
		t.Fatalf("%q was sent before every lookup of the last get resumed", l)
	case <-time.After(100 * time.Millisecond):
	}
	if n := queued(s); n != 1 {
		t.Fatalf("got %d lookups queued, want the third", n)
	}
	b.resumed(held.turn)
	if l := g.nextLine(t); l != "get kv:c" {
		t.Errorf("the queue sent %q, want \"get kv:c\"", l)
	}
	g.release <- struct{}{}
	for _, c := range []struct {
		ch   chan rawResult
		want string
	}{{first, "1"}, {third, "3"}} {
		if r := <-c.ch; r.err != nil || string(r.vals[0]) != c.want {
			t.Errorf("lookup %q: got %q, %v, want %q", r.keys, r.vals, r.err, c.want)
		}
	}
}
