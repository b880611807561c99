package sqlinfo

import (
	"reflect"
	"testing"
)

// TestMaintenance: table maintenance statements the parser refuses are
// read exactly, or as a write of anything when they are not quite what
// they seem.
func TestMaintenance(t *testing.T) {
	serverVersion.Store(101119) // the comments' versions are read against it
	a := NewAnalyzer(Options{})
	exact := []struct {
		sql    string
		kind   Kind
		writes []Table
	}{
		{"CHECK TABLE t", Other, nil},
		{"check table t2 for upgrade", Other, nil},
		{"CHECK TABLE db.t, `x``y`.`z` QUICK EXTENDED", Other, nil},
		{"CHECK VIEW v", Other, nil},
		{"CHECKSUM TABLE t1, t2 EXTENDED;", Other, nil},
		{"/* nightly */ CHECKSUM TABLES t", Other, nil},
		{"REPAIR TABLE t", DDL, tbls("t")},
		{"repair no_write_to_binlog table db.t, u quick use_frm", DDL, tbls("db.t", "u")},
		{"REPAIR LOCAL TABLE `a``b` FORCE", DDL, tbls("a`b")},
		{"REPAIR VIEW v FROM MYSQL", DDL, tbls("v")},
		{"ANALYZE TABLE t PERSISTENT FOR ALL", Other, nil},
		// Executable comments are read as the server reads them.
		{"CHECK TABLE t /*!50000 , u */", Other, nil},
		{"REPAIR TABLE t /*!50000 , u */", DDL, tbls("t", "u")},
		{"REPAIR TABLE t /*+ x */", DDL, tbls("t")},
		{"ANALYZE LOCAL TABLE t PERSISTENT FOR COLUMNS (a, `b`) INDEXES ()", Other, nil},
	}
	for _, tc := range exact {
		info := a.Analyze(tc.sql)
		if info.ParseError || info.Unmapped || info.Kind != tc.kind || !reflect.DeepEqual(info.Writes, tc.writes) ||
			info.Cacheable || info.MayWrite != (tc.kind == DDL) {
			t.Errorf("%q: kind %v, writes %v, parse error %v, unmapped %v, may write %v, cacheable %v",
				tc.sql, info.Kind, info.Writes, info.ParseError, info.Unmapped, info.MayWrite, info.Cacheable)
		}
	}
	for _, sql := range []string{
		"CHECK TABLE t; DELETE FROM u",
		"REPAIR TABLE t; DROP TABLE u",
		"CHECK TABLE t /*M! ; DELETE FROM u */",
		"CHECK TABLE t WHERE f() = 1",
		"CHECK TABLE 't'",
		"CHECK TABLE",
		"CHECKSUM TABLE t QUICK EXTENDED",
		"REPAIR TABLE t FROM",
		"ANALYZE TABLE t PERSISTENT FOR COLUMNS (a) INDEXES (f())",
		"ANALYZE FORMAT=TRADITIONAL UPDATE t SET a = 1",
		"ANALYZE TABLE t PERSISTENT",
		"CHECK TABLE t,",
		"CHECK TABLE db.",
	} {
		info := a.Analyze(sql)
		if !info.Unmapped || !info.Global {
			t.Errorf("%q: read as kind %v, writes %v: want a write of anything", sql, info.Kind, info.Writes)
		}
	}
}

// TestFlushTablesAndResultGlobals: FLUSH TABLES changes the tables it
// names, or any table, as the server reads their files afresh; SET
// GLOBAL of a variable that changes every session's results changes any
// result. FLUSH of anything else, and other SET GLOBALs, change none.
func TestFlushTablesAndResultGlobals(t *testing.T) {
	a := NewAnalyzer(Options{})
	for _, tc := range []struct {
		sql    string
		writes []Table
		global bool
	}{
		{"FLUSH TABLES t", tbls("t"), false},
		{"flush local table db.t, `u`", tbls("db.t", "u"), false},
		{"FLUSH NO_WRITE_TO_BINLOG TABLES t WITH READ LOCK", tbls("t"), false},
		{"FLUSH TABLES", nil, true},
		{"FLUSH TABLES WITH READ LOCK", nil, true},
		{"SET GLOBAL ft_boolean_syntax = '- +><()~*:\"\"&|'", nil, true},
		{"SET @@global.ft_boolean_syntax = DEFAULT", nil, true},
		{"SET sql_mode = '', GLOBAL ft_query_expansion_limit = 5", nil, true},
	} {
		info := a.Analyze(tc.sql)
		if !info.MayWrite || !reflect.DeepEqual(info.Writes, tc.writes) || info.Global != tc.global {
			t.Errorf("%q: may write %v, writes %v, global %v; want writes %v, global %v",
				tc.sql, info.MayWrite, info.Writes, info.Global, tc.writes, tc.global)
		}
	}
	for _, sql := range []string{"FLUSH LOGS", "FLUSH STATUS", "FLUSH QUERY CACHE", "SET GLOBAL sql_mode = ''", "SET ft_boolean_syntax = 'x'"} {
		if info := a.Analyze(sql); info.MayWrite {
			t.Errorf("%q: read as a write of %v (global %v)", sql, info.Writes, info.Global)
		}
	}
}
