//go:build !linux

package mysqlproxy

// kvLoops serves kv-only connections on event loops where the system has
// epoll (see kvloop_linux.go); elsewhere each keeps its goroutine.
type kvLoops struct{}

func (*kvLoops) adopt(*session) bool { return false }

func (*kvLoops) stop(hard bool) {}
