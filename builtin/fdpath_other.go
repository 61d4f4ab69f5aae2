//go:build !linux

package builtin

import (
	"errors"
	"os"
)

// errNoFdPath says the system cannot name an open file's path.
var errNoFdPath = errors.New("the system does not name open files")

// fdPath is not available here: callers resolve the path instead.
func fdPath(*os.File) (string, error) { return "", errNoFdPath }
