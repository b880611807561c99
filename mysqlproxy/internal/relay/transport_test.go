package relay

import "testing"

// TestRequiresTLS reads SHOW CREATE USER's statement for a REQUIRE
// clause, not the words of its quoted strings and names.
func TestRequiresTLS(t *testing.T) {
	for _, tc := range []struct {
		create string
		want   bool
	}{
		{"CREATE USER `u`@`%` IDENTIFIED BY PASSWORD '*D821809F681A40A6E379B50D0463EFAE20BDD122'", false},
		{"CREATE USER `u`@`%` IDENTIFIED BY PASSWORD '*D821809F681A40A6E379B50D0463EFAE20BDD122' REQUIRE SSL", true},
		{"CREATE USER `u`@`%` REQUIRE X509", true},
		{"CREATE USER `u`@`%` REQUIRE ISSUER '/CN=ca' AND SUBJECT '/CN=u'", true},
		{"CREATE USER `u`@`%` REQUIRE CIPHER 'TLS_AES_256_GCM_SHA384' WITH MAX_QUERIES_PER_HOUR 5", true},
		{"CREATE USER `u`@`%` REQUIRE NONE", false},
		{"CREATE USER `a REQUIRE SSL`@`%` IDENTIFIED VIA pam USING 'x REQUIRE SSL'", false},
		{"CREATE USER `u`@`%` IDENTIFIED VIA pam USING 'it\\' REQUIRE SSL'", false},
		{"CREATE USER `u`@`%` WITH MAX_USER_CONNECTIONS 2 PASSWORD EXPIRE", false},
	} {
		if got := requiresTLS(tc.create); got != tc.want {
			t.Errorf("requiresTLS(%q) = %v, want %v", tc.create, got, tc.want)
		}
	}
}
