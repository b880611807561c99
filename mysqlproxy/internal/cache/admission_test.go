package cache

import (
	"strings"
	"testing"
	"time"

	"github.com/mycached/mycached/cachepolicy"
)

// run feeds a window of executions to a: hits real hits, ghosts ghost
// hits, each miss costing miss and each relayed read relay.
func run(a *admission, hits, ghosts int, miss, relay time.Duration) {
	window(a, hits, ghosts, miss, relay, nil)
}

// window is run with each called before every execution, when not nil.
func window(a *admission, hits, ghosts int, miss, relay time.Duration, each func(*admission)) {
	for i := 0; i < admWindow; i++ {
		if each != nil {
			each(a)
		}
		admitted := a.admit("")
		hit := admitted && i < hits
		if !hit {
			a.relayed(relay)
		}
		a.looked(admitted, hit, i < ghosts, miss)
	}
}

// stepping returns a clock that moves on by step each time it is read:
// a verdict reads it once per losing window.
func stepping(step time.Duration) func() time.Time {
	t := time.Unix(1e9, 0)
	return func() time.Time {
		t = t.Add(step)
		return t
	}
}

func TestAdmission(t *testing.T) {
	const miss, relay = 100 * time.Microsecond, 150 * time.Microsecond
	a := admission{now: stepping(admLosingFor / 2)}
	if st, _ := a.describe(); st != "probation" {
		t.Fatalf("a new shape is %s, want probation", st)
	}
	// 10 hits of 128 save 1.5 ms and cost 11.8 ms of lookups: not
	// enough, but it is on probation for a while.
	for range admProbationWindows - 1 {
		run(&a, 10, 10, miss, relay)
		if st, why := a.describe(); st != "probation" {
			t.Fatalf("a shape on probation after a window of 10/128 hits: %s (%s)", st, why)
		}
	}
	run(&a, 10, 10, miss, relay)
	if st, why := a.describe(); st != "rejected" {
		t.Fatalf("after a window of 10/128 hits: %s (%s), want rejected", st, why)
	}
	if a.admit("") {
		t.Error("a rejected shape is admitted")
	}
	if !a.admit(cachepolicy.AdmitAlways) {
		t.Error("admit = always does not admit a rejected shape")
	}
	// Rejected, it is judged by its ghosts: reads that would have hit.
	run(&a, 0, 20, miss, relay)
	if st, _ := a.describe(); st != "rejected" {
		t.Fatalf("after 20/128 ghost hits: %s, want rejected", st)
	}
	run(&a, 0, 100, miss, relay)
	if st, why := a.describe(); st != "admitted" {
		t.Fatalf("after 100/128 ghost hits: %s (%s), want admitted", st, why)
	}
	// A cold cache: few real hits, many ghost ones, stays admitted.
	run(&a, 5, 90, miss, relay)
	if st, _ := a.describe(); st != "admitted" {
		t.Fatalf("cold cache with 90/128 ghost hits: %s, want admitted", st)
	}
	// Cheap lookups (L1 only) pay for few hits.
	b := admission{now: stepping(admLosingFor / 2)}
	for range admProbationWindows {
		run(&b, 3, 3, 2*time.Microsecond, relay)
	}
	if st, why := b.describe(); st != "admitted" {
		t.Fatalf("L1 lookups with 3/128 hits: %s (%s), want admitted", st, why)
	}
	// Warm, it is judged by its real hits: ghosts that say most reads
	// would hit cannot keep a shape whose entries do not serve them
	// (reads inside a snapshot store nothing, for one).
	w := admission{now: stepping(admLosingFor / 2)}
	for range admProbationWindows {
		run(&w, 10, 100, miss, relay)
	}
	if st, why := w.describe(); st != "rejected" {
		t.Fatalf("warm, 10/128 real hits and 100/128 ghost ones: %s (%s), want rejected", st, why)
	}
	// Rejected, its ghosts still bring it back.
	run(&w, 0, 100, miss, relay)
	if st, why := w.describe(); st != "admitted" {
		t.Fatalf("rejected, 100/128 ghost hits: %s (%s), want admitted", st, why)
	}
	var n *admission
	if !n.admit("") || n.admit(cachepolicy.AdmitNever) {
		t.Error("an untracked shape: admit must follow the override alone")
	}
}

// churning is run for a read of whole tables whose generations change
// before each read.
func churning(a *admission, hits, ghosts int, miss, relay time.Duration) {
	window(a, hits, ghosts, miss, relay, func(a *admission) { a.gens(a.lastGens.Load() + 1) })
}

