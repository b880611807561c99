package sqlinfo

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unsafe"
)

func tbls(names ...string) []Table {
	var out []Table
	for _, n := range names {
		db, name, ok := strings.Cut(n, ".")
		if !ok {
			db, name = "", n
		}
		out = append(out, Table{DB: db, Name: name})
	}
	return out
}

func TestAnalyze(t *testing.T) {
	tests := []struct {
		sql       string
		kind      Kind
		reads     []Table
		writes    []Table
		cacheable bool
		whyNot    string
		mayWrite  bool
		unmapped  bool
		global    bool
		dbWide    []string
	}{
		{sql: "SELECT c FROM sbtest1 WHERE id=5", kind: Select, reads: tbls("sbtest1"), cacheable: true},
		{sql: "SELECT 1", kind: Select, cacheable: true},
		{sql: "select a.x, b.y from db1.a join `Db2`.`B` b on a.id=b.id", kind: Select, reads: tbls("db1.a", "Db2.B"), cacheable: true},
		{sql: "SELECT * FROM t WHERE id IN (SELECT id FROM u WHERE EXISTS (SELECT 1 FROM v))", kind: Select, reads: tbls("t", "u", "v"), cacheable: true},
		{sql: "SELECT * FROM (SELECT * FROM d) AS x", kind: Select, reads: tbls("d"), cacheable: true},
		{sql: "SELECT a FROM t1 UNION ALL SELECT a FROM t2", kind: Select, reads: tbls("t1", "t2"), cacheable: true},
		{sql: "(SELECT a FROM t1) UNION (SELECT a FROM t2 FOR UPDATE)", kind: Select, reads: tbls("t1", "t2"), whyNot: "locking-read"},
		{sql: "WITH c AS (SELECT * FROM b) SELECT * FROM c JOIN d", kind: Select, reads: tbls("b", "d"), cacheable: true},
		{sql: "WITH RECURSIVE r AS (SELECT 1 AS n UNION ALL SELECT n+1 FROM r WHERE n<5) SELECT * FROM r", kind: Select, cacheable: true},
		{sql: "WITH a AS (SELECT * FROM x), b AS (SELECT * FROM a) SELECT * FROM b", kind: Select, reads: tbls("x"), cacheable: true},
		{sql: "TABLE t", kind: Select, reads: tbls("t"), cacheable: true},
		{sql: "SELECT COUNT(*), SUM(k), CONCAT(a,'x'), IFNULL(a,1) FROM t GROUP BY a", kind: Select, reads: tbls("t"), cacheable: true},
		{sql: "/* trace=abc */ SELECT c FROM t", kind: Select, reads: tbls("t"), cacheable: true},
		// Never cached.
		{sql: "SELECT NOW()", kind: Select, whyNot: "nondeterministic:now"},
		{sql: "SELECT * FROM t WHERE d > CURRENT_TIMESTAMP", kind: Select, reads: tbls("t"), whyNot: "nondeterministic:current_timestamp"},
		{sql: "SELECT CURDATE()", kind: Select, whyNot: "nondeterministic:curdate"},
		{sql: "SELECT CURRENT_DATE", kind: Select, whyNot: "nondeterministic:current_date"},
		{sql: "SELECT LOCALTIME", kind: Select, whyNot: "nondeterministic:localtime"},
		{sql: "SELECT SYSDATE()", kind: Select, whyNot: "nondeterministic:sysdate"},
		{sql: "SELECT UNIX_TIMESTAMP()", kind: Select, whyNot: "nondeterministic:unix_timestamp"},
		{sql: "SELECT UTC_TIMESTAMP()", kind: Select, whyNot: "nondeterministic:utc_timestamp"},
		{sql: "SELECT * FROM t ORDER BY RAND()", kind: Select, reads: tbls("t"), whyNot: "nondeterministic:rand"},
		{sql: "SELECT UUID()", kind: Select, whyNot: "nondeterministic:uuid"},
		{sql: "SELECT UUID_SHORT()", kind: Select, whyNot: "nondeterministic:uuid_short"},
		{sql: "SELECT CONNECTION_ID()", kind: Select, whyNot: "nondeterministic:connection_id"},
		{sql: "SELECT BINLOG_GTID_POS('mariadb-bin.000001', 4)", kind: Select, whyNot: "nondeterministic:binlog_gtid_pos"},
		{sql: "SELECT WSREP_LAST_SEEN_GTID()", kind: Select, whyNot: "nondeterministic:wsrep_last_seen_gtid"},
		{sql: "SELECT v FROM t WHERE WSREP_LAST_WRITTEN_GTID() IS NOT NULL", kind: Select, reads: tbls("t"), whyNot: "nondeterministic:wsrep_last_written_gtid"},
		{sql: "SELECT WSREP_SYNC_WAIT_UPTO_GTID('1-1-1')", kind: Select, whyNot: "nondeterministic:wsrep_sync_wait_upto_gtid"},
		{sql: "SELECT LAST_INSERT_ID()", kind: Select, whyNot: "nondeterministic:last_insert_id"},
		{sql: "SELECT FOUND_ROWS()", kind: Select, whyNot: "nondeterministic:found_rows"},
		{sql: "SELECT ROW_COUNT()", kind: Select, whyNot: "nondeterministic:row_count"},
		{sql: "SELECT USER()", kind: Select, whyNot: "nondeterministic:user"},
		{sql: "SELECT CURRENT_USER", kind: Select, whyNot: "nondeterministic:current_user"},
		{sql: "SELECT SESSION_USER()", kind: Select, whyNot: "nondeterministic:session_user"},
		{sql: "SELECT SYSTEM_USER()", kind: Select, whyNot: "nondeterministic:system_user"},
		{sql: "SELECT DATABASE()", kind: Select, whyNot: "nondeterministic:database"},
		{sql: "SELECT SCHEMA()", kind: Select, whyNot: "nondeterministic:schema"},
		{sql: "SELECT GET_LOCK('a', 1)", kind: Select, whyNot: "nondeterministic:get_lock"},
		{sql: "SELECT IS_FREE_LOCK('a')", kind: Select, whyNot: "nondeterministic:is_free_lock"},
		{sql: "SELECT IS_USED_LOCK('a')", kind: Select, whyNot: "nondeterministic:is_used_lock"},
		{sql: "SELECT RELEASE_LOCK('a')", kind: Select, whyNot: "nondeterministic:release_lock"},
		{sql: "SELECT SLEEP(1)", kind: Select, whyNot: "nondeterministic:sleep"},
		{sql: "SELECT BENCHMARK(10, 1)", kind: Select, whyNot: "nondeterministic:benchmark"},
		{sql: "SELECT LOAD_FILE('/etc/passwd')", kind: Select, whyNot: "nondeterministic:load_file"},
		{sql: "SELECT NEXTVAL(s)", kind: Select, reads: tbls("s"), writes: tbls("s"), whyNot: "nondeterministic:nextval", mayWrite: true},
		{sql: "SELECT SETVAL(s, 5)", kind: Select, reads: tbls("s"), writes: tbls("s"), whyNot: "nondeterministic:setval", mayWrite: true},
		{sql: "UPDATE t SET n = NEXTVAL(d.s)", kind: Update, reads: tbls("t", "d.s"), writes: tbls("t", "d.s"), whyNot: "not-select", mayWrite: true},
		{sql: "SELECT LASTVAL(s)", kind: Select, reads: tbls("s"), whyNot: "nondeterministic:lastval"},
		{sql: "SELECT NEXT VALUE FOR s", kind: Select, reads: tbls("s"), writes: tbls("s"), whyNot: "nondeterministic:nextval", mayWrite: true},
		{sql: "SELECT sq.nextval FROM dual", kind: Select, writes: tbls("sq"), whyNot: "nondeterministic:nextval", mayWrite: true},
		// sql_mode=ORACLE's bare SYSDATE is the function.
		{sql: "SELECT SYSDATE, id FROM t", kind: Select, reads: tbls("t"), whyNot: "nondeterministic:sysdate"},
		{sql: "SELECT id FROM t WHERE d < sysdate", kind: Select, reads: tbls("t"), whyNot: "nondeterministic:sysdate"},
		{sql: "SELECT `d`.`s q`.NEXTVAL, s2.currval", kind: Select, writes: tbls("d.s q"), whyNot: "nondeterministic:nextval", mayWrite: true},
		{sql: "SELECT s.currval FROM dual", kind: Select, whyNot: "nondeterministic:currval"},
		{sql: "INSERT INTO t VALUES (d.s.nextval, 1)", kind: Insert, writes: tbls("t", "d.s"), whyNot: "not-select", mayWrite: true},
		{sql: "SELECT t.nextvalue FROM t", kind: Select, reads: tbls("t"), cacheable: true},
		{sql: "BEGIN NOT ATOMIC UPDATE t SET v = 1; END", kind: Other, whyNot: "parse-error", mayWrite: true, unmapped: true, global: true},
		{sql: "SELECT my_func(a) FROM t", kind: Select, reads: tbls("t"), whyNot: "stored-function:my_func"},
		{sql: "SELECT d.f(a) FROM t", kind: Select, reads: tbls("t"), whyNot: "stored-function:d.f"},
		{sql: "SELECT @x", kind: Select, whyNot: "user-variable"},
		{sql: "SELECT @@sql_mode", kind: Select, whyNot: "system-variable"},
		{sql: "SELECT * FROM t WHERE a = @@session.x", kind: Select, reads: tbls("t"), whyNot: "system-variable"},
		{sql: "SELECT * FROM t FOR UPDATE", kind: Select, reads: tbls("t"), whyNot: "locking-read"},
		{sql: "SELECT * FROM t FOR SHARE", kind: Select, reads: tbls("t"), whyNot: "locking-read"},
		{sql: "SELECT * FROM t LOCK IN SHARE MODE", kind: Select, reads: tbls("t"), whyNot: "locking-read"},
		{sql: "SELECT a FROM t INTO OUTFILE '/tmp/x'", kind: Select, reads: tbls("t"), whyNot: "select-into"},
		{sql: "SELECT a INTO @x FROM t", kind: Select, whyNot: "parse-error"},
		{sql: "SELECT * FROM information_schema.tables", kind: Select, reads: tbls("information_schema.tables"), whyNot: "system-schema"},
		{sql: "SELECT * FROM INFORMATION_SCHEMA.TABLES", kind: Select, reads: tbls("INFORMATION_SCHEMA.TABLES"), whyNot: "system-schema"},
		{sql: "SELECT * FROM mysql.user", kind: Select, reads: tbls("mysql.user"), whyNot: "system-schema"},
		{sql: "SELECT * FROM performance_schema.threads", kind: Select, reads: tbls("performance_schema.threads"), whyNot: "system-schema"},
		{sql: "SELECT * FROM sys.x", kind: Select, reads: tbls("sys.x"), whyNot: "system-schema"},
		{sql: "SELECT 1; SELECT 2", kind: Select, whyNot: "multi-statement"},
		{sql: "SELECT * FROM a; UPDATE b SET x=1", kind: Select, reads: tbls("a", "b"), writes: tbls("b"), whyNot: "multi-statement", mayWrite: true},
		{sql: "UPDATE b SET x=1; USE d2; UPDATE b SET x=2", kind: Update, reads: tbls("b", "d2.b"), writes: tbls("b", "d2.b"), whyNot: "multi-statement", mayWrite: true},
		{sql: "SELECT 1;", kind: Select, cacheable: true},
		{sql: "SELECT 1 ; ", kind: Select, cacheable: true},
		{sql: "SHOW TABLES", kind: Show, whyNot: "not-select"},
		{sql: "EXPLAIN SELECT * FROM t", kind: Show, reads: tbls("t"), whyNot: "not-select"},
		// Writes.
		{sql: "INSERT INTO t (a) VALUES (1)", kind: Insert, writes: tbls("t"), whyNot: "not-select", mayWrite: true},
		{sql: "INSERT INTO d.t SELECT * FROM s JOIN u", kind: Insert, reads: tbls("s", "u"), writes: tbls("d.t"), whyNot: "not-select", mayWrite: true},
		{sql: "INSERT INTO t (a) VALUES (1) ON DUPLICATE KEY UPDATE a = a + 1", kind: Insert, writes: tbls("t"), whyNot: "not-select", mayWrite: true},
		{sql: "REPLACE INTO t VALUES (1)", kind: Replace, writes: tbls("t"), whyNot: "not-select", mayWrite: true},
		{sql: "UPDATE t SET a = 1 WHERE id IN (SELECT id FROM u)", kind: Update, reads: tbls("t", "u"), writes: tbls("t"), whyNot: "not-select", mayWrite: true},
		{sql: "UPDATE t1 JOIN t2 ON t1.id = t2.id SET t1.x = t2.y", kind: Update, reads: tbls("t1", "t2"), writes: tbls("t1"), whyNot: "not-select", mayWrite: true},
		{sql: "UPDATE t1 a JOIN t2 b ON a.id = b.id SET b.x = 1", kind: Update, reads: tbls("t1", "t2"), writes: tbls("t2"), whyNot: "not-select", mayWrite: true},
		{sql: "UPDATE t1 JOIN t2 ON t1.id = t2.id SET x = 1", kind: Update, reads: tbls("t1", "t2"), writes: tbls("t1", "t2"), whyNot: "not-select", mayWrite: true},
		{sql: "DELETE FROM t WHERE id = 1", kind: Delete, reads: tbls("t"), writes: tbls("t"), whyNot: "not-select", mayWrite: true},
		{sql: "DELETE t1, t2 FROM t1 JOIN t2 ON t1.id = t2.id JOIN t3", kind: Delete, reads: tbls("t1", "t2", "t3"), writes: tbls("t1", "t2"), whyNot: "not-select", mayWrite: true},
		{sql: "DELETE a FROM db.t1 a JOIN t2 b ON a.id = b.id", kind: Delete, reads: tbls("db.t1", "t2"), writes: tbls("db.t1"), whyNot: "not-select", mayWrite: true},
		{sql: "LOAD DATA LOCAL INFILE '/tmp/x' INTO TABLE t", kind: LoadData, writes: tbls("t"), whyNot: "not-select", mayWrite: true},
		{sql: "TRUNCATE TABLE t", kind: DDL, writes: tbls("t"), whyNot: "not-select", mayWrite: true},
		{sql: "OPTIMIZE TABLE t, d.u", kind: DDL, writes: tbls("t", "d.u"), whyNot: "not-select", mayWrite: true},
		{sql: "OPTIMIZE NO_WRITE_TO_BINLOG TABLE t", kind: DDL, writes: tbls("t"), whyNot: "not-select", mayWrite: true},
		{sql: "ALTER TABLE t ADD COLUMN c INT", kind: DDL, writes: tbls("t"), whyNot: "not-select", mayWrite: true},
		{sql: "ALTER TABLE t RENAME TO u", kind: DDL, writes: tbls("t", "u"), whyNot: "not-select", mayWrite: true},
		{sql: "DROP TABLE a, d.b", kind: DDL, writes: tbls("a", "d.b"), whyNot: "not-select", mayWrite: true},
		{sql: "RENAME TABLE a TO b, c TO d.e", kind: DDL, writes: tbls("a", "b", "c", "d.e"), whyNot: "not-select", mayWrite: true},
		{sql: "CREATE TABLE x SELECT * FROM y", kind: DDL, reads: tbls("y"), writes: tbls("x"), whyNot: "not-select", mayWrite: true},
		{sql: "CREATE TABLE x (id INT, p INT, FOREIGN KEY (p) REFERENCES parent(id))", kind: DDL, writes: tbls("x"), whyNot: "not-select", mayWrite: true},
		{sql: "CREATE INDEX i ON t (a)", kind: DDL, writes: tbls("t"), whyNot: "not-select", mayWrite: true},
		{sql: "DROP DATABASE d", kind: DDL, whyNot: "not-select", mayWrite: true, unmapped: true, dbWide: []string{"d"}},
		{sql: "ALTER DATABASE d CHARACTER SET utf8mb4", kind: DDL, whyNot: "not-select", mayWrite: true, unmapped: true, dbWide: []string{"d"}},
		{sql: "CREATE VIEW v AS SELECT * FROM t", kind: DDL, reads: tbls("t"), writes: tbls("v"), whyNot: "not-select", mayWrite: true, unmapped: true, dbWide: []string{""}},
		{sql: "CALL p()", kind: Call, whyNot: "not-select", mayWrite: true, unmapped: true, global: true, dbWide: []string{""}},
		{sql: "CALL d.p(1)", kind: Call, whyNot: "not-select", mayWrite: true, unmapped: true, global: true, dbWide: []string{"d"}},
		{sql: "CREATE TRIGGER tr BEFORE INSERT ON t FOR EACH ROW SET NEW.a=1", kind: DDL, whyNot: "parse-error", mayWrite: true, unmapped: true, global: true},
		{sql: "GRANT SELECT ON d.* TO u", kind: Other, whyNot: "", mayWrite: true, unmapped: true, global: true},
		{sql: "INSERT INTO t VALUES (1) RETURNING id", kind: Insert, writes: tbls("t"), whyNot: "not-select", mayWrite: true},
		{sql: "INSERT INTO t VALUES (1) RETURNING f(id)", kind: Insert, whyNot: "parse-error", mayWrite: true, unmapped: true, global: true},
		{sql: "EXECUTE s", kind: Other, whyNot: "not-select", mayWrite: true, unmapped: true, global: true},
		{sql: "SET STATEMENT max_statement_time=1 FOR UPDATE t SET a=1", kind: Update, reads: tbls("t"), writes: tbls("t"), whyNot: "not-select", mayWrite: true},
		{sql: "SET STATEMENT sql_mode='' FOR UPDATE t SET a=1", kind: Other, whyNot: "parse-error", mayWrite: true, unmapped: true, global: true},
		// Transaction control and session.
		{sql: "BEGIN", kind: Begin, whyNot: "not-select"},
		{sql: "START TRANSACTION", kind: Begin, whyNot: "not-select"},
		{sql: "COMMIT", kind: Commit, whyNot: "not-select"},
		{sql: "ROLLBACK", kind: Rollback, whyNot: "not-select"},
		{sql: "ROLLBACK TO SAVEPOINT a", kind: Savepoint, whyNot: "not-select"},
		// The transaction stays open, whether the parse reads it or not.
		{sql: "ROLLBACK TO a", kind: Savepoint, whyNot: "not-select"},
		{sql: "ROLLBACK WORK TO a", kind: Savepoint, whyNot: "parse-error"},
		{sql: "rollback /* x */ work to `a`", kind: Savepoint, whyNot: "parse-error"},
		{sql: "ROLLBACK WORK", kind: Rollback, whyNot: "parse-error"},
		{sql: "ROLLBACK WORK AND NO CHAIN", kind: Rollback, whyNot: "parse-error"},
		{sql: "SAVEPOINT a", kind: Savepoint, whyNot: "not-select"},
		{sql: "RELEASE SAVEPOINT a", kind: Savepoint, whyNot: "not-select"},
		{sql: "XA START 'x'", kind: Begin, whyNot: "parse-error"},
		{sql: "USE d", kind: Use, whyNot: "not-select"},
		{sql: "DO SLEEP(1)", kind: Other, whyNot: "not-select"},
		{sql: "LOCK TABLES t WRITE", kind: Other, reads: tbls("t"), whyNot: "not-select"},
		// Garbage.
		{sql: "", kind: Other, whyNot: "empty"},
		{sql: "garbage here", kind: Other, whyNot: "parse-error", mayWrite: true, unmapped: true, global: true},
		{sql: "\x00\xff\xfe", kind: Other, whyNot: "parse-error", mayWrite: true, unmapped: true, global: true},
		{sql: "SELECT * FROM", kind: Select, whyNot: "parse-error"},
	}
	a := NewAnalyzer(Options{})
	for _, tt := range tests {
		t.Run(tt.sql, func(t *testing.T) {
			got := a.Analyze(tt.sql)
			if got.Kind != tt.kind {
				t.Errorf("Kind = %v, want %v", got.Kind, tt.kind)
			}
			if !reflect.DeepEqual(got.Reads, tt.reads) {
				t.Errorf("Reads = %v, want %v", got.Reads, tt.reads)
			}
			if !reflect.DeepEqual(got.Writes, tt.writes) {
				t.Errorf("Writes = %v, want %v", got.Writes, tt.writes)
			}
			if got.Cacheable != tt.cacheable || (tt.whyNot != "" && got.WhyNot != tt.whyNot) {
				t.Errorf("Cacheable, WhyNot = %v, %q, want %v, %q", got.Cacheable, got.WhyNot, tt.cacheable, tt.whyNot)
			}
			if got.MayWrite != tt.mayWrite || got.Unmapped != tt.unmapped || got.Global != tt.global {
				t.Errorf("MayWrite, Unmapped, Global = %v, %v, %v, want %v, %v, %v", got.MayWrite, got.Unmapped, got.Global, tt.mayWrite, tt.unmapped, tt.global)
			}
			if !reflect.DeepEqual(got.DBWide, tt.dbWide) {
				t.Errorf("DBWide = %q, want %q", got.DBWide, tt.dbWide)
			}
		})
	}
}

