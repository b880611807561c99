//go:build !unix

package wire

import (
	"net"
	"syscall"
)

func rawConn(net.Conn) syscall.RawConn { return nil }

func readable(uintptr) bool { return true }
