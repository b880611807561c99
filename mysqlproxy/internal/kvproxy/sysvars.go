package kvproxy

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/mycached/mycached/mysqlproxy/internal/sqlinfo"
)

// Drivers read system variables when they connect, and stop if they
// cannot: MariaDB Connector/J selects @@max_allowed_packet, @@time_zone
// and others, and falls back to SHOW VARIABLES; the mariadb client asks
// for @@version_comment for its banner. The kv-only listener answers
// both forms for the variables below, with the values that describe it,
// and the server's error for a variable it does not have.

// sysVar is a system variable as SELECT @@name and SHOW VARIABLES show it.
type sysVar struct{ sel, show string }

// sysVars returns the kv-only listener's system variables; maxPacket is
// the largest command it reads.
func sysVars(maxPacket int) map[string]sysVar {
	same := func(v string) sysVar { return sysVar{v, v} }
	on, off := sysVar{"1", "ON"}, sysVar{"0", "OFF"}
	return map[string]sysVar{
		"auto_increment_increment": same("1"),
		"auto_increment_offset":    same("1"),
		"autocommit":               on,
		"character_set_client":     same("utf8mb4"),
		"character_set_connection": same("utf8mb4"),
		"character_set_database":   same("utf8mb4"),
		"character_set_results":    same("utf8mb4"),
		"character_set_server":     same("utf8mb4"),
		"collation_connection":     same("utf8mb4_general_ci"),
		"collation_database":       same("utf8mb4_general_ci"),
		"collation_server":         same("utf8mb4_general_ci"),
		"init_connect":             same(""),
		"interactive_timeout":      same("28800"),
		"license":                  same("GPL"),
		"lower_case_table_names":   same("0"),
		"max_allowed_packet":       same(strconv.Itoa(maxPacket)),
		"net_buffer_length":        same("16384"),
		"net_read_timeout":         same("30"),
		"net_write_timeout":        same("60"),
		"query_cache_size":         same("0"),
		"query_cache_type":         off,
		"sql_mode":                 same(""),
		"system_time_zone":         same("UTC"),
		"time_zone":                same("SYSTEM"),
		"transaction_isolation":    same("REPEATABLE-READ"),
		"transaction_read_only":    off,
		"tx_isolation":             same("REPEATABLE-READ"),
		"tx_read_only":             off,
		"version":                  same(strings.TrimPrefix(kvServerVersion, "5.5.5-")),
		"version_comment":          same("mycached key/value listener"),
		"wait_timeout":             same("28800"),
	}
}

// varsAnswer is the answer to a statement that reads system variables.
type varsAnswer struct {
	cols []string
	rows [][]*string
	// unknown names a variable the listener does not have: the answer
	// is then the server's error 1193.
	unknown string
}

// readVars answers SELECT @@name [AS alias], ... [LIMIT n] and SHOW
// [GLOBAL|SESSION] VARIABLES [LIKE 'pattern' | WHERE Variable_name =
// 'name' | WHERE Variable_name IN ('name', ...)]; ok is false for any
// other statement.
func readVars(sql string, vars map[string]sysVar) (varsAnswer, bool) {
	f := strings.Fields(strings.TrimRight(strings.TrimSpace(sql), "; \t\r\n"))
	if len(f) == 0 {
		return varsAnswer{}, false
	}
	switch strings.ToLower(f[0]) {
	case "select":
		return selectVars(f[1:], vars)
	case "show":
		return showVars(f[1:], vars)
	}
	return varsAnswer{}, false
}

