package sqlinfo

import (
	"slices"
	"testing"
)

// TestDialect checks that texts are read as the server reads them under
// the session's sql_mode and client charset: a string in one dialect may
// be an identifier, or hide a table, in another.
func TestDialect(t *testing.T) {
	gbk := func(s string) string { return s } // the bytes are written out below
	cases := []struct {
		name  string
		d     Dialect
		sql   string
		kind  Kind
		reads []string
		write []string
		// cacheable, and whether the write may touch any table
		cacheable, global bool
	}{
		{"default", Dialect{}, `SELECT a FROM t1 WHERE b = 'x\' UNION SELECT c FROM t2 -- '`, Select, []string{"t1"}, nil, true, false},
		// Under NO_BACKSLASH_ESCAPES the string ends at the second quote,
		// and t2 is read.
		{"nbe hides a table", Dialect{NoBackslashEscapes: true}, `SELECT a FROM t1 WHERE b = 'x\' UNION SELECT c FROM t2 -- '`, Select, []string{"t1", "t2"}, nil, true, false},
		{"nbe widens an update", Dialect{NoBackslashEscapes: true}, `UPDATE t1 SET a = 'x\' WHERE id = 1; UPDATE t2 SET b = 1 -- '`, Update, []string{"t1", "t2"}, []string{"t1", "t2"}, false, false},
		// Under ANSI_QUOTES "t2" is a table.
		{"ansi quotes", Dialect{ANSIQuotes: true}, `SELECT * FROM "t2"`, Select, []string{"t2"}, nil, true, false},
		{"ansi quotes off", Dialect{}, `SELECT * FROM "t2"`, Select, nil, nil, false, false},
		// In gbk, 0xD5 0x5C is one character: the backslash escapes
		// nothing, so the string ends and t2 is read.
		{"gbk trail backslash", Dialect{Charset: "gbk"}, gbk("SELECT a FROM t1 WHERE b = '\xd5\\' UNION SELECT c FROM t2 -- '"), Select, []string{"t1", "t2"}, nil, true, false},
		{"gbk ascii", Dialect{Charset: "gbk"}, `SELECT a FROM t1 WHERE id = 1`, Select, []string{"t1"}, nil, true, false},
		{"sjis trail backslash", Dialect{Charset: "sjis"}, "UPDATE t1 SET a = '\x95\\' WHERE id = 1; UPDATE t2 SET b = 2 -- '", Update, []string{"t1", "t2"}, []string{"t1", "t2"}, false, false},
		{"big5 trail backslash", Dialect{Charset: "big5"}, "SELECT a FROM t1 WHERE b = '\xa5\\' UNION SELECT c FROM t2 -- '", Select, []string{"t1", "t2"}, nil, true, false},
		// A latin1 identifier is the server's UTF-8 name.
		{"latin1 identifier", Dialect{Charset: "latin1"}, "UPDATE `t\xe0ble` SET a = 1", Update, []string{"t\u00e0ble"}, []string{"t\u00e0ble"}, false, false},
		{"latin1 select", Dialect{Charset: "latin1"}, "SELECT * FROM `t\xe0ble`", Select, []string{"t\u00e0ble"}, nil, true, false},
		// Bytes that are no character of the charset: unreadable.
		{"gbk broken", Dialect{Charset: "gbk"}, "UPDATE t1 SET a = '\x81' WHERE id = 1", Update, nil, nil, false, true},
		{"gbk broken select", Dialect{Charset: "gbk"}, "SELECT a FROM t1 WHERE b = '\x81'", Select, nil, nil, false, false},
		{"unknown charset", Dialect{Charset: "tis620"}, "UPDATE t1 SET a = '\xe0'", Update, nil, nil, false, true},
		// Lead bytes of Go's big5 (HKSCS) that the server's big5 does
		// not have: the server reads 0x88 alone, and the backslash
		// escapes the quote. Such a text is unreadable.
		{"big5 hkscs lead", Dialect{Charset: "big5"}, "SELECT 'a\x88\\' AS a, ' AS b, (SELECT COUNT(*) FROM t2) AS n -- '", Select, nil, nil, false, false},
		{"big5 hkscs lead fa", Dialect{Charset: "big5"}, "UPDATE t1 SET a = 'z\xfa\\' WHERE id = 2 -- ', a = 1 WHERE id = 1 -- '", Update, nil, nil, false, true},
		{"big5 hkscs lead ascii trail", Dialect{Charset: "big5"}, "SELECT a FROM t1 WHERE b = '\x88A'", Select, nil, nil, false, false},
		// sjis's half-width katakana are one byte: 0xB1 0x5C is a
		// character and a backslash.
		{"sjis katakana then backslash", Dialect{Charset: "sjis"}, "SELECT a FROM t1 WHERE b = '\xb1\\' UNION SELECT c FROM t2 -- '", Select, []string{"t1"}, nil, true, false},
		{"unknown dialect ascii", Dialect{Unknown: true}, "ALTER TABLE t1 ADD c INT", DDL, nil, []string{"t1"}, false, false},
		{"unknown dialect quote", Dialect{Unknown: true}, `ALTER TABLE "t1" ADD c INT`, DDL, nil, nil, false, true},
	}
	a := NewAnalyzer(Options{})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			info := a.AnalyzeIn(c.sql, c.d)
			if info.Kind != c.kind {
				t.Errorf("kind %v, want %v", info.Kind, c.kind)
			}
			if got := names(info.Reads); !slices.Equal(got, c.reads) {
				t.Errorf("reads %v, want %v", got, c.reads)
			}
			if got := names(info.Writes); !slices.Equal(got, c.write) {
				t.Errorf("writes %v, want %v", got, c.write)
			}
			if info.Cacheable != c.cacheable {
				t.Errorf("cacheable %v (%s), want %v", info.Cacheable, info.WhyNot, c.cacheable)
			}
			if info.Global != c.global {
				t.Errorf("global %v, want %v", info.Global, c.global)
			}
		})
	}
}

