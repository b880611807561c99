// Package hook runs a policy's query hook on a statement before anything
// else sees it, as MySQL Proxy's read_query did: the hook may answer the
// statement itself, or rewrite it.
package hook

import (
	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/mycached/mycached/cachepolicy"
	"github.com/mycached/mycached/mysqlproxy/internal/relay"
	"github.com/mycached/mycached/mysqlproxy/internal/sqlinfo"
)

// Hook is a policy engine's query hook and what it needs to describe a
// statement to it.
type Hook struct {
	Engine   *cachepolicy.Engine
	Analyzer *sqlinfo.Analyzer
	// Tables returns the qualified tables a cacheable analysis reads.
	Tables func(info *sqlinfo.Info, db string) []string
}

// Active reports whether there is a hook to run.
func (h *Hook) Active() bool { return h != nil && h.Engine != nil && h.Engine.HasQueryHook() }

// Run runs the hook on the COM_QUERY or COM_STMT_PREPARE p (whose text
// is sql) of session s, using q as scratch. It returns the command to go
// on with, which the hook may have rewritten, or handled when the hook
// answered it. A prepare cannot be answered with rows or an OK: it goes
// on as the client sent it.
func (h *Hook) Run(s *relay.Session, q *cachepolicy.Query, p []byte, sql string) ([]byte, string, bool, error) {
	prepared := p[0] == mysql.COM_STMT_PREPARE
	d := sqlinfo.DialectOf(s.Vars["sql_mode"], s.Vars["character_set_client"])
	d.NoSchema = s.NoSchema()
	info := h.Analyzer.AnalyzeIn(sql, d)
	*q = cachepolicy.Query{
		SQL: sql, Digest: info.Digest, Kind: info.Kind.String(), DB: s.Hello.DB, User: s.User(),
		ClientAddr: s.ClientAddr, InTransaction: s.InTransaction(), Prepared: prepared,
		Cacheable: info.Cacheable, WhyNot: info.WhyNot,
	}
	if info.Cacheable {
		q.Tables = h.Tables(info, s.Hello.DB)
	}
	res := h.Engine.Query(q)
	switch res.Kind {
	case cachepolicy.QueryRewrite:
		return append([]byte{p[0]}, res.SQL...), res.SQL, false, nil
	case cachepolicy.QueryResultSet:
		if prepared {
			break
		}
		return p, sql, true, s.WriteResult(res.Columns, res.Rows)
	case cachepolicy.QueryAffected:
		if prepared {
			break
		}
		return p, sql, true, s.WriteOK(res.Affected)
	case cachepolicy.QueryError:
		code := res.ErrCode
		if code == 0 {
			code = mysql.ER_UNKNOWN_ERROR
		}
		return p, sql, true, s.WriteErr(code, "HY000", res.ErrMsg)
	}
	return p, sql, false, nil
}