func TestSets(t *testing.T) {
	tests := []struct {
		sql  string
		want []SetVar
	}{
		{"SET NAMES utf8mb4 COLLATE utf8mb4_bin", []SetVar{
			{Name: "character_set_client", Value: "'utf8mb4'"},
			{Name: "character_set_connection", Value: "'utf8mb4'"},
			{Name: "character_set_results", Value: "'utf8mb4'"},
			{Name: "collation_connection", Value: "'utf8mb4_bin'"},
			{Name: ResultsCollation, Value: "'utf8mb4_bin'"},
		}},
		{"SET NAMES latin1", []SetVar{
			{Name: "character_set_client", Value: "'latin1'"},
			{Name: "character_set_connection", Value: "'latin1'"},
			{Name: "character_set_results", Value: "'latin1'"},
			{Name: "collation_connection", Value: "'latin1'"},
			{Name: ResultsCollation},
		}},
		// Character sets the parser does not know by name.
		{"SET NAMES sjis", []SetVar{
			{Name: "character_set_client", Value: "'sjis'"},
			{Name: "character_set_connection", Value: "'sjis'"},
			{Name: "character_set_results", Value: "'sjis'"},
			{Name: "collation_connection", Value: "'sjis'"},
			{Name: ResultsCollation},
		}},
		{"set names 'CP932' collate cp932_bin;", []SetVar{
			{Name: "character_set_client", Value: "'cp932'"},
			{Name: "character_set_connection", Value: "'cp932'"},
			{Name: "character_set_results", Value: "'cp932'"},
			{Name: "collation_connection", Value: "'cp932_bin'"},
			{Name: ResultsCollation, Value: "'cp932_bin'"},
		}},
		{"SET CHARACTER SET big5", []SetVar{
			{Name: "character_set_client", Value: "'big5'"},
			{Name: "character_set_results", Value: "'big5'"},
			{Name: ResultsCollation},
			{Name: "character_set_connection", Value: "@@character_set_database"},
		}},
		{"SET character_set_results = utf8mb4", []SetVar{{Name: "character_set_results", Value: "`utf8mb4`"}, {Name: ResultsCollation}}},
		{"SET @mycached_cache = 0", []SetVar{{Name: "mycached_cache", Value: "0", User: true}}},
		{"SET autocommit=0, GLOBAL max_connections = 10", []SetVar{{Name: "autocommit", Value: "0"}, {Name: "max_connections", Value: "10", Global: true}}},
		{"set session time_zone = \"+00:00\"", []SetVar{{Name: "time_zone", Value: "'+00:00'"}}},
		{"SET @@SESSION.sql_mode = 'ANSI'", []SetVar{{Name: "sql_mode", Value: "'ANSI'"}}},
		{"SET TRANSACTION ISOLATION LEVEL READ COMMITTED", []SetVar{{Name: "transaction", Value: "'READ-COMMITTED'"}}},
	}
	a := NewAnalyzer(Options{})
	for _, tt := range tests {
		got := a.Analyze(tt.sql)
		if got.Kind != Set || got.ParseError {
			t.Errorf("%s: Kind = %v, parse error %v, want set", tt.sql, got.Kind, got.ParseError)
		}
		if !reflect.DeepEqual(got.Sets, tt.want) {
			t.Errorf("%s: Sets = %+v, want %+v", tt.sql, got.Sets, tt.want)
		}
	}
	// Same digest, different value: must not share the analysis.
	x, y := a.Analyze("SET time_zone = '+01:00'"), a.Analyze("SET time_zone = '+02:00'")
	if x.Sets[0].Value == y.Sets[0].Value {
		t.Errorf("SET values shared across literals: %q", x.Sets[0].Value)
	}
}

