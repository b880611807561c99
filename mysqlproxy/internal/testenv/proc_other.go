//go:build !linux

package testenv

import "syscall"

// sysProcAttr returns nil: only Linux has Pdeathsig, so elsewhere a server
// can outlive a test binary that dies without running its cleanup.
func sysProcAttr() *syscall.SysProcAttr { return nil }
