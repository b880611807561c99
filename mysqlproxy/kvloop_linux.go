//go:build linux

package mysqlproxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/mycached/mycached/mysqlproxy/internal/kv"
	"github.com/mycached/mycached/mysqlproxy/internal/sqlinfo"
	"github.com/mycached/mycached/mysqlproxy/internal/store"
)

// The kv-only listener's connections, once through their handshake, are
// served by an event loop instead of a goroutine each. Its workers (one
// per CPU the runtime may use) take turns waiting on one epoll set for
// all the connections at once; a worker takes every connection that is
// ready, reads the commands that arrived, reads the values of all the kv
// SELECTs among them with one memcached lookup, and writes the answers,
// while the next worker waits for the connections that become ready
// meanwhile. A connection is armed for one event at a time
// (EPOLLONESHOT), so only one worker ever has it, and is armed again once
// its answers are written.
//
// A goroutine per connection costs each read a sleep and a wake-up of the
// goroutine, and often of the thread under it, twice when the read waits
// for memcached: under 32 concurrent readers on two CPUs, those wake-ups
// were the largest part of mycached's CPU per read. A worker wakes once
// for all the commands that arrived together. Workers share the set,
// rather than each owning some connections, so that a worker whose thread
// the system puts aside holds up only the connections it has taken, not a
// share of all of them: with a set per worker, the readers' p99 at 32
// rose to 1.9-2.4 ms, against 1.5-1.8 ms with a goroutine each; with one
// shared set it stayed at 1.6-1.9 ms.
//
// Only the kv SELECT of keys given as text is served by the workers. Any
// other command (an INSERT, a prepared statement, SELECT *) is handed to
// a goroutine of its own with the connection, which is armed again once
// the commands it holds are answered: a worker must never block on
// anything but the lookups it batches. Answers that the socket will not
// take at once are finished the same way, so a client that stops reading
// holds up only itself.

// kvLoops is a server's kv event loop, started on first use.
type kvLoops struct {
	once sync.Once
	loop *kvLoop
}

// kvLoop is the epoll set, its workers and the connections in it.
type kvLoop struct {
	srv  *Server
	epfd int
	// The epoll descriptor as a file in the runtime's own poller, which
	// wakes a worker when a connection is ready: workers wait as any
	// goroutine waits for its socket, not in a system call that holds a
	// thread. The file's read lock makes them wait one at a time.
	ep      *os.File
	epRC    syscall.RawConn
	wake    [2]int       // a pipe; its read end in the set wakes the workers to stop
	workers atomic.Int32 // running; the last to end closes the set

	mu      sync.Mutex // protects the fields below and each loopConn's busy and taken
	conns   map[int32]*loopConn
	stopped bool
}

// loopConn is one kv-only connection on the loop.
type loopConn struct {
	fd     int
	s      *session
	in     []byte       // read and not yet handled
	out    bytes.Buffer // answers not yet written; the session's writer writes here
	taken  bool         // a worker has it
	busy   bool         // a goroutine of its own has it
	closed bool
	rest   bool // a command other than a kv SELECT waits behind this round's
}

// loopSelect is a kv SELECT waiting for the round's lookup.
type loopSelect struct {
	lc       *loopConn
	keys     []string // store keys
	userKeys [][]byte
}

// adopt hands s, a kv-only session through its handshake, to the loop.
// It reports false, leaving s to its goroutine, when that cannot be done.
func (ls *kvLoops) adopt(s *session) bool {
	if s.client.r.Buffered() > 0 || s.srv.draining.Load() {
		return false
	}
	sc, ok := s.client.conn.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	ls.once.Do(func() { ls.start(s.srv) })
	if ls.loop == nil {
		return false
	}
	// The loop keeps a duplicate of the descriptor; closing the net.Conn
	// takes the original out of the runtime's poller, which would
	// otherwise be woken for every command too.
	fd := -1
	cerr := raw.Control(func(f uintptr) {
		r, _, errno := syscall.Syscall(syscall.SYS_FCNTL, f, syscall.F_DUPFD_CLOEXEC, 0)
		if errno != 0 {
			err = errno
			return
		}
		fd = int(r)
	})
	if cerr != nil || err != nil || fd < 0 {
		return false
	}
	lc := &loopConn{fd: fd, s: s}
	s.client.w.Reset(&lc.out)
	_ = s.client.conn.Close()
	ls.loop.arm(lc)
	return true
}

