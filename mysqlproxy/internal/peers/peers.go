// Package peers lets the sidecars of a fleet tell each other of their
// writes directly, so that a strict hit needs no memcached round trip.
//
// In strict mode a write's client hears OK only once no sidecar can
// answer the old rows. Without peers that holds because every hit reads
// memcached's generations, which the write bumped first: a network round
// trip per hit. With peers, a writer also sends its bumps to every other
// sidecar and waits for each one's acknowledgement, which comes once the
// bumps are in that sidecar's local view; a sidecar that holds a lease
// from every other member of the fleet may then check a hit against its
// local view alone.
//
// Leases make a lost link safe. A sidecar asks each member for a lease
// every Ping; a lease runs for Lease from when it was asked for, on the
// asker's clock, so it ends before Lease has passed since the grantor
// sent it, on the grantor's. A writer whose bumps a sidecar did not
// acknowledge waits until every lease it granted that sidecar has ended,
// then lets its client go on: that sidecar checks its hits against
// memcached meanwhile. The bumps are owed to it: it is granted no new
// lease until it has acknowledged them. A sidecar first heard from after
// this one has written is owed a global bump, since nothing says what it
// missed; one heard from before is owed every bump since.
//
// Membership is a list in memcached (see Registry). A sidecar trusts its
// local view only while its last reading of the list is younger than
// RegistryLease and it holds a lease from everyone on it, so a sidecar
// that joined is required within RegistryLease of its joining; the
// joiner, when a peer does not acknowledge its bumps, also waits that
// long after it joined. A sidecar that could not keep itself on the list
// (it cannot reach memcached) cannot make its bumps safe that way: its
// writes are then seen by the others through their binlog followers,
// as its memcached bumps are when it cannot reach memcached.
package peers

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	crand "crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Registry keeps the fleet's list of members.
type Registry interface {
	// Refresh puts self on the list, to stay there for at least ttl
	// unless refreshed again, and returns the members listed, self
	// included. joined says self was not listed before this call.
	Refresh(ctx context.Context, self string, ttl time.Duration) (members []string, joined bool, err error)
}

// Timing is the protocol's periods; zero fields take the defaults.
type Timing struct {
	Lease         time.Duration // how long a granted lease runs (750ms)
	Ping          time.Duration // how often a lease is asked for (250ms)
	AckTimeout    time.Duration // how long a writer waits for an acknowledgement (200ms)
	RegistryEvery time.Duration // how often the list is read (250ms)
	RegistryLease time.Duration // how long a reading of the list is trusted (1s)
	RegistryTTL   time.Duration // how long a listing lasts unrefreshed (10s)
}

func (t Timing) withDefaults() Timing {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	// A lease spans three asks, so one late answer does not end it.
	// Asking more often costs idle sidecars CPU (a ping and its answer
	// wake both processes), and a longer lease lengthens the wait of a
	// write that a peer does not acknowledge.
	def(&t.Lease, 750*time.Millisecond)
	def(&t.Ping, 250*time.Millisecond)
	def(&t.AckTimeout, 200*time.Millisecond)
	def(&t.RegistryEvery, 250*time.Millisecond)
	def(&t.RegistryLease, time.Second)
	def(&t.RegistryTTL, 10*time.Second)
	return t
}

// Config is what a Mesh needs.
type Config struct {
	Listener  net.Listener // where peers connect
	Advertise string       // the address peers dial to reach this sidecar
	Registry  Registry
	// Apply bumps deps in the local view; a Mesh acknowledges bumps only
	// once it has returned.
	Apply func(deps []string)
	// Secret, when set, is shared by every member: a connection is
	// served, or used, only once each side has shown it holds it (an
	// HMAC of both sides' nonces), so that no one else can send bumps or
	// take a connection slot for long. Members must all have the same.
	Secret []byte
	Log    *slog.Logger
	Timing Timing
}

// Global is the dependency every entry has; a peer first heard from
// after a write is owed a bump of it.
var Global = "*"