// TestAdmissionNeverHit: a shape none of whose reads hit, for real or by
// its ghosts, and whose tables changed between its reads, ends its
// probation after admQuickWindows windows (once admLosingFor has passed),
// while one that hit even once, or whose tables stayed as they were (a
// cold cache), serves the whole probation.
func TestAdmissionNeverHit(t *testing.T) {
	const miss, relay = 500 * time.Microsecond, time.Millisecond
	slow := admission{now: stepping(time.Second)} // a window a second
	for i := range admQuickWindows {
		if st, why := slow.describe(); st != "probation" {
			t.Fatalf("after %d windows that nothing hit: %s (%s), want probation", i, st, why)
		}
		churning(&slow, 0, 0, miss, relay)
	}
	if st, why := slow.describe(); st != "rejected" || !strings.Contains(why, "none hit") {
		t.Fatalf("after %d windows that nothing hit: %s (%s), want rejected", admQuickWindows, st, why)
	}
	// Windows that pass quickly: rejected only once admLosingFor has.
	fast := admission{now: stepping(admLosingFor / 8)}
	n := 0
	for fast.admit("") {
		churning(&fast, 0, 0, miss, relay)
		n++
	}
	if n <= admQuickWindows || n >= admProbationWindows+admLosing {
		t.Errorf("windows of %v: rejected after %d windows, want between %d and %d", admLosingFor/8, n, admQuickWindows, admProbationWindows+admLosing)
	}
	// Tables that stay as they are, or a point lookup (no generations
	// noted): a cold cache, whose keys may repeat later.
	for name, feed := range map[string]func(*admission){"stable tables": func(a *admission) { a.gens(7) }, "point lookups": func(*admission) {}} {
		cold := admission{now: stepping(time.Second)}
		for range admProbationWindows - 1 {
			window(&cold, 0, 0, miss, relay, feed)
			if st, why := cold.describe(); st != "probation" {
				t.Fatalf("%s, in its probation: %s (%s)", name, st, why)
			}
		}
	}
	// One ghost hit in its first window: it serves its probation.
	once := admission{now: stepping(time.Second)}
	churning(&once, 0, 1, miss, relay)
	for range admProbationWindows - 2 {
		churning(&once, 0, 0, miss, relay)
		if st, why := once.describe(); st != "probation" {
			t.Fatalf("a shape once hit by its ghost, in its probation: %s (%s)", st, why)
		}
	}
	churning(&once, 0, 0, miss, relay)
	if st, why := once.describe(); st != "rejected" {
		t.Fatalf("after its probation: %s (%s), want rejected", st, why)
	}
}

// A shape whose reads hit is not rejected for a moment of misses: the
// window after a write to its table, or lookups that queued while the
// machine was busy. Only a losing streak that lasts rejects it.
func TestAdmissionLosingStreak(t *testing.T) {
	const miss, relay = 100 * time.Microsecond, 150 * time.Microsecond
	a := admission{now: stepping(time.Millisecond)}
	// Warming: half the reads hit, and the misses tell the costs.
	run(&a, admWindow/2, admWindow/2, miss, relay)
	for range admProbationWindows + 2 {
		run(&a, admWindow, 0, miss, relay)
	}
	if st, why := a.describe(); st != "admitted" {
		t.Fatalf("every read hit: %s (%s)", st, why)
	}
	// Every entry invalidated, and the lookups queued: 128 misses that
	// took 50 times as long as usual.
	run(&a, 0, 0, 50*miss, relay)
	if st, why := a.describe(); st != "admitted" {
		t.Fatalf("after one window of slow misses: %s (%s), want admitted", st, why)
	}
	if a.missCost >= 50*miss/2 {
		t.Errorf("one slow window made the miss cost %v: it must weigh a quarter", a.missCost)
	}
	run(&a, admWindow, 0, miss, relay)
	// Losing windows in a row, but within admLosingFor: still admitted.
	clock := time.Unix(2e9, 0)
	a.now = func() time.Time { clock = clock.Add(time.Millisecond); return clock }
	for range 2 * admLosing {
		run(&a, 0, 0, miss, relay)
	}
	if st, why := a.describe(); st != "admitted" {
		t.Fatalf("after %d losing windows within %v: %s (%s), want admitted", 2*admLosing, admLosingFor, st, why)
	}
	// The same streak, lasting: rejected.
	a.now = func() time.Time { clock = clock.Add(admLosingFor); return clock }
	run(&a, 0, 0, miss, relay)
	if st, why := a.describe(); st != "rejected" {
		t.Fatalf("a losing streak over %v: %s (%s), want rejected", admLosingFor, st, why)
	}
	// A winning window ends a streak: the next losing one starts afresh.
	var b admission
	b.now = func() time.Time { clock = clock.Add(admLosingFor); return clock }
	run(&b, admWindow/2, admWindow/2, miss, relay)
	for range admProbationWindows {
		run(&b, admWindow, 0, miss, relay)
	}
	for range 3 {
		run(&b, 0, 0, miss, relay)
		run(&b, 0, 0, miss, relay)
		run(&b, admWindow, 0, miss, relay)
	}
	if st, why := b.describe(); st != "admitted" {
		t.Fatalf("losing windows in pairs between winning ones: %s (%s), want admitted", st, why)
	}
}

