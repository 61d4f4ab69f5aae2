package proc

import (
	"slices"
	"testing"
)

func TestEnvKeepsOnlyTheAllowlist(t *testing.T) {
	environ := []string{
		"PATH=/usr/bin", "HOME=/home/a", "LANG=C.UTF-8", "LC_CTYPE=C", "TERM=xterm",
		"OPENAI_API_KEY=sk-secret", "ANTHROPIC_API_KEY=ak-secret", "AWS_SECRET_ACCESS_KEY=x",
		"TOLLGATE_STATE=internal", "TOLLGATE_TOOL=bash", "GITHUB_TOKEN=ghp", "noequals", "=x",
	}
	got := Env(environ, nil)
	want := []string{"PATH=/usr/bin", "HOME=/home/a", "LANG=C.UTF-8", "LC_CTYPE=C", "TERM=xterm"}
	if !slices.Equal(got, want) {
		t.Errorf("Env(nil) = %q, want %q", got, want)
	}
	got = Env(environ, []string{"GITHUB_TOKEN", "TOLLGATE_TOOL", "AWS_*"})
	want = []string{"PATH=/usr/bin", "HOME=/home/a", "LANG=C.UTF-8", "LC_CTYPE=C", "TERM=xterm", "AWS_SECRET_ACCESS_KEY=x", "TOLLGATE_TOOL=bash", "GITHUB_TOKEN=ghp"}
	if !slices.Equal(got, want) {
		t.Errorf("Env(pass) = %q, want %q", got, want)
	}
	// A TOLLGATE_ name passes only when named exactly, never through the
	// allowlist's patterns.
	if got := Env([]string{"TOLLGATE_X=1"}, []string{"TOLLGATE_Y"}); len(got) != 0 {
		t.Errorf("TOLLGATE_X passed: %q", got)
	}
}
