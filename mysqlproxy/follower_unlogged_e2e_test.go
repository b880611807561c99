package mysqlproxy_test

import (
	"database/sql"
	"testing"
	"time"

	"github.com/mycached/mycached/mysqlproxy"
)

// TestUnloggedWritesReachBoundedSidecars: writes the binlog does not show,
// made or announced through one sidecar, reach the other, whose bounded
// hits trust its own follower, within its bound: a session with
// sql_log_bin off, SET STATEMENT sql_log_bin = 0 FOR a write, MYCACHED
// INVALIDATE TABLE after a write made straight to the server unlogged,
// and a stored function that writes with sql_log_bin off, which the
// writing sidecar's other sessions do not get stale either.
func TestUnloggedWritesReachBoundedSidecars(t *testing.T) {
	m := testenvShared(t)
	f := startFleet(t, m, mysqlproxy.Config{Consistency: mysqlproxy.ConsistencyBounded})
	for _, q := range []string{
		"CREATE TABLE t (id INT PRIMARY KEY, v INT)",
		"CREATE TABLE t2 (id INT PRIMARY KEY, n INT)",
		"INSERT INTO t VALUES (1, 1)",
		"INSERT INTO t2 VALUES (1, 1)",
		"CREATE FUNCTION bump_t2() RETURNS INT DETERMINISTIC MODIFIES SQL DATA BEGIN UPDATE t2 SET n = n + 1 WHERE id = 1; RETURN 1; END",
	} {
		mustExec(t, f.direct, q)
	}
	f.sync(t)
	const q, q2 = "SELECT v FROM t WHERE id = 1", "SELECT n FROM t2 WHERE id = 1"
	for _, tc := range []struct {
		name   string
		read   string
		direct []string // run on one direct session first
		viaA   []string // then on one session through A
	}{
		{"sql_log_bin off", q, nil, []string{"SET SESSION sql_log_bin = 0", "UPDATE t SET v = v + 1 WHERE id = 1"}},
		{"SET STATEMENT sql_log_bin = 0 FOR", q, nil, []string{"SET STATEMENT sql_log_bin = 0 FOR UPDATE t SET v = v + 1 WHERE id = 1"}},
		{"MYCACHED INVALIDATE TABLE", q, []string{"SET SESSION sql_log_bin = 0", "UPDATE t SET v = v + 1 WHERE id = 1"}, []string{"MYCACHED INVALIDATE TABLE " + f.name + ".t"}},
		{"stored function", q2, nil, []string{"SET SESSION sql_log_bin = 0", "DO bump_t2()"}},
		{"stored function again", q2, nil, []string{"SET SESSION sql_log_bin = 0", "SELECT bump_t2()"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.warm(t, tc.read)
			// Each on one session, which the subtest keeps.
			run := func(pool *sql.DB, stmts []string) {
				t.Helper()
				if len(stmts) == 0 {
					return
				}
				c := conn(t, pool)
				for _, s := range stmts {
					execOn(t, c, s)
				}
			}
			run(f.direct, tc.direct)
			run(f.viaA, tc.viaA)
			want := dump(t, f.direct, tc.read)
			if got := dump(t, f.viaA, tc.read); got != want {
				t.Errorf("through the sidecar the write went through: %s, want %s", got, want)
			}
			waitFor(t, 5*time.Second, "the bounded sidecar to drop its entry", func() bool {
				return dump(t, f.viaB, tc.read) == want
			})
		})
	}
}

// TestUnloggedDDLThroughASidecar: DDL run with sql_log_bin off through
// one sidecar changes what a read depends on (the tables a view reads, a
// MERGE table's union) with no binlog event to tell the other sidecar.
// Its reads must not be keyed to the old tables: a later write to the
// new ones, through it or straight to the server, shows through it.
func TestUnloggedDDLThroughASidecar(t *testing.T) {
	for _, consistency := range []mysqlproxy.Consistency{mysqlproxy.ConsistencyStrict, mysqlproxy.ConsistencyBounded} {
		t.Run(string(consistency), func(t *testing.T) {
			m := testenvShared(t)
			f := startFleet(t, m, mysqlproxy.Config{Consistency: consistency})
			for _, q := range []string{
				"CREATE TABLE t (id INT PRIMARY KEY, v INT)", "INSERT INTO t VALUES (1, 10)",
				"CREATE TABLE u (id INT PRIMARY KEY, v INT)", "INSERT INTO u VALUES (1, 70)",
				"CREATE VIEW w AS SELECT * FROM t",
				"CREATE TABLE m1 (v INT) ENGINE=MyISAM", "INSERT INTO m1 VALUES (1)",
				"CREATE TABLE m2 (v INT) ENGINE=MyISAM", "INSERT INTO m2 VALUES (20)",
				"CREATE TABLE m3 (v INT) ENGINE=MyISAM", "INSERT INTO m3 VALUES (300)",
				"CREATE TABLE mm (v INT) ENGINE=MERGE UNION=(m1, m2)",
			} {
				mustExec(t, f.direct, q)
			}
			f.sync(t)
			for _, tc := range []struct {
				name, read, ddl, write string
			}{
				{"view", "SELECT SUM(v) FROM w", "CREATE OR REPLACE VIEW w AS SELECT * FROM u", "UPDATE u SET v = v + 1"},
				{"merge union", "SELECT SUM(v) FROM mm", "ALTER TABLE mm UNION=(m1, m3)", "UPDATE m3 SET v = v + 1"},
			} {
				t.Run(tc.name, func(t *testing.T) {
					f.warmAll(t, tc.read)
					a := conn(t, f.viaA)
					execOn(t, a, "SET SESSION sql_log_bin = 0")
					execOn(t, a, tc.ddl)
					execOn(t, a, "SET SESSION sql_log_bin = 1")
					// Read through B under the new definition, so that
					// it caches the read again.
					waitFor(t, 5*time.Second, "sidecar B to read the new definition", func() bool {
						return dump(t, f.viaB, tc.read) == dump(t, f.direct, tc.read)
					})
					dump(t, f.viaB, tc.read)
					for i, write := range []func(){
						func() { mustExec(t, f.viaB, tc.write) },
						func() { mustExec(t, f.direct, tc.write) },
					} {
						write()
						want := dump(t, f.direct, tc.read)
						if i == 0 && consistency == mysqlproxy.ConsistencyStrict {
							if got := dump(t, f.viaB, tc.read); got != want {
								t.Errorf("through B after its own write to the new table: %s, want %s", got, want)
							}
							continue
						}
						waitFor(t, 5*time.Second, "sidecar B to show the write to the new table", func() bool {
							return dump(t, f.viaB, tc.read) == want
						})
					}
				})
			}
		})
	}
}
