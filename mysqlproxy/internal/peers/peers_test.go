package peers

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mycached/mycached/mysqlproxy/internal/testenv"
)

// memRegistry is a fleet list in memory.
type memRegistry struct {
	mu sync.Mutex
	m  map[string]time.Time
}

func (r *memRegistry) Refresh(_ context.Context, self string, ttl time.Duration) ([]string, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = make(map[string]time.Time)
	}
	_, was := r.m[self]
	r.m[self] = time.Now().Add(ttl)
	var out []string
	for a, t := range r.m {
		if time.Now().Before(t) {
			out = append(out, a)
		}
	}
	slices.Sort(out)
	return out, !was, nil
}

func (r *memRegistry) add(a string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = make(map[string]time.Time)
	}
	r.m[a] = time.Now().Add(time.Hour)
}

// sidecar is a Mesh and the bumps applied to it.
type sidecar struct {
	*Mesh
	mu      sync.Mutex
	applied []string
	gate    chan struct{} // when not nil, Apply waits for it
}

func (s *sidecar) apply(deps []string) {
	s.mu.Lock()
	g := s.gate
	s.mu.Unlock()
	if g != nil {
		<-g
	}
	s.mu.Lock()
	s.applied = append(s.applied, deps...)
	s.mu.Unlock()
}

func (s *sidecar) has(d string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Contains(s.applied, d)
}

var fast = Timing{Lease: 200 * time.Millisecond, Ping: 20 * time.Millisecond, AckTimeout: 100 * time.Millisecond,
	RegistryEvery: 20 * time.Millisecond, RegistryLease: 100 * time.Millisecond, RegistryTTL: 2 * time.Second}

// listen opens a listener on a free loopback port.
func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

func start(t *testing.T, reg Registry) *sidecar {
	return startWith(t, reg, nil)
}

func startWith(t *testing.T, reg Registry, secret []byte) *sidecar {
	t.Helper()
	ln := listen(t)
	s := &sidecar{}
	s.Mesh = New(Config{Listener: ln, Registry: reg, Apply: s.apply, Timing: fast, Secret: secret})
	t.Cleanup(s.Close)
	return s
}

