// Package glob matches tool names against the globs of seed 000's HookMatcher:
// '*' matches any run of characters (including none), every other character
// (., ?, [, \ and the rest) matches itself, the comparison ignores case, and
// the whole name must match (there is no implicit prefix: "mcp__github" does
// not match "mcp__github__list_issues", "mcp__GitHub__*" does).
//
// It is the one matcher of the module: approval policies call [Match], and the
// declarative hook registry compiles its matchers once with [Compile] and checks
// every tool call against them without allocating.
package glob

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Match reports whether name matches pattern. Only '*' is special; case is
// folded with Unicode simple case folding, as in [strings.EqualFold]. Bytes
// that are not valid UTF-8 match only the same byte. The empty pattern matches
// only the empty name. Match remembers the last star only (enough for a
// *-only glob), so it runs in O(len(pattern)*len(name)) time at worst, and it
// never allocates. To match one pattern many times, [Compile] it.
func Match(pattern, name string) bool {
	px, sx := 0, 0
	starPx, starSx := -1, 0
	for px < len(pattern) || sx < len(name) {
		if px < len(pattern) {
			if pattern[px] == '*' {
				starPx, starSx = px, sx
				px++
				continue
			}
			if sx < len(name) {
				if pw, sw, ok := runeFoldEqual(pattern[px:], name[sx:]); ok {
					px += pw
					sx += sw
					continue
				}
			}
		}
		if starPx >= 0 && starSx < len(name) {
			starSx += runeLen(name[starSx:])
			px, sx = starPx+1, starSx
			continue
		}
		return false
	}
	return true
}

