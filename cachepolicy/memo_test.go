package cachepolicy

import (
	"fmt"
	"strings"
	"testing"
)

// TestMemoBoundedInBytes: shapes of long statements, each new, cannot
// make the memo hold more than memoBytes of strings; a shape too long to
// be worth keeping is not kept; and the decision's strings are the
// memo's own.
func TestMemoBoundedInBytes(t *testing.T) {
	m := newMemo(65536)
	long := strings.Repeat("x", 40<<10)
	for i := range 4000 {
		q := &Query{Digest: fmt.Sprintf("SELECT %d %s", i, long), Kind: "select"}
		m.put(q, Decision{TTL: 1, Depends: []string{"db.t"}}, true)
	}
	total, entries := 0, 0
	for i := range m.shards {
		s := &m.shards[i]
		n := 0
		for _, e := range s.m {
			n += e.size()
			entries++
		}
		if n != s.bytes {
			t.Errorf("shard %d counts %d bytes, holds %d", i, s.bytes, n)
		}
		total += n
	}
	if total > memoBytes || entries == 0 {
		t.Errorf("the memo holds %d entries, %d bytes; want some, and at most %d bytes", entries, total, memoBytes)
	}
	huge := &Query{Digest: strings.Repeat("y", memoBytes/memoShards), Kind: "select"}
	m.put(huge, Decision{TTL: 1}, true)
	if _, _, hit := m.get(huge); hit {
		t.Error("a shape longer than a shard's share was kept")
	}
	dep := []byte("db.u")
	q := &Query{Digest: "SELECT 1", Kind: "select"}
	m.put(q, Decision{TTL: 1, Depends: []string{string(dep)}}, true)
	d, _, hit := m.get(q)
	if !hit || len(d.Depends) != 1 || d.Depends[0] != "db.u" {
		t.Errorf("memo get: %+v %v", d, hit)
	}
}
