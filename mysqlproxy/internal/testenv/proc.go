package testenv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is one child server process that this package started. Its pid is
// the only handle used to signal it, so nothing else on the machine is ever
// touched.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd.Wait has returned
	err  error         // the result of cmd.Wait; read only after done is closed
}

// startReq asks the spawner goroutine to start cmd.
type startReq struct {
	cmd   *exec.Cmd
	reply chan error
}

// spawner starts every child from one goroutine locked to its OS thread,
// and that goroutine never returns. Linux delivers Pdeathsig when the
// thread that forked the child exits, not when the process does; a child
// forked from an ordinary goroutine could therefore be killed in the middle
// of a test if the runtime retired that thread. Forking from a thread that
// lives as long as the binary makes Pdeathsig mean "the test binary died".
type spawner struct {
	once sync.Once
	reqs chan startReq
}

// spawn is the binary's spawner. It is package state because the thread it
// pins must be shared by every server this binary starts.
var spawn spawner

func (s *spawner) start(cmd *exec.Cmd) error {
	s.once.Do(func() {
		s.reqs = make(chan startReq)
		go func() {
			runtime.LockOSThread()
			for r := range s.reqs {
				r.reply <- r.cmd.Start()
			}
		}()
	})
	reply := make(chan error, 1)
	s.reqs <- startReq{cmd: cmd, reply: reply}
	return <-reply
}

// startProc starts path with args, sending its stdout and stderr to
// logPath (appended, so restarts keep the earlier history).
func startProc(path string, args []string, logPath string) (*proc, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("testenv: open log: %w", err)
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout = logf
	cmd.Stderr = logf
	cmd.SysProcAttr = sysProcAttr()
	if err := spawn.start(cmd); err != nil {
		logf.Close()
		return nil, fmt.Errorf("testenv: start %s: %w", filepath.Base(path), err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	return p, nil
}

// pid returns the child's process id.
func (p *proc) pid() int { return p.cmd.Process.Pid }

// exited reports whether the child has exited and been reaped.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// kill sends SIGKILL and waits for the child to be reaped.
func (p *proc) kill() {
	if p.exited() {
		return
	}
	// The error is ignored: the child may exit between the check and the
	// signal, and the reaper goroutine still closes done.
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// stop sends SIGTERM, waits up to grace for a clean exit, then kills.
func (p *proc) stop(grace time.Duration) {
	if p.exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		p.kill()
	}
}

// findBinary looks name up on PATH and then in the Debian locations, which
// matter because /usr/sbin is often missing from a non-login PATH.
func findBinary(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, dir := range []string{"/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin"} {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: %s (run `make deps` as root to install it)", ErrMissingBinary, name)
}

// tailFile returns up to the last n lines of path, for error messages.
func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	return lastLines(string(b), n)
}

// errExited is wrapped by readiness errors when the child died while being
// waited for; the message always carries the package prefix already.
var errExited = errors.New("server exited during startup")

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
