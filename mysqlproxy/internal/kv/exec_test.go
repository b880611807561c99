package kv

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
)

// fakeStore is an in-memory Store with failure injection.
type fakeStore struct {
	m        map[string][]byte
	ttl      map[string]time.Duration
	itemMax  int
	fail     map[string]error // by method name: "GetMulti", "Set", "Keys", and "Delete" for DeleteMulti
	failAt   int              // fail the delete of this key (1-based, across calls) when > 0
	deletes  int
	sets     int
	getCalls [][]string
}

func newFakeStore() *fakeStore {
	return &fakeStore{m: map[string][]byte{}, ttl: map[string]time.Duration{}, fail: map[string]error{}}
}

func (f *fakeStore) GetMulti(ctx context.Context, keys []string) ([][]byte, error) {
	f.getCalls = append(f.getCalls, append([]string(nil), keys...))
	if err := f.fail["GetMulti"]; err != nil {
		return nil, err
	}
	out := make([][]byte, len(keys))
	for i, k := range keys {
		if v, ok := f.m[k]; ok {
			out[i] = append([]byte{}, v...)
		}
	}
	return out, nil
}

func (f *fakeStore) Set(ctx context.Context, key string, val []byte, ttl time.Duration) error {
	if err := f.fail["Set"]; err != nil {
		return err
	}
	f.sets++
	f.m[key] = append([]byte(nil), val...)
	f.ttl[key] = ttl
	return nil
}

func (f *fakeStore) delete(key string) (bool, error) {
	f.deletes++
	if err := f.fail["Delete"]; err != nil && (f.failAt == 0 || f.failAt == f.deletes) {
		return false, err
	}
	_, ok := f.m[key]
	delete(f.m, key)
	return ok, nil
}

func (f *fakeStore) DeleteMulti(ctx context.Context, keys []string) (int, error) {
	n := 0
	for _, k := range keys {
		ok, err := f.delete(k)
		if err != nil {
			return n, err
		}
		if ok {
			n++
		}
	}
	return n, nil
}

