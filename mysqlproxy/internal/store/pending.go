package store

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// pendingSet records bumps that failed to reach memcached. While a dep is
// in it, no entry depending on it may be served or stored.
type pendingSet struct {
	mu sync.Mutex        // protects m and seq
	m  map[string]uint64 // dep -> sequence number of its latest failure
	// seq numbers failures, so that a retry that started before a newer
	// failure does not clear it.
	seq  uint64
	n    atomic.Int64 // len(m), read without the lock on the hot path
	wake chan struct{}

	journal Journal // nil: none
	log     *slog.Logger
}

func (p *pendingSet) init() {
	p.m = make(map[string]uint64)
	p.wake = make(chan struct{}, 1)
}

// pendingMax bounds the deps pending at once. Past it they give way to
// the global generation, which every entry depends on: while memcached is
// away, writes to ever more rows would otherwise grow the set, and the
// journal written with each new dep, without end.
const pendingMax = 1024

// globalDep is the global generation's dep (deps.Global).
const globalDep = "*"

func (p *pendingSet) add(dep string) {
	p.mu.Lock()
	p.seq++
	if _, global := p.m[globalDep]; global || len(p.m) >= pendingMax {
		// The global bump, landed after this failure, invalidates all
		// that the deps it replaces would.
		dep = globalDep
		if !global {
			clear(p.m)
		}
	}
	_, had := p.m[dep]
	p.m[dep] = p.seq
	p.n.Store(int64(len(p.m)))
	if !had {
		p.saveLocked()
	}
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// any reports whether any of deps has a pending bump.
func (p *pendingSet) any(deps []string) bool {
	if p.n.Load() == 0 {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.m[globalDep]; ok {
		return true
	}
	for _, d := range deps {
		if _, ok := p.m[d]; ok {
			return true
		}
	}
	return false
}

// seqs returns the pending ones among deps with their sequence numbers,
// and the global dep with its own when it is pending.
func (p *pendingSet) seqs(deps []string) map[string]uint64 {
	if p.n.Load() == 0 {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]uint64{}
	if seq, ok := p.m[globalDep]; ok {
		out[globalDep] = seq
	}
	for _, d := range deps {
		if seq, ok := p.m[d]; ok {
			out[d] = seq
		}
	}
	return out
}

func (p *pendingSet) snapshot() map[string]uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := make(map[string]uint64, len(p.m))
	for k, v := range p.m {
		m[k] = v
	}
	return m
}

// landed clears dep if no failure newer than seq was recorded.
func (p *pendingSet) landed(dep string, seq uint64) {
	p.mu.Lock()
	if p.m[dep] == seq {
		delete(p.m, dep)
		p.n.Store(int64(len(p.m)))
		p.saveLocked()
	}
	p.mu.Unlock()
}

// saveLocked records the pending deps in the journal, before the bump
// that failed is reported and before a landed one is forgotten; p.mu must
// be held. Pending bumps are rare (memcached unreachable), so each change
// is written at once.
func (p *pendingSet) saveLocked() {
	if p.journal == nil {
		return
	}
	deps := make([]string, 0, len(p.m))
	for d := range p.m {
		deps = append(deps, d)
	}
	slices.Sort(deps)
	if err := p.journal.Save(deps); err != nil {
		p.log.Error("store: writing the pending bumps journal failed", "err", err)
	}
}

func (p *pendingSet) names() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, 0, len(p.m))
	for k := range p.m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Retry backoff bounds for pending bumps.
const (
	retryMin = 10 * time.Millisecond
	retryMax = 2 * time.Second
)

// retryPending lands pending bumps. It runs for the life of the store.
func (s *Store) retryPending() {
	defer s.wg.Done()
	backoff := retryMin
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		if s.pending.n.Load() == 0 {
			backoff = retryMin
			select {
			case <-s.stop:
				return
			case <-s.pending.wake:
			}
		}
		timer.Reset(backoff)
		select {
		case <-s.stop:
			timer.Stop()
			return
		case <-timer.C:
		}
		landed, last := 0, ""
		for dep, seq := range s.pending.snapshot() {
			ctx, cancel := context.WithTimeout(context.Background(), 4*s.opts.Timeout)
			err := s.bumpOne(ctx, dep)
			cancel()
			if err != nil {
				break
			}
			s.pending.landed(dep, seq)
			landed, last = landed+1, dep
		}
		if landed > 0 {
			s.log.Info("store: pending bumps landed", "dep", last, "deps", landed)
		}
		backoff = min(2*backoff, retryMax)
	}
}
