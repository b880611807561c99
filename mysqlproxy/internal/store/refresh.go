package store

import (
	"sync"
	"time"

	"github.com/mycached/mycached/mysqlproxy/internal/store/flight"
)

// Flight collapses concurrent misses of one key into one backend query.
// The zero value is ready to use.
type Flight = flight.Group

// refreshClaim is how long one caller owns the refresh of a stale entry.
// If it never stores a new entry (its query failed, or the result is no
// longer cacheable), the next caller after this gets Stale and tries.
const refreshClaim = 10 * time.Second

// maxRefreshing bounds refreshSet; past it expired claims are dropped.
const maxRefreshing = 1 << 14

// refreshSet records which stale keys some caller is refreshing, so that
// past the soft ttl one request refreshes while the others are served the
// entry as a plain hit.
type refreshSet struct {
	mu sync.Mutex           // protects m
	m  map[string]time.Time // key -> end of the claim
}

// claim reports whether the caller should refresh key.
func (r *refreshSet) claim(key string, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if until, ok := r.m[key]; ok && now.Before(until) {
		return false
	}
	if r.m == nil {
		r.m = make(map[string]time.Time)
	}
	if len(r.m) >= maxRefreshing {
		for k, until := range r.m {
			if !now.Before(until) {
				delete(r.m, k)
			}
		}
		if len(r.m) >= maxRefreshing {
			clear(r.m) // only costs some duplicate refreshes
		}
	}
	r.m[key] = now.Add(refreshClaim)
	return true
}

// done ends any claim on key.
func (r *refreshSet) done(key string) {
	r.mu.Lock()
	delete(r.m, key)
	r.mu.Unlock()
}
