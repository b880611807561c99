//go:build !unix

package wire

import (
	"net"
	"syscall"
)

func canWait(net.Conn) bool { return false }

// RawConn returns nil: the sockets are not waited on without reading.
func RawConn(net.Conn) syscall.RawConn { return nil }

func readable(uintptr) bool { return true }
