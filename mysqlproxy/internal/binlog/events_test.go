package binlog

import (
	"strconv"
	"strings"
	"testing"

	"github.com/mycached/mycached/mysqlproxy/internal/deps"
)

// TestLargeTransactionBumpsTheTable: a transaction naming more rows of a
// table than maxRowDeps bumps the table's non-key generation instead of
// them, and no longer any of its rows, while another table's rows stay
// row by row; what was bumped early stays a part of what is left.
func TestLargeTransactionBumpsTheTable(t *testing.T) {
	var tx txn
	tx.addTable("d.big")
	tx.addRow("d.small", []string{"7"})
	for i := range maxRowDeps {
		tx.addRow("d.big", []string{strconv.Itoa(i)})
	}
	if n := len(tx.list()); n != maxRowDeps+3 {
		t.Fatalf("%d deps for %d rows of one table, its range and non-key generations and a row of another, want %d", n, maxRowDeps, maxRowDeps+3)
	}
	// What a long transaction bumped before it crossed the bound.
	tx.early = make(map[string]struct{})
	for d := range tx.deps {
		tx.early[d] = struct{}{}
	}
	for i := maxRowDeps; i < 3*maxRowDeps; i++ {
		tx.addRow("d.big", []string{strconv.Itoa(i)})
	}
	got := tx.list()
	want := map[string]bool{"d.big": true, deps.NonKey("d.big"): true, deps.Row("d.small", []string{"7"}): true, deps.NonKey("d.small"): false}
	if len(got) != 3 {
		t.Errorf("after %d rows: %q, want the table's two generations and the other table's row", 3*maxRowDeps, got)
	}
	for _, d := range got {
		if !want[d] {
			t.Errorf("after %d rows: %q bumped", 3*maxRowDeps, d)
		}
	}
	for d := range tx.early {
		if _, ok := tx.deps[d]; !ok {
			t.Errorf("%q bumped early is no longer among the deps", d)
		}
		if strings.HasPrefix(d, "d.big#") {
			t.Errorf("row %q of the large table is still listed as bumped early", d)
		}
	}
}
