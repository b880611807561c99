package mysqlproxy_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/go-mysql-org/go-mysql/client"
	mysqlc "github.com/go-mysql-org/go-mysql/mysql"

	"github.com/mycached/mycached/mysqlproxy"
	"github.com/mycached/mycached/mysqlproxy/internal/testenv"
)

// TestTransactionBumpsAtItsEnd: a write to an InnoDB table inside a
// transaction is bumped when the transaction ends, not before (another
// session keeps hitting the committed rows meanwhile), while a write to a
// MyISAM table in the same transaction, visible at once, is bumped at
// once. Nobody reads a stale row at any step, through the writer's
// sidecar or another one, text or prepared.
func TestTransactionBumpsAtItsEnd(t *testing.T) {
	t.Parallel()
	m := testenvShared(t)
	f := startFleet(t, m, mysqlproxy.Config{Consistency: "strict"})
	for _, q := range []string{
		"CREATE TABLE inno (id INT PRIMARY KEY, v INT) ENGINE=InnoDB",
		"CREATE TABLE isam (id INT PRIMARY KEY, v INT) ENGINE=MyISAM",
		"INSERT INTO inno VALUES (1, 0), (2, 0)",
		"INSERT INTO isam VALUES (1, 0), (2, 0)",
	} {
		mustExec(t, f.direct, q)
	}
	f.sync(t)
	readInno := "SELECT v FROM inno WHERE id = 1"
	readIsam := "SELECT v FROM isam WHERE id = 1"
	sumInno := "SELECT SUM(v) FROM inno"

	for round, end := range []string{"COMMIT", "ROLLBACK", "COMMIT AND CHAIN", "BEGIN", "SET autocommit = 1"} {
		t.Run(end, func(t *testing.T) {
			f.sync(t) // the last round's bumps, settling ones included, are in
			for _, q := range []string{readInno, readIsam, sumInno} {
				f.warm(t, q)
			}
			w := conn(t, f.viaA)
			if end == "SET autocommit = 1" {
				execOn(t, w, "SET autocommit = 0")
			} else {
				execOn(t, w, "BEGIN")
			}
			// Prepared on the even rounds, text on the odd ones.
			update := func(table string) {
				q := fmt.Sprintf("UPDATE %s SET v = v + 1 WHERE id = 1", table)
				if round%2 == 0 {
					if _, err := w.ExecContext(context.Background(), strings.Replace(q, "id = 1", "id = ?", 1), 1); err != nil {
						t.Fatalf("%s: %v", q, err)
					}
					return
				}
				execOn(t, w, q)
			}
			update("inno")
			update("isam")
			// The InnoDB row is not committed: both sidecars go on
			// serving the committed one from their caches.
			for i, db := range []*sql.DB{f.viaA, f.viaB} {
				before := hits(t, db)
				for _, q := range []string{readInno, sumInno} {
					if got, want := dump(t, db, q), dump(t, f.direct, q); got != want {
						t.Errorf("%s through sidecar %c inside the transaction: got %s, want %s", q, 'A'+i, got, want)
					}
				}
				if hits(t, db) != before+2 {
					t.Errorf("sidecar %c: the uncommitted InnoDB write invalidated the committed rows' entries", 'A'+i)
				}
			}
			// The MyISAM row changed at once.
			f.fresh(t, readIsam)
			execOn(t, w, end)
			if end == "COMMIT AND CHAIN" || end == "BEGIN" {
				execOn(t, w, "ROLLBACK")
			}
			for _, q := range []string{readInno, readIsam, sumInno} {
				f.fresh(t, q)
			}
		})
	}
}

// bigRows makes a database whose table big holds n rows (id, pad) of
// size bytes each, and returns its name.
func bigRows(t *testing.T, m *testenv.MariaDB, n, size int) string {
	t.Helper()
	db := m.NewDatabase(t)
	m.Exec(t, "CREATE TABLE "+db+".big (id INT PRIMARY KEY, pad LONGTEXT)")
	m.Exec(t, fmt.Sprintf("INSERT INTO %s.big SELECT seq, REPEAT(CHAR(65 + seq %% 26), %d) FROM %s.seq_1_to_%d", db, size, db, n))
	return db
}

