package mysqlproxy_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/mycached/mycached/mysqlproxy"
	"github.com/mycached/mycached/mysqlproxy/internal/testenv"
)

// kvPass is the kv-only listener's test user's password.
const kvPass = "s3cret pass"

// startKVListener starts a server with no backend and serves its kv-only
// listener on a free loopback port until t ends.
func startKVListener(t testing.TB, cfg mysqlproxy.Config) string {
	t.Helper()
	logs := &testenv.LogBuffer{}
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if cfg.KVPasswords == nil {
		cfg.KVPasswords = map[string]string{"app": kvPass}
	}
	srv, err := mysqlproxy.NewServer(cfg)
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.ServeKV(ln) }()
	t.Cleanup(func() {
		_ = srv.Close()
		if err := <-served; !errors.Is(err, mysqlproxy.ErrServerClosed) {
			t.Errorf("ServeKV: got %v, want ErrServerClosed", err)
		}
		if t.Failed() {
			t.Logf("kv listener log:\n%s", logs.String())
		}
	})
	return ln.Addr().String()
}

// kvTiers are the kv listener's two stores, as configs: L1, and a private
// memcached started when the config is made.
func kvTiers(t *testing.T) map[string]func() mysqlproxy.Config {
	return map[string]func() mysqlproxy.Config{
		"l1":        func() mysqlproxy.Config { return mysqlproxy.Config{} },
		"memcached": func() mysqlproxy.Config { return mysqlproxy.Config{Memcached: []string{privateMemcached(t).Addr}} },
	}
}

// TestKVListenForms: all seven forms from go-sql-driver (text, prepared,
// interpolated) against the kv-only listener, on L1 and on memcached,
// with no MariaDB anywhere.
func TestKVListenForms(t *testing.T) {
	for name, cfg := range kvTiers(t) {
		t.Run(name, func(t *testing.T) {
			addr := startKVListener(t, cfg())
			for _, mode := range []string{"", "interpolateParams=true"} {
				db := openDB(t, testenv.DSNFor(addr, "app", kvPass, "", mode))
				db.SetMaxOpenConns(1)
				checkKVForms(t, db, mode, true)
			}
		})
	}
}

// TestKVListenAuth: only the users of KVPasswords get in, with their
// passwords; everyone else gets MySQL's access-denied error.
func TestKVListenAuth(t *testing.T) {
	addr := startKVListener(t, mysqlproxy.Config{KVPasswords: map[string]string{
		"app":    kvPass,
		"hashed": "*" + strings.ToUpper("2470c0c06dee42fd1618bb99005adca2ec9d1e19"), // PASSWORD('password')
		"nopass": "",
	}})
	for _, c := range []struct {
		user, pass string
		ok         bool
	}{
		{"app", kvPass, true},
		{"hashed", "password", true},
		{"nopass", "", true},
		{"app", "wrong", false},
		{"app", "", false},
		{"hashed", "*2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19", false},
		{"nopass", "something", false},
		{"stranger", kvPass, false},
		{"root", "", false},
	} {
		db := openDB(t, testenv.DSNFor(addr, c.user, c.pass, "", ""))
		err := db.Ping()
		switch {
		case c.ok && err != nil:
			t.Errorf("%s/%q: got %v, want in", c.user, c.pass, err)
		case !c.ok && err == nil:
			t.Errorf("%s/%q: got in, want error 1045", c.user, c.pass)
		case !c.ok && mysqlErr(t, err).Number != 1045:
			t.Errorf("%s/%q: got %v, want error 1045", c.user, c.pass, err)
		}
	}
}

// TestKVListenMaxConnections: connections past KVMaxConnections, idle
// ones included, get MySQL's "Too many connections" and take nothing;
// once one goes, another gets in.
func TestKVListenMaxConnections(t *testing.T) {
	addr := startKVListener(t, mysqlproxy.Config{KVMaxConnections: 2})
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		held = append(held, c)
	}
	// The greeting says the listener took the connection.
	for _, c := range held {
		if _, err := c.Read(make([]byte, 1)); err != nil {
			t.Fatalf("a connection within the bound: %v", err)
		}
	}
	for range 3 {
		db := openDB(t, testenv.DSNFor(addr, "app", kvPass, "", ""))
		err := db.Ping()
		if err == nil || mysqlErr(t, err).Number != 1040 || mysqlErr(t, err).SQLState != [5]byte{'0', '8', '0', '0', '4'} {
			t.Fatalf("a connection past the bound: got %v, want error 1040 (08004)", err)
		}
		db.Close()
	}
	held[0].Close()
	db := openDB(t, testenv.DSNFor(addr, "app", kvPass, "", ""))
	waitFor(t, 5*time.Second, "a connection once one went", func() bool { return db.Ping() == nil })
}