// TestAdmissionHeldAfterFailedReturns: uniform reads over many rows.
// Rejected, the ghosts say most reads would hit; admitted again, its
// entries are not there yet and the real hits do not pay, so it is
// rejected again. Each failed return holds it rejected longer, up to
// admHoldMax; one that pays for real once back starts over.
func TestAdmissionHeldAfterFailedReturns(t *testing.T) {
	const miss, relay = 400 * time.Microsecond, 150 * time.Microsecond
	clock := time.Unix(1e9, 0)
	a := admission{now: func() time.Time { return clock }}
	step := func() { clock = clock.Add(admLosingFor / 2) }
	// Judged by its real hits (10 of 128), it is rejected.
	for range 2 * admProbationWindows {
		if st, _ := a.describe(); st == "rejected" {
			break
		}
		run(&a, 10, 100, miss, relay)
		step()
	}
	// returnAndFail lets the ghosts bring it back and the real hits
	// reject it; it reports whether it came back at all.
	returnAndFail := func() bool {
		run(&a, 0, 100, miss, relay)
		if st, _ := a.describe(); st != "admitted" {
			return false
		}
		for range 2 * (2 + admLosing) {
			step()
			run(&a, 10, 100, miss, relay)
			if st, _ := a.describe(); st == "rejected" {
				break
			}
		}
		if st, why := a.describe(); st != "rejected" {
			t.Fatalf("a return whose real hits do not pay: %s (%s), want rejected", st, why)
		}
		return true
	}
	if st, why := a.describe(); st != "rejected" {
		t.Fatalf("warm with 10/128 real hits: %s (%s)", st, why)
	}
	if !returnAndFail() {
		t.Fatal("the ghosts did not bring a rejected shape back the first time")
	}
	for i := range 10 {
		hold := min(admHold<<i, admHoldMax)
		if returnAndFail() {
			t.Fatalf("after failed return %d, it came back at once; want it held for %v", i+1, hold)
		}
		if _, why := a.describe(); !strings.Contains(why, "held rejected") {
			t.Errorf("the verdict does not say it is held: %s", why)
		}
		clock = clock.Add(hold - time.Millisecond)
		if returnAndFail() {
			t.Fatalf("after failed return %d, it came back before %v", i+1, hold)
		}
		clock = clock.Add(time.Millisecond)
		if !returnAndFail() {
			t.Fatalf("after failed return %d, it did not come back after %v", i+1, hold)
		}
	}
	// Back, and paying by its real hits: the holds start over.
	run(&a, 0, 100, miss, relay)
	clock = clock.Add(admHoldMax)
	run(&a, 0, 100, miss, relay)
	for range 4 {
		step()
		run(&a, 100, 100, miss, relay)
	}
	if st, why := a.describe(); st != "admitted" || a.failedReturns != 0 {
		t.Fatalf("paying for real: %s (%s), %d failed returns", st, why, a.failedReturns)
	}
}

func TestGhosts(t *testing.T) {
	var g ghosts
	if g.seen(1, 10, true) {
		t.Error("a new key was seen")
	}
	if !g.seen(1, 10, true) {
		t.Error("a repeated key with the same generations was not seen")
	}
	if g.seen(1, 11, true) {
		t.Error("a key whose generations changed was seen")
	}
	// A read that would not have stored its entry is checked, and leaves
	// nothing behind.
	for range 2 {
		if g.seen(2, 10, false) {
			t.Error("a key read only by reads that store nothing was seen")
		}
	}
	if !g.seen(1, 11, false) {
		t.Error("a read that stores nothing does not see a remembered key")
	}
	for k := uint64(100); k < 100+ghostCap; k++ {
		g.seen(k, 0, true)
	}
	n := 0
	for i := range g.shards {
		n += len(g.shards[i].m)
	}
	if n > ghostCap {
		t.Errorf("ghosts hold %d keys, over the cap %d", n, ghostCap)
	}
}

// TestAdmissionForcedDescribed: a shape whose every read the policy
// admitted is never judged, and says so, rather than staying on a
// probation that never ends.
func TestAdmissionForcedDescribed(t *testing.T) {
	a := admission{now: stepping(time.Millisecond)}
	for range 3 * admWindow {
		a.forced()
	}
	if st, why := a.describe(); st != "forced" || why == "" {
		t.Errorf("a shape whose reads were all forced: %q (%q), want forced", st, why)
	}
	var b admission
	b.now = stepping(time.Millisecond)
	run(&b, 128, 128, time.Microsecond, time.Millisecond)
	b.forced()
	if st, _ := b.describe(); st == "forced" {
		t.Errorf("a shape judged before the policy forced it: %q, want its verdict", st)
	}
}
