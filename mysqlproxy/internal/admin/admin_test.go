package admin

import "testing"

func TestLikeFold(t *testing.T) {
	for _, c := range []struct {
		s, pattern string
		want       bool
	}{
		{"Hits_l1", "hits%", true},
		{"Hits_l1", "hits_l1", true},
		{"Hits_l1", "hits_l", false},
		{"Hits_l1", "%l1", true},
		{"Hits_l1", "h%_%1", true},
		{"Hits_l1", "%", true},
		{"", "%", true},
		{"", "_", false},
		{"Hits_l1", "hits\\_l1", true},
		{"HitsXl1", "hits\\_l1", false},
		{"Fill_memory_bytes", "%memory%", true},
		{"Misses", "%memory%", false},
		{"Misses", "misses%%", true},
	} {
		if got := likeFold(c.s, c.pattern); got != c.want {
			t.Errorf("likeFold(%q, %q) = %v, want %v", c.s, c.pattern, got, c.want)
		}
	}
}
