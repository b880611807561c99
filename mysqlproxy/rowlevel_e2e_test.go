package mysqlproxy_test

import (
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	mysqlc "github.com/go-mysql-org/go-mysql/mysql"

	"github.com/mycached/mycached/mysqlproxy"
	"github.com/mycached/mycached/mysqlproxy/internal/deps"
	"github.com/mycached/mycached/mysqlproxy/internal/testenv"
)

func loadRows(t testing.TB, m *testenv.MariaDB, table string, n int) {
	t.Helper()
	m.Exec(t, "CREATE TABLE "+table+" (id INT PRIMARY KEY AUTO_INCREMENT, v INT, pad VARCHAR(20))")
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "(%d,%d,'p')", i, i)
	}
	m.Exec(t, "INSERT INTO "+table+" VALUES "+b.String())
}

// TestRowGranularity: with 1,000 cached point lookups on one table, an
// UPDATE by primary key of one row invalidates exactly that row's entry,
// and the table's range reads.
func TestRowGranularity(t *testing.T) {
	for _, mode := range []string{"text", "prepared"} {
		t.Run(mode, func(t *testing.T) {
			m := privateDB(t)
			db := m.NewDatabase(t)
			loadRows(t, m, db+".t", 1000)
			p := startProxy(t, withBinlog(mysqlproxy.Config{Backend: m.Addr}))
			params := "interpolateParams=true"
			if mode == "prepared" {
				params = ""
			}
			c := openDB(t, rootDSN(p.addr, db, params))
			c.SetMaxOpenConns(1)
			// Until its follower is current, a strict sidecar neither
			// serves nor stores: the lookups below fill the cache once it
			// is.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := p.srv.WaitBinlog(ctx); err != nil {
				t.Fatalf("WaitBinlog: %v", err)
			}
			readAll := func() {
				for id := 1; id <= 1000; id++ {
					var v int
					if err := c.QueryRow("SELECT v FROM t WHERE id = ?", id).Scan(&v); err != nil {
						t.Fatal(err)
					}
					want := id
					if id == 500 {
						want = -1
					}
					if v != want && !(id == 500 && v == 500) {
						t.Fatalf("id %d: got %d", id, v)
					}
				}
			}
			readAll()
			dump(t, c, "SELECT COUNT(*), SUM(v) FROM t WHERE v > 0")
			mustExec(t, c, "UPDATE t SET v = -1 WHERE id = ?", 500)
			// The session reads from the server until the follower has
			// applied its write (what triggers wrote is bumped then).
			if err := p.srv.WaitBinlog(ctx); err != nil {
				t.Fatalf("WaitBinlog: %v", err)
			}
			before := m.GlobalStatus(t, "Com_select")
			readAll()
			if got := m.GlobalStatus(t, "Com_select") - before; got != 1 {
				t.Errorf("re-reading 1,000 lookups after updating one row: MariaDB executed %d SELECTs, want 1", got)
			}
			var v int
			if err := c.QueryRow("SELECT v FROM t WHERE id = 500").Scan(&v); err != nil || v != -1 {
				t.Errorf("row 500: got %d, %v; want -1", v, err)
			}
			before = m.GlobalStatus(t, "Com_select")
			got := dump(t, c, "SELECT COUNT(*), SUM(v) FROM t WHERE v > 0")
			if n := m.GlobalStatus(t, "Com_select") - before; n != 1 {
				t.Errorf("the range read after the update: MariaDB executed %d SELECTs, want 1", n)
			}
			if want := dump(t, openDB(t, rootDSN(m.Addr, db, "")), "SELECT COUNT(*), SUM(v) FROM t WHERE v > 0"); got != want {
				t.Errorf("range read: got %s, want %s", got, want)
			}
		})
	}
}

