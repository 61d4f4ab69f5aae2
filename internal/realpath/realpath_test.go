package realpath_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/realpath"
)

// Links in the existing part are followed as the kernel follows them ("..")
// after a link climbs from the link's target); the missing rest is appended;
// a loop ends without failing.
func TestResolve(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "secret", "inner"), 0o755))
	must(os.Symlink("secret/inner", filepath.Join(root, "public")))
	must(os.Symlink("loop", filepath.Join(root, "loop")))
	for in, want := range map[string]string{
		root + "/public/f":      root + "/secret/inner/f",
		root + "/public/../f":   root + "/secret/f",
		root + "/public/new/x":  root + "/secret/inner/new/x",
		root + "/./secret//f":   root + "/secret/f",
		root + "/missing/../a":  root + "/a",
		root + "/loop/whatever": root + "/loop/whatever",
	} {
		if got := realpath.Resolve(in); got != want {
			t.Errorf("Resolve(%q) = %q, want %q", in, got, want)
		}
	}
}
