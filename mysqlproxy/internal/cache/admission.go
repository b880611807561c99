package cache

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mycached/mycached/cachepolicy"
)

// Adaptive admission: a statement shape whose entries are seldom hit
// before they are invalidated or expire costs every execution a lookup (a
// memcached round trip) and a store, and saves little. Each shape is
// judged over windows of executions: a hit saves the backend time a read
// of the shape takes, a miss costs the time its lookup took. A shape
// whose savings do not cover its costs is rejected: its reads go straight
// to the backend, with no lookup and no store.
//
// A rejected shape stores nothing, so its own hits cannot tell when it
// would pay again; nor can a cold cache's. Both are judged by their
// ghosts as well (see ghosts): the reads that would have hit an entry
// stored by an earlier read, had it been stored. A rejected read counts
// as a hit when its ghost does. An admitted shape is judged by its real
// hits once it has been admitted for a window before the one judged, so
// that its entries had the time to be stored: ghosts then overstate what
// the cache can serve (reads that may not store, such as those inside a
// snapshot, entries evicted or expired). Until then, a window's hit
// ratio is the larger of the real and the ghost one.

// Admission states.
const (
	admProbation int32 = iota // not judged yet: full lookups and stores
	admAdmitted               // it pays: full lookups and stores
	admRejected               // it does not: relayed
)

var admNames = [...]string{admProbation: "probation", admAdmitted: "admitted", admRejected: "rejected"}

// admWindow is the number of executions a verdict is drawn from.
const admWindow = 128

// admProbation is how many windows a new shape is cached before it may be
// rejected: a cold cache, and ghosts that have seen nothing yet, say
// little about a shape whose keys repeat at a distance.
const admProbationWindows = 8

// A shape none of whose reads has hit, for real or by its ghost, through
// admQuickWindows windows of its probation, whose tables changed between
// most of its reads all along, ends its probation there: its entries are
// invalidated before they could be read again (range reads of a table
// written all the time). Each window of probation costs such a shape's
// reads a lookup and a store for nothing, and a shape read a hundred
// times a second would pay them for eight seconds. A shape whose tables
// stay as they are (a cold cache over many keys) serves its whole
// probation: its keys may repeat at a distance. Should its reads come to
// pay, its ghosts bring it back as they bring any rejected shape.
const admQuickWindows = 2

// An admitted shape, or one on probation, is rejected only once it has
// lost admLosing windows in a row, over at least admLosingFor. At tens of
// thousands of reads a second a window lasts milliseconds: the window of
// misses after a write to the shape's table, or a moment in which the
// machine was too busy to answer lookups quickly, says nothing of the
// shape, and the reads of a rejected one all go to the server until its
// ghosts bring it back.
const (
	admLosing    = 3
	admLosingFor = 250 * time.Millisecond
)

// A shape brought back by its ghosts starts cold: its real hits come
// only as its entries are stored again, and a shape whose keys repeat at
// a distance (uniform reads over many rows) loses its first windows and
// is rejected again, while its ghosts keep saying it would pay. Each such
// failed return holds it rejected for twice as long as the one before,
// from admHold up to admHoldMax; a shape that pays for real once back
// starts over. Entries stored while it is back stay for their ttl, so a
// key space too large to warm in one return still warms over several:
// the bound keeps that from taking much longer than it did.
const (
	admHold    = time.Second
	admHoldMax = 16 * time.Second
)

// A rejected shape's reads are judged by a sample of them, so that the
// others cost no more than a passthrough: the texts (or parameters) one
// in admSample hashes to, the same in every session and sidecar, so that
// a sampled read's ghost sees the earlier reads of its key; and one read
// in admProbe of the others, so that a shape whose reads come to repeat
// on keys outside the sample is seen to. Its windows take that many
// more reads.
const (
	admSample = 8
	admProbe  = 16
)

