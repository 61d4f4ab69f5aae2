package browsertest

import (
	"strings"
	"testing"
)

// skipped runs f as a subtest and reports whether it was skipped.
func skipped(t *testing.T, f func(t *testing.T)) bool {
	var was bool
	t.Run("sub", func(t *testing.T) {
		defer func() { was = t.Skipped() }()
		f(t)
	})
	return was
}

// TOLLGATE_TEST_BROWSER=skip skips a browser test before any browser is
// looked for or started.
func TestSkipOnPurpose(t *testing.T) {
	t.Setenv(EnvSkip, "skip")
	t.Setenv("TOLLGATE_CHROMIUM", "/nonexistent/chromium")
	var c Chrome
	if !skipped(t, func(t *testing.T) { c.Tab(t) }) {
		t.Errorf("Tab with %s=skip did not skip", EnvSkip)
	}
	if c.err != nil || c.dir != "" {
		t.Errorf("Tab with %s=skip started a browser (err %v, dir %q)", EnvSkip, c.err, c.dir)
	}
}

// Without Chromium the error says how to install it and how to skip.
func TestMissingChromiumSaysWhatToDo(t *testing.T) {
	t.Setenv("TOLLGATE_CHROMIUM", "")
	t.Setenv("PATH", t.TempDir())
	_, err := Path()
	if err == nil {
		t.Fatal("Path found a browser on an empty PATH")
	}
	for _, want := range []string{"apt-get install -y chromium", "TOLLGATE_CHROMIUM", EnvSkip + "=skip"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