// margin is added to every wait for a lease to end, for the rate at
// which two clocks may drift apart over a lease and for scheduling.
const margin = 20 * time.Millisecond

// maxLinks bounds the peers a sidecar keeps links to, and maxConns the
// connections it serves.
const (
	maxLinks = 256
	maxConns = 4 * maxLinks
)

// Limits on a message: a peer that sends more is disconnected.
const (
	maxDeps   = 1 << 18
	maxDepLen = 1 << 16
)

// Message types.
const (
	msgHello = 'H' // the dialer's advertised address
	msgPing  = 'P' // a request for a lease
	msgBump  = 'B' // deps to bump
	msgAck   = 'A' // the answer to a ping (a grant) or a bump
	msgNak   = 'N' // the answer to a ping that is refused
	msgAuth  = 'U' // with a Secret: the dialer's proof, after the hellos
)

// With a Secret, the dialer's hello is its name, a newline and a nonce;
// the answer's is its name, its own nonce and its proof; the dialer then
// sends its proof (see proof).
const nonceLen = 16

func newNonce() string {
	var b [nonceLen]byte
	_, _ = crand.Read(b[:]) // never fails on Linux
	return hex.EncodeToString(b[:])
}

// proof is the HMAC-SHA256, under the secret, of role ("answer" or
// "dial") and the dialer's and the answerer's names and nonces.
func (m *Mesh) proof(role, dialer, answerer, nd, na string) []byte {
	h := hmac.New(sha256.New, m.cfg.Secret)
	for _, p := range []string{role, dialer, answerer, nd, na} {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return []byte(hex.EncodeToString(h.Sum(nil)))
}

// Mesh is one sidecar's links to the rest of the fleet.
type Mesh struct {
	cfg Config
	// self names this sidecar on the list and to its peers: the address
	// to dial and an id of this process's own, so that a restarted
	// sidecar is a new peer, and two that advertise the same address
	// (one misconfigured) never take each other for themselves.
	self  string
	t     Timing
	base  time.Time
	ctx   context.Context
	stop  context.CancelFunc
	wg    sync.WaitGroup
	trust atomic.Int64 // monotonic ns until which the local view is trusted

	mu       sync.Mutex // protects the fields below and every link's state
	links    map[string]*link
	members  []string // the others on the last list read
	regUntil int64    // monotonic ns until which that reading holds
	joinedAt int64    // monotonic ns of this sidecar's listing, 0 if none
	listedTo time.Time
	conns    map[net.Conn]struct{}
	wrote    bool // Notify has run: a peer linked later may have missed bumps

	notified, failed, unsafe, refusals atomic.Uint64
	refusedAt                          atomic.Int64 // when a refusal was last logged
}

// New starts a Mesh: it serves cfg.Listener, keeps itself listed, and
// links to every member.
func New(cfg Config) *Mesh {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	switch {
	case cfg.Listener == nil:
		cfg.Advertise = unlinked
	case cfg.Advertise == "":
		cfg.Advertise = cfg.Listener.Addr().String()
	}
	m := &Mesh{cfg: cfg, self: fmt.Sprintf("%s#%016x", cfg.Advertise, rand.Uint64()), t: cfg.Timing.withDefaults(), base: time.Now(),
		links: make(map[string]*link), conns: make(map[net.Conn]struct{})}
	m.ctx, m.stop = context.WithCancel(context.Background())
	m.wg.Add(1)
	go m.keepListed()
	if cfg.Listener != nil {
		m.wg.Add(1)
		go m.serve()
	}
	return m
}

// unlinked begins the listing of a sidecar that shares memcached but
// takes no part in the mesh (Config.Listener nil). It keeps itself
// listed so that the others know a member writes without telling them,
// and never trust their local views while it is there.
const unlinked = "unlinked"

// isUnlinked reports a member listed by a sidecar without a listener.
func isUnlinked(member string) bool { return strings.HasPrefix(member, unlinked+"#") }

// Leave takes this sidecar off the list, when the registry can, and
// stops the Mesh. Only a sidecar that will write no more may leave: the
// others stop requiring its leases at their next reading of the list.
func (m *Mesh) Leave() {
	m.Close() // no refresh runs after the leave
	if l, ok := m.cfg.Registry.(interface {
		Leave(ctx context.Context, self string) error
	}); ok {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		if err := l.Leave(ctx, m.self); err != nil {
			m.cfg.Log.Warn("peers: could not leave the fleet's list; the others check their hits against memcached until it ends", "err", err)
		}
		cancel()
	}
}

// Close stops the Mesh and waits for its goroutines.
func (m *Mesh) Close() {
	m.stop()
	if m.cfg.Listener != nil {
		_ = m.cfg.Listener.Close()
	}
	m.mu.Lock()
	for c := range m.conns {
		_ = c.Close()
	}
	for _, l := range m.links {
		l.close()
	}
	m.mu.Unlock()
	m.wg.Wait()
	m.trust.Store(0) // nothing tells this sidecar of writes any more
}

func (m *Mesh) now() int64 { return int64(time.Since(m.base)) }

// Trusted reports whether every write of another sidecar that has been
// acknowledged to its client is in the local view.
func (m *Mesh) Trusted() bool { return m.now() < m.trust.Load() }

// Stats is what a Mesh has done.
type Stats struct {
	Advertise string
	Members   int  // others on the last list read
	Linked    int  // others this sidecar holds a lease from now
	Trusted   bool // the local view is trusted now
	Notified  uint64
	Failed    uint64 // bumps a peer did not acknowledge in time
	Unsafe    uint64 // of those, bumps that waiting could not make safe
	Refused   uint64 // connections turned away for want of the secret
}

// Stats returns the counters.
func (m *Mesh) Stats() Stats {
	now := m.now()
	m.mu.Lock()
	st := Stats{Advertise: m.self, Members: len(m.members)}
	for _, a := range m.members {
		if l := m.links[a]; l != nil && l.leaseUntil > now {
			st.Linked++
		}
	}
	m.mu.Unlock()
	st.Trusted = m.Trusted()
	st.Notified, st.Failed, st.Unsafe = m.notified.Load(), m.failed.Load(), m.unsafe.Load()
	st.Refused = m.refusals.Load()
	return st
}

// Notify sends deps to every peer that may hold a lease from this
// sidecar and returns once each has acknowledged them, or once every
// lease it could hold has ended. Callers have bumped memcached and the
// local view first.
func (m *Mesh) Notify(deps []string) {
	if len(deps) == 0 {
		return
	}
	m.mu.Lock()
	m.wrote = true
	var to []*link
	for _, l := range m.links {
		if l.peerKnown {
			to = append(to, l)
		} else {
			// It holds no lease from here yet; it gets this before one.
			l.owe(deps)
		}
	}
	m.mu.Unlock()
	if len(to) == 0 {
		return
	}
	m.notified.Add(1)
	if len(deps) > maxDeps/2 {
		deps = []string{Global} // more than a message carries
	}
	msg := encodeDeps(deps)
	oks := make([]bool, len(to))
	var wg sync.WaitGroup
	for i, l := range to {
		wg.Add(1)
		go func() {
			defer wg.Done()
			oks[i] = l.request(msgBump, msg, m.t.AckTimeout)
		}()
	}
	wg.Wait()
	var until int64
	var late []string
	m.mu.Lock()
	for i, l := range to {
		if oks[i] {
			continue
		}
		late = append(late, l.addr)
		m.failed.Add(1)
		l.owe(deps)
		// Read after owing, under the lock a grant takes: no lease is
		// granted after this one until the debt is paid.
		until = max(until, l.grantAt+int64(m.t.Lease))
		if m.joinedAt == 0 || time.Until(m.listedTo) < time.Second {
			m.unsafe.Add(1)
		} else {
			until = max(until, m.joinedAt+int64(m.t.RegistryLease))
		}
	}
	m.mu.Unlock()
	if until == 0 {
		return
	}
	if d := time.Duration(until-m.now()) + margin; d > 0 {
		m.cfg.Log.Warn("peers: a peer did not acknowledge a write's invalidations; waiting for its lease to end", "peers", late, "wait", d)
		time.Sleep(d)
	}
}

// recomputeTrust sets the trust from the leases held; m.mu must be held.
//
// Not before this sidecar has stayed on the list for RegistryLease since
// it last had to put itself there: a list it found without itself
// (emptied by a memcached restart or flush_all, evicted, or overwritten)
// may lack the others too, until they put themselves back, and one it
// does not list, it holds no lease from, and hears no writes of.
func (m *Mesh) recomputeTrust() {
	t := m.regUntil
	if m.cfg.Listener == nil || m.joinedAt == 0 || m.now()-m.joinedAt < int64(m.t.RegistryLease) {
		t = 0
	}
	for _, a := range m.members {
		l := m.links[a]
		if l == nil || isUnlinked(a) {
			t = 0
			break
		}
		t = min(t, l.leaseUntil)
	}
	m.trust.Store(t)
}

// keepListed keeps this sidecar on the list, and links to the members.
func (m *Mesh) keepListed() {
	defer m.wg.Done()
	tick := time.NewTicker(m.t.RegistryEvery)
	defer tick.Stop()
	var lastErr time.Time
	for {
		start := m.now()
		ctx, cancel := context.WithTimeout(m.ctx, m.t.RegistryEvery)
		members, joined, err := m.cfg.Registry.Refresh(ctx, m.self, m.t.RegistryTTL)
		cancel()
		if err != nil {
			if m.ctx.Err() != nil {
				return
			}
			// A read that fails while the last list read is still good
			// (a timeout on a busy machine) changes nothing yet.
			m.mu.Lock()
			expired := time.Now().After(m.listedTo)
			m.mu.Unlock()
			if expired && time.Since(lastErr) > 10*time.Second {
				m.cfg.Log.Warn("peers: cannot read the fleet's list in memcached; hits are checked against memcached", "err", err)
				lastErr = time.Now()
			}
		} else {
			m.listed(start, members, joined)
		}
		select {
		case <-m.ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// listed records a reading of the list, begun at start.
func (m *Mesh) listed(start int64, members []string, joined bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if joined || m.joinedAt == 0 {
		m.joinedAt = m.now()
	}
	m.listedTo = time.Now().Add(m.t.RegistryTTL / 2)
	m.regUntil = start + int64(m.t.RegistryLease)
	others := members[:0:0]
	for _, a := range members {
		if a != m.self {
			others = append(others, a)
		}
	}
	m.members = others
	for _, a := range others {
		if m.cfg.Listener != nil && !isUnlinked(a) {
			m.linkLocked(a)
		}
	}
	// Forget the peers that left the list and hold no lease from here.
	now := m.now()
	for a, l := range m.links {
		if !slices.Contains(others, a) && l.grantAt+int64(m.t.Lease) < now && now-l.heardAt > int64(m.t.RegistryTTL) {
			l.close()
			delete(m.links, a)
		}
	}
	m.recomputeTrust()
}

// linkLocked returns the link to addr, starting one; m.mu must be held.
// It returns nil when there are too many, or the Mesh is closing.
func (m *Mesh) linkLocked(addr string) *link {
	if l := m.links[addr]; l != nil {
		return l
	}
	if len(m.links) >= maxLinks || m.ctx.Err() != nil {
		return nil // too many, or closing: no goroutine may start
	}
	l := &link{m: m, addr: addr, owedAll: m.wrote, waiters: make(map[uint64]chan bool), pings: make(map[uint64]int64)}
	l.ctx, l.cancel = context.WithCancel(m.ctx)
	m.links[addr] = l
	m.wg.Add(1)
	go l.run()
	return l
}

// serve accepts peers' connections.
func (m *Mesh) serve() {
	defer m.wg.Done()
	for {
		c, err := m.cfg.Listener.Accept()
		if err != nil {
			if m.ctx.Err() != nil {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		m.mu.Lock()
		if m.ctx.Err() != nil {
			m.mu.Unlock()
			_ = c.Close()
			return
		}
		if len(m.conns) >= maxConns {
			m.mu.Unlock()
			_ = c.Close()
			continue
		}
		m.conns[c] = struct{}{}
		m.mu.Unlock()
		m.wg.Add(1)
		go m.answer(c)
	}
}

// answer serves one peer's requests: its pings, with grants or refusals,
// and its bumps, applied before they are acknowledged.
func (m *Mesh) answer(c net.Conn) {
	defer m.wg.Done()
	defer func() {
		m.mu.Lock()
		delete(m.conns, c)
		m.mu.Unlock()
		_ = c.Close()
	}()
	r := bufio.NewReader(c)
	w := bufio.NewWriter(c)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	typ, _, body, err := readMsgMax(r, maxHello)
	if err != nil || typ != msgHello || len(body) == 0 || len(body) > 512 {
		return
	}
	peer, nd := string(body), ""
	if m.cfg.Secret != nil {
		var ok bool
		if peer, nd, ok = strings.Cut(peer, "\n"); !ok || len(nd) != 2*nonceLen {
			m.refused(c, "no nonce in its hello")
			return
		}
	}
	if peer == m.self {
		return
	}
	// Say who answers: a dialer that reached another sidecar than the
	// one it meant hangs up.
	hello := m.self
	na := ""
	if m.cfg.Secret != nil {
		na = newNonce()
		hello += "\n" + na + "\n" + string(m.proof("answer", peer, m.self, nd, na))
	}
	if writeMsg(w, msgHello, 0, []byte(hello)) != nil || w.Flush() != nil {
		return
	}
	if m.cfg.Secret != nil {
		typ, _, body, err := readMsgMax(r, maxHello)
		if err != nil {
			return
		}
		if typ != msgAuth || !hmac.Equal(body, m.proof("dial", peer, m.self, nd, na)) {
			m.refused(c, "a wrong proof of the secret")
			return
		}
	}
	for {
		_ = c.SetReadDeadline(time.Now().Add(10 * m.t.RegistryTTL))
		typ, seq, body, err := readMsg(r)
		if err != nil {
			return
		}
		var reply byte
		switch typ {
		case msgPing:
			reply = m.grant(peer)
		case msgBump:
			deps, err := decodeDeps(body)
			if err != nil {
				return
			}
			m.cfg.Apply(deps)
			reply = msgAck
		default:
			return
		}
		if err := writeMsg(w, reply, seq, nil); err != nil || w.Flush() != nil {
			return
		}
	}
}

// refused logs a connection turned away for want of the secret, at most
// once a minute.
func (m *Mesh) refused(c net.Conn, why string) {
	m.refusals.Add(1)
	now := m.now()
	last := m.refusedAt.Load()
	if last != 0 && now-last < int64(time.Minute) || !m.refusedAt.CompareAndSwap(last, now) {
		return
	}
	m.cfg.Log.Warn("peers: refused a connection: "+why+" (is --peer-secret-file the same on every sidecar?)", "from", c.RemoteAddr().String())
}

// grant answers peer's ping: a lease, unless bumps are owed to it.
func (m *Mesh) grant(peer string) byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.linkLocked(peer)
	if l == nil {
		return msgNak
	}
	l.peerKnown = true
	l.heardAt = m.now()
	// A lease goes only to a peer this sidecar can tell of its writes
	// now: one it could not would cost every write a wait for the lease.
	if !l.up || l.owedAll || len(l.owed) > 0 || l.paying {
		return msgNak
	}
	l.grantAt = m.now()
	return msgAck
}

// link is this sidecar's connection to one peer, over which it asks for
// leases and sends its bumps.
type link struct {
	m      *Mesh
	addr   string
	ctx    context.Context
	cancel context.CancelFunc

	// Under m.mu:
	peerKnown  bool                // the peer asked for a lease: it is sent every bump
	up         bool                // connected to the peer it names
	grantAt    int64               // when it was last granted one
	heardAt    int64               // when it last asked
	owed       map[string]struct{} // bumps it has not acknowledged
	owedAll    bool                // it is owed a global bump
	paying     bool                // owed bumps are on their way
	leaseUntil int64               // the lease it granted here

	// state is what the log last said of the link: nil (nothing yet),
	// "up", "down", "other" or "silent" (see note).
	state atomic.Pointer[string]

	wmu     sync.Mutex // protects the fields below
	conn    net.Conn
	w       *bufio.Writer
	seq     uint64
	waiters map[uint64]chan bool
	pings   map[uint64]int64 // when each ping in flight was sent
}

func (l *link) close() { l.cancel() }

// note logs a change of the link's state, once: a link that cannot
// connect, is not answered or answers as another sidecar, or is lost,
// leaves this sidecar checking strict hits against memcached while the
// peer stays listed (Peer_trusted), and a link that comes back after one
// of those is logged too.
func (l *link) note(state string, args ...any) {
	prev := l.state.Swap(&state)
	if l.ctx.Err() != nil || (prev != nil && *prev == state) {
		return
	}
	args = append([]any{"peer", l.addr}, args...)
	switch state {
	case "up":
		if prev != nil {
			l.m.cfg.Log.Info("peers: linked again to a sidecar of the fleet", args...)
		}
	case "down":
		l.m.cfg.Log.Warn("peers: cannot reach a sidecar of the fleet's list; strict hits are checked against memcached while it is listed", args...)
	case "other":
		l.m.cfg.Log.Warn("peers: the address a sidecar lists answered as another sidecar (is its --peer-advertise right?); strict hits are checked against memcached while it is listed", args...)
	case "silent":
		l.m.cfg.Log.Warn("peers: the address a sidecar lists closed the link without answering (is its --peer-advertise right, or this sidecar's own address?); strict hits are checked against memcached while it is listed", args...)
	}
}

// owe records deps as owed; m.mu must be held.
func (l *link) owe(deps []string) {
	if l.owedAll {
		return
	}
	if l.owed == nil {
		l.owed = make(map[string]struct{})
	}
	for _, d := range deps {
		l.owed[d] = struct{}{}
	}
	if len(l.owed) > maxDeps/4 {
		l.owed, l.owedAll = nil, true
	}
}

// run keeps the link connected, asking for a lease every Ping and paying
// what is owed.
func (l *link) run() {
	m := l.m
	defer m.wg.Done()
	backoff := 50 * time.Millisecond
	for l.ctx.Err() == nil {
		d := net.Dialer{Timeout: m.t.AckTimeout}
		addr, _, _ := strings.Cut(l.addr, "#")
		c, err := d.DialContext(l.ctx, "tcp", addr)
		if err == nil {
			backoff = 50 * time.Millisecond
			l.serve(c)
		} else {
			l.note("down", "err", err)
		}
		select {
		case <-l.ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// serve uses one connection until it fails.
func (l *link) serve(c net.Conn) {
	m := l.m
	w := bufio.NewWriter(c)
	hello, nd := m.self, ""
	if m.cfg.Secret != nil {
		nd = newNonce()
		hello += "\n" + nd
	}
	err := writeMsg(w, msgHello, 0, []byte(hello))
	if err == nil {
		err = w.Flush()
	}
	l.wmu.Lock()
	l.conn = c
	l.wmu.Unlock()
	// Nothing is sent but the hello until the peer has answered as the
	// one dialed (and, with a Secret, shown it holds it): readAcks then
	// sets l.w and closes ready.
	ready := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err == nil {
			l.readAcks(c, w, nd, ready)
		}
		_ = c.Close()
	}()
	stop := context.AfterFunc(l.ctx, func() { _ = c.Close() })
	defer stop()
	tick := time.NewTicker(m.t.Ping)
	defer tick.Stop()
	for err == nil {
		l.pay()
		l.ping()
		select {
		case <-done:
			err = io.EOF
		case <-ready:
			ready = nil
		case <-tick.C:
		}
	}
	_ = c.Close()
	<-done
	l.wmu.Lock()
	l.conn, l.w = nil, nil
	for s, ch := range l.waiters {
		ch <- false
		delete(l.waiters, s)
	}
	clear(l.pings)
	l.wmu.Unlock()
}

// ping asks for a lease; the answer sets it from now.
func (l *link) ping() {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if l.w == nil {
		return
	}
	l.seq++
	l.pings[l.seq] = l.m.now()
	if writeMsg(l.w, msgPing, l.seq, nil) != nil || l.w.Flush() != nil {
		_ = l.conn.Close()
	}
}

// pay sends what is owed, and clears it once acknowledged.
func (l *link) pay() {
	m := l.m
	m.mu.Lock()
	if !l.peerKnown || (!l.owedAll && len(l.owed) == 0) || l.paying {
		m.mu.Unlock()
		return
	}
	all, owed := l.owedAll, l.owed
	l.owedAll, l.owed, l.paying = false, nil, true
	m.mu.Unlock()
	deps := []string{Global}
	if !all {
		deps = make([]string, 0, len(owed))
		for d := range owed {
			deps = append(deps, d)
		}
	}
	ok := l.request(msgBump, encodeDeps(deps), m.t.AckTimeout)
	m.mu.Lock()
	l.paying = false
	if !ok {
		if all {
			l.owedAll, l.owed = true, nil
		} else {
			l.owe(deps)
		}
	}
	m.mu.Unlock()
}

// request sends a message and waits for its acknowledgement.
func (l *link) request(typ byte, body []byte, timeout time.Duration) bool {
	ch := make(chan bool, 1)
	l.wmu.Lock()
	if l.w == nil {
		l.wmu.Unlock()
		return false
	}
	l.seq++
	seq := l.seq
	l.waiters[seq] = ch
	if writeMsg(l.w, typ, seq, body) != nil || l.w.Flush() != nil {
		delete(l.waiters, seq)
		_ = l.conn.Close()
		l.wmu.Unlock()
		return false
	}
	l.wmu.Unlock()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case ok := <-ch:
		return ok
	case <-t.C:
		l.wmu.Lock()
		delete(l.waiters, seq)
		l.wmu.Unlock()
		return false
	}
}

// readAcks checks who answered, then reads the peer's answers until the
// connection fails. nd is the nonce of this side's hello.
func (l *link) readAcks(c net.Conn, w *bufio.Writer, nd string, ready chan struct{}) {
	m := l.m
	r := bufio.NewReader(c)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	typ, _, body, err := readMsgMax(r, maxHello)
	if err != nil || typ != msgHello {
		if l.ctx.Err() == nil {
			l.note("silent", "err", err)
		}
		return
	}
	name, rest := string(body), ""
	if m.cfg.Secret != nil {
		name, rest, _ = strings.Cut(name, "\n")
	}
	if name != l.addr {
		l.note("other", "answered", name)
		return
	}
	if m.cfg.Secret != nil {
		na, proof, _ := strings.Cut(rest, "\n")
		if len(na) != 2*nonceLen || !hmac.Equal([]byte(proof), m.proof("answer", m.self, name, nd, na)) {
			m.refused(c, "its answer did not prove the secret")
			return
		}
		if writeMsg(w, msgAuth, 0, m.proof("dial", m.self, name, nd, na)) != nil || w.Flush() != nil {
			return
		}
	}
	_ = c.SetReadDeadline(time.Time{})
	l.wmu.Lock()
	l.w = w
	l.wmu.Unlock()
	close(ready)
	m.mu.Lock()
	l.up = true
	m.mu.Unlock()
	l.note("up")
	defer func() {
		m.mu.Lock()
		l.up = false
		m.mu.Unlock()
		l.note("down", "err", "the link was lost")
	}()
	for {
		typ, seq, _, err := readMsg(r)
		if err != nil || (typ != msgAck && typ != msgNak) {
			return
		}
		l.wmu.Lock()
		if ch, ok := l.waiters[seq]; ok {
			delete(l.waiters, seq)
			ch <- typ == msgAck
		}
		sent, isPing := l.pings[seq]
		delete(l.pings, seq)
		l.wmu.Unlock()
		if isPing && typ == msgAck {
			m.mu.Lock()
			l.leaseUntil = max(l.leaseUntil, sent+int64(m.t.Lease))
			m.recomputeTrust()
			m.mu.Unlock()
		}
	}
}

// A message is a type byte, a sequence number, a body length and the
// body.
func writeMsg(w *bufio.Writer, typ byte, seq uint64, body []byte) error {
	var h [13]byte
	h[0] = typ
	binary.BigEndian.PutUint64(h[1:], seq)
	binary.BigEndian.PutUint32(h[9:], uint32(len(body)))
	if _, err := w.Write(h[:]); err != nil {
		return err
	}
	_, err := w.Write(body)
	return err
}

// maxBody bounds a message's body, and maxHello the body of a message
// read before the peer has said who it is (and proved the secret).
const (
	maxBody  = 16 << 20
	maxHello = 1 << 10
)

func readMsg(r *bufio.Reader) (typ byte, seq uint64, body []byte, err error) {
	return readMsgMax(r, maxBody)
}

// readMsgMax reads a message whose body is at most max bytes. The body
// grows as its bytes arrive: a length alone allocates nothing.
func readMsgMax(r *bufio.Reader, max uint32) (typ byte, seq uint64, body []byte, err error) {
	var h [13]byte
	if _, err = io.ReadFull(r, h[:]); err != nil {
		return 0, 0, nil, err
	}
	n := binary.BigEndian.Uint32(h[9:])
	if n > max {
		return 0, 0, nil, fmt.Errorf("peers: a message of %d bytes", n)
	}
	var b bytes.Buffer
	b.Grow(int(min(n, 64<<10)))
	if _, err = io.CopyN(&b, r, int64(n)); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return 0, 0, nil, err
	}
	return h[0], binary.BigEndian.Uint64(h[1:]), b.Bytes(), nil
}

// encodeDeps lays deps out as a count, then each length and name.
func encodeDeps(deps []string) []byte {
	n := 4
	for _, d := range deps {
		n += 4 + len(d)
	}
	b := make([]byte, 0, n)
	b = binary.BigEndian.AppendUint32(b, uint32(len(deps)))
	for _, d := range deps {
		b = binary.BigEndian.AppendUint32(b, uint32(len(d)))
		b = append(b, d...)
	}
	return b
}

var errBadDeps = errors.New("peers: a malformed list of dependencies")

func decodeDeps(b []byte) ([]string, error) {
	if len(b) < 4 {
		return nil, errBadDeps
	}
	n := binary.BigEndian.Uint32(b)
	b = b[4:]
	if n > maxDeps || uint64(n)*4 > uint64(len(b)) {
		return nil, errBadDeps
	}
	deps := make([]string, 0, n)
	for range n {
		if len(b) < 4 {
			return nil, errBadDeps
		}
		k := binary.BigEndian.Uint32(b)
		b = b[4:]
		if k > maxDepLen || uint64(k) > uint64(len(b)) {
			return nil, errBadDeps
		}
		deps = append(deps, string(b[:k]))
		b = b[k:]
	}
	if len(b) != 0 {
		return nil, errBadDeps
	}
	return deps, nil
}
