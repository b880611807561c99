package sqlinfo

import (
	"strings"
	"testing"
)

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
		{"max_allowed_packet", "max_allowed%", true},
		{"max_allowed_packet", "%_packet", true},
		{"abcabd", "%ab_", true},
		{"abcabe", "%abd", false},
	} {
		if got := LikeFold(c.s, c.pattern); got != c.want {
			t.Errorf("LikeFold(%q, %q) = %v, want %v", c.s, c.pattern, got, c.want)
		}
	}
}

// TestLikeFoldManyPercents: a pattern of many % against a long name that
// it does not match ends at once, where trying every split would not.
func TestLikeFoldManyPercents(t *testing.T) {
	s := strings.Repeat("a", 4096)
	if LikeFold(s, strings.Repeat("%a", 40)+"%b") {
		t.Fatal("matched a name with no b")
	}
	if !LikeFold(s, strings.Repeat("%a", 40)+"%") {
		t.Fatal("did not match")
	}
}
