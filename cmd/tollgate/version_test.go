package main

import (
	"runtime/debug"
	"testing"
)

// --version says the release that `go install …@vX` recorded, or the
// checkout's revision, whether it was modified and the commit's date, and
// says so when the go command recorded no revision.
func TestDescribeBuild(t *testing.T) {
	t.Parallel()
	vcs := func(rev, time, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev},
			{Key: "vcs.time", Value: time}, {Key: "vcs.modified", Value: modified}}
	}
	const rev = "c0026ede6696ba43ad74ae64e40d8d3faa5bf9e7"
	for _, tc := range []struct {
		name     string
		version  string
		settings []debug.BuildSetting
		want     string
	}{
		{"go install @v0.4.0", "v0.4.0", nil, "v0.4.0 go1.26.0"},
		{"a tagged checkout", "v0.4.0", vcs(rev, "2026-12-01T19:14:02Z", "false"), "v0.4.0 (c0026ede6696, 2026-12-01) go1.26.0"},
		{"a checkout", "v0.0.0-20261201191402-c0026ede6696", vcs(rev, "2026-12-01T19:14:02Z", "false"), "devel (c0026ede6696, 2026-12-01) go1.26.0"},
		{"a modified checkout", "v0.0.0-20261201191402-c0026ede6696+dirty", vcs(rev, "2026-12-01T19:14:02Z", "true"), "devel (c0026ede6696, modified, 2026-12-01) go1.26.0"},
		{"after a tag", "v0.4.1-0.20261201191402-c0026ede6696", vcs(rev, "2026-12-01T19:14:02Z", "false"), "devel (c0026ede6696, 2026-12-01) go1.26.0"},
		{"-buildvcs=false", "(devel)", nil, "devel (no revision recorded: built with -buildvcs=false, from a Git worktree or without .git) go1.26.0"},
	} {
		bi := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/tollgate-dev/tollgate", Version: tc.version}, Settings: tc.settings}
		if got := describeBuild(bi); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