// TestStalledClientHoldsNoOneUp: a client that asks for a large cacheable
// result and never reads it does not hold up another client that asks
// the same question, whether the result fits the cache (the second client
// is answered from the first one's fill) or not (it runs the read itself).
func TestStalledClientHoldsNoOneUp(t *testing.T) {
	t.Parallel()
	m := testenvShared(t)
	// About 20 MB.
	db := bigRows(t, m, 100, 200000)
	for _, tc := range []struct {
		name     string
		maxBytes int64
	}{
		// The second client waits on the first one's fill, or finds it
		// stored, or runs the read itself when L1 did not keep it.
		{"fits", 64 << 20},
		// The fill is given up at 1 MiB, and the second client runs the
		// read itself.
		{"too large to store", 1 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := startProxy(t, mysqlproxy.Config{Backend: m.Addr, MaxResultBytes: tc.maxBytes})
			const q = "SELECT id, pad FROM big ORDER BY id"
			stalled := dialRaw(t, p.addr, "root", rootPass, db, true)
			if err := stalled.command(append([]byte{0x03}, q...)...); err != nil {
				t.Fatalf("stalled client: %v", err)
			}
			other := openDB(t, rootDSN(p.addr, db, ""))
			// The stalled client's read comes first, and leads the fill.
			waitFor(t, 10*time.Second, "the stalled client's read", func() bool {
				return mycachedStatus(t, other)["Misses"] == 1
			})
			// Held up, it would wait for ever; the bound leaves room for
			// a loaded machine (unloaded, it is answered in about 0.2 s).
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			start := time.Now()
			rows, err := other.QueryContext(ctx, q)
			if err != nil {
				t.Fatalf("second client: %v (after %v)", err, time.Since(start))
			}
			n := 0
			for rows.Next() {
				n++
			}
			if err := rows.Err(); err != nil {
				t.Fatalf("second client, row %d: %v (after %v)", n, err, time.Since(start))
			}
			rows.Close()
			if n != 100 {
				t.Fatalf("second client: %d rows, want 100", n)
			}
			st := mycachedStatus(t, other)
			t.Logf("second client answered in %v (shared %d, hits %d, misses %d)", time.Since(start), st["Singleflight_shared"], st["Hits_l1"], st["Misses"])
		})
	}
}