func TestMiscFields(t *testing.T) {
	a := NewAnalyzer(Options{})
	if got := a.Analyze("START TRANSACTION READ ONLY"); !got.ReadOnlyTx || got.Kind != Begin {
		t.Errorf("ReadOnlyTx, Kind = %v, %v, want true, begin", got.ReadOnlyTx, got.Kind)
	}
	if got := a.Analyze("USE `My Db`"); got.UseDB != "My Db" {
		t.Errorf("UseDB = %q, want %q", got.UseDB, "My Db")
	}
	if got := a.Analyze("CREATE TEMPORARY TABLE tmp (a INT)"); !got.Temporary {
		t.Errorf("Temporary = false, want true")
	}
	if got := a.Analyze("DROP TEMPORARY TABLE tmp"); !got.Temporary {
		t.Errorf("Temporary = false, want true")
	}
	for _, q := range []string{"SELECT /*+ no_cache */ a FROM t", "/*+ NO_CACHE */ SELECT a FROM t", "SELECT SQL_NO_CACHE a FROM t"} {
		if got := a.Analyze(q); !got.NoCacheHint {
			t.Errorf("%s: NoCacheHint = false, want true", q)
		}
	}
	if got := a.Analyze("SELECT a FROM t"); got.NoCacheHint {
		t.Errorf("NoCacheHint = true, want false")
	}
}

