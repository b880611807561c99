package kv

import (
	"context"
	"errors"
	"testing"
)

// FuzzParse checks that Parse never panics, that its three outcomes are
// consistent, and that whatever it accepts can be bound and executed.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`INSERT "k" = "v" TTL 60;`, `SELECT "a", "b"`, `SELECT *;`, `DROP;`, `DELETE 'k'`,
		`INSERT ? = ? TTL ?`, `SELECT ?, "x"`, `INSERT _binary'a\0' = X'00ff'`, `INSERT 0x41 = -1.5e+06`,
		`SELECT 'x'`, `SELECT "x" AS y`, `INSERT INTO t VALUES (1)`, `/* c */ select "k" -- c`,
		`INSERT "k" = "unterminated`, `INSERT "k" = N'v' /*! x */`, "INSERT `t` SET a=1", `INSERT "k"=0x`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		for _, parse := range []func(string) (*Stmt, bool, error){Parse, ParseNoBackslashEscapes, ParseUnambiguous} {
			st, ok, err := parse(sql)
			switch {
			case !ok:
				if st != nil || err != nil {
					t.Fatalf("Parse(%q) = %+v, false, %v; want nil statement and error", sql, st, err)
				}
				continue
			case err != nil:
				if st != nil || !errors.Is(err, ErrSyntax) {
					t.Fatalf("Parse(%q) = %+v, true, %v; want nil statement and a syntax error", sql, st, err)
				}
				continue
			}
			if st.Params != len(st.paramSlots) {
				t.Fatalf("Parse(%q): Params %d, %d slots", sql, st.Params, len(st.paramSlots))
			}
			args := make([][]byte, st.Params)
			for i := range args {
				args[i] = []byte("1")
			}
			bound, err := st.Bind(args)
			if err != nil {
				t.Fatalf("Parse(%q) then Bind(%d values): %v", sql, len(args), err)
			}
			Exec(context.Background(), newFakeStore(), Options{}, "", bound)
		}
	})
}
