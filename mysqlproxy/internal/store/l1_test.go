package store

import (
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
)

// sized returns an entry whose L1 size under key is exactly n bytes.
func sized(key string, n int64) *Entry {
	e := &Entry{}
	e.Payload = make([]byte, n-e.size(key))
	return e
}

// TestL1KeepsFrequentEntriesThroughAScan: entries read again and again
// stay in L1 while a scan reads ten times L1's size of entries once each,
// as a report or a crawler does. An LRU list kept none of them.
func TestL1KeepsFrequentEntriesThroughAScan(t *testing.T) {
	const size, hot = 1 << 10, 200
	c := newL1(2000 * size)
	hotKey := func(i int) string { return "q:hot" + strconv.Itoa(i) }
	// A full cache, as in steady state: otter counts uses only once it is
	// half full.
	for i := range 2000 {
		k := "q:fill" + strconv.Itoa(i)
		c.set(k, sized(k, size))
	}
	for round := range 10 {
		for i := range hot {
			if k := hotKey(i); c.get(k) == nil {
				if round > 2 {
					t.Fatalf("round %d: hot key %s missing before the scan", round, k)
				}
				c.set(k, sized(k, size))
			}
		}
	}
	for i := range 20000 {
		k := "q:scan" + strconv.Itoa(i)
		c.get(k)
		c.set(k, sized(k, size))
	}
	kept := 0
	for i := range hot {
		if c.get(hotKey(i)) != nil {
			kept++
		}
	}
	if kept < hot*9/10 {
		t.Errorf("after the scan, %d of %d hot entries are left, want at least %d", kept, hot, hot*9/10)
	}
}

func TestL1ByteAccounting(t *testing.T) {
	c := newL1(1 << 30)
	e1 := &Entry{Check: []byte("check"), Payload: make([]byte, 1000), Deps: []string{"db.t1", "*"}, Gens: []uint64{1, 2}}
	e2 := &Entry{Payload: make([]byte, 5000)}
	want1 := int64(len("q:1")+5+1000+2*8+len("db.t1")+16+len("*")+16) + entryOverhead
	if got := e1.size("q:1"); got != want1 {
		t.Fatalf("got size %d, want %d", got, want1)
	}
	c.set("q:1", e1)
	c.set("q:2", e2)
	wantBytes := want1 + e2.size("q:2")
	if b, n := c.usage(); b != wantBytes || n != 2 {
		t.Errorf("got (%d bytes, %d entries), want (%d, 2)", b, n, wantBytes)
	}
	c.set("q:1", e2) // replace
	wantBytes = e2.size("q:1") + e2.size("q:2")
	if b, n := c.usage(); b != wantBytes || n != 2 {
		t.Errorf("after replace: got (%d bytes, %d entries), want (%d, 2)", b, n, wantBytes)
	}
	c.delete("q:1")
	c.deleteIf("q:2", e1) // not the stored entry: kept
	if b, n := c.usage(); b != e2.size("q:2") || n != 1 {
		t.Errorf("after delete: got (%d bytes, %d entries), want (%d, 1)", b, n, e2.size("q:2"))
	}
	if got := c.bytes.Load(); got != e2.size("q:2") {
		t.Errorf("bytes counted: got %d, want %d", got, e2.size("q:2"))
	}
}

// TestL1HoldsWhatItIsSizedFor: filled with entries of one size or of
// several, up to a megabyte (memcached's item limit) and up to the whole
// bound, L1 never holds more than its bound and holds nearly all of it:
// at least the bound less two of its largest entries (what one set may
// evict beyond the room it needs). Split per shard, the bound once let
// 32 MiB hold 7.6 MiB of 1 MB entries.
func TestL1HoldsWhatItIsSizedFor(t *testing.T) {
	const limit = 32 << 20
	for _, tc := range []struct {
		name  string
		sizes []int64
	}{
		{"1KB", []int64{1 << 10}},
		{"64KB", []int64{64 << 10}},
		{"1MB", []int64{1 << 20}},
		{"mixed to 1MB", []int64{300, 1 << 10, 16 << 10, 256 << 10, 1 << 20}},
		{"mixed to 8MB", []int64{1 << 10, 1 << 20, 3 << 20, 8 << 20}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newL1(limit)
			rng := rand.New(rand.NewPCG(3, 4))
			largest := tc.sizes[len(tc.sizes)-1]
			var offered int64
			for i := 0; offered < 4*limit; i++ {
				k := "q:" + strconv.Itoa(i)
				n := tc.sizes[rng.IntN(len(tc.sizes))]
				if !c.set(k, sized(k, n)) {
					t.Fatalf("an entry of %d bytes was refused", n)
				}
				offered += n
				if b, _ := c.usage(); b > limit {
					t.Fatalf("after %d sets: %d bytes held, over the bound of %d", i+1, b, limit)
				}
			}
			b, n := c.usage()
			t.Logf("holds %.2f MiB of %.0f in %d entries", float64(b)/(1<<20), float64(limit)/(1<<20), n)
			if b < limit-2*largest {
				t.Errorf("holds %.1f MiB in %d entries, want at least %.1f of %.0f MiB", float64(b)/(1<<20), n, float64(limit-2*largest)/(1<<20), float64(limit)/(1<<20))
			}
		})
	}
}