// TestStalledClientsBoundedMemory: clients that ask for large cacheable
// results and never read them hold no more of them, all together, than
// the fill memory: the reads past it go to their clients at the clients'
// pace and are not stored, hits included. Another client is answered
// meanwhile, and the memory is given back when the stalled clients go.
func TestStalledClientsBoundedMemory(t *testing.T) {
	t.Parallel()
	m := testenvShared(t)
	// 96 rows of 1 MB: eight reads of 12 MB, more than a loopback
	// socket's buffers take.
	db := bigRows(t, m, 96, 1000000)
	const fillMemory = 40 << 20
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr, FillMemory: fillMemory})
	read := func(i int) []byte {
		return append([]byte{0x03}, fmt.Sprintf("SELECT id, pad FROM big WHERE id BETWEEN %d AND %d", i*12+1, i*12+12)...)
	}
	// Two of the reads are cached first: the stalled clients' reads of
	// them are hits.
	warm := dialRaw(t, p.addr, "root", rootPass, db, true)
	for i := range 2 {
		warm.exchange(t, read(i)...)
	}
	other := openDB(t, rootDSN(p.addr, db, ""))
	if st := mycachedStatus(t, other); st["Stores"] != 2 {
		t.Fatalf("Stores = %d after two reads, want 2", st["Stores"])
	}
	var stalled []*rawConn
	for i := range 8 {
		c := dialRaw(t, p.addr, "root", rootPass, db, true)
		if err := c.command(read(i)...); err != nil {
			t.Fatalf("stalled client %d: %v", i, err)
		}
		stalled = append(stalled, c)
	}
	waitFor(t, 20*time.Second, "every stalled client's read", func() bool {
		st := mycachedStatus(t, other)
		return st["Misses"]+st["Hits_l1"] >= 10
	})
	// The reads the stalled clients leave unread fill their sockets and
	// then wait, in the fill memory or on the sockets.
	waitFor(t, 20*time.Second, "the reads to wait on their clients", func() bool {
		return mycachedStatus(t, other)["Fill_memory_bytes"] > fillMemory/2
	})
	time.Sleep(200 * time.Millisecond)
	st := mycachedStatus(t, other)
	if held := st["Fill_memory_bytes"]; held > fillMemory {
		t.Errorf("Fill_memory_bytes = %d with eight stalled clients, want at most %d", held, fillMemory)
	}
	body := metricsText(t, p)
	if !strings.Contains(body, `mycached_cache_bypass_total{reason="fill-memory-full"}`) ||
		strings.Contains(body, `mycached_cache_bypass_total{reason="fill-memory-full"} 0`) {
		t.Errorf("no read went through for want of fill memory (status %v)", st)
	}
	if got := dump(t, other, "SELECT COUNT(*) FROM big"); !strings.Contains(got, "96") {
		t.Errorf("another client meanwhile: %s", got)
	}
	for _, c := range stalled {
		c.Close()
	}
	waitFor(t, 20*time.Second, "the fill memory to be given back", func() bool {
		return mycachedStatus(t, other)["Fill_memory_bytes"] == 0
	})
}

// TestStalledClientsShareAnEntry: clients that do not read a hit they
// all asked for hold one response between them, and count once against
// the fill memory: each of them is served from the cache, though their
// replays together are larger than the bound.
func TestStalledClientsShareAnEntry(t *testing.T) {
	t.Parallel()
	m := testenvShared(t)
	db := bigRows(t, m, 12, 1000000)
	const fillMemory = 32 << 20
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr, FillMemory: fillMemory})
	read := append([]byte{0x03}, "SELECT id, pad FROM big"...)
	warm := dialRaw(t, p.addr, "root", rootPass, db, true)
	warm.exchange(t, read...)
	other := openDB(t, rootDSN(p.addr, db, ""))
	before := mycachedStatus(t, other)
	const n = 5 // 60 MB of replies, in one 12 MB entry
	for range n {
		c, err := client.ConnectWithDialer(context.Background(), "tcp", p.addr, "root", rootPass, db, dialSmallBuffers,
			func(c *client.Conn) error { c.SetCapability(mysqlc.CLIENT_DEPRECATE_EOF); return nil })
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.ResetSequence()
		if err := c.WritePacket(append(make([]byte, 4), read...)); err != nil {
			t.Fatal(err)
		}
		// The reply has begun: the replay holds the entry.
		if pk, err := c.ReadPacket(); err != nil || len(pk) == 0 || pk[0] == 0xff {
			t.Fatalf("stalled client's reply: %q, %v", pk, err)
		}
	}
	st := mycachedStatus(t, other)
	if hits := st["Hits_l1"] - before["Hits_l1"]; hits != n {
		t.Errorf("%d of %d stalled clients were served from the cache (status %v)", hits, n, st)
	}
	if held := st["Fill_memory_bytes"]; held > 13_000_000 || held < 12_000_000 {
		t.Errorf("Fill_memory_bytes = %d with %d replays of one 12 MB entry, want it once", held, n)
	}
}

// queryAdmission returns the admission state SHOW MYCACHED QUERIES shows
// for the shape whose digest contains part.
func queryAdmission(t *testing.T, db *sql.DB, part string) (state, why string) {
	t.Helper()
	r := shapeRow(t, db, part)
	return r.admission, r.admissionWhy
}

