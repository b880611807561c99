package mysqlproxy_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/mycached/mycached/mysqlproxy"
	"github.com/mycached/mycached/mysqlproxy/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Run(m)) }

// rootPass is the password of testenv's TCP superuser.
const rootPass = testenv.DefaultRootPassword

// proxy is a running mysqlproxy.Server and its address.
type proxy struct {
	srv  *mysqlproxy.Server
	addr string
	logs *testenv.LogBuffer
}

// startProxy starts a proxy with cfg on a free loopback port and closes it
// when t ends, printing its log if t failed.
func startProxy(t testing.TB, cfg mysqlproxy.Config) *proxy {
	t.Helper()
	logs := &testenv.LogBuffer{}
	if cfg.PolicyTimeout == 0 {
		// The default 5 ms is a budget for a hook on a serving machine.
		// Under -race, with the whole suite on two cores, a plain hook
		// can pass it, and a killed hook means no caching: tests of
		// anything else must not hang on the scheduler. The deadline's
		// own tests set theirs.
		cfg.PolicyTimeout = 250 * time.Millisecond
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	srv, err := mysqlproxy.NewServer(cfg)
	if err != nil {
		t.Fatalf("NewServer(%+v): %v", cfg, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		_ = srv.Close()
		if err := <-served; err != nil && !errors.Is(err, mysqlproxy.ErrServerClosed) {
			t.Errorf("Serve: got %v, want ErrServerClosed", err)
		}
		if t.Failed() {
			t.Logf("proxy log:\n%s", logs.String())
		}
	})
	if cfg.BinlogUser != "" {
		// A test that asks for the follower means it to see every write
		// from the start.
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		for {
			err := srv.WaitBinlog(ctx)
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("binlog follower did not start: %v\n%s", err, logs.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return &proxy{srv: srv, addr: ln.Addr().String(), logs: logs}
}

// withBinlog returns cfg with the binlog follower on, as testenv's
// follower account.
func withBinlog(cfg mysqlproxy.Config) mysqlproxy.Config {
	cfg.BinlogUser, cfg.BinlogPassword = testenv.BinlogUser, testenv.BinlogPassword
	return cfg
}

// sharedProxy returns the shared MariaDB and a proxy in front of it.
func sharedProxy(t testing.TB) (*testenv.MariaDB, *proxy) {
	t.Helper()
	db := testenv.Shared(t).DB
	return db, startProxy(t, mysqlproxy.Config{Backend: db.Addr})
}

// openDB opens a go-sql-driver pool and closes it when t ends.
func openDB(t testing.TB, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatalf("open %s: %v", dsn, err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// rootDSN is the superuser's DSN at addr, which is MariaDB or a proxy.
func rootDSN(addr, db, params string) string {
	return testenv.DSNFor(addr, "root", rootPass, db, params)
}

// pair is the same database reached directly and through a proxy.
type pair struct {
	direct, proxied *sql.DB
}

// openPair opens db on MariaDB directly and through p with the same DSN
// parameters.
func openPair(t testing.TB, m *testenv.MariaDB, p *proxy, db, params string) pair {
	t.Helper()
	return pair{
		direct:  openDB(t, rootDSN(m.Addr, db, params)),
		proxied: openDB(t, rootDSN(p.addr, db, params)),
	}
}

// dumpRows renders every result set of rows as text: column names and
// database types, then each row with NULL told apart from the empty
// string and bytes quoted, so two dumps are equal exactly when a client
// would see the same results.
func dumpRows(rows *sql.Rows) (string, error) {
	var b strings.Builder
	for set := 0; ; set++ {
		cols, err := rows.ColumnTypes()
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "result %d:", set)
		for _, c := range cols {
			fmt.Fprintf(&b, " %s(%s)", c.Name(), c.DatabaseTypeName())
		}
		b.WriteByte('\n')
		vals := make([]sql.RawBytes, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				return "", err
			}
			for i, v := range vals {
				if i > 0 {
					b.WriteByte('|')
				}
				if v == nil {
					b.WriteString("NULL")
				} else {
					fmt.Fprintf(&b, "%q", []byte(v))
				}
			}
			b.WriteByte('\n')
		}
		if err := rows.Err(); err != nil {
			return "", err
		}
		if !rows.NextResultSet() {
			break
		}
	}
	return b.String(), rows.Err()
}

// queryDump runs query on db and returns dumpRows of its results.
func queryDump(ctx context.Context, db interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, query string, args ...any) (string, error) {
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	return dumpRows(rows)
}

// sameResults runs query with args directly and through the proxy and
// fails t unless a client sees the same results both ways.
func (p pair) sameResults(t testing.TB, query string, args ...any) string {
	t.Helper()
	ctx := context.Background()
	want, err := queryDump(ctx, p.direct, query, args...)
	if err != nil {
		t.Fatalf("direct %q: %v", query, err)
	}
	got, err := queryDump(ctx, p.proxied, query, args...)
	if err != nil {
		t.Fatalf("proxied %q: %v", query, err)
	}
	if got != want {
		t.Errorf("%q through the proxy:\ngot  %s\nwant %s", query, got, want)
	}
	return got
}

// mysqlErr returns err's *mysql.MySQLError, or fails t.
func mysqlErr(t testing.TB, err error) *mysql.MySQLError {
	t.Helper()
	me, ok := errors.AsType[*mysql.MySQLError](err)
	if !ok {
		t.Fatalf("got error %v (%T), want a *mysql.MySQLError", err, err)
	}
	return me
}

// waitFor polls cond every 20ms until it holds or d passes. It is a bound
// on how long a correct proxy may take, not a timing measurement.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// connID returns the connection id a client sees on c, which the proxy
// relays from the backend's greeting.
func connID(t testing.TB, c *sql.Conn) int64 {
	t.Helper()
	var id int64
	if err := c.QueryRowContext(context.Background(), "SELECT CONNECTION_ID()").Scan(&id); err != nil {
		t.Fatalf("SELECT CONNECTION_ID(): %v", err)
	}
	return id
}

// processExists reports whether the backend has a thread with id.
func processExists(t testing.TB, m *testenv.MariaDB, id int64) bool {
	t.Helper()
	return m.QueryString(t, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ?", id) != "0"
}

// waitForQuery waits until some backend thread runs a statement
// containing text, so a test can act while it is in flight.
func waitForQuery(t testing.TB, m *testenv.MariaDB, text string) int64 {
	t.Helper()
	var id int64
	waitFor(t, 10*time.Second, "a thread running "+text, func() bool {
		s := m.QueryString(t, "SELECT COALESCE(MAX(ID), 0) FROM information_schema.PROCESSLIST WHERE INFO LIKE ? AND INFO NOT LIKE '%PROCESSLIST%'", "%"+text+"%")
		fmt.Sscan(s, &id)
		return id != 0
	})
	return id
}

// testenvShared returns the binary-wide MariaDB.
func testenvShared(t testing.TB) *testenv.MariaDB {
	t.Helper()
	return testenv.Shared(t).DB
}
