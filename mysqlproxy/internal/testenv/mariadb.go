package testenv

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "github.com/go-sql-driver/mysql" // registers the "mysql" driver
)

// Defaults and bounds for MariaDB instances.
const (
	// DefaultRootPassword is the password of the TCP superuser. It is not
	// empty so that connecting over TCP exercises a real scramble.
	DefaultRootPassword = "testenv-root"
	// TestDatabase is created in every instance for tests to share.
	TestDatabase = "mctest"
	// BinlogUser is an account with what mycached's binlog follower and
	// metadata connection need (REPLICATION SLAVE, BINLOG MONITOR, SELECT
	// and SHOW VIEW on *.*), from 127.0.0.1, with BinlogPassword.
	BinlogUser     = "mycached"
	BinlogPassword = "testenv-binlog"

	mariaDBReadyTimeout = 60 * time.Second
	mariaDBStopGrace    = 60 * time.Second
	portAttempts        = 3
)

// MariaDBOptions configures StartMariaDB. The zero value is a default
// server on a free port.
type MariaDBOptions struct {
	// ExtraArgs are appended to the mariadbd command line, after the
	// defaults, so they win: for example "--query-cache-type=1",
	// "--query-cache-size=64M". Options fixed when a datadir is created
	// (innodb-page-size, lower-case-table-names) are not supported: every
	// datadir is a copy of one template.
	ExtraArgs []string
	// Port is the TCP port; 0 picks a free one.
	Port int
}

// MariaDB is a private mariadbd process with its own datadir. Its methods
// are safe for concurrent use.
type MariaDB struct {
	Addr         string // "127.0.0.1:port"
	Host         string // "127.0.0.1"
	Port         int
	Socket       string // unix socket path; root@localhost needs no password there
	DataDir      string
	Dir          string // temp dir holding the datadir, socket, pid file and logs
	ErrorLog     string // the --log-error file
	RootUser     string // superuser reachable over TCP from 127.0.0.1
	RootPassword string

	bin  string
	args []string // full mariadbd command line, fixed at first start
	seq  atomic.Int64

	mu     sync.Mutex // protects p, closed and admin
	p      *proc      // nil when not running
	closed bool
	admin  *sql.DB // root over TCP; survives restarts because the driver redials
}

// StartMariaDB starts a new private MariaDB instance, ready for TCP
// connections as m.RootUser, with database TestDatabase and the
// auth_ed25519 plugin installed. Run closes it when the tests end; a test
// that wants it gone sooner calls Close.
func StartMariaDB(opts MariaDBOptions) (*MariaDB, error) {
	m, err := startMariaDB(opts)
	if err != nil {
		return nil, err
	}
	reg.add(m)
	return m, nil
}

