package store

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/mycached/mycached/mysqlproxy/internal/testenv"
)

// TestServerListChangedBack: sidecars moved from one memcached server to
// two, where a generation lived on the new one and was bumped there, then
// back to the first alone, which kept the entry and the generation as they
// were. The first lookup after the move back is no hit: the servers'
// marks said another list wrote there, and the global generation was
// bumped.
func TestServerListChangedBack(t *testing.T) {
	mc1 := startMemcached(t, testenv.MemcachedOptions{})
	mc2 := startMemcached(t, testenv.MemcachedOptions{})
	one := []string{mc1.Addr}
	a := newStore(t, Options{Servers: one})
	two := newStore(t, Options{Servers: []string{mc1.Addr, mc2.Addr}})
	// A table whose generation the two-server list keeps on mc2.
	dep := ""
	for i := 0; dep == ""; i++ {
		d := fmt.Sprintf("db.t%d", i)
		if two.ring.Index(two.keys.key(d)) == 1 {
			dep = d
		}
	}
	deps := []string{"*", "db.*", dep}
	payload := []byte("the rows before the write")
	fill(t, a, qkey(1), []byte("c"), payload, deps)
	wantLookup(t, a, qkey(1), []byte("c"), deps, Hit, payload)
	a.Close()

	// The write, through the two-server list: the bump goes to mc2.
	if err := two.bump(t.Context(), []string{dep}); err != nil {
		t.Fatal(err)
	}
	two.Close()

	ringHold = 200 * time.Millisecond
	t.Cleanup(func() { ringHold = 3 * time.Second })
	back := newStore(t, Options{Servers: one, L1Bytes: -1})
	if !back.RingHeld() {
		t.Errorf("a store whose servers carry another list's mark serves from the cache at once")
	}
	wantLookup(t, back, qkey(1), []byte("c"), deps, Bypass, nil)
	time.Sleep(ringHold)
	wantLookup(t, back, qkey(1), []byte("c"), deps, Miss, nil)
	if n := back.Stats().RingMismatches; n != 1 {
		t.Errorf("mismatches %d, want 1", n)
	}
}

// TestServerListsDiffer: while a store with another list runs beside it,
// a store holds the cache off, however long that lasts; once the other
// stops, it serves again.
func TestServerListsDiffer(t *testing.T) {
	mc1 := startMemcached(t, testenv.MemcachedOptions{})
	mc2 := startMemcached(t, testenv.MemcachedOptions{})
	deps := []string{"*", "db.*", "db.t"}
	a := newStore(t, Options{Servers: []string{mc1.Addr}, L1Bytes: -1})
	fill(t, a, qkey(1), []byte("c"), []byte("rows"), deps)
	if a.RingHeld() {
		t.Fatal("held before any other list")
	}
	other := newStore(t, Options{Servers: []string{mc1.Addr, mc2.Addr}, L1Bytes: -1})
	for start := time.Now(); !a.RingHeld(); time.Sleep(10 * time.Millisecond) {
		if time.Since(start) > 4*ringCheckEvery {
			t.Fatal("a store did not find another list beside it")
		}
	}
	if !other.RingHeld() {
		t.Error("the store with the other list serves from the cache")
	}
	// Both keep finding the other's marks.
	time.Sleep(ringHold + 2*ringCheckEvery)
	if !a.RingHeld() || !other.RingHeld() {
		t.Errorf("held: %v and %v while both lists run, want both", a.RingHeld(), other.RingHeld())
	}
	wantLookup(t, a, qkey(1), []byte("c"), deps, Bypass, nil)
	other.Close()
	for start := time.Now(); a.RingHeld(); time.Sleep(50 * time.Millisecond) {
		if time.Since(start) > ringHold+4*ringCheckEvery {
			t.Fatal("still held after the other list stopped")
		}
	}
	wantLookup(t, a, qkey(1), []byte("c"), deps, Miss, nil)
}

// TestOneServerByAnyName: one server takes every key whatever it is
// called, so stores that name it differently agree.
func TestOneServerByAnyName(t *testing.T) {
	mc := startMemcached(t, testenv.MemcachedOptions{})
	_, port, _ := net.SplitHostPort(mc.Addr)
	a := newStore(t, Options{Servers: []string{mc.Addr}})
	b := newStore(t, Options{Servers: []string{"localhost:" + port}})
	time.Sleep(2 * ringCheckEvery)
	if a.RingHeld() || b.RingHeld() {
		t.Errorf("held: %v, %v", a.RingHeld(), b.RingHeld())
	}
}

// TestServerAbandonedAndTakenBack: a sidecar moved from one server to
// another and back. Nothing used the first meanwhile, so nothing changed
// its mark; its mark ran out, and the first lookup after the move back is
// no hit of the entry it kept.
func TestServerAbandonedAndTakenBack(t *testing.T) {
	ringMarkTTL = 1
	t.Cleanup(func() { ringMarkTTL = 5 })
	mc1 := startMemcached(t, testenv.MemcachedOptions{})
	mc2 := startMemcached(t, testenv.MemcachedOptions{})
	deps := []string{"*", "db.*", "db.t"}
	a := newStore(t, Options{Servers: []string{mc1.Addr}, L1Bytes: -1})
	fill(t, a, qkey(1), []byte("c"), []byte("rows"), deps)
	a.Close()
	// The other server, alone, for longer than a mark lasts.
	b := newStore(t, Options{Servers: []string{mc2.Addr}, L1Bytes: -1})
	time.Sleep(2500 * time.Millisecond)
	b.Close()
	back := newStore(t, Options{Servers: []string{mc1.Addr}, L1Bytes: -1})
	wantLookup(t, back, qkey(1), []byte("c"), deps, Miss, nil)
}
