package sqlinfo

import (
	"reflect"
	"testing"
)

// TestReturning: a RETURNING clause that lists columns leaves the
// statement read as it is without the clause; any other clause leaves it
// a write of anything.
func TestReturning(t *testing.T) {
	a := NewAnalyzer(Options{})
	for _, tc := range []struct {
		sql    string
		kind   Kind
		writes []Table
	}{
		{"INSERT INTO t (a) VALUES (1) RETURNING id", Insert, tbls("t")},
		{"insert into db.t (id, a) values (5, 1) returning id, a;", Insert, tbls("db.t")},
		{"REPLACE INTO t (id, a) VALUES (5, 1) RETURNING *", Replace, tbls("t")},
		{"DELETE FROM t WHERE id = 3 RETURNING a AS x, t.b y, db.t.c, t.*", Delete, tbls("t")},
		{"INSERT INTO t SELECT * FROM u WHERE a IN (SELECT 1) RETURNING `id`", Insert, tbls("t")},
		{"INSERT INTO t (a) VALUES ('x RETURNING f(1)') RETURNING id", Insert, tbls("t")},
	} {
		info := a.Analyze(tc.sql)
		if info.ParseError || info.Unmapped || info.Kind != tc.kind || !reflect.DeepEqual(info.Writes, tc.writes) {
			t.Errorf("%q: kind %v, writes %v, parse error %v, unmapped %v", tc.sql, info.Kind, info.Writes, info.ParseError, info.Unmapped)
		}
	}
	if info := a.Analyze("INSERT INTO t (id, a) VALUES (5, 1) RETURNING id"); info.Insert == nil || len(info.Insert.Rows) != 1 {
		t.Errorf("the rows an INSERT ... RETURNING lists are lost: %+v", info.Insert)
	}
	if info := a.AnalyzeIn(`INSERT INTO "t" (a) VALUES ('\"') RETURNING "id"`, Dialect{ANSIQuotes: true}); info.ParseError ||
		!reflect.DeepEqual(info.Writes, tbls("t")) {
		t.Errorf("under ANSI_QUOTES: writes %v, parse error %v", info.Writes, info.ParseError)
	}
	for _, sql := range []string{
		"INSERT INTO t (a) VALUES (1) RETURNING f(id)",
		"INSERT INTO t (a) VALUES (1) RETURNING id + 1",
		"INSERT INTO t (a) VALUES (1) RETURNING (SELECT f(1))",
		"INSERT INTO t (a) VALUES (1) RETURNING id; DELETE FROM u",
		"INSERT INTO t (a) VALUES (1) RETURNING id /*!50000 , f(id) */",
		"INSERT INTO t (a) VALUES (1) RETURNING",
		"INSERT INTO t (a) VALUES (1) RETURNING id,",
		"INSERT INTO t (a) VALUES (1) RETURNING a.b.c.d",
		"INSERT INTO t (a) VALUES (1) RETURNING 1",
		"UPDATE t SET a = 1 RETURNING id",
		"INSERT INTO t VALUES (1) ON DUPLICATE KEY UPDATE a = VALUE(a) RETURNING id",
	} {
		if info := a.Analyze(sql); !info.Unmapped || !info.Global {
			t.Errorf("%q: read as kind %v, writes %v: want a write of anything", sql, info.Kind, info.Writes)
		}
	}
}

