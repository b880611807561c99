package store

import (
	"strconv"
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

func TestL1EvictsLeastRecentlyUsed(t *testing.T) {
	const perShard = 2000
	c := newL1(perShard * l1Shards * 4 / 3) // the small shards share three quarters
	keys := keysInShard(c, 4)
	entry := func() *Entry { return &Entry{Payload: make([]byte, 400)} }
	// Each entry costs about 660 bytes with its key and overhead: three
	// fit in a 2000-byte shard, four do not.
	for _, k := range keys[:3] {
		c.set(k, entry())
	}
	c.get(keys[0]) // keys[1] is now the least recently used
	c.set(keys[3], entry())
	for i, want := range []bool{true, false, true, true} {
		if got := c.get(keys[i]) != nil; got != want {
			t.Errorf("key %d present: got %v, want %v", i, got, want)
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
}

func TestL1AdmitsLargeEntryToLargeShard(t *testing.T) {
	c := newL1(1000 * l1Shards) // small shards of 750 bytes, a large one of 16000
	big := &Entry{Payload: make([]byte, 5000)}
	if !c.set("q:big", big) {
		t.Fatal("an entry over a small shard's share but within the large shard was refused")
	}
	if c.get("q:big") != big {
		t.Error("the large entry is not found")
	}
	c.set("q:big", &Entry{Payload: []byte("small again")})
	if e := c.get("q:big"); e == nil || len(e.Payload) != len("small again") {
		t.Errorf("replacing a large entry with a small one: got %v", e)
	}
	if b, n := c.usage(); n != 1 || b > 1000 {
		t.Errorf("after the replace: got (%d bytes, %d entries), want one small entry", b, n)
	}
}

func TestL1RejectsEntryLargerThanLargeShard(t *testing.T) {
	c := newL1(1000 * l1Shards)
	c.set("q:1", &Entry{Payload: []byte("small")})
	if c.set("q:1", &Entry{Payload: make([]byte, 20000)}) {
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