// TestKVListenStalledRepliesBounded: clients that ask for a large value
// and never read it hold their replies against the fill memory; past it,
// a large reply gets error 1041 rather than more memory, and once the
// stalled clients go the value is served again.
func TestKVListenStalledRepliesBounded(t *testing.T) {
	addr := startKVListener(t, mysqlproxy.Config{FillMemory: 24 << 20, KVMaxBytes: 16 << 20})
	db := openDB(t, testenv.DSNFor(addr, "app", kvPass, "", ""))
	big := strings.Repeat("v", 10<<20)
	if _, err := db.Exec(`INSERT "big" = ?`, big); err != nil {
		t.Fatalf("INSERT: %v", err)
	}
	read := func() error {
		var k, v string
		err := db.QueryRow(`SELECT "big"`).Scan(&k, &v)
		if err == nil && v != big {
			t.Fatalf(`SELECT "big": %d bytes`, len(v))
		}
		return err
	}
	if err := read(); err != nil {
		t.Fatalf(`SELECT "big" with no one stalled: %v`, err)
	}
	var stalled []*client.Conn
	for range 2 {
		c, err := client.ConnectWithDialer(context.Background(), "tcp", addr, "app", kvPass, "", dialSmallBuffers)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.ResetSequence()
		if err := c.WritePacket(append([]byte{0, 0, 0, 0, 0x03}, `SELECT "big"`...)); err != nil {
			t.Fatal(err)
		}
		// The reply's first packet says its memory is taken: the
		// listener takes it before it writes.
		if p, err := c.ReadPacket(); err != nil || len(p) == 0 || p[0] == 0xff {
			t.Fatalf("stalled client's reply: %q, %v", p, err)
		}
		stalled = append(stalled, c)
	}
	var err error
	waitFor(t, 10*time.Second, "a reply refused for want of memory", func() bool {
		err = read()
		return err != nil
	})
	if mysqlErr(t, err).Number != 1041 {
		t.Fatalf(`SELECT "big" with two stalled clients: got %v, want error 1041`, err)
	}
	for _, c := range stalled {
		c.Close()
	}
	waitFor(t, 10*time.Second, "the value served again", func() bool { return read() == nil })
}

// TestKVListenRefusesSQL: SQL gets an error that says what the listener
// is for, and the connection goes on working.
func TestKVListenRefusesSQL(t *testing.T) {
	addr := startKVListener(t, mysqlproxy.Config{})
	db := openDB(t, testenv.DSNFor(addr, "app", kvPass, "", ""))
	db.SetMaxOpenConns(1)
	for _, q := range []string{`SELECT 1`, `SELECT "x" AS y`, `SELECT 'x' FROM t`, `CREATE TABLE t (a INT)`, `SHOW DATABASES`} {
		var s string
		err := db.QueryRow(q).Scan(&s)
		if err == nil {
			t.Errorf("%s: got %q, want an error", q, s)
			continue
		}
		if e := mysqlErr(t, err); e.Number != 1235 || !strings.Contains(e.Message, "only the key/value") {
			t.Errorf("%s: got %d %q, want 1235 about key/value pseudo-queries", q, e.Number, e.Message)
		}
		if _, err := db.Exec(`INSERT "after" = "ok"`); err != nil {
			t.Fatalf("after %s the connection broke: %v", q, err)
		}
	}
	if _, err := db.Prepare(`SELECT a FROM t WHERE id = ?`); err == nil || mysqlErr(t, err).Number != 1235 {
		t.Errorf("prepare of SQL: got %v, want error 1235", err)
	}
	if _, err := db.Exec(`INSERT "k" = `); err == nil || mysqlErr(t, err).Number != 1064 {
		t.Errorf("malformed pseudo-query: got %v, want error 1064", err)
	}
	if got := kvRows(t, db, `SELECT "after"`); strings.Join(got, " ") != "after=ok" {
		t.Errorf(`SELECT "after": got %v, want after=ok`, got)
	}
}