// shape is a row of SHOW MYCACHED QUERIES.
type shape struct {
	digest                  string
	hits, misses, bypasses  int
	reason                  string
	admission, admissionWhy string
}

// shapeRow returns the row of SHOW MYCACHED QUERIES whose digest
// contains part.
func shapeRow(t *testing.T, db *sql.DB, part string) shape {
	t.Helper()
	rows, err := db.Query("SHOW MYCACHED QUERIES")
	if err != nil {
		t.Fatalf("SHOW MYCACHED QUERIES: %v", err)
	}
	defer rows.Close()
	for rows.Next() {
		var r shape
		if err := rows.Scan(&r.digest, &r.hits, &r.misses, &r.bypasses, &r.reason, &r.admission, &r.admissionWhy); err != nil {
			t.Fatalf("SHOW MYCACHED QUERIES: %v", err)
		}
		if strings.Contains(r.digest, part) {
			return r
		}
	}
	t.Fatalf("SHOW MYCACHED QUERIES has no shape with %q", part)
	return shape{}
}

// idRows creates a database whose table t holds the rows 1 to n, each
// with v its id, and returns the database's name.
func idRows(t *testing.T, m *testenv.MariaDB, n int) string {
	t.Helper()
	db := m.NewDatabase(t)
	m.Exec(t, "CREATE TABLE "+db+".t (id INT PRIMARY KEY, v INT)")
	m.Exec(t, fmt.Sprintf("INSERT INTO %s.t SELECT seq, seq FROM %s.seq_1_to_%d", db, db, n))
	return db
}

// readID reads v of the row id of table, whose v is its id.
func readID(t *testing.T, c *sql.DB, table string, id int) {
	t.Helper()
	var v int
	if err := c.QueryRow(fmt.Sprintf("SELECT v FROM %s WHERE id = %d", table, id)).Scan(&v); err != nil || v != id {
		t.Fatalf("read %d of %s: got %d, %v", id, table, v, err)
	}
}

