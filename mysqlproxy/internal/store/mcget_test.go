package store

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mycached/mycached/mysqlproxy/internal/testenv"
)

func TestReadGetReply(t *testing.T) {
	binary := "a\r\nEND\r\nVALUE x 0 1\r\n\x00\xff"
	tests := []struct {
		name    string
		keys    []string
		reply   string
		want    []*string // nil: miss
		wantErr error
	}{
		{
			name:  "values in order",
			keys:  []string{"a", "b"},
			reply: "VALUE a 0 2\r\nxy\r\nVALUE b 5 3\r\n123\r\nEND\r\n",
			want:  []*string{ptr("xy"), ptr("123")},
		},
		{
			name:  "binary data with line endings",
			keys:  []string{"k", "g"},
			reply: fmt.Sprintf("VALUE k 0 %d\r\n%s\r\nVALUE g 0 1\r\n7\r\nEND\r\n", len(binary), binary),
			want:  []*string{ptr(binary), ptr("7")},
		},
		{
			name:  "empty value is not a miss",
			keys:  []string{"a"},
			reply: "VALUE a 0 0\r\n\r\nEND\r\n",
			want:  []*string{ptr("")},
		},
		{
			name:  "end only",
			keys:  []string{"a", "b"},
			reply: "END\r\n",
			want:  []*string{nil, nil},
		},
		{
			name:  "miss between hits",
			keys:  []string{"a", "b", "c"},
			reply: "VALUE a 0 1\r\n1\r\nVALUE c 0 1\r\n3\r\nEND\r\n",
			want:  []*string{ptr("1"), nil, ptr("3")},
		},
		{
			name:  "cas field",
			keys:  []string{"a"},
			reply: "VALUE a 0 1 12345\r\n1\r\nEND\r\n",
			want:  []*string{ptr("1")},
		},
		{
			name:  "out of order",
			keys:  []string{"a", "b"},
			reply: "VALUE b 0 1\r\n2\r\nVALUE a 0 1\r\n1\r\nEND\r\n",
			want:  []*string{ptr("1"), ptr("2")},
		},
		{name: "server error", keys: []string{"a"}, reply: "SERVER_ERROR out of memory\r\n", wantErr: errProtocol},
		{name: "client error", keys: []string{"a"}, reply: "CLIENT_ERROR bad command line format\r\n", wantErr: errProtocol},
		{name: "error", keys: []string{"a"}, reply: "ERROR\r\n", wantErr: errProtocol},
		{name: "error after a value", keys: []string{"a", "b"}, reply: "VALUE a 0 1\r\n1\r\nSERVER_ERROR x\r\n", wantErr: errProtocol},
		{name: "unrequested key", keys: []string{"a"}, reply: "VALUE z 0 1\r\n1\r\nEND\r\n", wantErr: errProtocol},
		{name: "length too short", keys: []string{"a"}, reply: "VALUE a 0 1\r\n12\r\nEND\r\n", wantErr: errProtocol},
		{name: "bad length", keys: []string{"a"}, reply: "VALUE a 0 -1\r\n\r\nEND\r\n", wantErr: errProtocol},
		{name: "huge length", keys: []string{"a"}, reply: "VALUE a 0 99999999999\r\n", wantErr: errProtocol},
		{name: "no flags", keys: []string{"a"}, reply: "VALUE a 1\r\n1\r\nEND\r\n", wantErr: errProtocol},
		{name: "truncated data", keys: []string{"a"}, reply: "VALUE a 0 10\r\n12345", wantErr: io.ErrUnexpectedEOF},
		{name: "truncated before end", keys: []string{"a"}, reply: "VALUE a 0 1\r\n1\r\n", wantErr: io.ErrUnexpectedEOF},
		{name: "truncated line", keys: []string{"a"}, reply: "VALUE a 0", wantErr: io.ErrUnexpectedEOF},
		{name: "nothing", keys: []string{"a"}, reply: "", wantErr: io.EOF},
		{name: "overlong line", keys: []string{"a"}, reply: strings.Repeat("x", 5000) + "\r\n", wantErr: errProtocol},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := bufio.NewReader(strings.NewReader(tc.reply))
			vals := make([][]byte, len(tc.keys))
			err := readGetReply(r, tc.keys, vals, false)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("got err %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr != nil {
				return
			}
			for i, w := range tc.want {
				switch {
				case w == nil && vals[i] != nil:
					t.Errorf("key %s: got %q, want a miss", tc.keys[i], vals[i])
				case w != nil && vals[i] == nil:
					t.Errorf("key %s: got a miss, want %q", tc.keys[i], *w)
				case w != nil && string(vals[i]) != *w:
					t.Errorf("key %s: got %q, want %q", tc.keys[i], vals[i], *w)
				}
			}
		})
	}
}

