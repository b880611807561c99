package kv

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// parsed is the expected outcome of Parse in a table.
type parsed struct {
	notKV  bool // ok=false
	err    bool // ok=true, err != nil
	op     Op
	keys   []string // "" stands for a placeholder (nil)
	value  string
	nilVal bool // the value is a placeholder
	ttl    time.Duration
	params int
}

func TestParse(t *testing.T) {
	ins := func(k, v string) parsed { return parsed{op: OpInsert, keys: []string{k}, value: v} }
	sel := func(ks ...string) parsed { return parsed{op: OpSelect, keys: ks} }
	del := func(k string) parsed { return parsed{op: OpDelete, keys: []string{k}} }
	sql := parsed{notKV: true}
	bad := parsed{err: true}
	withTTL := func(p parsed, d time.Duration) parsed { p.ttl = d; return p }

	tests := []struct {
		sql  string
		want parsed
	}{
		// The seven forms.
		{`INSERT "key" = "value";`, ins("key", "value")},
		{`INSERT "key" = "value" TTL 60;`, withTTL(ins("key", "value"), 60*time.Second)},
		{`SELECT "key";`, sel("key")},
		{`SELECT "k1", "k2", "k3";`, sel("k1", "k2", "k3")},
		{`DELETE "key";`, del("key")},
		{`SELECT *;`, parsed{op: OpSelectAll}},
		{`DROP;`, parsed{op: OpDrop}},

		// Optional ;, case, whitespace and comments.
		{`INSERT "k" = "v"`, ins("k", "v")},
		{`insert "k"="v" ttl 5`, withTTL(ins("k", "v"), 5*time.Second)},
		{`InSeRt 'k' = 'v' TtL 0`, ins("k", "v")},
		{"  \n\tINSERT\n\"k\"\t=\r\n\"v\"  ;  \n", ins("k", "v")},
		{`/* c */ INSERT /* c */ "k" /* c */ = /* c */ "v" /* c */ ; /* c */`, ins("k", "v")},
		{"INSERT \"k\" = \"v\" -- trailing comment", ins("k", "v")},
		{"INSERT \"k\" = \"v\"; # hash comment", ins("k", "v")},
		{"SELECT \"k\" -- x\n;", sel("k")},
		{`select "k"`, sel("k")},
		{`Select "a","b"`, sel("a", "b")},
		{`select * ;`, parsed{op: OpSelectAll}},
		{`select *`, parsed{op: OpSelectAll}},
		{`drop`, parsed{op: OpDrop}},
		{` Drop ; `, parsed{op: OpDrop}},
		{`delete 'k'`, del("k")},
		{`DELETE "k"`, del("k")},

		// Quoting and escapes.
		{`INSERT 'k' = "v"`, ins("k", "v")},
		{`INSERT "k" = 'it''s'`, ins("k", "it's")},
		{`INSERT "k" = "say ""hi"""`, ins("k", `say "hi"`)},
		{`INSERT "k" = "it's"`, ins("k", "it's")},
		{`INSERT "k" = 'say "hi"'`, ins("k", `say "hi"`)},
		{`INSERT "k" = "a\"b\\c\'d"`, ins("k", `a"b\c'd`)},
		{`INSERT "k" = "\0\b\n\r\t\Z"`, ins("k", "\x00\b\n\r\t\x1a")},
		{`INSERT "k" = "\%\_\q"`, ins("k", `\%\_q`)},
		{`INSERT "k" = ""`, ins("k", "")},
		{`INSERT "k" = "{\"json\":[1,2]}"`, ins("k", `{"json":[1,2]}`)},
		{"INSERT \"k\" = \"multi\nline;--#/*\"", ins("k", "multi\nline;--#/*")},
		{`INSERT "k" = "héllo"`, ins("k", "héllo")},
		{`SELECT "a\"b"`, sel(`a"b`)},
		{`SELECT "it's", "x""y"`, sel("it's", `x"y`)},

		// Hex and binary-safe values.
		{`INSERT "k" = X'00FF41'`, ins("k", "\x00\xffA")},
		{`INSERT "k" = x'6869'`, ins("k", "hi")},
		{`INSERT "k" = X''`, ins("k", "")},
		{`INSERT "k" = 0x6869`, ins("k", "hi")},
		{`INSERT "k" = 0xABC`, ins("k", "\x0a\xbc")},
		{`INSERT X'6b' = "v"`, ins("k", "v")},
		{`INSERT 0x6b = "v"`, ins("k", "v")},
		{`DELETE 0x6b`, del("k")},
		{`DELETE X'6b'`, del("k")},
		{`INSERT "k" = _binary'a\0b'`, ins("k", "a\x00b")},
		{`INSERT _binary'k' = _utf8mb4 'v'`, ins("k", "v")},
		{`INSERT "k" = _binary X'41'`, ins("k", "A")},
		{`INSERT "k" = N'v'`, ins("k", "v")},

		// Numbers, as interpolating drivers write int64 and float64.
		{`INSERT 'k' = 42`, ins("k", "42")},
		{`INSERT 'k' = -42`, ins("k", "-42")},
		{`INSERT 'k' = 1.5e+06`, ins("k", "1.5e+06")},
		{`INSERT 'k' = .5`, ins("k", ".5")},
		{`INSERT 7 = 'v'`, ins("7", "v")},
		{`DELETE 7`, del("7")},
		{`INSERT 'k' = 'v' TTL '60'`, withTTL(ins("k", "v"), time.Minute)},
		{`INSERT 'k' = 'v' TTL 31536000`, withTTL(ins("k", "v"), 365*24*time.Hour)},

		// Prepared placeholders.
		{`INSERT ? = ?`, parsed{op: OpInsert, keys: []string{""}, nilVal: true, params: 2}},
		{`INSERT ? = ? TTL ?`, parsed{op: OpInsert, keys: []string{""}, nilVal: true, params: 3}},
		{`insert ?=?;`, parsed{op: OpInsert, keys: []string{""}, nilVal: true, params: 2}},
		{`INSERT "k" = ?`, parsed{op: OpInsert, keys: []string{"k"}, nilVal: true, params: 1}},
		{`INSERT ? = "v" TTL 9`, parsed{op: OpInsert, keys: []string{""}, value: "v", ttl: 9 * time.Second, params: 1}},
		{`SELECT ?`, parsed{op: OpSelect, keys: []string{""}, params: 1}},
		{`SELECT ?, ?, ?`, parsed{op: OpSelect, keys: []string{"", "", ""}, params: 3}},
		{`SELECT "a", ?, "b"`, parsed{op: OpSelect, keys: []string{"a", "", "b"}, params: 1}},
		{`DELETE ?`, parsed{op: OpDelete, keys: []string{""}, params: 1}},
		{`DELETE ?;`, parsed{op: OpDelete, keys: []string{""}, params: 1}},
		{`INSERT "?" = "?"`, ins("?", "?")},

		// The ambiguity with SQL: these stay SQL.
		{`SELECT 'x'`, sql},
		{`SELECT 'k1', 'k2'`, sql},
		{`SELECT "k1", 'k2'`, sql},
		{`SELECT "x" AS y`, sql},
		{`SELECT "x" y`, sql},
		{`SELECT "x" FROM t`, sql},
		{`SELECT "x" "y"`, sql},
		{`SELECT "x" + 1`, sql},
		{`SELECT "x", 1`, sql},
		{`SELECT ("x")`, sql},
		{`SELECT _binary"x"`, sql},
		{`SELECT _utf8mb4'x'`, sql},
		{`SELECT N'x'`, sql},
		{`SELECT X'41'`, sql},
		{`SELECT 0x41`, sql},
		{`SELECT 1`, sql},
		{`SELECT * FROM t`, sql},
		{`SELECT *, 1`, sql},
		{`SELECT * ;;`, sql},
		{`SELECT "x"; SELECT 1`, sql},
		{`SELECT "x";;`, sql},
		{`SELECT "x",`, sql},
		{`SELECT`, sql},
		{`SELECT "unterminated`, sql},
		{`SELECT "x" /*! FROM t */`, sql},
		{`SELECT /*+ MAX_EXECUTION_TIME(1) */ "x"`, sql},
		{`SELECT "x" /* unterminated`, sql},
		{`SELECT @@version`, sql},
		{"SELECT `x`", sql},
		{`select ? from t`, sql},
		{`(SELECT "x")`, sql},
		{`/*!40101 SET NAMES utf8 */`, sql},

		// Other SQL that starts with a kv keyword.
		{`INSERT INTO t VALUES (1)`, sql},
		{`INSERT t VALUES ("k")`, sql},
		{`INSERT IGNORE INTO t VALUES (1)`, sql},
		{"INSERT `t` SET a = 1", sql},
		{`INSERT "t" VALUES (1)`, sql}, // ANSI_QUOTES
		{`INSERT "t" (a) VALUES (1)`, sql},
		{`INSERT "db"."t" SET a = 1`, sql},
		{`INSERT "t" SET a = 1`, sql},
		{`DELETE FROM t WHERE a = "k"`, sql},
		{`DELETE LOW_PRIORITY FROM t`, sql},
		{`DELETE t1 FROM t1 JOIN t2`, sql},
		{`DELETE "t1" FROM t1`, sql}, // ANSI_QUOTES
		{`DELETE "t1", "t2" FROM t1 JOIN t2`, sql},
		{`DROP TABLE t`, sql},
		{`DROP; DROP`, sql},
		{`DROP "x"`, sql},
		{`UPDATE t SET a = "k"`, sql},
		{`REPLACE "k" = "v"`, sql},
		{``, sql},
		{`   `, sql},
		{`;`, sql},
		{`-- just a comment`, sql},

		// kv-shaped but malformed.
		{`INSERT "k" = `, bad},
		{`INSERT "k" =`, bad},
		{`INSERT "k"`, bad},
		{`INSERT "k";`, bad},
		{`INSERT 'k'`, bad},
		{`INSERT 'k' 'v'`, bad},
		{`INSERT "k" = "v" TTL abc`, bad},
		{`INSERT "k" = "v" TTL`, bad},
		{`INSERT "k" = "v" TTL -1`, bad},
		{`INSERT "k" = "v" TTL 1.5`, bad},
		{`INSERT "k" = "v" TTL '1x'`, bad},
		{`INSERT "k" = "v" TTL 31536001`, bad},
		{`INSERT "k" = "v" TTL 99999999999999999999999`, bad},
		{`INSERT "k" = "v" TTL 5 6`, bad},
		{`INSERT "k" = "v" extra`, bad},
		{`INSERT "k" = "v";;`, bad},
		{`INSERT "k" = "v"; INSERT "a" = "b"`, bad},
		{`INSERT "k" = "v", "w"`, bad},
		{`INSERT "k" = NULL`, bad},
		{`INSERT "k" = null`, bad},
		{`INSERT "k" = v`, bad},
		{`INSERT "k" = "unterminated`, bad},
		{`INSERT "k" = 'unterminated\'`, bad},
		{`INSERT "k" = X'4'`, bad},
		{`INSERT "k" = X'zz'`, bad},
		{`INSERT "k" = X'41`, bad},
		{`INSERT "k" = 0x41g`, bad},
		{`INSERT "k" = - 'v'`, bad},
		{`INSERT "k" == "v"`, bad},
		{`INSERT "k" = "v" /* unterminated`, bad},
		{`INSERT "k" = "v" /*! TTL 5 */`, bad},
		{`INSERT - = "v"`, bad},
		{`DELETE 'k' 'j'`, bad},
		{`DELETE 'a', 'b'`, bad},
		{`DELETE ? ?`, bad},
		{`DELETE 'k';;`, bad},
		{`DELETE 'k' WHERE 1`, bad},
		{`INSERT 'k' = 1abc`, bad},
		{`INSERT 'k' = .5x`, bad},
		{`SELECT .5x`, sql},
		{`SELECT 1abc`, sql},
	}
	for _, tt := range tests {
		t.Run(tt.sql, func(t *testing.T) {
			st, ok, err := Parse(tt.sql)
			checkParsed(t, tt.sql, st, ok, err, tt.want)
		})
	}
}