// TestKVListenTrailBackslashCharset: in sjis (and big5, gbk, cp932) a
// character may end in 0x5C. A text with such bytes from a client whose
// handshake named one of them is refused with a syntax error, not read
// with half a character taken for a backslash; hex literals and ASCII
// still work, and utf8mb4 clients send any bytes.
func TestKVListenTrailBackslashCharset(t *testing.T) {
	addr := startKVListener(t, mysqlproxy.Config{})
	sjis := openDB(t, testenv.DSNFor(addr, "app", kvPass, "", "collation=sjis_japanese_ci"))
	sjis.SetMaxOpenConns(1)
	// Katakana SO in sjis is 0x83 0x5C: the key ends in what reads as an
	// escape of the closing quote, and the value's "=" would be taken for
	// the statement's.
	for _, q := range []string{"INSERT '\x83\x5c'='=0x41 #'", "SELECT '\x83\x5c'"} {
		_, err := sjis.Exec(q)
		if err == nil || mysqlErr(t, err).Number != 1064 || !strings.Contains(mysqlErr(t, err).Message, "character set") {
			t.Errorf("%q from an sjis client: got %v, want error 1064 about the character set", q, err)
		}
	}
	if _, err := sjis.Exec(`INSERT X'835C' = X'3D307834312023'`); err != nil {
		t.Fatalf("hex literals from an sjis client: %v", err)
	}
	utf := openDB(t, testenv.DSNFor(addr, "app", kvPass, "", "collation=utf8mb4_general_ci"))
	if got := kvRows(t, utf, "SELECT ?", []byte{0x83, 0x5c}); strings.Join(got, " ") != "\x83\x5c==0x41 #" {
		t.Errorf("SELECT ? of 0x835C: got %q, want the pair stored by hex literals", got)
	}
	// Where no text is SQL, a SELECT takes keys as INSERT does: the sjis
	// client reads its key back in the quoting it wrote it in.
	for _, q := range []string{`SELECT X'835C'`, `SELECT 0x835C`, `SELECT x'835c', 'none'`} {
		if got := kvRows(t, sjis, q); strings.Join(got, " ") != "\x83\x5c==0x41 #" {
			t.Errorf("%s from an sjis client: got %q, want the pair stored by hex literals", q, got)
		}
	}
	if got := kvRows(t, utf, "SELECT 'none', _binary'\x83\\\\'"); strings.Join(got, " ") != "\x83\x5c==0x41 #" {
		t.Errorf("SELECT of single-quoted keys: got %q, want the pair stored by hex literals", got)
	}
}

// TestKVListenCLIAndPyMySQL: the mariadb client, including the banner
// query it sends when it starts, and PyMySQL, which sets up its session
// with SET statements and commits.
func TestKVListenCLIAndPyMySQL(t *testing.T) {
	addr := startKVListener(t, mysqlproxy.Config{})
	host, port, _ := strings.Cut(addr, ":")
	cli := exec.Command("mariadb", "-h", host, "-P", port, "-uapp", "-p"+kvPass, "--batch", "-e",
		`SELECT @@version_comment LIMIT 1; INSERT "k1" = 'one'; INSERT "k2" = "two" TTL 60; SELECT "k1"; SELECT "k1", "k2"; DELETE "k1"; SELECT *; DROP;`)
	out, err := cli.CombinedOutput()
	if err != nil {
		t.Fatalf("mariadb: %v\n%s", err, out)
	}
	want := "@@version_comment\nmycached key/value listener\nkey\tvalue\nk1\tone\nkey\tvalue\nk1\tone\nk2\ttwo\nkey\tvalue\nk2\ttwo\n"
	if string(out) != want {
		t.Errorf("mariadb output:\ngot  %q\nwant %q", out, want)
	}
	cli = exec.Command("mariadb", "-h", host, "-P", port, "-uapp", "-pwrong", "--batch", "-e", `SELECT "k"`)
	if out, err := cli.CombinedOutput(); err == nil || !strings.Contains(string(out), "1045") {
		t.Errorf("mariadb with a wrong password: got %v\n%s\nwant ERROR 1045", err, out)
	}
	// With -e the client stops at the first error; from a script, --force
	// carries on, over the same connection.
	cli = exec.Command("mariadb", "-h", host, "-P", port, "-uapp", "-p"+kvPass, "--batch", "--force")
	cli.Stdin = strings.NewReader(`SELECT 1; INSERT "k3" = "three"; SELECT "k3";`)
	out, _ = cli.CombinedOutput()
	if !strings.Contains(string(out), "ERROR 1235") || !strings.Contains(string(out), "k3\tthree") {
		t.Errorf("mariadb --force with SQL then kv: got\n%s\nwant ERROR 1235, then the kv result", out)
	}
	py := exec.Command("/usr/bin/python3", "-c", `
import pymysql, sys
c = pymysql.connect(host=sys.argv[1], port=int(sys.argv[2]), user="app", password=sys.argv[3])
cur = c.cursor()
cur.execute('INSERT %s = %s', ("pk", "pv"))
c.commit()
cur.execute('SELECT "pk"')
print(cur.fetchall())
cur.execute('DELETE %s', ("pk",))
print(cur.rowcount)
c.close()
`, host, port, kvPass)
	out, err = py.CombinedOutput()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	if got := string(out); got != "(('pk', 'pv'),)\n1\n" {
		t.Errorf("PyMySQL output: got %q, want %q", got, "(('pk', 'pv'),)\n1\n")
	}
}

