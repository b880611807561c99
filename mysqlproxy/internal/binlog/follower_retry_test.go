package binlog

import (
	"testing"
	"time"
)

// TestRetryAfter: a stream that had followed a while and then ended (its
// connection killed, the server restarted) is followed again at once; a
// follower that keeps failing waits longer each time, up to maxRetry, and
// the wait starts over with the next stream that follows a while.
func TestRetryAfter(t *testing.T) {
	wait := minRetry
	var waits []time.Duration
	next := func(streamed bool, ran time.Duration) {
		wait = retryAfter(wait, streamed, ran)
		waits = append(waits, wait)
		wait = nextRetry(wait)
	}
	next(true, time.Minute)  // killed after a long stream
	next(false, time.Second) // refused
	next(false, time.Second)
	next(true, 10*time.Millisecond) // killed again at once
	for range 10 {
		next(false, 0)
	}
	next(true, time.Hour) // a long stream again
	want := []time.Duration{0, minRetry, 2 * minRetry, 4 * minRetry, 8 * minRetry, 16 * minRetry, 32 * minRetry, maxRetry}
	for i, w := range want {
		if waits[i] != w {
			t.Fatalf("wait %d = %v, want %v (all: %v)", i, waits[i], w, waits)
		}
	}
	if got := waits[len(waits)-2]; got != maxRetry {
		t.Errorf("after many failures the wait is %v, want %v", got, maxRetry)
	}
	if got := waits[len(waits)-1]; got != 0 {
		t.Errorf("after a long stream the wait is %v, want 0", got)
	}
}
