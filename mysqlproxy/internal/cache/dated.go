package cache

import (
	"strconv"
	"strings"
	"time"
)

// minTime returns the earlier of a and b.
func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// nextMidnight returns the session's next midnight after now: a TIME
// value read as a date takes the date in the session's time zone. For
// SYSTEM and named zones, whose offsets mycached does not know, it is the
// next quarter hour: every zone's offset from UTC is a whole number of
// quarter hours.
func (c *Session) nextMidnight(now time.Time) time.Time {
	if off, ok := zoneOffset(c.s.Vars["time_zone"]); ok {
		local := now.In(time.FixedZone("", off))
		y, m, d := local.Date()
		return time.Date(y, m, d+1, 0, 0, 0, 0, local.Location())
	}
	return now.Truncate(15 * time.Minute).Add(15 * time.Minute)
}

// zoneOffset reads a time_zone of the form +HH:MM or -HH:MM, in seconds.
func zoneOffset(tz string) (int, bool) {
	if len(tz) < 4 || tz[0] != '+' && tz[0] != '-' {
		return 0, false
	}
	h, m, ok := strings.Cut(tz[1:], ":")
	if !ok {
		return 0, false
	}
	hh, err1 := strconv.Atoi(h)
	mm, err2 := strconv.Atoi(m)
	if err1 != nil || err2 != nil || hh < 0 || hh > 14 || mm < 0 || mm > 59 {
		return 0, false
	}
	off := hh*3600 + mm*60
	if tz[0] == '-' {
		off = -off
	}
	return off, true
}