// TestKVListenAuthSwitch: a client that starts with caching_sha2_password
// is switched to mysql_native_password and gets in with the right
// password, and not with a wrong one.
func TestKVListenAuthSwitch(t *testing.T) {
	addr := startKVListener(t, mysqlproxy.Config{})
	for _, c := range []struct {
		pass string
		want byte
	}{{kvPass, mysql.OK_HEADER}, {"wrong", mysql.ERR_HEADER}} {
		conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
		r := bufio.NewReader(conn)
		greeting, _ := readRawPacket(t, r)
		if greeting[0] != 10 {
			t.Fatalf("greeting: protocol %d, want 10", greeting[0])
		}
		caps := uint32(mysql.CLIENT_PROTOCOL_41 | mysql.CLIENT_SECURE_CONNECTION | mysql.CLIENT_PLUGIN_AUTH |
			mysql.CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA | mysql.CLIENT_LONG_PASSWORD)
		resp := binary.LittleEndian.AppendUint32(nil, caps)
		resp = binary.LittleEndian.AppendUint32(resp, 1<<24)
		resp = append(resp, 45)
		resp = append(resp, make([]byte, 23)...)
		resp = append(resp, "app\x00"...)
		resp = append(resp, 32)
		resp = append(resp, make([]byte, 32)...) // a sha256 scramble the server cannot check
		resp = append(resp, "caching_sha2_password\x00"...)
		writeRawPacket(t, conn, resp, 1)
		sw, seq := readRawPacket(t, r)
		plugin, rest, _ := strings.Cut(string(sw[1:]), "\x00")
		if sw[0] != 0xfe || plugin != "mysql_native_password" || len(rest) != 21 {
			t.Fatalf("after a caching_sha2_password reply: got %q, want an auth switch to mysql_native_password", sw)
		}
		writeRawPacket(t, conn, mysql.CalcNativePassword([]byte(rest[:20]), []byte(c.pass)), seq+1)
		res, _ := readRawPacket(t, r)
		if res[0] != c.want {
			t.Errorf("password %q after the switch: got %q, want header %#x", c.pass, res, c.want)
		}
		conn.Close()
	}
}

func readRawPacket(t *testing.T, r *bufio.Reader) ([]byte, byte) {
	t.Helper()
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		t.Fatalf("read header: %v", err)
	}
	p := make([]byte, int(h[0])|int(h[1])<<8|int(h[2])<<16)
	if _, err := io.ReadFull(r, p); err != nil || len(p) == 0 {
		t.Fatalf("read payload: %v (%d bytes)", err, len(p))
	}
	return p, h[3]
}

func writeRawPacket(t *testing.T, w io.Writer, p []byte, seq byte) {
	t.Helper()
	h := []byte{byte(len(p)), byte(len(p) >> 8), byte(len(p) >> 16), seq}
	if _, err := w.Write(append(h, p...)); err != nil {
		t.Fatalf("write: %v", err)
	}
}