// TestRowLevelNoStaleReads: every write shape invalidates the point
// lookups it must, including lookups that were empty.
func TestRowLevelNoStaleReads(t *testing.T) {
	m := testenv.Shared(t).DB
	p := startProxy(t, withBinlog(mysqlproxy.Config{Backend: m.Addr}))
	cases := []struct {
		name  string
		write string
		args  []any
	}{
		{"update-by-key", "UPDATE t SET v = 99 WHERE id = 2", nil},
		{"update-by-key-prepared", "UPDATE t SET v = ? WHERE id = ?", []any{99, 2}},
		{"update-in-list", "UPDATE t SET v = 99 WHERE id IN (1, 2, 3)", nil},
		{"update-non-key", "UPDATE t SET v = 99 WHERE pad = 'p'", nil},
		{"update-moves-key", "UPDATE t SET id = 7 WHERE id = 2", nil},
		{"delete-by-key", "DELETE FROM t WHERE id = 2", nil},
		{"delete-non-key", "DELETE FROM t WHERE v < 3", nil},
		{"insert-explicit", "INSERT INTO t (id, v, pad) VALUES (7, 70, 'n')", nil},
		{"insert-explicit-prepared", "INSERT INTO t (id, v, pad) VALUES (?, ?, ?)", []any{7, 70, "n"}},
		{"insert-auto-increment", "INSERT INTO t (v, pad) VALUES (70, 'n')", nil},
		{"insert-auto-increment-multi", "INSERT INTO t (v, pad) VALUES (70, 'n'), (80, 'n'), (90, 'n')", nil},
		{"insert-no-columns", "INSERT INTO t VALUES (7, 70, 'n')", nil},
		{"insert-select", "INSERT INTO t (v, pad) SELECT v + 100, pad FROM t", nil},
		{"upsert", "INSERT INTO t (id, v, pad) VALUES (2, 0, 'x') ON DUPLICATE KEY UPDATE v = 55", nil},
		{"replace", "REPLACE INTO t (id, v, pad) VALUES (2, 66, 'r')", nil},
		{"truncate", "TRUNCATE TABLE t", nil},
	}
	for _, mode := range []string{"autocommit", "transaction"} {
		for _, tc := range cases {
			t.Run(mode+"/"+tc.name, func(t *testing.T) {
				db := m.NewDatabase(t)
				loadRows(t, m, db+".t", 5)
				c := openDB(t, rootDSN(p.addr, db, ""))
				c.SetMaxOpenConns(1)
				direct := openDB(t, rootDSN(m.Addr, db, ""))
				lookups := []string{
					"SELECT * FROM t WHERE id = 2", "SELECT * FROM t WHERE id = 7", "SELECT * FROM t WHERE id = 6",
					"SELECT * FROM t WHERE id = 8", "SELECT * FROM t WHERE id IN (1, 2, 3, 7)", "SELECT * FROM t WHERE id = 1",
				}
				for i := 0; i < 2; i++ { // the second pass is served from the cache
					for _, q := range lookups {
						dump(t, c, q)
					}
				}
				if mode == "transaction" && tc.name != "truncate" {
					tx, err := c.Begin()
					if err != nil {
						t.Fatal(err)
					}
					if _, err := tx.Exec(tc.write, tc.args...); err != nil {
						t.Fatalf("%s: %v", tc.write, err)
					}
					if err := tx.Commit(); err != nil {
						t.Fatal(err)
					}
				} else {
					mustExec(t, c, tc.write, tc.args...)
				}
				for _, q := range lookups {
					if got, want := dump(t, c, q), dump(t, direct, q); got != want {
						t.Errorf("after %s, %s:\ngot  %s\nwant %s", tc.write, q, got, want)
					}
				}
			})
		}
	}
}

// TestRowLevelHitRatio reports the hit ratio of a 90/10 read/update mix on
// a hot table of 10,000 rows, row-level against table-level invalidation.
func TestRowLevelHitRatio(t *testing.T) {
	m := testenv.Shared(t).DB
	db := m.NewDatabase(t)
	loadRows(t, m, db+".t", 10000)
	ratio := func(tableLevel bool) float64 {
		p := startProxy(t, withBinlog(mysqlproxy.Config{Backend: m.Addr, TableLevel: tableLevel}))
		c := openDB(t, rootDSN(p.addr, db, "interpolateParams=true"))
		c.SetMaxOpenConns(1)
		rng := rand.New(rand.NewPCG(1, 2))
		hot := func() int { return 1 + int(rng.ExpFloat64()*300)%10000 } // a skewed hot set
		for i := 0; i < 5000; i++ {
			if rng.IntN(10) == 0 {
				mustExec(t, c, "UPDATE t SET v = v + 1 WHERE id = ?", hot())
				continue
			}
			var v int
			if err := c.QueryRow("SELECT v FROM t WHERE id = ?", hot()).Scan(&v); err != nil && err != sql.ErrNoRows {
				t.Fatal(err)
			}
		}
		st := mycachedStatus(t, c)
		hits, misses := st["Hits_l1"], st["Misses"]
		return float64(hits) / float64(hits+misses)
	}
	row, table := ratio(false), ratio(true)
	t.Logf("90/10 read/update, hot set of a 10,000-row table: hit ratio row-level %.3f, table-level %.3f (%.1fx)", row, table, row/table)
	if row < 3*table {
		t.Errorf("row-level hit ratio %.3f is under 3x the table-level %.3f", row, table)
	}
}