func eventually(t *testing.T, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// emptiedRegistry is a list that something empties before each reading
// (a memcached restarted or flushed, again and again): each sidecar finds
// only itself, and has just put itself there.
type emptiedRegistry struct{}

func (emptiedRegistry) Refresh(_ context.Context, self string, _ time.Duration) ([]string, bool, error) {
	return []string{self}, true, nil
}

// TestNoTrustUntilListedForALease: a sidecar that found itself missing
// from the list, and so may have found the others missing too, trusts its
// local view only once it has stayed listed for RegistryLease; one the
// list never keeps, never. A sidecar alone on the list it found, trusting
// at once, served the rows another sidecar's writes had changed while
// that one was off the list and not linked to it.
func TestNoTrustUntilListedForALease(t *testing.T) {
	a := start(t, emptiedRegistry{})
	time.Sleep(10 * fast.RegistryLease)
	if a.Trusted() {
		t.Fatal("a sidecar the list never keeps trusts its local view")
	}
	reg := &memRegistry{}
	began := time.Now()
	b := start(t, reg)
	eventually(t, "listed and trusted", b.Trusted)
	if waited := time.Since(began); waited < fast.RegistryLease {
		t.Fatalf("a new sidecar trusted its local view after %v, before RegistryLease (%v)", waited, fast.RegistryLease)
	}
}

func TestNotifyReachesPeersBeforeItReturns(t *testing.T) {
	reg := &memRegistry{}
	a := start(t, reg)
	eventually(t, "alone and trusted", a.Trusted)
	a.Notify([]string{"db.early"}) // told to nobody
	b := start(t, reg)
	eventually(t, "both trusted", func() bool { return a.Trusted() && b.Trusted() })
	// b, first heard from after a wrote, was owed a global bump; a, heard
	// from by b before b wrote anything, keeps its view.
	if !b.has(Global) || a.has(Global) {
		t.Fatalf("global bumps: a %v, b %v; want b's only", a.applied, b.applied)
	}
	for i := range 50 {
		d := "db.t" + string(rune('a'+i%26))
		a.Notify([]string{d, "db.u"})
		if !b.has(d) {
			t.Fatalf("Notify returned before the peer applied %q", d)
		}
	}
	if st := a.Stats(); st.Failed != 0 || st.Members != 1 || st.Linked != 1 {
		t.Fatalf("stats: %+v", st)
	}
}

// A peer that does not acknowledge a bump is not trusted by the time
// Notify returns, and is trusted again only once it has the bump.
func TestUnacknowledgedBumpEndsThePeersTrust(t *testing.T) {
	reg := &memRegistry{}
	a, b := start(t, reg), start(t, reg)
	eventually(t, "both trusted", func() bool { return a.Trusted() && b.Trusted() })
	gate := make(chan struct{})
	b.mu.Lock()
	b.gate = gate
	b.mu.Unlock()
	began := time.Now()
	a.Notify([]string{"db.x"})
	if b.Trusted() && !b.has("db.x") {
		t.Fatalf("Notify returned after %v with the peer trusted and the bump unapplied", time.Since(began))
	}
	if a.Stats().Failed == 0 {
		t.Fatal("no failure counted")
	}
	// While the bump is owed, the peer stays untrusted.
	for range 20 {
		time.Sleep(10 * time.Millisecond)
		if b.Trusted() && !b.has("db.x") {
			t.Fatal("the peer regained trust without the owed bump")
		}
	}
	b.mu.Lock()
	b.gate = nil
	b.mu.Unlock()
	close(gate)
	eventually(t, "trusted again with the bump", func() bool { return b.Trusted() && b.has("db.x") })
}

// A member that cannot be reached, or takes no part, keeps the others
// from trusting their local views.
func TestUnreachableOrUnlinkedMemberIsNotTrusted(t *testing.T) {
	for _, member := range []string{"127.0.0.1:1#1", unlinked + "#0123456789abcdef"} {
		reg := &memRegistry{}
		a, b := start(t, reg), start(t, reg)
		eventually(t, "both trusted", func() bool { return a.Trusted() && b.Trusted() })
		reg.add(member)
		eventually(t, "distrust", func() bool { return !a.Trusted() && !b.Trusted() })
		time.Sleep(300 * time.Millisecond)
		if a.Trusted() || b.Trusted() {
			t.Fatalf("trusted with %s listed", member)
		}
	}
}

// A sidecar with no listener lists itself, and so keeps the others
// from trusting their views while it runs.
func TestUnlinkedSidecarListsItself(t *testing.T) {
	reg := &memRegistry{}
	a := start(t, reg)
	eventually(t, "alone and trusted", a.Trusted)
	u := New(Config{Registry: reg, Apply: func([]string) {}, Timing: fast})
	eventually(t, "distrust", func() bool { return !a.Trusted() })
	if u.Trusted() {
		t.Fatal("an unlinked sidecar trusts itself")
	}
	u.Close()
}

// A peer that stopped is forgotten once its listing ends; one that
// comes back is sent a global bump again.
func TestPeerRestart(t *testing.T) {
	reg := &memRegistry{}
	a := start(t, reg)
	ln := listen(t)
	addr := ln.Addr().String()
	b := &sidecar{}
	b.Mesh = New(Config{Listener: ln, Registry: reg, Apply: b.apply, Timing: fast})
	eventually(t, "both trusted", func() bool { return a.Trusted() && b.Trusted() })
	b.Close()
	eventually(t, "distrust once b is gone", func() bool { return !a.Trusted() })
	a.Notify([]string{"db.missed"}) // b cannot have it
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skip("the port was taken meanwhile")
	}
	b2 := &sidecar{}
	b2.Mesh = New(Config{Listener: ln, Registry: reg, Apply: b2.apply, Timing: fast})
	t.Cleanup(b2.Close)
	eventually(t, "both trusted again", func() bool { return a.Trusted() && b2.Trusted() })
	if !b2.has(Global) && !b2.has("db.missed") {
		t.Fatal("the restarted peer was trusted without what it missed")
	}
}

func TestDepsRoundTrip(t *testing.T) {
	in := []string{"", "a", "db.t\x00pk", string(make([]byte, 1000))}
	out, err := decodeDeps(encodeDeps(in))
	if err != nil || !slices.Equal(in, out) {
		t.Fatalf("%q %v", out, err)
	}
	for _, bad := range [][]byte{nil, {0, 0, 0, 1}, {0, 0, 0, 1, 0, 0, 0, 5, 'a'}, {0xff, 0xff, 0xff, 0xff}, append(encodeDeps([]string{"a"}), 0)} {
		if _, err := decodeDeps(bad); err == nil {
			t.Fatalf("accepted %q", bad)
		}
	}
}

// Two sidecars that advertise the same address (one misconfigured)
// never take each other for themselves: neither trusts its view.
func TestSameAdvertisedAddress(t *testing.T) {
	reg := &memRegistry{}
	a := start(t, reg)
	eventually(t, "alone and trusted", a.Trusted)
	ln := listen(t)
	b := New(Config{Listener: ln, Advertise: a.cfg.Advertise, Registry: reg, Apply: func([]string) {}, Timing: fast})
	t.Cleanup(b.Close)
	eventually(t, "distrust", func() bool { return !a.Trusted() })
	time.Sleep(300 * time.Millisecond)
	if a.Trusted() || b.Trusted() {
		t.Fatalf("trusted with two sidecars at one address: a %v b %v", a.Trusted(), b.Trusted())
	}
}

func (r *memRegistry) Leave(_ context.Context, self string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, self)
	return nil
}

