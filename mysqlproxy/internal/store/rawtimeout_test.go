package store

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/mycached/mycached/mysqlproxy/internal/testenv"
)

// stoppedMemcached returns the address of a memcached that has been
// stopped: connections to it are refused.
func stoppedMemcached(t testing.TB) string {
	t.Helper()
	mc := startMemcached(t, testenv.MemcachedOptions{})
	if err := mc.Stop(); err != nil {
		t.Fatal(err)
	}
	return mc.Addr
}

// lastServerKey returns a raw key that the last of s's servers owns.
func lastServerKey(s *Store) string {
	last := len(s.pools) - 1
	for i := 0; ; i++ {
		if k := "kv:" + strconv.Itoa(i); s.ring.Index(k) == last {
			return k
		}
	}
}

// rawCalls are every raw (kv) call, each as a kv statement makes it. Calls
// of one key use one that the last server owns.
var rawCalls = []struct {
	name string
	call func(ctx context.Context, s *Store) error
}{
	{"RawGet", func(ctx context.Context, s *Store) error {
		_, err := s.RawGet(ctx, []string{lastServerKey(s)})
		return err
	}},
	{"RawSet", func(ctx context.Context, s *Store) error {
		return s.RawSet(ctx, lastServerKey(s), []byte("v"), 0)
	}},
	{"RawDelete", func(ctx context.Context, s *Store) error {
		_, err := s.RawDelete(ctx, lastServerKey(s))
		return err
	}},
	{"RawDeleteMulti", func(ctx context.Context, s *Store) error {
		keys := make([]string, 500)
		for i := range keys {
			keys[i] = "kv:" + strconv.Itoa(i)
		}
		_, err := s.RawDeleteMulti(ctx, keys)
		return err
	}},
	{"RawKeys", func(ctx context.Context, s *Store) error {
		_, err := s.RawKeys(ctx, "kv:")
		return err
	}},
}

// slack is what a loaded test machine may add to a bound before a call
// notices it has passed. The bounds broken here were broken by seconds.
const slack = 1500 * time.Millisecond

// TestRawCallsEndByTheirDeadline: against a memcached that hangs, or is
// stopped, or the one of two servers that hangs, every raw call fails by its
// context's deadline (a kv statement's), or by RawTimeout without one,
// never by a per-item timeout times the items, nor by a longer bound of
// its own.
func TestRawCallsEndByTheirDeadline(t *testing.T) {
	live := startMemcached(t, testenv.MemcachedOptions{})
	fleets := map[string][]string{
		"black hole":            {testenv.BlackHole(t)},
		"stopped":               {stoppedMemcached(t)},
		"live and a black hole": {live.Addr, testenv.BlackHole(t)},
	}
	for name, servers := range fleets {
		t.Run(name, func(t *testing.T) {
			for _, c := range rawCalls {
				t.Run(c.name+"/ctx deadline", func(t *testing.T) {
					// RawTimeout alone would take far longer.
					s := newStore(t, Options{Servers: servers, Timeout: 50 * time.Millisecond, RawTimeout: 20 * time.Second})
					const budget = 300 * time.Millisecond
					ctx, cancel := context.WithTimeout(context.Background(), budget)
					defer cancel()
					checkBounded(t, s, ctx, c.call, budget)
				})
				t.Run(c.name+"/RawTimeout", func(t *testing.T) {
					const budget = 300 * time.Millisecond
					s := newStore(t, Options{Servers: servers, Timeout: 50 * time.Millisecond, RawTimeout: budget})
					checkBounded(t, s, context.Background(), c.call, budget)
				})
			}
		})
	}
}

func checkBounded(t *testing.T, s *Store, ctx context.Context, call func(context.Context, *Store) error, budget time.Duration) {
	t.Helper()
	start := time.Now()
	err := call(ctx, s)
	took := time.Since(start)
	if err == nil {
		t.Fatalf("got no error from a memcached that cannot answer")
	}
	if took > budget+slack {
		t.Errorf("failed after %v (%v), want by its bound of %v", took.Round(time.Millisecond), err, budget)
	}
}

// TestRawDeleteMulti: deletes are counted right across pipelined batches
// and servers, and the keys are gone for other memcached clients.
func TestRawDeleteMulti(t *testing.T) {
	forEachMode(t, func(t *testing.T, opts Options) {
		if len(opts.Servers) > 0 {
			opts.Servers = append(opts.Servers, startMemcached(t, testenv.MemcachedOptions{}).Addr)
		}
		s := newStore(t, opts)
		ctx := context.Background()
		keys := make([]string, 2*deleteBatch+37)
		for i := range keys {
			keys[i] = "kv:d" + strconv.Itoa(i)
			if i%3 != 0 {
				if err := s.RawSet(ctx, keys[i], []byte("v"), 0); err != nil {
					t.Fatal(err)
				}
			}
		}
		n, err := s.RawDeleteMulti(ctx, keys)
		if err != nil {
			t.Fatal(err)
		}
		if want := len(keys) - (len(keys)+2)/3; n != want {
			t.Errorf("got %d deleted, want %d", n, want)
		}
		vals, err := s.RawGet(ctx, keys)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range vals {
			if v != nil {
				t.Errorf("key %s still there after the delete", keys[i])
			}
		}
		if len(opts.Servers) > 0 {
			got, err := memcache.New(opts.Servers...).GetMulti(keys)
			if err != nil || len(got) != 0 {
				t.Errorf("a plain client finds %d of the deleted keys (err %v)", len(got), err)
			}
		}
		if n, err := s.RawDeleteMulti(ctx, keys); n != 0 || err != nil {
			t.Errorf("deleting them again: got (%d, %v), want (0, nil)", n, err)
		}
	})
}

// TestRawSetRefusedBySize: a value the server refuses for its size is
// ErrTooLarge, the limit is read again, and the connection it was sent on
// stays usable.
func TestRawSetRefusedBySize(t *testing.T) {
	mc := startMemcached(t, testenv.MemcachedOptions{ItemSizeMax: "1m"})
	s := newStore(t, Options{Servers: []string{mc.Addr}, MaxIdleConns: 1})
	ctx := context.Background()
	// As if the server had restarted with a smaller -I since the store
	// read its limit: the server is the one to refuse.
	s.itemMax[0].Store(4 << 20)
	err := s.RawSet(ctx, "kv:big", make([]byte, 2<<20), 0)
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("got %v, want ErrTooLarge", err)
	}
	if got := s.ItemSizeMax(ctx); got != 1<<20 {
		t.Errorf("after the refusal: got item size max %d, want the server's %d", got, 1<<20)
	}
	if err := s.RawSet(ctx, "kv:small", []byte("ok"), 0); err != nil {
		t.Fatalf("a small value after a refused one: %v", err)
	}
	vals, err := s.RawGet(ctx, []string{"kv:small", "kv:big"})
	if err != nil || string(vals[0]) != "ok" || vals[1] != nil {
		t.Errorf("got (%q, %q, %v), want (\"ok\", nil, nil)", vals[0], vals[1], err)
	}
}
