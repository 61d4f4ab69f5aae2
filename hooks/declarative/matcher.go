package declarative

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Matcher is a glob on the tool name (seed 000, "Matchers"): * matches any run
// of characters (also none), and every other character, including ., ?, [ and
// (, matches itself. Case is ignored (Unicode simple case folding, as in
// [strings.EqualFold]). There is no implicit prefix: "mcp__github" does not
// match "mcp__github__list_issues", "mcp__github__*" does.
//
// The empty Matcher means "no matcher": it matches every tool, like [MatchAll].
// Registries compile matchers once, when they are built; [Matcher.Match]
// compiles on every call and is meant for one-off checks.
type Matcher string

// MatchAll is the matcher * (seed 000 HookMatcher.ALL): every tool name.
const MatchAll Matcher = "*"

// Match reports whether the tool name matches m.
func (m Matcher) Match(tool string) bool {
	g := compileGlob(string(m))
	return g.match(tool)
}

// glob is a compiled [Matcher].
type glob struct {
	pat string
	// all: the pattern matches every name (empty, or only stars).
	all bool
	// minLen is the number of non-star runes: no name shorter (in bytes) can
	// match, since a rune is at least one byte.
	minLen int
	// first and last are the lower-case ASCII bytes the name must start and end
	// with when the name's byte there is ASCII; 0 when unknown (a star, or a
	// non-ASCII pattern rune). A NUL pattern byte also gives 0: no check.
	first, last byte
	// ascii: the pattern is ASCII, and segs holds its pieces between stars in
	// lower case, for the fast path used when the name is ASCII too.
	ascii bool
	star  bool
	segs  []string
}

func compileGlob(p string) glob {
	g := glob{pat: p, all: true}
	for _, r := range p {
		if r != '*' {
			g.all = false
			g.minLen++
		}
	}
	if g.all {
		return g
	}
	g.ascii = isASCII(p)
	g.star = strings.IndexByte(p, '*') >= 0
	if g.ascii {
		g.segs = strings.Split(strings.ToLower(p), "*")
	}
	// An ASCII byte of the name is a whole rune, and only an ASCII rune of the
	// same letter folds to an ASCII pattern byte.
	if c := p[0]; c != '*' && c < utf8.RuneSelf {
		g.first = lowerASCII(c)
	}
	if c := p[len(p)-1]; c != '*' && c < utf8.RuneSelf {
		g.last = lowerASCII(c)
	}
	return g
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

func (g *glob) match(s string) bool { return g.matchName(s, isASCII(s)) }

// matchName is match for a name already known to be ASCII or not.
func (g *glob) matchName(s string, ascii bool) bool {
	if g.all {
		return true
	}
	if !g.filter().pass(nameKeyOf(s)) {
		return false
	}
	return g.matchRest(s, ascii)
}

// matchRest is match after the filter passed.
func (g *glob) matchRest(s string, ascii bool) bool {
	if g.ascii && ascii {
		return g.matchASCII(s)
	}
	return globMatch(g.pat, s)
}

// matchASCII matches an ASCII name against an ASCII pattern: the first piece
// is a prefix, the last a suffix, and each piece between finds its leftmost
// place in what is left (enough for a *-only glob).
func (g *glob) matchASCII(s string) bool {
	segs := g.segs
	if !g.star {
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

// globMatch matches s against the glob p where only * is special, ignoring
// case. It remembers the last star only (enough for a *-only glob), so it runs
// in O(len(p)*len(s)) time at worst and allocates nothing.
func globMatch(p, s string) bool {
	px, sx := 0, 0
	starPx, starSx := -1, 0
	for px < len(p) || sx < len(s) {
		if px < len(p) {
			if p[px] == '*' {
				starPx, starSx = px, sx
				px++
				continue
			}
			if sx < len(s) {
				if pw, sw, ok := runeFoldEqual(p[px:], s[sx:]); ok {
					px += pw
					sx += sw
					continue
				}
			}
		}
		if starPx >= 0 && starSx < len(s) {
			starSx += runeLen(s[starSx:])
			px, sx = starPx+1, starSx
			continue
		}
		return false
	}
	return true
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

// filter is the part of a glob that rejects most names cheaply; registries
// keep filters in one dense slice per event.
type filter struct {
	minLen      int
	first, last byte
	all         bool
}

func (g *glob) filter() filter {
	return filter{minLen: g.minLen, first: g.first, last: g.last, all: g.all}
}

// nameKey is what a filter looks at in a name, computed once per event.
type nameKey struct {
	n           int
	first, last byte // lower-case ASCII, or 0 when not ASCII
}

func nameKeyOf(s string) nameKey {
	k := nameKey{n: len(s)}
	if len(s) > 0 {
		if c := s[0]; c < utf8.RuneSelf {
			k.first = lowerASCII(c)
		}
		if c := s[len(s)-1]; c < utf8.RuneSelf {
			k.last = lowerASCII(c)
		}
	}
	return k
}

// pass reports whether a name with key k may match; false means it cannot.
func (f filter) pass(k nameKey) bool {
	if f.all {
		return true
	}
	return k.n >= f.minLen &&
		(f.first == 0 || k.first == 0 || k.first == f.first) &&
		(f.last == 0 || k.last == 0 || k.last == f.last)
}
