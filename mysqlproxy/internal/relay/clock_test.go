package relay

import (
	"fmt"
	"testing"
	"time"
)

// TestTimestampReadLate: the server's @@timestamp, read at a statement's
// start, is the clock's however late its answer is read (a loaded
// machine), and not a clock the session froze: a session that did not
// set it keeps no timestamp, and so shares its entries with the others.
func TestTimestampReadLate(t *testing.T) {
	now := time.Now()
	at := func(d time.Duration) string {
		return fmt.Sprintf("%.6f", float64(now.Add(d).UnixMicro())/1e6)
	}
	for _, c := range []struct {
		name  string
		sent  time.Duration // before now; 0: not known
		val   string
		clock bool
	}{
		{"read at once", time.Millisecond, at(0), true},
		{"answer read 5 s late", 5 * time.Second, at(-5*time.Second + time.Millisecond), true},
		{"answer read 30 s late", 30 * time.Second, at(-29 * time.Second), true},
		{"server clock a second ahead", time.Millisecond, at(time.Second), true},
		{"frozen an hour ago", 5 * time.Second, at(-time.Hour), false},
		{"frozen before the statement", 5 * time.Second, at(-8 * time.Second), false},
		{"frozen ahead", time.Millisecond, at(time.Minute), false},
		{"sent time unknown, near", 0, at(-time.Second), true},
		{"sent time unknown, 5 s ago", 0, at(-5 * time.Second), false},
		{"not a number", time.Millisecond, "x", false},
	} {
		var sent time.Time
		if c.sent > 0 {
			sent = now.Add(-c.sent)
		}
		if got := clockNow(c.val, sent, now); got != c.clock {
			t.Errorf("%s: clockNow(%s) = %v, want %v", c.name, c.val, got, c.clock)
		}
		s := &Session{sentAt: sent}
		s.setVar("timestamp", c.val)
		if _, kept := s.Vars["timestamp"]; kept == c.clock {
			t.Errorf("%s: a reading the session did not ask for kept timestamp %v, want %v", c.name, kept, !c.clock)
		}
	}
}
