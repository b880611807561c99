package mysqlproxy_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mycached/mycached/mysqlproxy"
	"github.com/mycached/mycached/mysqlproxy/internal/testenv"
)

// shippedScript is the path of a script that ships in scripts/.
func shippedScript(name string) string { return filepath.Join("..", "scripts", name) }

// writePolicy writes a policy script into dir and returns its path.
func writePolicy(t testing.TB, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// allowlistWith returns scripts/allowlist.lua with its table of ttls
// replaced by ttls, so a test runs the shipped logic on its own tables.
func allowlistWith(t testing.TB, ttls map[string]int) string {
	t.Helper()
	b, err := os.ReadFile(shippedScript("allowlist.lua"))
	if err != nil {
		t.Fatal(err)
	}
	src := string(b)
	const open = "local ttls = {\n"
	start := strings.Index(src, open)
	end := strings.Index(src[max(start, 0):], "\n}\n")
	if start < 0 || end < 0 {
		t.Fatalf("allowlist.lua: no %q ... \"}\" block to replace", open)
	}
	var block strings.Builder
	names := make([]string, 0, len(ttls))
	for name := range ttls {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		fmt.Fprintf(&block, "  [%q] = %d,\n", name, ttls[name])
	}
	return src[:start+len(open)] + block.String() + src[start+end+1:]
}

// dumpOn is dump for a querier, such as one connection of a pool.
func dumpOn(t testing.TB, c querier, q string) string {
	t.Helper()
	s, err := queryDump(context.Background(), c, q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return s
}

// metricValue returns the value of the unlabelled sample name in p's
// /metrics, or fails t when there is none.
func metricValue(t testing.TB, p *proxy, name string) float64 {
	t.Helper()
	body := metricsText(t, p)
	for _, l := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("/metrics: %q: %v", l, err)
			}
			return f
		}
	}
	t.Fatalf("/metrics has no %s:\n%s", name, body)
	return 0
}

