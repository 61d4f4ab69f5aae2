package proc

import "strings"

// refusals are the texts of the errors a confined process meets when the
// sandbox refuses it (EACCES, EPERM and EROFS as libc and the shells
// print them).
var refusals = []string{"Permission denied", "Operation not permitted", "Read-only file system"}

// Refused reports whether a process's output shows that something it did
// was refused by the operating system: for a process that ran in the
// sandbox, the likely refuser, which a failure's message then names.
func Refused(output string) bool {
	for _, r := range refusals {
		if strings.Contains(output, r) {
			return true
		}
	}
	return false
}
