// Package admin answers the statements mycached handles itself on the main
// listener: the session's cache switch (SET @mycached_cache) and the
// admin commands (SHOW MYCACHED ..., MYCACHED ...).
package admin

import (
	"context"
	"strconv"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/mycached/mycached/cachepolicy"
	"github.com/mycached/mycached/mysqlproxy/internal/cache"
	"github.com/mycached/mycached/mysqlproxy/internal/relay"
	"github.com/mycached/mycached/mysqlproxy/internal/sqlinfo"
)

// Server is what the admin commands act on.
type Server interface {
	// IsAdmin reports whether the session's account may run admin
	// commands.
	IsAdmin(s *relay.Session) bool
	// StatusRows are SHOW MYCACHED STATUS's rows.
	StatusRows() [][2]string
	// Cache is the cache engine the commands inspect and invalidate.
	Cache() *cache.Engine
	// ReloadPolicy reloads the policy scripts.
	ReloadPolicy() error
}

// Session answers one session's pseudo-queries. It is owned by the
// session's goroutine.
type Session struct {
	srv         Server
	s           *relay.Session
	cache       *cache.Session
	cacheSwitch int // the SET @mycached_cache in flight, if any
}

// NewSession returns the admin front of the session s, whose cache switch
// is in c.
func NewSession(srv Server, s *relay.Session, c *cache.Session) *Session {
	return &Session{srv: srv, s: s, cache: c}
}

// Query answers the statements mycached handles itself: the session's
// cache switch and the admin commands. It returns false for everything
// else, cheaply: a statement that does not begin with SET, SHOW or
// MYCACHED is not looked at further.
func (a *Session) Query(sql string) (bool, error) {
	t := skipComments(sql)
	if !hasPrefixFold(t, "mycached") && !hasPrefixFold(t, "show") && !hasPrefixFold(t, "set") {
		return false, nil
	}
	// Only the words after SET or SHOW decide; most statements that
	// start so are not ours, and leave at the second word.
	if rest := strings.TrimLeft(t[strings.IndexAny(t+" ", " \t\r\n"):], " \t\r\n"); !hasPrefixFold(t, "mycached") &&
		!hasPrefixFold(rest, "mycached") && !hasPrefixFold(rest, "@mycached_cache") {
		return false, nil
	}
	words := pseudoWords(t)
	switch {
	case len(words) == 2 && words[0] == "set" && strings.HasPrefix(words[1], "@mycached_cache="):
		// The switch is the session's, and the user variable the
		// server's as well: the statement goes on to the server, and
		// takes effect here once it succeeded there.
		switch strings.TrimPrefix(words[1], "@mycached_cache=") {
		case "0", "off", "false", "'0'", "'off'", "'false'":
			a.cacheSwitch = switchOff
		case "1", "on", "true", "'1'", "'on'", "'true'":
			a.cacheSwitch = switchOn
		}
		return false, nil
	case len(words) >= 2 && words[0] == "show" && words[1] == "mycached":
		if err := a.s.RefreshIdentity(); err != nil {
			return true, err
		}
		if !a.srv.IsAdmin(a.s) {
			return false, nil // the server answers, as it would without mycached
		}
		return true, a.showMycached(words[2:])
	case len(words) >= 1 && words[0] == "mycached":
		if err := a.s.RefreshIdentity(); err != nil {
			return true, err
		}
		if !a.srv.IsAdmin(a.s) {
			return false, nil
		}
		return true, a.adminCommand(words[1:])
	}
	return false, nil
}

// After applies a SET @mycached_cache that the server accepted.
func (a *Session) After() {
	if a.cacheSwitch != switchNone && !a.s.Last.Failed() {
		a.cache.CacheOff = a.cacheSwitch == switchOff
	}
	a.cacheSwitch = switchNone
}

// The cache switch a SET @mycached_cache statement asks for.
const (
	switchNone = iota
	switchOff
	switchOn
)

// pseudoWords splits a pseudo-query into lower-case words, with spaces
// around "=" removed and a trailing ";" dropped.
func pseudoWords(t string) []string {
	t = strings.TrimRight(t, "; \t\r\n")
	t = strings.ReplaceAll(t, " =", "=")
	t = strings.ReplaceAll(t, "= ", "=")
	f := strings.Fields(t)
	for i, w := range f {
		if i < 3 || !strings.Contains(w, ".") {
			f[i] = strings.ToLower(w)
		}
	}
	return f
}

