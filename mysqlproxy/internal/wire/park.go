package wire

// A session spends most of its life waiting for its client's next
// command, and a pool keeps many sessions that wait for minutes. Their
// buffers (BufSize each way, on each side: 256 KiB) can go back to the
// pools while they wait, and be taken again when something comes.

// WaitReadable waits until the connection has something to read, has
// failed or been closed, or its read deadline has passed, holding no
// read buffer meanwhile, and, with idle set, no write buffer either
// (nothing may write to the connection meanwhile). What it found is left
// to the read that follows. It waits only on a plain TCP or Unix socket
// with nothing buffered, without the compressed protocol; otherwise it
// returns at once, and the read that follows waits as before.
func (p *Conn) WaitReadable(idle bool) {
	if p.comp != nil || p.R == nil || p.R.Buffered() > 0 || idle && (p.W == nil || p.W.Buffered() > 0) {
		return
	}
	rc := RawConn(p.NetConn)
	if rc == nil {
		return
	}
	putReader(p.R)
	p.R = nil
	if idle {
		p.ParkWriter()
	}
	_ = rc.Read(readable)
	p.R = getReader(p.NetConn)
	if idle {
		p.UnparkWriter()
	}
}

// CanWaitReadable reports whether WaitReadable waits on the connection
// (a plain TCP or Unix socket, without the compressed protocol), when it
// has nothing buffered.
func (p *Conn) CanWaitReadable() bool { return p.comp == nil && canWait(p.NetConn) }

// ParkWriter gives the write buffer back while nothing may write to the
// connection, when it holds nothing; UnparkWriter takes one again.
func (p *Conn) ParkWriter() {
	if p.W == nil || p.W.Buffered() > 0 {
		return
	}
	putWriter(p.W)
	p.W = nil
	p.wParked = true
}

// UnparkWriter takes back the write buffer ParkWriter gave back.
func (p *Conn) UnparkWriter() {
	if !p.wParked {
		return
	}
	p.wParked = false
	p.W = getWriter(p.NetConn)
}
