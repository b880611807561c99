package cache

import (
	"testing"

	"github.com/mycached/mycached/mysqlproxy/internal/sqlinfo"
)

func TestProvenSet(t *testing.T) {
	var s provenSet
	a, b := proof{1, 2, 3}, proof{1, 2, 4}
	if s.has(a) {
		t.Fatal("an empty set has a proof")
	}
	s.add(a)
	if !s.has(a) || s.has(b) {
		t.Fatal("a proof of another global generation counts")
	}
	for i := range provenMax {
		s.add(proof{uint64(i), 9, 9})
	}
	if len(s.m) > provenMax {
		t.Fatalf("%d proofs kept, want at most %d", len(s.m), provenMax)
	}
}

// TestShapeOf: a statement with no digest is a shape of its own, never
// the empty shape that every such statement would share.
func TestShapeOf(t *testing.T) {
	if got := shapeOf(&sqlinfo.Info{Digest: "select ?"}, []byte("x")); got != "select ?" {
		t.Errorf("shapeOf with a digest = %q", got)
	}
	one, two := shapeOf(&sqlinfo.Info{}, []byte("select a")), shapeOf(&sqlinfo.Info{}, []byte("select b"))
	if one == two || one == "" {
		t.Errorf("shapes without a digest: %q and %q", one, two)
	}
}
