// Package flight runs one call per key at a time and shares its result
// with every caller that asked for the same key meanwhile, so concurrent
// misses of one cache key run the backend query once.
package flight

import "sync"

// call is one in-flight or completed Do call.
type call struct {
	wg   sync.WaitGroup
	val  any
	err  error
	dups int // callers waiting on this call; guarded by Group.mu
}

// Group is a namespace of keys. The zero value is ready to use.
type Group struct {
	mu sync.Mutex       // protects m
	m  map[string]*call // lazily initialized
}

// Do runs fn and returns its results, unless a call for key is already in
// flight, in which case it waits for that call and returns its results.
// shared reports whether the results were given to more than one caller.
// A panic in fn propagates to the caller that ran it; the waiters then get
// ErrPanicked.
func (g *Group) Do(key string, fn func() (any, error)) (v any, err error, shared bool) {
	g.mu.Lock()
	if g.m == nil {
		g.m = make(map[string]*call)
	}
	if c, ok := g.m[key]; ok {
		c.dups++
		g.mu.Unlock()
		c.wg.Wait()
		return c.val, c.err, true
	}
	c := &call{err: ErrPanicked}
	c.wg.Add(1)
	g.m[key] = c
	g.mu.Unlock()

	// The deferred cleanup runs even if fn panics, so that waiters are
	// released and the key does not stay in flight forever.
	defer func() {
		g.mu.Lock()
		if g.m[key] == c {
			delete(g.m, key)
		}
		g.mu.Unlock()
		c.wg.Done()
	}()
	c.val, c.err = fn()
	g.mu.Lock()
	shared = c.dups > 0
	g.mu.Unlock()
	return c.val, c.err, shared
}

// Forget makes the next Do for key run fn even if a call is in flight.
func (g *Group) Forget(key string) {
	g.mu.Lock()
	delete(g.m, key)
	g.mu.Unlock()
}