// TestSetStatement: SET STATEMENT of timing variables to literals is read
// as the statement it runs; anything else stays a write of anything.
func TestSetStatement(t *testing.T) {
	a := NewAnalyzer(Options{})
	for _, tc := range []struct {
		sql       string
		kind      Kind
		writes    []Table
		cacheable bool
	}{
		{"SET STATEMENT max_statement_time=1 FOR SELECT v FROM t WHERE id = 1", Select, nil, true},
		{"set statement max_statement_time = 0.5, innodb_lock_wait_timeout = 3 for select * from db.t", Select, nil, true},
		{"SET STATEMENT long_query_time=-1, log_slow_query=OFF FOR SELECT NOW()", Select, nil, false},
		{"SET STATEMENT lock_wait_timeout='5' FOR UPDATE t SET a = 1 WHERE id = 2", Update, tbls("t"), false},
		{"SET STATEMENT max_statement_time=1 FOR DELETE FROM t WHERE id = 3 RETURNING id", Delete, tbls("t"), false},
		{"SET STATEMENT max_statement_time=1 FOR INSERT INTO t (a) VALUES (1)", Insert, tbls("t"), false},
	} {
		info := a.Analyze(tc.sql)
		if info.ParseError || info.Unmapped || info.Kind != tc.kind || !reflect.DeepEqual(info.Writes, tc.writes) || info.Cacheable != tc.cacheable {
			t.Errorf("%q: kind %v, writes %v, cacheable %v, parse error %v, unmapped %v",
				tc.sql, info.Kind, info.Writes, info.Cacheable, info.ParseError, info.Unmapped)
		}
	}
	// Under other variables, a read is a read, and not cached: the text
	// is parsed with the session's settings, whatever it sets.
	for _, tc := range []struct {
		sql   string
		reads []Table
	}{
		{"SET STATEMENT sql_select_limit=1 FOR SELECT * FROM t", tbls("t")},
		{"set statement sql_mode='ANSI_QUOTES', max_statement_time=2 for select \"v\" from db.t where id = 1", []Table{{DB: "db", Name: "t"}}},
		{"SET STATEMENT optimizer_switch='index_merge=off' FOR SELECT a FROM t JOIN u USING (id)", tbls("t", "u")},
	} {
		info := a.Analyze(tc.sql)
		if info.ParseError || info.Unmapped || info.Global || info.Kind != Select || info.Cacheable || info.WhyNot != WhySetStatement ||
			info.MayWrite || len(info.Writes) > 0 || !reflect.DeepEqual(info.Reads, tc.reads) {
			t.Errorf("%q: kind %v, reads %v, writes %v, cacheable %v (%s), parse error %v, unmapped %v",
				tc.sql, info.Kind, info.Reads, info.Writes, info.Cacheable, info.WhyNot, info.ParseError, info.Unmapped)
		}
	}
	if a.Analyze("SET STATEMENT max_statement_time=1 FOR SELECT 1").Digest == a.Analyze("SELECT 1").Digest {
		t.Error("SET STATEMENT ... FOR SELECT 1 shares the digest of SELECT 1")
	}
	for _, sql := range []string{
		"SET STATEMENT sql_mode='ANSI_QUOTES' FOR DELETE FROM \"t\"",
		"SET STATEMENT sql_select_limit=1 FOR UPDATE t SET a = 1",
		"SET STATEMENT sql_mode='' FOR SELECT f(v) FROM t",
		"SET STATEMENT sql_mode='' FOR SELECT NEXTVAL(s)",
		"SET STATEMENT sql_log_bin=0 FOR SELECT v FROM t; DELETE FROM t",
		"SET STATEMENT sql_mode=@m FOR SELECT v FROM t",
		"SET STATEMENT max_statement_time=f() FOR UPDATE t SET a = 1",
		"SET STATEMENT max_statement_time=@x FOR UPDATE t SET a = 1",
		"SET STATEMENT max_statement_time=? FOR UPDATE t SET a = 1",
		"SET STATEMENT max_statement_time=1 FOR CALL p()",
		"SET STATEMENT max_statement_time=1 FOR DROP TABLE t",
		"SET STATEMENT max_statement_time=1 FOR SELECT 1; DELETE FROM t",
		"SET STATEMENT max_statement_time=1 /*!50000 , sql_mode='' */ FOR UPDATE t SET a = 1",
		"SET STATEMENT max_statement_time=1 FOR",
		"SET STATEMENT max_statement_time=1 UPDATE t SET a = 1",
		"SET STATEMENT FOR UPDATE t SET a = 1",
	} {
		if info := a.Analyze(sql); !info.Unmapped || !info.Global {
			t.Errorf("%q: read as kind %v, writes %v: want a write of anything", sql, info.Kind, info.Writes)
		}
	}
}