func startMariaDB(opts MariaDBOptions) (*MariaDB, error) {
	bin, err := findBinary("mariadbd")
	if err != nil {
		return nil, err
	}
	install, err := findBinary("mariadb-install-db")
	if err != nil {
		return nil, err
	}
	dir, err := makeDir("mariadb")
	if err != nil {
		return nil, err
	}
	m := &MariaDB{
		Host:         "127.0.0.1",
		Socket:       filepath.Join(dir, "mariadbd.sock"),
		DataDir:      filepath.Join(dir, "data"),
		Dir:          dir,
		ErrorLog:     filepath.Join(dir, "error.log"),
		RootUser:     "root",
		RootPassword: DefaultRootPassword,
		bin:          bin,
	}
	if err := m.setup(install, opts); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

// setup installs the datadir, starts the server and creates the accounts.
func (m *MariaDB) setup(install string, opts MariaDBOptions) error {
	// A unix socket path longer than sun_path (108 bytes) fails late and
	// obscurely inside mariadbd, so refuse early.
	if len(m.Socket) > 100 {
		return fmt.Errorf("testenv: socket path %q too long; set TMPDIR to a shorter dir", m.Socket)
	}
	if err := os.Mkdir(filepath.Join(m.Dir, "tmp"), 0o755); err != nil {
		return fmt.Errorf("testenv: %w", err)
	}
	if err := m.installDB(install); err != nil {
		return err
	}
	var err error
	for attempt := 0; attempt < portAttempts; attempt++ {
		m.Port = opts.Port
		if m.Port == 0 {
			if m.Port, err = freePort(); err != nil {
				return fmt.Errorf("testenv: free port: %w", err)
			}
		}
		m.Addr = fmt.Sprintf("%s:%d", m.Host, m.Port)
		m.args = append(m.serverArgs(), opts.ExtraArgs...)
		m.mu.Lock()
		err = m.startLocked()
		m.mu.Unlock()
		// A free port can be taken between FreePort and bind; only then is
		// a retry on another port worth it.
		if err == nil || opts.Port != 0 || !strings.Contains(tailFile(m.ErrorLog, 20), "Address already in use") {
			break
		}
	}
	if err != nil {
		return err
	}
	if err := m.bootstrap(); err != nil {
		return err
	}
	admin, err := sql.Open("mysql", m.DSN(m.RootUser, m.RootPassword, "")+"?interpolateParams=true&multiStatements=true")
	if err != nil {
		return fmt.Errorf("testenv: %w", err)
	}
	m.mu.Lock()
	m.admin = admin
	m.mu.Unlock()
	return nil
}

// installDB fills m.DataDir with fresh system tables, copied from the
// machine-wide template (see templateDataDir).
func (m *MariaDB) installDB(install string) error {
	args := []string{
		"--no-defaults",
		"--auth-root-authentication-method=normal",
		"--skip-test-db",
		"--skip-name-resolve",
		// Bootstrap with the server's InnoDB sizes so that the first start
		// does not have to resize the redo log.
		"--innodb-log-file-size=48M",
		"--innodb-buffer-pool-size=64M",
	}
	if os.Geteuid() == 0 {
		args = append(args, "--user=root")
	}
	tpl, err := templateDataDir(install, m.bin, args)
	if err != nil {
		return err
	}
	if err := copyTree(tpl, m.DataDir); err != nil {
		return fmt.Errorf("testenv: copy datadir template: %w", err)
	}
	return nil
}

// serverArgs is the mariadbd command line without the extra args.
func (m *MariaDB) serverArgs() []string {
	args := []string{
		"--no-defaults", // must come first
		"--datadir=" + m.DataDir,
		"--socket=" + m.Socket,
		"--port=" + strconv.Itoa(m.Port),
		"--bind-address=" + m.Host,
		"--skip-name-resolve",
		"--pid-file=" + filepath.Join(m.Dir, "mariadbd.pid"),
		"--log-error=" + m.ErrorLog,
		"--tmpdir=" + filepath.Join(m.Dir, "tmp"),
		"--log-bin=mariadb-bin",
		"--binlog-format=ROW",
		// A follower that connects makes MariaDB 10.11, which has no
		// GTID index, read the binlog file that holds its position from
		// the start. The shared server takes the whole suite's writes:
		// smaller files keep each reconnect's scan short, as the README
		// advises for production.
		"--max-binlog-size=32M",
		"--server-id=1",
		"--max-allowed-packet=256M",
		"--local-infile=1",
		"--max-connections=1000",
		// Debian's packaged config uses utf8mb4; --no-defaults would
		// otherwise fall back to latin1.
		"--character-set-server=utf8mb4",
		"--collation-server=utf8mb4_general_ci",
		"--innodb-buffer-pool-size=64M",
		"--innodb-log-file-size=48M",
		// Durability is worthless for a throwaway datadir; these make
		// writes cheap. SIGKILL cannot tear pages, so the doublewrite
		// buffer buys nothing here either.
		"--innodb-flush-log-at-trx-commit=2",
		"--sync-binlog=0",
		"--innodb-doublewrite=0",
	}
	if os.Geteuid() == 0 {
		args = append(args, "--user=root")
	}
	return args
}

// startLocked starts mariadbd and waits until it accepts connections on
// its socket. m.mu must be held.
func (m *MariaDB) startLocked() error {
	p, err := startProc(m.bin, m.args, filepath.Join(m.Dir, "mariadbd.out"))
	if err != nil {
		return err
	}
	m.p = p
	if err := m.waitReady(); err != nil {
		p.kill()
		m.p = nil
		return fmt.Errorf("testenv: mariadbd on %s: %w\n--- %s (tail) ---\n%s", m.Addr, err, m.ErrorLog, tailFile(m.ErrorLog, 30))
	}
	return nil
}

// waitReady polls the unix socket as root until a ping succeeds, the
// process exits, or mariaDBReadyTimeout passes.
func (m *MariaDB) waitReady() error {
	db, err := sql.Open("mysql", "root@unix("+m.Socket+")/?timeout=2s")
	if err != nil {
		return err
	}
	defer db.Close()
	deadline := time.Now().Add(mariaDBReadyTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err = db.PingContext(ctx)
		cancel()
		if err == nil {
			return nil
		}
		if m.p.exited() {
			return fmt.Errorf("%w: %v", errExited, m.p.err)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %v: %w", mariaDBReadyTimeout, err)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// bootstrap creates the TCP superuser, the ed25519 plugin and the shared
// database, over the socket as root@localhost.
func (m *MariaDB) bootstrap() error {
	db, err := sql.Open("mysql", "root@unix("+m.Socket+")/?timeout=5s")
	if err != nil {
		return err
	}
	defer db.Close()
	user := "'" + m.RootUser + "'@'" + m.Host + "'"
	stmts := []string{
		"CREATE USER IF NOT EXISTS " + user,
		"ALTER USER " + user + " IDENTIFIED BY '" + m.RootPassword + "'",
		"GRANT ALL PRIVILEGES ON *.* TO " + user + " WITH GRANT OPTION",
		"GRANT PROXY ON ''@'%' TO " + user + " WITH GRANT OPTION",
		"CREATE USER IF NOT EXISTS '" + BinlogUser + "'@'" + m.Host + "' IDENTIFIED BY '" + BinlogPassword + "'",
		"GRANT REPLICATION SLAVE, BINLOG MONITOR, SELECT, SHOW VIEW ON *.* TO '" + BinlogUser + "'@'" + m.Host + "'",
		"CREATE DATABASE IF NOT EXISTS " + TestDatabase,
	}
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			return fmt.Errorf("testenv: bootstrap %q: %w", s, err)
		}
	}
	// INSTALL SONAME fails when the plugin is already there (error 1968,
	// "Plugin 'ed25519' already installed"); that state is what we want.
	if _, err := db.Exec("INSTALL SONAME 'auth_ed25519'"); err != nil && !strings.Contains(err.Error(), "already installed") {
		return fmt.Errorf("testenv: bootstrap: install auth_ed25519: %w", err)
	}
	return nil
}

// Stop shuts the server down cleanly (SIGTERM, then SIGKILL after a
// minute). The datadir is kept, so Restart brings it back.
func (m *MariaDB) Stop() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	if m.p == nil || m.p.exited() {
		m.p = nil
		return ErrNotRunning
	}
	m.p.stop(mariaDBStopGrace)
	m.p = nil
	return nil
}

// Kill sends SIGKILL to the server, for fault tests, and waits for it to
// die. Restart brings it back after InnoDB crash recovery.
func (m *MariaDB) Kill() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	if m.p == nil || m.p.exited() {
		m.p = nil
		return ErrNotRunning
	}
	m.p.kill()
	m.p = nil
	return nil
}

// Restart starts the server again on the same port and datadir, stopping
// it first if it is running, and waits until it is ready.
func (m *MariaDB) Restart() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	if m.p != nil {
		m.p.stop(mariaDBStopGrace)
		m.p = nil
	}
	return m.startLocked()
}

// RestartWith is Restart with more command-line arguments, which later
// restarts keep too.
func (m *MariaDB) RestartWith(extra ...string) error {
	m.mu.Lock()
	m.args = append(m.args, extra...)
	m.mu.Unlock()
	return m.Restart()
}

// Running reports whether the server process is alive.
func (m *MariaDB) Running() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.p != nil && !m.p.exited()
}

// PID returns the server's process id, or 0 when it is not running.
func (m *MariaDB) PID() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.p == nil || m.p.exited() {
		return 0
	}
	return m.p.pid()
}

// Close kills the server and removes its temp dir. The data is thrown
// away, so there is no point in a clean shutdown. Close is idempotent
// after the first call, which returns ErrClosed.
func (m *MariaDB) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	m.closed = true
	if m.admin != nil {
		m.admin.Close()
	}
	if m.p != nil {
		m.p.kill()
		m.p = nil
	}
	return os.RemoveAll(m.Dir)
}
