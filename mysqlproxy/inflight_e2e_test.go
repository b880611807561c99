package mysqlproxy_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mycached/mycached/mysqlproxy"
	"github.com/mycached/mycached/mysqlproxy/internal/testenv"
)

// TestNoOldRowOnceCommitted: a write through the sidecar commits on the
// server before the sidecar has its OK and bumps. A read through the same
// sidecar that begins after a direct read showed the new row must not
// get the old one from the cache, for an autocommit UPDATE and for a
// COMMIT. The version only grows: a read that returns less than a direct
// read made before it began is stale.
func TestNoOldRowOnceCommitted(t *testing.T) {
	t.Parallel()
	m := testenv.Shared(t).DB
	p := startProxy(t, mysqlproxy.Config{Backend: m.Addr})
	name := m.NewDatabase(t)
	direct := openDB(t, rootDSN(m.Addr, name, ""))
	mustExec(t, direct, "CREATE TABLE t (id INT PRIMARY KEY, v INT)")
	mustExec(t, direct, "INSERT INTO t VALUES (1, 0), (2, 0)")
	via := openDB(t, rootDSN(p.addr, name, ""))
	for _, mode := range []string{"autocommit", "commit"} {
		t.Run(mode, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				for ctx.Err() == nil {
					var err error
					if mode == "autocommit" {
						_, err = via.Exec("UPDATE t SET v = v + 1 WHERE id = 1")
					} else {
						tx, terr := via.Begin()
						if terr != nil {
							t.Error(terr)
							return
						}
						if _, err = tx.Exec("UPDATE t SET v = v + 1 WHERE id = 1"); err == nil {
							err = tx.Commit()
						}
					}
					if err != nil {
						t.Error(err)
						return
					}
					// Room for hits between the writes.
					time.Sleep(2 * time.Millisecond)
				}
			}()
			var stale, reads atomic.Int64
			before := hits(t, via)
			for range 3 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for ctx.Err() == nil {
						var seen, got int64
						if err := direct.QueryRow("SELECT v FROM t WHERE id = 1").Scan(&seen); err != nil {
							t.Error(err)
							return
						}
						if err := via.QueryRow("SELECT v FROM t WHERE id = 1").Scan(&got); err != nil {
							t.Error(err)
							return
						}
						reads.Add(1)
						if got < seen {
							stale.Add(1)
						}
					}
				}()
			}
			wg.Wait()
			if n := stale.Load(); n > 0 {
				t.Errorf("%d of %d reads through the sidecar returned a version older than a direct read made before them", n, reads.Load())
			}
			if hits(t, via) == before {
				t.Errorf("no read was a hit: the test proves nothing")
			}
		})
	}
}