func names(ts []Table) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.String())
	}
	return out
}

func TestDialectOf(t *testing.T) {
	for _, c := range []struct {
		mode, cs string
		want     Dialect
	}{
		{"STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO", "utf8mb4", Dialect{Charset: "utf8mb4"}},
		{"REAL_AS_FLOAT,PIPES_AS_CONCAT,ANSI_QUOTES,IGNORE_SPACE,ANSI", "latin1", Dialect{ANSIQuotes: true, Charset: "latin1"}},
		{"'no_backslash_escapes'", "'GBK'", Dialect{NoBackslashEscapes: true, Charset: "gbk"}},
		{"ANSI", "", Dialect{ANSIQuotes: true}},
		{"NO_BACKSLASH_ESCAPES_X", "", Dialect{}},
	} {
		if got := DialectOf(c.mode, c.cs); got != c.want {
			t.Errorf("DialectOf(%q, %q) = %+v, want %+v", c.mode, c.cs, got, c.want)
		}
	}
}

// TestNoSchemaDialect: for a client with CLIENT_NO_SCHEMA, a text that
// may qualify a name is neither cached nor mapped to the tables it names;
// one that cannot reads as usual.
func TestNoSchemaDialect(t *testing.T) {
	a := NewAnalyzer(Options{})
	d := Dialect{NoSchema: true}
	if info := a.AnalyzeIn("SELECT v FROM d2.t WHERE id = 1", d); info.Cacheable {
		t.Errorf("qualified read is cacheable: %+v", info)
	}
	if info := a.AnalyzeIn("UPDATE d2.t SET v = 1 WHERE id = 1", d); !info.Global {
		t.Errorf("qualified write does not invalidate everything: %+v", info)
	}
	if info := a.AnalyzeIn("SELECT v FROM t WHERE id = 1", d); !info.Cacheable || len(info.Reads) != 1 {
		t.Errorf("unqualified read: %+v", info)
	}
}
