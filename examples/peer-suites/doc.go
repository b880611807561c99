// Package peersuites holds the test that runs a short slice of other
// projects' MySQL test suites (MariaDB's mysql-test-run and
// go-sql-driver/mysql's own tests) directly and through mycached. The full
// runs are run.sh, described in README.md.
package peersuites