// selectVars answers SELECT @@name [AS alias], ... [LIMIT n].
func selectVars(f []string, vars map[string]sysVar) (varsAnswer, bool) {
	if n := len(f); n >= 2 && strings.EqualFold(f[n-2], "limit") {
		if _, err := strconv.ParseUint(f[n-1], 10, 64); err != nil || f[n-1] == "0" {
			return varsAnswer{}, false
		}
		f = f[:n-2]
	}
	var a varsAnswer
	row := []*string{}
	for _, item := range strings.Split(strings.Join(f, " "), ",") {
		w := strings.Fields(item)
		if len(w) == 3 && strings.EqualFold(w[1], "as") {
			w = []string{w[0], w[2]}
		}
		if len(w) == 0 || len(w) > 2 || !strings.HasPrefix(w[0], "@@") {
			return varsAnswer{}, false
		}
		name := strings.ToLower(w[0][2:])
		for _, scope := range []string{"session.", "global.", "local."} {
			name = strings.TrimPrefix(name, scope)
		}
		if name == "" || strings.ContainsAny(name, "()'\"`@") {
			return varsAnswer{}, false
		}
		col := w[0]
		if len(w) == 2 {
			col = strings.Trim(w[1], "`'\"")
		}
		v, ok := vars[name]
		if !ok {
			return varsAnswer{unknown: name}, true
		}
		a.cols = append(a.cols, col)
		row = append(row, &v.sel)
	}
	a.rows = [][]*string{row}
	return a, true
}

// showVars answers SHOW [GLOBAL|SESSION] VARIABLES with a LIKE pattern,
// a WHERE on the name, or neither.
func showVars(f []string, vars map[string]sysVar) (varsAnswer, bool) {
	if len(f) > 0 && slices.Contains([]string{"global", "session", "local"}, strings.ToLower(f[0])) {
		f = f[1:]
	}
	if len(f) == 0 || !strings.EqualFold(f[0], "variables") {
		return varsAnswer{}, false
	}
	rest := strings.Join(f[1:], " ")
	match := func(string) bool { return true }
	switch low := strings.ToLower(rest); {
	case rest == "":
	case strings.HasPrefix(low, "like "):
		pat, ok := quoted(strings.TrimSpace(rest[len("like "):]))
		if !ok {
			return varsAnswer{}, false
		}
		match = func(name string) bool { return sqlinfo.LikeFold(name, pat) }
	case strings.HasPrefix(low, "where "):
		cond := strings.TrimSpace(rest[len("where "):])
		field, cond, _ := strings.Cut(cond, " ")
		if !strings.EqualFold(strings.Trim(field, "`"), "variable_name") {
			return varsAnswer{}, false
		}
		cond = strings.TrimSpace(cond)
		var list []string
		switch {
		case strings.HasPrefix(cond, "="):
			list = []string{strings.TrimSpace(cond[1:])}
		case len(cond) > 2 && strings.EqualFold(cond[:2], "in"):
			in := strings.TrimSpace(cond[2:])
			if !strings.HasPrefix(in, "(") || !strings.HasSuffix(in, ")") {
				return varsAnswer{}, false
			}
			list = strings.Split(in[1:len(in)-1], ",")
		default:
			return varsAnswer{}, false
		}
		names := map[string]bool{}
		for _, q := range list {
			n, ok := quoted(strings.TrimSpace(q))
			if !ok {
				return varsAnswer{}, false
			}
			names[strings.ToLower(n)] = true
		}
		match = func(name string) bool { return names[name] }
	default:
		return varsAnswer{}, false
	}
	a := varsAnswer{cols: []string{"Variable_name", "Value"}}
	for _, name := range slices.Sorted(maps.Keys(vars)) {
		if match(name) {
			v := vars[name]
			a.rows = append(a.rows, []*string{&name, &v.show})
		}
	}
	return a, true
}

// quoted returns the text of a single- or double-quoted string with no
// escapes in it.
func quoted(s string) (string, bool) {
	if len(s) < 2 || s[0] != s[len(s)-1] || s[0] != '\'' && s[0] != '"' {
		return "", false
	}
	in := s[1 : len(s)-1]
	if strings.ContainsAny(in, "\\'\"") {
		return "", false
	}
	return in, true
}

// writeVars sends a varsAnswer.
func (k *Session) writeVars(a varsAnswer) error {
	if a.unknown != "" {
		return k.s.WriteErr(mysql.ER_UNKNOWN_SYSTEM_VARIABLE, "HY000", "Unknown system variable '"+a.unknown+"'")
	}
	return k.s.WriteResult(a.cols, a.rows)
}
