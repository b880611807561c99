// Package ring is a consistent-hash ring of memcached servers, so that
// adding or removing one of N servers moves only about 1/N of the keys.
package ring

import (
	"errors"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/cespare/xxhash/v2"
)

// DefaultReplicas is the number of virtual nodes per server. About 160
// points per server keeps the load within a few percent of even (the
// figure ketama settled on).
const DefaultReplicas = 160

// ErrNoServers is returned by PickServer when the ring is empty.
var ErrNoServers = errors.New("ring: no servers")

// Ring maps keys to servers. It is immutable after New, and therefore safe
// for concurrent use. It implements gomemcache's ServerSelector.
type Ring struct {
	points []uint64 // sorted hashes of the virtual nodes
	owner  []int    // owner[i] indexes addrs for points[i]
	addrs  []net.Addr
}

// staticAddr is a resolved address whose String is fixed, so that the
// memcached client's per-address connection pool sees one stable key.
type staticAddr struct{ network, str string }

func (a *staticAddr) Network() string { return a.network }
func (a *staticAddr) String() string  { return a.str }

// New resolves servers (host:port, or a path containing "/" for a unix
// socket) and builds a ring with replicas virtual nodes per server
// (DefaultReplicas when replicas <= 0).
func New(replicas int, servers ...string) (*Ring, error) {
	if replicas <= 0 {
		replicas = DefaultReplicas
	}
	r := &Ring{}
	type point struct {
		h     uint64
		owner int
	}
	var pts []point
	for i, s := range servers {
		addr, err := resolve(s)
		if err != nil {
			return nil, err
		}
		r.addrs = append(r.addrs, addr)
		for v := 0; v < replicas; v++ {
			// The point names depend only on the server's own name, so a
			// server keeps its points when others join or leave.
			pts = append(pts, point{xxhash.Sum64String(s + "-" + strconv.Itoa(v)), i})
		}
	}
	slices.SortFunc(pts, func(a, b point) int {
		switch {
		case a.h < b.h:
			return -1
		case a.h > b.h:
			return 1
		}
		return a.owner - b.owner
	})
	r.points = make([]uint64, len(pts))
	r.owner = make([]int, len(pts))
	for i, p := range pts {
		r.points[i], r.owner[i] = p.h, p.owner
	}
	return r, nil
}

func resolve(s string) (net.Addr, error) {
	if strings.Contains(s, "/") {
		a, err := net.ResolveUnixAddr("unix", s)
		if err != nil {
			return nil, err
		}
		return &staticAddr{a.Network(), a.String()}, nil
	}
	a, err := net.ResolveTCPAddr("tcp", s)
	if err != nil {
		return nil, err
	}
	return &staticAddr{a.Network(), a.String()}, nil
}

// Index returns the index, in the order given to New, of the server that
// owns key, or -1 when the ring is empty.
func (r *Ring) Index(key string) int {
	if len(r.points) == 0 {
		return -1
	}
	if len(r.addrs) == 1 {
		return 0
	}
	h := xxhash.Sum64String(key)
	i, _ := slices.BinarySearch(r.points, h)
	if i == len(r.points) {
		i = 0
	}
	return r.owner[i]
}

// PickServer returns the address of the server that owns key.
func (r *Ring) PickServer(key string) (net.Addr, error) {
	i := r.Index(key)
	if i < 0 {
		return nil, ErrNoServers
	}
	return r.addrs[i], nil
}

// Each calls fn for every server, stopping at the first error.
func (r *Ring) Each(fn func(net.Addr) error) error {
	for _, a := range r.addrs {
		if err := fn(a); err != nil {
			return err
		}
	}
	return nil
}

// Addrs returns the resolved server addresses in the order given to New.
func (r *Ring) Addrs() []net.Addr { return slices.Clone(r.addrs) }
