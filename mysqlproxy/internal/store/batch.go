package store

import (
	"context"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Shared gets. Every lookup that reaches memcached costs a write and a
// read on a socket, in the proxy and in memcached; under concurrency those
// system calls and the wake-ups they cause, not the lookups, are what the
// CPUs spend their time on. A batcher lets concurrent lookups on one
// server share them: while its maximum of gets is outstanding, new lookups
// queue; when one finishes, the first queued lookup takes the queue and
// sends the distinct keys of all its lookups as one get, then gives each
// lookup its values. (memcached answers pipelined get commands with a
// reply each, so one get of all the keys is what saves its system calls.)
//
// A finished get hands its place on once every lookup it answered has
// resumed, not as soon as its reply is read. The lookups are ready to run
// by then, so this waits for no timer and no client, only for the
// scheduler to reach goroutines it already has; the lookups that arrive
// meanwhile join the next get. At 32 concurrent readers on two CPUs this
// made batches 20-25% larger and cut memcached's CPU per read by 12-27%
// (kv reads and query-cache hits), with throughput and p99 unchanged
// within the noise of such a machine.
//
// Nothing else waits to form a batch: an idle server gets a lookup at
// once, as before, and batches only form from lookups that would
// otherwise have waited for memcached anyway. Every lookup is sent after
// it arrived, so a batched lookup sees what it would have seen alone, and
// each value is read into an array of its own, so a lookup (or an L1
// entry decoded from it) keeps no other lookup's values alive. The chunks
// of large entries are not batched (see getChunks).

// DefaultGetsInFlight is the most gets outstanding on one server per
// timeout class before lookups queue. Fewer makes batches larger and wakes
// memcached less: under 32 concurrent kv readers on two CPUs, one get in
// flight cost memcached 2.7-3.5 us of CPU per read against 4.3-4.9 with
// two, and kept the readers' p99 under 2 ms. But a lookup that queues
// waits out the outstanding get's whole round trip, which at moderate
// concurrency is latency lost: at 8 sysbench threads, cache hits from
// memcached ran 20% faster with two than with one. So a batcher narrows
// to one get in flight only while its batches show that the queue keeps
// refilling (see noteBatch).
const DefaultGetsInFlight = 2

// A batcher narrows to one get in flight when its mean batch reaches
// narrowAt lookups, and widens again when, narrowed, its mean falls below
// widenBelow (in meanUnit parts of a lookup). With one get in flight
// batches are about 1.7 times larger than with two at the same load (2.9
// against 1.9 lookups at 8 kv readers, 8.4 against 4.9 at 32), so
// widenBelow is the narrowAt of two gets in flight in one-get terms, less
// a margin. Each change restarts the mean inside the new state's band,
// since the batches it averaged were of the other state.
//
// The mean decays by 1/meanDecay per batch. Batches under a steady load
// are far from steady in size: with one get in flight at 32 readers they
// alternate between a lookup or two and nearly all 32, since the answers
// of a large batch come back as one burst, and the lookup that arrived
// just before it leaves alone. A mean over 8 batches then fell below
// widenBelow a hundred times a second, and every widening cost a burst
// of small gets; over 256 batches (tens of milliseconds at that load) it
// holds. A change of load still shows within a few hundred batches.
const (
	meanUnit   = 1024
	meanDecay  = 256
	narrowAt   = meanUnit * 7 / 2 // 3.5
	widenBelow = meanUnit * 5
)

// maxBatch bounds the lookups in one get; the rest wait for the next.
const maxBatch = 128

// lookup fills vals[i] with the value of keys[i]: in a get shared with
// the concurrent lookups of the same timeout when batched is set (the
// deadline is then now plus that timeout), on a connection of its own
// otherwise. adds, when not empty, are commands without a reply (see
// genAdds) sent just before the get, on the same connection.
func (p *connPool) lookup(ctx context.Context, keys []string, vals [][]byte, deadline time.Time, timeout time.Duration, batched bool, adds []byte) error {
	if b := p.batchers[timeout]; b != nil && batched {
		return b.get(keys, vals, deadline, adds)
	}
	p.stats.mcGets.Add(1)
	p.stats.mcGetWrites.Add(1)
	return p.get(ctx, keys, vals, deadline, false, adds)
}

// getReq is one lookup waiting in, or leading, a batch.
type getReq struct {
	keys     []string
	vals     [][]byte
	adds     []byte
	deadline time.Time
	err      error
	turn     *batchTurn    // set with the reply; woken without one, it leads the next batch
	done     chan struct{} // one signal: the reply, or the lead
}

// batchTurn counts the lookups of an answered batch that have yet to
// resume; the last to resume hands the batch's place in flight on.
type batchTurn struct{ left atomic.Int32 }

// resumed records that one lookup of the batch t has resumed after its
// reply, and hands the place on if it was the last. A nil t is a batch
// of one.
func (b *batcher) resumed(t *batchTurn) {
	if t == nil || t.left.Add(-1) == 0 {
		b.handOn()
	}
}

var getReqs = sync.Pool{New: func() any { return &getReq{done: make(chan struct{}, 1)} }}

// batcher shares the gets of one server among concurrent lookups of one
// timeout, so that the deadlines within a batch differ only by arrival
// time.
type batcher struct {
	pool *connPool

	maxInFlight int

	mu       sync.Mutex // protects the fields below
	inFlight int        // batches being sent or read
	queue    []*getReq  // waiting while inFlight is at the limit
	meanSize int        // lookups per batch, in meanUnits, decaying by 1/meanDecay per batch
	narrow   bool       // one get in flight: the queue keeps refilling

	stats *counters
}

// get fills vals[i] with the value of keys[i] (nil for a miss), sharing a
// get with the lookups concurrent with it. It waits about until deadline
// at most: the gets it may queue behind end by their own deadlines, which
// are no later (same timeout, earlier start), and its own get's deadline
// is the earliest of its batch.
func (b *batcher) get(keys []string, vals [][]byte, deadline time.Time, adds []byte) error {
	r := getReqs.Get().(*getReq)
	r.keys, r.vals, r.deadline, r.adds = keys, vals, deadline, adds
	b.mu.Lock()
	if b.inFlight < b.limit() && len(b.queue) == 0 {
		b.inFlight++
	} else {
		b.queue = append(b.queue, r)
		b.mu.Unlock()
		<-r.done
		if r.turn != nil {
			b.resumed(r.turn)
			return r.release()
		}
		b.mu.Lock()
	}
	// r leads a batch: itself and, when it was woken from the queue,
	// those queued behind it.
	n := min(len(b.queue), maxBatch-1)
	batch := make([]*getReq, 0, n+1)
	batch = append(append(batch, r), b.queue[:n]...)
	b.queue = append(b.queue[:0], b.queue[n:]...)
	b.noteBatch(len(batch))
	b.mu.Unlock()

	b.lead(r, batch)
	return r.release()
}

// lead runs batch and answers the other lookups in it; the last of them
// to resume (r, when they have all resumed first) passes the lead to the
// first queued lookup or gives the place in flight back. Should the run
// panic, the other lookups get an error and the queue still moves before
// the panic goes on.
func (b *batcher) lead(r *getReq, batch []*getReq) {
	ran := false
	defer func() {
		var t *batchTurn
		if len(batch) > 1 {
			t = &batchTurn{}
			t.left.Store(int32(len(batch)))
		}
		for _, q := range batch {
			if !ran {
				q.err = errBatchAborted
			}
			if q != r {
				q.turn = t
				q.done <- struct{}{}
			}
		}
		b.resumed(t)
	}()
	b.run(batch)
	ran = true
}

// handOn passes the lead to the first queued lookup, or gives a place in
// flight back.
func (b *batcher) handOn() {
	b.mu.Lock()
	defer b.mu.Unlock()
	// Over the limit (it narrowed), this get's place in flight goes;
	// another get still in flight hands the queue on when it ends.
	if len(b.queue) > 0 && b.inFlight <= b.limit() {
		next := b.queue[0]
		b.queue = append(b.queue[:0], b.queue[1:]...)
		next.done <- struct{}{}
		return
	}
	b.inFlight--
}

// limit returns the number of gets that may be in flight now. b.mu is
// held.
func (b *batcher) limit() int {
	if b.narrow {
		return 1
	}
	return b.maxInFlight
}

// noteBatch records that a get of n lookups is being sent, and narrows or
// widens the limit. b.mu is held.
func (b *batcher) noteBatch(n int) {
	b.meanSize += (n*meanUnit - b.meanSize) / meanDecay
	switch {
	case !b.narrow && b.meanSize >= narrowAt:
		b.narrow, b.meanSize = true, widenBelow+meanUnit
	case b.narrow && b.meanSize < widenBelow:
		b.narrow, b.meanSize = false, narrowAt-meanUnit
	}
}

// errBatchAborted is the error of lookups whose batch stopped on a panic.
var errBatchAborted = errors.New("store: memcached get aborted")

// release returns r to the pool and the error of its lookup.
func (r *getReq) release() error {
	err := r.err
	*r = getReq{done: r.done}
	getReqs.Put(r)
	return err
}

// run sends batch as one get of the keys its lookups ask for (each key
// once) and sets every lookup's values and error. A lookup whose deadline
// has passed while it queued fails without being sent.
func (b *batcher) run(batch []*getReq) {
	now := time.Now()
	if len(batch) == 1 {
		r := batch[0]
		if !r.deadline.After(now) {
			r.err = os.ErrDeadlineExceeded
			return
		}
		b.stats.mcGets.Add(1)
		b.stats.mcGetWrites.Add(1)
		r.err = b.pool.get(context.Background(), r.keys, r.vals, r.deadline, false, r.adds)
		return
	}
	live := make([]*getReq, 0, len(batch))
	var deadline time.Time
	for _, r := range batch {
		if !r.deadline.After(now) {
			r.err = os.ErrDeadlineExceeded
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
		r.err = b.pool.get(context.Background(), r.keys, r.vals, deadline, false, r.adds)
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
	var adds []byte
	for _, r := range live {
		adds = append(adds, r.adds...)
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
	err := b.pool.get(context.Background(), keys, vals, deadline, true, adds)
	for _, r := range live {
		if err == nil {
			for j := range r.keys {
				r.vals[j] = vals[at[j]]
			}
			at = at[len(r.keys):]
		}
		r.err = err
	}
}
