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
