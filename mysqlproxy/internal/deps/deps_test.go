package deps

import "testing"

// TestNamerKeepsNamesApart: a database or table name may hold the bytes
// that structure a generation's name; two tables never share one.
func TestNamerKeepsNamesApart(t *testing.T) {
	var n Namer
	if got := n.Table("shop", "orders"); got != "shop.orders" {
		t.Errorf("Table(shop, orders) = %q, want it as it is", got)
	}
	for _, pair := range [][2][2]string{
		{{"t1.a", "b"}, {"t1", "a.b"}},
		{{"t1", "a#1"}, {"t1", "a"}},
		{{"t1", "a!nk"}, {"t1", "a"}},
		{{"t1", "%2E"}, {"t1", "."}},
		{{"*", "x"}, {"%2A", "x"}},
	} {
		a, b := n.Table(pair[0][0], pair[0][1]), n.Table(pair[1][0], pair[1][1])
		if a == b {
			t.Errorf("%q.%q and %q.%q share the name %q", pair[0][0], pair[0][1], pair[1][0], pair[1][1], a)
		}
	}
	if a, b := n.Table("t1", "a!nk"), NonKey(n.Table("t1", "a")); a == b {
		t.Errorf("table a!nk and the non-key generation of a share %q", a)
	}
	if a, b := n.Table("t1", "a#1"), Row(n.Table("t1", "a"), []string{"1"}); a == b {
		t.Errorf("table a#1 and row 1 of a share %q", a)
	}
	if a, b := n.DB("t1.a"), n.DB("t1"); a == b || a == n.Table("t1", "a.*") {
		t.Errorf("database t1.a is named %q", a)
	}
	if got, want := (Namer{Fold: true}).Table("T1.A", "B"), n.Table("t1.a", "b"); got != want {
		t.Errorf("folded: %q, want %q", got, want)
	}
}
