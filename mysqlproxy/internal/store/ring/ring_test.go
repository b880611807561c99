package ring

import (
	"strconv"
	"testing"
)

func TestAddingServerMovesAboutOneNth(t *testing.T) {
	tests := []struct{ before int }{{1}, {2}, {3}, {7}}
	for _, tt := range tests {
		t.Run(strconv.Itoa(tt.before), func(t *testing.T) {
			servers := make([]string, tt.before+1)
			for i := range servers {
				servers[i] = "127.0.0.1:" + strconv.Itoa(11211+i)
			}
			old, err := New(0, servers[:tt.before]...)
			if err != nil {
				t.Fatal(err)
			}
			grown, err := New(0, servers...)
			if err != nil {
				t.Fatal(err)
			}
			const n = 100000
			moved := 0
			perServer := make([]int, len(servers))
			for i := 0; i < n; i++ {
				k := "q:" + strconv.Itoa(i)
				a, b := old.Index(k), grown.Index(k)
				perServer[b]++
				if a != b {
					moved++
					if b != tt.before {
						t.Fatalf("key %q moved from %d to %d, want it to move only to the new server %d", k, a, b, tt.before)
					}
				}
			}
			want := n / (tt.before + 1)
			if moved < want*7/10 || moved > want*13/10 {
				t.Errorf("got %d of %d keys moved, want about %d", moved, n, want)
			}
			for i, c := range perServer {
				if c < want*7/10 || c > want*13/10 {
					t.Errorf("server %d got %d keys, want about %d", i, c, want)
				}
			}
		})
	}
}

func TestEmptyRing(t *testing.T) {
	r, err := New(0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.PickServer("k"); err != ErrNoServers {
		t.Errorf("got %v, want ErrNoServers", err)
	}
}