func (f *fakeStore) Keys(ctx context.Context, prefix string) ([]string, error) {
	if err := f.fail["Keys"]; err != nil {
		return nil, err
	}
	var out []string
	for k := range f.m {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	return out, nil
}

func (f *fakeStore) ItemSizeMax(ctx context.Context) int { return f.itemMax }

// run parses, binds and executes one statement.
func run(t *testing.T, s Store, opts Options, ns, sql string, args ...string) Result {
	t.Helper()
	st := mustParse(t, sql)
	if st.Params > 0 {
		b := make([][]byte, len(args))
		for i, a := range args {
			b[i] = []byte(a)
		}
		var err error
		if st, err = st.Bind(b); err != nil {
			t.Fatalf("Bind(%q): %v", args, err)
		}
	}
	return Exec(context.Background(), s, opts, ns, st)
}

// rows renders a result set as "key=value" strings.
func rows(t *testing.T, r Result) []string {
	t.Helper()
	if r.IsError() || !r.IsRows {
		t.Fatalf("got %+v, want a result set", r)
	}
	if !reflect.DeepEqual(r.Columns, []string{"key", "value"}) {
		t.Errorf("Columns = %q, want [key value]", r.Columns)
	}
	out := []string{}
	for _, row := range r.Rows {
		out = append(out, string(row[0])+"="+string(row[1]))
	}
	return out
}

// wantOK checks an OK result with n affected rows.
func wantOK(t *testing.T, r Result, n uint64) {
	t.Helper()
	if r.IsError() || r.IsRows || r.Affected != n {
		t.Fatalf("got %+v, want OK with %d affected rows", r, n)
	}
}

func TestExecForms(t *testing.T) {
	s := newFakeStore()
	var o Options
	wantOK(t, run(t, s, o, "", `INSERT "a" = "1"`), 1)
	wantOK(t, run(t, s, o, "", `INSERT 'b' = X'32' TTL 60`), 1)
	wantOK(t, run(t, s, o, "", `INSERT ? = ? TTL ?`, "c", "3", "5"), 1)

	if got, want := s.m["kv:b"], "2"; string(got) != want {
		t.Errorf("store holds kv:b = %q, want %q", got, want)
	}
	if got, want := s.ttl["kv:b"], time.Minute; got != want {
		t.Errorf("kv:b TTL = %v, want %v", got, want)
	}
	if got, want := s.ttl["kv:c"], 5*time.Second; got != want {
		t.Errorf("kv:c TTL = %v, want %v", got, want)
	}

	if got, want := rows(t, run(t, s, o, "", `SELECT "a"`)), []string{"a=1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("SELECT a = %q, want %q", got, want)
	}
	if got := rows(t, run(t, s, o, "", `SELECT "nope"`)); len(got) != 0 {
		t.Errorf("SELECT nope = %q, want no rows", got)
	}
	s.getCalls = nil
	got := rows(t, run(t, s, o, "", `SELECT "c", "nope", "a", "c", ?`, "b"))
	if want := []string{"c=3", "a=1", "b=2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("SELECT c, nope, a, c, b = %q, want %q", got, want)
	}
	if len(s.getCalls) != 1 {
		t.Errorf("SELECT of 5 keys made %d GetMulti calls, want 1", len(s.getCalls))
	}

	got = rows(t, run(t, s, o, "", `SELECT *`))
	if want := []string{"a=1", "b=2", "c=3"}; !reflect.DeepEqual(got, want) {
		t.Errorf("SELECT * = %q, want %q", got, want)
	}

	wantOK(t, run(t, s, o, "", `DELETE "a"`), 1)
	wantOK(t, run(t, s, o, "", `DELETE ?`, "a"), 0)
	wantOK(t, run(t, s, o, "", `INSERT "b" = "22"`), 1)
	if got, want := rows(t, run(t, s, o, "", `SELECT "b"`)), []string{"b=22"}; !reflect.DeepEqual(got, want) {
		t.Errorf("SELECT b after overwrite = %q, want %q", got, want)
	}

	s.m["q:0123"] = []byte("query entry")
	s.m["g:users"] = []byte("7")
	wantOK(t, run(t, s, o, "", `DROP`), 2)
	if got := rows(t, run(t, s, o, "", `SELECT *`)); len(got) != 0 {
		t.Errorf("SELECT * after DROP = %q, want no rows", got)
	}
	if len(s.m) != 2 || s.m["q:0123"] == nil || s.m["g:users"] == nil {
		t.Errorf("DROP touched keys outside kv: store holds %q", s.m)
	}
	wantOK(t, run(t, s, o, "", `DROP;`), 0)
}

// TestExecBinary checks that values are stored raw and come back
// byte-identical, as memcached clients will read them.
func TestExecBinary(t *testing.T) {
	s := newFakeStore()
	val := make([]byte, 256)
	for i := range val {
		val[i] = byte(i)
	}
	wantOK(t, run(t, s, Options{}, "", `INSERT "bin" = ?`, string(val)), 1)
	wantOK(t, run(t, s, Options{}, "", fmt.Sprintf(`INSERT "hex" = X'%X'`, val)), 1)
	for _, k := range []string{"kv:bin", "kv:hex"} {
		if string(s.m[k]) != string(val) {
			t.Errorf("store holds %s = %q, want the 256 byte values", k, s.m[k])
		}
	}
	r := run(t, s, Options{}, "", `SELECT "bin"`)
	if len(r.Rows) != 1 || string(r.Rows[0][1]) != string(val) {
		t.Errorf("SELECT bin = %q, want the 256 byte values", r.Rows)
	}
}

func TestExecNamespaces(t *testing.T) {
	s := newFakeStore()
	o := Options{Prefix: "pfx:"}
	wantOK(t, run(t, s, o, "alice:", `INSERT "k" = "a"`), 1)
	wantOK(t, run(t, s, o, "bob:", `INSERT "k" = "b"`), 1)
	wantOK(t, run(t, s, o, "bob:", `INSERT "j" = "b2"`), 1)
	if got := string(s.m["pfx:alice:k"]); got != "a" {
		t.Errorf("store holds pfx:alice:k = %q, want %q", got, "a")
	}
	if got, want := rows(t, run(t, s, o, "alice:", `SELECT "k"`)), []string{"k=a"}; !reflect.DeepEqual(got, want) {
		t.Errorf("alice SELECT k = %q, want %q", got, want)
	}
	if got, want := rows(t, run(t, s, o, "bob:", `SELECT *`)), []string{"j=b2", "k=b"}; !reflect.DeepEqual(got, want) {
		t.Errorf("bob SELECT * = %q, want %q", got, want)
	}
	if got, want := rows(t, run(t, s, o, "", `SELECT *`)), []string{"alice:k=a", "bob:j=b2", "bob:k=b"}; !reflect.DeepEqual(got, want) {
		t.Errorf("shared SELECT * = %q, want %q", got, want)
	}
	wantOK(t, run(t, s, o, "bob:", `DROP`), 2)
	if got, want := rows(t, run(t, s, o, "alice:", `SELECT *`)), []string{"k=a"}; !reflect.DeepEqual(got, want) {
		t.Errorf("alice SELECT * after bob's DROP = %q, want %q", got, want)
	}
}

// TestExecSelectAllBatches checks that SELECT * reads many keys in
// bounded GetMulti calls and returns them all.
func TestExecSelectAllBatches(t *testing.T) {
	s := newFakeStore()
	s.itemMax = 1 << 20 // memcached's default
	const n = 2*getBatch + 7
	var want []string
	for i := range n {
		k := fmt.Sprintf("k%04d", i)
		s.m["kv:"+k] = []byte(k)
		want = append(want, k+"="+k)
	}
	got := rows(t, run(t, s, Options{}, "", `SELECT *`))
	sort.Strings(want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("SELECT * returned %d rows, want %d in key order", len(got), len(want))
	}
	if len(s.getCalls) != 3 {
		t.Errorf("SELECT * of %d keys made %d GetMulti calls, want 3", n, len(s.getCalls))
	}
	for _, c := range s.getCalls {
		if len(c) > getBatch {
			t.Errorf("a GetMulti call asked for %d keys, want at most %d", len(c), getBatch)
		}
	}
}

func TestExecErrors(t *testing.T) {
	long := strings.Repeat("x", MaxKeyLen-len(DefaultPrefix)+1)
	fits := strings.Repeat("x", MaxKeyLen-len(DefaultPrefix))
	storeErr := errors.New("store: connection refused")
	tests := []struct {
		name    string
		sql     string
		args    []string
		opts    Options
		ns      string
		setup   func(*fakeStore)
		code    uint16
		state   string
		msgHas  string
		noWrite bool // the store must hold nothing afterwards
	}{
		{name: "empty key", sql: `INSERT "" = "v"`, code: CodeUnknown, msgHas: "empty", noWrite: true},
		{name: "empty key select", sql: `SELECT ""`, code: CodeUnknown, msgHas: "empty"},
		{name: "empty key delete", sql: `DELETE ''`, code: CodeUnknown, msgHas: "empty"},
		{name: "empty bound key", sql: `INSERT ? = ?`, args: []string{"", "v"}, code: CodeUnknown, msgHas: "empty", noWrite: true},
		{name: "long key", sql: `INSERT "` + long + `" = "v"`, code: CodeUnknown, msgHas: "250", noWrite: true},
		{name: "long once namespaced", sql: `INSERT "` + fits + `" = "v"`, ns: "u:", code: CodeUnknown, msgHas: "too long", noWrite: true},
		{name: "long key select", sql: `SELECT "a", "` + long + `"`, code: CodeUnknown, msgHas: "too long"},
		{name: "space in key", sql: `INSERT "a b" = "v"`, code: CodeUnknown, msgHas: "whitespace", noWrite: true},
		{name: "tab in key", sql: `INSERT "a\tb" = "v"`, code: CodeUnknown, msgHas: "whitespace", noWrite: true},
		{name: "newline in key", sql: `DELETE "a\nb"`, code: CodeUnknown, msgHas: "control"},
		{name: "NUL in key", sql: `INSERT "a\0b" = "v"`, code: CodeUnknown, msgHas: "control", noWrite: true},
		{name: "DEL in key", sql: `INSERT X'617f' = "v"`, code: CodeUnknown, msgHas: "0x7f", noWrite: true},
		{name: "bad namespace", sql: `INSERT "k" = "v"`, ns: "a b:", code: CodeUnknown, msgHas: "namespace", noWrite: true},
		{name: "value over max bytes", sql: `INSERT "k" = "12345"`, opts: Options{MaxBytes: 4}, code: CodeUnknown, msgHas: "--kv-max-bytes", noWrite: true},
		{name: "value over memcached item size", sql: `INSERT "k" = ?`, args: []string{strings.Repeat("v", 2048)},
			setup: func(f *fakeStore) { f.itemMax = 3000 }, code: CodeUnknown, msgHas: "-I", noWrite: true},
		{name: "store refuses as too large", sql: `INSERT "k" = "v"`,
			setup: func(f *fakeStore) { f.fail["Set"] = fmt.Errorf("wrapped: %w", ErrTooLarge) }, code: CodeUnknown, msgHas: "-I", noWrite: true},
		{name: "set fails", sql: `INSERT "k" = "v"`, setup: func(f *fakeStore) { f.fail["Set"] = storeErr },
			code: CodeUnknown, msgHas: "connection refused", noWrite: true},
		{name: "get fails", sql: `SELECT "k"`, setup: func(f *fakeStore) { f.fail["GetMulti"] = storeErr },
			code: CodeUnknown, msgHas: "connection refused"},
		{name: "delete fails", sql: `DELETE "k"`, setup: func(f *fakeStore) { f.fail["Delete"] = storeErr },
			code: CodeUnknown, msgHas: "connection refused"},
		{name: "keys fails select all", sql: `SELECT *`, setup: func(f *fakeStore) { f.fail["Keys"] = storeErr },
			code: CodeUnknown, msgHas: "connection refused"},
		{name: "get fails select all", sql: `SELECT *`, setup: func(f *fakeStore) {
			f.m["kv:a"] = []byte("1")
			f.fail["GetMulti"] = storeErr
		}, code: CodeUnknown, msgHas: "connection refused"},
		{name: "keys fails drop", sql: `DROP`, setup: func(f *fakeStore) { f.fail["Keys"] = storeErr },
			code: CodeUnknown, msgHas: "connection refused"},
		{name: "delete fails mid drop", sql: `DROP`, setup: func(f *fakeStore) {
			f.m["kv:a"], f.m["kv:b"], f.m["kv:c"] = []byte("1"), []byte("2"), []byte("3")
			f.fail["Delete"], f.failAt = storeErr, 3
		}, code: CodeUnknown, msgHas: "after removing 2 pairs"},
		{name: "unbound placeholder", sql: `SELECT ?`, code: CodeParseError, state: StateParseError, msgHas: "prepared statement"},
		{name: "unbound insert", sql: `INSERT ? = ?`, code: CodeParseError, state: StateParseError, msgHas: "prepared statement", noWrite: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newFakeStore()
			if tt.setup != nil {
				tt.setup(s)
			}
			st := mustParse(t, tt.sql)
			if tt.args != nil {
				b := make([][]byte, len(tt.args))
				for i, a := range tt.args {
					b[i] = []byte(a)
				}
				var err error
				if st, err = st.Bind(b); err != nil {
					t.Fatalf("Bind: %v", err)
				}
			}
			r := Exec(context.Background(), s, tt.opts, tt.ns, st)
			state := tt.state
			if state == "" {
				state = StateGeneral
			}
			if r.Code != tt.code || r.State != state {
				t.Fatalf("got %+v, want error %d (%s)", r, tt.code, state)
			}
			if !strings.HasPrefix(r.Msg, "mycached: ") || !strings.Contains(r.Msg, tt.msgHas) {
				t.Errorf("message %q: want prefix \"mycached: \" and %q", r.Msg, tt.msgHas)
			}
			if r.IsRows || r.Affected != 0 {
				t.Errorf("an error result also carries rows or a count: %+v", r)
			}
			if tt.noWrite && (len(s.m) != 0 || s.sets != 0) {
				t.Errorf("store was written (%d sets, holds %q), want no write", s.sets, s.m)
			}
		})
	}
}

