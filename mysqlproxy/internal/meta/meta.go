// Package meta learns what mycached needs to know about the backend's
// schema and configuration (primary keys, engines, views, MERGE unions,
// foreign keys, binlog settings) on connections of mycached's own, never
// on a client's session. It asks with SHOW statements only, so that the
// server's Com_select, which operators watch, counts only clients.
package meta

import (
	"context"
	"crypto/tls"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/mycached/mycached/mysqlproxy/internal/deps"
	"github.com/mycached/mycached/mysqlproxy/internal/store/flight"
)

// Options configures a Meta. Zero fields get the documented defaults.
type Options struct {
	Addr     string // host:port of the backend
	User     string
	Password string
	// TLS is the TLS configuration to the backend; nil means none.
	TLS *tls.Config
	// TLSOptional lets the connection go on in the clear when the server
	// offers no TLS (--backend-tls preferred).
	TLSOptional bool
	// Timeout bounds each statement (default 5s).
	Timeout time.Duration
	// Logger receives warnings (default slog.Default()).
	Logger *slog.Logger
}

// ErrNoTable means a name is not a table or view of the backend: it does
// not exist, or it is a temporary table of some session.
var ErrNoTable = errors.New("meta: no such table")

// Meta answers questions about the backend. Its methods are safe for
// concurrent use.
type Meta struct {
	opts  Options
	db    *sql.DB
	log   *slog.Logger
	facts atomic.Pointer[Facts]
	namer deps.Namer

	flight flight.Group
	mu     sync.Mutex        // protects tables, children, the co-writes and gen
	tables map[string]*entry // by dependency name ("db.t")
	// children maps a parent table to the tables whose foreign keys
	// change their rows when the parent's rows are deleted or updated
	// (CASCADE, SET NULL, SET DEFAULT), as learned from the children.
	children map[string]map[string]bool
	// coWrites maps a table to the tables that statements writing it
	// wrote too, as the binlog showed (see NoteCoWrites).
	coWrites  map[string]map[string]bool
	coWritten int // names in coWrites' sets
	// coWritersFull says a writer was not noted for want of room.
	coWritersFull bool
	// coSeen are the tables whose co-writes the binlog has shown since
	// the last DDL that may have changed them (see CoWritesSeen).
	coSeen map[string]bool
	// coVersion counts the changes of the co-writes and of coSeen.
	coVersion uint64
	gen       uint64 // counts Forget calls, so a lookup that raced one is not kept
	// relearn are the tables (db and name, by range generation) a lock
	// kept from being learned: their foreign keys are unknown until
	// they are (see RelearnPending).
	relearn map[string][2]string
	genA    atomic.Uint64
	// procs are the procedures' bodies read (ProcedureMayHideWrites).
	procs procedures
	// grants is what GrantsByAddress found; grantsGen counts its
	// forgetting.
	grants       grantsByAddress
	grantsGen    atomic.Uint64
	grantsLogged atomic.Int64 // when GrantsByAddress last logged a failure
	// unflushed says the grant tables were written directly since the
	// server last loaded them (GrantTablesEdited).
	unflushed atomic.Bool
}

// entry is a learned table, or a failure to learn it, with its expiry.
type entry struct {
	t     *Table
	err   error
	until time.Time // zero: until Forget
}

// negativeTTL bounds how long a failure to learn a table is believed: the
// table may be created, or the account granted, meanwhile.
const negativeTTL = 30 * time.Second

// lockRetry is how long a failure to learn a table for a lock a client
// held is believed.
const lockRetry = time.Second

// failedUntil returns until when a failure to learn a table is believed.
func failedUntil(err error) time.Time {
	if lockedOut(err) {
		return time.Now().Add(lockRetry)
	}
	return time.Now().Add(negativeTTL)
}

// lockedOut reports a failure to learn a table for a lock a client held.
func lockedOut(err error) bool {
	me, ok := errors.AsType[*mysql.MySQLError](err)
	return ok && (me.Number == 1205 || me.Number == 1213)
}

// RelearnPending reports whether a table a lock kept from being learned
// waits to be: a foreign key it declares may be unknown, so a write to
// any table may cascade to it unseen.
func (m *Meta) RelearnPending() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.relearn) > 0
}

