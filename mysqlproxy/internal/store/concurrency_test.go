package store

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestNoStaleHitUnderConcurrency models a table with one value. Writers
// change it and then bump; readers look it up, and on a miss "query" it
// and fill. A reader must never be served a value older than the last
// write whose bump completed before its lookup began.
func TestNoStaleHitUnderConcurrency(t *testing.T) {
	forEachMode(t, func(t *testing.T, opts Options) {
		stores := []*Store{newStore(t, opts)}
		if len(opts.Servers) > 0 {
			stores = append(stores, newStore(t, opts))
		}
		var value, committed atomic.Int64
		var writeMu sync.Mutex
		ctx := context.Background()
		deps := []string{"*", "db.*", "db.t"}
		check := []byte("c")
		key := qkey(1)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var hits atomic.Int64
		for w := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s := stores[w%len(stores)]
				for i := 0; i < 200; i++ {
					writeMu.Lock()
					v := value.Add(1)
					s.Bump(ctx, []string{"db.t"})
					committed.Store(v)
					writeMu.Unlock()
				}
			}()
		}
		for r := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s := stores[r%len(stores)]
				for {
					select {
					case <-stop:
						return
					default:
					}
					floor := committed.Load()
					e, _, cur, st := s.Lookup(ctx, key, check, deps)
					switch st {
					case Hit:
						hits.Add(1)
						if got, _ := strconv.ParseInt(string(e.Payload), 10, 64); got < floor {
							t.Errorf("served value %d, but %d was committed and bumped before the lookup", got, floor)
							return
						}
					case Miss:
						v := value.Load() // the backend query
						s.Put(ctx, key, &Entry{Check: check, Payload: []byte(strconv.FormatInt(v, 10)),
							Deps: deps, Gens: cur, Expires: time.Now().Add(time.Hour)})
					case Error, Bypass:
						t.Errorf("got status %v", st)
						return
					}
				}
			}()
		}
		// Readers run until the writers finish.
		go func() {
			for committed.Load() < 400 {
				time.Sleep(time.Millisecond)
			}
			close(stop)
		}()
		wg.Wait()
		t.Logf("%d hits", hits.Load())
	})
}