// TestCreateOrReplace: CREATE OR REPLACE of a table or a sequence writes
// what CREATE writes.
func TestCreateOrReplace(t *testing.T) {
	a := NewAnalyzer(Options{})
	for _, tc := range []struct {
		sql    string
		writes []Table
		temp   bool
	}{
		{"CREATE OR REPLACE TABLE t (id INT PRIMARY KEY)", tbls("t"), false},
		{"create or replace temporary table db.t (a int)", tbls("db.t"), true},
		{"CREATE OR REPLACE TABLE r AS SELECT a FROM u", tbls("r"), false},
		{"CREATE OR REPLACE SEQUENCE s", tbls("s"), false},
		{"CREATE OR REPLACE TABLE `t``x` LIKE u", tbls("t`x"), false},
		{"CREATE /*M! OR REPLACE */ TABLE t (a INT)", tbls("t"), false},
	} {
		info := a.Analyze(tc.sql)
		if info.ParseError || info.Unmapped || info.Kind != DDL || !reflect.DeepEqual(info.Writes, tc.writes) || info.Temporary != tc.temp {
			t.Errorf("%q: kind %v, writes %v, temporary %v, parse error %v, unmapped %v",
				tc.sql, info.Kind, info.Writes, info.Temporary, info.ParseError, info.Unmapped)
		}
	}
	for _, sql := range []string{
		"CREATE OR REPLACE TABLE t (a INT); DROP TABLE u",
		"CREATE OR REPLACE TRIGGER tr BEFORE INSERT ON t FOR EACH ROW SET NEW.a = 1",
		"CREATE OR REPLACE TABLE t (a INT) WITH SYSTEM VERSIONING",
		"CREATE OR",
	} {
		if info := a.Analyze(sql); !info.Unmapped || !info.Global {
			t.Errorf("%q: read as kind %v, writes %v: want a write of anything", sql, info.Kind, info.Writes)
		}
	}
}

// TestRefusedMultiStatement: a text the parser refuses is read by its
// first keywords only when it holds one statement; a ';' that ends a
// statement before more text makes it a write of anything, in every
// dialect. One ';' at the end, or ';' in strings and comments, do not.
func TestRefusedMultiStatement(t *testing.T) {
	a := NewAnalyzer(Options{})
	nbe := Dialect{Charset: "utf8mb4", NoBackslashEscapes: true}
	for _, tc := range []struct {
		sql    string
		d      Dialect
		global bool
	}{
		{"SHOW ENGINE INNODB STATUS; DELETE FROM t", Dialect{}, true},
		{"SELECT v INTO @x FROM t; UPDATE t SET v = 1", Dialect{}, true},
		{"SELECT * FROM h FOR SYSTEM_TIME ALL;DELETE FROM t", Dialect{}, true},
		{"XA END 'x'; DELETE FROM t", Dialect{}, true},
		{"SELECT * FROM h FOR SYSTEM_TIME ALL /*!; DELETE FROM t */", Dialect{}, true},
		{`SELECT * FROM h FOR SYSTEM_TIME ALL WHERE v = 'a\'; DELETE FROM t; -- '`, nbe, true},
		{"SHOW ENGINE INNODB STATUS;", Dialect{}, false},
		{"SHOW ENGINE INNODB STATUS ; ; ", Dialect{}, false},
		{"SELECT * FROM h FOR SYSTEM_TIME ALL WHERE v = ';' -- ; DELETE FROM t", Dialect{}, false},
		{"SELECT * FROM h FOR SYSTEM_TIME ALL WHERE v = 'a;b' # ;", Dialect{}, false},
		{`SELECT * FROM h FOR SYSTEM_TIME ALL WHERE v = 'a\'; DELETE FROM t; -- '`, Dialect{}, false},
	} {
		info := a.AnalyzeIn(tc.sql, tc.d)
		if info.Global != tc.global || info.Cacheable {
			t.Errorf("%q (%+v): kind %v, global %v, cacheable %v; want global %v", tc.sql, tc.d, info.Kind, info.Global, info.Cacheable, tc.global)
		}
	}
}
