//go:build unix

package relay

import (
	"net"
	"syscall"

	"github.com/mycached/mycached/mysqlproxy/internal/wire"
)

// connClosed reports, without blocking and without consuming anything,
// whether a plain TCP or Unix socket has something to read or has been
// closed by its peer. Between commands a backend sends nothing: either
// means the server has ended the session (a KILL, its wait_timeout).
func connClosed(c net.Conn) bool {
	// The compressed protocol's frames are bytes on the socket all the
	// same.
	c = wire.Transport(c)
	var sc syscall.Conn
	switch c := c.(type) {
	case *net.TCPConn:
		sc = c
	case *net.UnixConn:
		sc = c
	default:
		return false // TLS: records may be pending that say nothing
	}
	raw, err := sc.SyscallConn()
	if err != nil {
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
