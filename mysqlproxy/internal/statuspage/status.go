// Package statuspage serves mycached's status page for operators, and
// the JSON it is drawn from, on the admin listener.
package statuspage

import (
	"time"
)

// Counters are the counters sampled every Options.Every to draw the
// rates over time. Reading them must be cheap.
type Counters struct {
	L1Hits, MemcachedHits uint64 // reads served from each tier
	Misses                uint64 // cacheable reads relayed to fill an entry
	Bypasses              uint64 // reads relayed without using the cache
	Bumps                 uint64 // generations bumped (one per table or row)
	Servers               []ServerCounters
}

// ServerCounters are one memcached server's get counters.
type ServerCounters struct {
	Addr         string
	Gets, Errors uint64
	Time         time.Duration // summed over the gets
	Idle         int           // pooled idle connections now
}

// Reading is the state that /status.json reports as it is now, beside
// the rates the page derives from the samples.
type Reading struct {
	Sessions        int      `json:"sessions"`
	L1              L1       `json:"l1"`
	MemcachedErrors uint64   `json:"memcached_errors"` // every memcached operation, not gets only
	Follower        Follower `json:"follower"`
	Queries         []Query  `json:"queries"`
	Policy          *Policy  `json:"policy"` // null when the policy is not Lua

	PendingBumps int64    `json:"-"` // reported under invalidation
	Counters     Counters `json:"-"` // reported as totals and rates
}

// L1 is the in-process tier's use of its capacity.
type L1 struct {
	Bytes    int64 `json:"bytes"`
	Entries  int64 `json:"entries"`
	Capacity int64 `json:"capacity_bytes"` // 0 when L1 is off
}

// Follower is the binlog follower's state. The durations are in seconds,
// and null when not known.
type Follower struct {
	// State is "running", "off: …", "connecting", "reconnecting: …" or
	// why it cannot run.
	State    string `json:"state"`
	Running  bool   `json:"running"`
	Position string `json:"position,omitempty"`
	// Staleness is how far behind the server the local view may be: the
	// follower's lag.
	Staleness     *float64 `json:"staleness_seconds"`
	LastMessage   *float64 `json:"last_message_seconds"`
	LastCommitAge *float64 `json:"last_commit_age_seconds"`
	Events        uint64   `json:"events"`
	Transactions  uint64   `json:"transactions"`
	Bumps         uint64   `json:"bumps"`
	Reconnects    uint64   `json:"reconnects"`
	LostPositions uint64   `json:"lost_positions"`
	Unlogged      uint64   `json:"unlogged_changes"`
}

// Query is one statement shape's counts, as SHOW MYCACHED QUERIES shows
// them.
type Query struct {
	Digest       string `json:"digest"`
	Hits         int64  `json:"hits"`
	Misses       int64  `json:"misses"`
	Bypasses     int64  `json:"bypasses"`
	WhyNot       string `json:"why_not,omitempty"`
	Admission    string `json:"admission,omitempty"`
	AdmissionWhy string `json:"admission_why,omitempty"`
}

// Policy is the Lua policy engine's state.
type Policy struct {
	Scripts    []Script `json:"scripts"`
	Calls      uint64   `json:"calls"`
	MemoHits   uint64   `json:"memo_hits"`
	Errors     uint64   `json:"errors"`
	Kills      uint64   `json:"kills"`
	BadResults uint64   `json:"bad_results"`
}

// Script is one loaded policy script's share of the failures.
type Script struct {
	Name   string `json:"name"`
	Errors uint64 `json:"errors"`
	Kills  uint64 `json:"kills"`
}

// Status is the body of /status.json: the reading, and the rates over
// the samples kept.
type Status struct {
	Time          time.Time `json:"time"`
	UptimeSeconds float64   `json:"uptime_seconds"`
	SampleSeconds float64   `json:"sample_seconds"`
	Reading
	Totals       Totals       `json:"totals"`
	Rates        Point        `json:"rates"`
	History      []Point      `json:"history"`
	Memcached    []Server     `json:"memcached"`
	Invalidation Invalidation `json:"invalidation"`
}

// Totals are the read and bump counters since start.
type Totals struct {
	L1Hits        uint64 `json:"l1_hits"`
	MemcachedHits uint64 `json:"memcached_hits"`
	Misses        uint64 `json:"misses"`
	Bypasses      uint64 `json:"bypasses"`
	Bumps         uint64 `json:"bumps"`
}

// Point is the rates between two samples, per second, ending at T (Unix
// milliseconds). HitRatio is the share of reads served from a cache tier,
// null when there were no reads.
type Point struct {
	T         int64    `json:"t"`
	L1        float64  `json:"l1"`
	Memcached float64  `json:"memcached"`
	Miss      float64  `json:"miss"`
	Bypass    float64  `json:"bypass"`
	HitRatio  *float64 `json:"hit_ratio"`
	Bumps     float64  `json:"bumps"`
}

// Server is one memcached server's gets: since start, and over the last
// sample interval. Latencies are in milliseconds, null without gets.
type Server struct {
	Addr         string   `json:"addr"`
	Gets         uint64   `json:"gets"`
	Errors       uint64   `json:"errors"`
	AvgLatencyMs *float64 `json:"avg_latency_ms"`
	GetsPerS     float64  `json:"gets_per_s"`
	ErrorsPerS   float64  `json:"errors_per_s"`
	LatencyMs    *float64 `json:"latency_ms"`
	IdleConns    int      `json:"idle_conns"`
}

// Invalidation is the bumps: the rate, and those that have not landed.
type Invalidation struct {
	BumpsPerS float64 `json:"bumps_per_s"`
	Pending   int64   `json:"pending_bumps"`
}
