package testenv

import "syscall"

// sysProcAttr makes the kernel SIGKILL the child if the test binary dies
// without running its cleanup (a panic, a timeout, SIGKILL from a user), so
// no server outlives the binary that started it.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
