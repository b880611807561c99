package cache

import (
	"errors"
	"time"

	"github.com/mycached/mycached/mysqlproxy/internal/store"
)

// A miss in a transaction that reads a snapshot answers its own client
// at once, and is stored only once the binlog follower has applied
// everything committed before the read began (snapshotStorable). Until
// then it waits here, off the client's path, for at most
// snapshotStoreWait, and the bytes waiting are bounded.
const (
	snapshotStoreWait  = 2 * time.Second
	snapshotStoreBytes = 16 << 20
	snapshotStoreFirst = 5 * time.Millisecond
	snapshotStoreEvery = 50 * time.Millisecond
)

// putWhenCurrent stores ent under key once the follower is current as of
// readAt, when the read began. The store refuses it if anything it
// depends on changed since ent.Since (store.ErrChanged): the snapshot
// may then predate that change.
func (e *Engine) putWhenCurrent(key string, ent *store.Entry, readAt time.Time) {
	n := int64(len(ent.Payload) + len(ent.Check) + len(key))
	if e.snapWaiting.Add(n) > snapshotStoreBytes {
		e.snapWaiting.Add(-n)
		e.Stats.snapshotStores.With("dropped").Inc()
		return
	}
	deadline := readAt.Add(snapshotStoreWait)
	var try func(wait time.Duration)
	try = func(wait time.Duration) {
		f := e.follower.Load()
		outcome := ""
		switch {
		case f == nil:
			outcome = "dropped"
		case !(*f).FreshAsOf().Before(readAt):
			switch err := e.Store.PutAsync(key, ent); {
			case err == nil:
				e.Stats.stores.Inc()
				outcome = "stored"
			case errors.Is(err, store.ErrChanged):
				outcome = "changed"
			default:
				outcome = "dropped"
			}
		case time.Now().After(deadline):
			outcome = "dropped"
		default:
			time.AfterFunc(wait, func() { try(min(2*wait, snapshotStoreEvery)) })
			return
		}
		e.snapWaiting.Add(-n)
		e.Stats.snapshotStores.With(outcome).Inc()
	}
	try(snapshotStoreFirst)
}
