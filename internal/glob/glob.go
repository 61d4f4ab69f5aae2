// Package glob matches tool names against the globs of seed 000's HookMatcher:
// '*' matches any run of characters (including none), every other character
// matches itself, the comparison ignores case, and the whole name must match
// (there is no implicit prefix: "mcp__github" does not match
// "mcp__github__list_issues", "mcp__GitHub__*" does).
package glob

import "strings"

// Match reports whether name matches pattern. Only '*' is special; case is
// folded with [strings.EqualFold] rules (Unicode simple folding). The empty
// pattern matches only the empty name. Match runs in O(len(pattern)*len(name))
// time in the worst case and never allocates more than the folded strings.
func Match(pattern, name string) bool {
	p := []rune(strings.ToLower(pattern))
	s := []rune(strings.ToLower(name))
	// Iterative wildcard matching with single-star backtracking.
	pi, si := 0, 0
	star, mark := -1, 0
	for si < len(s) {
		switch {
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, si
			pi++
		case pi < len(p) && foldEq(p[pi], s[si]):
			pi++
			si++
		case star >= 0:
			pi = star + 1
			mark++
			si = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

func foldEq(a, b rune) bool {
	return a == b || strings.EqualFold(string(a), string(b))
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