// TestExecItemSizeBoundary checks the exact limit: key plus value may use
// ItemSizeMax less ItemOverhead, and no more.
func TestExecItemSizeBoundary(t *testing.T) {
	s := newFakeStore()
	s.itemMax = 4096
	room := s.itemMax - ItemOverhead - len("kv:k")
	wantOK(t, run(t, s, Options{}, "", `INSERT "k" = ?`, strings.Repeat("v", room)), 1)
	if r := run(t, s, Options{}, "", `INSERT "k" = ?`, strings.Repeat("v", room+1)); !r.IsError() {
		t.Fatalf("a value one byte over the item size was accepted: %+v", r)
	}
	if got := len(s.m["kv:k"]); got != room {
		t.Errorf("after a refused overwrite the store holds %d bytes, want the earlier %d", got, room)
	}
	// L1 (ItemSizeMax 0) takes anything up to MaxBytes.
	s.itemMax = 0
	wantOK(t, run(t, s, Options{MaxBytes: 1 << 20}, "", `INSERT "k" = ?`, strings.Repeat("v", 1<<20)), 1)
}

func TestErrorResult(t *testing.T) {
	_, _, err := Parse(`INSERT "k" =`)
	if r := ErrorResult(err); r.Code != CodeParseError || r.State != StateParseError || r.Msg != err.Error() {
		t.Errorf("ErrorResult(syntax) = %+v, want 1064/42000 with the error's text", r)
	}
	if r := ErrorResult(errors.New("boom")); r.Code != CodeUnknown || r.State != StateGeneral {
		t.Errorf("ErrorResult(other) = %+v, want 1105/HY000", r)
	}
}