// TestPolicyAllowlist: the decisions of allowlist.lua, and of a script
// loaded after it that sets scope and depends (a name quoted as SQL
// quotes it), show in MariaDB's counters.
func TestPolicyAllowlist(t *testing.T) {
	t.Parallel()
	m := privateDB(t)
	db := m.NewDatabase(t)
	for _, tb := range []string{"listed", "unlisted", "brief", "shared", "report", "events"} {
		m.Exec(t, "CREATE TABLE "+db+"."+tb+" (id INT PRIMARY KEY, v INT)")
		m.Exec(t, "INSERT INTO "+db+"."+tb+" VALUES (1, 10), (2, 20)")
	}
	for _, u := range []string{"alice", "bob"} {
		m.Exec(t, fmt.Sprintf("CREATE USER '%s'@'%%' IDENTIFIED BY 'pw'", u))
		m.Exec(t, fmt.Sprintf("GRANT SELECT ON %s.* TO '%s'@'%%'", db, u))
	}
	dir := t.TempDir()
	allow := writePolicy(t, dir, "allowlist.lua", allowlistWith(t, map[string]int{
		db + ".listed": 300, db + ".brief": 1, db + ".shared": 300, db + ".report": 300,
	}))
	// Loaded after the allowlist, this wraps its decisions.
	extras := writePolicy(t, dir, "extras.lua", fmt.Sprintf(`
function cache(q, next)
  local d = next(q)
  if d == nil then
    return nil
  end
  if q.tables[1] == %[1]q then
    d.scope = "shared"
  elseif q.tables[1] == %[2]q then
    d.depends = { %[3]q }
  end
  return d
end
`, db+".shared", db+".report", "`"+db+"`.`events`"))
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr, Policy: []string{allow, extras}})
	root := conn(t, openDB(t, rootDSN(p.addr, db, "")))
	direct := openDB(t, rootDSN(m.Addr, db, ""))

	// twice reads q twice and returns how many SELECTs MariaDB ran for
	// the second read, checking that both returned MariaDB's rows.
	twice := func(t *testing.T, c querier, q string) int64 {
		t.Helper()
		want := dump(t, direct, q)
		first, _ := counted(t, m, c, q)
		second, n := counted(t, m, c, q)
		if first != want || second != want {
			t.Errorf("%s: got %s then %s, want %s", q, first, second, want)
		}
		return n
	}

	t.Run("unlisted is never cached", func(t *testing.T) {
		for i := 0; i < 3; i++ {
			if n := twice(t, root, "SELECT v FROM unlisted WHERE id = 1"); n != 1 {
				t.Errorf("repeat %d: MariaDB executed %d SELECTs, want 1", i, n)
			}
		}
	})
	t.Run("listed is cached", func(t *testing.T) {
		if n := twice(t, root, "SELECT v FROM listed WHERE id = 1"); n != 0 {
			t.Errorf("repeat: MariaDB executed %d SELECTs, want 0", n)
		}
		// A join with an unlisted table is not.
		if n := twice(t, root, "SELECT l.v, u.v FROM listed l JOIN unlisted u USING (id)"); n != 1 {
			t.Errorf("join with unlisted, repeat: MariaDB executed %d SELECTs, want 1", n)
		}
	})
	t.Run("ttl of 1s expires", func(t *testing.T) {
		const q = "SELECT v FROM brief WHERE id = 1"
		if n := twice(t, root, q); n != 0 {
			t.Errorf("repeat within the ttl: MariaDB executed %d SELECTs, want 0", n)
		}
		time.Sleep(1200 * time.Millisecond) // wait out the ttl under test
		if _, n := counted(t, m, root, q); n != 1 {
			t.Errorf("read past the ttl: MariaDB executed %d SELECTs, want 1", n)
		}
		if _, n := counted(t, m, root, q); n != 0 {
			t.Errorf("read after the refill: MariaDB executed %d SELECTs, want 0", n)
		}
	})
	t.Run("scope shared", func(t *testing.T) {
		alice := conn(t, openDB(t, testenv.DSNFor(p.addr, "alice", "pw", db, "")))
		bob := conn(t, openDB(t, testenv.DSNFor(p.addr, "bob", "pw", db, "")))
		for _, tc := range []struct {
			table string
			want  int64 // SELECTs MariaDB runs for bob's read of a row alice read
		}{
			{"shared", 0},
			{"listed", 1}, // per user, the default
		} {
			q1, q2 := "SELECT v FROM "+tc.table+" WHERE id = 1", "SELECT v FROM "+tc.table+" WHERE id = 2"
			for _, q := range []string{q1, q2} {
				if got, n := counted(t, m, alice, q); n != 1 || got != dump(t, direct, q) {
					t.Errorf("alice %s: got %s with %d SELECTs, want MariaDB's rows with 1", q, got, n)
				}
			}
			// Bob's first read of the shape asks the server whether he
			// may, whatever the scope.
			if got, n := counted(t, m, bob, q2); n != 1 || got != dump(t, direct, q2) {
				t.Errorf("bob %s after alice: got %s with %d SELECTs, want MariaDB's rows with 1", q2, got, n)
			}
			if got, n := counted(t, m, bob, q1); n != tc.want || got != dump(t, direct, q1) {
				t.Errorf("bob %s after alice: got %s with %d SELECTs, want MariaDB's rows with %d", q1, got, n, tc.want)
			}
		}
	})
	t.Run("scope shared serves no account the server refuses", func(t *testing.T) {
		m.Exec(t, "CREATE USER 'mallory'@'%' IDENTIFIED BY 'pw'")
		m.Exec(t, "CREATE USER 'carol'@'%' IDENTIFIED BY 'pw'")
		m.Exec(t, fmt.Sprintf("GRANT SELECT (id) ON %s.shared TO 'carol'@'%%'", db))
		m.Exec(t, "CREATE USER 'dan'@'%' IDENTIFIED BY 'pw'")
		m.Exec(t, fmt.Sprintf("GRANT SELECT ON %s.* TO 'dan'@'%%'", db))
		as := func(user string) *sql.Conn { return conn(t, openDB(t, testenv.DSNFor(p.addr, user, "pw", "", ""))) }
		directAs := func(user string) *sql.DB { return openDB(t, testenv.DSNFor(m.Addr, user, "pw", "", "")) }
		cdump := func(c *sql.Conn, q string) string {
			t.Helper()
			got, err := queryDump(context.Background(), c, q)
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			return got
		}
		qv := "SELECT v FROM " + db + ".shared WHERE id = 1"
		qid := "SELECT id FROM " + db + ".shared WHERE id = 1"
		alice := as("alice")
		for _, q := range []string{qv, qid} {
			for range 3 {
				cdump(alice, q)
			}
			if _, n := counted(t, m, alice, q); n != 0 {
				t.Fatalf("alice %s: MariaDB executed %d SELECTs, want a hit", q, n)
			}
		}
		// refused checks that user's reads of q fail as they do directly.
		refused := func(user, q string, code uint16) {
			t.Helper()
			c := as(user)
			for i := range 3 {
				_, err := queryDump(context.Background(), c, q)
				if err == nil || mysqlErr(t, err).Number != code {
					t.Errorf("%s try %d, %s: got %v, want error %d", user, i, q, err, code)
				}
			}
			if _, err := queryDump(context.Background(), directAs(user), q); err == nil || mysqlErr(t, err).Number != code {
				t.Errorf("%s directly, %s: got %v, want error %d", user, q, err, code)
			}
		}
		refused("mallory", qv, 1142)
		refused("mallory", qid, 1142)
		refused("carol", qv, 1143)
		if got, want := cdump(as("carol"), qid), dump(t, direct, qid); got != want {
			t.Errorf("carol %s: got %s, want %s", qid, got, want)
		}
		dan := as("dan")
		for range 2 {
			cdump(dan, qv)
		}
		if _, n := counted(t, m, dan, qv); n != 0 {
			t.Fatalf("dan %s: MariaDB executed %d SELECTs, want a hit", qv, n)
		}
		// A REVOKE through mycached; alice fills the entry again.
		execOn(t, root, fmt.Sprintf("REVOKE SELECT ON %s.* FROM 'dan'@'%%'", db))
		cdump(alice, qv)
		cdump(alice, qv)
		refused("dan", qv, 1142)
		if _, err := queryDump(context.Background(), dan, qv); err == nil || mysqlErr(t, err).Number != 1142 {
			t.Errorf("dan's own session after the REVOKE, %s: got %v, want error 1142", qv, err)
		}

		// Mallory's miss joins alice's fill of the same key, held up by
		// a lock: its answer is alice's, not hers.
		qf := "SELECT v FROM " + db + ".shared WHERE id = 2"
		lock := conn(t, direct)
		if _, err := lock.ExecContext(context.Background(), "LOCK TABLES "+db+".shared WRITE"); err != nil {
			t.Fatal(err)
		}
		aliceDone, malloryDone := make(chan error, 1), make(chan error, 1)
		go func() { _, err := queryDump(context.Background(), alice, qf); aliceDone <- err }()
		waitFor(t, 10*time.Second, "alice's read to wait on the lock", func() bool {
			return readInt(t, direct, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = 'alice' AND INFO = '"+qf+"'") == 1
		})
		mallory := as("mallory")
		go func() { _, err := queryDump(context.Background(), mallory, qf); malloryDone <- err }()
		// Mallory waits on alice's fill, not on the server.
		time.Sleep(300 * time.Millisecond)
		if n := readInt(t, direct, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = 'mallory' AND INFO = '"+qf+"'"); n != 0 {
			t.Logf("mallory's read reached the server before alice's fill ended (%d): the fill was not shared", n)
		}
		if _, err := lock.ExecContext(context.Background(), "UNLOCK TABLES"); err != nil {
			t.Fatal(err)
		}
		if err := <-aliceDone; err != nil {
			t.Errorf("alice %s: %v", qf, err)
		}
		if err := <-malloryDone; err == nil || mysqlErr(t, err).Number != 1142 {
			t.Errorf("mallory %s, sharing alice's fill: got %v, want error 1142", qf, err)
		}
	})
	t.Run("depends", func(t *testing.T) {
		const report, listed = "SELECT SUM(v) FROM report", "SELECT SUM(v) FROM listed"
		for _, q := range []string{report, listed} {
			if n := twice(t, root, q); n != 0 {
				t.Fatalf("%s repeat: MariaDB executed %d SELECTs, want 0", q, n)
			}
		}
		// A write to events, which neither read names.
		execOn(t, root, "INSERT INTO events VALUES (3, 30)")
		if _, n := counted(t, m, root, report); n != 1 {
			t.Errorf("%s after a write to events: MariaDB executed %d SELECTs, want 1 (depends)", report, n)
		}
		if _, n := counted(t, m, root, listed); n != 0 {
			t.Errorf("%s after a write to events: MariaDB executed %d SELECTs, want 0", listed, n)
		}
	})
}