// TestAdmissionRejectsShapesThatDoNotPay: a shape whose reads never
// repeat is rejected after a window, and then costs no lookup and no
// store; once its reads repeat it is admitted again; a policy's admit =
// "always" keeps it cached whatever its hit ratio.
func TestAdmissionRejectsShapesThatDoNotPay(t *testing.T) {
	t.Parallel()
	m := testenvShared(t)
	db := idRows(t, m, 6000)
	mc := privateMemcached(t)
	always := writePolicy(t, t.TempDir(), "always.lua", "function cache(q)\n  if q.kind == \"select\" then return { ttl = 60, admit = \"always\" } end\nend\n")
	for _, tc := range []struct {
		name   string
		policy []string
		reject bool
	}{
		{"adaptive", nil, true},
		{"admit always", []string{always}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := startProxy(t, mysqlproxy.Config{Backend: m.Addr, Memcached: []string{mc.Addr}, Policy: tc.policy})
			c := openDB(t, rootDSN(p.addr, db, ""))
			c.SetMaxOpenConns(1)
			read := func(id int) { readID(t, c, "t", id) }
			// Through its probation and beyond, reads that never repeat.
			// (Reads that found a pending bump are not judged, so the
			// count of reads a verdict takes varies.)
			id := 0
			state, why := "", ""
			for id < 4096 {
				for range 128 {
					id++
					read(id)
				}
				if state, why = queryAdmission(t, c, "from `t` where `id`"); id >= 1024 && state != "probation" {
					break
				}
			}
			t.Logf("after %d distinct reads: %s (%s)", id, state, why)
			if (state == "rejected") != tc.reject {
				t.Fatalf("after %d distinct reads the shape is %s (%s); want rejected %v", id, state, why, tc.reject)
			}
			storesSettled(t, c)
			st0 := mycachedStatus(t, c)
			for range 128 {
				id++
				read(id)
			}
			st1 := mycachedStatus(t, c)
			if tc.reject {
				if n := st1["Stores"] - st0["Stores"]; n != 0 {
					t.Errorf("a rejected shape stored %d entries", n)
				}
				if n := st1["Memcached_gets"] - st0["Memcached_gets"]; n != 0 {
					t.Errorf("a rejected shape looked up memcached %d times", n)
				}
				// Reads inside a snapshot taken before them store nothing,
				// so their repeats are no sign that the shape would pay: it
				// stays rejected, and they look nothing up.
				st2 := mycachedStatus(t, c)
				tx, err := c.Begin()
				if err != nil {
					t.Fatal(err)
				}
				var v int
				// Rows no read has touched yet.
				if err := tx.QueryRow("SELECT v FROM t WHERE id = 5998").Scan(&v); err != nil {
					t.Fatal(err)
				}
				for range 3 * 128 {
					if err := tx.QueryRow("SELECT v FROM t WHERE id = 5999").Scan(&v); err != nil || v != 5999 {
						t.Fatalf("read 5999 in a transaction: got %d, %v", v, err)
					}
				}
				if err := tx.Commit(); err != nil {
					t.Fatal(err)
				}
				if n := mycachedStatus(t, c)["Memcached_gets"] - st2["Memcached_gets"]; n != 0 {
					t.Errorf("repeated reads inside a snapshot looked up memcached %d times", n)
				}
				if state, why := queryAdmission(t, c, "from `t` where `id`"); state != "rejected" {
					t.Fatalf("after repeated reads inside a snapshot the shape is %s (%s), want rejected", state, why)
				}
				// Its reads repeat now, on a few keys: the ghosts of the
				// reads it samples would hit, and it is admitted again,
				// then served from the cache. (It judges about one read
				// in six, a window of 128 at a time.)
				reads := 0
				for state != "admitted" && reads < 64*128 {
					for i := range 128 {
						read(1 + i%8)
					}
					reads += 128
					state, why = queryAdmission(t, c, "from `t` where `id`")
				}
				t.Logf("after %d repeated reads: %s (%s)", reads, state, why)
				if state != "admitted" {
					t.Fatalf("after %d repeated reads the shape is %s (%s), want admitted", reads, state, why)
				}
				before := hits(t, c)
				read(3)
				read(3)
				if hits(t, c) == before {
					t.Error("the shape admitted again is not served from the cache")
				}
			} else if st1["Stores"] == st0["Stores"] {
				t.Error("admit = always: no entry stored")
			}
		})
	}
}

// TestMaxResultBytesExact: a response of exactly --max-result-bytes is
// cached, one byte more is not.
func TestMaxResultBytesExact(t *testing.T) {
	t.Parallel()
	m := testenvShared(t)
	db := m.NewDatabase(t)
	m.Exec(t, "CREATE TABLE "+db+".t (id INT PRIMARY KEY, pad TEXT)")
	m.Exec(t, "INSERT INTO "+db+".t SELECT seq, REPEAT('x', 1000) FROM "+db+".seq_1_to_100")
	const q = "SELECT id, pad FROM t ORDER BY id"
	size := func(addr string) int {
		c := dialRaw(t, addr, "root", rootPass, db, true)
		if err := c.command(append([]byte{0x03}, q...)...); err != nil {
			t.Fatal(err)
		}
		pkts, err := c.readResponse(false)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, h := range pkts {
			n += 4 + len(h)/2
		}
		return n
	}
	n := size(startProxy(t, mysqlproxy.Config{Backend: m.Addr}).addr)
	for _, tc := range []struct {
		limit  int
		cached bool
	}{{n, true}, {n - 1, false}} {
		p := startProxy(t, mysqlproxy.Config{Backend: m.Addr, MaxResultBytes: int64(tc.limit)})
		size(p.addr)
		size(p.addr)
		c := openDB(t, rootDSN(p.addr, db, ""))
		if got := hits(t, c) > 0; got != tc.cached {
			t.Errorf("a %d-byte response with --max-result-bytes %d: cached %v, want %v", n, tc.limit, got, tc.cached)
		}
	}
}

