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
