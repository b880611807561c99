package store

import (
	"context"
	"sync/atomic"
)

// Entries reach memcached off the client's path: PutAsync checks the
// entry and keeps it in L1 at once, so the next lookup on this sidecar
// finds it, and queues the memcached write for a few background writers.
// A full queue drops the write: a cache may always forget, and a client
// never waits for one.

// Bounds of the background queue.
const (
	bgWriters    = 4
	bgQueueItems = 4096
	bgQueueBytes = 64 << 20
)

type bgItem struct {
	key string
	e   *Entry
	n   int64 // bytes it holds
}

type background struct {
	ch      chan bgItem
	bytes   atomic.Int64  // held by queued items
	dropped atomic.Uint64 // writes dropped on a full queue
	busy    atomic.Int64  // items queued or being written
}

func (s *Store) startBackground() {
	s.bg.ch = make(chan bgItem, bgQueueItems)
	for range bgWriters {
		s.wg.Add(1)
		go s.writeBackground()
	}
}

func (s *Store) writeBackground() {
	defer s.wg.Done()
	for {
		select {
		case <-s.stop:
			return
		case it := <-s.bg.ch:
			s.bg.bytes.Add(-it.n)
			if !s.pending.any(it.e.Deps) && !s.ringHeld() && !expired(it.e, s.now()) {
				_ = s.putMemcached(context.Background(), it.key, it.e)
			}
			s.bg.busy.Add(-1)
		}
	}
}

// PutAsync is Put with the memcached write done in the background. It
// returns what Put's checks say, before anything reaches memcached.
func (s *Store) PutAsync(key string, e *Entry) error {
	admitted, err := s.putLocal(key, e)
	if err != nil || s.mc == nil {
		return err
	}
	n := e.size(key)
	if s.bg.bytes.Add(n) > bgQueueBytes {
		s.bg.bytes.Add(-n)
		s.bg.dropped.Add(1)
		return nil
	}
	s.bg.busy.Add(1)
	select {
	case s.bg.ch <- bgItem{key: key, e: e, n: n}:
	default:
		s.bg.bytes.Add(-n)
		s.bg.busy.Add(-1)
		s.bg.dropped.Add(1)
	}
	if admitted {
		s.stats.stores.Add(1)
	}
	return nil
}