// Valid reports whether pattern is usable as a matcher: not empty and without
// control characters. A pattern that is not valid never matches a real tool name
// (tool names are non-empty), so loaders report it instead of keeping it.
func Valid(pattern string) bool {
	if pattern == "" {
		return false
	}
	for _, r := range pattern {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

// Pattern is a compiled glob: [Pattern.Match] agrees with [Match] on every
// name, and rejects most names that do not match after a few byte comparisons,
// without allocating. Build one with [Compile]; it is immutable and safe for
// concurrent use. The zero Pattern matches only the empty name, like
// Compile("").
type Pattern struct {
	pat    string
	filter Filter
	// ascii: the pattern is ASCII, and segs holds its pieces between stars in
	// lower case, for the fast path used when the name is ASCII too.
	ascii bool
	star  bool
	segs  []string
}

// Compile compiles pattern once, for matching many names. Every string is a
// pattern (only '*' is special), so Compile cannot fail; see [Valid] for the
// patterns a loader should refuse.
func Compile(pattern string) Pattern {
	p := Pattern{pat: pattern, filter: Filter{all: pattern != ""}}
	for _, r := range pattern {
		if r != '*' {
			p.filter.all = false
			p.filter.minLen++
		}
	}
	if p.filter.all {
		return p
	}
	p.ascii = isASCII(pattern)
	p.star = strings.IndexByte(pattern, '*') >= 0
	if p.ascii {
		p.segs = strings.Split(strings.ToLower(pattern), "*")
	}
	if pattern == "" {
		return p
	}
	// An ASCII byte of the name is a whole rune, and only an ASCII rune of the
	// same letter folds to an ASCII pattern byte.
	if c := pattern[0]; c != '*' && c < utf8.RuneSelf {
		p.filter.first = lowerASCII(c)
	}
	if c := pattern[len(pattern)-1]; c != '*' && c < utf8.RuneSelf {
		p.filter.last = lowerASCII(c)
	}
	return p
}

// String returns the source of the pattern, as given to [Compile].
func (p *Pattern) String() string { return p.pat }

// Match reports whether name matches p, with the semantics of [Match].
func (p *Pattern) Match(name string) bool {
	n := NewName(name)
	return p.MatchName(&n)
}

// MatchName is [Pattern.Match] for a name prepared with [NewName], for
// checking one name against many patterns: what every pattern looks at in
// the name is computed once. MatchName may record in n whether the name is
// ASCII, so n must not be shared between goroutines.
func (p *Pattern) MatchName(n *Name) bool {
	if p.filter.all {
		return true
	}
	if !p.filter.Pass(n) {
		return false
	}
	if p.ascii && n.isASCII() {
		return p.matchASCII(n.s)
	}
	return Match(p.pat, n.s)
}

// Filter returns the part of p that rejects most names cheaply. A caller that
// checks one name against many patterns may keep the filters in one dense
// slice and call [Pattern.MatchName] only for those that [Filter.Pass].
func (p *Pattern) Filter() Filter { return p.filter }

// matchASCII matches an ASCII name against an ASCII pattern: the first piece
// is a prefix, the last a suffix, and each piece between finds its leftmost
// place in what is left (enough for a *-only glob).
func (p *Pattern) matchASCII(s string) bool {
	segs := p.segs
	if !p.star {
		return len(s) == len(segs[0]) && hasPrefixFold(s, segs[0])
	}
	first, last := segs[0], segs[len(segs)-1]
	if !hasPrefixFold(s, first) {
		return false
	}
	s = s[len(first):]
	if len(s) < len(last) || !hasPrefixFold(s[len(s)-len(last):], last) {
		return false
	}
	s = s[:len(s)-len(last)]
	for _, m := range segs[1 : len(segs)-1] {
		i := indexFold(s, m)
		if i < 0 {
			return false
		}
		s = s[i+len(m):]
	}
	return true
}

// Filter is a necessary condition of a [Pattern]: a name that does not pass it
// cannot match. It looks at the name's length and its first and last bytes.
// The zero Filter passes every name.
type Filter struct {
	minLen      int
	first, last byte
	all         bool
}

// Pass reports whether the name n may match the pattern of f; false means it
// cannot.
func (f Filter) Pass(n *Name) bool {
	if f.all {
		return true
	}
	return n.n >= f.minLen &&
		(f.first == 0 || n.first == 0 || n.first == f.first) &&
		(f.last == 0 || n.last == 0 || n.last == f.last)
}

// Name is a tool name prepared for matching against many patterns
// ([Pattern.MatchName], [Filter.Pass]). Build it with [NewName]; it is a small
// value meant to live on the caller's stack.
type Name struct {
	s           string
	n           int
	first, last byte // lower-case ASCII, or 0 when not ASCII
	ascii       int8 // -1 unknown until a pattern needs it, 0 no, 1 yes
}

// NewName prepares name for matching. It does not allocate.
func NewName(name string) Name {
	k := Name{s: name, n: len(name), ascii: -1}
	if len(name) > 0 {
		if c := name[0]; c < utf8.RuneSelf {
			k.first = lowerASCII(c)
		}
		if c := name[len(name)-1]; c < utf8.RuneSelf {
			k.last = lowerASCII(c)
		}
	}
	return k
}

// String returns the name as given to [NewName].
func (n *Name) String() string { return n.s }

func (n *Name) isASCII() bool {
	if n.ascii < 0 {
		n.ascii = 0
		if isASCII(n.s) {
			n.ascii = 1
		}
	}
	return n.ascii == 1
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// hasPrefixFold reports whether s starts with lower, ignoring ASCII case.
func hasPrefixFold(s, lower string) bool {
	if len(s) < len(lower) {
		return false
	}
	for i := 0; i < len(lower); i++ {
		if lowerASCII(s[i]) != lower[i] {
			return false
		}
	}
	return true
}

// indexFold returns the first index of lower in s ignoring ASCII case, or -1.
func indexFold(s, lower string) int {
	for i := 0; i+len(lower) <= len(s); i++ {
		if hasPrefixFold(s[i:], lower) {
			return i
		}
	}
	return -1
}

func runeLen(s string) int {
	if s[0] < utf8.RuneSelf {
		return 1
	}
	_, w := utf8.DecodeRuneInString(s)
	return w
}

// runeFoldEqual compares the first runes of p and s under simple case folding
// and returns their widths. Bytes that are not valid UTF-8 match only the
// same byte.
func runeFoldEqual(p, s string) (pw, sw int, ok bool) {
	a, b := p[0], s[0]
	if a < utf8.RuneSelf && b < utf8.RuneSelf {
		return 1, 1, lowerASCII(a) == lowerASCII(b)
	}
	pr, pw := utf8.DecodeRuneInString(p)
	sr, sw := utf8.DecodeRuneInString(s)
	if pr == utf8.RuneError && pw == 1 || sr == utf8.RuneError && sw == 1 {
		return pw, sw, pw == 1 && sw == 1 && a == b
	}
	if pr == sr {
		return pw, sw, true
	}
	for r := unicode.SimpleFold(pr); r != pr; r = unicode.SimpleFold(r) {
		if r == sr {
			return pw, sw, true
		}
	}
	return pw, sw, false
}

// ToolNameProblem returns "" when pattern can match some tool name, and
// otherwise a message saying why it never matches. Tool names hold only
// ASCII letters, digits, '_' and '-' (tool.ValidName, the shape model
// providers accept), and every character of a glob but '*' matches itself
// (up to case), so a glob with '|', '(', '.', '?', ' ' or any other
// character never matches: "edit|write" is not a list and "mcp__.*" is not
// a regular expression. Loaders warn about such globs; a --deny flag refuses
// them.
func ToolNameProblem(pattern string) string {
	for _, r := range pattern {
		if r == '*' || toolNameRune(r) {
			continue
		}
		hint := ""
		switch r {
		case '|', ',':
			hint = "; it is not a list: give each name separately"
		case '(', ')', '[', ']', '.', '?', '+', '^', '$', '{', '}':
			hint = "; only * is special (it is not a regular expression)"
			if strings.Contains(pattern, ".*") {
				hint += fmt.Sprintf(": write %q, not %q", strings.ReplaceAll(pattern, ".*", "*"), pattern)
			}
			if r == '(' || r == ')' {
				hint = "; only * is special (a rule like Bash(rm:*) belongs in a policy file)"
			}
		}
		return fmt.Sprintf("tool glob %q can never match: %q appears in no tool name (tool names use letters, digits, '_' and '-')%s", pattern, r, hint)
	}
	return ""
}

// toolNameRune reports whether r matches, up to simple case folding, a
// character of a tool name.
func toolNameRune(r rune) bool {
	for f := r; ; {
		if f == '_' || f == '-' || (f >= '0' && f <= '9') || (f >= 'a' && f <= 'z') || (f >= 'A' && f <= 'Z') {
			return true
		}
		if f = unicode.SimpleFold(f); f == r {
			return false
		}
	}
}
