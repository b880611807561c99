package binlog

import (
	"fmt"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
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

// TestBinlogClosedIsNotALostPosition: a server whose binary log is off
// refuses every stream with error 1236, as it refuses a purged position;
// only the purged position is lost, and costs a global invalidation.
func TestBinlogClosedIsNotALostPosition(t *testing.T) {
	for _, tc := range []struct {
		err          error
		closed, lost bool
	}{
		{&mysql.MyError{Code: mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG, Message: "Binary log is not open"}, true, false},
		{fmt.Errorf("stream: %w", &mysql.MyError{Code: mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG, Message: "Binary log is not open"}), true, false},
		{&mysql.MyError{Code: mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG, Message: "Could not find GTID state requested by slave in any binlog files"}, false, true},
		{&mysql.MyError{Code: mysql.ER_ACCESS_DENIED_ERROR, Message: "Access denied"}, false, false},
	} {
		closed := binlogClosed(tc.err)
		lost := isLostPosition(tc.err) && !closed
		if closed != tc.closed || lost != tc.lost {
			t.Errorf("%v: closed %v, lost %v; want %v, %v", tc.err, closed, lost, tc.closed, tc.lost)
		}
	}
}
