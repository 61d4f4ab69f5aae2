package declarative

import "testing"

// TestMatcher pins the Matcher type's semantics (C12); the glob itself, its
// compiled form and its fuzz tests live in package internal/glob.
func TestMatcher(t *testing.T) {
	tests := []struct {
		pattern Matcher
		tool    string
		want    bool
	}{
		// C12: case-insensitive, no implicit prefix.
		{"Bash", "bash", true},
		{"bash", "BASH", true},
		{"mcp__github", "mcp__github__list_issues", false},
		{"mcp__GitHub__*", "mcp__github__list_issues", true},
		{"mcp__github__*", "mcp__github", false},
		{"file_*", "file_read", true},
		{"file_*", "file_", true},
		{"file_*", "read_file", false},
		{"*_file", "read_file", true},
		{"*", "", true},
		{"*", "anything", true},
		{MatchAll, "x", true},
		{"", "anything", true}, // no matcher
		{"**", "abc", true},
		{"a*b*c", "aXXbYYc", true},
		{"a*b*c", "aXXbYY", false},
		{"a*a*a", "aaa", true},
		{"a*a*a", "aa", false},
		{"*ab", "aab", true},
		// Every other character is literal.
		{"file.read", "fileXread", false},
		{"file.read", "file.read", true},
		{"file?", "files", false},
		{"file?", "file?", true},
		{"[ab]", "a", false},
		{"[ab]", "[AB]", true},
		{"f(x)", "f(x)", true},
		{`a\*`, `a\anything`, true},
		{`a\b`, `a\b`, true},
		{"^bash$", "bash", false},
		// Unicode case folding.
		{"Kelvin", "\u212aelvin", true},
		{"STRASSE", "stra\u017f\u017fe", true},
		{"ÉTÉ", "été", true},
		{"été*", "ÉTÉ_x", true},
		{"x", "\xff", false},
		{"\xff", "\xff", true},
		{"\xfe", "\xff", false},
	}
	for _, tt := range tests {
		if got := tt.pattern.match(tt.tool); got != tt.want {
			t.Errorf("Matcher(%q).Match(%q) = %v, want %v", tt.pattern, tt.tool, got, tt.want)
		}
	}
}
