package clientmatrix

import (
	"os/exec"
	"syscall"
)

// ownProcessGroup puts a driver and whatever it starts (the mariadb
// client under its wrapper) in a process group of their own, which
// killGroup ends, and kills them if the test binary dies first.
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup kills a driver started with ownProcessGroup and its children.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
