package flight

import (
	"sync"
	"testing"
)

func TestEarlyFinishReleasesWaiters(t *testing.T) {
	var g Early
	c, leader := g.Join("k")
	if !leader {
		t.Fatal("first Join does not lead")
	}
	var wg sync.WaitGroup
	got := make([]any, 4)
	for i := range got {
		w, lead := g.Join("k")
		if lead || w != c {
			t.Fatalf("Join %d: got a new call (leader %v), want the one in flight", i, lead)
		}
		wg.Add(1)
		go func() { defer wg.Done(); got[i] = w.Wait() }()
	}
	c.Finish("v")
	c.Finish("second") // ignored
	wg.Wait()
	for i, v := range got {
		if v != "v" {
			t.Errorf("waiter %d got %v, want v", i, v)
		}
	}
	// The leader may still be busy; a new caller leads a new call.
	if n, lead := g.Join("k"); !lead || n == c {
		t.Error("Join after Finish does not lead a new call")
	}
}
