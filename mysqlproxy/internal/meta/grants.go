package meta

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync"
	"time"
)

// The server gives a session the global privileges of the account it
// matched, but its privileges on databases, tables, columns and routines
// by the user name and the address it connected from: a grant to
// u@'%.example' or to the anonymous ''@'10.0.0.%' applies to a session
// of u@'10.%' from an address those match, and to no other session of
// u@'10.%'. SHOW GRANTS lists neither. Two sessions of one account from
// two addresses may read different things, and share cached entries only
// when no such grant exists.

// grantsByAddress caches what GrantsByAddress found, until the grants
// may have changed (ForgetGrants).
type grantsByAddress struct {
	mu  sync.Mutex
	m   map[string]grantsFound
	gen uint64 // counts ForgetGrants calls
}

// grantsFound is what GrantsByAddress found for an account: until is
// set when the grant tables could not be read, to try again then.
type grantsFound struct {
	byAddr bool
	until  time.Time
}

// grantsRetry is how long grant tables that could not be read count as
// holding an address's grants before they are read again.
const grantsRetry = 5 * time.Second

// grantsByAddressSQL finds a grant below the global level to the user
// name at another host than the account's, or a database grant to the
// anonymous user there (the server gives other user names the anonymous
// user's database grants, and not its table, column or routine grants).
//
// It reads the grant tables, and the grants the server holds in force,
// which information_schema's privilege tables show: the two differ after
// a grant table is written directly, until FLUSH PRIVILEGES, and a
// sidecar that starts meanwhile has seen no such write (the follower's
// GrantTablesEdited). Their GRANTEE is 'user'@'host'; an account that
// may not read the mysql database sees only its own there, and the
// tables' rows then. Routine grants have no such table.
const grantsByAddressSQL = "SELECT 1 FROM mysql.db WHERE User IN (?, '') AND Host <> ? " +
	"UNION ALL SELECT 1 FROM mysql.tables_priv WHERE User = ? AND Host <> ? " +
	"UNION ALL SELECT 1 FROM mysql.columns_priv WHERE User = ? AND Host <> ? " +
	"UNION ALL SELECT 1 FROM mysql.procs_priv WHERE User = ? AND Host <> ? " +
	"UNION ALL SELECT 1 FROM information_schema.SCHEMA_PRIVILEGES WHERE " + grantedAtOtherHost + " OR " + anonymousAtOtherHost +
	" UNION ALL SELECT 1 FROM information_schema.TABLE_PRIVILEGES WHERE " + grantedAtOtherHost +
	" UNION ALL SELECT 1 FROM information_schema.COLUMN_PRIVILEGES WHERE " + grantedAtOtherHost + " LIMIT 1"

// grantedAtOtherHost and anonymousAtOtherHost match a GRANTEE of the
// user name at another host, and of the anonymous user at another host.
// The arguments of each are the grantees' prefix, twice (the second
// takes it once, for its fixed length), and the grantee at the
// account's host.
const (
	grantedAtOtherHost   = "(LEFT(BINARY GRANTEE, LENGTH(?)) = BINARY ? AND BINARY GRANTEE <> BINARY ?)"
	anonymousAtOtherHost = "(LEFT(BINARY GRANTEE, 4) = BINARY ? AND BINARY GRANTEE <> BINARY ?)"
)

// grantsByAddressArgs are grantsByAddressSQL's arguments for user@host.
func grantsByAddressArgs(user, host string) []any {
	pfx := "'" + user + "'@'"
	own, anon := pfx+host+"'", "''@'"+host+"'"
	return []any{user, host, user, host, user, host, user, host, pfx, pfx, own, "''@'", anon, pfx, pfx, own, pfx, pfx, own}
}

// GrantsByAddress reports whether sessions of the account user@host may
// hold different privileges by the address they connect from: the grant
// tables hold a database, table, column or routine grant to the user
// name, or a database grant to the anonymous user, at another host, or
// cannot be read. What it
// found is kept until ForgetGrants; GrantsGen tells when that was.
func (m *Meta) GrantsByAddress(ctx context.Context, user, host string) bool {
	if m.unflushed.Load() {
		return true
	}
	key := user + "@" + host
	now := time.Now()
	m.grants.mu.Lock()
	f, ok := m.grants.m[key]
	gen := m.grants.gen
	m.grants.mu.Unlock()
	if ok && (f.until.IsZero() || now.Before(f.until)) {
		return f.byAddr
	}
	ctx, cancel := context.WithTimeout(ctx, m.opts.Timeout)
	defer cancel()
	var one int
	err := m.db.QueryRowContext(ctx, grantsByAddressSQL, grantsByAddressArgs(user, host)...).Scan(&one)
	f = grantsFound{byAddr: !errors.Is(err, sql.ErrNoRows)}
	if err != nil && f.byAddr {
		// Unreadable (no SELECT on the grant tables, a server away): to
		// the safe side, for a while.
		f.until = now.Add(grantsRetry)
		if last := m.grantsLogged.Load(); now.UnixNano()-last >= int64(time.Minute) && m.grantsLogged.CompareAndSwap(last, now.UnixNano()) {
			m.log.Warn("meta: the grant tables cannot be read; cached entries are kept apart by the address each session comes from",
				"err", err)
		}
	}
	m.grants.mu.Lock()
	if m.grants.gen == gen {
		if m.grants.m == nil || len(m.grants.m) >= 4096 {
			m.grants.m = make(map[string]grantsFound)
		}
		m.grants.m[key] = f
	}
	m.grants.mu.Unlock()
	return f.byAddr
}

// ForgetGrants forgets what GrantsByAddress found: after a statement or
// a write that may have changed the grants.
func (m *Meta) ForgetGrants() {
	m.grants.mu.Lock()
	m.grants.gen++
	m.grantsGen.Add(1)
	clear(m.grants.m)
	m.grants.mu.Unlock()
}

// GrantTablesEdited says a grant table was written directly (an INSERT,
// UPDATE or DELETE, not GRANT, REVOKE or an account statement). The
// server goes on applying the grants it loaded, which the tables no
// longer tell, until FLUSH PRIVILEGES or a restart loads them again
// (PrivilegesLoaded): meanwhile every account counts as holding grants
// by address.
func (m *Meta) GrantTablesEdited() {
	m.unflushed.Store(true)
	m.ForgetGrants()
}

// PrivilegesLoaded says the server loaded the grant tables again: FLUSH
// PRIVILEGES, or a restart. They tell its grants again.
func (m *Meta) PrivilegesLoaded() {
	m.unflushed.Store(false)
	m.ForgetGrants()
}

// IsGrantTable reports whether mysql.name holds accounts or grants,
// which the server loads at start and at FLUSH PRIVILEGES.
func IsGrantTable(name string) bool {
	switch strings.ToLower(name) {
	case "user", "global_priv", "db", "tables_priv", "columns_priv", "procs_priv", "proxies_priv", "roles_mapping":
		return true
	}
	return false
}

// GrantsGen changes whenever the grants may have changed: a session
// that asked GrantsByAddress asks again when it has.
func (m *Meta) GrantsGen() uint64 { return m.grantsGen.Load() }
