package meta

import (
	"strings"
	"testing"
)

// TestProblems: a MariaDB server with a ROW binlog and the grant has no
// problem; anything else is named, and a MySQL server is named as such
// rather than by the variables it lacks.
func TestProblems(t *testing.T) {
	good := Facts{Version: "11.8.3-MariaDB-0+deb13u1", MariaDB: true, LogBin: true, BinlogFormat: "ROW",
		Grants: map[string]bool{"REPLICATION SLAVE": true}}
	if p := good.Problems(); len(p) != 0 {
		t.Fatalf("good server: %q", p)
	}
	for _, tt := range []struct {
		name string
		f    func(*Facts)
		want string
	}{
		{"mysql", func(f *Facts) { f.Version, f.MariaDB = "8.0.36", false }, "(version 8.0.36) is not MariaDB"},
		{"binlog off", func(f *Facts) { f.LogBin = false }, "binary log is off"},
		{"statement format", func(f *Facts) { f.BinlogFormat = "MIXED" }, "binlog_format is MIXED"},
		{"no grant", func(f *Facts) { f.Grants = map[string]bool{} }, "lacks REPLICATION SLAVE"},
	} {
		f := good
		tt.f(&f)
		p := f.Problems()
		if len(p) != 1 || !strings.Contains(p[0], tt.want) {
			t.Errorf("%s: %q, want one containing %q", tt.name, p, tt.want)
		}
	}
}