// Relearn learns again the tables a lock kept from being learned, once
// their failure has expired (lockRetry); the follower calls it at each
// of its polls.
func (m *Meta) Relearn(ctx context.Context) {
	m.mu.Lock()
	var todo [][2]string
	for _, t := range m.relearn {
		todo = append(todo, t)
	}
	m.mu.Unlock()
	for _, t := range todo {
		_, _ = m.Table(ctx, t[0], t[1])
	}
}

// Open connects to the backend as opts.User and reads the server's
// settings. It fails when the account cannot connect.
func Open(ctx context.Context, opts Options) (*Meta, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = 5 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net, cfg.Addr = opts.User, opts.Password, "tcp", opts.Addr
	cfg.Timeout, cfg.ReadTimeout, cfg.WriteTimeout = opts.Timeout, opts.Timeout, opts.Timeout
	cfg.TLS = opts.TLS
	cfg.AllowFallbackToPlaintext = opts.TLSOptional
	cfg.Collation = "utf8mb4_general_ci"
	// SHOW CREATE VIEW quotes as the session's sql_mode says; with none
	// of its flags, identifiers come in backquotes, as the analysis reads
	// them by default.
	//
	// Its reads never wait on a lock a client holds (LOCK TABLES, DDL
	// under way, a table being flushed): a statement of the client's
	// would queue behind the waiting read, and the server could take the
	// client's statement for a deadlock's victim. They fail at once, and
	// the table is learned again a moment later (lockRetry).
	cfg.Params = map[string]string{"sql_mode": "''", "lock_wait_timeout": "0"}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("meta: %w", err)
	}
	db := sql.OpenDB(conn)
	// Learning is rare after a warm-up: one connection stays open for the
	// next, and not for long, so that the server's session count is the
	// clients' own again soon after (tests and monitors wait for it).
	db.SetMaxOpenConns(4)
	db.SetMaxIdleConns(1)
	db.SetConnMaxIdleTime(2 * time.Second)
	// The follower's polls keep one connection busy for ever. A session
	// keeps the global privileges it logged in with: a GRANT ON *.* to the
	// account (after a REVOKE, say) reaches only new connections.
	db.SetConnMaxLifetime(time.Minute)
	m := &Meta{opts: opts, db: db, log: opts.Logger, tables: make(map[string]*entry), children: make(map[string]map[string]bool)}
	if err := m.readFacts(ctx); err != nil {
		db.Close()
		return nil, err
	}
	m.namer = deps.Namer{Fold: m.Facts().LowerCaseTableNames != 0}
	return m, nil
}

// Close closes the connections.
func (m *Meta) Close() error { return m.db.Close() }

// Namer names dependencies as the server compares table names.
func (m *Meta) Namer() deps.Namer { return m.namer }

// Facts returns what Open, or the last ReadFacts, read of the server's
// settings.
func (m *Meta) Facts() Facts {
	if f := m.facts.Load(); f != nil {
		return *f
	}
	return Facts{}
}

// ReadFacts reads the server's settings again: after a restart, which may
// have changed those only a restart changes (the binlog filters, the
// format).
func (m *Meta) ReadFacts(ctx context.Context) error { return m.readFacts(ctx) }

// query runs a SHOW statement and returns its rows as strings (NULL as
// ""), by column name in lower case.
func (m *Meta) query(ctx context.Context, q string) ([]map[string]string, error) {
	ctx, cancel := context.WithTimeout(ctx, m.opts.Timeout)
	defer cancel()
	rows, err := m.db.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out []map[string]string
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		r := make(map[string]string, len(cols))
		for i, c := range cols {
			r[strings.ToLower(c)] = vals[i].String
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// QuoteIdent quotes a MySQL identifier.
func QuoteIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

// quoteString quotes a string literal for a LIKE pattern that matches it
// exactly.
func quoteLike(s string) string {
	r := strings.NewReplacer(`\`, `\\\\`, `'`, `''`, `%`, `\%`, `_`, `\_`)
	return "'" + r.Replace(s) + "'"
}

// IsAccessDenied reports whether err is the server refusing the account
// something it lacks a privilege for.
func IsAccessDenied(err error) bool {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case 1044, 1045, 1142, 1143, 1227, 1370:
			return true
		}
	}
	return false
}