// TestTableLocks: the texts after which the session holds table locks,
// and those after which it holds none, however they are written.
func TestTableLocks(t *testing.T) {
	a := NewAnalyzer(Options{})
	for _, c := range []struct {
		sql            string
		locks, unlocks bool
	}{
		{"LOCK TABLES t READ", true, false},
		{"lock table t write, u read", true, false},
		{"/*!40000 LOCK TABLES t READ */", true, false},
		{"/*M! LOCK TABLE t READ */", true, false},
		{"FLUSH TABLES t WITH READ LOCK", true, false},
		{"FLUSH TABLE t FOR EXPORT", true, false},
		{"DO 1; LOCK TABLES t READ", true, false},
		{"LOCK TABLES t READ; UNLOCK TABLES", false, true},
		{"UNLOCK TABLES", false, true},
		{"BEGIN", false, true},
		{"START TRANSACTION READ ONLY", false, true},
		{"FLUSH TABLES WITH READ LOCK", false, false}, // global: reads go on
		{"FLUSH TABLES", false, false},
		{"SELECT GET_LOCK('lock', 1)", false, false},
		{"SELECT a FROM t FOR UPDATE", false, false},
		{"SELECT 'LOCK TABLES t READ'", false, false},
	} {
		got := a.Analyze(c.sql)
		if got.LocksTables != c.locks || got.UnlocksTables != c.unlocks {
			t.Errorf("%s: LocksTables, UnlocksTables = %v, %v; want %v, %v", c.sql, got.LocksTables, got.UnlocksTables, c.locks, c.unlocks)
		}
	}
}

