package scripttest_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeAptGet logs its arguments and, on install, puts a stand-in for each
// package's program on PATH; every stand-in fails, so test.sh stops at its
// first use of one (npm ci), right after installing.
const fakeAptGet = `#!/bin/sh
echo "$*" >> "$APT_LOG"
if [ "$1" = install ]; then
  for p in "$@"; do
    case "$p" in
      nodejs) n=node ;; npm|jq|python3|chromium) n=$p ;; *) continue ;;
    esac
    printf '#!/bin/sh\nexit 1\n' > "$STUBS/$n"
    chmod +x "$STUBS/$n"
  done
fi
`

// On a machine that lacks every program the tests need, test.sh installs
// them all with one apt-get update and one apt-get install.
func TestTestCommandUpdatesPackageListsOnce(t *testing.T) {
	dir := t.TempDir()
	stubs, bin := filepath.Join(dir, "stubs"), filepath.Join(dir, "bin")
	for _, d := range []string{stubs, bin} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// Only the programs test.sh and the fake apt-get use on the way.
	for _, name := range []string{"dirname", "chmod"} {
		p, err := exec.LookPath(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(p, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(stubs, "apt-get"), []byte(fakeAptGet), 0o755); err != nil {
		t.Fatal(err)
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "apt.log")
	cmd := exec.Command(sh, filepath.Join("..", "..", "scripts", "test.sh"))
	cmd.Env = []string{"PATH=" + stubs + ":" + bin, "HOME=" + dir, "APT_LOG=" + log, "STUBS=" + stubs}
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("test.sh went on past the failing npm:\n%s", out)
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatalf("apt-get was not run: %v\n%s", err, out)
	}
	var updates, installs []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		switch strings.Fields(line)[0] {
		case "update":
			updates = append(updates, line)
		case "install":
			installs = append(installs, line)
		}
	}
	if len(updates) != 1 || len(installs) != 1 {
		t.Fatalf("apt-get ran %d updates and %d installs, want one of each:\n%s\ntest.sh said:\n%s", len(updates), len(installs), b, out)
	}
	for _, pkg := range []string{"nodejs", "npm", "jq", "python3", "chromium"} {
		if !strings.Contains(" "+installs[0]+" ", " "+pkg+" ") {
			t.Errorf("apt-get %s lacks %s", installs[0], pkg)
		}
	}
}
