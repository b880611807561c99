package relay

import (
	"sync"
	"time"

	"github.com/mycached/mycached/mysqlproxy/internal/wire"
)

// A session reads one side at a time: the client while it waits for a
// command, the backend while a command runs. What the other side does
// meanwhile matters too. A backend that closes an idle session (its
// wait_timeout, a KILL, a restart) must close the client's connection at
// once, as a direct connection would be closed, so that drivers see what
// they see directly and reconnect; and a client that goes away while its
// statement runs must take the statement with it, as the server would
// notice directly. A watcher waits on the other side's socket, through
// the runtime's poller, while the session's goroutine is not reading it.
//
// Watching costs a goroutine and, to stop, a read deadline, so a watcher
// starts only after its side has been left alone for watchDelay: a
// session that goes back and forth quickly never starts one.

// watchDelay is how long a side is left alone before it is watched.
const watchDelay = 50 * time.Millisecond

// The states of a watcher.
const (
	watchIdle     = iota // not watching
	watchWaiting         // its timer runs
	watchPeeking         // a goroutine waits for the socket
	watchStopping        // being stopped
)

// watcher waits for one side of a session to have something to read, or
// to fail, while the session's goroutine does not read that side.
type watcher struct {
	c *wire.Conn
	// event is called, on the watcher's goroutine and before stop
	// returns, when the side became readable (err nil) or failed.
	event func(err error)

	mu    sync.Mutex // protects the fields below
	state int
	timer *time.Timer
	done  chan struct{}
}

// arm starts watching after watchDelay, unless stop comes first. It does
// nothing when the watcher is already armed or watching.
func (w *watcher) arm() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.state != watchIdle {
		return
	}
	w.state = watchWaiting
	if w.timer == nil {
		w.timer = time.AfterFunc(watchDelay, w.fire)
	} else {
		w.timer.Reset(watchDelay)
	}
}

func (w *watcher) fire() {
	w.mu.Lock()
	if w.state != watchWaiting {
		w.mu.Unlock()
		return
	}
	w.state = watchPeeking
	done := make(chan struct{})
	w.done = done
	w.mu.Unlock()
	_, err := w.c.R.Peek(1)
	w.mu.Lock()
	stopped := w.state == watchStopping
	w.mu.Unlock()
	if !stopped {
		w.event(err)
	}
	w.mu.Lock()
	w.state = watchIdle
	w.mu.Unlock()
	close(done)
}

// peeking reports whether the watcher waits on its side's socket: what
// the side sends, or its close, reaches event as soon as the poller sees
// it.
func (w *watcher) peeking() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.state == watchPeeking
}

// stop ends the watch; once it returns, the watcher does not read.
func (w *watcher) stop() {
	w.mu.Lock()
	switch w.state {
	case watchIdle:
		w.mu.Unlock()
		return
	case watchWaiting:
		// A timer that already fired finds the state idle and returns.
		w.timer.Stop()
		w.state = watchIdle
		w.mu.Unlock()
		return
	}
	w.state = watchStopping
	done := w.done
	w.mu.Unlock()
	_ = w.c.NetConn.SetReadDeadline(time.Now())
	<-done
	_ = w.c.NetConn.SetReadDeadline(time.Time{})
}
