// Package hibernate2lc holds the test of the Hibernate example: a Java
// application on Hibernate 3.6 that runs the same workload with no
// second-level cache, with Ehcache, and through mycached, and reports
// what MariaDB executed and whether any read returned stale data. The
// application and its runner, run.sh, are described in README.md.
package hibernate2lc