// TestPolicyInfiniteLoop: a cache hook that never returns is killed at
// its deadline, every query is still served with the right rows, and the
// kill count in /metrics moves.
func TestPolicyInfiniteLoop(t *testing.T) {
	t.Parallel()
	m := testenvShared(t)
	db := m.NewDatabase(t)
	m.Exec(t, "CREATE TABLE "+db+".t (id INT PRIMARY KEY, v INT)")
	m.Exec(t, "INSERT INTO "+db+".t VALUES (1, 10), (2, 20), (3, 30)")
	loop := writePolicy(t, t.TempDir(), "loop.lua", "function cache(q)\n  while true do end\nend\n")
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr, Policy: []string{loop}})
	pr := openPair(t, m, p, db, "")
	before := metricValue(t, p, "mycached_policy_kills")
	const reads = 6
	for i := 0; i < reads; i++ {
		q := fmt.Sprintf("SELECT id, v FROM t WHERE id <= %d ORDER BY id", i%3+1)
		// A stalled proxy fails here instead of hanging the test binary;
		// the bound is far above the test deadline plus the query.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		want, err := queryDump(ctx, pr.direct, q)
		if err != nil {
			t.Fatalf("direct %s: %v", q, err)
		}
		got, err := queryDump(ctx, pr.proxied, q)
		cancel()
		if err != nil {
			t.Fatalf("read %d through the proxy: %v", i, err)
		}
		if got != want {
			t.Errorf("read %d: got %s, want %s", i, got, want)
		}
	}
	if after := metricValue(t, p, "mycached_policy_kills"); after < before+reads {
		t.Errorf("mycached_policy_kills: got %v after %d reads, want at least %v", after, reads, before+reads)
	}
	if !strings.Contains(p.logs.String(), "loop.lua:") {
		t.Errorf("log does not name loop.lua:line:\n%s", p.logs.String())
	}
}

// TestPolicyBrokenScripts: a hook that raises an error or returns a
// result of the wrong shape costs nothing but the decision; the queries
// are served, and the log names the script's file and line.
func TestPolicyBrokenScripts(t *testing.T) {
	t.Parallel()
	m := testenvShared(t)
	db := m.NewDatabase(t)
	tests := []struct {
		name, script, site, metric string
	}{
		{"cache error", "-- fails on every call\nfunction cache(q)\n  error(\"boom\")\nend\n",
			"cache-error.lua:3", "mycached_policy_errors"},
		{"cache nil index", "function cache(q)\n  local t = nil\n  return t.ttl\nend\n",
			"cache-nil-index.lua:3", "mycached_policy_errors"},
		{"cache garbage", "\n\nfunction cache(q)\n  return { ttl = \"soon\", scope = 42 }\nend\n",
			"cache-garbage.lua:3", "mycached_policy_bad_results"},
		{"cache not a table", "function cache(q)\n  return 42\nend\n",
			"cache-not-a-table.lua:1", "mycached_policy_bad_results"},
		{"query garbage", "\nfunction query(q)\n  return 42\nend\n",
			"query-garbage.lua:2", "mycached_policy_bad_results"},
		{"query error", "\n\n\nfunction query(q)\n  return q.sql .. nil\nend\n",
			"query-error.lua:5", "mycached_policy_errors"},
		{"invalidate garbage", "function invalidate(w)\n  return { 1, {} }\nend\n",
			"invalidate-garbage.lua:1", "mycached_policy_bad_results"},
	}
	for ti, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// A table of its own: the subtests run at once, and each
			// compares reads through the proxy with reads direct.
			tbl := fmt.Sprintf("t%d", ti)
			m.Exec(t, "CREATE TABLE "+db+"."+tbl+" (id INT PRIMARY KEY, v INT)")
			m.Exec(t, "INSERT INTO "+db+"."+tbl+" VALUES (1, 10), (2, 20)")
			name := strings.ReplaceAll(tt.name, " ", "-") + ".lua"
			file := writePolicy(t, t.TempDir(), name, tt.script)
			p := startProxy(t, mysqlproxy.Config{Backend: m.Addr, Policy: []string{file}})
			pr := openPair(t, m, p, db, "")
			before := metricValue(t, p, tt.metric)
			for i := 0; i < 3; i++ {
				pr.sameResults(t, "SELECT id, v FROM "+tbl+" ORDER BY id")
			}
			if _, err := pr.proxied.Exec("UPDATE " + tbl + " SET v = v + 1 WHERE id = 2"); err != nil {
				t.Fatalf("UPDATE through the proxy: %v", err)
			}
			pr.sameResults(t, "SELECT id, v FROM "+tbl+" ORDER BY id")
			if after := metricValue(t, p, tt.metric); after <= before {
				t.Errorf("%s: got %v, want more than %v", tt.metric, after, before)
			}
			logs := p.logs.String()
			if !strings.Contains(logs, name+":") {
				t.Fatalf("log does not name %s:\n%s", name, logs)
			}
			if !strings.Contains(logs, tt.site) {
				t.Errorf("log names %s, want %s:\n%s", grepLines(logs, name), tt.site, logs)
			}
		})
	}
}

