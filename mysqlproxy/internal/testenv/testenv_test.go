package testenv

import (
	"bufio"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) { os.Exit(Run(m)) }

// openRoot opens a pool as the superuser over TCP and closes it with t.
func openRoot(t *testing.T, m *MariaDB, db string) *sql.DB {
	t.Helper()
	pool, err := sql.Open("mysql", m.RootDSN(db))
	if err != nil {
		t.Fatalf("open %s: %v", m.RootDSN(db), err)
	}
	t.Cleanup(func() { pool.Close() })
	return pool
}

func TestSharedMariaDB(t *testing.T) {
	db := Shared(t).DB
	root := openRoot(t, db, TestDatabase)
	if err := root.Ping(); err != nil {
		t.Fatalf("ping as root over TCP: %v", err)
	}

	before := db.GlobalStatus(t, "Com_select")
	const n = 3
	for i := 0; i < n; i++ {
		var got int
		if err := root.QueryRow("SELECT ?+1", i).Scan(&got); err != nil {
			t.Fatalf("select: %v", err)
		}
		if got != i+1 {
			t.Fatalf("SELECT %d+1: got %d, want %d", i, got, i+1)
		}
	}
	// The driver prepares "SELECT ?+1", and a prepared SELECT counts under
	// Com_select when executed.
	if got, want := db.GlobalStatus(t, "Com_select")-before, int64(n); got != want {
		t.Errorf("Com_select delta: got %d, want %d", got, want)
	}

	vars := []struct{ query, want string }{
		{"SELECT @@log_bin", "1"},
		{"SELECT @@binlog_format", "ROW"},
		{"SELECT @@bind_address", "127.0.0.1"},
		{"SELECT @@port", fmt.Sprint(db.Port)},
		{"SELECT @@max_allowed_packet", fmt.Sprint(256 << 20)},
		{"SELECT @@character_set_server", "utf8mb4"},
		{"SELECT PLUGIN_STATUS FROM information_schema.PLUGINS WHERE PLUGIN_NAME = 'ed25519'", "ACTIVE"},
		{"SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 'mctest'", "mctest"},
		{"SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 'test'", "0"},
	}
	for _, v := range vars {
		if got := db.QueryString(t, v.query); got != v.want {
			t.Errorf("%s: got %q, want %q", v.query, got, v.want)
		}
	}
}

func TestSharedIsShared(t *testing.T) {
	a, b := Shared(t), Shared(t)
	if a != b {
		t.Fatalf("Shared twice: got two environments (%s, %s), want one", a.DB.Addr, b.DB.Addr)
	}
}

func TestNewDatabase(t *testing.T) {
	db := Shared(t).DB
	var name string
	t.Run("inner", func(t *testing.T) {
		name = db.NewDatabase(t)
		db.Exec(t, "CREATE TABLE `"+name+"`.t (id INT PRIMARY KEY); INSERT INTO `"+name+"`.t VALUES (?)", 7)
		if got := db.QueryString(t, "SELECT id FROM `"+name+"`.t"); got != "7" {
			t.Errorf("select from new database: got %q, want %q", got, "7")
		}
	})
	q := "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?"
	if got := db.QueryString(t, q, name); got != "0" {
		t.Errorf("database %s after its test ended: got count %s, want 0", name, got)
	}
}

// mcCmd sends a raw memcached command and returns the reply up to and
// including the line that starts with end.
func mcCmd(t *testing.T, addr, cmd, end string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial memcached %s: %v", addr, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte(cmd)); err != nil {
		t.Fatalf("write %q: %v", cmd, err)
	}
	r := bufio.NewReader(c)
	var b strings.Builder
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("read reply to %q: %v (so far %q)", cmd, err, b.String())
		}
		b.WriteString(line)
		if strings.HasPrefix(line, end) {
			return b.String()
		}
	}
}

func TestSharedMemcached(t *testing.T) {
	mc := Shared(t).MC
	if got := mcCmd(t, mc.Addr, "set k1 0 0 5\r\nhello\r\n", "STORED"); got != "STORED\r\n" {
		t.Fatalf("set: got %q, want %q", got, "STORED\r\n")
	}
	want := "VALUE k1 0 5\r\nhello\r\nEND\r\n"
	if got := mcCmd(t, mc.Addr, "get k1\r\n", "END"); got != want {
		t.Fatalf("get: got %q, want %q", got, want)
	}
	if got := mc.Stats(t, "")["curr_items"]; got == "" || got == "0" {
		t.Errorf("stats curr_items after set: got %q, want at least 1", got)
	}
	mc.FlushAll(t)
	if got := mcCmd(t, mc.Addr, "get k1\r\n", "END"); got != "END\r\n" {
		t.Errorf("get after flush_all: got %q, want %q", got, "END\r\n")
	}
}