// TestLongDataWriteInvalidatesItsRow: a prepared write whose values come
// partly by COM_STMT_SEND_LONG_DATA invalidates the rows it wrote, by
// table without a binlog follower, and by row with one, where the read
// right after the write comes before the follower has seen it: the
// execute's other values, and a key sent as long data, are read as the
// server reads them.
func TestLongDataWriteInvalidatesItsRow(t *testing.T) {
	t.Parallel()
	t.Run("table-level", func(t *testing.T) {
		t.Parallel()
		longDataWrites(t, false)
	})
	t.Run("row-level", func(t *testing.T) {
		t.Parallel()
		longDataWrites(t, true)
	})
}

func longDataWrites(t *testing.T, follower bool) {
	m := testenvShared(t)
	db := m.NewDatabase(t)
	loadRows(t, m, db+".t", 300)
	cfg := mysqlproxy.Config{Backend: m.Addr}
	if follower {
		cfg = withBinlog(cfg)
	}
	p := startProxy(t, cfg)
	c := openDB(t, rootDSN(p.addr, db, ""))
	direct := openDB(t, m.RootDSN(db))
	// Row 17's pad is what the second case's misread key would be.
	m.Exec(t, "UPDATE "+db+".t SET pad = '3' WHERE id = 17")
	read := func(id int) string {
		return dump(t, c, fmt.Sprintf("SELECT pad FROM t WHERE id = %d", id))
	}
	raw := dialRaw(t, p.addr, "root", rootPass, db, true)
	// execute sends a COM_STMT_EXECUTE of st whose parameters are given by
	// their types; a nil value is one sent as long data before.
	execute := func(st *client.Stmt, types []byte, values [][]byte, long map[byte]string) {
		t.Helper()
		id := binary.LittleEndian.AppendUint32(nil, st.ID)
		for param, data := range long {
			// Two chunks, as a driver streaming a value does.
			for _, chunk := range []string{data[:len(data)/2], data[len(data)/2:]} {
				if err := raw.command(append(append(append([]byte{mysqlc.COM_STMT_SEND_LONG_DATA}, id...), param, 0), chunk...)...); err != nil {
					t.Fatalf("COM_STMT_SEND_LONG_DATA: %v", err)
				}
			}
		}
		pk := append(append([]byte{mysqlc.COM_STMT_EXECUTE}, id...), 0, 1, 0, 0, 0)
		pk = append(pk, make([]byte, (len(types)+7)/8)...) // no NULLs
		pk = append(pk, 1)
		for _, ty := range types {
			pk = append(pk, ty, 0)
		}
		for _, v := range values {
			pk = append(pk, v...)
		}
		if err := raw.command(pk...); err != nil {
			t.Fatalf("COM_STMT_EXECUTE: %v", err)
		}
		resp, err := raw.readResponse(false)
		if err != nil || len(resp) != 1 || !strings.HasPrefix(resp[0], "00") {
			t.Fatalf("execute: %v %v, want an OK", resp, err)
		}
	}
	u64 := func(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }
	lenc := func(s string) []byte { return append([]byte{byte(len(s))}, s...) }

	for _, tc := range []struct {
		name   string
		sql    string
		types  []byte
		values [][]byte
		long   map[byte]string
		row    int
		want   string
	}{
		// The value by long data, the key bound: the key is read past the
		// value the execute does not carry.
		// Read from the wrong bytes, the key would be 1. The server
		// ignores the byte after the values; a reader that takes the
		// long-data parameter's value from the execute would not.
		{"value as long data", "UPDATE t SET pad = ? WHERE id = ? AND v = ?",
			[]byte{mysqlc.MYSQL_TYPE_BLOB, mysqlc.MYSQL_TYPE_LONGLONG, mysqlc.MYSQL_TYPE_LONGLONG}, [][]byte{u64(256), u64(256), {5}},
			map[byte]string{0: "long-256"}, 256, "long-256"},
		// The key itself by long data; read from the wrong bytes, it is
		// the next parameter's "3".
		{"key as long data", "UPDATE t SET pad = 'k1' WHERE id = ? AND pad = ?",
			[]byte{mysqlc.MYSQL_TYPE_VAR_STRING, mysqlc.MYSQL_TYPE_VAR_STRING}, [][]byte{lenc("3")},
			map[byte]string{0: "17"}, 17, "k1"},
		// Long data for a later parameter, the key bound before it.
		{"key before long data", "UPDATE t SET pad = ? WHERE id = ? AND v = ?",
			[]byte{mysqlc.MYSQL_TYPE_VAR_STRING, mysqlc.MYSQL_TYPE_LONGLONG, mysqlc.MYSQL_TYPE_BLOB}, [][]byte{lenc("v99"), u64(99)},
			map[byte]string{2: "0099"}, 99, "v99"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Each row, and row 1 beside it, cached and served from the cache.
			for _, id := range []int{tc.row, 1} {
				read(id)
				before := hits(t, c)
				read(id)
				if hits(t, c) == before {
					t.Fatalf("row %d is not served from the cache", id)
				}
			}
			st, err := raw.Prepare(tc.sql)
			if err != nil {
				t.Fatalf("prepare %s: %v", tc.sql, err)
			}
			defer st.Close()
			execute(st, tc.types, tc.values, tc.long)
			// Read back at once, before the follower could cover a wrong
			// invalidation.
			got := read(tc.row)
			want := dump(t, direct, fmt.Sprintf("SELECT pad FROM t WHERE id = %d", tc.row))
			if !strings.Contains(want, tc.want) {
				t.Fatalf("MariaDB has %s for row %d, want %q: the test's execute is wrong", want, tc.row, tc.want)
			}
			if got != want {
				t.Errorf("row %d after the write: got %s, want %s", tc.row, got, want)
			}
		})
	}
}

