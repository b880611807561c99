package mysqlproxy

import (
	"time"

	"github.com/mycached/mycached/mysqlproxy/internal/statuspage"
)

// statusQueries is how many statement shapes the status page lists.
const statusQueries = 25

// startStatusPage starts sampling the counters the status page charts.
func (s *Server) startStatusPage() {
	s.status = statuspage.New(statuspage.Options{Counters: s.statusCounters, Read: s.statusReading})
}

// statusCounters are the counters the status page samples every second.
func (s *Server) statusCounters() statuspage.Counters {
	r := s.cache.Stats.Reads()
	c := statuspage.Counters{
		L1Hits: r.L1Hits, MemcachedHits: r.MemcachedHits, Misses: r.Misses, Bypasses: r.Bypasses,
		Bumps: s.store.Stats().Bumps,
	}
	for _, sv := range s.store.Servers() {
		c.Servers = append(c.Servers, statuspage.ServerCounters{Addr: sv.Addr, Gets: sv.Gets, Errors: sv.Errors, Time: sv.Time, Idle: sv.Idle})
	}
	return c
}

// statusReading is the rest of what the status page shows.
func (s *Server) statusReading() statuspage.Reading {
	st := s.store.Stats()
	r := statuspage.Reading{
		Sessions:        s.sessionCount(),
		L1:              statuspage.L1{Bytes: st.L1Bytes, Entries: st.L1Entries, Capacity: max(s.cfg.CacheMemory, 0)},
		MemcachedErrors: st.MemcachedErrors,
		PendingBumps:    st.PendingBumps,
		Follower:        s.coh.statusFollower(),
		Counters:        s.statusCounters(),
	}
	for _, q := range s.cache.Queries.Top(statusQueries) {
		r.Queries = append(r.Queries, statuspage.Query{
			Digest: q.Digest, Hits: q.Hits, Misses: q.Misses, Bypasses: q.Bypasses,
			WhyNot: q.Why, Admission: q.Admission, AdmissionWhy: q.AdmissionWhy,
		})
	}
	if e := s.engine; e != nil {
		es := e.Stats()
		p := &statuspage.Policy{Calls: es.Calls, MemoHits: es.MemoHits, Errors: es.Errors, Kills: es.Kills, BadResults: es.BadResults}
		for _, sc := range e.ScriptStats() {
			p.Scripts = append(p.Scripts, statuspage.Script{Name: sc.Name, Errors: sc.Errors, Kills: sc.Kills})
		}
		r.Policy = p
	}
	return r
}

// statusFollower is the follower's part of the status page.
func (c *coherence) statusFollower() statuspage.Follower {
	c.mu.Lock()
	f, state := c.follower, c.state
	c.mu.Unlock()
	out := statuspage.Follower{State: state}
	if f == nil {
		return out
	}
	st := f.Status()
	age := func(t time.Time) *float64 {
		if t.IsZero() {
			return nil
		}
		v := time.Since(t).Seconds()
		return &v
	}
	if !st.Running {
		out.State = "reconnecting: " + st.LastError
	}
	out.Running = st.Running
	out.Position = st.Position
	out.Staleness = age(st.FreshAsOf)
	out.LastMessage = age(st.LastMessage)
	out.LastCommitAge = age(st.LastEvent)
	out.Events, out.Transactions, out.Bumps = st.Events, st.Transactions, st.Bumps
	out.Reconnects, out.LostPositions, out.Unlogged = st.Reconnects, st.LostPosition, st.Unlogged
	return out
}