func TestMariaDBKillRestart(t *testing.T) {
	db, err := StartMariaDB(MariaDBOptions{ExtraArgs: []string{"--query-cache-type=1", "--query-cache-size=16M"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := db.QueryString(t, "SELECT @@query_cache_type"); got != "ON" {
		t.Errorf("query_cache_type from ExtraArgs: got %q, want ON", got)
	}
	if shared := Shared(t).DB; db.Port == shared.Port || db.DataDir == shared.DataDir {
		t.Fatalf("private instance shares port %d or datadir %s with the shared one", db.Port, db.DataDir)
	}
	db.Exec(t, "CREATE TABLE mctest.kv (k INT PRIMARY KEY, v TEXT); INSERT INTO mctest.kv VALUES (1, 'one')")

	pid := db.PID()
	if err := db.Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if db.Running() {
		t.Fatalf("Running after Kill: got true, want false")
	}
	if err := db.Kill(); !errors.Is(err, ErrNotRunning) {
		t.Errorf("second Kill: got %v, want ErrNotRunning", err)
	}
	if err := db.AdminDB().Ping(); err == nil {
		t.Errorf("ping after Kill: got nil error, want one")
	}

	port := db.Port
	if err := db.Restart(); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	if db.Port != port || db.PID() == pid {
		t.Errorf("after Restart: got port %d pid %d, want port %d and a new pid (old %d)", db.Port, db.PID(), port, pid)
	}
	if got := db.QueryString(t, "SELECT v FROM mctest.kv WHERE k = 1"); got != "one" {
		t.Errorf("row after Kill and Restart: got %q, want %q", got, "one")
	}

	if err := db.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := db.Stop(); !errors.Is(err, ErrNotRunning) {
		t.Errorf("second Stop: got %v, want ErrNotRunning", err)
	}
	if err := db.Restart(); err != nil {
		t.Fatalf("Restart after Stop: %v", err)
	}
	if got := db.QueryString(t, "SELECT COUNT(*) FROM mctest.kv"); got != "1" {
		t.Errorf("rows after Stop and Restart: got %s, want 1", got)
	}

	if err := db.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := db.Restart(); !errors.Is(err, ErrClosed) {
		t.Errorf("Restart after Close: got %v, want ErrClosed", err)
	}
	if _, err := os.Stat(db.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("temp dir after Close: got stat error %v, want not-exist", err)
	}
}

func TestMemcachedKillRestartComesBackEmpty(t *testing.T) {
	mc, err := StartMemcached(MemcachedOptions{ItemSizeMax: "2m", MemoryMB: 32})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mc.Close() })
	settings := mc.Stats(t, "settings")
	if got, want := settings["item_size_max"], fmt.Sprint(2<<20); got != want {
		t.Errorf("item_size_max: got %s, want %s", got, want)
	}
	if got, want := settings["maxbytes"], fmt.Sprint(32<<20); got != want {
		t.Errorf("maxbytes: got %s, want %s", got, want)
	}
	mcCmd(t, mc.Addr, "set k 0 0 1\r\nx\r\n", "STORED")

	if err := mc.Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if _, err := net.DialTimeout("tcp", mc.Addr, time.Second); err == nil {
		t.Errorf("dial after Kill: got nil error, want refused")
	}
	port := mc.Port
	if err := mc.Restart(); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	if mc.Port != port {
		t.Errorf("port after Restart: got %d, want %d", mc.Port, port)
	}
	if got := mcCmd(t, mc.Addr, "get k\r\n", "END"); got != "END\r\n" {
		t.Errorf("get after Restart: got %q, want %q (empty)", got, "END\r\n")
	}
}

func TestDSNFor(t *testing.T) {
	tests := []struct {
		addr, user, pass, db, params string
		want                         string
	}{
		{"127.0.0.1:3306", "root", "", "", "", "root@tcp(127.0.0.1:3306)/"},
		{"127.0.0.1:3306", "u", "p", "mctest", "", "u:p@tcp(127.0.0.1:3306)/mctest"},
		{"127.0.0.1:4000", "u", "p", "d", "parseTime=true", "u:p@tcp(127.0.0.1:4000)/d?parseTime=true"},
	}
	for _, tt := range tests {
		if got := DSNFor(tt.addr, tt.user, tt.pass, tt.db, tt.params); got != tt.want {
			t.Errorf("DSNFor(%q, %q, %q, %q, %q): got %q, want %q", tt.addr, tt.user, tt.pass, tt.db, tt.params, got, tt.want)
		}
	}
}

func TestFindBinaryMissing(t *testing.T) {
	_, err := findBinary("mycached-no-such-binary")
	if !errors.Is(err, ErrMissingBinary) {
		t.Fatalf("findBinary of a missing name: got %v, want ErrMissingBinary", err)
	}
}

func TestFreePort(t *testing.T) {
	p := FreePort(t)
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
	if err != nil {
		t.Fatalf("listen on FreePort %d: %v", p, err)
	}
	l.Close()
}