// TestStalledClientCutOff: a client that reads none of a large response
// held for it in the fill memory, a miss's or a hit's, is cut off after
// its session's net_write_timeout, as the server cuts off a client that
// does not read (its connection reset), and the memory is given back; a
// client that reads slowly, but reads, gets all of it.
func TestStalledClientCutOff(t *testing.T) {
	t.Parallel()
	m := testenvShared(t)
	db := bigRows(t, m, 12, 1000000) // 12 MB: stored, and more than a loopback socket's buffers take
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr})
	other := openDB(t, rootDSN(p.addr, db, ""))
	read := append([]byte{mysqlc.COM_QUERY}, "SELECT id, pad FROM big"...)
	dial := func() *client.Conn {
		c, err := client.ConnectWithDialer(context.Background(), "tcp", p.addr, "root", rootPass, db, dialSmallBuffers,
			func(c *client.Conn) error { c.ReadTimeout = 30 * time.Second; return nil })
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := c.Execute("SET SESSION net_write_timeout = 2"); err != nil {
			t.Fatal(err)
		}
		c.ResetSequence()
		if err := c.WritePacket(append(make([]byte, 4), read...)); err != nil {
			t.Fatal(err)
		}
		return c
	}
	for _, what := range []string{"miss", "hit"} {
		before := mycachedStatus(t, other)
		stalled := dial()
		waitFor(t, 20*time.Second, what+": the response held for the stalled client", func() bool {
			return mycachedStatus(t, other)["Fill_memory_bytes"] > 10_000_000
		})
		start := time.Now()
		waitFor(t, 30*time.Second, what+": the fill memory given back", func() bool {
			return mycachedStatus(t, other)["Fill_memory_bytes"] == 0
		})
		t.Logf("%s: given back after %v", what, time.Since(start))
		// The server resets such a client's connection: what its
		// socket had not taken is dropped, not sent at its pace.
		_ = stalled.SetReadDeadline(time.Now().Add(20 * time.Second))
		if _, err := io.Copy(io.Discard, stalled.Conn.Conn); !errors.Is(err, syscall.ECONNRESET) {
			t.Errorf("%s: the stalled client's connection: %v, want it reset", what, err)
		}
		st := mycachedStatus(t, other)
		if what == "miss" && st["Stores"]-before["Stores"] != 1 {
			t.Errorf("the stalled client's miss was not stored (status %v)", st)
		}
		if what == "hit" && st["Hits_l1"]-before["Hits_l1"] != 1 {
			t.Errorf("the stalled client's read was not a hit (status %v)", st)
		}
	}
	// A slow reader, 0.5 s a row (6 s in all, past its 2 s timeout),
	// gets every row: the bound is on a stall.
	slow := dial()
	rows := 0
	for {
		pk, err := slow.ReadPacket()
		if err != nil {
			t.Fatalf("slow reader, after %d rows: %v", rows, err)
		}
		if pk[0] == mysqlc.ERR_HEADER {
			t.Fatalf("slow reader, after %d rows: error %q", rows, pk)
		}
		if pk[0] == mysqlc.EOF_HEADER && rows > 0 {
			break
		}
		if len(pk) > 100000 {
			rows++
			time.Sleep(500 * time.Millisecond)
		}
	}
	if rows != 12 {
		t.Errorf("slow reader: %d rows, want 12", rows)
	}
}

