package glob

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// tests are checked against Match and against Compile(pattern).Match.
var tests = []struct {
	pattern, name string
	want          bool
}{
	{"*", "anything", true},
	{"*", "", true},
	{"**", "abc", true},
	{"", "", true},
	{"", "x", false},
	{"", "é", false},
	// C12: case-insensitive, no implicit prefix.
	{"Bash", "bash", true},
	{"bash", "BASH", true},
	{"mcp__github", "mcp__github__list_issues", false},
	{"mcp__GitHub__*", "mcp__github__list_issues", true},
	{"mcp__github__*", "mcp__github", false},
	{"file_*", "file_read", true},
	{"file_*", "file_", true},
	{"file_*", "xfile_read", false},
	{"file_*", "read_file", false},
	{"*_file", "delete_file", true},
	{"*_file", "delete_file_now", false},
	{"a*b*c", "abc", true},
	{"a*b*c", "axxbyyc", true},
	{"a*b*c", "aXXbYYc", true},
	{"a*b*c", "axxbyy", false},
	{"a**b", "ab", true},
	{"a*a*a", "aaa", true},
	{"a*a*a", "aa", false},
	{"*ab", "aab", true},
	{"*aab", "aaab", true},
	// Every other character is literal.
	{"file.read", "fileXread", false},
	{"file.read", "file.read", true},
	{"a.b", "axb", false},
	{"file?", "file?", true},
	{"file?", "files", false},
	{"[ab]", "a", false},
	{"[ab]", "[AB]", true},
	{"f(x)", "f(x)", true},
	{`a\*`, `a\anything`, true},
	{`a\b`, `a\b`, true},
	{"^bash$", "bash", false},
	// Unicode simple case folding.
	{"ÄÖ*", "äö_tool", true},
	{"Kelvin", "\u212aelvin", true},
	{"STRASSE", "stra\u017f\u017fe", true},
	{"ÉTÉ", "été", true},
	{"été*", "ÉTÉ_x", true},
	{"\u0130", "i", false}, // İ has no simple fold to i
	// Bytes that are not UTF-8 match only themselves.
	{"x", "\xff", false},
	{"\xff", "\xff", true},
	{"\xfe", "\xff", false},
	{"\ufffd", "\xff", false},
}

func TestMatch(t *testing.T) {
	for _, tt := range tests {
		if got := Match(tt.pattern, tt.name); got != tt.want {
			t.Errorf("Match(%q, %q) = %v, want %v", tt.pattern, tt.name, got, tt.want)
		}
	}
}

func TestCompile(t *testing.T) {
	for _, tt := range tests {
		p := Compile(tt.pattern)
		if got := p.Match(tt.name); got != tt.want {
			t.Errorf("Compile(%q).Match(%q) = %v, want %v", tt.pattern, tt.name, got, tt.want)
		}
		n := NewName(tt.name)
		if f := p.Filter(); !f.Pass(&n) && tt.want {
			t.Errorf("Compile(%q).Filter() rejects %q, which matches", tt.pattern, tt.name)
		}
		if p.String() != tt.pattern || n.String() != tt.name {
			t.Errorf("String() = %q, %q; want %q, %q", p.String(), n.String(), tt.pattern, tt.name)
		}
	}
	var zero Pattern
	if !zero.Match("") || zero.Match("x") {
		t.Error("the zero Pattern must match only the empty name")
	}
}

func TestValid(t *testing.T) {
	for p, want := range map[string]bool{"*": true, "": false, "a\nb": false, "mcp__*": true} {
		if got := Valid(p); got != want {
			t.Errorf("Valid(%q) = %v, want %v", p, got, want)
		}
	}
}

// TestNoAllocs pins the zero-allocation matching that the declarative
// registry's benchmark target depends on.
func TestNoAllocs(t *testing.T) {
	p := Compile("mcp__GitHub__*_issues")
	u := Compile("ÉTÉ*")
	allocs := testing.AllocsPerRun(100, func() {
		p.Match("mcp__github__list_issues")
		p.Match("file_write")
		u.Match("été_x")
		Match("a*b*c", "axxbyyc")
	})
	if allocs != 0 {
		t.Errorf("matching allocates %v times per run, want 0", allocs)
	}
}

