package flight

import (
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
)

func TestDoReturnsResult(t *testing.T) {
	var g Group
	v, err, shared := g.Do("k", func() (any, error) { return "v", nil })
	if v != "v" || err != nil || shared {
		t.Errorf("got (%v, %v, %v), want (v, nil, false)", v, err, shared)
	}
	want := errors.New("boom")
	_, err, _ = g.Do("k", func() (any, error) { return nil, want })
	if err != want {
		t.Errorf("got err %v, want %v", err, want)
	}
}

func TestDoRunsOncePerKey(t *testing.T) {
	var g Group
	var calls atomic.Int32
	release := make(chan struct{})
	const n = 10
	type result struct {
		v      any
		shared bool
	}
	results := make(chan result, n)
	fn := func() (any, error) {
		calls.Add(1)
		<-release
		return 42, nil
	}
	for range n {
		go func() {
			v, _, shared := g.Do("k", fn)
			results <- result{v, shared}
		}()
	}
	// Release the call only once every other caller is waiting on it.
	for {
		g.mu.Lock()
		c := g.m["k"]
		waiting := c != nil && c.dups == n-1
		g.mu.Unlock()
		if waiting {
			break
		}
		runtime.Gosched()
	}
	close(release)
	for range n {
		if r := <-results; r.v != 42 || !r.shared {
			t.Errorf("got (%v, shared %v), want (42, true)", r.v, r.shared)
		}
	}
	if got := calls.Load(); got != 1 {
		t.Errorf("got %d calls, want 1", got)
	}
}

func TestPanicReleasesWaiters(t *testing.T) {
	var g Group
	func() {
		defer func() {
			if recover() == nil {
				t.Error("panic did not propagate")
			}
		}()
		g.Do("k", func() (any, error) { panic("x") })
	}()
	v, err, _ := g.Do("k", func() (any, error) { return 1, nil })
	if v != 1 || err != nil {
		t.Errorf("got (%v, %v), want (1, nil) after a panicked call", v, err)
	}
}
