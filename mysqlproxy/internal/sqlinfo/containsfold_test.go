package sqlinfo

import (
	"strings"
	"testing"
)

func TestContainsFold(t *testing.T) {
	for _, c := range []struct {
		s    string
		want bool
	}{
		{"SET session_track_schema=0", true},
		{"set SESSION_TRACK_STATE_CHANGE=1", true},
		{"select @@Session_Track_System_Variables", true},
		{"select 1", false},
		{"session_track", false},
		{"ssssession_track_", true},
		{"", false},
		{strings.Repeat("s", 1000) + "ession_track_", true},
		{strings.Repeat("s", 1000) + "ession_track", false},
	} {
		if got := ContainsFold([]byte(c.s), "session_track_"); got != c.want {
			t.Errorf("ContainsFold(%q) = %v, want %v", c.s, got, c.want)
		}
	}
}

func BenchmarkContainsFold(b *testing.B) {
	q := []byte("SELECT c FROM sbtest1 WHERE id = 5012 AND k = 'some string of stuff' ORDER BY c")
	b.ReportAllocs()
	for b.Loop() {
		ContainsFold(q, "session_track_")
	}
}

func BenchmarkContainsFoldString(b *testing.B) {
	q := "SELECT c FROM sbtest1 WHERE id = 5012 AND k = 'some string of stuff' ORDER BY c"
	b.ReportAllocs()
	for b.Loop() {
		ContainsFold(q, "row_count")
	}
}