// TestKVListenConnectorJ: MariaDB Connector/J reads system variables
// when it connects, with SELECT @@... and then SHOW VARIABLES, and gives
// up when neither answers. It connects to the kv-only listener, with and
// without a database named, and uses kv with text and server-prepared
// statements.
func TestKVListenConnectorJ(t *testing.T) {
	addr := startKVListener(t, mysqlproxy.Config{})
	host, port, _ := strings.Cut(addr, ":")
	kv := javaProgram(t, "KV", `import java.sql.*;
public class KV { public static void main(String[] a) throws Exception {
  java.util.Properties p = new java.util.Properties();
  p.setProperty("user", "app");
  p.setProperty("password", a[2]);
  try (Connection c = DriverManager.getConnection("jdbc:mariadb://" + a[0] + "/" + a[1] + "?" + a[3], p)) {
    c.createStatement().executeUpdate("INSERT \"j\" = \"v1\"");
    ResultSet r = c.createStatement().executeQuery("SELECT \"j\"");
    while (r.next()) System.out.print(r.getString(1) + "=" + r.getString(2) + ";");
    PreparedStatement ps = c.prepareStatement("SELECT ?");
    ps.setString(1, "j");
    if (a[3].contains("useServerPrepStmts=true")) {
      r = ps.executeQuery();
      while (r.next()) System.out.print("prepared " + r.getString(1) + "=" + r.getString(2) + ";");
    }
    System.out.println();
  }
}}
`)
	for _, c := range []struct{ db, opts, want string }{
		{"", "", "j=v1;\n"},
		{"appdb", "useServerPrepStmts=true", "j=v1;prepared j=v1;\n"},
	} {
		out, err := kv(addr, c.db, kvPass, c.opts).CombinedOutput()
		if err != nil || string(out) != c.want {
			t.Errorf("Connector/J to %s:%s, database %q%s: got %v\n%s\nwant %q", host, port, c.db, c.opts, err, out, c.want)
		}
	}
	// The server's error for a variable the listener does not have.
	db := openDB(t, testenv.DSNFor(addr, "app", kvPass, "", ""))
	var v string
	if err := db.QueryRow(`SELECT @@no_such_variable`).Scan(&v); err == nil || mysqlErr(t, err).Number != 1193 {
		t.Errorf("SELECT @@no_such_variable: got %q, %v; want error 1193", v, err)
	}
}

// TestKVListenClosesSilentClients: a client that connects to the kv
// listener and never answers the greeting is closed after MariaDB's
// default connect_timeout (10 s), as the server closes it, so that such
// clients do not hold the listener's connection slots for longer.
func TestKVListenClosesSilentClients(t *testing.T) {
	t.Parallel()
	addr := startKVListener(t, mysqlproxy.Config{})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	_ = c.SetReadDeadline(start.Add(30 * time.Second))
	if _, err := io.ReadAll(c); err != nil {
		t.Fatalf("the greeting, then the close: %v after %v", err, time.Since(start))
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("a silent client was closed after %v, want about 10 s", d)
	}
}