// admission is one shape's state. The counters are updated without a
// lock; the verdict is drawn under mu by the execution that ends a window.
type admission struct {
	state  atomic.Int32
	execs  atomic.Int64 // in the window
	hits   atomic.Int64 // real hits in the window
	ghosts atomic.Int64 // ghost hits in the window
	// ghost hits of reads that were not looked up (rejected)
	ghostsRelayed atomic.Int64
	misses        atomic.Int64 // real misses in the window
	// Sums over the window, in nanoseconds: the lookup time of misses,
	// and the backend time of reads relayed.
	missNanos, relayNanos atomic.Int64
	relays                atomic.Int64

	// lastGens is the hash of the table-level generations the shape's
	// last read saw (a read of whole tables, not a point lookup), and
	// churn counts the reads in the window that saw others.
	lastGens atomic.Uint64
	churn    atomic.Int64

	// ghostless says the last window's real hits were most of its reads:
	// the ghosts cannot tell more, and are not kept.
	ghostless atomic.Bool

	// probes counts a rejected shape's reads outside the sample;
	// policyForces says the policy forced admission for one of the
	// shape's reads, which all ask it from then on.
	probes       atomic.Uint32
	policyForces atomic.Bool

	mu sync.Mutex
	// The costs measured, averaged over windows (see smoothed), and kept
	// across windows that measure none.
	missCost, relayCost time.Duration
	windows             int   // judged so far, up to admProbationWindows
	probationHits       int64 // hits, real or ghost, through the probation
	// churning says every window of the probation saw the shape's
	// tables change between most of its reads.
	churning        bool
	admittedWindows int // consecutive windows read through the cache
	losing          int // consecutive windows whose hits did not pay
	losingSince     time.Time
	// returned says the shape was admitted again by its ghosts, and has
	// not paid for real since; failedReturns counts such returns that
	// ended rejected, and heldUntil is when its ghosts may bring it back.
	returned      bool
	failedReturns int
	heldUntil     time.Time
	why           atomic.Pointer[string]

	now func() time.Time // time.Now when nil
}

// admit says whether a read of this shape goes through the cache now, as
// the policy's override or the shape's state says.
func (a *admission) admit(override cachepolicy.Admit) bool {
	switch override {
	case cachepolicy.AdmitAlways:
		return true
	case cachepolicy.AdmitNever:
		return false
	}
	return a == nil || a.state.Load() != admRejected
}

// rejected reports whether the shape's reads are relayed unless the
// policy says otherwise.
func (a *admission) rejected() bool { return a != nil && a.state.Load() == admRejected }

// probe reports whether a read of a rejected shape outside the sample is
// judged all the same.
func (a *admission) probe() bool { return a.probes.Add(1)%admProbe == 0 }

// forced notes that the policy forced admission for a read of the shape.
func (a *admission) forced() {
	if a != nil && !a.policyForces.Load() {
		a.policyForces.Store(true)
	}
}

// looked notes one execution: whether it hit for real (with its lookup
// time on a miss), whether it would have hit by its ghost, and whether
// it was looked up at all.
func (a *admission) looked(lookedUp, hit, ghost bool, took time.Duration) {
	if a == nil {
		return
	}
	switch {
	case hit:
		a.hits.Add(1)
	case lookedUp:
		a.misses.Add(1)
		a.missNanos.Add(int64(took))
	}
	if ghost {
		a.ghosts.Add(1)
		if !lookedUp {
			a.ghostsRelayed.Add(1)
		}
	}
	if a.execs.Add(1) == admWindow {
		a.verdict()
	}
}

// gens notes the table-level generations a read of whole tables saw,
// by their hash.
func (a *admission) gens(h uint64) {
	if a == nil {
		return
	}
	if old := a.lastGens.Swap(h); old != 0 && old != h {
		a.churn.Add(1)
	}
}

// relayed notes the backend time of one read relayed, to fill an entry
// or because the shape was rejected.
func (a *admission) relayed(took time.Duration) {
	if a == nil {
		return
	}
	a.relayNanos.Add(int64(took))
	a.relays.Add(1)
}

