package relay

import (
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// TestInert: only a SELECT or DO of constants, which can change nothing
// and leaves the diagnostics, lets a pending read of the trackers wait.
func TestInert(t *testing.T) {
	for q, want := range map[string]bool{
		"SELECT 1":                 true,
		"select 1":                 true,
		"  SELECT 1+1, (2*3) % 4;": true,
		"DO 1":                     true,
		"SELECT 'a b', 1.5 >= 2":   true,
		"SELECT 1 AS ok":           false,
		"SELECT f(1)":              false,
		"SELECT @x := 1":           false,
		"SELECT @@time_zone":       false,
		`SELECT 'a\' , f() -- '`:   false,
		"SELECT 1 -- x":            false,
		"SELECT 1 /*! , f() */":    false,
		"SELECT 1; SET @a = 1":     false,
		"SELECT `x`":               false,
		`SELECT "x"`:               false,
		"DO SLEEP(1)":              false,
		"SELECT 1 FROM t":          false,
		"SELECTX 1":                false,
		"SHOW WARNINGS":            false,
		"SELECT 1 UNION SELECT 2":  false,
		"SELECT 'unterminated":     false,
	} {
		if got := Inert(append([]byte{mysql.COM_QUERY}, q...)); got != want {
			t.Errorf("Inert(%q) = %v, want %v", q, got, want)
		}
	}
}
