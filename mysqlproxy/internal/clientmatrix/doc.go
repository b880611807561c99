// Package clientmatrix checks that real MySQL and MariaDB clients cannot
// tell mycached from the MariaDB server behind it.
//
// The package holds tests only. Each client (the mariadb command-line
// client, PyMySQL, mysqlclient, PHP's mysqli and PDO, Ruby's mysql2,
// Perl's DBD::MariaDB, node's mysql and MariaDB Connector/J) runs a small
// driver program from testdata over one case list (testdata/cases.json):
// once directly against MariaDB, once through a caching mycached and once
// through a passthrough one. Each driver prints a transcript of what its
// client saw, one JSON line per step, and the test compares the
// transcripts case by case. Every difference must be listed, with its
// cause, in the known-differences table (known_test.go), and every listed
// difference must still occur, so the table says what is true today.
//
// A client that hangs is killed after a while and the hang recorded; a
// case whose client dies mid-statement is watched from the server's
// process list.
//
// The clients come from Debian packages that `make deps` installs; a
// missing one fails the test. To read every transcript, including those
// of cases that do not differ:
//
//	go test ./mysqlproxy/internal/clientmatrix -args -clientmatrix.dump=/tmp/transcripts
package clientmatrix
