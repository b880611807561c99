package sqlinfo

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// memoBytes returns what a's memos hold together, by their accounting.
func memoBytes(a *Analyzer) int64 {
	_, e := a.exact.usage()
	_, d := a.digest.usage()
	_, s := a.skels.usage()
	return e + d + s
}

// TestAnalyzerMemosBoundedInBytes: distinct statements of 16 KB each, whose
// analyses hold several times their text (thousands of pinned keys, long
// literals, long digests), leave the analyzer holding no more than
// MaxBytes, by its own accounting and in the live heap; and a statement
// seen twice afterwards is still answered from memory. (Unbounded, they
// held about 17 MiB.)
func TestAnalyzerMemosBoundedInBytes(t *testing.T) {
	const maxBytes = 1 << 20
	qs := bigSelects(240, 16<<10)
	before := liveHeap()
	a := NewAnalyzer(Options{ExactCap: 100000, MaxBytes: maxBytes})
	for _, q := range qs {
		if info := a.Analyze(q); info.Kind != Select || len(info.Reads) != 1 {
			t.Fatalf("a %d-byte SELECT analysed as %v reading %v", len(q), info.Kind, info.Reads)
		}
	}
	if got := memoBytes(a); got > maxBytes {
		t.Errorf("memos hold %d bytes by their accounting, want at most %d", got, maxBytes)
	}
	// Pools of scratch buffers sized for the texts come on top.
	const slack = 3 << 20
	if grew := int64(liveHeap()) - int64(before); grew > maxBytes+slack {
		t.Errorf("live heap grew by %.1f MiB, want at most %.1f MiB", float64(grew)/(1<<20), float64(maxBytes+slack)/(1<<20))
	}
	q := "SELECT c FROM sbtest1 WHERE id=42"
	if first, again := a.Analyze(q), a.Analyze(q); first != again || first.Point == nil {
		t.Errorf("after the flood, a repeated point select was not answered from the memo")
	}
	runtime.KeepAlive(a)
}

// TestMemoChargesTheAnalysis: an entry costs its key and what its analysis
// holds, which for a long VALUES list is many times the text.
func TestMemoChargesTheAnalysis(t *testing.T) {
	var text strings.Builder
	text.WriteString("INSERT INTO t (id, v) VALUES ")
	for i := range 5000 {
		if i > 0 {
			text.WriteByte(',')
		}
		fmt.Fprintf(&text, "(%d,%d)", i, i)
	}
	q := text.String()
	a := NewAnalyzer(Options{})
	info := a.Analyze(q)
	if info.Insert == nil || len(info.Insert.Rows) < 5000 {
		t.Fatalf("got inserted rows %v, want thousands of rows", info.Insert)
	}
	n, b := a.exact.usage()
	if n != 1 || b < 4*int64(len(q)) {
		t.Errorf("exact memo: got %d entries, %d bytes; want 1 entry charged over %d bytes", n, b, 4*len(q))
	}
}

func lenCost(v string) int64 { return int64(len(v)) }

// TestMemoEntryLargerThanAnEighth: an entry over an eighth of the bound is
// not kept, and replacing a kept one with it removes the old one.
func TestMemoEntryLargerThanAnEighth(t *testing.T) {
	var m shardedMemo[string]
	m.init(1000, 8000, lenCost)
	m.put("k", "small")
	m.put("big", strings.Repeat("x", 1000))
	if _, ok := m.get("big"); ok {
		t.Error("an entry over an eighth of the bound was kept")
	}
	m.put("k", strings.Repeat("x", 1000))
	if _, ok := m.get("k"); ok {
		t.Error("an oversized replacement was kept")
	}
	if n, b := m.usage(); n != 0 || b != 0 {
		t.Errorf("got (%d entries, %d bytes), want (0, 0)", n, b)
	}
}

// TestMemoAccountingUnderConcurrency: concurrent updates of keys of many
// sizes leave the memo's byte count equal to what its entries cost, and
// the memo within its bound but for the entries added while it shrank.
func TestMemoAccountingUnderConcurrency(t *testing.T) {
	const maxBytes, workers = 256 << 10, 8
	var m shardedMemo[string]
	m.init(1<<20, maxBytes, lenCost)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 5000 {
				k := strconv.Itoa((w*7919 + i*31) % 3000)
				size := (i*w + i) % (maxBytes / 10)
				m.update(k, func(old string) string { return old[:min(len(old), 10)] + strings.Repeat("v", size) })
			}
		}()
	}
	wg.Wait()
	var sum int64
	for i := range m.shards {
		s := &m.shards[i]
		var shard int64
		for _, e := range s.m {
			shard += e.cost
		}
		if shard != s.bytes {
			t.Errorf("shard %d: entries cost %d bytes, shard counts %d", i, shard, s.bytes)
		}
		sum += shard
	}
	if _, b := m.usage(); b != sum {
		t.Errorf("memo counts %d bytes, its entries cost %d", b, sum)
	}
	if sum > maxBytes+workers*maxBytes/8 {
		t.Errorf("memo holds %d bytes, want at most %d and an entry per worker", sum, maxBytes)
	}
}
