//go:build unix

package wire

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// canWait reports whether RawConn returns c's socket, without taking it.
func canWait(c net.Conn) bool {
	switch c.(type) {
	case *net.TCPConn, *net.UnixConn:
		return true
	}
	return false
}

// RawConn returns c's socket when c is a plain TCP or Unix connection,
// which the runtime's poller can wait on without reading; nil otherwise.
func RawConn(c net.Conn) syscall.RawConn {
	var sc syscall.Conn
	switch c := c.(type) {
	case *net.TCPConn:
		sc = c
	case *net.UnixConn:
		sc = c
	default:
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return rc
}

// readable reports whether fd has a byte to read, or an end or an error
// to report, without consuming anything (a receive would consume the
// socket's error: a reset would then read as an orderly close): false
// has the poller wait.
func readable(fd uintptr) bool {
	fds := [1]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds[:], 0)
		if err == unix.EINTR {
			continue
		}
		return err != nil || n > 0
	}
}
