package flight

import "sync"

// Early is a group of calls whose leaders publish their result as soon as
// they have it, before they are done: a leader that fetched a response
// hands it to the waiting callers before it writes it to its own slow
// client, or tells them at once that there will be none. The zero Early
// is ready to use.
type Early struct {
	mu sync.Mutex
	m  map[string]*Call
}

// Call is one call in flight.
type Call struct {
	g    *Early
	key  string
	once sync.Once
	done chan struct{}
	val  any
}

// Join returns the call in flight for key, and whether the caller leads
// it: a leader must Finish it, whatever happens (defer it); the others
// Wait for it.
func (g *Early) Join(key string) (c *Call, leader bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if c, ok := g.m[key]; ok {
		return c, false
	}
	if g.m == nil {
		g.m = make(map[string]*Call)
	}
	c = &Call{g: g, key: key, done: make(chan struct{})}
	g.m[key] = c
	return c, true
}

// Finish publishes v to the waiting callers and ends the call: a caller
// that joins key afterwards leads a new one. Only the first Finish
// counts.
func (c *Call) Finish(v any) {
	c.once.Do(func() {
		c.g.mu.Lock()
		if c.g.m[c.key] == c {
			delete(c.g.m, c.key)
		}
		c.g.mu.Unlock()
		c.val = v
		close(c.done)
	})
}

// Wait returns the value the leader finished the call with.
func (c *Call) Wait() any {
	<-c.done
	return c.val
}

// Done is closed when the call is finished.
func (c *Call) Done() <-chan struct{} { return c.done }

// Value is the value the call finished with; only after Done.
func (c *Call) Value() any { return c.val }