// TestLargeInsertBumpsTheTable: an INSERT of more rows than a write
// bumps one by one (deps.MaxRows) bumps the table's generations instead:
// memcached gets a few increments, not one per row, and a cached lookup
// of a row it adds is invalidated all the same. A small INSERT still
// bumps its rows. The server is the test's own, so that the increments
// counted are those of its writes, the sidecar's and its follower's.
func TestLargeInsertBumpsTheTable(t *testing.T) {
	t.Parallel()
	m := privateDB(t)
	db := m.NewDatabase(t)
	m.Exec(t, "CREATE TABLE "+db+".t (id INT PRIMARY KEY, v INT)")
	m.Exec(t, "INSERT INTO "+db+".t VALUES (1, 1)")
	m.Exec(t, "CREATE TABLE "+db+".a (id INT PRIMARY KEY AUTO_INCREMENT, v INT)")
	m.Exec(t, "INSERT INTO "+db+".a VALUES (1, 1)")
	mc := privateMemcached(t)
	p := startProxy(t, withBinlog(mysqlproxy.Config{Backend: m.Addr, Memcached: []string{mc.Addr}, MemcachedTimeout: 5 * time.Second}))
	settle := func() {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := p.srv.WaitBinlog(ctx); err != nil {
			t.Fatalf("WaitBinlog: %v", err)
		}
		time.Sleep(300 * time.Millisecond) // the follower's settle bump
	}
	settle()
	c := openDB(t, rootDSN(p.addr, db, ""))
	incrs := func() int {
		st := mc.Stats(t, "")
		var n int
		for _, k := range []string{"incr_hits", "incr_misses"} {
			var v int
			fmt.Sscan(st[k], &v)
			n += v
		}
		return n
	}
	// values lists n rows from id from on, or without ids from 0.
	values := func(from, n int) string {
		var b strings.Builder
		for i := from; i < from+n; i++ {
			if b.Len() > 0 {
				b.WriteByte(',')
			}
			if from == 0 {
				fmt.Fprintf(&b, "(%d)", i)
			} else {
				fmt.Fprintf(&b, "(%d,%d)", i, i)
			}
		}
		return b.String()
	}
	var lookups []string
	for _, table := range []string{"t", "a"} {
		for _, id := range []int{1, 1500, 5005} {
			lookups = append(lookups, fmt.Sprintf("SELECT v FROM %s WHERE id = %d", table, id))
		}
	}
	for _, q := range lookups {
		for range 2 {
			dump(t, c, q)
		}
	}
	if hits(t, c) < int64(len(lookups)) {
		t.Fatal("the lookups were not served from the cache; the test proves nothing")
	}
	for _, w := range []struct {
		insert   string
		min, max int // increments memcached gets for it
	}{
		// The sidecar's bump, and its follower's (early, at the end,
		// and once more after it), of the table's two generations.
		{"INSERT INTO t VALUES " + values(1000, 3*deps.MaxRows), 2, 40},
		{"INSERT INTO a (v) VALUES " + values(0, 3*deps.MaxRows), 2, 40},
		// Row by row: the sidecar's and its follower's.
		{"INSERT INTO t VALUES " + values(5000, 10), 10, 100},
	} {
		before := incrs()
		mustExec(t, c, w.insert)
		settle()
		if got := incrs() - before; got < w.min || got > w.max {
			t.Errorf("%.40s...: memcached got %d increments, want %d to %d", w.insert, got, w.min, w.max)
		}
	}
	direct := openDB(t, rootDSN(m.Addr, db, ""))
	for _, q := range lookups {
		if got, want := dump(t, c, q), dump(t, direct, q); got != want {
			t.Errorf("%s after the INSERTs: got %s, want %s (stale)", q, got, want)
		}
	}
}