func (a *Session) showMycached(args []string) error {
	what := ""
	if len(args) > 0 {
		what = args[0]
	}
	switch what {
	case "status":
		// SHOW MYCACHED STATUS [LIKE 'pattern'], as SHOW STATUS.
		pattern := "%"
		switch {
		case len(args) == 3 && args[1] == "like" && len(args[2]) >= 2 && (args[2][0] == '\'' || args[2][0] == '"') && args[2][len(args[2])-1] == args[2][0]:
			pattern = args[2][1 : len(args[2])-1]
		case len(args) != 1:
			return a.s.WriteErr(mysql.ER_PARSE_ERROR, "42000", "mycached: SHOW MYCACHED STATUS takes nothing, or LIKE 'pattern'")
		}
		var rows [][]*string
		for _, kv := range a.srv.StatusRows() {
			if sqlinfo.LikeFold(kv[0], pattern) {
				rows = append(rows, []*string{&kv[0], &kv[1]})
			}
		}
		return a.s.WriteResult([]string{"Variable_name", "Value"}, rows)
	case "queries":
		var rows [][]*string
		for _, q := range a.srv.Cache().Queries.Top(100) {
			vals := []string{q.Digest, strconv.FormatInt(q.Hits, 10), strconv.FormatInt(q.Misses, 10), strconv.FormatInt(q.Bypasses, 10), q.Why, q.Admission, q.AdmissionWhy}
			rows = append(rows, []*string{&vals[0], &vals[1], &vals[2], &vals[3], &vals[4], &vals[5], &vals[6]})
		}
		return a.s.WriteResult([]string{"digest", "hits", "misses", "bypasses", "bypass_reason", "admission", "admission_reason"}, rows)
	}
	return a.s.WriteErr(mysql.ER_PARSE_ERROR, "42000", "mycached: SHOW MYCACHED takes STATUS or QUERIES")
}

func (a *Session) adminCommand(args []string) error {
	switch {
	case len(args) == 1 && args[0] == "flush":
		if err := a.srv.Cache().Flush(context.Background()); err != nil {
			return a.s.WriteErr(mysql.ER_UNKNOWN_ERROR, "HY000", "mycached: flush failed: "+err.Error())
		}
		a.srv.Cache().Queries.Reset()
		return a.s.WriteOK(0)
	case len(args) == 3 && args[0] == "invalidate" && args[1] == "table":
		db, table, ok := cachepolicy.ParseTableName(args[2])
		switch {
		case !ok:
			return a.s.WriteErr(mysql.ER_WRONG_TABLE_NAME, "42000", "mycached: cannot read "+args[2]+" as a table's name: write db.table, quoting a part that holds a dot in backquotes")
		case db == "" && a.s.Hello.DB == "":
			return a.s.WriteErr(mysql.ER_NO_DB_ERROR, "3D000", "mycached: name the table as db.table, or USE a database first")
		case db == "":
			db = a.s.Hello.DB
		}
		a.srv.Cache().Invalidate(context.Background(), db, table)
		return a.s.WriteOK(0)
	case len(args) == 2 && args[0] == "reload" && args[1] == "policy":
		if err := a.srv.ReloadPolicy(); err != nil {
			return a.s.WriteErr(mysql.ER_UNKNOWN_ERROR, "HY000", "mycached: policy reload failed, the old policy stays: "+err.Error())
		}
		return a.s.WriteOK(0)
	}
	return a.s.WriteErr(mysql.ER_PARSE_ERROR, "42000", "mycached: unknown admin command; try MYCACHED FLUSH, MYCACHED INVALIDATE TABLE db.t or MYCACHED RELOAD POLICY")
}

// hasPrefixFold is strings.HasPrefix, ignoring ASCII case.
func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// skipComments returns sql without its leading whitespace and comments, so
// that a tag such as /* app=shop */ does not hide a pseudo-query.
func skipComments(sql string) string {
	for {
		sql = strings.TrimLeft(sql, " \t\r\n")
		switch {
		case strings.HasPrefix(sql, "/*"):
			end := strings.Index(sql[2:], "*/")
			if end < 0 {
				return sql
			}
			sql = sql[2+end+2:]
		case strings.HasPrefix(sql, "#"), strings.HasPrefix(sql, "-- "):
			end := strings.IndexByte(sql, '\n')
			if end < 0 {
				return ""
			}
			sql = sql[end+1:]
		default:
			return sql
		}
	}
}
