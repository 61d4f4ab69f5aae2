package glob

import (
	"regexp"
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	tests := []struct {
		pattern, name string
		want          bool
	}{
		{"*", "anything", true},
		{"*", "", true},
		{"", "", true},
		{"", "x", false},
		{"Bash", "bash", true},
		{"bash", "BASH", true},
		{"mcp__github", "mcp__github__list_issues", false},
		{"mcp__GitHub__*", "mcp__github__list_issues", true},
		{"file_*", "file_read", true},
		{"file_*", "xfile_read", false},
		{"*_file", "delete_file", true},
		{"*_file", "delete_file_now", false},
		{"a*b*c", "abc", true},
		{"a*b*c", "axxbyyc", true},
		{"a*b*c", "axxbyy", false},
		{"a**b", "ab", true},
		{"file?", "file?", true},
		{"file?", "files", false},
		{"[ab]", "a", false},
		{"[ab]", "[AB]", true},
		{"a.b", "axb", false},
		{"*ab", "aab", true},
		{"*aab", "aaab", true},
		{"ÄÖ*", "äö_tool", true},
	}
	for _, tt := range tests {
		if got := Match(tt.pattern, tt.name); got != tt.want {
			t.Errorf("Match(%q, %q) = %v, want %v", tt.pattern, tt.name, got, tt.want)
		}
	}
}

func TestValid(t *testing.T) {
	for p, want := range map[string]bool{"*": true, "": false, "a\nb": false, "mcp__*": true} {
		if got := Valid(p); got != want {
			t.Errorf("Valid(%q) = %v, want %v", p, got, want)
		}
	}
}

// FuzzMatch checks Match against a regular-expression oracle built from the
// same rules: '*' is ".*", everything else literal, case folded, anchored.
func FuzzMatch(f *testing.F) {
	for _, s := range [][2]string{{"*", "x"}, {"a*b", "aXb"}, {"mcp__*", "MCP__fs__read"}, {"**a", "ba"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, name string) {
		if len(pattern) > 64 || len(name) > 64 {
			return
		}
		parts := strings.Split(pattern, "*")
		for i, p := range parts {
			parts[i] = regexp.QuoteMeta(p)
		}
		re, err := regexp.Compile("(?is)^" + strings.Join(parts, ".*") + "$")
		if err != nil {
			return
		}
		if got, want := Match(pattern, name), re.MatchString(name); got != want {
			// The oracle folds case with (?i) simple folding like Match; report
			// any disagreement.
			t.Errorf("Match(%q, %q) = %v, oracle %v", pattern, name, got, want)
		}
	})
}
