//go:build unix

package relay

import (
	"net"
	"syscall"

	"github.com/mycached/mycached/mysqlproxy/internal/wire"
)

// connClosed reports, without blocking and without consuming anything,
// whether a connection's socket has something to read or has been closed
// by its peer. Between commands a backend sends nothing: either means the
// server has ended the session (a KILL, its wait_timeout).
//
// Under TLS the socket is the one beneath: the server's session tickets
// come with the handshake, which has been read whole before any command,
// so a record that arrives between commands is the server ending the
// session (its error, its close_notify), or, rarely, a key update; that
// costs a read relayed, not a wrong answer.
func connClosed(c net.Conn) bool {
	// The compressed protocol's frames are bytes on the socket all the
	// same.
	c, _ = wire.Socket(c)
	raw := wire.RawConn(c)
	if raw == nil {
		return false
	}
	closed := false
	var b [1]byte
	_ = raw.Control(func(fd uintptr) {
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		closed = n > 0 || err == nil
	})
	return closed
}
