package store

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bradfitz/gomemcache/memcache"

	"github.com/mycached/mycached/mysqlproxy/internal/testenv"
)

// TestPeerRefresh: concurrent sidecars all end up listed, each learns
// whether it joined, and a listing that is not refreshed ends.
func TestPeerRefresh(t *testing.T) {
	mc := startMemcached(t, testenv.MemcachedOptions{})
	ctx := context.Background()
	stores := make([]*Store, 6)
	for i := range stores {
		stores[i] = newStore(t, Options{Servers: []string{mc.Addr}, Timeout: 5 * time.Second})
	}
	addrs := []string{"a:1", "b:2", "c:3", "d:4", "e:5", "f:6"}
	var wg sync.WaitGroup
	for i, s := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, joined, err := s.PeerRefresh(ctx, addrs[i], 10*time.Second)
			if err != nil || !joined {
				t.Errorf("%s: joined %v, %v", addrs[i], joined, err)
			}
		}()
	}
	wg.Wait()
	members, joined, err := stores[0].PeerRefresh(ctx, addrs[0], 10*time.Second)
	slices.Sort(members)
	if err != nil || joined || !slices.Equal(members, addrs) {
		t.Fatalf("members %v joined %v err %v", members, joined, err)
	}
	// A listing with 1 s left is renewed by its own sidecar and expires
	// for everyone else once that second has passed.
	if _, _, err := stores[1].PeerRefresh(ctx, "short:1", time.Second); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2100 * time.Millisecond)
	members, _, err = stores[0].PeerRefresh(ctx, addrs[0], 10*time.Second)
	if err != nil || slices.Contains(members, "short:1") {
		t.Fatalf("an expired listing is still there: %v %v", members, err)
	}
	members, joined, err = stores[1].PeerRefresh(ctx, "short:1", time.Second)
	if err != nil || !joined || !slices.Contains(members, "short:1") {
		t.Fatalf("rejoin: %v %v %v", members, joined, err)
	}
	if err := stores[2].PeerLeave(ctx, "c:3"); err != nil {
		t.Fatal(err)
	}
	members, _, err = stores[0].PeerRefresh(ctx, addrs[0], 10*time.Second)
	if err != nil || slices.Contains(members, "c:3") || len(members) != 6 {
		t.Fatalf("after c:3 left: %v %v", members, err)
	}
	// A compare-and-swap that another sidecar's write beat is memcached's
	// answer, not its failure: nothing counts it as an error.
	it, err := stores[0].peerList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := stores[1].PeerRefresh(ctx, "g:7", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := stores[0].mcDo(ctx, func() error { return stores[0].mc.CompareAndSwap(it) }); !errors.Is(err, memcache.ErrCASConflict) {
		t.Fatalf("a stale compare-and-swap: got %v, want a conflict", err)
	}
	for i, s := range stores {
		if n := s.Stats().MemcachedErrors; n != 0 {
			t.Errorf("%s counted %d memcached errors, want none", addrs[i], n)
		}
	}
}

// TestPeerRefreshWithoutMemcached fails rather than listing nobody.
func TestPeerRefreshWithoutMemcached(t *testing.T) {
	s := newStore(t, Options{Servers: []string{testenv.BlackHole(t)}, Timeout: 50 * time.Millisecond})
	if _, _, err := s.PeerRefresh(context.Background(), "a:1", time.Second); err == nil {
		t.Fatal("no error from a memcached that never answers")
	}
}

// TestPeerListOutlivesShortListings: a sidecar that lists itself for a
// short while does not cut the list's life in memcached short, which
// would drop the others' listings with it.
func TestPeerListOutlivesShortListings(t *testing.T) {
	mc := startMemcached(t, testenv.MemcachedOptions{})
	ctx := context.Background()
	long := newStore(t, Options{Servers: []string{mc.Addr}, Timeout: 5 * time.Second})
	short := newStore(t, Options{Servers: []string{mc.Addr}, Timeout: 5 * time.Second})
	if _, _, err := long.PeerRefresh(ctx, "long:1", 30*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, _, err := short.PeerRefresh(ctx, "short:1", time.Second); err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", mc.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := fmt.Fprintf(c, "mg %s t\r\n", peersKey); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	var ttl int
	if _, err := fmt.Sscanf(line, "HD t%d", &ttl); err != nil || ttl < 30 {
		t.Errorf("the peer list lives %q in memcached, want at least the 30 s of its longest listing", strings.TrimSpace(line))
	}
}
