package mysqlproxy_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/mycached/mycached/mysqlproxy"
)

// statusValue returns one row of SHOW MYCACHED STATUS as text.
func statusValue(t testing.TB, db *sql.DB, name string) string {
	t.Helper()
	rows, err := db.Query("SHOW MYCACHED STATUS")
	if err != nil {
		t.Fatalf("SHOW MYCACHED STATUS: %v", err)
	}
	defer rows.Close()
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		if k == name {
			return v
		}
	}
	t.Fatalf("SHOW MYCACHED STATUS has no %s", name)
	return ""
}

// unlogged runs stmts on one connection with sql_log_bin off, so that no
// binlog follower ever sees them: only the sidecar that relays them can
// tell the others.
func unlogged(t *testing.T, db *sql.DB, stmts ...string) {
	t.Helper()
	ctx := context.Background()
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, s := range append([]string{"SET SESSION sql_log_bin = 0"}, stmts...) {
		if _, err := c.ExecContext(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// TestPeersStrictHits: with --peer-listen, strict hits are checked
// against the sidecar's own view, with no memcached round trip, and a
// write through one sidecar is seen through the other as soon as its
// client has the OK. The writes are kept out of the binlog, so only the
// writer's word can have reached the other sidecar; and a sidecar that
// takes no part makes the others check memcached again.
func TestPeersStrictHits(t *testing.T) {
	m := privateDB(t)
	f := startFleet(t, m, mysqlproxy.Config{PeerListen: "127.0.0.1:0", MaxStaleness: time.Hour})
	for _, db := range []*sql.DB{f.viaA, f.viaB} {
		waitFor(t, 10*time.Second, "the peers to link", func() bool { return statusValue(t, db, "Peer_trusted") == "ON" })
	}
	mustExec(t, f.direct, "CREATE TABLE t (id INT PRIMARY KEY, v INT)")
	mustExec(t, f.direct, "INSERT INTO t VALUES (1, 0), (2, 0)")
	f.sync(t)
	qs := []string{"SELECT v FROM t WHERE id = 1", "SELECT SUM(v) FROM t"}
	for _, q := range qs {
		f.warm(t, q)
	}
	for _, db := range []*sql.DB{f.viaA, f.viaB} {
		gets, h := mycachedStatus(t, db)["Memcached_gets"], hits(t, db)
		for range 20 {
			dump(t, db, qs[0])
		}
		if d := mycachedStatus(t, db)["Memcached_gets"] - gets; d != 0 {
			t.Errorf("20 strict hits with linked peers sent %d gets to memcached, want 0", d)
		}
		if hits(t, db)-h < 20 {
			t.Fatalf("the reads were not hits: %d", hits(t, db)-h)
		}
	}
	for i := 1; i <= 20; i++ {
		writer, reader := f.viaA, f.viaB
		if i%2 == 0 {
			writer, reader = reader, writer
		}
		unlogged(t, writer, fmt.Sprintf("UPDATE t SET v = %d WHERE id = 1", i))
		if got := readInt(t, reader, qs[0]); got != int64(i) {
			t.Fatalf("round %d: the other sidecar read %d right after the write's OK, want %d", i, got, i)
		}
		if got := readInt(t, reader, qs[1]); got != int64(i) {
			t.Fatalf("round %d: the other sidecar read a sum of %d right after the write's OK, want %d", i, got, i)
		}
		readInt(t, reader, qs[0]) // cached again, for the next round
	}

	// A sidecar that takes no part, sharing the memcached.
	cfg := withBinlog(mysqlproxy.Config{Backend: m.Addr, Memcached: []string{f.mc.Addr}, MemcachedTimeout: 5 * time.Second, MaxStaleness: time.Hour})
	c := startProxy(t, cfg)
	viaC := openDB(t, rootDSN(c.addr, f.name, "multiStatements=true"))
	for _, db := range []*sql.DB{f.viaA, f.viaB} {
		waitFor(t, 10*time.Second, "the peers to see the unlinked sidecar", func() bool { return statusValue(t, db, "Peer_trusted") == "OFF" })
	}
	readInt(t, f.viaB, qs[0])
	unlogged(t, viaC, "UPDATE t SET v = 100 WHERE id = 1")
	if got := readInt(t, f.viaB, qs[0]); got != 100 {
		t.Fatalf("after a write through a sidecar that takes no part: read %d, want 100", got)
	}
}
