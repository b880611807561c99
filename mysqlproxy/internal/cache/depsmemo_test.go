package cache

import (
	"testing"

	"github.com/mycached/mycached/mysqlproxy/internal/sqlinfo"
)

// TestDepsMemoDatabases: one analysis keeps its dependencies in each of
// the last few databases it was read in, apart for its base and its
// row-level ones, and an entry of another generation is not returned.
func TestDepsMemoDatabases(t *testing.T) {
	var m depsMemo
	info := &sqlinfo.Info{Digest: "select v from t where id = ?"}
	dbs := []string{"a", "b", "c", "d", "e"}
	for i, db := range dbs {
		m.store(depsKey{info, db, false}, &readDeps{gen: 7, tables: []string{db + ".t"}})
		if i == 0 {
			m.store(depsKey{info, db, true}, &readDeps{gen: 7, point: true})
		}
	}
	for _, db := range dbs[1:] {
		d := m.load(depsKey{info, db, false}, 7)
		if d == nil || d.tables[0] != db+".t" {
			t.Errorf("base in %s: %+v", db, d)
		}
	}
	if d := m.load(depsKey{info, "a", false}, 7); d != nil {
		t.Errorf("base in the oldest of %d databases kept: %+v", len(dbs), d)
	}
	if d := m.load(depsKey{info, "a", true}, 7); d == nil || !d.point {
		t.Errorf("row-level in a: %+v", d)
	}
	if d := m.load(depsKey{info, "b", true}, 7); d != nil {
		t.Errorf("row-level in b, never stored: %+v", d)
	}
	if d := m.load(depsKey{info, "e", false}, 8); d != nil {
		t.Errorf("an entry of generation 7 returned for 8: %+v", d)
	}
	m.store(depsKey{info, "c", false}, &readDeps{gen: 8, tables: []string{"c2"}})
	if d := m.load(depsKey{info, "c", false}, 8); d == nil || d.tables[0] != "c2" {
		t.Errorf("c stored again: %+v", d)
	}
	if d := m.load(depsKey{info, "e", false}, 7); d == nil {
		t.Errorf("e lost when c was stored again")
	}
}