// TestKVListenDeniedLogBounded: a brute force of the kv listener's
// passwords cannot fill the log: refused logins are logged within the
// bound on lines of sessions that end badly.
func TestKVListenDeniedLogBounded(t *testing.T) {
	t.Parallel()
	logs := &testenv.LogBuffer{}
	srv, err := mysqlproxy.NewServer(mysqlproxy.Config{KVPasswords: map[string]string{"app": kvPass},
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.ServeKV(ln) }()
	defer srv.Close()
	start := time.Now()
	const attempts = 300
	for i := range attempts {
		if c, err := client.Connect(ln.Addr().String(), "app", fmt.Sprintf("guess%d", i), ""); err == nil {
			c.Close()
			t.Fatalf("guess %d logged in", i)
		}
	}
	secs := int(time.Since(start)/time.Second) + 2
	if n := strings.Count(logs.String(), "kv access denied"); n == 0 || n > 20*secs {
		t.Errorf("%d refused logins in %d s logged %d lines, want some and at most %d", attempts, secs-2, n, 20*secs)
	}
}

// TestKVListenUnknownStatement: an execute or a reset of a statement the
// session never prepared gets the server's error, message included, on
// the kv-only listener and for a kv account's last statement id.
func TestKVListenUnknownStatement(t *testing.T) {
	t.Parallel()
	m := testenvShared(t)
	kvAddr := startKVListener(t, mysqlproxy.Config{})
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr, KVUsers: []string{"root"}})
	errOf := func(c *rawConn, payload ...byte) string {
		_, last := c.exchange(t, payload...)
		if len(last) < 9 || last[0] != 0xff {
			t.Fatalf("want an error packet, got %x", last)
		}
		return fmt.Sprintf("%d #%s %s", binary.LittleEndian.Uint16(last[1:]), last[4:9], last[9:])
	}
	exec := func(id uint32) []byte {
		return binary.LittleEndian.AppendUint32([]byte{mysql.COM_STMT_EXECUTE}, id)
	}
	direct := dialRaw(t, m.Addr, "root", rootPass, "", false)
	kvOnly := dialRaw(t, kvAddr, "app", kvPass, "", false)
	for _, cmd := range [][]byte{
		append(exec(77), 0, 1, 0, 0, 0),
		binary.LittleEndian.AppendUint32([]byte{mysql.COM_STMT_RESET}, 77),
	} {
		if got, want := errOf(kvOnly, cmd...), errOf(direct, cmd...); got != want {
			t.Errorf("kv listener, command %x: got %q, want %q", cmd[0], got, want)
		}
	}
	// A kv account whose last prepare was kv, then one the server
	// refused: the last statement id names none.
	via := dialRaw(t, p.addr, "root", rootPass, "", false)
	for _, c := range []*rawConn{direct, via} {
		for _, q := range []string{"INSERT ? = ?", "SELCT 1"} {
			_, _ = c.Prepare(q) // kv through mycached, refused directly; refused
		}
	}
	last := append(exec(0xffffffff), 0, 1, 0, 0, 0)
	if got, want := errOf(via, last...), errOf(direct, last...); got != want {
		t.Errorf("execute of the last statement after a refused prepare: got %q, want %q", got, want)
	}
}

// TestKVListenHandshakeOutOfOrder: a handshake reply with the wrong
// sequence id gets the server's "Got packets out of order" and a closed
// connection, even with the right password; at the right one, the same
// reply gets in.
func TestKVListenHandshakeOutOfOrder(t *testing.T) {
	addr := startKVListener(t, mysqlproxy.Config{})
	for _, seq := range []byte{0, 1, 2, 5} {
		nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
		greeting := readGreeting(t, nc)
		// The scramble: 8 bytes after the version and the connection id,
		// then 12 after the 13 bytes of capabilities, charset, status and
		// reserved.
		v := strings.IndexByte(string(greeting[1:]), 0) + 2
		scramble := append(append([]byte{}, greeting[v+4:v+12]...), greeting[v+31:v+43]...)
		auth := mysql.CalcNativePassword(scramble, []byte(kvPass))
		body := binary.LittleEndian.AppendUint32(nil, mysql.CLIENT_PROTOCOL_41|mysql.CLIENT_SECURE_CONNECTION|mysql.CLIENT_PLUGIN_AUTH)
		body = binary.LittleEndian.AppendUint32(body, 1<<24)
		body = append(body, 45)
		body = append(body, make([]byte, 23)...)
		body = append(body, "app\x00"...)
		body = append(append(body, byte(len(auth))), auth...)
		body = append(body, "mysql_native_password\x00"...)
		pkt := append([]byte{byte(len(body)), byte(len(body) >> 8), 0, seq}, body...)
		if _, err := nc.Write(pkt); err != nil {
			t.Fatal(err)
		}
		if seq == 1 {
			var h [5]byte
			if _, err := io.ReadFull(nc, h[:]); err != nil || h[3] != 2 || h[4] != 0 {
				t.Errorf("at sequence id 1: got %x, %v; want an OK at sequence id 2", h, err)
			}
			nc.Close()
			continue
		}
		got := readToClose(nc)
		nc.Close()
		// 1156 (0x0484) with SQL state 08S01, then the close.
		if !strings.Contains(got, "ff8404233038533031") || !strings.HasSuffix(got, "closed") {
			t.Errorf("at sequence id %d: got %s, want error 1156 and a closed connection", seq, got)
		}
	}
}
