package declarative

import "github.com/tollgate-dev/tollgate/internal/glob"

// Matcher is a glob on the tool name (seed 000, "Matchers"): * matches any run
// of characters (also none), and every other character, including ., ?, [ and
// (, matches itself. Case is ignored (Unicode simple case folding, as in
// [strings.EqualFold]). There is no implicit prefix: "mcp__github" does not
// match "mcp__github__list_issues", "mcp__github__*" does. The rules are those
// of package internal/glob, shared with approval policies.
//
// Tool names hold only letters, digits, '_' and '-', so a matcher with any
// other character but * ("edit|write", "mcp__fs__.*") never matches: it is
// not a list or a regular expression. [FromYAML] and [Of] keep such a hook,
// as seed 000 does, with a warning [Diagnostic].
//
// The empty Matcher means "no matcher": it matches every tool, like [MatchAll].
// Registries compile matchers once, when they are built.
type Matcher string

// MatchAll is the matcher * (seed 000 HookMatcher.ALL): every tool name.
const MatchAll Matcher = "*"

// match reports whether the tool name matches m.
func (m Matcher) match(tool string) bool {
	return m == "" || glob.Match(string(m), tool)
}

// compile compiles m for a registry; the empty Matcher compiles to [MatchAll].
func (m Matcher) compile() glob.Pattern {
	if m == "" {
		m = MatchAll
	}
	return glob.Compile(string(m))
}
