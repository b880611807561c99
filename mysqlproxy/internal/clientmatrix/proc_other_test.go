//go:build !linux

package clientmatrix

import "os/exec"

// ownProcessGroup does nothing where process groups cannot be set up the
// Linux way; killGroup then kills the driver alone.
func ownProcessGroup(cmd *exec.Cmd) {}

// killGroup kills a driver.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}
