package scripttest_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakePgAptGet stands in for apt-get install postgresql: it logs the
// createcluster.conf that the package's scripts would read, and installs
// server binaries that fail, so that postgres.sh stops right after.
const fakePgAptGet = `#!/bin/sh
[ "$1" = install ] || exit 0
conf=$TOLLGATE_PG_ROOT/etc/postgresql-common/createcluster.conf
cat "$conf" > "$CONF_LOG"
echo "package default" > "$TOLLGATE_PG_ROOT/usr/share/postgresql-common/createcluster.conf"
echo "set aside" > "$conf.ucf-dist"
mkdir -p "$TOLLGATE_PG_ROOT/usr/lib/postgresql/99/bin"
for p in initdb pg_ctl; do printf '#!/bin/sh\nexit 1\n' > "$TOLLGATE_PG_ROOT/usr/lib/postgresql/99/bin/$p"; chmod +x "$TOLLGATE_PG_ROOT/usr/lib/postgresql/99/bin/$p"; done
`

// installPostgres runs postgres.sh start under the fake apt-get, with the
// system's paths under root, and returns the createcluster.conf the
// package's install saw.
func installPostgres(t *testing.T, root string) string {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("postgres.sh installs PostgreSQL only as root")
	}
	stubs := t.TempDir()
	if err := os.WriteFile(filepath.Join(stubs, "apt-get"), []byte(fakePgAptGet), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "usr/share/postgresql-common"), 0o755); err != nil {
		t.Fatal(err)
	}
	confLog := filepath.Join(t.TempDir(), "conf.log")
	cmd := exec.Command("sh", filepath.Join("..", "..", "scripts", "postgres.sh"), "start", t.TempDir())
	cmd.Env = append(os.Environ(), "PATH="+stubs+":"+os.Getenv("PATH"), "TOLLGATE_PG_ROOT="+root,
		"CONF_LOG="+confLog, "TOLLGATE_APT_UPDATED=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("postgres.sh started a server with binaries that fail:\n%s", out)
	}
	b, err := os.ReadFile(confLog)
	if err != nil {
		t.Fatalf("the package was not installed: %v\n%s", err, out)
	}
	return string(b)
}

// While the package installs, createcluster.conf tells it to create no
// cluster; afterwards the file is exactly as it was found.
func TestPostgresInstallLeavesCreateclusterConfAsFound(t *testing.T) {
	root := t.TempDir()
	conf := filepath.Join(root, "etc/postgresql-common/createcluster.conf")
	if err := os.MkdirAll(filepath.Dir(conf), 0o755); err != nil {
		t.Fatal(err)
	}
	const mine = "ssl = off\n# the machine's own settings\n"
	if err := os.WriteFile(conf, []byte(mine), 0o640); err != nil {
		t.Fatal(err)
	}
	if during := installPostgres(t, root); strings.TrimSpace(during) != "create_main_cluster = false" {
		t.Errorf("during the install createcluster.conf was %q, want create_main_cluster = false", during)
	}
	b, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != mine {
		t.Errorf("after the install createcluster.conf is %q, want %q as found", b, mine)
	}
	if fi, err := os.Stat(conf); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("after the install createcluster.conf's mode is %v (%v), want 0640 as found", fi.Mode(), err)
	}
}

// On a machine without the file, it ends as the package installs it, with
// no copy set aside beside it.
func TestPostgresInstallWithoutCreateclusterConfLeavesThePackages(t *testing.T) {
	root := t.TempDir()
	conf := filepath.Join(root, "etc/postgresql-common/createcluster.conf")
	if during := installPostgres(t, root); strings.TrimSpace(during) != "create_main_cluster = false" {
		t.Errorf("during the install createcluster.conf was %q, want create_main_cluster = false", during)
	}
	b, err := os.ReadFile(conf)
	if err != nil || string(b) != "package default\n" {
		t.Errorf("after the install createcluster.conf is %q (%v), want the package's own", b, err)
	}
	if _, err := os.Stat(conf + ".ucf-dist"); !os.IsNotExist(err) {
		t.Errorf("%s.ucf-dist is left behind (%v)", conf, err)
	}
}
