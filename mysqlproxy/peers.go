package mysqlproxy

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/mycached/mycached/mysqlproxy/internal/peers"
	"github.com/mycached/mycached/mysqlproxy/internal/store"
)

// startPeers links this sidecar to the fleet's others (see
// Config.PeerListen), or lists it as one that takes no part. A server
// without memcached, or with no backend (kv alone), has no fleet.
func (s *Server) startPeers() error {
	s.reg.GaugeFunc("mycached_peers_trusted", "1 while strict hits are checked against the local view: every other sidecar is linked.", func() float64 {
		if m := s.peerMesh(); m != nil && m.Trusted() {
			return 1
		}
		return 0
	})
	s.reg.GaugeFunc("mycached_peer_notify_failures", "Writes' invalidations another sidecar did not acknowledge in time.", func() float64 {
		if m := s.peerMesh(); m != nil {
			return float64(m.Stats().Failed)
		}
		return 0
	})
	s.reg.GaugeFunc("mycached_peer_refused", "Peer connections closed because they could not prove the fleet's secret.", func() float64 {
		if m := s.peerMesh(); m != nil {
			return float64(m.Stats().Refused)
		}
		return 0
	})
	if len(s.cfg.Memcached) == 0 || s.cfg.Backend == "" {
		if s.cfg.PeerListen != "" {
			return fmt.Errorf("mysqlproxy: PeerListen needs Memcached and a Backend")
		}
		return nil
	}
	var ln net.Listener
	if s.cfg.PeerListen != "" {
		var err error
		if ln, err = net.Listen("tcp", s.cfg.PeerListen); err != nil {
			return fmt.Errorf("mysqlproxy: peer listener: %w", err)
		}
	}
	m := peers.New(peers.Config{
		Listener:  ln,
		Advertise: s.cfg.PeerAdvertise,
		Registry:  registry{s.store},
		Apply:     s.store.BumpLocal,
		Secret:    s.cfg.PeerSecret,
		Log:       s.log,
	})
	s.peerMu.Lock()
	s.mesh = m
	s.peerMu.Unlock()
	if ln != nil {
		s.store.SetNotify(m.Notify)
		s.cache.SetPeers(m)
		s.log.Info("peers: listening", "addr", ln.Addr().String(), "advertise", m.Stats().Advertise, "secret", s.cfg.PeerSecret != nil)
		if s.cfg.PeerSecret == nil && !isLoopback(ln.Addr()) {
			s.log.Warn("peers: the peer port takes connections from anyone who can reach it, who may then invalidate this sidecar's entries at will; set --peer-secret-file, or keep the port on a private network")
		}
	}
	return nil
}

// takeMesh returns the links and forgets them, so that they are stopped
// once; nil when there are none.
func (s *Server) takeMesh() *peers.Mesh {
	s.peerMu.Lock()
	defer s.peerMu.Unlock()
	m := s.mesh
	s.mesh = nil
	return m
}

// leavePeers takes this sidecar off the fleet's list and stops the
// links, once its sessions have ended: it will write no more.
func (s *Server) leavePeers() {
	if m := s.takeMesh(); m != nil {
		m.Leave()
	}
}

// closePeers stops the links, once.
func (s *Server) closePeers() {
	if m := s.takeMesh(); m != nil {
		// The notifier stays: a write that ends after this finds every
		// link closed, and waits out the leases it granted.
		m.Close()
	}
}

// peerMesh returns the links, or nil.
func (s *Server) peerMesh() *peers.Mesh {
	s.peerMu.Lock()
	defer s.peerMu.Unlock()
	return s.mesh
}

// peerRows are the peers' rows of SHOW MYCACHED STATUS.
func (s *Server) peerRows() [][2]string {
	m := s.peerMesh()
	if m == nil {
		return nil
	}
	st := m.Stats()
	onOff := "OFF"
	if st.Trusted {
		onOff = "ON"
	}
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	return [][2]string{
		{"Peer_address", st.Advertise},
		{"Peer_members", strconv.Itoa(st.Members)},
		{"Peer_linked", strconv.Itoa(st.Linked)},
		{"Peer_trusted", onOff},
		{"Peer_notified", u(st.Notified)},
		{"Peer_notify_failures", u(st.Failed)},
		{"Peer_notify_unsafe", u(st.Unsafe)},
		{"Peer_refused", u(st.Refused)},
	}
}

// registry keeps the fleet's list in memcached.
type registry struct{ st *store.Store }

func (r registry) Refresh(ctx context.Context, self string, ttl time.Duration) ([]string, bool, error) {
	return r.st.PeerRefresh(ctx, self, ttl)
}

func (r registry) Leave(ctx context.Context, self string) error { return r.st.PeerLeave(ctx, self) }

// isLoopback reports an address only this host can reach.
func isLoopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}
