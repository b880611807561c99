package kv

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

func TestBind(t *testing.T) {
	b := func(s ...string) [][]byte {
		out := make([][]byte, len(s))
		for i, x := range s {
			out[i] = []byte(x)
		}
		return out
	}
	tests := []struct {
		sql   string
		args  [][]byte
		keys  []string
		value string
		ttl   time.Duration
	}{
		{`INSERT ? = ?`, b("k", "v"), []string{"k"}, "v", 0},
		{`INSERT ? = ? TTL ?`, b("k", "v", "60"), []string{"k"}, "v", time.Minute},
		{`INSERT ? = ? TTL ?`, b("k", "", "0"), []string{"k"}, "", 0},
		{`INSERT "k" = ?`, b("\x00\xff"), []string{"k"}, "\x00\xff", 0},
		{`INSERT ? = "v" TTL 5`, b("k"), []string{"k"}, "v", 5 * time.Second},
		{`INSERT "k" = "v" TTL ?`, b("7"), []string{"k"}, "v", 7 * time.Second},
		{`SELECT ?`, b("k"), []string{"k"}, "", 0},
		{`SELECT ?, "b", ?`, b("a", "c"), []string{"a", "b", "c"}, "", 0},
		{`DELETE ?`, b("k"), []string{"k"}, "", 0},
		{`SELECT "a"`, nil, []string{"a"}, "", 0},
		{`DROP`, nil, nil, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.sql, func(t *testing.T) {
			st := mustParse(t, tt.sql)
			got, err := st.Bind(tt.args)
			if err != nil {
				t.Fatalf("Bind(%q) error: %v", tt.args, err)
			}
			if got.Params != 0 {
				t.Errorf("Params = %d, want 0", got.Params)
			}
			var keys []string
			for _, k := range got.Keys {
				keys = append(keys, string(k))
			}
			if !reflect.DeepEqual(keys, tt.keys) {
				t.Errorf("Keys = %q, want %q", keys, tt.keys)
			}
			if string(got.Value) != tt.value {
				t.Errorf("Value = %q, want %q", got.Value, tt.value)
			}
			if got.TTL != tt.ttl {
				t.Errorf("TTL = %v, want %v", got.TTL, tt.ttl)
			}
			if got.Op != st.Op {
				t.Errorf("Op = %v, want %v", got.Op, st.Op)
			}
		})
	}
}

// TestBindLeavesStmt checks that a prepared statement can be bound again
// with other values, as every COM_STMT_EXECUTE does.
func TestBindLeavesStmt(t *testing.T) {
	st := mustParse(t, `SELECT ?, ?`)
	a, err := st.Bind([][]byte{[]byte("a1"), []byte("a2")})
	if err != nil {
		t.Fatal(err)
	}
	b, err := st.Bind([][]byte{[]byte("b1"), []byte("b2")})
	if err != nil {
		t.Fatal(err)
	}
	if string(a.Keys[0]) != "a1" || string(b.Keys[1]) != "b2" {
		t.Errorf("got keys %q and %q, want [a1 a2] and [b1 b2]", a.Keys, b.Keys)
	}
	if st.Params != 2 || st.Keys[0] != nil || st.Keys[1] != nil {
		t.Errorf("the prepared statement changed: Params %d, Keys %q", st.Params, st.Keys)
	}
}

func TestBindErrors(t *testing.T) {
	tests := []struct {
		sql  string
		args [][]byte
		want error
		code uint16
	}{
		{`INSERT ? = ?`, [][]byte{[]byte("k")}, ErrParamCount, CodeWrongArguments},
		{`INSERT ? = ?`, [][]byte{[]byte("k"), []byte("v"), []byte("x")}, ErrParamCount, CodeWrongArguments},
		{`SELECT "k"`, [][]byte{[]byte("k")}, ErrParamCount, CodeWrongArguments},
		{`INSERT ? = ?`, [][]byte{nil, []byte("v")}, ErrNullParam, CodeWrongArguments},
		{`INSERT ? = ?`, [][]byte{[]byte("k"), nil}, ErrNullParam, CodeWrongArguments},
		{`SELECT ?, ?`, [][]byte{[]byte("k"), nil}, ErrNullParam, CodeWrongArguments},
		{`DELETE ?`, [][]byte{nil}, ErrNullParam, CodeWrongArguments},
		{`INSERT ? = ? TTL ?`, [][]byte{[]byte("k"), []byte("v"), nil}, ErrNullParam, CodeWrongArguments},
		{`INSERT ? = ? TTL ?`, [][]byte{[]byte("k"), []byte("v"), []byte("abc")}, ErrBadParam, CodeWrongArguments},
		{`INSERT ? = ? TTL ?`, [][]byte{[]byte("k"), []byte("v"), []byte("-1")}, ErrBadParam, CodeWrongArguments},
		{`INSERT ? = ? TTL ?`, [][]byte{[]byte("k"), []byte("v"), []byte("1.5")}, ErrBadParam, CodeWrongArguments},
		{`INSERT ? = ? TTL ?`, [][]byte{[]byte("k"), []byte("v"), []byte("99999999999")}, ErrBadParam, CodeWrongArguments},
	}
	for _, tt := range tests {
		t.Run(tt.sql, func(t *testing.T) {
			st := mustParse(t, tt.sql)
			got, err := st.Bind(tt.args)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Bind(%q) = %+v, %v; want error %v", tt.args, got, err, tt.want)
			}
			if res := ErrorResult(err); res.Code != tt.code || res.Msg != err.Error() {
				t.Errorf("ErrorResult = %+v, want code %d with the error's text", res, tt.code)
			}
		})
	}
}

// mustParse parses a kv statement that must be valid.
func mustParse(t *testing.T, sql string) *Stmt {
	t.Helper()
	st, ok, err := Parse(sql)
	if !ok || err != nil {
		t.Fatalf("Parse(%q) = %v, %v; want a statement", sql, ok, err)
	}
	return st
}
