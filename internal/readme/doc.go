// Package readme weaves the repository's README.md from README.src.md, so
// that every Go program on the front page is one that builds, runs and is
// tested: a line "%include PATH" (PATH relative to this directory) is
// replaced by that file, a Go file from its package clause on.
//
// The programs live under this directory (library/). After changing them or
// README.src.md, write README.md with
//
//	go test ./internal/readme -update
//
// The package's test fails when README.md is not the weave of its sources.
package readme
