package store

import (
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
)

// keysInShard returns n distinct keys that land in one L1 shard.
func keysInShard(c *l1, n int) []string {
	var out []string
	var target *l1Shard
	for i := 0; len(out) < n; i++ {
		k := "q:" + strconv.Itoa(i)
		s := c.shard(k)
		if target == nil {
			target = s
		}
		if s == target {
			out = append(out, k)
		}
	}
	return out
}

// peek reports whether key is held, without using it.
func (c *l1) peek(key string) bool {
	s := c.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[key] != nil
}

// sized returns an entry whose L1 size under key is exactly n bytes.
func sized(key string, n int64) *Entry {
	e := &Entry{}
	e.Payload = make([]byte, n-e.size(key))
	return e
}

func TestL1EvictsLeastRecentlyUsed(t *testing.T) {
	c := newL1(2000)
	keys := keysInShard(c, 4)
	// Three entries of 660 bytes fit in 2000, four do not.
	for _, k := range keys[:3] {
		c.set(k, sized(k, 660))
	}
	c.get(keys[0]) // keys[1] is now the least recently used
	c.set(keys[3], sized(keys[3], 660))
	for i, want := range []bool{true, false, true, true} {
		if got := c.get(keys[i]) != nil; got != want {
			t.Errorf("key %d present: got %v, want %v", i, got, want)
		}
	}
}

// TestL1KeepsTheMostRecentlyUsed: across shards, an eviction never takes
// the entry used last while another is there to take.
func TestL1KeepsTheMostRecentlyUsed(t *testing.T) {
	const size = 1 << 20
	c := newL1(16 * size)
	rng := rand.New(rand.NewPCG(1, 2))
	var held []string
	for i := range 500 {
		k := "q:" + strconv.Itoa(i)
		if len(held) > 1 {
			mru := held[rng.IntN(len(held))]
			if c.get(mru) == nil {
				t.Fatalf("set %d: key %s, held a moment ago, is gone", i, mru)
			}
			c.set(k, sized(k, size))
			if c.get(mru) == nil {
				t.Fatalf("set %d evicted the most recently used entry", i)
			}
		} else {
			c.set(k, sized(k, size))
		}
		held = held[:0]
		for j := 0; j <= i; j++ {
			if kj := "q:" + strconv.Itoa(j); c.peek(kj) {
				held = append(held, kj)
			}
		}
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
		t.Errorf("reserved bytes: got %d, want %d", got, e2.size("q:2"))
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

func TestL1AdmitsAnEntryAsLargeAsTheBound(t *testing.T) {
	c := newL1(1 << 20)
	for i := range 10 {
		k := "q:" + strconv.Itoa(i)
		c.set(k, sized(k, 100<<10))
	}
	if !c.set("q:big", sized("q:big", 1<<20)) {
		t.Fatal("an entry the size of the bound was refused")
	}
	if b, n := c.usage(); b != 1<<20 || n != 1 {
		t.Errorf("got (%d bytes, %d entries), want the one entry of %d", b, n, 1<<20)
	}
	c.set("q:big", &Entry{Payload: []byte("small again")})
	if e := c.get("q:big"); e == nil || len(e.Payload) != len("small again") {
		t.Errorf("replacing a large entry with a small one: got %v", e)
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
// goroutines, with gets and deletes among them, never take the bytes
// counted against the bound past it, and leave them equal to what the
// shards hold.
func TestL1BoundHoldsUnderConcurrentSets(t *testing.T) {
	const limit = 4 << 20
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
			if b := c.bytes.Load(); b > limit {
				over <- b
				close(over)
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 5))
			for range 3000 {
				k := "q:" + strconv.Itoa(rng.IntN(2000))
				switch r := rng.IntN(10); {
				case r < 6:
					c.set(k, sized(k, int64(300+rng.IntN(512<<10))))
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
		t.Errorf("the bytes counted against the bound reached %d, over %d", b, limit)
	}
	if b, _ := c.usage(); b != c.bytes.Load() || b > limit {
		t.Errorf("shards hold %d bytes, counted %d, bound %d", b, c.bytes.Load(), limit)
	}
}