// TestRejectedShapeRunsCode: a rejected shape's reads are relayed at the
// cost of a passthrough, but what they make the server do is followed as
// for any read. Its view comes to call a function that writes: each read
// then writes a row that another session has cached, and that entry
// goes at once, whether the admission samples the read or not. The
// server has no binlog, so this is the sidecar's own invalidation, on
// which it relies for its own writes.
func TestRejectedShapeRunsCode(t *testing.T) {
	t.Parallel()
	m := privateDB(t, "--skip-log-bin")
	db := idRows(t, m, 6000)
	m.Exec(t, "CREATE TABLE "+db+".cnt (id INT PRIMARY KEY, n INT)")
	m.Exec(t, "INSERT INTO "+db+".cnt VALUES (1, 0)")
	m.Exec(t, "CREATE VIEW "+db+".vw AS SELECT id, v FROM "+db+".t")
	m.Exec(t, "CREATE FUNCTION "+db+".f() RETURNS INT DETERMINISTIC MODIFIES SQL DATA BEGIN UPDATE cnt SET n = n + 1 WHERE id = 1; RETURN 0; END")
	p := startUnwaited(t, withBinlog(mysqlproxy.Config{Backend: m.Addr, Memcached: []string{privateMemcached(t).Addr}}))
	c := openDB(t, rootDSN(p.addr, db, ""))
	c.SetMaxOpenConns(1)
	other := openDB(t, rootDSN(p.addr, db, ""))
	direct := openDB(t, rootDSN(m.Addr, db, ""))
	read := func(id int) {
		t.Helper()
		var v int
		if err := c.QueryRow(fmt.Sprintf("SELECT v FROM vw WHERE id = %d", id)).Scan(&v); err != nil || v != id {
			t.Fatalf("read %d: got %d, %v", id, v, err)
		}
	}
	id := rejectShape(t, c, "from `vw` where `id`", read)
	counter := func() int {
		t.Helper()
		var n, want int
		if err := other.QueryRow("SELECT n FROM cnt WHERE id = 1").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if err := direct.QueryRow("SELECT n FROM cnt WHERE id = 1").Scan(&want); err != nil {
			t.Fatal(err)
		}
		if n != want {
			t.Fatalf("the counter read through mycached is %d, directly %d", n, want)
		}
		return n
	}
	cached := func() {
		t.Helper()
		waitFor(t, 10*time.Second, "the counter's read served from the cache", func() bool {
			before := hits(t, other)
			counter()
			return hits(t, other) > before
		})
	}
	cached()
	// Through a third session: nothing the reading sessions ran tells
	// them that stored code may run.
	if _, err := openDB(t, rootDSN(p.addr, db, "")).Exec("CREATE OR REPLACE VIEW vw AS SELECT id, v + f() AS v FROM t"); err != nil {
		t.Fatal(err)
	}
	for i := range 32 {
		cached()
		id++
		read(id)
		if n := counter(); n != i+1 {
			t.Fatalf("after %d reads of the view the counter is %d", i+1, n)
		}
	}
}

// rejectShape reads ids 1, 2, ... with read until the shape whose digest
// contains part is rejected, and returns the last id read.
func rejectShape(t *testing.T, c *sql.DB, part string, read func(id int)) int {
	t.Helper()
	id := 0
	for state := ""; state != "rejected"; {
		for range 128 {
			id++
			read(id)
		}
		// (Reads that found a pending bump are not judged, so the count
		// of reads a verdict takes varies.)
		if state, _ = queryAdmission(t, c, part); id >= 4096 {
			t.Fatalf("after %d distinct reads the shape is %s, want rejected", id, state)
		}
	}
	return id
}

