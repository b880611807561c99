package cache

import (
	"strings"
	"testing"
)

// TestResultRows: the rows of a stored response are counted, with and
// without the EOF after the column definitions; anything but one result
// set is not.
func TestResultRows(t *testing.T) {
	pkt := func(seq byte, body ...byte) []byte {
		return append([]byte{byte(len(body)), byte(len(body) >> 8), byte(len(body) >> 16), seq}, body...)
	}
	payload := func(pkts ...[]byte) []byte {
		b := []byte{0, 0} // no status offsets
		for _, p := range pkts {
			b = append(b, p...)
		}
		return b
	}
	col := pkt(2, 3, 'd', 'e', 'f', 0, 0, 0, 1, 'x', 0, 0x0c, 0x3f, 0, 11, 0, 0, 0, 3, 0, 0, 0, 0)
	eof := pkt(3, 0xfe, 0, 0, 2, 0)
	row := func(seq byte) []byte { return pkt(seq, 1, '7') }
	okEnd := pkt(9, 0xfe, 0, 0, 2, 0, 0, 0)
	for _, tc := range []struct {
		name       string
		payload    []byte
		deprecated bool
		rows       int
		ok         bool
	}{
		{"classic, 3 rows", payload(pkt(1, 1), col, eof, row(4), row(5), row(6), pkt(7, 0xfe, 0, 0, 2, 0)), false, 3, true},
		{"classic, no rows", payload(pkt(1, 1), col, eof, pkt(4, 0xfe, 0, 0, 2, 0)), false, 0, true},
		{"deprecate EOF, 2 rows", payload(pkt(1, 1), col, row(3), row(4), okEnd), true, 2, true},
		{"two result sets", payload(pkt(1, 1), col, row(3), okEnd, pkt(1, 1), col, row(3), okEnd), true, 0, false},
		{"an error after rows", payload(pkt(1, 1), col, row(3), pkt(4, 0xff, 0x10, 0x04)), true, 0, false},
		{"an OK", payload(pkt(1, 0, 0, 0, 2, 0, 0, 0)), true, 0, false},
		{"cut short", payload(pkt(1, 1), col, row(3))[:20], true, 0, false},
		{"empty", nil, true, 0, false},
	} {
		rows, ok := resultRows(tc.payload, tc.deprecated)
		if rows != tc.rows || ok != tc.ok {
			t.Errorf("%s: %d rows, %v; want %d, %v", tc.name, rows, ok, tc.rows, tc.ok)
		}
	}
}

// TestFoundRowsSQL: the statement that makes FOUND_ROWS() n names no
// table and no database; up to tablelessRows, it reads no table at all.
func TestFoundRowsSQL(t *testing.T) {
	if got := foundRowsSQL(0, true); got != "SELECT 1 FROM DUAL WHERE 0" {
		t.Errorf("0 rows: %s", got)
	}
	if got, want := foundRowsSQL(3, true), "SELECT 1 UNION ALL SELECT 1 UNION ALL SELECT 1"; got != want {
		t.Errorf("3 rows: %s, want %s", got, want)
	}
	if got, want := foundRowsSQL(tablelessRows+2, false), "SELECT 1 FROM JSON_TABLE('["; !strings.HasPrefix(got, want) || strings.Count(got, "0") != tablelessRows+2 {
		t.Errorf("%d rows: %.60s..., want %s...", tablelessRows+2, got, want)
	}
}

func TestFoundRowsSent(t *testing.T) {
	for sql, want := range map[string]bool{
		"SELECT id FROM t":                                    true,
		"SELECT a, b FROM t WHERE id IN (1, 2)":               true,
		"SELECT id FROM t LIMIT 5":                            true,
		"SELECT id FROM t ORDER BY id LIMIT ?":                true,
		"SELECT id FROM t UNION SELECT 1":                     true,
		"SELECT id FROM t LIMIT 90, 5":                        false,
		"SELECT id FROM t LIMIT ?, ?":                         false,
		"SELECT id FROM t limit 5 offset 90":                  false,
		"SELECT id FROM t UNION SELECT 5 LIMIT 2":             false,
		"SELECT id FROM t INTERSECT SELECT id FROM u LIMIT 3": false,
		"SELECT id FROM t EXCEPT SELECT id FROM u LIMIT 3":    false,
		"SELECT id FROM t LIMIT ROWS EXAMINED 10":             false,
	} {
		if got := foundRowsSent(sql); got != want {
			t.Errorf("foundRowsSent(%q) = %v, want %v", sql, got, want)
		}
	}
}