// A sidecar that leaves stops being required at once, not when its
// listing would have ended.
func TestLeave(t *testing.T) {
	reg := &memRegistry{}
	a := start(t, reg)
	ln := listen(t)
	b := New(Config{Listener: ln, Registry: reg, Apply: func([]string) {}, Timing: fast})
	eventually(t, "both trusted", func() bool { return a.Trusted() && b.Trusted() })
	b.Leave()
	eventually(t, "a alone and trusted", func() bool { return a.Trusted() && a.Stats().Members == 0 })
}

// TestSecret: sidecars that share a secret link and trust each other;
// one with another secret, or a client with none, is turned away before
// it can take a lease or have a bump applied.
func TestSecret(t *testing.T) {
	reg := &memRegistry{}
	secret := []byte("0123456789abcdef-fleet")
	a := startWith(t, reg, secret)
	b := startWith(t, reg, secret)
	eventually(t, "a and b trusted", func() bool { return a.Trusted() && b.Trusted() })
	a.Notify([]string{"db.t"})
	if !b.has("db.t") {
		t.Fatal("a bump did not reach a peer with the same secret")
	}

	// A sidecar with another secret never links, so neither side
	// trusts its local view while it is listed.
	c := startWith(t, reg, []byte("another-secret-of-16"))
	eventually(t, "a refuses c", func() bool { return a.Stats().Refused > 0 && c.Stats().Refused > 0 })
	eventually(t, "a and c distrust", func() bool { return !a.Trusted() && !c.Trusted() })
	c.Close()

	// A raw client that knows a's name but not the secret: its hello
	// and bump get the connection closed, and nothing is applied.
	for _, hello := range []string{b.self, b.self + "\n" + newNonce()} {
		conn, err := net.Dial("tcp", a.cfg.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		w := bufio.NewWriter(conn)
		_ = writeMsg(w, msgHello, 0, []byte(hello))
		_ = writeMsg(w, msgAuth, 0, []byte(strings.Repeat("0", 64)))
		_ = writeMsg(w, msgBump, 1, encodeDeps([]string{"db.forged"}))
		_ = w.Flush()
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		r := bufio.NewReader(conn)
		for {
			typ, _, _, err := readMsg(r)
			if err != nil {
				break
			}
			if typ == msgAck {
				t.Fatalf("hello %q: a forged bump was acknowledged", hello)
			}
		}
		conn.Close()
	}
	if a.has("db.forged") {
		t.Fatal("a applied a bump from a client without the secret")
	}
}

// TestHelloBounded: a connection that announces a large first message
// is closed at once, before any of it is read or allocated: only a
// peer that has said who it is may send large bumps.
func TestHelloBounded(t *testing.T) {
	a := start(t, &memRegistry{})
	conn, err := net.Dial("tcp", a.cfg.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var h [13]byte
	h[0] = msgHello
	binary.BigEndian.PutUint32(h[9:], maxBody)
	if _, err := conn.Write(h[:]); err != nil {
		t.Fatal(err)
	}
	// The server waits up to 5 s for a hello's body; a closed connection
	// well before that says it did not wait for this one.
	_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
	var b [1]byte
	if _, err := conn.Read(b[:]); !errors.Is(err, io.EOF) {
		t.Fatalf("read after a 16 MiB hello header: %v, want EOF (the connection closed)", err)
	}
}

// TestLinkTroubleLogged: a listed sidecar that cannot be reached, or
// whose address answers as another sidecar, is logged once, naming it,
// however often the link is tried again: the fleet then checks strict
// hits against memcached, and the status alone would not say why.
func TestLinkTroubleLogged(t *testing.T) {
	reg := &memRegistry{}
	var logs testenv.LogBuffer
	a := &sidecar{}
	a.Mesh = New(Config{Listener: listen(t), Registry: reg, Apply: a.apply, Timing: fast,
		Log: slog.New(slog.NewTextHandler(&logs, nil))})
	t.Cleanup(a.Close)
	eventually(t, "alone and trusted", a.Trusted)
	reg.add("127.0.0.1:1#1")
	eventually(t, "the unreachable sidecar logged", func() bool { return strings.Contains(logs.String(), "cannot reach") })
	time.Sleep(500 * time.Millisecond) // tries again every 50 ms, then less often
	if n := strings.Count(logs.String(), "cannot reach"); n != 1 || !strings.Contains(logs.String(), "peer=127.0.0.1:1#1") {
		t.Errorf("%d lines on the unreachable sidecar, want 1 naming it:\n%s", n, logs.String())
	}
	// Another sidecar advertising a's address: a dials itself for it.
	b := New(Config{Listener: listen(t), Advertise: a.cfg.Advertise, Registry: reg, Apply: func([]string) {}, Timing: fast})
	t.Cleanup(b.Close)
	eventually(t, "the misdirected address logged", func() bool { return strings.Contains(logs.String(), "without answering") })
}
