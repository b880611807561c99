package cache

import (
	"strconv"
	"testing"

	"github.com/mycached/mycached/mysqlproxy/internal/sqlinfo"
)

// TestKeyRowsCap: a statement naming more rows than maxKeyRows (IN with
// thousands of values) depends on its table alone, not on a generation
// per row, which a hit and a write would each fetch or bump.
func TestKeyRowsCap(t *testing.T) {
	rows := func(n int) [][]sqlinfo.Value {
		out := make([][]sqlinfo.Value, n)
		for i := range out {
			out[i] = []sqlinfo.Value{{Lit: strconv.Itoa(i), Type: sqlinfo.IntLit, Param: -1}}
		}
		return out
	}
	if got := keyRows([]string{"id"}, []string{"id"}, rows(maxKeyRows), nil); len(got) != maxKeyRows {
		t.Errorf("%d rows: keyed by %d, want all", maxKeyRows, len(got))
	}
	if got := keyRows([]string{"id"}, []string{"id"}, rows(maxKeyRows+1), nil); got != nil {
		t.Errorf("%d rows: keyed by %d, want none (table-level)", maxKeyRows+1, len(got))
	}
}

// TestTimingVarsAreKeyFree: a read under SET STATEMENT of a timing
// variable is keyed as the read alone, and stored though the server
// reports the variable: each such variable must be one that changes no
// result.
func TestTimingVarsAreKeyFree(t *testing.T) {
	for name := range sqlinfo.TimingVars {
		if !digestFree[name] {
			t.Errorf("%s may be set by SET STATEMENT for a cached read, and is not in digestFree", name)
		}
	}
	if changesResults(map[string]string{"max_statement_time": "1"}) || !changesResults(map[string]string{"sql_select_limit": "1"}) {
		t.Error("changesResults reads max_statement_time or sql_select_limit wrong")
	}
}