func TestOptionsDefaults(t *testing.T) {
	got := Options{}.withDefaults()
	if got.Prefix != DefaultPrefix || got.MaxBytes != DefaultMaxBytes {
		t.Errorf("defaults = %+v, want prefix %q and %d bytes", got, DefaultPrefix, DefaultMaxBytes)
	}
	got = Options{Prefix: "x:", MaxBytes: 5}.withDefaults()
	if got.Prefix != "x:" || got.MaxBytes != 5 {
		t.Errorf("withDefaults changed set fields: %+v", got)
	}
}

// slowStore answers each call after delay, or fails when its context
// ends first, as a store whose every call has its own timeout would.
type slowStore struct {
	*fakeStore
	delay time.Duration
}

func (s slowStore) wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(s.delay):
		return nil
	}
}

func (s slowStore) GetMulti(ctx context.Context, keys []string) ([][]byte, error) {
	if err := s.wait(ctx); err != nil {
		return nil, err
	}
	return s.fakeStore.GetMulti(ctx, keys)
}

func (s slowStore) Set(ctx context.Context, key string, val []byte, ttl time.Duration) error {
	if err := s.wait(ctx); err != nil {
		return err
	}
	return s.fakeStore.Set(ctx, key, val, ttl)
}

func (s slowStore) DeleteMulti(ctx context.Context, keys []string) (int, error) {
	n := 0
	for _, k := range keys {
		if err := s.wait(ctx); err != nil {
			return n, err
		}
		m, _ := s.fakeStore.DeleteMulti(ctx, []string{k})
		n += m
	}
	return n, nil
}

