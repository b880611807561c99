package main

import (
	"database/sql"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

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

// TestKVListenBinary: the daemon serves --kv-listen to the users of
// --kv-users-file with their passwords, with no backend running at all.
func TestKVListenBinary(t *testing.T) {
	bin := buildBinary(t)
	dir := t.TempDir()
	users := filepath.Join(dir, "kv-users")
	if err := os.WriteFile(users, []byte("# user:password\nreader\napp:pa:ss\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	kvAddr := freeAddr(t)
	cmd := exec.Command(bin, "--listen", freeAddr(t), "--backend", freeAddr(t), // nothing listens there
		"--kv-listen", kvAddr, "--kv-users-file", users)
	logPath := filepath.Join(dir, "mycached.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
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
