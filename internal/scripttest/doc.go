// Package scripttest holds the tests of the shell scripts of the test
// command (scripts/test.sh, scripts/postgres.sh); it has no code of its own.
package scripttest