// TestPolicyInvalidateFails: an invalidate() hook that fails (an error,
// its deadline, a malformed result) may have named any table: the write
// invalidates everything. Here, without a follower, the hook is what
// tells mycached of the table a trigger writes.
func TestPolicyInvalidateFails(t *testing.T) {
	t.Parallel()
	m := testenvShared(t)
	for i, body := range []string{
		`error("down")`,
		`while true do end`,
		`return { 1, {} }`,
	} {
		db := m.NewDatabase(t)
		m.Exec(t, "CREATE TABLE "+db+".src (id INT PRIMARY KEY, v INT)")
		m.Exec(t, "CREATE TABLE "+db+".dst (id INT PRIMARY KEY, n INT)")
		m.Exec(t, "INSERT INTO "+db+".src VALUES (1, 0)")
		m.Exec(t, "INSERT INTO "+db+".dst VALUES (1, 0)")
		m.Exec(t, "CREATE TRIGGER "+db+".src_au AFTER UPDATE ON "+db+".src FOR EACH ROW UPDATE "+db+".dst SET n = n + 1")
		script := "function invalidate(w)\n  if w.tables[1] == \"" + db + ".src\" then " + body + " end\n  return nil\nend\n"
		file := writePolicy(t, t.TempDir(), fmt.Sprintf("p%d.lua", i), script)
		p := startProxy(t, mysqlproxy.Config{Backend: m.Addr, Policy: []string{file}, PolicyTimeout: 20 * time.Millisecond})
		pr := openPair(t, m, p, db, "")
		const q = "SELECT n FROM dst WHERE id = 1"
		for range 3 {
			pr.sameResults(t, q)
		}
		if hits(t, pr.proxied) == 0 {
			t.Fatal("the read is not cached; the test proves nothing")
		}
		if _, err := pr.proxied.Exec("UPDATE src SET v = v + 1 WHERE id = 1"); err != nil {
			t.Fatal(err)
		}
		pr.sameResults(t, q)
	}
}

// TestPolicyReload: a reload that fails keeps the old decisions and names
// the file and line; one that succeeds changes decisions for the
// connections already open, which keep working.
func TestPolicyReload(t *testing.T) {
	t.Parallel()
	m := privateDB(t)
	db := m.NewDatabase(t)
	m.Exec(t, "CREATE TABLE "+db+".t (id INT PRIMARY KEY, v INT)")
	m.Exec(t, "INSERT INTO "+db+".t VALUES (1, 10), (2, 20), (3, 30)")
	const cacheAll = "-- caches every cacheable read\nfunction cache(q, next)\n  return next(q)\nend\n"
	const cacheNone = "-- caches nothing\nfunction cache(q)\n  return nil\nend\n"
	broken := []struct{ name, script, site string }{
		{"syntax", "function cache(q)\n  return {\nend\n", "policy.lua:3"},
		{"top level", "local x = 1\n\nerror(\"no\")\nfunction cache(q) return nil end\n", "policy.lua:3"},
	}
	file := writePolicy(t, t.TempDir(), "policy.lua", cacheAll)
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr, Policy: []string{file}})
	c := conn(t, openDB(t, rootDSN(p.addr, db, "")))
	id := connID(t, c)
	write := func(text string) {
		t.Helper()
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// again reads q twice and returns how many SELECTs MariaDB ran for
	// the second read: 0 when the policy caches q, 1 when it does not.
	again := func(q string) int64 {
		t.Helper()
		counted(t, m, c, q)
		_, n := counted(t, m, c, q)
		return n
	}
	if n := again("SELECT v FROM t WHERE id = 1"); n != 0 {
		t.Fatalf("cacheAll: a repeated read ran %d SELECTs, want 0", n)
	}

	for _, b := range broken {
		write(b.script)
		err := p.srv.ReloadPolicy()
		if err == nil || !strings.Contains(err.Error(), b.site) {
			t.Errorf("ReloadPolicy of a %s error: got %v, want an error naming %s", b.name, err, b.site)
		}
		if n := again("SELECT v FROM t WHERE id = 2"); n != 0 {
			t.Errorf("after the failed %s reload: a repeated read ran %d SELECTs, want 0 (old policy)", b.name, n)
		}
	}
	if !strings.Contains(p.logs.String(), "policy.lua:3") {
		t.Errorf("log does not name policy.lua:3:\n%s", p.logs.String())
	}

	write(cacheNone)
	if err := p.srv.ReloadPolicy(); err != nil {
		t.Fatalf("ReloadPolicy of a good script: %v", err)
	}
	// The first read is still in the cache; the new policy does not use
	// it, nor cache another.
	for _, q := range []string{"SELECT v FROM t WHERE id = 1", "SELECT v FROM t WHERE id = 3"} {
		if n := again(q); n != 1 {
			t.Errorf("cacheNone: a repeated read of %s ran %d SELECTs, want 1", q, n)
		}
	}

	// The same through SQL, as root, on the same connection.
	for _, b := range broken {
		write(b.script)
		_, err := c.ExecContext(context.Background(), "MYCACHED RELOAD POLICY")
		if err == nil {
			t.Errorf("MYCACHED RELOAD POLICY of a %s error: no error", b.name)
		} else if e := mysqlErr(t, err); e.Number != 1105 || !strings.Contains(e.Message, b.site) {
			t.Errorf("MYCACHED RELOAD POLICY of a %s error: got %d %s, want 1105 naming %s", b.name, e.Number, e.Message, b.site)
		}
		if n := again("SELECT v FROM t WHERE id = 2"); n != 1 {
			t.Errorf("after the failed %s reload: a repeated read ran %d SELECTs, want 1 (old policy)", b.name, n)
		}
		if got := policyStatus(t, c, "Policy_reload_error"); !strings.Contains(got, b.site) {
			t.Errorf("SHOW MYCACHED STATUS after the failed %s reload: Policy_reload_error %q, want it naming %s", b.name, got, b.site)
		}
	}
	write(cacheAll)
	execOn(t, c, "MYCACHED RELOAD POLICY")
	if got := policyStatus(t, c, "Policy_reload_error"); got != "" {
		t.Errorf("SHOW MYCACHED STATUS after a good reload: Policy_reload_error %q, want none", got)
	}
	if got := policyStatus(t, c, "Policy_scripts"); got != file {
		t.Errorf("SHOW MYCACHED STATUS: Policy_scripts %q, want %q", got, file)
	}
	if n := again("SELECT v FROM t WHERE id = 3"); n != 0 {
		t.Errorf("cacheAll again: a repeated read ran %d SELECTs, want 0", n)
	}
	if got := connID(t, c); got != id {
		t.Errorf("connection id after the reloads: got %d, want %d (the same connection)", got, id)
	}
}

