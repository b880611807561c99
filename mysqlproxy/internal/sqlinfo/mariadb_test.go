package sqlinfo

import (
	"context"
	"os"
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
