package cache

import (
	"slices"
	"strings"

	"github.com/cespare/xxhash/v2"

	"github.com/mycached/mycached/mysqlproxy/internal/sqlinfo"
)

// digestFree are session variables that cannot change what a read
// returns, so connections that differ only in them share cache entries.
var digestFree = map[string]bool{
	"autocommit": true, "transaction_isolation": true, "tx_isolation": true,
	"transaction_read_only": true, "tx_read_only": true, "transaction": true,
	"wait_timeout": true, "interactive_timeout": true, "net_read_timeout": true,
	"net_write_timeout": true, "lock_wait_timeout": true, "innodb_lock_wait_timeout": true,
	"sql_log_bin": true, "sql_notes": true, "sql_warnings": true, "profiling": true,
	"max_statement_time": true, "max_execution_time": true,
}

// sessState is the part of a session's state that can change a read's
// result, kept as sorted name=value pairs and summarized by a digest that
// goes into every cache key.
type sessState struct {
	charset byte              // the handshake's character set
	vars    map[string]string // SET variables, lower-case names
	digest  uint64
}

func (st *sessState) reset(charset byte) {
	st.charset = charset
	clear(st.vars)
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

func (st *sessState) recompute() {
	names := make([]string, 0, len(st.vars))
	for k := range st.vars {
		names = append(names, k)
	}
	slices.Sort(names)
	d := xxhash.New()
	_, _ = d.Write([]byte{st.charset})
	for _, k := range names {
		_, _ = d.WriteString(k)
		_, _ = d.Write([]byte{0})
		_, _ = d.WriteString(st.vars[k])
		_, _ = d.Write([]byte{0})
	}
	st.digest = d.Sum64()
}