func TestDigestSharing(t *testing.T) {
	a := NewAnalyzer(Options{})
	// A range, not a point lookup: point values are never shared.
	x := a.Analyze("SELECT c FROM sbtest1 WHERE id>1")
	y := a.Analyze("/* trace=abc */ SELECT c FROM sbtest1 WHERE id>2")
	if x != y {
		t.Errorf("digest hit returned a new analysis; want the shared one")
	}
	if x.Digest != "select `c` from `sbtest1` where `id` > ?" {
		t.Errorf("Digest = %q", x.Digest)
	}
	// The digest lowercases identifiers; table names are case-sensitive.
	u := a.Analyze("SELECT * FROM Users WHERE id = 1")
	l := a.Analyze("SELECT * FROM users WHERE id = 2")
	if u.Digest != l.Digest {
		t.Fatalf("digests differ: %q, %q", u.Digest, l.Digest)
	}
	if u.Reads[0].Name != "Users" || l.Reads[0].Name != "users" {
		t.Errorf("Reads = %v, %v, want Users, users", u.Reads, l.Reads)
	}
	i1 := a.Analyze("INSERT INTO Users SELECT * FROM users")
	i2 := a.Analyze("INSERT INTO users SELECT * FROM Users")
	if i1.Writes[0].Name != "Users" || i2.Writes[0].Name != "users" {
		t.Errorf("Writes = %v, %v, want Users, users", i1.Writes, i2.Writes)
	}
	// The hint is invisible to the digest but must not be shared.
	h := a.Analyze("SELECT /*+ no_cache */ c FROM sbtest1 WHERE id>3")
	if !h.NoCacheHint || x.NoCacheHint {
		t.Errorf("NoCacheHint = %v (hinted), %v (plain), want true, false", h.NoCacheHint, x.NoCacheHint)
	}
}

