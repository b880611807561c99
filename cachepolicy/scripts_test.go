package cachepolicy

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestDefaultDecisions(t *testing.T) {
	embedded := mustLoad(t, nil, Options{})
	file := mustLoad(t, []string{shipped("default.lua")}, Options{})
	notCacheable := selectQ("SELECT NOW()", "select now ( )")
	notCacheable.Cacheable = false
	show := selectQ("SHOW TABLES", "show tables")
	show.Kind = "show"
	tests := []struct {
		name string
		q    *Query
		want string
	}{
		{"select", selectQ("SELECT * FROM products WHERE id=1", "select * from products where id = ?", "shop.products"),
			"ttl=1m0s scope=user cache_empty=true"},
		{"not cacheable", notCacheable, "no cache"},
		{"show", show, "no cache"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, e := range []*Engine{embedded, file} {
				if got := fmtDecision(e.Cache(tt.q)); got != tt.want {
					t.Errorf("%v: got %s, want %s", e.Files(), got, tt.want)
				}
			}
			// The Lua default and the Go default agree.
			if got, want := fmtDecision(embedded.Cache(tt.q)), fmtDecision(Default{TTL: time.Minute}.Cache(tt.q)); got != want {
				t.Errorf("got %s, want the Go default's %s", got, want)
			}
		})
	}
	if embedded.HasQueryHook() {
		t.Errorf("default has a query hook")
	}
}

