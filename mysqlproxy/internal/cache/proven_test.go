package cache

import (
	"testing"

	"github.com/mycached/mycached/mysqlproxy/internal/sqlinfo"
)

func TestProvenSet(t *testing.T) {
	var s provenSet
	a, b, c := proof{1, 2, 3, 0}, proof{1, 2, 4, 0}, proof{1, 2, 3, 1}
	if s.has(a) {
		t.Fatal("an empty set has a proof")
	}
	s.add(a)
	if !s.has(a) || s.has(b) {
		t.Fatal("a proof of another global generation counts")
	}
	if s.has(c) {
		t.Fatal("a proof from before DDL counts")
	}
	for i := range provenMax {
		s.add(proof{uint64(i), 9, 9, 9})
	}
	if len(s.m) > provenMax {
		t.Fatalf("%d proofs kept, want at most %d", len(s.m), provenMax)
	}
}

// TestShapeOf: a statement with no digest is a shape of its own, never
// the empty shape that every such statement would share; one with a
// digest keeps its names' case; and one the session's dialect reads
// otherwise than the default is a shape of its own too.
func TestShapeOf(t *testing.T) {
	d := &sqlinfo.Info{Digest: "select v from sec"}
	lower, upper := shapeOf(d, "SELECT v FROM sec", true, []byte("x")), shapeOf(d, "SELECT v FROM SEC", true, []byte("y"))
	if lower == upper {
		t.Errorf("names of another case share the shape %q", lower)
	}
	if got := shapeOf(d, "select v  from sec", true, []byte("z")); got != shapeOf(d, "select v from sec", true, []byte("w")) {
		t.Errorf("texts that differ in spaces alone have shapes %q and %q", got, shapeOf(d, "select v from sec", true, []byte("w")))
	}
	one, two := shapeOf(&sqlinfo.Info{}, "select a", true, []byte("select a")), shapeOf(&sqlinfo.Info{}, "select b", true, []byte("select b"))
	if one == two || one == "" {
		t.Errorf("shapes without a digest: %q and %q", one, two)
	}
	q := &sqlinfo.Info{Digest: "select ? from pub"}
	if a, b := shapeOf(q, `SELECT "name" FROM pub`, false, []byte("a")), shapeOf(q, `SELECT "secret" FROM pub`, false, []byte("b")); a == b {
		t.Errorf("texts read otherwise than the default share the shape %q", a)
	}
}
