package sqlinfo

import (
	"strings"
	"testing"
)

// The cases' readings are MariaDB 10.11.19's: each "want" is the code the
// server ran for the text, as checked against a real server ("" where it
// refused the text or where the reading is not certain).
func TestExecView(t *testing.T) {
	const ver = 101119
	cases := []struct{ in, want string }{
		{"SELECT 1 /*!100000 +1 */", "SELECT 1 +1"},
		{"SELECT 1 /*!10000 +1 */", "SELECT 1 +1"},
		{"SELECT 1 /*!12345 +1 */", "SELECT 1 +1"},
		{"SELECT 1 /*!00000 +1 */", "SELECT 1 +1"},
		{"SELECT 1 /*!50699 +1 */", "SELECT 1 +1"},
		{"SELECT 1 /*!50700 +1 */", "SELECT 1"},
		{"SELECT 1 /*!80000 +1 */", "SELECT 1"},
		{"SELECT 1 /*!99999 +1 */", "SELECT 1"},
		{"SELECT 1 /*!050700 +1 */", "SELECT 1"},
		{"SELECT 1 /*!101119 +1 */", "SELECT 1 +1"},
		{"SELECT 1 /*!101120 +1 */", "SELECT 1"},
		{"SELECT 1 /*M!101120 +1 */", "SELECT 1"},
		{"SELECT 1 /*M!100000 +1 */", "SELECT 1 +1"},
		{"SELECT 1 /*M!999999 +1 */", "SELECT 1"},
		{"SELECT 1 /*M!99999 +1 */", "SELECT 1 +1"},
		{"SELECT 1 /*M!50700 +1 */", "SELECT 1 +1"},
		{"SELECT 1 /*M!080000 +1 */", "SELECT 1 +1"},
		{"SELECT 1 /*M! +1 */", "SELECT 1 +1"},
		{"SELECT 1 /*! +1 */", "SELECT 1 +1"},
		{"SELECT 1 /*!+1 */", "SELECT 1 +1"},
		{"SELECT 1 /*!1234 +1 */", "SELECT 1 1234 +1"},
		{"SELECT 1 /*!1000001 */", "SELECT 1 1"},
		{"SELECT 1 /*T! +1 */", "SELECT 1"},
		{"SELECT 1 /*m! +1 */", "SELECT 1 /*m! +1 */"},
		{"SELECT 1 /*!+1 /* x */ +1 */", "SELECT 1 +1 /* x */ +1"},
		{"SELECT 1 /*!99999 +1 /* x */ +1 */", "SELECT 1"},
		{"SELECT 1 /*!99999 /* */ */ +1", "SELECT 1 +1"},
		{"SELECT 1 /*! + '*/' */", "SELECT 1 + '*/'"},
		{"SELECT 1 /*!99999 +1 */ + 1", "SELECT 1 + 1"},
		{"SELECT '/*!' /*! +1 */", "SELECT '/*!' +1"},
		{"SELECT 'it''s /*!' /*! +1 */", "SELECT 'it''s /*!' +1"},
		{`SELECT 'a\' /*!' /*! +1 */`, `SELECT 'a\' /*!' +1`},
		{"SELECT v FROM t1 WHERE id = 1 /*M! UNION ALL SELECT v FROM t2 */", "SELECT v FROM t1 WHERE id = 1 UNION ALL SELECT v FROM t2"},
		{"UPDATE t SET v = 1 /*!99999 WHERE id = 1 */", "UPDATE t SET v = 1"},
		{"SELECT 1 # /*!\n", "SELECT 1 # /*!"},
		// Not certain, or refused by the server:
		{"SELECT 1 /*!50000 /*!50000 +1 */ +1 */", ""},
		{"SELECT 1 /*! +1 -- x */", ""},
		{"SELECT 1 /*! +1", ""},
		{"SELECT 1 /*!99999 /* /* */ */ +1 */", ""},
		{"SELECT 1 /*!99999 +1", ""},
		{"SELECT 1 /*! +1 */ /* open", ""},
	}
	for _, c := range cases {
		got, ok := execView(c.in, ver, true)
		if len(got) != len(c.in) && ok {
			t.Errorf("execView(%q) changed the length: %q", c.in, got)
		}
		if !ok {
			got = ""
		}
		if g := strings.Join(strings.Fields(got), " "); g != c.want {
			t.Errorf("execView(%q) = %q, want %q", c.in, g, c.want)
		}
	}
	// Without the server's version, a versioned comment is not certain.
	if _, ok := execView("SELECT 1 /*!50000 +1 */", 0, true); ok {
		t.Error("a versioned comment read without the server's version")
	}
	if got, ok := execView("SELECT 1 /*! +1 */", 0, true); !ok || strings.Join(strings.Fields(got), " ") != "SELECT 1 +1" {
		t.Errorf("an unversioned comment without the server's version: %q %v", got, ok)
	}
	// Under NO_BACKSLASH_ESCAPES a backslash ends nothing.
	if got, ok := execView(`SELECT 'a\' /*! +1 */`, ver, false); !ok || strings.Join(strings.Fields(got), " ") != `SELECT 'a\' +1` {
		t.Errorf("NO_BACKSLASH_ESCAPES: %q %v", got, ok)
	}
}

func TestParseServerVersion(t *testing.T) {
	for in, want := range map[string]int{
		"5.5.5-10.11.19-MariaDB-0+deb12u1": 101119,
		"10.11.19-MariaDB":                 101119,
		"11.4.2-MariaDB-log":               110402,
		"8.0.36":                           80036,
		"5.7.44-log":                       50744,
		"":                                 0,
		"MariaDB":                          0,
		"10.x":                             0,
	} {
		if got := ParseServerVersion(in); got != want {
			t.Errorf("ParseServerVersion(%q) = %d, want %d", in, got, want)
		}
	}
}

// A write whose WHERE only the server skips is not read as a keyed write,
// and a read's comment-hidden table is a dependency.
func TestAnalyzeExecComments(t *testing.T) {
	serverVersion.Store(101119)
	a := NewAnalyzer(Options{})
	info := a.Analyze("UPDATE t SET v = 1 /*!99999 WHERE id = 1 */")
	if info.Point != nil {
		t.Errorf("skipped WHERE read as a point write: %+v", info.Point)
	}
	info = a.Analyze("SELECT v FROM t1 WHERE id = 1 /*M! UNION ALL SELECT v FROM t2 */")
	found := false
	for _, tb := range info.Reads {
		if tb.Name == "t2" {
			found = true
		}
	}
	if !found {
		t.Errorf("comment-hidden table not read: %+v", info.Reads)
	}
	// The same text without the comment, analysed after, keeps its own.
	info = a.Analyze("SELECT v FROM t1 WHERE id = 1")
	for _, tb := range info.Reads {
		if tb.Name == "t2" {
			t.Errorf("plain text got the commented text's tables: %+v", info.Reads)
		}
	}
}