// TestAdmissionProbesOutsideTheSample: a rejected shape whose reads come
// to repeat on keys its sample does not hold is seen to by its probes
// (one read in sixteen of the others), and admitted again; its other
// reads are relayed without being judged.
func TestAdmissionProbesOutsideTheSample(t *testing.T) {
	t.Parallel()
	m := testenvShared(t)
	db := idRows(t, m, 6000)
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr, Memcached: []string{privateMemcached(t).Addr}})
	c := openDB(t, rootDSN(p.addr, db, ""))
	c.SetMaxOpenConns(1)
	text := func(id int) string { return fmt.Sprintf("SELECT v FROM t WHERE id = %d", id) }
	read := func(id int) {
		t.Helper()
		var v int
		if err := c.QueryRow(text(id)).Scan(&v); err != nil || v != id {
			t.Fatalf("read %d: got %d, %v", id, v, err)
		}
	}
	rejectShape(t, c, "from `t` where `id`", read)
	// Keys no read of the sample is of: the texts one in eight hash to
	// (the sample) are left out.
	var keys []int
	for k := 5000; len(keys) < 8; k++ {
		if xxhash.Sum64String(text(k))%8 != 0 {
			keys = append(keys, k)
		}
	}
	state, why, reads := "rejected", "", 0
	for state != "admitted" && reads < 128*128 {
		for i := range 128 {
			read(keys[i%len(keys)])
		}
		reads += 128
		state, why = queryAdmission(t, c, "from `t` where `id`")
	}
	t.Logf("after %d repeated reads outside the sample: %s (%s)", reads, state, why)
	if state != "admitted" {
		t.Fatalf("after %d repeated reads outside the sample the shape is %s (%s), want admitted", reads, state, why)
	}
}

// TestRejectedReadsLeaveTheFollowerIdle: the reads of a shape its
// admission relays serve nothing from the cache, so they do not have the
// follower read the server's position at the pace a hit needs (every
// tenth of --max-staleness): while they are all the sidecar reads, it
// reads the position every half of the bound, as when it is idle. Hits
// have it read at the faster pace.
func TestRejectedReadsLeaveTheFollowerIdle(t *testing.T) {
	t.Parallel()
	m := testenvShared(t)
	db := idRows(t, m, 40000)
	mc := privateMemcached(t)
	p := startProxy(t, withBinlog(mysqlproxy.Config{Backend: m.Addr, Memcached: []string{mc.Addr}}))
	c := openDB(t, rootDSN(p.addr, db, ""))
	c.SetMaxOpenConns(1)
	read := func(id int) { readID(t, c, "t", id) }
	waitFor(t, 20*time.Second, "the follower running", func() bool {
		return strings.HasPrefix(statusValue(t, c, "Binlog_follower"), "running")
	})
	// Reads that never repeat, until the shape is rejected.
	id, state := 0, ""
	for id < 8192 && state != "rejected" {
		for range 128 {
			id++
			read(id)
		}
		state, _ = queryAdmission(t, c, "from `t` where `id`")
	}
	if state != "rejected" {
		t.Fatalf("after %d distinct reads the shape is %s, want rejected", id, state)
	}
	// What the probation's lookups asked for lapses after half the bound.
	time.Sleep(time.Second)
	const span = 2 * time.Second
	positionReads := func(what string, next func()) int64 {
		before := mycachedStatus(t, c)["Binlog_position_reads"]
		for start := time.Now(); time.Since(start) < span; {
			next()
		}
		n := mycachedStatus(t, c)["Binlog_position_reads"] - before
		t.Logf("%s: the follower read the server's position %d times in %v", what, n, span)
		return n
	}
	rejected := positionReads("reads of a rejected shape", func() {
		if id < 40000 {
			id++
		}
		read(id)
	})
	if state, why := queryAdmission(t, c, "from `t` where `id`"); state != "rejected" {
		t.Fatalf("after the reads measured the shape is %s (%s), want rejected", state, why)
	}
	// Half of the 1 s bound: 4 reads in 2 s, and the one a read
	// measured asked for as it began (a tenth of the bound would be 20).
	if rejected > 7 {
		t.Errorf("reads of a rejected shape: the follower read the server's position %d times in %v, want at most 7", rejected, span)
	}
	m.Exec(t, "CREATE TABLE "+db+".u (id INT PRIMARY KEY, v INT)")
	m.Exec(t, "INSERT INTO "+db+".u VALUES (1, 1)")
	hit := positionReads("hits", func() {
		readID(t, c, "u", 1)
	})
	if hit <= rejected {
		t.Errorf("hits: the follower read the server's position %d times in %v, no more than for a rejected shape's reads (%d)", hit, span, rejected)
	}
}