// policyStatus returns a row of SHOW MYCACHED STATUS as text.
func policyStatus(t *testing.T, c *sql.Conn, name string) string {
	t.Helper()
	var n, v string
	if err := c.QueryRowContext(context.Background(), "SHOW MYCACHED STATUS LIKE '"+name+"'").Scan(&n, &v); err != nil {
		t.Fatalf("SHOW MYCACHED STATUS LIKE '%s': %v", name, err)
	}
	return v
}

// TestPolicyQueryHook: custom-command.lua answers SHOW APP VERSION in the
// proxy, and tag-statements.lua's rewrite is what MariaDB runs.
func TestPolicyQueryHook(t *testing.T) {
	t.Parallel()
	m := privateDB(t)
	db := m.NewDatabase(t)
	m.Exec(t, "CREATE TABLE "+db+".t (id INT PRIMARY KEY, v INT)")
	m.Exec(t, "INSERT INTO "+db+".t VALUES (1, 10), (2, 20)")
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr,
		Policy: []string{shippedScript("custom-command.lua"), shippedScript("tag-statements.lua")}})
	c := conn(t, openDB(t, rootDSN(p.addr, db, "")))
	direct := openDB(t, rootDSN(m.Addr, db, ""))

	t.Run("custom command", func(t *testing.T) {
		// The backend session's own count of statements shows whether
		// SHOW APP VERSION reached it.
		questions := func() int64 {
			t.Helper()
			var name string
			var n int64
			if err := c.QueryRowContext(context.Background(), "SHOW SESSION STATUS LIKE 'Questions'").Scan(&name, &n); err != nil {
				t.Fatalf("SHOW SESSION STATUS: %v", err)
			}
			return n
		}
		q0 := questions()
		q1 := questions()
		for i := 0; i < 3; i++ {
			got, err := queryDump(context.Background(), c, "SHOW APP VERSION")
			if err != nil {
				t.Fatalf("SHOW APP VERSION: %v", err)
			}
			if want := "result 0: version(VARCHAR) built(VARCHAR)\n\"1.4.2\"|\"2024-06-01\"\n"; !strings.EqualFold(got, want) {
				t.Errorf("SHOW APP VERSION: got %q, want %q", got, want)
			}
		}
		if q2 := questions(); q2-q1 != q1-q0 {
			t.Errorf("backend statements around 3 SHOW APP VERSION: got %d, want %d (only the status query)", q2-q1, q1-q0)
		}
	})

	t.Run("tag", func(t *testing.T) {
		const self = "SELECT INFO FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()"
		var info string
		if err := c.QueryRowContext(context.Background(), self).Scan(&info); err != nil {
			t.Fatalf("%s: %v", self, err)
		}
		if want := "/* app=shop user=root */ " + self; info != want {
			t.Errorf("the statement MariaDB ran: got %q, want %q", info, want)
		}
		// Tagged reads are cached and return MariaDB's rows.
		const q = "SELECT id, v FROM t ORDER BY id"
		want := dump(t, direct, q)
		counted(t, m, c, q)
		if got, n := counted(t, m, c, q); n != 0 || got != want {
			t.Errorf("second tagged read: got %s with %d SELECTs, want %s with 0", got, n, want)
		}
		execOn(t, c, "UPDATE t SET v = 21 WHERE id = 2")
		if got, want := dumpOn(t, c, q), dump(t, direct, q); got != want {
			t.Errorf("tagged read after a tagged write: got %s, want %s", got, want)
		}
	})

	t.Run("prepared statements are tagged", func(t *testing.T) {
		// go-sql-driver prepares a statement with arguments on the server.
		const self = "SELECT INFO FROM information_schema.PROCESSLIST WHERE ID = ?"
		var id int64
		if err := c.QueryRowContext(context.Background(), "SELECT CONNECTION_ID()").Scan(&id); err != nil {
			t.Fatal(err)
		}
		var info string
		if err := c.QueryRowContext(context.Background(), self, id).Scan(&info); err != nil {
			t.Fatalf("%s: %v", self, err)
		}
		if want := "/* app=shop user=root */ " + self; info != want {
			t.Errorf("the statement MariaDB prepared: got %q, want %q", info, want)
		}
		// SHOW APP VERSION cannot be answered at PREPARE: the server
		// prepares it, and refuses it as it would directly.
		_, err := c.PrepareContext(context.Background(), "SHOW APP VERSION")
		if err == nil || mysqlErr(t, err).Number != 1064 {
			t.Errorf("prepare of SHOW APP VERSION: %v, want the server's 1064", err)
		}
	})

	t.Run("user names stay in the comment", func(t *testing.T) {
		user := "*/ DELETE FROM " + db + ".t -- "
		m.Exec(t, "CREATE USER '"+user+"'@'%' IDENTIFIED BY 'pw'")
		m.Exec(t, "GRANT SELECT, DELETE ON "+db+".* TO '"+user+"'@'%'")
		u := openDB(t, testenv.DSNFor(p.addr, user, "pw", db, ""))
		if got := readInt(t, u, "SELECT 1"); got != 1 {
			t.Errorf("SELECT 1 as %q: got %d", user, got)
		}
		if n := readInt(t, direct, "SELECT COUNT(*) FROM t"); n != 2 {
			t.Errorf("t has %d rows after a statement from %q, want 2", n, user)
		}
	})

	// The tagger rewrites mycached's own pseudo-queries too; the proxy
	// must still answer them rather than send MariaDB a syntax error, or
	// a policy that tags statements could not be reloaded through SQL.
	t.Run("admin commands pass the tagger", func(t *testing.T) {
		for _, q := range []string{"SHOW MYCACHED STATUS", "MYCACHED RELOAD POLICY"} {
			if _, err := c.ExecContext(context.Background(), q); err != nil {
				t.Errorf("%s through tag-statements.lua: %v", q, err)
			}
		}
		// MariaDB accepts this one as a user variable, so only its effect
		// shows whether the proxy saw it.
		const q = "SELECT v FROM t WHERE id = 1"
		execOn(t, c, "SET @mycached_cache = 0")
		counted(t, m, c, q)
		if _, n := counted(t, m, c, q); n != 1 {
			t.Errorf("repeated read after SET @mycached_cache = 0 through tag-statements.lua: MariaDB executed %d SELECTs, want 1", n)
		}
		execOn(t, c, "SET @mycached_cache = 1")
	})
}