func TestExactHitNoAlloc(t *testing.T) {
	a := NewAnalyzer(Options{})
	q := "SELECT c FROM sbtest1 WHERE id=42"
	first := a.Analyze(q)
	// A different string with the same bytes, as the proxy's packet buffer.
	q2 := string([]byte(q))
	if got := a.Analyze(q2); got != first {
		t.Errorf("exact hit returned a different *Info")
	}
	allocs := testing.AllocsPerRun(100, func() { a.Analyze(q2) })
	if allocs != 0 {
		t.Errorf("allocs per exact hit = %v, want 0", allocs)
	}
}

func TestMemoBounded(t *testing.T) {
	a := NewAnalyzer(Options{ExactCap: 64, DigestCap: 64})
	for i := 0; i < 5000; i++ {
		a.Analyze(fmt.Sprintf("SELECT c FROM t%d WHERE id=%d", i%300, i))
	}
	n, d := 0, 0
	for i := range a.exact.shards {
		n += len(a.exact.shards[i].m)
		d += len(a.digest.shards[i].m)
	}
	if n > 64+memoShards || d > 64+memoShards {
		t.Errorf("memo sizes = %d exact, %d digest, want <= %d", n, d, 64+memoShards)
	}
}

func TestKeyNotRetained(t *testing.T) {
	a := NewAnalyzer(Options{})
	buf := []byte("SELECT a FROM t1")
	a.Analyze(string(buf))
	copy(buf, "XXXXXXXXXXXXXXXX")
	if got := a.Analyze("SELECT a FROM t1"); got.Reads[0].Name != "t1" {
		t.Errorf("Reads = %v, want t1", got.Reads)
	}
}

func TestCacheableIn(t *testing.T) {
	a := NewAnalyzer(Options{})
	info := a.Analyze("SELECT * FROM tables")
	if ok, _ := info.CacheableIn("shop"); !ok {
		t.Errorf("CacheableIn(shop) = false, want true")
	}
	if ok, why := info.CacheableIn("INFORMATION_SCHEMA"); ok || why != "system-schema" {
		t.Errorf("CacheableIn(information_schema) = %v, %q, want false, system-schema", ok, why)
	}
	q := a.Analyze("SELECT * FROM shop.t")
	if ok, _ := q.CacheableIn("mysql"); !ok {
		t.Errorf("qualified table in mysql db: CacheableIn = false, want true")
	}
}

