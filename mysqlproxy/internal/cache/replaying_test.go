package cache

import (
	"testing"

	"github.com/mycached/mycached/mysqlproxy/internal/wire"
)

// TestReplaying: a large response replayed to many clients counts once;
// distinct responses count each; small ones never; one with no room is
// refused; everything is given back.
func TestReplaying(t *testing.T) {
	var r replaying
	b := wire.NewBudget(3 * replayFree)
	one, two := make([]byte, 2*replayFree), make([]byte, 2*replayFree)
	small := make([]byte, replayFree)
	for range 3 {
		if !r.hold(one, b) {
			t.Fatal("a response with room refused")
		}
	}
	if b.Used() != int64(len(one)) {
		t.Fatalf("three replays of one response: used %d, want %d", b.Used(), len(one))
	}
	if r.hold(two, b) {
		t.Fatal("a second response past the budget held")
	}
	if !r.hold(small, b) || b.Used() != int64(len(one)) {
		t.Fatalf("a small response: used %d", b.Used())
	}
	r.release(small, b)
	for range 3 {
		r.release(one, b)
	}
	if b.Used() != 0 || len(r.m) != 0 {
		t.Fatalf("after the replays: used %d, %d held", b.Used(), len(r.m))
	}
	if !r.hold(two, b) {
		t.Fatal("the second response refused once there was room")
	}
	r.release(two, b)
}
