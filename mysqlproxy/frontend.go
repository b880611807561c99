package mysqlproxy

import (
	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/mycached/mycached/cachepolicy"
	"github.com/mycached/mycached/mysqlproxy/internal/admin"
	"github.com/mycached/mycached/mysqlproxy/internal/cache"
	"github.com/mycached/mycached/mysqlproxy/internal/kvproxy"
	"github.com/mycached/mycached/mysqlproxy/internal/relay"
)

// frontend is a relayed session's relay.Handler: it puts each command
// that carries a statement through the features in order. The policy's
// query hook sees a statement first, then kv, then mycached's own
// statements, and what is left goes to the cache, which relays it.
type frontend struct {
	srv   *Server
	s     *relay.Session
	kv    *kvproxy.Session
	admin *admin.Session
	cache *cache.Session
	q     cachepolicy.Query // the query hook's scratch
}

func (srv *Server) newFrontend(s *relay.Session) relay.Handler {
	f := &frontend{srv: srv, s: s, kv: srv.kv.NewSession(s), cache: srv.cache.NewSession(s)}
	f.admin = admin.NewSession(srv, s, f.cache)
	return f
}

// Command implements relay.Handler.
func (f *frontend) Command(p []byte) (bool, error) {
	switch p[0] {
	case mysql.COM_QUERY:
		return true, f.query(p)
	case mysql.COM_STMT_PREPARE:
		return true, f.prepare(p)
	case mysql.COM_STMT_EXECUTE:
		return true, f.execute(p)
	case relay.ComStmtBulkExecute:
		return true, f.bulkExecute(p)
	case mysql.COM_STMT_SEND_LONG_DATA:
		if handled, err := f.kv.Command(p); handled {
			return true, err
		}
		if err := f.cache.LongData(p); err != nil {
			return true, err
		}
	case mysql.COM_STMT_CLOSE, mysql.COM_STMT_RESET:
		return f.kv.Command(p)
	case mysql.COM_INIT_DB:
		if err := f.cache.ChangingDB(); err != nil {
			return true, err
		}
	}
	return false, nil
}

func (f *frontend) query(p []byte) error {
	sql := string(p[1:])
	if f.srv.hook.Active() {
		var handled bool
		var err error
		if p, sql, handled, err = f.srv.hook.Run(f.s, &f.q, p, sql); handled {
			return err
		}
	}
	if handled, err := f.kv.Query(sql); handled {
		return err
	}
	if handled, err := f.admin.Query(sql); handled {
		return err
	}
	err := f.cache.Query(p, sql)
	f.admin.After()
	return err
}

func (f *frontend) prepare(p []byte) error {
	if f.srv.hook.Active() {
		var handled bool
		var err error
		if p, _, handled, err = f.srv.hook.Run(f.s, &f.q, p, string(p[1:])); handled {
			return err
		}
	}
	if handled, err := f.kv.Prepare(string(p[1:])); handled {
		return err
	}
	_, err := f.cache.Prepare(p)
	f.kv.ServerPrepared()
	return err
}

func (f *frontend) execute(p []byte) error {
	if len(p) < 10 {
		return f.s.RelayMode(p, relay.ModeResult)
	}
	if handled, err := f.kv.Command(p); handled {
		return err
	}
	st := f.s.Stmt(p)
	if st == nil {
		return f.s.RelayMode(p, relay.ModeResult)
	}
	relay.NoteParamTypes(st, p)
	return f.cache.Execute(p, st)
}

// bulkExecute relays a COM_STMT_BULK_EXECUTE: a write of the prepared
// statement for every row of parameters it carries.
func (f *frontend) bulkExecute(p []byte) error {
	st := f.s.Stmt(p)
	if len(p) < 7 || st == nil {
		return f.s.RelayMode(p, relay.ModeResult)
	}
	relay.ForgetTypes(st)
	return f.cache.BulkExecute(p, st)
}

// Reset implements relay.Handler.
func (f *frontend) Reset() {
	f.kv.Reset()
	f.cache.Reset()
}

// TxEnded implements relay.Handler.
func (f *frontend) TxEnded() { f.cache.TxEnded() }

// RowCountZeroed implements relay.Handler.
func (f *frontend) RowCountZeroed() { f.cache.RowCountZeroed() }