func TestAllowlist(t *testing.T) {
	e := mustLoad(t, []string{shipped("allowlist.lua")}, Options{})
	tests := []struct {
		name string
		q    *Query
		want string
	}{
		{"listed", selectQ("SELECT * FROM products", "select * from products", "shop.products"), "ttl=5m0s scope=user cache_empty=true"},
		{"one second", selectQ("SELECT * FROM prices", "select * from prices", "shop.prices"), "ttl=1s scope=user cache_empty=true"},
		{"join takes the smallest", selectQ("SELECT * FROM products JOIN categories", "select * from products join categories",
			"shop.products", "shop.categories"), "ttl=5m0s scope=user cache_empty=true"},
		{"unlisted", selectQ("SELECT * FROM orders", "select * from orders", "shop.orders"), "no cache"},
		{"join with unlisted", selectQ("SELECT * FROM products JOIN orders", "select * from products join orders",
			"shop.products", "shop.orders"), "no cache"},
		{"no table", selectQ("SELECT 1", "select ?"), "no cache"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := fmtDecision(e.Cache(tt.q)); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

func TestORMEntities(t *testing.T) {
	e := mustLoad(t, []string{shipped("orm-entities.lua")}, Options{})
	point := selectQ("SELECT * FROM products WHERE id = 7", "select * from products where id = ?", "shop.products")
	point.PointLookup = true
	point.Keys = []string{"7"}
	notCacheable := selectQ("SELECT NOW() FROM products WHERE id = 7", "select now ( ) from products where id = ?", "shop.products")
	notCacheable.Cacheable = false
	show := selectQ("SHOW TABLES", "show tables")
	show.Kind = "show"
	tests := []struct {
		name string
		q    *Query
		want string
	}{
		{"point lookup", point, "ttl=1h0m0s scope=user cache_empty=true"},
		{"range", selectQ("SELECT * FROM products WHERE id > 7", "select * from products where id > ?", "shop.products"),
			"ttl=5s scope=user cache_empty=true"},
		{"join", selectQ("SELECT * FROM orders JOIN products", "select * from orders join products", "shop.orders", "shop.products"),
			"ttl=5s scope=user cache_empty=true"},
		{"not cacheable", notCacheable, "no cache"},
		{"show", show, "no cache"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := fmtDecision(e.Cache(tt.q)); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
	// Another id of the same shape is answered without entering Lua.
	other := *point
	other.SQL, other.Keys = "SELECT * FROM products WHERE id = 8", []string{"8"}
	before := e.Stats().MemoHits
	if got, want := fmtDecision(e.Cache(&other)), "ttl=1h0m0s scope=user cache_empty=true"; got != want {
		t.Errorf("another id: got %s, want %s", got, want)
	}
	if got := e.Stats().MemoHits; got != before+1 {
		t.Errorf("memo hits after another id: got %d, want %d", got, before+1)
	}
}

func TestReadMostly(t *testing.T) {
	var metrics []string
	// One state, so that every call sees the same counts.
	e := mustLoad(t, []string{shipped("read-mostly.lua")}, Options{
		MaxPool: 1,
		Metrics: func(name string) { metrics = append(metrics, name) },
	})
	q := selectQ("SELECT * FROM products WHERE id = 1", "select * from products where id = ?", "shop.products")
	if _, ok := e.Cache(q); !ok {
		t.Fatalf("never-written table: got no cache, want cached")
	}
	if got := e.Invalidate(&Write{Tables: []string{"shop.products"}, Kind: "update", DB: "shop"}); got != nil {
		t.Errorf("Invalidate: got %v, want nil", got)
	}
	if _, ok := e.Cache(q); ok {
		t.Fatalf("2 reads, 1 write: got cached, want no cache")
	}
	for range 18 {
		e.Cache(q)
	}
	if _, ok := e.Cache(q); !ok {
		t.Fatalf("21 reads, 1 write: got no cache, want cached")
	}
	other := selectQ("SELECT * FROM categories", "select * from categories", "shop.categories")
	if _, ok := e.Cache(other); !ok {
		t.Errorf("other table: got no cache, want cached")
	}
	// Reads 2 to 19 of shop.products were refused.
	if want := slices.Repeat([]string{"read_mostly_skipped"}, 18); !slices.Equal(metrics, want) {
		t.Errorf("metrics: got %v, want %v", metrics, want)
	}
	if s := e.Stats(); s.MemoHits != 0 {
		t.Errorf("memo hits: got %d, want 0 (memo = false)", s.MemoHits)
	}

	// As a filter over allowlist.lua, it keeps the allowlist's ttls.
	e = mustLoad(t, []string{shipped("allowlist.lua"), shipped("read-mostly.lua")}, Options{MaxPool: 1})
	if got, want := fmtDecision(e.Cache(q)), "ttl=5m0s scope=user cache_empty=true"; got != want {
		t.Errorf("listed: got %s, want %s", got, want)
	}
	orders := selectQ("SELECT * FROM orders", "select * from orders", "shop.orders")
	if got, want := fmtDecision(e.Cache(orders)), "no cache"; got != want {
		t.Errorf("unlisted: got %s, want %s", got, want)
	}
}

func TestFKCascade(t *testing.T) {
	e := mustLoad(t, []string{shipped("fk-cascade.lua")}, Options{})
	tests := []struct {
		name string
		w    *Write
		want []string
	}{
		{"grandparent delete", &Write{Tables: []string{"shop.customers"}, Kind: "delete"}, []string{"shop.orders", "shop.order_items"}},
		{"parent update", &Write{Tables: []string{"shop.orders"}, Kind: "update"}, []string{"shop.order_items"}},
		{"insert does not cascade", &Write{Tables: []string{"shop.customers"}, Kind: "insert"}, nil},
		{"leaf", &Write{Tables: []string{"shop.order_items"}, Kind: "delete"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := e.Invalidate(tt.w); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
	// Without its own cache hook, caching falls through to the built-in.
	q := selectQ("SELECT * FROM orders", "select * from orders", "shop.orders")
	if got, want := fmtDecision(e.Cache(q)), "ttl=1m0s scope=user cache_empty=true"; got != want {
		t.Errorf("cache: got %s, want %s", got, want)
	}

	kv := &fakeKV{}
	kv.Set("fkgraph", []byte("a.p a.c\na.c a.g\n"), 0)
	e = mustLoad(t, []string{shipped("fk-cascade.lua")}, Options{KV: kv})
	got := e.Invalidate(&Write{Tables: []string{"a.p"}, Kind: "delete"})
	if want := []string{"a.c", "a.g"}; !reflect.DeepEqual(got, want) {
		t.Errorf("graph from kv: got %v, want %v", got, want)
	}
}

func TestQueryHookScripts(t *testing.T) {
	str := func(s string) *string { return &s }
	tag := mustLoad(t, []string{shipped("tag-statements.lua")}, Options{})
	cmd := mustLoad(t, []string{shipped("custom-command.lua")}, Options{})
	both := mustLoad(t, []string{shipped("custom-command.lua"), shipped("tag-statements.lua")}, Options{})
	version := QueryResult{Kind: QueryResultSet, Columns: []string{"version", "built"},
		Rows: [][]*string{{str("1.4.2"), str("2024-06-01")}}}
	tests := []struct {
		name string
		e    *Engine
		sql  string
		want QueryResult
	}{
		{"tag", tag, "SELECT 1", QueryResult{Kind: QueryRewrite, SQL: "/* app=shop user=app */ SELECT 1"}},
		{"an empty statement is not tagged", tag, " \n", QueryResult{}},
		{"nor one of semicolons, which the server refuses too", tag, " ;; ", QueryResult{}},
		{"version", cmd, "show app version", version},
		{"version spaced", cmd, "  SHOW  APP VERSION ;\n", version},
		{"other", cmd, "SELECT 1", QueryResult{}},
		{"both: version passes the tagger", both, "SHOW APP VERSION", version},
		{"both: others are tagged", both, "SELECT 2", QueryResult{Kind: QueryRewrite, SQL: "/* app=shop user=app */ SELECT 2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !tt.e.HasQueryHook() {
				t.Fatalf("HasQueryHook: got false, want true")
			}
			q := &Query{SQL: tt.sql, Kind: "select", User: "app", DB: "shop"}
			if got := tt.e.Query(q); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
	// A user name is the client's to choose: one that ends the comment
	// must not put SQL of its own before the statement.
	for user, want := range map[string]string{
		"*/ DELETE FROM shop.t -- ": "/* app=shop user=___DELETE_FROM_shop.t_--_ */ SELECT 1",
		"ev*/il":                    "/* app=shop user=ev__il */ SELECT 1",
		"app-1@x.y":                 "/* app=shop user=app-1@x.y */ SELECT 1",
	} {
		q := &Query{SQL: "SELECT 1", Kind: "select", User: user, DB: "shop"}
		if got := tag.Query(q); got.Kind != QueryRewrite || got.SQL != want {
			t.Errorf("user %q: got %+v, want the rewrite %q", user, got, want)
		}
	}
}

func TestCheck(t *testing.T) {
	out, err := Check(shipped("allowlist.lua"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ttl=5m0s", "ttl=1s", "no cache"} {
		if !contains(out, want) {
			t.Errorf("Check output lacks %q:\n%s", want, out)
		}
	}
	out, err = Check(shipped("custom-command.lua"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := `result [version built] ("1.4.2", "2024-06-01")`; !contains(out, want) {
		t.Errorf("Check output lacks %q:\n%s", want, out)
	}
	// A prepare goes to the server whatever rows the hook gives it: the
	// output says so.
	rows := writeScript(t, t.TempDir(), "rows.lua", `function query(q, next) return {columns = {"a"}, rows = {{"1"}}} end`)
	if out, err = Check(rows, nil); err != nil {
		t.Fatal(err)
	}
	if want := "prepared=true]\n  query:      result [a] (\"1\") (ignored: rows or an OK cannot answer a prepare"; !contains(out, want) {
		t.Errorf("Check output lacks %q:\n%s", want, out)
	}
	if n := strings.Count(out, "(ignored:"); n != 1 {
		t.Errorf("%d results marked ignored, want the one prepared sample's:\n%s", n, out)
	}
	bad := writeScript(t, t.TempDir(), "bad.lua", "function cache(q)\n  return {\nend\n")
	if _, err := Check(bad, nil); err == nil || !contains(err.Error(), "bad.lua:3") {
		t.Errorf("broken script: got %v, want an error naming bad.lua:3", err)
	}
}