// TestPolicyORMEntities: with orm-entities.lua a point lookup outlives a
// range read of the same table.
func TestPolicyORMEntities(t *testing.T) {
	t.Parallel()
	m := privateDB(t)
	db := m.NewDatabase(t)
	m.Exec(t, "CREATE TABLE "+db+".e (id INT PRIMARY KEY, v INT)")
	m.Exec(t, "INSERT INTO "+db+".e VALUES (1, 10), (2, 20), (3, 30)")
	p := startProxy(t, withBinlog(mysqlproxy.Config{Backend: m.Addr, Policy: []string{shippedScript("orm-entities.lua")}}))
	c := conn(t, openDB(t, rootDSN(p.addr, db, "")))
	const point, rng = "SELECT v FROM e WHERE id = 2", "SELECT id, v FROM e WHERE id >= 2 ORDER BY id"
	for _, q := range []string{point, rng} {
		counted(t, m, c, q)
		if _, n := counted(t, m, c, q); n != 0 {
			t.Fatalf("%s repeat: MariaDB executed %d SELECTs, want 0", q, n)
		}
	}
	time.Sleep(5500 * time.Millisecond) // wait out the script's 5 s ttl for other reads
	if _, n := counted(t, m, c, point); n != 0 {
		t.Errorf("point lookup past 5 s: MariaDB executed %d SELECTs, want 0 (1 h ttl)", n)
	}
	if _, n := counted(t, m, c, rng); n != 1 {
		t.Errorf("range read past 5 s: MariaDB executed %d SELECTs, want 1 (5 s ttl)", n)
	}
}

// TestPolicyPreparedParams: a script reads an execute's parameters in
// q.params, by type, and decides by them: the reads it caches are hits
// on the second execute, and the others go to the server each time.
func TestPolicyPreparedParams(t *testing.T) {
	t.Parallel()
	m := testenvShared(t)
	db := m.NewDatabase(t)
	m.Exec(t, "CREATE TABLE "+db+".e (id INT PRIMARY KEY, v VARCHAR(10))")
	m.Exec(t, "INSERT INTO "+db+".e VALUES (1, 'a'), (2, 'b')")
	script := writePolicy(t, t.TempDir(), "params.lua", `
local mc = require("mycached")
function cache(q, next)
  if not q.prepared then return nil end
  local p = q.params
  if #p ~= 3 or p[1] ~= 1 or p[2] ~= "a" or p[3] ~= mc.null then return nil end
  local d = next(q)
  if d then d.admit = "always" end
  return d
end
`)
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr, Policy: []string{script}})
	via := openDB(t, rootDSN(p.addr, db, ""))
	c := conn(t, via)
	const q = "SELECT v FROM e WHERE id = ? AND v = ? AND ? IS NULL"
	for _, tc := range []struct {
		args   []any
		cached bool
	}{
		{[]any{1, "a", nil}, true},
		{[]any{2, "a", nil}, false},
		{[]any{1, "b", nil}, false},
		{[]any{1, "a", 0}, false},
	} {
		var hit int64
		for range 2 {
			before := hits(t, via)
			rows, err := c.QueryContext(context.Background(), q, tc.args...)
			if err != nil {
				t.Fatalf("%v: %v", tc.args, err)
			}
			rows.Close()
			hit = hits(t, via) - before
		}
		if hit != 0 != tc.cached {
			t.Errorf("%v: the second execute was a hit: %v, want %v", tc.args, hit != 0, tc.cached)
		}
	}
}