// start starts the loop, unless the system will not give it epoll.
func (ls *kvLoops) start(srv *Server) {
	l, err := newKVLoop(srv)
	if err != nil {
		srv.log.Warn("kv listener: cannot start its event loop; connections keep a goroutine each", "err", err)
		return
	}
	ls.loop = l
	n := max(runtime.GOMAXPROCS(0), 1)
	l.workers.Store(int32(n))
	for range n {
		go l.run()
	}
}

func newKVLoop(srv *Server) (*kvLoop, error) {
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	if err := syscall.SetNonblock(epfd, true); err != nil {
		_ = syscall.Close(epfd)
		return nil, err
	}
	l := &kvLoop{srv: srv, epfd: epfd, ep: os.NewFile(uintptr(epfd), "kv-epoll"), conns: map[int32]*loopConn{}}
	if l.epRC, err = l.ep.SyscallConn(); err != nil {
		_ = l.ep.Close()
		return nil, err
	}
	if err := syscall.Pipe2(l.wake[:], syscall.O_CLOEXEC|syscall.O_NONBLOCK); err != nil {
		_ = l.ep.Close()
		return nil, err
	}
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(l.wake[0])}
	if err := syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, l.wake[0], &ev); err != nil {
		_ = l.ep.Close()
		_ = syscall.Close(l.wake[0])
		_ = syscall.Close(l.wake[1])
		return nil, err
	}
	return l, nil
}

// wait returns ready events, waiting for some.
func (l *kvLoop) wait(events []syscall.EpollEvent) (int, error) {
	var n int
	var werr error
	err := l.epRC.Read(func(fd uintptr) bool {
		n, werr = syscall.EpollWait(int(fd), events, 0)
		return n > 0 || (werr != nil && werr != syscall.EINTR)
	})
	if err != nil {
		return 0, err
	}
	return n, werr
}

// stop makes the loop close its connections as soon as no command of
// theirs is in flight, and end. With hard set, a connection whose
// goroutine is blocked writing to its client is cut off too.
func (ls *kvLoops) stop(hard bool) {
	ls.once.Do(func() {}) // it does not start from now on, and loop is safe to read
	l := ls.loop
	if l == nil {
		return
	}
	l.mu.Lock()
	first := !l.stopped
	l.stopped = true
	if hard {
		for _, lc := range l.conns {
			if lc.busy {
				_ = syscall.Shutdown(lc.fd, syscall.SHUT_RDWR)
			}
		}
	}
	l.mu.Unlock()
	if first {
		_, _ = syscall.Write(l.wake[1], []byte{0})
	}
}

// arm makes lc's next event due to a worker: the first time, when it
// comes to the loop, and after each round or goroutine of its own. It
// ends lc instead if the loop is stopping.
func (l *kvLoop) arm(lc *loopConn) {
	l.mu.Lock()
	if l.stopped {
		l.mu.Unlock()
		l.finish(lc, nil)
		return
	}
	lc.busy, lc.taken = false, false
	op := syscall.EPOLL_CTL_MOD
	if l.conns[int32(lc.fd)] != lc {
		op = syscall.EPOLL_CTL_ADD // it comes to the loop
		l.conns[int32(lc.fd)] = lc
	}
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP | syscall.EPOLLONESHOT, Fd: int32(lc.fd)}
	err := syscall.EpollCtl(l.epfd, op, lc.fd, &ev)
	l.mu.Unlock()
	if err != nil {
		l.finish(lc, err)
	}
}