// verdict ends a window: the shape is admitted when what its hits (real
// or ghost) saved covers what its misses cost, and rejected otherwise.
func (a *admission) verdict() {
	a.mu.Lock()
	defer a.mu.Unlock()
	execs, hits, ghosts, misses := a.execs.Load(), a.hits.Load(), a.ghosts.Load(), a.misses.Load()
	relayedGhosts := a.ghostsRelayed.Load()
	if m := a.missNanos.Load(); misses > 0 {
		a.missCost = smoothed(a.missCost, time.Duration(m/misses))
	}
	if n := a.relays.Load(); n > 0 {
		a.relayCost = smoothed(a.relayCost, time.Duration(a.relayNanos.Load()/n))
	}
	a.execs.Store(0)
	a.hits.Store(0)
	a.ghosts.Store(0)
	a.ghostsRelayed.Store(0)
	a.misses.Store(0)
	a.missNanos.Store(0)
	a.relayNanos.Store(0)
	a.relays.Store(0)
	a.ghostless.Store(hits*4 >= execs*3)
	if a.state.Load() != admRejected {
		a.admittedWindows++
	} else {
		a.admittedWindows = 0
	}
	h := max(hits, ghosts)
	if a.admittedWindows >= 2 {
		// Warm: what was looked up is judged by its real hits.
		h = hits + relayedGhosts
	}
	saved := time.Duration(h) * a.relayCost
	spent := time.Duration(execs-h) * a.missCost
	why := fmt.Sprintf("%d of %d reads hit (%d would have); a hit saves %v, a miss costs %v",
		hits, execs, ghosts, a.relayCost.Round(time.Microsecond), a.missCost.Round(time.Microsecond))
	a.why.Store(&why)
	churned := a.churn.Swap(0)*2 >= execs
	if a.windows < admProbationWindows {
		a.churning = churned && (a.windows == 0 || a.churning)
		a.windows++
		a.probationHits += max(hits, ghosts)
	}
	// A shape on probation that nothing has hit yet, whose entries would
	// not have lasted, needs no losing streak either: no window of it
	// has paid, or could have.
	neverHit := a.state.Load() == admProbation && a.probationHits == 0 && a.churning
	judged := a.windows >= admProbationWindows || neverHit && a.windows >= admQuickWindows
	// Until both costs are known, through its probation, and until it
	// has lost for a while, it is not rejected.
	switch {
	case a.relayCost == 0 || a.missCost == 0:
	case saved >= spent:
		a.losing = 0
		switch {
		case a.state.Load() != admRejected:
			if a.admittedWindows >= 2 {
				// It paid by its real hits.
				a.returned, a.failedReturns = false, 0
			}
		case a.clock().Before(a.heldUntil):
			why += fmt.Sprintf("; held rejected until %s, after %d failed returns", a.heldUntil.Format("15:04:05"), a.failedReturns)
			a.why.Store(&why)
			return
		default:
			a.returned = true
		}
		a.state.Store(admAdmitted)
	default:
		now := a.clock()
		if a.losing == 0 {
			a.losingSince = now
		}
		a.losing++
		if judged && (a.losing >= admLosing || neverHit) && now.Sub(a.losingSince) >= admLosingFor {
			if a.state.Load() != admRejected && a.returned {
				a.heldUntil = now.Add(min(admHold<<min(a.failedReturns, 16), admHoldMax))
				a.failedReturns++
			}
			if neverHit {
				why += "; none hit through its probation, its tables changing between its reads"
				a.why.Store(&why)
			}
			a.state.Store(admRejected)
		}
	}
}

func (a *admission) clock() time.Time {
	if a.now != nil {
		return a.now()
	}
	return time.Now()
}

// smoothed averages a cost over windows, the last one weighing a quarter:
// the mean of one window, in which a burst of lookups queued behind each
// other, is not what the shape's lookups cost.
func smoothed(avg, window time.Duration) time.Duration {
	if avg == 0 {
		return window
	}
	return (3*avg + window) / 4
}

// wantsGhosts reports whether the shape's reads should be checked
// against the ghosts.
func (a *admission) wantsGhosts() bool { return a != nil && !a.ghostless.Load() }

// describe returns the state and the last verdict's numbers.
func (a *admission) describe() (string, string) {
	if a == nil {
		return "", ""
	}
	why := ""
	p := a.why.Load()
	if p != nil {
		why = *p
	}
	st := a.state.Load()
	if a.policyForces.Load() && st == admProbation && p == nil {
		// Every read so far was forced: none was judged, and the
		// shape's probation never began.
		return "forced", `the policy's admit = "always"`
	}
	return admNames[st], why
}
