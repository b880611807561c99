package store

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mycached/mycached/mysqlproxy/internal/testenv"
)

// slowLink is a TCP relay to memcached that holds what a client sends
// for a while before passing it on, as a stalled link or a retransmit
// would, while the relay is slow.
type slowLink struct {
	ln    net.Listener
	delay atomic.Int64 // nanoseconds; 0: none
}

func newSlowLink(t testing.TB, target string) *slowLink {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &slowLink{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			go func() {
				defer out.Close()
				buf := make([]byte, 64<<10)
				for {
					n, err := in.Read(buf)
					if n > 0 {
						time.Sleep(time.Duration(l.delay.Load()))
						if _, werr := out.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}()
			go func() { _, _ = io.Copy(in, out); in.Close() }()
		}
	}()
	return l
}

func (l *slowLink) addr() string { return l.ln.Addr().String() }

// slowPair starts a memcached, a writer that reaches it over a slowLink
// (50 ms timeout, bumpWait), and a reader that reaches it directly.
func slowPair(t *testing.T, bumpWait time.Duration) (writer, reader *Store, link *slowLink) {
	t.Helper()
	mc := startMemcached(t, testenv.MemcachedOptions{})
	link = newSlowLink(t, mc.Addr)
	writer = newStore(t, Options{Servers: []string{link.addr()}, Timeout: 50 * time.Millisecond, BumpWait: bumpWait, NoServerMarks: true})
	reader = newStore(t, Options{Servers: []string{mc.Addr}})
	return writer, reader, link
}

// TestBumpWaitsForASlowLink: a write's bump that takes longer than the
// memcached timeout, on a link that still works, is tried again before
// Bump returns (before the write's OK): another sidecar, reading the
// generation in memcached right after, sees it bumped. Without the wait
// it would not, until the link delivered the first try.
func TestBumpWaitsForASlowLink(t *testing.T) {
	for _, tc := range []struct {
		name   string
		wait   time.Duration
		landed bool
	}{
		{"wait", 0, true},
		{"no wait", -1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			writer, reader, link := slowPair(t, tc.wait)
			ctx := context.Background()
			const dep = "db.t"
			before, err := reader.SharedGen(ctx, dep)
			if err != nil {
				t.Fatal(err)
			}
			link.delay.Store(int64(300 * time.Millisecond))
			writer.Bump(ctx, []string{dep})
			after, err := reader.SharedGen(ctx, dep)
			if err != nil {
				t.Fatal(err)
			}
			if got := after > before; got != tc.landed {
				t.Errorf("generation right after Bump: %d, before %d; bumped = %v, want %v", after, before, got, tc.landed)
			}
			st := writer.Stats()
			if tc.landed && (st.BumpsLate != 1 || st.BumpsUnlanded != 0 || st.PendingBumps != 0) {
				t.Errorf("stats: %d late, %d unlanded, %d pending; want 1, 0, 0", st.BumpsLate, st.BumpsUnlanded, st.PendingBumps)
			}
			if !tc.landed && st.BumpsUnlanded != 1 {
				t.Errorf("stats: %d unlanded, want 1", st.BumpsUnlanded)
			}
		})
	}
}

// TestBumpDoesNotWaitWhilePending: while bumps are pending (memcached
// was unreachable), a write's bump that fails is not tried again before
// its OK, so writes do not each wait the bound while memcached is away.
func TestBumpDoesNotWaitWhilePending(t *testing.T) {
	writer, reader, link := slowPair(t, 5*time.Second)
	// The link is slow before the pending bump is added: a retry of it
	// that came first on a fast link would land it, and leave nothing
	// pending.
	link.delay.Store(int64(time.Second))
	writer.pending.add("db.other")
	ctx := context.Background()
	before := sharedGen(t, reader, "db.t")
	writer.Bump(ctx, []string{"db.t"})
	after := sharedGen(t, reader, "db.t")
	if after != before {
		t.Errorf("generation %d right after Bump, %d before: the bump waited while others were pending", after, before)
	}
	if st := writer.Stats(); st.BumpsUnlanded != 1 || st.BumpsLate != 0 {
		t.Errorf("stats: %d unlanded, %d late; want 1, 0", st.BumpsUnlanded, st.BumpsLate)
	}
}

// TestBumpWaitsWhilePendingIfAnswering: bumps pending while memcached
// still answers (a large batch that timed out on a busy server) do not
// keep a write's failed bump from being tried again before its OK;
// another sidecar sees it bumped right after, as without them.
func TestBumpWaitsWhilePendingIfAnswering(t *testing.T) {
	writer, reader, link := slowPair(t, 5*time.Second)
	ctx := context.Background()
	// memcached answers the writer, then its link slows and a bump is
	// left pending.
	before := sharedGen(t, writer, "db.t")
	link.delay.Store(int64(300 * time.Millisecond))
	writer.pending.add("db.other")
	writer.Bump(ctx, []string{"db.t"})
	after := sharedGen(t, reader, "db.t")
	if after <= before {
		t.Errorf("generation %d right after Bump, %d before: the write's bump did not wait though memcached answered", after, before)
	}
	if st := writer.Stats(); st.BumpsUnlanded != 0 || st.BumpsLate != 1 {
		t.Errorf("stats: %d unlanded, %d late; want 0, 1", st.BumpsUnlanded, st.BumpsLate)
	}
}

// TestBumpWaitsForTheGlobalBump: once so many bumps are pending that
// they gave way to the global bump, a write's failed bump is still tried
// again before its OK while memcached answers: the global bump, which
// stands for it, lands within the wait.
func TestBumpWaitsForTheGlobalBump(t *testing.T) {
	writer, reader, link := slowPair(t, 5*time.Second)
	ctx := context.Background()
	before := sharedGen(t, writer, globalDep)
	link.delay.Store(int64(300 * time.Millisecond))
	for i := range pendingMax + 1 {
		writer.pending.add(fmt.Sprintf("db.t#%d", i))
	}
	if st := writer.Stats(); st.PendingBumps != 1 {
		t.Fatalf("%d pending after %d failures, want the global bump alone", st.PendingBumps, pendingMax+1)
	}
	writer.Bump(ctx, []string{"db.u"})
	after := sharedGen(t, reader, globalDep)
	if after <= before {
		t.Errorf("global generation %d right after Bump, %d before: the write's OK did not wait for the global bump", after, before)
	}
	if st := writer.Stats(); st.BumpsUnlanded != 0 || st.BumpsLate != 1 || st.PendingBumps != 0 {
		t.Errorf("stats: %d unlanded, %d late, %d pending; want 0, 1, 0", st.BumpsUnlanded, st.BumpsLate, st.PendingBumps)
	}
}

// sharedGen returns dep's generation in memcached as s reads it.
func sharedGen(t *testing.T, s *Store, dep string) uint64 {
	t.Helper()
	g, err := s.SharedGen(context.Background(), dep)
	if err != nil {
		t.Fatal(err)
	}
	return g
}
