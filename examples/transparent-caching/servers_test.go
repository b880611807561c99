package main

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// The example lives outside mysqlproxy, so it cannot import
// mysqlproxy/internal/testenv; these helpers start the same kind of
// private servers, with only what this test needs.

const rootPassword = "example-root"

// lookBin finds a server binary on PATH or in the Debian sbin dirs, which
// a non-login PATH often lacks. A missing binary fails the test: CI
// installs them with `make deps`.
func lookBin(t *testing.T, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, d := range []string{"/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin"} {
		if p := filepath.Join(d, name); fileExists(p) {
			return p
		}
	}
	t.Fatalf("%s not found; run `make deps` as root to install it", name)
	return ""
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// freePort returns a port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startProc starts a server, logging to dir/name.log, and kills it by its
// pid when the test ends.
func startProc(t *testing.T, dir, name, bin string, args ...string) {
	t.Helper()
	logf, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// The servers must not outlive a test binary that crashes.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		logf.Close()
	})
}

// waitPort waits until addr accepts connections.
func waitPort(t *testing.T, addr, log string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(log)
			t.Fatalf("nothing listening on %s: %v\n%s", addr, err, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startMariaDB starts a private MariaDB with database shop and returns its
// address; root@127.0.0.1 has rootPassword.
func startMariaDB(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	sock := filepath.Join(dir, "mariadbd.sock")
	var user []string
	if os.Geteuid() == 0 {
		user = []string{"--user=root"}
	}
	install := exec.Command(lookBin(t, "mariadb-install-db"), append([]string{"--no-defaults",
		"--auth-root-authentication-method=normal", "--skip-test-db", "--skip-name-resolve",
		"--datadir=" + data, "--innodb-log-file-size=48M"}, user...)...)
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("mariadb-install-db: %v\n%s", err, out)
	}
	port := freePort(t)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	errLog := filepath.Join(dir, "error.log")
	startProc(t, dir, "mariadbd", lookBin(t, "mariadbd"), append([]string{"--no-defaults",
		"--datadir=" + data, "--socket=" + sock, "--port=" + strconv.Itoa(port),
		"--bind-address=127.0.0.1", "--skip-name-resolve", "--log-error=" + errLog,
		"--pid-file=" + filepath.Join(dir, "mariadbd.pid"), "--tmpdir=" + dir,
		"--character-set-server=utf8mb4", "--collation-server=utf8mb4_general_ci",
		"--innodb-log-file-size=48M", "--innodb-flush-log-at-trx-commit=2"}, user...)...)
	waitPort(t, addr, errLog)
	db, err := sql.Open("mysql", "root@unix("+sock+")/")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// mariadbd listens on TCP a moment before it creates its socket.
	deadline := time.Now().Add(60 * time.Second)
	for err = db.Ping(); err != nil; err = db.Ping() {
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(errLog)
			t.Fatalf("no answer on %s: %v\n%s", sock, err, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, s := range []string{
		"CREATE USER IF NOT EXISTS 'root'@'127.0.0.1'",
		"ALTER USER 'root'@'127.0.0.1' IDENTIFIED BY '" + rootPassword + "'",
		"GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION",
		"CREATE DATABASE shop",
	} {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("bootstrap %q: %v", s, err)
		}
	}
	return addr
}

// startMemcached starts a private memcached and returns its address.
func startMemcached(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	_, port, _ := net.SplitHostPort(addr)
	args := []string{"-l", "127.0.0.1", "-p", port, "-U", "0", "-m", "64"}
	if os.Geteuid() == 0 {
		args = append(args, "-u", "root") // memcached refuses root otherwise
	}
	startProc(t, dir, "memcached", lookBin(t, "memcached"), args...)
	waitPort(t, addr, filepath.Join(dir, "memcached.log"))
	return addr
}

// startMycached builds cmd/mycached from this tree and starts it in front
// of backend, with memcached, and returns its address.
func startMycached(t *testing.T, backend, memcached string) string {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "mycached")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "../../cmd/mycached").CombinedOutput(); err != nil {
		t.Fatalf("go build mycached: %v\n%s", err, out)
	}
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	startProc(t, dir, "mycached", bin, "--listen", addr, "--backend", backend,
		"--memcached", memcached, "--backend-tls", "off")
	waitPort(t, addr, filepath.Join(dir, "mycached.log"))
	return addr
}

func dsn(addr string) string {
	return fmt.Sprintf("root:%s@tcp(%s)/shop?interpolateParams=true", rootPassword, addr)
}
