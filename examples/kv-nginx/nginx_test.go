package kvnginx

import (
	"bytes"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// The password of the kv user in the test's --kv-users-file.
const kvPassword = "nginx-example"

// TestNginxServesKV is the README's walk-through: JSON set with the mariadb
// client through mycached's kv-only listener is served byte for byte by
// nginx from memcached, a 1.5 MiB value too with memcached's -I 4m, and a
// value over memcached's item size limit is refused with an error that
// names -I. No MariaDB is involved: the kv-only listener needs none.
func TestNginxServesKV(t *testing.T) {
	dir := t.TempDir()
	mycached := buildMycached(t, dir)
	users := filepath.Join(dir, "kv-users")
	if err := os.WriteFile(users, []byte("app:"+kvPassword+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bigMC := startMemcached(t, "-I", "4m")
	kvAddr := startMycached(t, mycached, users, bigMC)
	web := startNginx(t, bigMC)

	// The mysql client writes the page.
	page := `{"title":"Home","items":[1,2,3],"note":"café, \"quoted\""}`
	host, port, _ := net.SplitHostPort(kvAddr)
	cli := exec.Command(lookBin(t, "mariadb"), "-h", host, "-P", port, "-uapp", "-p"+kvPassword, "--batch", "-e",
		`INSERT "page:/home" = '`+strings.ReplaceAll(page, `\`, `\\`)+`'`) // SQL doubles backslashes
	if out, err := cli.CombinedOutput(); err != nil {
		t.Fatalf("mariadb INSERT: %v\n%s", err, out)
	}
	body, ctype := get(t, web, "page:/home", http.StatusOK)
	if string(body) != page {
		t.Errorf("nginx /kv?k=page:/home: got %q, want %q", body, page)
	}
	if ctype != "application/json" {
		t.Errorf("Content-Type: got %q, want application/json", ctype)
	}
	get(t, web, "page:/nowhere", http.StatusNotFound)

	// A large value, from go-sql-driver: 1.5 MiB fits in -I 4m.
	db := openKV(t, kvAddr)
	big := bigJSON(1536 << 10)
	if _, err := db.Exec("INSERT ? = ?", "page:/big", big); err != nil {
		t.Fatalf("INSERT 1.5 MiB: %v", err)
	}
	if body, _ := get(t, web, "page:/big", http.StatusOK); !bytes.Equal(body, big) {
		t.Errorf("nginx /kv?k=page:/big: got %d bytes, want the %d bytes written (equal: false)", len(body), len(big))
	}

	// With memcached's default 1 MiB items, the same value is refused, and
	// the error says which setting to change.
	smallMC := startMemcached(t)
	small := openKV(t, startMycached(t, mycached, users, smallMC))
	_, err := small.Exec("INSERT ? = ?", "page:/big", big)
	var me *mysql.MySQLError
	if !errors.As(err, &me) || !strings.Contains(me.Message, "-I") {
		t.Fatalf("INSERT 1.5 MiB with -I 1m: got %v, want a MySQL error naming memcached's -I", err)
	}
	rows, err := small.Query(`SELECT "page:/big"`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	if rows.Next() {
		t.Errorf("the refused value was stored")
	}
}

// get fetches /kv?k=key from nginx and checks the status.
func get(t *testing.T, web, key string, status int) (body []byte, contentType string) {
	t.Helper()
	resp, err := http.Get("http://" + web + "/kv?k=" + key)
	if err != nil {
		t.Fatalf("GET %s: %v", key, err)
	}
	defer resp.Body.Close()
	body, err = io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading the body: %v", key, err)
	}
	if resp.StatusCode != status {
		t.Fatalf("GET %s: got status %d, want %d", key, resp.StatusCode, status)
	}
	return body, resp.Header.Get("Content-Type")
}

// bigJSON returns a JSON array of about n bytes.
func bigJSON(n int) []byte {
	b := []byte("[")
	for i := 0; len(b) < n-32; i++ {
		b = fmt.Appendf(b, `{"id":%d,"name":"item %d"},`, i, i)
	}
	return append(b[:len(b)-1], ']')
}

func openKV(t *testing.T, addr string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", "app:"+kvPassword+"@tcp("+addr+")/")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// buildMycached builds the daemon from this checkout.
func buildMycached(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "mycached")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/mycached").CombinedOutput(); err != nil {
		t.Fatalf("go build mycached: %v\n%s", err, out)
	}
	return bin
}

// startMycached runs mycached with only its kv-only listener in use, and
// returns that listener's address. Its main listener points at a backend
// nobody runs: it is not used here.
func startMycached(t *testing.T, bin, users, memcached string) string {
	t.Helper()
	dir := t.TempDir()
	addr := freeAddr(t)
	startProc(t, dir, "mycached", bin, "--listen", freeAddr(t), "--backend", freeAddr(t),
		"--kv-listen", addr, "--kv-users-file", users, "--memcached", memcached)
	waitPort(t, addr, filepath.Join(dir, "mycached.log"))
	return addr
}

// startMemcached starts a private memcached with extra arguments and
// returns its address.
func startMemcached(t *testing.T, extra ...string) string {
	t.Helper()
	dir := t.TempDir()
	addr := freeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	args := append([]string{"-l", "127.0.0.1", "-p", port, "-U", "0", "-m", "64"}, extra...)
	if os.Geteuid() == 0 {
		args = append(args, "-u", "root") // memcached refuses root otherwise
	}
	startProc(t, dir, "memcached", lookBin(t, "memcached"), args...)
	waitPort(t, addr, filepath.Join(dir, "memcached.log"))
	return addr
}

// startNginx runs nginx with this example's nginx.conf, its ports moved to
// a free one and to memcached's, and returns its address.
func startNginx(t *testing.T, memcached string) string {
	t.Helper()
	bin := lookBin(t, "nginx")
	conf, err := os.ReadFile("nginx.conf")
	if err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	c := strings.Replace(string(conf), "listen 127.0.0.1:8080;", "listen "+addr+";", 1)
	c = strings.Replace(c, "memcached_pass 127.0.0.1:11211;", "memcached_pass "+memcached+";", 1)
	if os.Geteuid() == 0 {
		// As root, workers would run as nobody, who cannot enter the
		// test's private temp dir.
		c = "user root;\n" + c
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(c), 0o644); err != nil {
		t.Fatal(err)
	}
	// One process with no workers: killing it by its pid then leaves
	// nothing behind.
	startProc(t, dir, "nginx", bin, "-p", dir, "-c", filepath.Join(dir, "nginx.conf"), "-e", filepath.Join(dir, "error.log"),
		"-g", "master_process off;")
	waitPort(t, addr, filepath.Join(dir, "error.log"))
	return addr
}

// lookBin finds a binary on PATH or in the Debian sbin dirs, which a
// non-login PATH often lacks. A missing binary fails the test: `make
// deps` (run by `make test`) installs them.
func lookBin(t *testing.T, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, d := range []string{"/usr/sbin", "/usr/bin"} {
		if p := filepath.Join(d, name); fileExists(p) {
			return p
		}
	}
	t.Fatalf("%s not found; run `make deps` as root to install it", name)
	return ""
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// freeAddr returns a loopback address nothing listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	defer l.Close()
	return "127.0.0.1:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// startProc starts a server, logging to dir/name.log, and kills it by its
// pid when the test ends.
func startProc(t *testing.T, dir, name, bin string, args ...string) {
	t.Helper()
	logPath := filepath.Join(dir, name+".log")
	logf, err := os.Create(logPath)
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
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("%s log:\n%s", name, b)
		}
	})
}

// waitPort waits until addr accepts connections.
func waitPort(t *testing.T, addr, log string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
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
