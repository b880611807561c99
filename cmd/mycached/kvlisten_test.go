package main

import (
	"bytes"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-sql-driver/mysql"
)

// freeAddr returns a loopback address that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startKVBinary runs bin with a kv-only listener for the users of the
// kv-users file text, and no backend; it returns the listener's address
// and the process.
func startKVBinary(t *testing.T, bin, users string, args ...string) (string, *os.Process) {
	t.Helper()
	dir := t.TempDir()
	usersPath := filepath.Join(dir, "kv-users")
	if err := os.WriteFile(usersPath, []byte(users), 0o600); err != nil {
		t.Fatal(err)
	}
	kvAddr := freeAddr(t)
	cmd := exec.Command(bin, append([]string{"--listen", freeAddr(t), "--backend", freeAddr(t), // nothing listens there
		"--kv-listen", kvAddr, "--kv-users-file", usersPath}, args...)...)
	logPath := filepath.Join(dir, "mycached.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logf.Close() })
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("mycached log:\n%s", b)
		}
	})
	for i := 0; ; i++ {
		c, err := net.Dial("tcp", kvAddr)
		if err == nil {
			c.Close()
			break
		}
		if i == 100 {
			t.Fatalf("mycached never listened on %s: %v", kvAddr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return kvAddr, cmd.Process
}

// TestKVListenBinary: the daemon serves --kv-listen to the users of
// --kv-users-file with their passwords, with no backend running at all.
func TestKVListenBinary(t *testing.T) {
	bin := buildBinary(t)
	kvAddr, _ := startKVBinary(t, bin, "# user:password\nreader\napp:pa:ss\n")

	db, err := sql.Open("mysql", "app:pa:ss@tcp("+kvAddr+")/")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`INSERT "greeting" = ?`, "hello"); err != nil {
		t.Fatalf("INSERT: %v", err)
	}
	var k, v string
	if err := db.QueryRow(`SELECT "greeting"`).Scan(&k, &v); err != nil || v != "hello" {
		t.Errorf(`SELECT "greeting": got %q, %v; want hello`, v, err)
	}
	for _, dsn := range []string{"app:wrong@tcp(" + kvAddr + ")/", "reader@tcp(" + kvAddr + ")/"} {
		bad, _ := sql.Open("mysql", dsn)
		err := bad.Ping()
		bad.Close()
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != 1045 {
			t.Errorf("%s: got %v, want error 1045", dsn, err)
		}
	}
}

// stalledKVClient logs in to a kv-only listener as user with password
// (mysql_native_password), asks for key and never reads the answer. Its
// receive buffer is small, so that the answer soon fills it.
func stalledKVClient(addr, user, password, key string) (net.Conn, error) {
	d := net.Dialer{Timeout: 10 * time.Second, Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) {
			_ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		})
	}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	fail := func(err error) (net.Conn, error) { c.Close(); return nil, err }
	greeting, err := readTestPacket(c)
	if err != nil {
		return fail(err)
	}
	// Protocol 10: version, connection id, scramble part 1, filler, caps,
	// charset, status, caps, scramble length, reserved, scramble part 2.
	i := bytes.IndexByte(greeting[1:], 0) + 2 + 4
	if i < 6 || len(greeting) < i+8+1+2+1+2+2+1+10+12 {
		return fail(fmt.Errorf("short greeting % x", greeting))
	}
	scramble := append(append([]byte(nil), greeting[i:i+8]...), greeting[i+8+1+2+1+2+2+1+10:][:12]...)
	auth := gomysql.CalcNativePassword(scramble, []byte(password))
	caps := uint32(gomysql.CLIENT_PROTOCOL_41 | gomysql.CLIENT_SECURE_CONNECTION | gomysql.CLIENT_PLUGIN_AUTH | gomysql.CLIENT_LONG_PASSWORD)
	resp := binary.LittleEndian.AppendUint32(nil, caps)
	resp = binary.LittleEndian.AppendUint32(resp, 1<<24)
	resp = append(resp, 45)
	resp = append(resp, make([]byte, 23)...)
	resp = append(append(resp, user...), 0)
	resp = append(append(resp, byte(len(auth))), auth...)
	resp = append(append(resp, "mysql_native_password"...), 0)
	if err := writeTestPacket(c, resp, 1); err != nil {
		return fail(err)
	}
	ok, err := readTestPacket(c)
	if err != nil || len(ok) == 0 || ok[0] != 0 {
		return fail(fmt.Errorf("login: % x, %v", ok, err))
	}
	if err := writeTestPacket(c, append([]byte{gomysql.COM_QUERY}, `SELECT "`+key+`"`...), 0); err != nil {
		return fail(err)
	}
	_ = c.SetDeadline(time.Time{})
	return c, nil
}

func readTestPacket(c net.Conn) ([]byte, error) {
	var h [4]byte
	if _, err := io.ReadFull(c, h[:]); err != nil {
		return nil, err
	}
	p := make([]byte, int(h[0])|int(h[1])<<8|int(h[2])<<16)
	_, err := io.ReadFull(c, p)
	return p, err
}

func writeTestPacket(c net.Conn, p []byte, seq byte) error {
	_, err := c.Write(append([]byte{byte(len(p)), byte(len(p) >> 8), byte(len(p) >> 16), seq}, p...))
	return err
}

// threads returns the number of threads of process pid.
func threads(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("process %d: %v", pid, err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "Threads:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	t.Fatalf("process %d: no thread count", pid)
	return 0
}

// TestKVListenStalledClients: 10,000 clients that ask the kv-only
// listener for a 64 KiB value and never read it cost the daemon memory,
// not threads: it stays under 100 threads, and goes on serving others.
func TestKVListenStalledClients(t *testing.T) {
	const n = 10000
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Cur < n+1000 {
		lim.Cur = min(lim.Max, n+1000)
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur < n+1000 {
			t.Fatalf("this test needs %d descriptors; the limit is %d (%v)", n+1000, lim.Cur, err)
		}
	}
	bin := buildBinary(t)
	kvAddr, proc := startKVBinary(t, bin, "app:pw\n", "--kv-max-connections", strconv.Itoa(n+10))
	db, err := sql.Open("mysql", "app:pw@tcp("+kvAddr+")/")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	big := strings.Repeat("v", 64<<10)
	if _, err := db.Exec(`INSERT "big" = ?`, big); err != nil {
		t.Fatalf("INSERT: %v", err)
	}
	before := threads(t, proc.Pid)
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for len(conns) < n {
		c, err := stalledKVClient(kvAddr, "app", "pw", "big")
		if err != nil {
			t.Fatalf("stalled client %d: %v", len(conns), err)
		}
		conns = append(conns, c)
	}
	during := threads(t, proc.Pid)
	t.Logf("threads: %d before, %d with %d stalled clients", before, during, n)
	if during >= 100 {
		t.Errorf("%d threads with %d stalled clients, want under 100", during, n)
	}
	var k, v string
	if err := db.QueryRow(`SELECT "big"`).Scan(&k, &v); err != nil || v != big {
		t.Errorf(`another client's SELECT "big": %d bytes, %v`, len(v), err)
	}
	for _, c := range conns {
		c.Close()
	}
	conns = nil
	if _, err := db.Exec(`INSERT "after" = "yes"`); err != nil {
		t.Errorf("after the stalled clients left: %v", err)
	}
	if after := threads(t, proc.Pid); after >= 100 {
		t.Errorf("%d threads after the stalled clients left, want under 100", after)
	}
}
