package cache

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestBypassReasonsListed keeps /metrics honest: every bypass reason this
// package declares is created up front, so a rate() over a reason that
// has not happened yet starts from a real 0.
func TestBypassReasonsListed(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "cache.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	listed := bypassReasons()
	n := 0
	ast.Inspect(f, func(nd ast.Node) bool {
		vs, ok := nd.(*ast.ValueSpec)
		if !ok || len(vs.Names) != 1 || len(vs.Values) != 1 || !strings.HasPrefix(vs.Names[0].Name, "why") {
			return true
		}
		lit, ok := vs.Values[0].(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return true
		}
		why, _ := strconv.Unquote(lit.Value)
		n++
		if !slices.Contains(listed, why) {
			t.Errorf("%s (%q) is not in bypassReasons", vs.Names[0].Name, why)
		}
		return true
	})
	if n < 20 {
		t.Fatalf("found only %d reasons in cache.go", n)
	}
}

// TestQueryStatsMakeRoom: a full table of shapes takes a new one once
// the shapes nobody used since the last sweep are dropped, keeps the
// ones in use with their admission state, and sweeps at most once per
// statsSweepEvery, so a flood of new shapes costs no sweep per read.
func TestQueryStatsMakeRoom(t *testing.T) {
	var q QueryStats
	name := func(i int) string { return "select ? from `t" + strconv.Itoa(i) + "`" }
	for i := range maxTrackedDigests {
		if q.stat(name(i)) == nil {
			t.Fatalf("shape %d untracked below the cap", i)
		}
	}
	hot := q.stat(name(7))
	hot.adm.state.Store(admRejected)
	// Every shape was used since the start: nothing can go.
	if q.stat("select 1") != nil {
		t.Fatal("a new shape was tracked while every tracked one was in use")
	}
	if got := q.n.Load(); got != maxTrackedDigests {
		t.Fatalf("%d shapes tracked, want %d", got, maxTrackedDigests)
	}
	// Within statsSweepEvery of that sweep, no other sweep runs.
	if q.stat(name(7)) != hot {
		t.Fatal("a shape in use lost its state")
	}
	if q.stat("select 2") != nil {
		t.Fatal("a second sweep ran within statsSweepEvery")
	}
	q.lastSweep = q.lastSweep.Add(-statsSweepEvery)
	st := q.stat("select 2")
	if st == nil {
		t.Fatal("no room made for a new shape once the others went unused")
	}
	if got := q.n.Load(); got != 2 {
		t.Fatalf("%d shapes tracked after the sweep, want the one in use and the new one", got)
	}
	if q.stat(name(7)) != hot || !hot.adm.rejected() {
		t.Fatal("the shape in use lost its admission state")
	}
	if q.stat(name(8)) == nil || q.stat(name(8)).adm.rejected() {
		t.Fatal("a dropped shape came back with state")
	}
}