// TestExecStatementDeadline: a statement of many store calls, each well
// within its own bound, still fails by Options.Timeout as a whole, with a
// message that names the bound, and DROP says how far it got.
func TestExecStatementDeadline(t *testing.T) {
	f := newFakeStore()
	for i := range 10 * getBatch {
		f.m[fmt.Sprintf("kv:k%04d", i)] = []byte("v")
	}
	s := slowStore{fakeStore: f, delay: 40 * time.Millisecond}
	opts := Options{Timeout: 200 * time.Millisecond}
	for _, q := range []string{`SELECT *`, `DROP`} {
		start := time.Now()
		r := run(t, s, opts, "", q)
		took := time.Since(start)
		if !r.IsError() || !strings.Contains(r.Msg, "did not answer within 200ms (--kv-timeout)") {
			t.Errorf("%s: got %d rows, %d affected, error %q; want an error naming the 200ms bound", q, len(r.Rows), r.Affected, r.Msg)
		}
		// Call by call, the store would take 10 or 1000 times 40ms.
		if took > time.Second {
			t.Errorf("%s: failed after %v, want by about 200ms", q, took)
		}
		if q == `DROP` && !strings.Contains(r.Msg, "DROP (after removing ") {
			t.Errorf("DROP: got %q, want it to say how many pairs it removed", r.Msg)
		}
	}
	// A write that timed out may still be applied: the error says so.
	slow := slowStore{fakeStore: f, delay: time.Second}
	for _, q := range []string{`INSERT "k" = "v"`, `DELETE "k0001"`, `DROP`} {
		r := run(t, slow, opts, "", q)
		if !r.IsError() || !strings.Contains(r.Msg, "may or may not have been applied") {
			t.Errorf("%s past the bound: got error %q, want one that says it may have been applied", q, r.Msg)
		}
	}
}

