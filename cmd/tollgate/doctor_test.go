package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// doctor says, before the sandbox, where runs are stored and whether that
// works, which providers' keys are set (never their values), and which
// Node.js MCP servers would run with; an unusable state directory fails it.
func TestDoctorChecksWhatARunNeeds(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	const key = "sk-doctor-secret-42"
	vars := map[string]string{envStoreURL: "", "OPENAI_API_KEY": key, "OPENROUTER_API_KEY": "", "ANTHROPIC_API_KEY": ""}

	vars[envStateDir] = filepath.Join(dir, "fresh")
	_, out, errOut := tgMainIn(t, "", vars, "doctor")
	for _, want := range []string{
		"state: " + filepath.Join(dir, "fresh") + " (made by the first run",
		"keys: OPENAI_API_KEY set; OPENROUTER_API_KEY, ANTHROPIC_API_KEY not set",
		"node: ",
		"sandbox: ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor's output lacks %q:\n%s%s", want, out, errOut)
		}
	}
	if strings.Contains(out+errOut, key) {
		t.Errorf("doctor printed the key:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "fresh")); err == nil {
		t.Error("doctor made the state directory")
	}

	vars[envStateDir] = file
	code, out, errOut := tgMainIn(t, "", vars, "doctor")
	if code != exitError || !strings.Contains(out, "state: "+file+": not a directory") {
		t.Errorf("doctor with a file for state directory: exit %d\n%s%s", code, out, errOut)
	}
}
