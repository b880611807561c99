package cache

import (
	"slices"
	"strings"

	"github.com/cespare/xxhash/v2"

	"github.com/mycached/mycached/mysqlproxy/internal/relay"
	"github.com/mycached/mycached/mysqlproxy/internal/sqlinfo"
)

// digestFree are session variables that cannot change what a read
// returns, so connections that differ only in them share cache entries.
var digestFree = map[string]bool{
	"autocommit": true, "transaction_isolation": true, "tx_isolation": true,
	"transaction_read_only": true, "tx_read_only": true, "transaction": true,
	"wait_timeout": true, "interactive_timeout": true, "net_read_timeout": true,
	"net_write_timeout": true, "lock_wait_timeout": true, "innodb_lock_wait_timeout": true,
	"sql_log_bin": true, "sql_warnings": true, "profiling": true,
	"max_statement_time": true, "max_execution_time": true,
	// Reported by the trackers, and about the session, not its reads.
	"last_gtid": true, "session_track_system_variables": true, "session_track_schema": true,
	"session_track_state_change": true, "session_track_transaction_info": true,
	"session_track_user_variables": true, "gtid_seq_no": true, "insert_id": true,
	"last_insert_id": true, "identity": true, "pseudo_thread_id": true,
	"auto_increment_increment": true, "auto_increment_offset": true,
	// The slow query log's settings.
	"long_query_time": true, "log_slow_query": true, "log_slow_query_time": true,
	"slow_query_log": true, "log_slow_verbosity": true,
	// What the server ran when the session began: its effects are read.
	"init_connect": true,
	// How COMMIT ends a transaction.
	"completion_type": true,
	// Whether the server keeps a binary log at all.
	"log_bin": true,
}

// sessState is the part of a session's state that can change a read's
// result, kept as sorted name=value pairs and summarized by a digest that
// goes into every cache key. When the backend tracks the session's state
// (relay.Session.Track) the pairs are what the server reports, however
// they were set; otherwise they come from parsing the session's SETs.
type sessState struct {
	charset byte              // the handshake's character set
	vars    map[string]string // SET variables, lower-case names (untracked sessions)
	digest  uint64
	gen     uint64 // relay.Session.VarsGen the digest was computed from
}

// digestOf returns the digest of the session's state, recomputing it
// from the server's report when that changed.
func (st *sessState) digestOf(s *relay.Session) uint64 {
	if s.Track && st.gen != s.VarsGen {
		st.gen = s.VarsGen
		st.compute(s.Vars)
	}
	return st.digest
}

func (st *sessState) reset(charset byte) {
	st.charset = charset
	clear(st.vars)
	st.gen = 0
	st.recompute()
}

// apply records confirmed SET assignments.
func (st *sessState) apply(sets []sqlinfo.SetVar) {
	changed := false
	for _, v := range sets {
		if v.User || v.Global || digestFree[v.Name] {
			continue
		}
		if st.vars == nil {
			st.vars = make(map[string]string)
		}
		val := v.Value
		if strings.EqualFold(val, "default") {
			delete(st.vars, v.Name) // back to the server's default
		} else {
			st.vars[v.Name] = val
		}
		changed = true
	}
	if changed {
		st.recompute()
	}
}

func (st *sessState) recompute() { st.compute(st.vars) }

func (st *sessState) compute(vars map[string]string) {
	names := make([]string, 0, len(vars))
	for k := range vars {
		if !digestFree[k] {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	d := xxhash.New()
	_, _ = d.Write([]byte{st.charset})
	for _, k := range names {
		_, _ = d.WriteString(k)
		_, _ = d.Write([]byte{0})
		_, _ = d.WriteString(vars[k])
		_, _ = d.Write([]byte{0})
	}
	st.digest = d.Sum64()
}
