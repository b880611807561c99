package sqlinfo

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/mycached/mycached/mysqlproxy/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Run(m)) }

// TestBuiltinsAreMariaDBs: no name in builtins can be taken over by a
// stored function of the session's database. For each, a stored function
// of that name returning 4242 is created, and the name is called with one
// argument: the server must call its own function (or refuse the call),
// never the stored one. A spaceSensitive name spaced from its "(" must
// call the stored one, as callsByIdentifier assumes.
func TestBuiltinsAreMariaDBs(t *testing.T) {
	m := testenv.Shared(t).DB
	name := m.NewDatabase(t)
	db := m.AdminDB()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "USE `"+name+"`"); err != nil {
		t.Fatal(err)
	}
	call := func(fn, form string) (string, bool) {
		t.Helper()
		if _, err := conn.ExecContext(ctx, "CREATE OR REPLACE FUNCTION `"+fn+"`(x INT) RETURNS INT DETERMINISTIC RETURN 4242"); err != nil {
			t.Fatalf("create %s: %v", fn, err)
		}
		defer conn.ExecContext(ctx, "DROP FUNCTION `"+fn+"`")
		var got *string
		if err := conn.QueryRowContext(ctx, "SELECT "+form).Scan(&got); err != nil {
			return err.Error(), false
		}
		if got == nil {
			return "NULL", false
		}
		return *got, *got == "4242"
	}
	for fn := range builtins {
		if fn == "char_func" || fn == "insert_func" || fn == "default_func" {
			continue // the parser's names for CHAR(), INSERT(), DEFAULT()
		}
		if got, stored := call(fn, fn+"(1)"); stored {
			t.Errorf("%s(1) called the stored function %s (got %s): it is not MariaDB's built-in", fn, fn, got)
		}
	}
	for fn := range spaceSensitive {
		if got, stored := call(fn, fn+" (1)"); !stored {
			t.Errorf("%s (1) did not call the stored function %s: got %s", fn, fn, got)
		}
	}
}

// TestMultibyteSplitsAreMariaDBs: in the character sets whose two-byte
// characters may end in 0x5C, where a character ends decides whether a
// backslash escapes a quote. For every first byte, a text that reads a
// table only when the backslash escapes the quote is run on the server
// (an unknown table fails there) and analysed: a text the analysis reads
// must read the table exactly when the server does.
func TestMultibyteSplitsAreMariaDBs(t *testing.T) {
	m := testenv.Shared(t).DB
	db := m.AdminDB()
	ctx := context.Background()
	a := NewAnalyzer(Options{})
	checked := map[bool]int{} // readable texts, by whether the server read the table
	for _, cs := range []string{"big5", "gbk", "sjis", "cp932"} {
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.ExecContext(ctx, "SET NAMES "+cs); err != nil {
			t.Fatal(err)
		}
		for b := 0x80; b <= 0xFF; b++ {
			sql := "SELECT 'x" + string([]byte{byte(b)}) + "\\' AS a -- ' FROM mycached_no_db.t\n"
			_, err := conn.ExecContext(ctx, sql)
			serverReads := err != nil && strings.Contains(err.Error(), "1146")
			if err != nil && !serverReads {
				continue // a text the server refuses otherwise
			}
			info := a.AnalyzeIn(sql, Dialect{Charset: cs})
			if !info.Cacheable {
				continue // unreadable: never cached
			}
			if reads := len(info.Reads) > 0; reads != serverReads {
				t.Errorf("%s, first byte %#x: the analysis reads a table: %v; the server: %v", cs, b, reads, serverReads)
			}
			checked[serverReads]++
		}
		conn.Close()
	}
	if checked[false] == 0 || checked[true] == 0 {
		t.Errorf("the analysis read %d texts the server read as one string, %d as a string and a table: the test proves nothing", checked[false], checked[true])
	}
}
