package store

import (
	"context"
	"os"
	"sync"
	"time"
)

// lookup fills vals[i] with the value of keys[i]: pipelined with the
// concurrent lookups that share its timeout when batched is set (the
// deadline is now plus that timeout), on a connection of its own
// otherwise.
func (p *connPool) lookup(ctx context.Context, keys []string, vals [][]byte, deadline time.Time, timeout time.Duration, batched bool) error {
	if b := p.batchers[timeout]; b != nil && batched {
		return b.get(keys, vals, deadline)
	}
	p.stats.mcGets.Add(1)
	p.stats.mcGetWrites.Add(1)
	return p.getMulti(ctx, keys, vals, deadline)
}

// Pipelined gets. Every lookup that reaches memcached costs a write and a
// read on a socket, in the proxy and in memcached; under concurrency those
// system calls, not the lookups, are what the CPUs spend their time on. A
// batcher lets concurrent lookups on one server share them: while
// maxInFlight gets are outstanding, new lookups queue; when one finishes,
// the first queued lookup takes the whole queue and sends it as one write
// of pipelined get commands, then reads the replies in order, handing each
// lookup its reply as soon as it is read.
//
// Nothing waits to form a batch: an idle server gets a lookup at once, as
// before, and batches only form from lookups that would otherwise have
// waited for memcached anyway. Every lookup is its own get command with
// its own keys and its own value buffer, and is sent after it arrived, so
// a batched lookup sees exactly what it would have seen alone.

// maxInFlight is the number of pipelined writes outstanding on one server
// (each on its own connection) before lookups queue.
const maxInFlight = 2

// maxBatch bounds the lookups in one write; the rest wait for the next.
const maxBatch = 64

// getReq is one lookup waiting in, or leading, a batch.
type getReq struct {
	keys     []string
	vals     [][]byte
	deadline time.Time
	err      error
	lead     bool          // woken to lead the next batch rather than with its reply
	done     chan struct{} // one signal: the reply, or the lead
}

var getReqs = sync.Pool{New: func() any { return &getReq{done: make(chan struct{}, 1)} }}

// batcher pipelines the gets of one server that share a timeout, so that
// the deadlines within a batch differ only by arrival time.
type batcher struct {
	pool *connPool

	mu       sync.Mutex // protects inFlight and queue
	inFlight int        // batches being sent or read
	queue    []*getReq  // waiting while inFlight == maxInFlight

	stats *counters
}

// get fills vals[i] with the value of keys[i] (nil for a miss), sharing a
// write with the lookups concurrent with it. It waits at most until
// deadline, give or take the time it takes to read the replies ahead of
// its own in a batch that was sent before the deadline.
func (b *batcher) get(keys []string, vals [][]byte, deadline time.Time) error {
	r := getReqs.Get().(*getReq)
	r.keys, r.vals, r.deadline = keys, vals, deadline
	b.mu.Lock()
	if b.inFlight < maxInFlight {
		b.inFlight++
	} else {
		b.queue = append(b.queue, r)
		b.mu.Unlock()
		<-r.done
		if !r.lead {
			return r.release()
		}
		r.lead = false
		b.mu.Lock()
	}
	// r leads a batch: itself and, when it was woken from the queue,
	// those queued behind it.
	n := min(len(b.queue), maxBatch-1)
	batch := make([]*getReq, 0, n+1)
	batch = append(append(batch, r), b.queue[:n]...)
	b.queue = append(b.queue[:0], b.queue[n:]...)
	b.mu.Unlock()

	b.run(r, batch)

	b.mu.Lock()
	if len(b.queue) > 0 {
		next := b.queue[0]
		b.queue = append(b.queue[:0], b.queue[1:]...)
		next.lead = true
		next.done <- struct{}{}
	} else {
		b.inFlight--
	}
	b.mu.Unlock()
	return r.release()
}

// release returns r to the pool and the error of its lookup.
func (r *getReq) release() error {
	err := r.err
	*r = getReq{done: r.done}
	getReqs.Put(r)
	return err
}

// run sends batch as one get of the keys its lookups ask for (each key
// once) and hands every lookup its values. It is called by lead, whose own
// lookup is in batch; every other lookup is signalled when its values (or
// its failure) are known. A lookup whose deadline has passed while it
// queued fails without being sent. As with a single get, a pooled
// connection found closed by the server (it restarted, or dropped idle
// clients) is retried once on a new one: a get has no side effects.
func (b *batcher) run(lead *getReq, batch []*getReq) {
	finish := func(r *getReq, err error) {
		r.err = err
		if r != lead {
			r.done <- struct{}{}
		}
	}
	now := time.Now()
	live := batch[:0]
	var deadline time.Time
	for _, r := range batch {
		if !r.deadline.After(now) {
			finish(r, os.ErrDeadlineExceeded)
			continue
		}
		if len(live) == 0 || r.deadline.Before(deadline) {
			deadline = r.deadline
		}
		live = append(live, r)
	}
	if len(live) == 0 {
		return
	}
	b.stats.mcGets.Add(uint64(len(live)))
	b.stats.mcGetWrites.Add(1)
	if len(live) == 1 {
		r := live[0]
		finish(r, b.pool.getMulti(context.Background(), r.keys, r.vals, deadline))
		return
	}
	// Each distinct key once; at[j] is the index in keys of the j-th key
	// of the lookups, in order.
	n := 0
	for _, r := range live {
		n += len(r.keys)
	}
	keys := make([]string, 0, n)
	at := make([]int, 0, n)
	index := make(map[string]int, n)
	for _, r := range live {
		for _, k := range r.keys {
			i, ok := index[k]
			if !ok {
				i = len(keys)
				index[k] = i
				keys = append(keys, k)
			}
			at = append(at, i)
		}
	}
	vals := make([][]byte, len(keys))
	err := b.pool.getMultiSeparate(keys, vals, deadline)
	for _, r := range live {
		if err == nil {
			for j := range r.keys {
				r.vals[j] = vals[at[j]]
			}
			at = at[len(r.keys):]
		}
		finish(r, err)
	}
}