// checkParsed compares Parse's results with want.
func checkParsed(t *testing.T, sql string, st *Stmt, ok bool, err error, want parsed) {
	t.Helper()
	switch {
	case want.notKV:
		if ok || err != nil || st != nil {
			t.Fatalf("Parse(%q) = %+v, %v, %v; want not kv", sql, st, ok, err)
		}
		return
	case want.err:
		if !ok || err == nil {
			t.Fatalf("Parse(%q) = %+v, %v, %v; want a syntax error", sql, st, ok, err)
		}
		if !errors.Is(err, ErrSyntax) {
			t.Errorf("Parse(%q) error %v does not wrap ErrSyntax", sql, err)
		}
		if !strings.HasPrefix(err.Error(), "mycached: ") {
			t.Errorf("Parse(%q) error %q: want prefix \"mycached: \"", sql, err)
		}
		return
	}
	if !ok || err != nil {
		t.Fatalf("Parse(%q) = %+v, %v, %v; want a %v statement", sql, st, ok, err, want.op)
	}
	if st.Op != want.op {
		t.Errorf("Op = %v, want %v", st.Op, want.op)
	}
	var keys []string
	for _, k := range st.Keys {
		if k == nil {
			keys = append(keys, "")
		} else {
			keys = append(keys, string(k))
		}
	}
	if !reflect.DeepEqual(keys, want.keys) {
		t.Errorf("Keys = %q, want %q", keys, want.keys)
	}
	for i, k := range st.Keys {
		if k != nil && len(k) == 0 {
			t.Errorf("Keys[%d] is empty but not nil", i)
		}
	}
	if want.nilVal {
		if st.Value != nil {
			t.Errorf("Value = %q, want a placeholder", st.Value)
		}
	} else if string(st.Value) != want.value {
		t.Errorf("Value = %q, want %q", st.Value, want.value)
	}
	if want.op == OpInsert && !want.nilVal && st.Value == nil {
		t.Errorf("Value is nil, want non-nil %q", want.value)
	}
	if st.TTL != want.ttl {
		t.Errorf("TTL = %v, want %v", st.TTL, want.ttl)
	}
	if st.Params != want.params {
		t.Errorf("Params = %d, want %d", st.Params, want.params)
	}
}

