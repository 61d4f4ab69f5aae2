package proc

import (
	"slices"
	"strings"
)

// DefaultEnvAllow returns the names of the environment variables a spawned
// process inherits unless told otherwise: what programs need to find each
// other, speak the user's language and draw on a terminal. A name ending in
// '*' is a prefix (LC_* covers LC_ALL, LC_CTYPE, ...). Provider keys
// (OPENAI_API_KEY, ANTHROPIC_API_KEY, ...), credentials of every other kind and
// tollgate's own TOLLGATE_* variables are not in it. The slice is fresh.
func DefaultEnvAllow() []string {
	return []string{
		"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "LC_*",
		"TERM", "COLORTERM", "NO_COLOR", "TZ", "TMPDIR",
	}
}

// Env returns the entries of environ ("NAME=value", as from os.Environ) whose
// name is in [DefaultEnvAllow] or in pass, in their order. pass names
// variables a caller wants passed on top (exact names, or prefixes ending in
// '*'); only a name given there passes a TOLLGATE_* variable or a key. An entry
// without '=' is dropped. The result never aliases environ.
func Env(environ []string, pass []string) []string {
	allow := DefaultEnvAllow()
	out := make([]string, 0, len(allow))
	for _, kv := range environ {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			continue
		}
		if matchName(pass, name) || (!strings.HasPrefix(name, "TOLLGATE_") && matchName(allow, name)) {
			out = append(out, kv)
		}
	}
	return slices.Clip(out)
}

// matchName reports whether name is one of names, or starts with one of them
// that ends in '*'.
func matchName(names []string, name string) bool {
	for _, n := range names {
		if p, ok := strings.CutSuffix(n, "*"); ok {
			if strings.HasPrefix(name, p) {
				return true
			}
		} else if n == name {
			return true
		}
	}
	return false
}