// TestPolicyFKCascade: a cascading delete changes a child table without a
// statement naming it. With the default policy the child's cached reads
// are stale afterwards; with fk-cascade.lua given the graph, they are not.
func TestPolicyFKCascade(t *testing.T) {
	t.Parallel()
	m := testenvShared(t)
	for _, policy := range []string{"default", "fk-cascade"} {
		t.Run(policy, func(t *testing.T) {
			t.Parallel()
			db := m.NewDatabase(t)
			m.Exec(t, "CREATE TABLE "+db+".customers (id INT PRIMARY KEY, name VARCHAR(20)) ENGINE=InnoDB")
			m.Exec(t, "CREATE TABLE "+db+".orders (id INT PRIMARY KEY, customer_id INT NOT NULL, "+
				"FOREIGN KEY (customer_id) REFERENCES customers (id) ON DELETE CASCADE) ENGINE=InnoDB")
			m.Exec(t, "INSERT INTO "+db+".customers VALUES (1, 'ann'), (2, 'bo')")
			m.Exec(t, "INSERT INTO "+db+".orders VALUES (10, 1), (11, 1), (20, 2)")
			cfg := mysqlproxy.Config{Backend: m.Addr, KVUsers: []string{"root"}}
			if policy == "fk-cascade" {
				cfg.Policy = []string{shippedScript("fk-cascade.lua")}
			}
			p := startProxy(t, cfg)
			c := conn(t, openDB(t, rootDSN(p.addr, db, "")))
			direct := openDB(t, rootDSN(m.Addr, db, ""))
			if policy == "fk-cascade" {
				// As the script's header says: the graph query, run against
				// MariaDB, stored in the kv key fkgraph, and a reload.
				graph := m.QueryString(t, `SELECT GROUP_CONCAT(CONCAT(rc.UNIQUE_CONSTRAINT_SCHEMA, '.',
					rc.REFERENCED_TABLE_NAME, ' ', rc.CONSTRAINT_SCHEMA, '.', rc.TABLE_NAME) SEPARATOR ' ')
					FROM information_schema.REFERENTIAL_CONSTRAINTS rc
					WHERE (rc.DELETE_RULE <> 'RESTRICT' AND rc.DELETE_RULE <> 'NO ACTION'
					   OR rc.UPDATE_RULE <> 'RESTRICT' AND rc.UPDATE_RULE <> 'NO ACTION')
					  AND rc.CONSTRAINT_SCHEMA = ?`, db)
				if want := db + ".customers " + db + ".orders"; graph != want {
					t.Fatalf("foreign-key graph: got %q, want %q", graph, want)
				}
				if _, err := c.ExecContext(context.Background(), "INSERT ? = ?", "fkgraph", graph); err != nil {
					t.Fatalf("INSERT fkgraph: %v", err)
				}
				execOn(t, c, "MYCACHED RELOAD POLICY")
			}
			reads := []string{"SELECT id, customer_id FROM orders ORDER BY id", "SELECT customer_id FROM orders WHERE id = 10"}
			cached := map[string]string{}
			for _, q := range reads {
				cached[q] = dumpOn(t, c, q)
				if got := dumpOn(t, c, q); got != cached[q] {
					t.Fatalf("%s repeat: got %s, want %s", q, got, cached[q])
				}
			}
			execOn(t, c, "DELETE FROM customers WHERE id = 1")
			for _, q := range reads {
				got, fresh := dumpOn(t, c, q), dump(t, direct, q)
				if fresh == cached[q] {
					t.Fatalf("%s: the cascade did not change MariaDB's rows", q)
				}
				switch policy {
				case "default":
					if got != cached[q] {
						t.Errorf("%s after the cascade, default policy: got %s, want the stale cached %s", q, got, cached[q])
					}
				case "fk-cascade":
					if got != fresh {
						t.Errorf("%s after the cascade: got %s, want %s", q, got, fresh)
					}
				}
			}
		})
	}
}

// TestSharedScopeProofsKeepNames: a shared entry is served to an account
// only once the server has answered it a read of the same shape, and the
// shape keeps what decides privileges: the case of table names (two
// tables on this server), and which words are names where the session's
// sql_mode reads quotes and backslashes otherwise (ANSI_QUOTES,
// NO_BACKSLASH_ESCAPES). An account allowed one read of a pair gets the
// server's refusal for the other, which another account filled.
func TestSharedScopeProofsKeepNames(t *testing.T) {
	t.Parallel()
	m := testenvShared(t)
	db := m.NewDatabase(t)
	lim, app := "lim_"+db, "app_"+db
	for _, q := range []string{
		"CREATE TABLE " + db + ".sec (id INT PRIMARY KEY, v VARCHAR(20))",
		"CREATE TABLE " + db + ".SEC (id INT PRIMARY KEY, v VARCHAR(20))",
		"CREATE TABLE " + db + ".pub (id INT PRIMARY KEY, name VARCHAR(20), secret VARCHAR(20))",
		"INSERT INTO " + db + ".sec VALUES (1, 'lower')",
		"INSERT INTO " + db + ".SEC VALUES (1, 'upper')",
		"INSERT INTO " + db + ".pub VALUES (1, 'n1', 's1'), (2, 'n2', 's2')",
		fmt.Sprintf("CREATE USER '%s'@'%%' IDENTIFIED BY 'pw'", lim),
		fmt.Sprintf("CREATE USER '%s'@'%%' IDENTIFIED BY 'pw'", app),
		fmt.Sprintf("GRANT SELECT ON %s.SEC TO '%s'@'%%'", db, lim),
		fmt.Sprintf("GRANT SELECT (id, name) ON %s.pub TO '%s'@'%%'", db, lim),
		fmt.Sprintf("GRANT SELECT ON %s.* TO '%s'@'%%'", db, app),
	} {
		m.Exec(t, q)
	}
	policy := writePolicy(t, t.TempDir(), "shared.lua", "function cache(q) return { ttl = 300, scope = \"shared\" } end\n")
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr, Policy: []string{policy}})
	for _, tc := range []struct {
		name, mode       string
		allowed, refused string
		code             uint16
	}{
		{"table name case", "", "SELECT v FROM SEC WHERE id = 1", "SELECT v FROM sec WHERE id = 1", 1142},
		{"ANSI_QUOTES", "ANSI_QUOTES", `SELECT "name" FROM pub WHERE id = 1`, `SELECT "secret" FROM pub WHERE id = 1`, 1143},
		{"NO_BACKSLASH_ESCAPES", "NO_BACKSLASH_ESCAPES", `SELECT id FROM pub WHERE name = 'q\' OR name > ' '`, `SELECT id FROM pub WHERE name = 'q\' OR secret > ' '`, 1143},
	} {
		t.Run(tc.name, func(t *testing.T) {
			as := func(user string) *sql.Conn {
				c := conn(t, openDB(t, testenv.DSNFor(p.addr, user, "pw", db, "")))
				if tc.mode != "" {
					execOn(t, c, "SET SESSION sql_mode = '"+tc.mode+"'")
				}
				return c
			}
			l, a := as(lim), as(app)
			for range 2 {
				if _, err := queryDump(context.Background(), l, tc.allowed); err != nil {
					t.Fatalf("%s, %s: %v", lim, tc.allowed, err)
				}
			}
			for range 3 {
				if _, err := queryDump(context.Background(), a, tc.refused); err != nil {
					t.Fatalf("%s, %s: %v", app, tc.refused, err)
				}
			}
			if _, n := counted(t, m, a, tc.refused); n != 0 {
				t.Fatalf("%s: MariaDB executed %d SELECTs, want a hit", tc.refused, n)
			}
			for i := range 2 {
				got, err := queryDump(context.Background(), l, tc.refused)
				if err == nil || mysqlErr(t, err).Number != tc.code {
					t.Errorf("%s try %d, %s: got %s, %v; want error %d", lim, i, tc.refused, got, err, tc.code)
				}
			}
		})
	}
}