func ptr(s string) *string { return &s }

// TestReadGetReplyValuesOutliveReader checks that values do not alias the
// reader's buffer, which the next reply on the connection overwrites.
func TestReadGetReplyValuesOutliveReader(t *testing.T) {
	r := bufio.NewReader(strings.NewReader("VALUE a 0 3\r\nabc\r\nEND\r\nVALUE a 0 3\r\nxyz\r\nEND\r\n"))
	first := make([][]byte, 1)
	if err := readGetReply(r, []string{"a"}, first, false); err != nil {
		t.Fatal(err)
	}
	second := make([][]byte, 1)
	if err := readGetReply(r, []string{"a"}, second, false); err != nil {
		t.Fatal(err)
	}
	if string(first[0]) != "abc" || string(second[0]) != "xyz" {
		t.Errorf("got %q and %q, want abc and xyz", first[0], second[0])
	}
}

func TestParseGen(t *testing.T) {
	tests := []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"0", 0, true},
		{"42", 42, true},
		{"42   ", 42, true},
		{"18446744073709551615", 1<<64 - 1, true},
		{"18446744073709551616", 0, false},
		{"", 0, false},
		{"   ", 0, false},
		{"-1", 0, false},
		{"+1", 0, false},
		{"1x", 0, false},
		{" 1", 0, false},
	}
	for _, tc := range tests {
		got, ok := parseGen([]byte(tc.in))
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseGen(%q): got %d, %v, want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// fakeMemcached answers each get with the next scripted reply. A reply
// ending in "<close>" is sent without that marker and the connection is
// then closed by the server.
type fakeMemcached struct {
	ln      net.Listener
	mu      sync.Mutex // protects replies
	replies []string
	accepts atomic.Int64
	// closedByClient counts connections the client closed (the server
	// read EOF while waiting for a request).
	closedByClient atomic.Int64
	wg             sync.WaitGroup
}

func startFakeMemcached(t *testing.T, replies ...string) *fakeMemcached {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeMemcached{ln: ln, replies: replies}
	f.wg.Add(1)
	go f.serve()
	t.Cleanup(func() {
		ln.Close()
		f.wg.Wait()
	})
	return f
}

func (f *fakeMemcached) serve() {
	defer f.wg.Done()
	for {
		nc, err := f.ln.Accept()
		if err != nil {
			return
		}
		f.accepts.Add(1)
		f.wg.Add(1)
		go f.handle(nc)
	}
}

func (f *fakeMemcached) handle(nc net.Conn) {
	defer f.wg.Done()
	defer nc.Close()
	r := bufio.NewReader(nc)
	for {
		if _, err := r.ReadString('\n'); err != nil {
			f.closedByClient.Add(1)
			return
		}
		f.mu.Lock()
		reply := "END\r\n"
		if len(f.replies) > 0 {
			reply, f.replies = f.replies[0], f.replies[1:]
		}
		f.mu.Unlock()
		reply, closing := strings.CutSuffix(reply, "<close>")
		nc.Write([]byte(reply))
		if closing {
			return
		}
	}
}

func (f *fakeMemcached) addr(t *testing.T) net.Addr {
	t.Helper()
	a, err := net.ResolveTCPAddr("tcp", f.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// rawGet is RawGet as a map of the keys that exist.
func rawGet(ctx context.Context, s *Store, keys ...string) (map[string][]byte, error) {
	vals, err := s.RawGet(ctx, keys)
	if err != nil {
		return nil, err
	}
	m := map[string][]byte{}
	for i, v := range vals {
		if v != nil {
			m[keys[i]] = v
		}
	}
	return m, nil
}

func poolGet(p *connPool, keys ...string) ([][]byte, error) {
	vals := make([][]byte, len(keys))
	err := p.getMulti(context.Background(), keys, vals, time.Now().Add(10*time.Second))
	return vals, err
}

func TestConnPoolReusesCleanConns(t *testing.T) {
	f := startFakeMemcached(t, "VALUE a 0 1\r\n1\r\nEND\r\n", "END\r\n", "VALUE a 0 1\r\n2\r\nEND\r\n")
	p := newConnPool(f.addr(t), 4, 1, &counters{})
	defer p.close()
	for i, want := range []string{"1", "", "2"} {
		vals, err := poolGet(p, "a")
		if err != nil {
			t.Fatalf("get %d: %v", i, err)
		}
		if got := string(vals[0]); got != want {
			t.Errorf("get %d: got %q, want %q", i, got, want)
		}
	}
	if n := f.accepts.Load(); n != 1 {
		t.Errorf("got %d connections, want 1 reused", n)
	}
	if n := p.idleCount(); n != 1 {
		t.Errorf("got %d idle connections, want 1", n)
	}
}

// TestConnPoolDropsBrokenConns checks that a connection whose reply was an
// error or incomplete is closed, never pooled, and the next get dials.
func TestConnPoolDropsBrokenConns(t *testing.T) {
	for _, reply := range []string{
		"SERVER_ERROR out of memory\r\n",
		"ERROR\r\n",
		"VALUE a 0 5\r\nab<close>",
		"VALUE a 0 1\r\n1\r\n<close>",
		"VALUE a 0 1\r\n1\r\nVALUE zz 0 1\r\n2\r\nEND\r\n",
	} {
		t.Run(strings.Fields(reply)[0], func(t *testing.T) {
			f := startFakeMemcached(t, reply, "VALUE a 0 1\r\n1\r\nEND\r\n")
			p := newConnPool(f.addr(t), 4, 1, &counters{})
			defer p.close()
			if _, err := poolGet(p, "a"); err == nil {
				t.Fatalf("got no error for reply %q", reply)
			}
			if n := p.idleCount(); n != 0 {
				t.Errorf("got %d idle connections after a bad reply, want 0", n)
			}
			vals, err := poolGet(p, "a")
			if err != nil || string(vals[0]) != "1" {
				t.Fatalf("get after a bad reply: got %q, %v, want \"1\"", vals[0], err)
			}
			if n := f.accepts.Load(); n != 2 {
				t.Errorf("got %d connections, want 2 (the broken one not reused)", n)
			}
		})
	}
}

// TestConnPoolClosesConnOnProtocolError checks that the client, not only
// the pool, gives up the connection: the server sees it closed.
func TestConnPoolClosesConnOnProtocolError(t *testing.T) {
	f := startFakeMemcached(t, "SERVER_ERROR busy\r\n")
	p := newConnPool(f.addr(t), 4, 1, &counters{})
	defer p.close()
	if _, err := poolGet(p, "a"); !errors.Is(err, errProtocol) {
		t.Fatalf("got %v, want errProtocol", err)
	}
	waitFor(t, "the server to see the connection closed", func() bool { return f.closedByClient.Load() == 1 })
}

// TestConnPoolRetriesConnClosedByServer: a pooled connection the server
// has since closed (as a restarted memcached has) costs no error.
func TestConnPoolRetriesConnClosedByServer(t *testing.T) {
	f := startFakeMemcached(t, "VALUE a 0 1\r\n1\r\nEND\r\n<close>", "VALUE a 0 1\r\n2\r\nEND\r\n")
	p := newConnPool(f.addr(t), 4, 1, &counters{})
	defer p.close()
	if _, err := poolGet(p, "a"); err != nil {
		t.Fatal(err)
	}
	vals, err := poolGet(p, "a")
	if err != nil || string(vals[0]) != "2" {
		t.Fatalf("got %q, %v, want \"2\"", vals[0], err)
	}
	if n := f.accepts.Load(); n != 2 {
		t.Errorf("got %d connections, want 2", n)
	}
}

// TestGetMultiFollowsRestart kills and restarts a real memcached under a
// store whose pool holds connections to it.
func TestGetMultiFollowsRestart(t *testing.T) {
	mc := startMemcached(t, testenv.MemcachedOptions{})
	s := newStore(t, Options{Servers: []string{mc.Addr}})
	ctx := context.Background()
	if err := s.RawSet(ctx, "kv:a", []byte("1"), 0); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if got, err := rawGet(ctx, s, "kv:a"); err != nil || string(got["kv:a"]) != "1" {
			t.Fatalf("got %q, %v, want \"1\"", got["kv:a"], err)
		}
	}
	if n := s.pools[0].idleCount(); n != 1 {
		t.Fatalf("got %d idle connections, want 1", n)
	}
	if err := mc.Kill(); err != nil {
		t.Fatal(err)
	}
	errs := s.Stats().MemcachedErrors
	if _, err := rawGet(ctx, s, "kv:a"); err == nil {
		t.Fatal("got no error with memcached killed")
	}
	if got := s.Stats().MemcachedErrors; got != errs+1 {
		t.Errorf("got %d memcached errors, want %d", got, errs+1)
	}
	if err := mc.Restart(); err != nil {
		t.Fatal(err)
	}
	got, err := rawGet(ctx, s, "kv:a")
	if err != nil || len(got) != 0 {
		t.Fatalf("first get after restart: got %q, %v, want an empty result", got, err)
	}
	// The restart also broke the connections of the path that writes.
	for range 3 {
		if err = s.RawSet(ctx, "kv:a", []byte("2"), 0); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	if got, err := rawGet(ctx, s, "kv:a"); err != nil || string(got["kv:a"]) != "2" {
		t.Fatalf("got %q, %v, want \"2\"", got["kv:a"], err)
	}
}

// TestGetMultiManyKeys sends one get longer than memcached's 2 KiB line
// limit for other commands (as a large chunked entry does).
func TestGetMultiManyKeys(t *testing.T) {
	mc := startMemcached(t, testenv.MemcachedOptions{})
	s := newStore(t, Options{Servers: []string{mc.Addr}})
	ctx := context.Background()
	keys := make([]string, 3000)
	for i := range keys {
		keys[i] = "kv:many-keys-" + strconv.Itoa(i)
		if i%100 == 0 {
			if err := s.RawSet(ctx, keys[i], []byte(strconv.Itoa(i)), 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	got, err := rawGet(ctx, s, keys...)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 30 {
		t.Errorf("got %d values, want 30", len(got))
	}
	for k, v := range got {
		if want := strings.TrimPrefix(k, "kv:many-keys-"); !bytes.Equal(v, []byte(want)) {
			t.Errorf("key %s: got %q, want %q", k, v, want)
		}
	}
}

// TestGetMultiSpreadOverServers reads keys owned by several servers, one
// of which is down: the get fails as a whole rather than reporting misses.
func TestGetMultiSpreadOverServers(t *testing.T) {
	var servers []string
	var mcs []*testenv.Memcached
	for range 3 {
		mc := startMemcached(t, testenv.MemcachedOptions{})
		mcs = append(mcs, mc)
		servers = append(servers, mc.Addr)
	}
	s := newStore(t, Options{Servers: servers})
	ctx := context.Background()
	var keys []string
	for i := range 50 {
		k := "kv:spread-" + strconv.Itoa(i)
		keys = append(keys, k)
		if err := s.RawSet(ctx, k, []byte(k), 0); err != nil {
			t.Fatal(err)
		}
	}
	got, err := rawGet(ctx, s, keys...)
	if err != nil || len(got) != len(keys) {
		t.Fatalf("got %d values, %v, want %d", len(got), err, len(keys))
	}
	for k, v := range got {
		if string(v) != k {
			t.Errorf("key %s: got %q", k, v)
		}
	}
	before := s.Servers()
	for i, st := range before {
		if st.Addr != s.pools[i].addr.String() || st.Gets == 0 || st.Errors != 0 || st.Time <= 0 {
			t.Errorf("server %d before the kill: got %+v, want gets and time counted, no errors", i, st)
		}
	}
	if err := mcs[1].Kill(); err != nil {
		t.Fatal(err)
	}
	if _, err := rawGet(ctx, s, keys...); err == nil {
		t.Error("got no error with one server down, want an error")
	}
	// The failure is charged to the server that is down, and only to it.
	downIdx := -1
	for i, p := range s.pools {
		if p.addr.String() == mcs[1].Addr {
			downIdx = i
		}
	}
	for i, st := range s.Servers() {
		want := uint64(0)
		if i == downIdx {
			want = 1
		}
		if st.Errors != want || st.Gets != before[i].Gets+1 {
			t.Errorf("server %d (%s) after the kill: got %d errors in %d gets, want %d in %d", i, st.Addr, st.Errors, st.Gets, want, before[i].Gets+1)
		}
	}
}

// deadlineReader fails as a connection past its deadline does.
type deadlineReader struct{}

func (deadlineReader) Read([]byte) (int, error) { return 0, os.ErrDeadlineExceeded }

// TestReadGetReplyDeadline: a deadline that passes inside a reply is
// reported as the deadline, not as a truncated or malformed reply.
func TestReadGetReplyDeadline(t *testing.T) {
	for _, prefix := range []string{"VALUE a 0 10\r\n12345", "VALUE a 0 1\r\n1", "VALUE a 0 1\r\n1\r", "VALUE a 0 1\r\n1\r\n", "VALUE a"} {
		r := bufio.NewReader(io.MultiReader(strings.NewReader(prefix), deadlineReader{}))
		err := readGetReply(r, []string{"a"}, make([][]byte, 1), false)
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("%q then the deadline: got %v, want the deadline", prefix, err)
		}
	}
}