// finish closes lc and ends its session; err says why, nil for the
// ordinary ways. The caller owns lc.
func (l *kvLoop) finish(lc *loopConn, err error) {
	if lc.closed {
		return
	}
	lc.closed = true
	l.mu.Lock()
	if l.conns[int32(lc.fd)] == lc {
		delete(l.conns, int32(lc.fd))
	}
	l.mu.Unlock()
	_ = syscall.Close(lc.fd) // which also takes it out of the epoll set
	if err != nil && !errors.Is(err, errQuit) {
		lc.s.logEnd("kv session ended", err)
	}
	lc.s.client.release()
	lc.s.srv.forget(lc.s)
}

// run is a worker: wait, take the ready connections, read their
// commands, answer them, write, arm them again.
func (l *kvLoop) run() {
	defer l.workerDone()
	events := make([]syscall.EpollEvent, 64)
	scratch := make([]byte, 64<<10)
	var sels []loopSelect
	var taken []*loopConn
	for {
		n, err := l.wait(events)
		if err != nil {
			l.srv.log.Error("kv listener: event loop failed; closing its connections", "err", err)
			l.mu.Lock()
			l.stopped = true
			l.mu.Unlock()
			return
		}
		sels, taken = sels[:0], taken[:0]
		l.mu.Lock()
		stop := l.stopped
		for _, ev := range events[:n] {
			if lc := l.conns[ev.Fd]; lc != nil && !lc.busy && !lc.taken {
				lc.taken = true
				taken = append(taken, lc)
			}
		}
		l.mu.Unlock()
		if !stop {
			for _, lc := range taken {
				l.readCommands(lc, scratch, &sels)
			}
		}
		l.answer(sels)
		for _, lc := range taken {
			l.flush(lc)
		}
		if stop {
			return
		}
	}
}

// workerDone ends a worker. The last one closes the connections that no
// goroutine has (those that have one end when they would be armed again),
// and the set.
func (l *kvLoop) workerDone() {
	if l.workers.Add(-1) > 0 {
		return
	}
	l.mu.Lock()
	var idle []*loopConn
	for _, lc := range l.conns {
		if !lc.busy {
			idle = append(idle, lc)
		}
	}
	l.mu.Unlock()
	for _, lc := range idle {
		l.finish(lc, nil)
	}
	l.mu.Lock()
	_ = l.ep.Close()
	_ = syscall.Close(l.wake[0])
	_ = syscall.Close(l.wake[1])
	l.mu.Unlock()
}

// recoverConn, deferred by what handles lc, ends lc on a panic, which
// the session's goroutine would have recovered from, and logs it.
func (l *kvLoop) recoverConn(lc *loopConn) {
	if p := recover(); p != nil {
		lc.s.log.Error("session panic", "panic", p)
		l.finish(lc, nil)
	}
}

// readCommands reads what lc's client sent and takes the commands that
// are whole: kv SELECTs join sels, and the first other command sends lc
// to a goroutine of its own after this round's answers.
func (l *kvLoop) readCommands(lc *loopConn, scratch []byte, sels *[]loopSelect) {
	defer l.recoverConn(lc)
	n, err := readFD(lc.fd, scratch)
	switch {
	case err == syscall.EAGAIN:
		return
	case n == 0 && err == nil:
		l.finish(lc, io.EOF)
		return
	case err != nil:
		l.finish(lc, err)
		return
	}
	lc.in = append(lc.in, scratch[:n]...)
	s := lc.s
	for !lc.rest {
		p, first, last, used, err := nextCommand(lc.in, s.srv.cfg.MaxPacket)
		if err != nil {
			s.sendTooLarge(last + 1)
			l.flushNow(lc)
			l.finish(lc, err)
			return
		}
		if used == 0 {
			break // not whole yet
		}
		if first != 0 || len(p) == 0 || p[0] != mysql.COM_QUERY {
			lc.rest = true // for the goroutine, which refuses it as session.loop does
			break
		}
		sel, ok := l.selectOf(lc, p)
		if !ok {
			lc.rest = true
			break
		}
		s.client.lastSeq = last
		s.errSeq = last + 1
		lc.in = lc.in[used:]
		*sels = append(*sels, sel)
	}
	if len(lc.in) == 0 {
		lc.in = shrink(lc.in)
	}
}

