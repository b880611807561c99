package testenv

import (
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// DSN returns a go-sql-driver DSN for user over TCP to m.Addr.
func (m *MariaDB) DSN(user, pass, db string) string {
	return DSNFor(m.Addr, user, pass, db, "")
}

// RootDSN returns a go-sql-driver DSN for the superuser over TCP.
func (m *MariaDB) RootDSN(db string) string {
	return m.DSN(m.RootUser, m.RootPassword, db)
}

// AdminDB returns the superuser's pool, connected directly over TCP with
// interpolateParams and multiStatements on. It stays usable across Kill
// and Restart: the driver drops dead connections and dials again. Do not
// close it.
func (m *MariaDB) AdminDB() *sql.DB {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.admin
}

// Exec runs stmt as the superuser, directly on the server (never through
// a proxy), and fails the test on error. args are interpolated
// client-side, so the server sees one text query and the Com_* counters
// stay simple; stmt may hold several statements.
func (m *MariaDB) Exec(t testing.TB, stmt string, args ...any) {
	t.Helper()
	if _, err := m.AdminDB().Exec(stmt, args...); err != nil {
		t.Fatalf("testenv: exec %q on %s: %v", stmt, m.Addr, err)
	}
}

// QueryString runs a query that returns one value as the superuser and
// returns it as a string ("" for NULL), failing the test on error or when
// there is no row.
func (m *MariaDB) QueryString(t testing.TB, query string, args ...any) string {
	t.Helper()
	var v sql.NullString
	if err := m.AdminDB().QueryRow(query, args...).Scan(&v); err != nil {
		t.Fatalf("testenv: query %q on %s: %v", query, m.Addr, err)
	}
	return v.String
}

// GlobalStatus returns the integer status variable name (SHOW GLOBAL
// STATUS LIKE name), for example "Com_select", failing the test if it
// does not exist. Each call is itself a statement, counted under
// Com_show_status, not Com_select.
func (m *MariaDB) GlobalStatus(t testing.TB, name string) int64 {
	t.Helper()
	var k, v string
	err := m.AdminDB().QueryRow("SHOW GLOBAL STATUS LIKE ?", name).Scan(&k, &v)
	if errors.Is(err, sql.ErrNoRows) {
		t.Fatalf("testenv: no global status variable %q on %s", name, m.Addr)
	}
	if err != nil {
		t.Fatalf("testenv: global status %q on %s: %v", name, m.Addr, err)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("testenv: global status %s = %q on %s: not an integer", name, v, m.Addr)
	}
	return n
}

// NewDatabase creates an empty database with a name unique in this
// instance and drops it when t ends, so tests that share the server do
// not see each other's tables.
func (m *MariaDB) NewDatabase(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("t%d_%s", m.seq.Add(1), sanitizeName(t.Name()))
	if len(name) > 64 {
		name = name[:64]
	}
	m.Exec(t, "CREATE DATABASE `"+name+"`")
	t.Cleanup(func() {
		// The server may have been killed or closed by the test; a failed
		// drop then costs nothing, the datadir is thrown away.
		if db := m.AdminDB(); db != nil {
			_, _ = db.Exec("DROP DATABASE IF EXISTS `" + name + "`")
		}
	})
	return name
}

// sanitizeName keeps the letters, digits and underscores of a test name,
// which are always valid in an unquoted identifier.
func sanitizeName(s string) string {
	b := []byte(strings.ToLower(s))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			b[i] = '_'
		}
	}
	return string(b)
}