// TestL1AdmitsAnEntryAsLargeAsTheBound: an entry the size of the bound is
// admitted, and whatever stays, the bound holds.
func TestL1AdmitsAnEntryAsLargeAsTheBound(t *testing.T) {
	c := newL1(1 << 20)
	for i := range 10 {
		k := "q:" + strconv.Itoa(i)
		c.set(k, sized(k, 100<<10))
	}
	if !c.set("q:big", sized("q:big", 1<<20)) {
		t.Fatal("an entry the size of the bound was refused")
	}
	if b, _ := c.usage(); b > 1<<20 {
		t.Errorf("holds %d bytes, over the bound of %d", b, 1<<20)
	}
	c.set("q:big", &Entry{Payload: []byte("small again")})
	if e := c.get("q:big"); e == nil || len(e.Payload) != len("small again") {
		t.Errorf("replacing an entry with a small one: got %v", e)
	}
}

func TestL1RejectsEntryLargerThanTheBound(t *testing.T) {
	c := newL1(1 << 20)
	c.set("q:1", &Entry{Payload: []byte("small")})
	if c.set("q:1", &Entry{Payload: make([]byte, 1<<20)}) {
		t.Error("set reported an oversized entry admitted")
	}
	if c.get("q:1") != nil {
		t.Error("oversized entry admitted, or the old one kept under its key")
	}
	if b, n := c.usage(); b != 0 || n != 0 {
		t.Errorf("got (%d bytes, %d entries), want (0, 0)", b, n)
	}
}

func TestL1BoundHoldsUnderChurn(t *testing.T) {
	const limit = 64 << 10
	c := newL1(limit)
	for i := range 10000 {
		c.set("q:"+strconv.Itoa(i), &Entry{Payload: make([]byte, i%700)})
		if b, _ := c.usage(); b > limit {
			t.Fatalf("after %d sets: got %d bytes, want at most %d", i+1, b, limit)
		}
	}
}

// TestL1BoundHoldsUnderConcurrentSets: sets of many sizes from several
// goroutines, with gets and deletes among them, never take L1 past its
// bound by more than the entries being set at that moment, leave it
// within the bound once they return, and leave its byte count equal to
// what its entries weigh.
func TestL1BoundHoldsUnderConcurrentSets(t *testing.T) {
	const limit, workers, largest = 4 << 20, 8, 512 << 10
	c := newL1(limit)
	stop := make(chan struct{})
	over := make(chan int64, 1)
	go func() {
		for {
			select {
			case <-stop:
				close(over)
				return
			default:
			}
			if b := c.bytes.Load(); b > limit+workers*largest {
				over <- b
				close(over)
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 5))
			for range 3000 {
				k := "q:" + strconv.Itoa(rng.IntN(2000))
				switch r := rng.IntN(10); {
				case r < 6:
					c.set(k, sized(k, int64(300+rng.IntN(largest-300))))
				case r < 9:
					c.get(k)
				default:
					c.delete(k)
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	if b, ok := <-over; ok {
		t.Errorf("L1 held %d bytes, over its bound of %d and the %d entries being set", b, limit, workers)
	}
	var sum int64
	for k, e := range c.c.All() {
		sum += e.size(k)
	}
	if b, _ := c.usage(); b != sum || b > limit {
		t.Errorf("entries weigh %d bytes, counted %d, bound %d", sum, b, limit)
	}
}
