package kv

import (
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/mycached/mycached/mysqlproxy/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Run(m)) }

// driverEscape quotes v the way go-sql-driver interpolates a []byte
// argument: _binary'...' with backslash escapes, or with doubled quotes
// only under NO_BACKSLASH_ESCAPES.
func driverEscape(v []byte, noBackslash bool) string {
	var b strings.Builder
	b.WriteString("_binary'")
	for _, c := range v {
		switch {
		case noBackslash && c == '\'':
			b.WriteString("''")
		case noBackslash:
			b.WriteByte(c)
		case c == 0:
			b.WriteString(`\0`)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c == 0x1a:
			b.WriteString(`\Z`)
		case c == '\'' || c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

// TestLiteralsMatchMariaDB checks that kv decodes each literal to the
// bytes MariaDB itself reads from it, so that a value means the same
// whether a statement is answered by kv or by MySQL.
func TestLiteralsMatchMariaDB(t *testing.T) {
	db := testenv.Shared(t).DB.AdminDB()
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	literals := []string{
		`"a\"b"`, `'it''s'`, `"x""y"`, `'say "hi"'`, `"it's"`,
		`"\0\b\n\r\t\Z\\\%\_\q\'"`, `'\"\''`, `""`, `''`,
		`X'00FF41'`, `x'6869'`, `X''`, `0xABC`, `0x00`,
		`_binary'a\0b'`, `_binary "q"`, `_binary X'41'`, `N'x'`,
		`"héllo"`, `'{"json":[1,"two"]}'`,
		driverEscape(all, false),
		driverEscape([]byte(`O'Reilly "quoted" \back\slash`), false),
	}
	for i, lit := range literals {
		t.Run(fmt.Sprintf("%02d", i), func(t *testing.T) {
			compareLiteral(t, db, lit, Parse)
		})
	}

	// The same under NO_BACKSLASH_ESCAPES, on one connection so that the
	// session's sql_mode applies.
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SET SESSION sql_mode = 'NO_BACKSLASH_ESCAPES'"); err != nil {
		t.Fatal(err)
	}
	// Leave the pooled connection as it was.
	defer conn.ExecContext(ctx, "SET SESSION sql_mode = DEFAULT")
	for i, lit := range []string{
		`'a\nb'`, `'C:\'`, `"it''s"`, `'\0'`,
		driverEscape(all, true),
	} {
		t.Run(fmt.Sprintf("NO_BACKSLASH_ESCAPES/%02d", i), func(t *testing.T) {
			compareLiteral(t, conn, lit, ParseNoBackslashEscapes)
		})
	}
}

// querier is a *sql.DB or a *sql.Conn.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// compareLiteral checks that parse reads lit as an INSERT value to the
// bytes MariaDB returns for SELECT HEX(lit).
func compareLiteral(t *testing.T, q querier, lit string, parse func(string) (*Stmt, bool, error)) {
	t.Helper()
	var want string
	if err := q.QueryRowContext(context.Background(), "SELECT HEX("+lit+")").Scan(&want); err != nil {
		t.Fatalf("MariaDB SELECT HEX(%s): %v", lit, err)
	}
	st, ok, err := parse(`INSERT 'k' = ` + lit)
	if !ok || err != nil {
		t.Fatalf("Parse(INSERT 'k' = %s) = %v, %v; want a statement", lit, ok, err)
	}
	if got := strings.ToUpper(hex.EncodeToString(st.Value)); got != want {
		t.Errorf("kv reads %s as %s, MariaDB as %s", lit, got, want)
	}
}
