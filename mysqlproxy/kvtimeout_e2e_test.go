package mysqlproxy_test

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mycached/mycached/mysqlproxy"
	"github.com/mycached/mycached/mysqlproxy/internal/testenv"
)

// TestKVTimeoutBoundsEveryStatement: with memcached hanging (a listener
// that never answers), stopped, or one of two servers hanging, every kv
// form, SELECT * and DROP included, gets an error by --kv-timeout (plus
// what a loaded machine adds), not by a longer bound of its own nor by a
// per-key timeout times the keys; and the connection goes on.
func TestKVTimeoutBoundsEveryStatement(t *testing.T) {
	const kvTimeout = 300 * time.Millisecond
	const slack = 1500 * time.Millisecond
	stopped := privateMemcached(t)
	if err := stopped.Stop(); err != nil {
		t.Fatal(err)
	}
	many := make([]string, 40)
	for i := range many {
		many[i] = fmt.Sprintf(`"k%d"`, i)
	}
	selectMany := "SELECT " + strings.Join(many, ", ")
	everyForm := []string{`INSERT "k" = "v"`, `SELECT "k"`, selectMany, `DELETE "k"`, `SELECT *`, `DROP`}
	fleets := []struct {
		name    string
		servers []string
		stmts   []string // statements some key of which the failing server owns
	}{
		{"black hole", []string{testenv.BlackHole(t)}, everyForm},
		{"stopped", []string{stopped.Addr}, everyForm},
		{"live and black hole", []string{privateMemcached(t).Addr, testenv.BlackHole(t)}, []string{selectMany, `SELECT *`, `DROP`}},
	}
	for _, f := range fleets {
		t.Run(f.name, func(t *testing.T) {
			addr := startKVListener(t, mysqlproxy.Config{
				Memcached: f.servers, MemcachedTimeout: 50 * time.Millisecond, KVTimeout: kvTimeout,
			})
			db := openDB(t, testenv.DSNFor(addr, "app", kvPass, "", ""))
			db.SetMaxOpenConns(1)
			for _, q := range f.stmts {
				start := time.Now()
				err := execOrQuery(db, q)
				took := time.Since(start)
				if err == nil || !strings.Contains(err.Error(), "Error 1105") || !strings.Contains(err.Error(), "mycached: kv ") {
					t.Errorf("%s: got %v, want mycached's kv error 1105", q, err)
				}
				if took > kvTimeout+slack {
					t.Errorf("%s: answered after %v, want by --kv-timeout %v", q, took.Round(time.Millisecond), kvTimeout)
				}
			}
			// The same connection still serves: the errors were answers.
			if err := db.Ping(); err != nil {
				t.Errorf("ping after the errors: %v", err)
			}
		})
	}
}

// execOrQuery runs q as a query when it returns rows, else as an exec,
// and returns its error.
func execOrQuery(db *sql.DB, q string) error {
	if strings.HasPrefix(q, "SELECT") {
		rows, err := db.Query(q)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
		}
		return rows.Err()
	}
	_, err := db.Exec(q)
	return err
}
