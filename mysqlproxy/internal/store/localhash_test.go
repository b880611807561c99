package store

import (
	"context"
	"fmt"
	"testing"
)

// TestLocalHash: the hash of a read's local generations changes with a
// bump of any of them, whether or not it existed before, and with the
// loss of one a bump created; reading it creates no counter.
func TestLocalHash(t *testing.T) {
	s := New(Options{})
	deps := []string{"d.t#1", "d.t!nk", "d.*", "*"}
	h0 := s.LocalHash(deps)
	if h := s.LocalHash(deps); h != h0 {
		t.Fatalf("the hash moved with nothing bumped: %x, then %x", h0, h)
	}
	for _, d := range deps {
		if _, ok := s.local.lookup(d); ok {
			t.Fatalf("LocalHash created the counter of %q", d)
		}
	}
	// A bump of a dep never seen creates it: the hash changes.
	s.Bump(context.Background(), deps[:1])
	h1 := s.LocalHash(deps)
	if h1 == h0 {
		t.Fatal("a bump of a missing dep left the hash as it was")
	}
	s.Bump(context.Background(), deps[:1])
	h2 := s.LocalHash(deps)
	if h2 == h1 {
		t.Fatal("a bump of an existing dep left the hash as it was")
	}
	// The counter is lost when its shard fills: the hash changes again,
	// and does not go back to what it was before the bumps.
	sh := s.local.shard(deps[0])
	sh.mu.Lock()
	for i := 0; sh.n < maxLocalGens/localShards; i++ {
		sh.create(fmt.Sprintf("filler%d", i), 1, 0)
	}
	for {
		sh.dropHalf()
		if _, ok := sh.lookup(deps[0]); !ok {
			break
		}
	}
	sh.mu.Unlock()
	if h := s.LocalHash(deps); h == h2 || h == h0 {
		t.Fatalf("after its counter was dropped the hash is %x (before: %x, at first: %x)", h, h2, h0)
	}
}
