package meta

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"time"
)

// A procedure may turn sql_log_bin off with an unscoped SET @@sql_log_bin,
// which no session tracker reports, write, and turn it on again: its
// writes reach no binlog, and @@last_gtid does not move, as for a
// procedure that only read. ProcedureMayHideWrites tells the two apart
// by the procedure's body, read with SHOW CREATE PROCEDURE (the account
// needs SELECT on mysql.proc, which SELECT ON *.* gives).

// procedures caches what ProcedureMayHideWrites found, for procTTL: a
// procedure redefined meanwhile is read again after that.
type procedures struct {
	mu sync.Mutex
	m  map[string]procEntry
}

type procEntry struct {
	hides bool
	until time.Time
}

// procTTL bounds how long a procedure's body is believed.
const procTTL = 5 * time.Second

// MayHideWrites matches a text that may set sql_log_bin unseen (a
// procedure's body, a statement EXECUTE runs): it names the variable,
// or runs other routines or dynamic SQL, whose text it does not show.
var MayHideWrites = regexp.MustCompile(`(?i)sql_log_bin|\b(call|execute|prepare)\b`)

// ProcedureMayHideWrites reports whether procedure db.name may have
// written what the binlog does not show: its body names sql_log_bin or
// runs other routines or dynamic SQL, or it cannot be read.
func (m *Meta) ProcedureMayHideWrites(ctx context.Context, db, name string) bool {
	key := db + "\x00" + strings.ToLower(name)
	now := time.Now()
	m.procs.mu.Lock()
	e, ok := m.procs.m[key]
	m.procs.mu.Unlock()
	if ok && now.Before(e.until) {
		return e.hides
	}
	hides := true
	rows, err := m.query(ctx, "SHOW CREATE PROCEDURE "+QuoteIdent(db)+"."+QuoteIdent(name))
	if err == nil && len(rows) == 1 {
		if body, ok := rows[0]["create procedure"]; ok && body != "" {
			hides = MayHideWrites.MatchString(body)
		}
	}
	m.procs.mu.Lock()
	if m.procs.m == nil || len(m.procs.m) >= 1024 {
		m.procs.m = make(map[string]procEntry)
	}
	m.procs.m[key] = procEntry{hides: hides, until: now.Add(procTTL)}
	m.procs.mu.Unlock()
	return hides
}