func TestQualify(t *testing.T) {
	ts := tbls("a.x", "y")
	got := Qualify(ts, "cur")
	if want := tbls("a.x", "cur.y"); !reflect.DeepEqual(got, want) {
		t.Errorf("Qualify = %v, want %v", got, want)
	}
	if ts[1].DB != "" {
		t.Errorf("Qualify modified its input")
	}
	full := tbls("a.x", "b.y")
	if allocs := testing.AllocsPerRun(10, func() { Qualify(full, "cur") }); allocs != 0 {
		t.Errorf("allocs = %v, want 0", allocs)
	}
}

func TestFirstKeyword(t *testing.T) {
	tests := []struct{ sql, want string }{
		{"select 1", "SELECT"},
		{"  /* c */ -- x\n # y\n\tInsert into t", "INSERT"},
		{"/*!40101 SET NAMES utf8 */", "SET"},
		{"(SELECT 1)", ""},
		{"", ""},
		{"--", ""},
		{"foo bar", "FOO"},
	}
	for _, tt := range tests {
		if got := FirstKeyword(tt.sql); got != tt.want {
			t.Errorf("FirstKeyword(%q) = %q, want %q", tt.sql, got, tt.want)
		}
	}
	if allocs := testing.AllocsPerRun(10, func() { FirstKeyword("/* x */ select 1") }); allocs != 0 {
		t.Errorf("allocs = %v, want 0", allocs)
	}
}

func TestKindString(t *testing.T) {
	want := "other select show insert update delete replace ddl begin commit rollback transaction set use call load"
	var got []string
	for k := Other; k <= LoadData; k++ {
		got = append(got, k.String())
	}
	if g := strings.Join(got, " "); g != want {
		t.Errorf("kinds = %q, want %q", g, want)
	}
}

func TestNeverPanics(t *testing.T) {
	a := NewAnalyzer(Options{})
	long := "SELECT " + strings.Repeat("a+", 100000) + "1 FROM t"
	for _, q := range []string{long, strings.Repeat("(", 10000), "'unterminated", "`x", "/* open", "SELECT '\\", "\xff\xfe\x00SELECT"} {
		_ = a.Analyze(q)
	}
	// Texts the parser refuses are read by their words: a word that
	// begins with a keyword looked for, and is longer, is another word.
	for _, q := range []string{"SELECT locked FROM t WHERE", "SELECT exports, locks FROM t WHERE", "BEGIN NOTHING", "BEGIN N"} {
		info := a.Analyze(q)
		if !info.ParseError || info.LocksTables || info.Kind == Other {
			t.Errorf("%q: parse error %v, locks tables %v, kind %v", q, info.ParseError, info.LocksTables, info.Kind)
		}
	}
}

func FuzzAnalyze(f *testing.F) {
	for _, s := range []string{"SELECT 1", "SELECT * FROM t WHERE a = 'x'", "SELECT * FROM t WHERE (a, b) IN ((1, ?), (2, ?)) AND c = 1", "/*+ no_cache */ SELECT 1; DROP TABLE t", "SET NAMES utf8", "`", "'", "/*!", "-- ",
		"SELECT locked FROM t WHERE", "BEGIN NOT ATOMIC SELECT 1; END", "CHECK TABLE t, db.u FOR UPGRADE",
		"REPAIR NO_WRITE_TO_BINLOG TABLE `a``b` QUICK", "ANALYZE TABLE t PERSISTENT FOR COLUMNS (a) INDEXES (b)"} {
		f.Add(s)
	}
	a := NewAnalyzer(Options{ExactCap: 100, DigestCap: 100})
	f.Fuzz(func(t *testing.T, s string) {
		info := a.Analyze(s)
		if info.Cacheable && info.Kind != Select {
			t.Errorf("cacheable %v", info.Kind)
		}
		if p := info.Point; p != nil {
			for _, r := range p.Rows {
				if len(r) != len(p.Cols) {
					t.Errorf("Point row %v has %d values for %d columns", r, len(r), len(p.Cols))
				}
			}
		}
		_ = FirstKeyword(s)
	})
}

// TestRefusedReadsMayCallRoutines: a read the parser refuses calls a
// stored function, as far as the analysis can tell, when a name that is
// not a built-in function's, a qualified name or a quoted one comes
// before "(".
func TestRefusedReadsMayCallRoutines(t *testing.T) {
	a := NewAnalyzer(Options{})
	for sql, want := range map[string]bool{
		"SELECT f() INTO @v":                                     true,
		"SELECT 1 INTO @v FROM dual WHERE f() = 1":               true,
		"VALUES (f())":                                           true,
		"SELECT * FROM (VALUES (f())) d":                         true,
		"SELECT db.abs(1) INTO @v":                               true,
		"SELECT `f`(1) INTO @v":                                  true,
		"SELECT \"f\"(1) INTO @v":                                true,
		"SELECT abs(1) INTO @v":                                  false,
		"VALUES (1), (2)":                                        false,
		"VALUES (1) UNION VALUES (2)":                            false,
		"SELECT CAST(1 AS CHAR(3)) INTO @v":                      false,
		"SELECT x FROM t WHERE id IN (1, 2) INTO @v":             false,
		"SELECT COUNT(*) FROM t WHERE EXISTS (SELECT 1) INTO @v": false,
	} {
		info := a.Analyze(sql)
		if !info.ParseError {
			t.Errorf("%s: parsed; the case is for the parser's refusals", sql)
		}
		if info.CallsRoutine != want {
			t.Errorf("%s: CallsRoutine = %v, want %v", sql, info.CallsRoutine, want)
		}
	}
}