// selectOf returns the kv SELECT that the COM_QUERY p is, if it is one
// whose keys are all valid (anything else is answered by the session's
// own dispatch).
func (l *kvLoop) selectOf(lc *loopConn, p []byte) (loopSelect, bool) {
	// Only a SELECT is parsed here: an INSERT of megabytes is for its
	// goroutine to parse, not the worker.
	if sqlinfo.FirstKeyword(string(p[1:min(len(p), 256)])) != "SELECT" {
		return loopSelect{}, false
	}
	s := lc.s
	st, ok, err := s.parseKV(string(p[1:]))
	if !ok || err != nil || st.Op != kv.OpSelect || st.Params > 0 {
		return loopSelect{}, false
	}
	keys, userKeys, res := kv.SelectKeys(s.kvOptions(), s.kvNamespace(), st)
	if res.IsError() {
		return loopSelect{}, false
	}
	return loopSelect{lc: lc, keys: keys, userKeys: userKeys}, true
}

// answer reads the values of all of sels' keys in one lookup and writes
// each SELECT's answer to its connection's buffer.
func (l *kvLoop) answer(sels []loopSelect) {
	if len(sels) == 0 {
		return
	}
	var keys []string
	at := make(map[string]int, len(sels))
	for _, sel := range sels {
		for _, k := range sel.keys {
			if _, ok := at[k]; !ok {
				at[k] = len(keys)
				keys = append(keys, k)
			}
		}
	}
	vals, err := l.srv.kv.GetMulti(context.Background(), keys)
	if errors.Is(err, store.ErrBadKey) || errors.Is(err, store.ErrReservedKey) {
		// One SELECT's key must not fail the others: each on its own.
		for _, sel := range sels {
			v, err := l.srv.kv.GetMulti(context.Background(), sel.keys)
			l.writeSelect(sel, v, err)
		}
		return
	}
	for _, sel := range sels {
		var v [][]byte
		if err == nil {
			v = make([][]byte, len(sel.keys))
			for j, k := range sel.keys {
				v[j] = vals[at[k]]
			}
		}
		l.writeSelect(sel, v, err)
	}
}

func (l *kvLoop) writeSelect(sel loopSelect, vals [][]byte, err error) {
	lc := sel.lc
	if lc.closed {
		return
	}
	defer l.recoverConn(lc)
	_ = lc.s.writeKVResult(kv.SelectResult(sel.userKeys, vals, err), false)
}

// flush writes lc's answers without blocking and arms lc again, or hands
// it to a goroutine of its own if some remain or a command other than a
// kv SELECT waits.
func (l *kvLoop) flush(lc *loopConn) {
	if lc.closed {
		return
	}
	if lc.out.Len() > 0 {
		n, err := writeFD(lc.fd, lc.out.Bytes())
		lc.out.Next(n)
		if err != nil && err != syscall.EAGAIN {
			l.finish(lc, err)
			return
		}
	}
	if lc.out.Len() == 0 && !lc.rest {
		if lc.out.Cap() > bufSize {
			lc.out = bytes.Buffer{}
		}
		l.arm(lc)
		return
	}
	l.detach(lc)
}

// flushNow writes lc's answers without blocking, as far as the socket
// takes them, before lc is closed.
func (l *kvLoop) flushNow(lc *loopConn) {
	n, _ := writeFD(lc.fd, lc.out.Bytes())
	lc.out.Next(n)
}

// detach gives lc, which no event can reach until it is armed again, a
// goroutine of its own, which writes what is left of its answers,
// answers the commands it holds whole, and arms it again.
func (l *kvLoop) detach(lc *loopConn) {
	l.mu.Lock()
	lc.busy, lc.taken = true, false
	l.mu.Unlock()
	go l.serveAlone(lc)
}