// TestExecReplyBound: a SELECT of many keys, or a SELECT *, whose values
// come to more than the reply bound fails with an error that says so,
// having read no more than a first small batch of large values; within
// the bound it answers; the bound never refuses a single largest value.
func TestExecReplyBound(t *testing.T) {
	s := newFakeStore()
	big := strings.Repeat("v", 1<<20)
	for i := range 20 {
		s.m[fmt.Sprintf("kv:k%02d", i)] = []byte(big)
	}
	opts := Options{MaxReplyBytes: 5 << 20}
	if got := rows(t, run(t, s, opts, "", `SELECT "k00", "k01", "k02", "k03"`)); len(got) != 4 {
		t.Errorf("four values within the bound: %d rows", len(got))
	}
	for _, q := range []string{`SELECT *`, `SELECT "k00", "k01", "k02", "k03", "k04", "k05"`} {
		s.getCalls = nil
		r := run(t, s, opts, "", q)
		if !r.IsError() || !strings.Contains(r.Msg, "more than 5242880 bytes") {
			t.Errorf("%s past the bound: %+v", q, r.Msg)
		}
		read := 0
		for _, c := range s.getCalls {
			read += len(c)
		}
		if read > firstBatch {
			t.Errorf("%s read %d values of 1 MiB before it gave up, want at most %d", q, read, firstBatch)
		}
	}
	// Keys absent at first make the batches large: they must still not
	// read a batch of large values far past the bound (twice the bound
	// at most). Read so, the statement below read 58 MiB to give up at
	// 5 MiB. The same holds on the in-process tier (no item size limit),
	// by the largest value INSERT takes.
	for _, itemMax := range []int{1<<20 + 1024, 0} {
		s := newFakeStore()
		s.itemMax = itemMax
		q := "SELECT "
		for i := range 50 {
			q += fmt.Sprintf(`"absent%02d", `, i)
		}
		for i := range 100 {
			s.m[fmt.Sprintf("kv:k%02d", i)] = []byte(big)
			q += fmt.Sprintf(`"k%02d", `, i)
		}
		q = strings.TrimSuffix(q, ", ")
		o := Options{MaxReplyBytes: 5 << 20, MaxBytes: 1 << 20}
		if r := run(t, s, o, "", q); !r.IsError() || !strings.Contains(r.Msg, "more than 5242880 bytes") {
			t.Errorf("item size limit %d: 100 values of 1 MiB after 50 absent keys: %+v", itemMax, r.Msg)
		}
		read := 0
		for _, c := range s.getCalls {
			for _, k := range c {
				read += len(s.m[k])
			}
		}
		if read > 2*o.MaxReplyBytes+len(big) {
			t.Errorf("item size limit %d: read %d bytes of values before giving up at %d", itemMax, read, o.MaxReplyBytes)
		}
	}
	if got := (Options{MaxBytes: 100 << 20}).withDefaults().MaxReplyBytes; got != 100<<20 {
		t.Errorf("MaxReplyBytes with a 100 MiB MaxBytes: %d", got)
	}
	if got := (Options{}).withDefaults().MaxReplyBytes; got != DefaultMaxReplyBytes {
		t.Errorf("MaxReplyBytes by default: %d", got)
	}
}

// testBudget is a Budget of max bytes.
type testBudget struct{ max, used int64 }

func (b *testBudget) Take(n int64) bool {
	if b.used+n > b.max {
		return false
	}
	b.used += n
	return true
}

func (b *testBudget) Give(n int64) { b.used -= n }