// TestSharedScopeProofsEndWithDDL: an account's proof that it may read a
// shape holds only while what the shape reads stays the same. DDL changes
// it without a grant: SELECT * gains a column the account may not read,
// an invoker's view comes to select one. Wherever the DDL runs (directly,
// through the other sidecar, through this one), the account's next read
// goes to the server, which refuses it, instead of hitting an entry
// another account filled since.
func TestSharedScopeProofsEndWithDDL(t *testing.T) {
	t.Parallel()
	m := testenvShared(t)
	policy := writePolicy(t, t.TempDir(), "shared.lua", "function cache(q) return { ttl = 300, scope = \"shared\" } end\n")
	f := startFleet(t, m, mysqlproxy.Config{Policy: []string{policy}})
	db := f.name
	lim, app := "lim_"+db, "app_"+db
	for _, q := range []string{
		fmt.Sprintf("CREATE USER '%s'@'%%' IDENTIFIED BY 'pw'", lim),
		fmt.Sprintf("CREATE USER '%s'@'%%' IDENTIFIED BY 'pw'", app),
		fmt.Sprintf("GRANT SELECT ON %s.* TO '%s'@'%%'", db, app),
		"CREATE TABLE " + db + ".pub (id INT PRIMARY KEY, name VARCHAR(20), secret VARCHAR(20))",
		"INSERT INTO " + db + ".pub VALUES (1, 'n1', 's1')",
		fmt.Sprintf("GRANT SELECT (id, name) ON %s.pub TO '%s'@'%%'", db, lim),
	} {
		m.Exec(t, q)
	}
	via := map[string]*sql.DB{"directly": f.direct, "through the other sidecar": f.viaA, "through this sidecar": f.viaB}
	for i, where := range []string{"directly", "through the other sidecar", "through this sidecar"} {
		tab, view := fmt.Sprintf("ac%d", i), fmt.Sprintf("v%d", i)
		for _, q := range []string{
			"CREATE TABLE " + db + "." + tab + " (id INT PRIMARY KEY, a VARCHAR(20))",
			"INSERT INTO " + db + "." + tab + " VALUES (1, 'a1')",
			fmt.Sprintf("GRANT SELECT (id, a) ON %s.%s TO '%s'@'%%'", db, tab, lim),
			"CREATE SQL SECURITY INVOKER VIEW " + db + "." + view + " AS SELECT id, name FROM " + db + ".pub",
			fmt.Sprintf("GRANT SELECT ON %s.%s TO '%s'@'%%'", db, view, lim),
		} {
			m.Exec(t, q)
		}
		f.sync(t)
		for _, c := range []struct{ read, ddl string }{
			{"SELECT * FROM " + tab + " WHERE id = 1", "ALTER TABLE " + tab + " ADD COLUMN s VARCHAR(20) DEFAULT 'SECRET'"},
			{"SELECT * FROM " + view + " WHERE id = 1", "CREATE OR REPLACE SQL SECURITY INVOKER VIEW " + view + " AS SELECT id, secret AS name FROM pub"},
		} {
			t.Run(where+"/"+c.ddl, func(t *testing.T) {
				l := conn(t, openDB(t, testenv.DSNFor(f.b.addr, lim, "pw", db, "")))
				for range 2 {
					if _, err := queryDump(context.Background(), l, c.read); err != nil {
						t.Fatalf("%s, %s before the DDL: %v", lim, c.read, err)
					}
				}
				mustExec(t, via[where], c.ddl)
				f.sync(t)
				time.Sleep(300 * time.Millisecond) // the bumps made again a moment later
				a := conn(t, openDB(t, testenv.DSNFor(f.b.addr, app, "pw", db, "")))
				warmOn(t, f.viaB, a, c.read)
				_, want := queryDump(context.Background(), openDB(t, testenv.DSNFor(m.Addr, lim, "pw", db, "")), c.read)
				if want == nil {
					t.Fatalf("%s directly as %s succeeded; the test proves nothing", c.read, lim)
				}
				for _, s := range []*sql.Conn{l, conn(t, openDB(t, testenv.DSNFor(f.b.addr, lim, "pw", db, "")))} {
					got, err := queryDump(context.Background(), s, c.read)
					if err == nil || mysqlErr(t, err).Number != mysqlErr(t, want).Number {
						t.Errorf("%s, %s after the DDL: got %s, %v; want %v as directly", lim, c.read, got, err, want)
					}
				}
			})
		}
	}
}

// TestShutdownWithReloadStuck: an admin's MYCACHED RELOAD POLICY stuck
// opening a script (a FIFO here; a hung network mount in production)
// does not keep Shutdown from returning once its drain is over.
func TestShutdownWithReloadStuck(t *testing.T) {
	t.Parallel()
	m := testenvShared(t)
	dir := t.TempDir()
	file := writePolicy(t, dir, "p.lua", "function cache(q) end\n")
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr, Policy: []string{file}})
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(file, 0o600); err != nil {
		t.Fatal(err)
	}
	db := openDB(t, rootDSN(p.addr, "", ""))
	go func() { _, _ = db.Exec("MYCACHED RELOAD POLICY") }()
	time.Sleep(300 * time.Millisecond) // the reload is waiting in open()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- p.srv.Shutdown(ctx) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("Shutdown did not return with a policy reload stuck in open()")
	}
	// Let the reload go, so that nothing is left waiting.
	if w, err := os.OpenFile(file, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
		w.Close()
	}
}
