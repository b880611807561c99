package cachepolicy

import (
	"context"
	"math"
	"time"
)

// DefaultMaxMemory is the default of Options.MaxMemory. A policy decides
// with a few small strings and tables (the shipped scripts build at most
// one copy of the statement per call, which the statement's own allowance
// covers), so 4 MiB is ample, and it bounds what MaxPool calls in flight
// can take together: 2 × GOMAXPROCS × 4 MiB beyond their statements.
const DefaultMaxMemory = 4 << 20

// Budgets of a script's top level, which runs once per pooled state. They
// are larger than a hook's because a top level may build lookup tables or
// read a graph from the kv store, but they still stop a runaway load.
const (
	topLevelTimeout = time.Second
	topLevelMemory  = 64 << 20
)

// pollSteps is how many steps a library function takes between two looks
// at the call's budget: often enough to stop within microseconds of the
// deadline, rarely enough to cost nothing measurable.
const pollSteps = 1024

// killReason says why a call was stopped before it finished.
type killReason uint8

const (
	notKilled    killReason = iota
	killDeadline            // the call's deadline passed
	killMemory              // the call allocated more than its budget
	killClosed              // the engine was closed
)

// budget is what one call into Lua may still spend. The time half is the
// call's context: the VM polls it before every instruction, and library
// functions that loop in Go (pattern matching, sorting, concatenation)
// call poll every pollSteps steps. The memory half is a byte count that
// the functions which build strings or copy tables charge before they
// allocate.
type budget struct {
	ctx    context.Context
	cancel context.CancelFunc
	done   <-chan struct{} // ctx.Done(), fetched once per call
	end    time.Time       // the deadline, which poll also reads itself
	left   int64           // bytes the call may still allocate
	limit  int64           // left at the start, for the log
	reason killReason      // set by charge and poll; otherwise derived from ctx
}

// begin starts a call's budget under the engine's context and points the
// Lua state at it. finish must follow.
func (st *state) begin(timeout time.Duration, memory int64) {
	b := &st.bud
	b.ctx, b.cancel = context.WithTimeout(st.set.eng.ctx, timeout)
	b.done = b.ctx.Done()
	b.end = time.Now().Add(timeout)
	b.left, b.limit = memory, memory
	b.reason = notKilled
	st.L.SetContext(b.ctx)
}

// finish ends the call's budget and reports why the call was stopped, if
// it was.
func (st *state) finish() killReason {
	b := &st.bud
	st.L.RemoveContext()
	reason := b.reason
	if reason == notKilled && b.ctx.Err() != nil {
		reason = killDeadline
		if st.set.eng.ctx.Err() != nil {
			reason = killClosed
		}
	}
	b.cancel()
	b.ctx, b.cancel, b.done = nil, nil, nil
	return reason
}

// poll raises an error in the running call once its budget is spent. A
// script's pcall may catch that error, but the call's context is done, so
// the VM raises it again at the script's next instruction. poll reads the
// clock as well as the context: on a busy machine the context's timer can
// fire well after the deadline, while a call that is polling is running
// and can see the time for itself.
func (st *state) poll() {
	b := &st.bud
	select {
	case <-b.done:
		if b.reason == killMemory {
			st.L.RaiseError("memory budget of the call exhausted")
		}
		st.L.RaiseError("%s", b.ctx.Err())
	default:
	}
	if b.cancel != nil && time.Now().After(b.end) {
		b.reason = killDeadline
		b.cancel()
		st.L.RaiseError("%s", context.DeadlineExceeded)
	}
}

// charge takes n bytes from the call's memory budget before a library
// function allocates them. Past the budget it stops the whole call, as the
// deadline would.
func (st *state) charge(n int64) {
	b := &st.bud
	if n >= 0 && n <= b.left {
		b.left -= n
		return
	}
	b.left = 0
	if b.reason == notKilled {
		b.reason = killMemory
	}
	if b.cancel != nil {
		b.cancel()
	}
	st.L.RaiseError("memory budget of the call exhausted")
}

// chargeProduct charges a × b bytes, saturating instead of overflowing.
func (st *state) chargeProduct(a, b int) {
	if a <= 0 || b <= 0 {
		return
	}
	n := int64(math.MaxInt64)
	if int64(a) <= n/int64(b) {
		n = int64(a) * int64(b)
	}
	st.charge(n)
}

// statementBytes is what a call may allocate beyond MaxMemory: twice the
// text it is given, so that a query hook can rewrite or tag a statement of
// any size the server accepts.
func statementBytes(q *Query, w *Write) int64 {
	var n int
	switch {
	case q != nil:
		n = len(q.SQL) + len(q.Digest) + q.ParamsSize
		for _, p := range q.Params {
			switch p := p.(type) {
			case string:
				n += len(p)
			case []byte:
				n += len(p)
			}
		}
	case w != nil:
		n = len(w.SQL)
	}
	return 2 * int64(n)
}