// TestGetDiagnostics: GET DIAGNOSTICS alone reads the diagnostics and
// writes nothing, and is not a text that may run anything; followed by
// another statement, it is.
func TestGetDiagnostics(t *testing.T) {
	a := NewAnalyzer(Options{})
	for sql, alone := range map[string]bool{
		"GET DIAGNOSTICS @n = NUMBER":                           true,
		"get current diagnostics @n = number, @r = ROW_COUNT;":  true,
		"GET STACKED DIAGNOSTICS CONDITION 1 @m = MESSAGE_TEXT": true,
		"GET DIAGNOSTICS @n = NUMBER; UPDATE t SET a = 1":       false,
		"GET DIAGNOSTICS @n = NUMBER /*!; DELETE FROM t */":     false,
	} {
		info := a.Analyze(sql)
		if alone && (info.Kind != Show || info.ParseError || info.MayWrite || info.Cacheable || len(info.Writes) > 0 || info.Global) {
			t.Errorf("%s: kind %v, parse error %v, may write %v, cacheable %v, writes %v, global %v; want a read of nothing, not cached",
				sql, info.Kind, info.ParseError, info.MayWrite, info.Cacheable, info.Writes, info.Global)
		}
		if !alone && (info.Kind != Other || !info.ParseError || !info.Global) {
			t.Errorf("%s: kind %v, parse error %v, global %v; want a write of anything", sql, info.Kind, info.ParseError, info.Global)
		}
	}
}

// TestAnalysisOwnsItsStrings: an analysis holds no slice of its text, so
// one memoized by its short digest (an IN list of many values) does not
// keep the whole text alive.
func TestAnalysisOwnsItsStrings(t *testing.T) {
	sql := "SELECT * FROM db.tbl WHERE id IN (" + strings.Repeat("7,", 100000) + "7) AND k = 'x'"
	info := NewAnalyzer(Options{}).Analyze(sql)
	start := uintptr(unsafe.Pointer(unsafe.StringData(sql)))
	inside := func(s string) bool {
		p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
		return len(s) > 0 && p >= start && p < start+uintptr(len(sql))
	}
	if len(info.Reads) != 1 {
		t.Fatalf("Reads = %v", info.Reads)
	}
	for _, s := range []string{info.Reads[0].DB, info.Reads[0].Name, info.Digest, info.WhyNot} {
		if inside(s) {
			t.Errorf("%q is a slice of the statement's text", s)
		}
	}
	if p := info.Point; p != nil {
		for _, r := range p.Rows {
			for _, v := range r {
				if inside(v.Lit) {
					t.Errorf("literal %q is a slice of the statement's text", v.Lit)
				}
			}
		}
	}
}

// TestDated: the texts that make a TIME value, which takes the current
// date when read as a date, are told from those that do not.
func TestDated(t *testing.T) {
	a := NewAnalyzer(Options{})
	for q, want := range map[string]bool{
		"SELECT CAST(SEC_TO_TIME(36000 + id) AS DATETIME) FROM t":    true,
		"SELECT id, DATE(MAKETIME(10, id, 0)) FROM t":                true,
		"SELECT CAST(c AS TIME) FROM t":                              true,
		"SELECT CONVERT(c, TIME) FROM t":                             true,
		"SELECT TIMEDIFF(a, b) FROM t; SELECT 1":                     true,
		"SELECT 1; SELECT ADDTIME(a, '01:00') FROM t":                true,
		"SELECT TIME(a) FROM t":                                      true,
		"SELECT CAST(c AS DATETIME), DATE(d), COALESCE(a, b) FROM t": false,
		"SELECT id FROM t WHERE d > '2024-01-01'":                    false,
		"SELECT CAST(TIME '10:00:00' AS DATE) FROM t":                true,
		"SELECT TIMESTAMP({t '10:00:00'}) FROM t":                    true,
		"SELECT id FROM t WHERE d > DATE '2024-01-01'":               false,
		"SELECT id FROM t WHERE d < {ts '2024-01-01 10:00:00'}":      false,
		"SELECT id FROM t WHERE d = {d '2024-01-01'}":                false,
	} {
		info := a.Analyze(q)
		if got := info.Dated; got != want {
			t.Errorf("%s: Dated = %v, want %v", q, got, want)
		}
		// Typed literals are constants, not calls of stored functions.
		if ok, why := info.CacheableIn("d"); !ok && !strings.Contains(q, ";") {
			t.Errorf("%s: not cacheable: %s", q, why)
		}
	}
	// A stored function named as the parser names typed literals is
	// still one.
	for _, q := range []string{
		"SELECT `'tidb``.(dateliteral`('x') FROM t",
		"SELECT `'TIDB``.(TimeLiteral`('x'), DATE '2024-01-01' FROM t",
		"SELECT `'tidb``.(timestampliteral`('x') FROM t",
	} {
		if ok, _ := a.Analyze(q).CacheableIn("d"); ok {
			t.Errorf("%s: cacheable, but it calls a stored function", q)
		}
	}
}