// serveAlone is a detached connection's goroutine. It may block on the
// client, as a session's own goroutine does.
func (l *kvLoop) serveAlone(lc *loopConn) {
	defer l.recoverConn(lc)
	if err := syscall.SetNonblock(lc.fd, false); err != nil {
		l.finish(lc, err)
		return
	}
	s := lc.s
	for {
		if err := l.writeAll(lc); err != nil {
			l.finish(lc, err)
			return
		}
		p, first, last, used, err := nextCommand(lc.in, s.srv.cfg.MaxPacket)
		if err != nil {
			s.sendTooLarge(last + 1)
			_ = l.writeAll(lc)
			l.finish(lc, err)
			return
		}
		if used == 0 {
			break
		}
		if first != 0 || len(p) == 0 {
			s.log.Warn("malformed client packet, closing", "seq", first, "len", len(p))
			l.finish(lc, nil)
			return
		}
		cmd := bytes.Clone(p)
		lc.in = lc.in[used:]
		s.client.lastSeq = last
		s.errSeq = last + 1
		if err := s.dispatchKV(cmd); err != nil {
			_ = l.writeAll(lc)
			l.finish(lc, err)
			return
		}
	}
	if err := syscall.SetNonblock(lc.fd, true); err != nil {
		l.finish(lc, err)
		return
	}
	lc.in = shrink(lc.in)
	lc.rest = false
	if lc.out.Cap() > bufSize {
		lc.out = bytes.Buffer{}
	}
	l.arm(lc)
}

// writeAll writes lc's answers, blocking: lc's descriptor is in blocking
// mode on its own goroutine.
func (l *kvLoop) writeAll(lc *loopConn) error {
	for lc.out.Len() > 0 {
		n, err := writeFD(lc.fd, lc.out.Bytes())
		lc.out.Next(n)
		if err != nil {
			return err
		}
	}
	return nil
}

// nextCommand returns the first whole command in in, joining its wire
// packets as readPacket does: its payload, the sequence ids of its first
// and last wire packets, and the bytes it takes (0 if it is not whole
// yet). A command over limit is errPacketTooLarge, with the sequence id
// of the packet that made it so, as soon as that packet's header is in.
func nextCommand(in []byte, limit int) (p []byte, first, last byte, used int, err error) {
	off, total := 0, 0
	for {
		if len(in)-off < 4 {
			return nil, 0, 0, 0, nil
		}
		n := payloadLen(in[off:])
		last = in[off+3]
		if off == 0 {
			first = last
		}
		if total+n > limit {
			return nil, first, last, 0, errPacketTooLarge
		}
		if len(in)-off-4 < n {
			return nil, 0, 0, 0, nil
		}
		total += n
		off += 4 + n
		if n < maxPayload {
			break
		}
	}
	if off == 4+total {
		return in[4:off], first, last, off, nil
	}
	p = make([]byte, 0, total)
	for o := 0; o < off; {
		n := payloadLen(in[o:])
		p = append(p, in[o+4:o+4+n]...)
		o += 4 + n
	}
	return p, first, last, off, nil
}

// shrink empties b, keeping its array unless it grew for a large command.
func shrink(b []byte) []byte {
	if cap(b) > bufSize {
		return nil
	}
	return b[:0]
}

func readFD(fd int, b []byte) (int, error)  { return uninterrupted(syscall.Read, fd, b) }
func writeFD(fd int, b []byte) (int, error) { return uninterrupted(syscall.Write, fd, b) }

// uninterrupted runs the read or write op on fd, again when a signal
// interrupts it, and never returns a negative count.
func uninterrupted(op func(int, []byte) (int, error), fd int, b []byte) (int, error) {
	for {
		n, err := op(fd, b)
		if err != syscall.EINTR {
			return max(n, 0), err
		}
	}
}
