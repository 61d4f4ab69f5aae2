package tool

import "testing"

func TestHintsString(t *testing.T) {
	for _, tc := range []struct {
		h    *Hints
		want string
	}{
		{nil, "unknown"},
		{&Hints{}, "mutating"},
		{&Hints{ReadOnly: true, Destructive: true, Idempotent: true}, "read-only,idempotent"},
		{&Hints{Destructive: true, OpenWorld: true}, "destructive,open-world"},
	} {
		if got := tc.h.String(); got != tc.want {
			t.Errorf("%+v.String() = %q, want %q", tc.h, got, tc.want)
		}
	}
}

func TestSanitizeName(t *testing.T) {
	long := ""
	for i := 0; i < 70; i++ {
		long += "a"
	}
	for in, want := range map[string]string{
		"read":                 "read",
		"mcp.fs/read file":     "mcp_fs_read_file",
		"":                     "_",
		"é":                    "__",
		long:                   long[:64],
		"ok-name_1":            "ok-name_1",
		"mcp__GitHub__list_it": "mcp__GitHub__list_it",
	} {
		if got := SanitizeName(in); got != want {
			t.Errorf("SanitizeName(%q) = %q, want %q", in, got, want)
		}
		if !ValidName(SanitizeName(in)) {
			t.Errorf("SanitizeName(%q) is not a valid name", in)
		}
	}
}