func TestParseNoBackslashEscapes(t *testing.T) {
	tests := []struct {
		sql  string
		want parsed
	}{
		{`INSERT 'k' = 'a\nb'`, parsed{op: OpInsert, keys: []string{"k"}, value: `a\nb`}},
		{`INSERT 'k' = 'C:\'`, parsed{op: OpInsert, keys: []string{"k"}, value: `C:\`}},
		{`INSERT 'k' = 'it''s'`, parsed{op: OpInsert, keys: []string{"k"}, value: "it's"}},
		{`SELECT "a\"`, parsed{op: OpSelect, keys: []string{`a\`}}},
	}
	for _, tt := range tests {
		t.Run(tt.sql, func(t *testing.T) {
			st, ok, err := ParseNoBackslashEscapes(tt.sql)
			checkParsed(t, tt.sql, st, ok, err, tt.want)
		})
	}
}

// TestParseUnambiguous: where no text is SQL, a SELECT takes keys in any
// quoting, as INSERT and DELETE do; what is not a key is still not kv.
func TestParseUnambiguous(t *testing.T) {
	sel := func(ks ...string) parsed { return parsed{op: OpSelect, keys: ks} }
	tests := []struct {
		sql  string
		want parsed
	}{
		{`SELECT 'k'`, sel("k")},
		{`SELECT X'835C', 0x6B, "k", _binary'b', ?`, parsed{op: OpSelect, keys: []string{"\x83\x5c", "k", "k", "b", ""}, params: 1}},
		{`SELECT *`, parsed{op: OpSelectAll}},
		{`INSERT X'6B' = 'v'`, parsed{op: OpInsert, keys: []string{"k"}, value: "v"}},
		{`SELECT 1`, parsed{notKV: true}},
		{`SELECT 'k' AS x`, parsed{notKV: true}},
		{`SELECT 'k' FROM t`, parsed{notKV: true}},
		{`SELECT @@version`, parsed{notKV: true}},
	}
	for _, tt := range tests {
		t.Run(tt.sql, func(t *testing.T) {
			st, ok, err := ParseUnambiguous(tt.sql)
			checkParsed(t, tt.sql, st, ok, err, tt.want)
		})
		if tt.want.op == OpSelect && tt.sql != `SELECT "k"` {
			// Elsewhere only double quotes make a kv SELECT.
			if _, ok, _ := Parse(tt.sql); ok {
				t.Errorf("Parse(%q) took it as kv", tt.sql)
			}
		}
	}
}

// TestParseLargeValue checks that a value of several MiB with escapes
// parses whole.
func TestParseLargeValue(t *testing.T) {
	val := strings.Repeat(`{"a":"b\n"}`, 300000)
	esc := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(val)
	st, ok, err := Parse(`INSERT "big" = "` + esc + `"`)
	if !ok || err != nil {
		t.Fatalf("Parse = %v, %v; want a statement", ok, err)
	}
	if string(st.Value) != val {
		t.Errorf("Value has %d bytes, want %d identical bytes", len(st.Value), len(val))
	}
}

func TestOpString(t *testing.T) {
	for op, want := range map[Op]string{OpInsert: "INSERT", OpSelect: "SELECT", OpDelete: "DELETE",
		OpSelectAll: "SELECT *", OpDrop: "DROP", 0: "unknown"} {
		if got := op.String(); got != want {
			t.Errorf("Op(%d).String() = %q, want %q", op, got, want)
		}
	}
}

func BenchmarkParse(b *testing.B) {
	for _, sql := range []string{
		`SELECT id, name FROM users WHERE id = 42`,
		`SELECT "some:key"`,
		`INSERT 'some:key' = '{"json":true}' TTL 60`,
	} {
		b.Run(sql, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Parse(sql)
			}
		})
	}
}
