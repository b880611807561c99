package meta

import (
	"slices"
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

// TestGaps: a server that applies writes without logging them (a
// replica or a Galera node without log_slave_updates) is named, with
// what to do; one that logs them, or replicates nothing, is not.
func TestGaps(t *testing.T) {
	for _, tt := range []struct {
		name string
		f    Facts
		want []string
	}{
		{"primary", Facts{}, nil},
		{"logging replica", Facts{LogSlaveUpdates: true, SlavePos: "0-1-5", Galera: true}, nil},
		{"replica", Facts{SlavePos: "0-1-5"}, []string{"replicates (gtid_slave_pos 0-1-5) with log_slave_updates=OFF"}},
		{"galera", Facts{Galera: true}, []string{"Galera node with log_slave_updates=OFF"}},
	} {
		got := tt.f.Gaps()
		if len(got) != len(tt.want) {
			t.Errorf("%s: %q, want %d", tt.name, got, len(tt.want))
			continue
		}
		for i := range got {
			if !strings.Contains(got[i], tt.want[i]) || !strings.Contains(got[i], "set log_slave_updates=ON") {
				t.Errorf("%s: %q, want one containing %q and what to do", tt.name, got[i], tt.want[i])
			}
		}
	}
	f := Facts{LogSlaveUpdates: true, BinlogIgnoreDB: []string{"scratch", "tmp"}}
	if g := f.Gaps(); len(g) != 1 || !strings.Contains(g[0], "binlog_do_db=unset, binlog_ignore_db=scratch,tmp") || !strings.Contains(g[0], "remove the filters") {
		t.Errorf("filters: %q", g)
	}
}

// TestLogged: a database is logged unless binlog_ignore_db names it in
// any case, or binlog_do_db does not name it exactly.
func TestLogged(t *testing.T) {
	for _, tt := range []struct {
		f    Facts
		db   string
		want bool
	}{
		{Facts{}, "app", true},
		{Facts{BinlogIgnoreDB: []string{"scratch"}}, "app", true},
		{Facts{BinlogIgnoreDB: []string{"scratch"}}, "scratch", false},
		{Facts{BinlogIgnoreDB: []string{"scratch"}}, "Scratch", false},
		{Facts{BinlogDoDB: []string{"app"}}, "app", true},
		{Facts{BinlogDoDB: []string{"app"}}, "App", false},
		{Facts{BinlogDoDB: []string{"app"}}, "other", false},
		{Facts{BinlogDoDB: []string{"app"}, BinlogIgnoreDB: []string{"app"}}, "app", false},
	} {
		if got := tt.f.Logged(tt.db); got != tt.want {
			t.Errorf("do %q ignore %q: Logged(%q) = %v, want %v", tt.f.BinlogDoDB, tt.f.BinlogIgnoreDB, tt.db, got, tt.want)
		}
	}
}

// TestAdviceNamesTheMissingGrant: the advice on the metadata grants names
// the one the account lacks, not a choice of two.
func TestAdviceNamesTheMissingGrant(t *testing.T) {
	for _, tt := range []struct {
		grants []string
		want   string // "" for no advice on them
	}{
		{[]string{"SELECT", "SHOW VIEW"}, ""},
		{[]string{"ALL PRIVILEGES"}, ""},
		{[]string{"SHOW VIEW"}, "lacks SELECT on *.*: without SELECT and SHOW VIEW mycached cannot read primary keys, views and foreign keys, and reads of such tables are not cached; GRANT SELECT ON *.* TO it"},
		{[]string{"SELECT"}, "lacks SHOW VIEW on *.*: "},
		{nil, "lacks SELECT and SHOW VIEW on *.*: "},
	} {
		f := Facts{BinlogRowMetadata: "FULL", Grants: map[string]bool{"BINLOG MONITOR": true}}
		for _, g := range tt.grants {
			f.Grants[g] = true
		}
		var got string
		for _, a := range f.Advice() {
			if strings.Contains(a, "without SELECT and SHOW VIEW") {
				got = a
			}
		}
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("grants %q: advice %q, want one containing %q", tt.grants, got, tt.want)
		}
	}
	f := Facts{Grants: map[string]bool{"BINLOG MONITOR": true}}
	if a := f.Advice(); !slices.ContainsFunc(a, func(s string) bool { return strings.HasSuffix(s, "GRANT SELECT, SHOW VIEW ON *.* TO it") }) {
		t.Errorf("no grants: %q lacks the GRANT of both", a)
	}
}

// TestAdviceOnServerLogs: a server that logs every statement it runs,
// in its general log or its audit plugin, is told to miss the reads the
// cache answers; an audit of connections or of writes alone is not.
func TestAdviceOnServerLogs(t *testing.T) {
	for _, tt := range []struct {
		general, audit bool
		events         string
		want           []string
	}{
		{want: nil},
		{general: true, want: []string{"general_log is ON"}},
		{audit: true, events: "", want: []string{"the server_audit plugin logs reads"}},
		{audit: true, events: "CONNECT,QUERY_DML", want: []string{"the server_audit plugin logs reads"}},
		{audit: true, events: "connect, table", want: []string{"the server_audit plugin logs reads"}},
		{audit: true, events: "CONNECT,QUERY_DDL,QUERY_DML_NO_SELECT,QUERY_DCL", want: nil},
		{audit: false, events: "QUERY", want: nil},
		{general: true, audit: true, events: "QUERY", want: []string{"general_log is ON", "the server_audit plugin logs reads"}},
	} {
		f := Facts{BinlogRowMetadata: "FULL", Grants: map[string]bool{"ALL PRIVILEGES": true}, GeneralLog: tt.general,
			AuditReads: tt.audit && auditsReads(tt.events)}
		got := f.Advice()
		if len(got) != len(tt.want) {
			t.Errorf("general %t, audit %t of %q: advice %q, want %d lines", tt.general, tt.audit, tt.events, got, len(tt.want))
			continue
		}
		for i, w := range tt.want {
			if !strings.HasPrefix(got[i], w) {
				t.Errorf("general %t, audit %t of %q: advice %q, want one beginning %q", tt.general, tt.audit, tt.events, got[i], w)
			}
		}
	}
}
