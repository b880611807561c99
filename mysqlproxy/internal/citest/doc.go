// Package citest holds the tests of the CI scripts in .ci: that the lint
// step fails on each fault it is meant to catch.
package citest
