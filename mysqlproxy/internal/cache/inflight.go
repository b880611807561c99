package cache

import (
	"sync"
	"sync/atomic"

	"github.com/mycached/mycached/mysqlproxy/internal/deps"
	"github.com/mycached/mycached/mysqlproxy/internal/sqlinfo"
)

// writesInFlight are the tables of the writes this sidecar has sent to the
// server and not yet invalidated: an autocommit write, or a COMMIT of a
// transaction that wrote. Between the server's commit and the bump after
// its OK, the server already shows the new rows to every session, and
// entries of the old ones are still valid: a read of such a table, here,
// then goes to the server, and stores nothing, as a read that began after
// another client saw the new rows must not see the old ones. (Other
// sidecars learn of the write by its bump.)
type writesInFlight struct {
	n  atomic.Int64 // writes in flight; 0 spares reads the lock
	mu sync.Mutex
	m  map[string]int // tables (deps.Namer.Table names) and deps.Global
}

// begin notes the tables of a write about to be sent.
func (w *writesInFlight) begin(tables []string) {
	if len(tables) == 0 {
		return
	}
	w.mu.Lock()
	if w.m == nil {
		w.m = map[string]int{}
	}
	for _, t := range tables {
		w.m[t]++
	}
	w.n.Add(1)
	w.mu.Unlock()
}

// end notes that a write begun with tables has been invalidated, or
// failed.
func (w *writesInFlight) end(tables []string) {
	if len(tables) == 0 {
		return
	}
	w.mu.Lock()
	for _, t := range tables {
		if w.m[t]--; w.m[t] <= 0 {
			delete(w.m, t)
		}
	}
	w.n.Add(-1)
	w.mu.Unlock()
}

// any reports whether a write to a table of one of a read's
// dependencies, or one that may have written anything, is in flight.
func (w *writesInFlight) any(ds []string) bool {
	if w.n.Load() == 0 {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m[deps.Global] > 0 {
		return true
	}
	for _, d := range ds {
		if w.m[deps.TableOf(d)] > 0 {
			return true
		}
	}
	return false
}

// inFlightTables returns the tables of the write info is, when it is one
// whose rows the server shows other sessions on its commit, before its
// OK: an autocommit write the parse names the tables of, or the COMMIT
// of a transaction that wrote.
func (c *Session) inFlightTables(info *sqlinfo.Info) []string {
	if c.s.InTransaction() {
		if info.Kind != sqlinfo.Commit || len(c.txDeps) == 0 {
			return nil
		}
		seen := map[string]bool{}
		var out []string
		for d := range c.txDeps {
			if t := deps.TableOf(d); !seen[t] {
				seen[t] = true
				out = append(out, t)
			}
		}
		return out
	}
	if !info.MayWrite || len(info.Writes) == 0 {
		return nil
	}
	var out []string
	for _, t := range sqlinfo.Qualify(info.Writes, c.db) {
		out = append(out, c.e.namer().Table(t.DB, t.Name))
		for _, cw := range c.coWritten(info, t) {
			out = append(out, deps.TableOf(cw))
		}
	}
	return out
}
