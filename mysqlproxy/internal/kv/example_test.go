package kv_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mycached/mycached/mysqlproxy/internal/kv"
)

// mapStore is a minimal kv.Store over a map, standing in for the cache tier.
type mapStore map[string][]byte

func (m mapStore) GetMulti(_ context.Context, keys []string) ([][]byte, error) {
	out := make([][]byte, len(keys))
	for i, k := range keys {
		if v, ok := m[k]; ok {
			out[i] = append([]byte{}, v...)
		}
	}
	return out, nil
}

func (m mapStore) Set(_ context.Context, key string, val []byte, _ time.Duration) error {
	m[key] = val
	return nil
}

func (m mapStore) DeleteMulti(_ context.Context, keys []string) (int, error) {
	n := 0
	for _, k := range keys {
		if _, ok := m[k]; ok {
			delete(m, k)
			n++
		}
	}
	return n, nil
}

func (m mapStore) Keys(_ context.Context, prefix string) ([]string, error) {
	var out []string
	for k := range m {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	return out, nil
}

func (m mapStore) ItemSizeMax(context.Context) int { return 0 }

func Example() {
	ctx := context.Background()
	store := mapStore{}
	for _, q := range []string{
		`INSERT "page:/home" = '{"json":true}' TTL 60;`,
		`SELECT "page:/home", "missing";`,
		`SELECT 'page:/home'`, // SQL: single quotes go to MySQL
		`INSERT "k" = `,
	} {
		st, ok, err := kv.Parse(q)
		switch {
		case !ok:
			fmt.Println("to MySQL")
			continue
		case err != nil:
			r := kv.ErrorResult(err)
			fmt.Println(r.Code, r.Msg)
			continue
		}
		r := kv.Exec(ctx, store, kv.Options{}, "", st)
		if r.IsRows {
			for _, row := range r.Rows {
				fmt.Printf("%s = %s\n", row[0], row[1])
			}
		} else {
			fmt.Println("OK, affected", r.Affected)
		}
	}
	fmt.Printf("memcached key: %q\n", "kv:page:/home")
	fmt.Printf("raw bytes: %s\n", store["kv:page:/home"])
	// Output:
	// OK, affected 1
	// page:/home = {"json":true}
	// to MySQL
	// 1064 mycached: kv syntax error: expected a quoted value, found end of statement
	// memcached key: "kv:page:/home"
	// raw bytes: {"json":true}
}

func ExampleStmt_Bind() {
	st, _, _ := kv.Parse("INSERT ? = ? TTL ?")
	fmt.Println("params:", st.Params)
	bound, err := st.Bind([][]byte{[]byte("k"), []byte("v"), []byte("30")})
	fmt.Println(string(bound.Keys[0]), string(bound.Value), bound.TTL, err)
	// Output:
	// params: 3
	// k v 30s <nil>
}
