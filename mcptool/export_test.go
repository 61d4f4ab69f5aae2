package mcptool

import "testing"

// NpmServer exposes npmServer to the tests of package mcptool_test.
func NpmServer(t *testing.T, pkg string) (node, entry string) {
	t.Helper()
	return npmServer(t, pkg)
}
