package cache

import (
	"testing"
	"time"

	"github.com/mycached/mycached/mysqlproxy/internal/relay"
)

// TestNextMidnight: a read that may take the current date expires at
// its session's next midnight; for zones mycached cannot read, at the
// next quarter hour of UTC, when every zone's midnight falls.
func TestNextMidnight(t *testing.T) {
	now := time.Date(2026, 12, 4, 23, 10, 30, 0, time.UTC)
	for _, c := range []struct {
		tz   string
		want time.Time
	}{
		{"+00:00", time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)},
		{"-02:57", time.Date(2026, 12, 5, 2, 57, 0, 0, time.UTC)},  // local 20:13:30
		{"+05:30", time.Date(2026, 12, 5, 18, 30, 0, 0, time.UTC)}, // local 04:40:30 on the 5th
		{"+1:00", time.Date(2026, 12, 4, 23, 0, 0, 0, time.UTC).Add(24 * time.Hour)},
		{"SYSTEM", time.Date(2026, 12, 4, 23, 15, 0, 0, time.UTC)},
		{"Europe/Paris", time.Date(2026, 12, 4, 23, 15, 0, 0, time.UTC)},
		{"+99:00", time.Date(2026, 12, 4, 23, 15, 0, 0, time.UTC)},
	} {
		s := &Session{s: &relay.Session{Vars: map[string]string{"time_zone": c.tz}}}
		if got := s.nextMidnight(now); !got.Equal(c.want) {
			t.Errorf("time_zone %s at %s: next midnight %s, want %s", c.tz, now, got.UTC(), c.want)
		}
	}
}