// Many SELECTs at once must not hold together more than the replies'
// budget: each takes its values' bytes from it as it reads them, not
// once it has read them all, and the one that finds no room fails with
// ER_OUT_OF_RESOURCES and holds nothing. Counted only once all were
// read, twenty clients asking for 64 MiB each could hold 1.25 GiB.
func TestExecRepliesBudget(t *testing.T) {
	s := newFakeStore()
	big := strings.Repeat("v", 1<<20)
	for i := range 20 {
		s.m[fmt.Sprintf("kv:k%02d", i)] = []byte(big)
	}
	s.m["kv:small"] = []byte("v")
	b := &testBudget{max: 6 << 20}
	opts := Options{MaxReplyBytes: 64 << 20, Replies: b}
	first := run(t, s, opts, "", `SELECT "k00", "k01", "k02", "k03"`)
	if got := rows(t, first); len(got) != 4 {
		t.Fatalf("four values within the budget: %d rows", len(got))
	}
	if b.used != 4<<20 {
		t.Errorf("a reply of 4 MiB not yet written holds %d bytes of the budget", b.used)
	}
	for _, q := range []string{`SELECT *`, `SELECT "k04", "k05", "k06", "k07", "k08"`} {
		s.getCalls = nil
		r := run(t, s, opts, "", q)
		if r.Code != CodeOutOfResources || !strings.Contains(r.Msg, "--fill-memory") {
			t.Errorf("%s with 2 MiB of the budget left: %d %s", q, r.Code, r.Msg)
		}
		if b.used != 4<<20 {
			t.Errorf("%s failed, and the budget holds %d bytes, want the first reply's %d", q, b.used, 4<<20)
		}
		read := 0
		for _, c := range s.getCalls {
			read += len(c)
		}
		if read > 2+firstBatch {
			t.Errorf("%s read %d values of 1 MiB with room for 2", q, read)
		}
	}
	if got := rows(t, run(t, s, opts, "", `SELECT "small"`)); len(got) != 1 {
		t.Errorf("a small reply with the budget nearly full: %d rows", len(got))
	}
	first.Release()
	if b.used != 0 {
		t.Errorf("after the first reply's Release the budget holds %d bytes", b.used)
	}
	if got := rows(t, run(t, s, opts, "", `SELECT "k04", "k05", "k06", "k07", "k08"`)); len(got) != 5 {
		t.Errorf("five values once the budget has room: %d rows", len(got))
	}
}

// A SELECT may name at most MaxSelectKeys keys, placeholders included:
// past it the statement is still kv (not SQL), it is an error, and Parse
// keeps no more than the bound, so a few MB of keys cannot make the
// sidecar hold hundreds.
func TestExecSelectKeysBound(t *testing.T) {
	s := newFakeStore()
	s.m["kv:k0"] = []byte("v")
	list := func(n int, param bool) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = fmt.Sprintf(`"k%d"`, i)
			if param && i == n-1 {
				parts[i] = "?"
			}
		}
		return "SELECT " + strings.Join(parts, ",")
	}
	st, ok, err := Parse(list(MaxSelectKeys, false))
	if !ok || err != nil {
		t.Fatalf("Parse at the bound: ok=%v err=%v", ok, err)
	}
	if res := Exec(context.Background(), s, Options{}, "", st); res.IsError() || len(res.Rows) != 1 {
		t.Fatalf("SELECT of %d keys: %+v", MaxSelectKeys, res)
	}
	reads := len(s.getCalls)
	for _, param := range []bool{false, true} {
		n := MaxSelectKeys + 1
		st, ok, err := Parse(list(n, param))
		if !ok || err != nil {
			t.Fatalf("Parse past the bound (param %v): ok=%v err=%v", param, ok, err)
		}
		if len(st.Keys) > MaxSelectKeys {
			t.Errorf("Parse kept %d keys, more than %d", len(st.Keys), MaxSelectKeys)
		}
		if param {
			if st.Params != 1 {
				t.Fatalf("Params = %d, want 1", st.Params)
			}
			if st, err = st.Bind([][]byte{[]byte("k0")}); err != nil {
				t.Fatalf("Bind: %v", err)
			}
		}
		res := Exec(context.Background(), s, Options{}, "", st)
		want := fmt.Sprintf("at most %d keys, not %d", MaxSelectKeys, n)
		if !res.IsError() || !strings.Contains(res.Msg, want) {
			t.Errorf("SELECT of %d keys (param %v): %+v, want an error saying %q", n, param, res, want)
		}
	}
	if len(s.getCalls) != reads {
		t.Errorf("the SELECTs past the bound read the store %d times", len(s.getCalls)-reads)
	}
}
