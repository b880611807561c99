package mysqlproxy_test

import (
	"database/sql"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/bradfitz/gomemcache/memcache"
	"github.com/go-sql-driver/mysql"

	"github.com/mycached/mycached/mysqlproxy"
	"github.com/mycached/mycached/mysqlproxy/internal/testenv"
)

// openAs opens a connection pool to addr as user, whose name may hold
// characters a DSN cannot (":", "@", "/").
func openAs(t testing.TB, addr, user, pass string) *sql.DB {
	t.Helper()
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd = user, pass
	cfg.Net, cfg.Addr = "tcp", addr
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatalf("NewConnector: %v", err)
	}
	db := sql.OpenDB(connector)
	t.Cleanup(func() { db.Close() })
	return db
}

// TestKVPerUserNamespacesApart: with --kv-per-user, MariaDB accounts whose
// names once made namespaces meet (one with ":", one spelling the other's
// escaped form, spaces, "%", unicode, the 80-character maximum) each
// read, overwrite, list and drop only their own pairs; and memcached
// holds them under the documented names.
func TestKVPerUserNamespacesApart(t *testing.T) {
	m := testenv.Shared(t).DB
	base := "ns" + strings.ReplaceAll(m.NewDatabase(t), "_", "")
	base = base[:min(len(base), 20)]
	ali, alice := base, base+":ce"
	users := []string{
		ali, alice, base + "%3Ace", base + " x", base + "50%", "\u00fc" + base,
		base + strings.Repeat("\u00e9", 80-len(base)),
	}
	for _, u := range users {
		m.Exec(t, fmt.Sprintf("CREATE USER '%s'@'%%' IDENTIFIED BY 'pw'", u))
		t.Cleanup(func() { m.Exec(t, fmt.Sprintf("DROP USER '%s'@'%%'", u)) })
	}
	for name, mc := range map[string]*testenv.Memcached{"l1": nil, "memcached": privateMemcached(t)} {
		t.Run(name, func(t *testing.T) {
			cfg := mysqlproxy.Config{Backend: m.Addr, KVPerUser: true, KVUsers: users}
			if mc != nil {
				cfg.Memcached = []string{mc.Addr}
			}
			p := startProxy(t, cfg)
			dbs := map[string]*sql.DB{}
			for _, u := range users {
				dbs[u] = openAs(t, p.addr, u, "pw")
			}

			// The reported case: "ali" against "ali:ce"'s pair "token".
			mustExec(t, dbs[alice], `INSERT "token" = "secret"`)
			if got := kvRows(t, dbs[ali], `SELECT "ce:token"`); len(got) != 0 {
				t.Errorf("%s reads %s's pair: %q", ali, alice, got)
			}
			mustExec(t, dbs[ali], `INSERT "ce:token" = "forged"`)
			if got := kvRows(t, dbs[alice], `SELECT "token"`); !reflect.DeepEqual(got, []string{"token=secret"}) {
				t.Errorf("%s's pair after %s's INSERT: got %q, want token=secret", alice, ali, got)
			}
			if n := execAffected(t, dbs[ali], `DROP`); n != 1 {
				t.Errorf("%s's DROP: affected %d, want 1 (its own pair)", ali, n)
			}
			if got := kvRows(t, dbs[alice], `SELECT *`); !reflect.DeepEqual(got, []string{"token=secret"}) {
				t.Errorf("%s's SELECT * after %s's DROP: got %q, want token=secret", alice, ali, got)
			}
			if mc != nil {
				it, err := memcache.New(mc.Addr).Get("kv:" + base + "%3Ace:token")
				if err != nil || string(it.Value) != "secret" {
					t.Errorf("memcached under the documented key: got %v, %v; want secret", it, err)
				}
			}

			// Everyone writes the same key; SELECT * shows each only their own.
			for _, u := range users {
				mustExec(t, dbs[u], `INSERT "k" = ?`, "of "+u)
			}
			for _, u := range users {
				want := []string{"k=of " + u}
				if u == alice {
					want = append(want, "token=secret")
				}
				if got := kvRows(t, dbs[u], `SELECT *`); !reflect.DeepEqual(got, want) {
					t.Errorf("user %q: SELECT * = %q, want %q", u, got, want)
				}
			}
			for _, u := range users {
				want := int64(1)
				if u == alice {
					want = 2
				}
				if n := execAffected(t, dbs[u], `DROP`); n != want {
					t.Errorf("user %q: DROP affected %d, want %d", u, n, want)
				}
			}
		})
	}
}

func execAffected(t testing.TB, db *sql.DB, q string) int64 {
	t.Helper()
	res, err := db.Exec(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestNewServerRefusesUnusableKVPrefix: a prefix whose every key the cache
// would refuse (or that would list its own items) fails NewServer, rather
// than every kv statement afterwards.
func TestNewServerRefusesUnusableKVPrefix(t *testing.T) {
	for _, p := range []string{"g:", "q", "i:kv:", "my kv:"} {
		_, err := mysqlproxy.NewServer(mysqlproxy.Config{KVPrefix: p, KVPasswords: map[string]string{"app": kvPass}})
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("unusable kv prefix %q", p)) {
			t.Errorf("NewServer with KVPrefix %q: got %v, want an error naming the prefix", p, err)
		}
		if err := mysqlproxy.CheckKVPrefix(p); err == nil {
			t.Errorf("CheckKVPrefix(%q): got nil, want an error", p)
		}
	}
}
