package main

import (
	"regexp"
	"runtime/debug"
	"strings"
)

// version describes this build from its Go build information
// (runtime/debug.ReadBuildInfo): the module version that `go install
// …@vX.Y.Z` records, or "devel" for a build from a checkout; the VCS
// revision, "modified" and the commit's date when the go command recorded
// them; and the Go version. For example "v0.4.0 go1.26.0",
// "devel (c0026ede6696, modified, 2026-12-01) go1.26.0".
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown (no build information)"
	}
	return describeBuild(bi)
}

// pseudoVersion matches the end of a Go pseudo-version
// (v0.0.0-20261201191716-1e4bfd095389), which the go command makes from
// the commit of a checkout: its revision and date are said apart, readably.
var pseudoVersion = regexp.MustCompile(`-(\d+\.)?\d{14}-[0-9a-f]{12}$`)

// describeBuild is [version] for bi. The go command records no revision
// for a build with -buildvcs=false (in GOFLAGS too), nor from a Git
// worktree (its .git is a file) or a copy without .git; that is said.
func describeBuild(bi *debug.BuildInfo) string {
	v := strings.TrimSuffix(bi.Main.Version, "+dirty")
	if v == "" || v == "(devel)" || pseudoVersion.MatchString(v) {
		v = "devel"
	}
	var rev, when string
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when, _, _ = strings.Cut(s.Value, "T")
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	var notes []string
	if rev != "" {
		notes = append(notes, rev[:min(len(rev), 12)])
		if modified {
			notes = append(notes, "modified")
		}
		if when != "" {
			notes = append(notes, when)
		}
	} else if v == "devel" {
		notes = append(notes, "no revision recorded: built with -buildvcs=false, from a Git worktree or without .git")
	}
	if len(notes) > 0 {
		v += " (" + strings.Join(notes, ", ") + ")"
	}
	return v + " " + bi.GoVersion
}