// globRegexp is the reference: the glob turned into an anchored,
// case-insensitive regexp ('*' is ".*", everything else literal).
func globRegexp(p string) *regexp.Regexp {
	parts := strings.Split(p, "*")
	for i := range parts {
		parts[i] = regexp.QuoteMeta(parts[i])
	}
	return regexp.MustCompile(`(?is)\A` + strings.Join(parts, ".*") + `\z`)
}

// FuzzMatch checks Match against the regular-expression reference built from
// the same rules, for valid UTF-8 (the reference has no byte semantics).
func FuzzMatch(f *testing.F) {
	for _, s := range [][2]string{{"*", "x"}, {"a*b", "aXb"}, {"mcp__*", "MCP__fs__read"}, {"**a", "ba"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, name string) {
		if len(pattern) > 64 || len(name) > 64 {
			return
		}
		if !utf8.ValidString(pattern) || !utf8.ValidString(name) {
			return
		}
		if got, want := Match(pattern, name), globRegexp(pattern).MatchString(name); got != want {
			t.Errorf("Match(%q, %q) = %v, reference %v", pattern, name, got, want)
		}
	})
}

// FuzzMatcher checks the compiled form: it agrees with Match on any bytes, its
// filter never rejects a name that matches, and on valid UTF-8 it agrees with
// the regular-expression reference.
func FuzzMatcher(f *testing.F) {
	for _, s := range [][2]string{
		{"Bash", "bash"}, {"mcp__github", "mcp__github__list_issues"}, {"mcp__GitHub__*", "mcp__github__x"},
		{"a*b*c", "abbbc"}, {"*", ""}, {"", "x"}, {"k*", "\u212a"}, {"*s", "\u017f"}, {"a.b", "axb"},
		{"*a*a*a*", "aaaa"}, {"[x]", "[X]"}, {"ÉTÉ*", "été"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, name string) {
		p := Compile(pattern)
		got := p.Match(name)
		if want := Match(pattern, name); got != want {
			t.Fatalf("Compile(%q).Match(%q) = %v, Match %v", pattern, name, got, want)
		}
		n := NewName(name)
		if f := p.Filter(); got && !f.Pass(&n) {
			t.Fatalf("Compile(%q).Filter() rejects %q, which matches", pattern, name)
		}
		if !utf8.ValidString(pattern) || !utf8.ValidString(name) {
			return // the regexp reference has no byte semantics
		}
		if want := globRegexp(pattern).MatchString(name); got != want {
			t.Fatalf("Compile(%q).Match(%q) = %v, reference %v", pattern, name, got, want)
		}
	})
}

func BenchmarkMatcher(b *testing.B) {
	p := Compile("mcp__GitHub__*_issues")
	b.ReportAllocs()
	for b.Loop() {
		p.Match("mcp__github__list_issues")
	}
}

func BenchmarkMatch(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		Match("mcp__GitHub__*_issues", "mcp__github__list_issues")
	}
}

// ToolNameProblem's hint fits the pattern: the regular expression it names
// is the one given, rewritten with *; a glob with no ".*" gets no example.
func TestToolNameProblemHint(t *testing.T) {
	for _, tc := range []struct{ pattern, want, not string }{
		{"mcp__gh__.*", `write "mcp__gh__*", not "mcp__gh__.*"`, ""},
		{"[", "only * is special (it is not a regular expression)", "mcp__fs__"},
		{"edit|write", "it is not a list", ""},
		{"Bash(rm:*)", "belongs in a policy file", ""},
		{"read_*", "", ""},
	} {
		got := ToolNameProblem(tc.pattern)
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) || tc.not != "" && strings.Contains(got, tc.not) {
			t.Errorf("ToolNameProblem(%q) = %q, want it to contain %q", tc.pattern, got, tc.want)
		}
	}
}
