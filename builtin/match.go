package builtin

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// maxBraceExpansions bounds how many patterns one brace pattern expands into.
const maxBraceExpansions = 256

// globPattern is a compiled glob: the patterns a brace pattern expands into,
// each split into "/"-separated segments. A segment is matched by path.Match
// ("*", "?", "[...]", "\\" escapes; none of them match "/"), except "**",
// which matches zero or more whole segments.
type globPattern struct {
	alts [][]string
}

// compileGlob checks and compiles pattern (slash-separated, relative). Braces
// "{a,b}" expand first and may nest.
func compileGlob(pattern string) (*globPattern, error) {
	if pattern == "" {
		return nil, errors.New("empty glob pattern")
	}
	if strings.HasPrefix(pattern, "/") {
		return nil, fmt.Errorf("glob pattern %q must be relative (use path for the directory to search)", pattern)
	}
	alts, err := expandBraces(pattern)
	if err != nil {
		return nil, fmt.Errorf("glob pattern %q: %w", pattern, err)
	}
	g := &globPattern{}
	for _, a := range alts {
		segs := strings.Split(a, "/")
		var clean []string
		for _, s := range segs {
			switch s {
			case "", ".":
				continue // "a//b", "./a"
			case "..":
				return nil, fmt.Errorf("glob pattern %q must not contain a %q segment", pattern, "..")
			}
			if s != "**" {
				if _, err := path.Match(s, ""); err != nil {
					return nil, fmt.Errorf("glob pattern %q: %w", pattern, err)
				}
			}
			clean = append(clean, s)
		}
		g.alts = append(g.alts, clean)
	}
	return g, nil
}

// match reports whether the slash-separated relative path name matches.
func (g *globPattern) match(name string) bool {
	segs := strings.Split(name, "/")
	for _, p := range g.alts {
		if matchSegments(p, segs, false) {
			return true
		}
	}
	return false
}

// mayMatchUnder reports whether some path under directory dir (slash-separated,
// relative) could match; a walk skips directories for which it is false.
func (g *globPattern) mayMatchUnder(dir string) bool {
	if dir == "." {
		return true
	}
	segs := strings.Split(dir, "/")
	for _, p := range g.alts {
		if matchSegments(p, segs, true) {
			return true
		}
	}
	return false
}

// matchSegments matches name against the pattern segments pat. With prefix,
// it reports whether name could be a leading part of a matching path (every
// name segment consumed, pattern segments possibly left over). It is dynamic
// programming over (pattern, name) positions, so "**" costs O(len(pat)*len(name)).
func matchSegments(pat, name []string, prefix bool) bool {
	// ok[i][j]: pat[i:] matches name[j:].
	n := len(name)
	next := make([]bool, n+1)
	cur := make([]bool, n+1)
	// Row i == len(pat): matches only the empty rest of the name, or anything
	// when looking for a prefix (a full match of a prefix of the path).
	for j := 0; j <= n; j++ {
		next[j] = j == n
	}
	for i := len(pat) - 1; i >= 0; i-- {
		for j := n; j >= 0; j-- {
			switch {
			case j == n:
				// Name exhausted: a prefix may still be completed by the rest of
				// the pattern; a full match needs the rest to be all "**".
				cur[j] = prefix || (pat[i] == "**" && next[j])
			case pat[i] == "**":
				cur[j] = next[j] || cur[j+1]
			default:
				ok, _ := path.Match(pat[i], name[j])
				cur[j] = ok && next[j+1]
			}
		}
		next, cur = cur, next
	}
	return next[0]
}

// expandBraces expands "{a,b}" alternatives (nested allowed, "\\" escapes a
// brace or comma) into every combination, in order. An unmatched brace is an
// error; a brace group without a comma is kept literally.
func expandBraces(p string) ([]string, error) {
	open := -1
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case '{':
			open = i
		}
		if open >= 0 {
			break
		}
	}
	if open < 0 {
		if strings.ContainsRune(unescapedOnly(p), '}') {
			return nil, errors.New("unmatched }")
		}
		return []string{p}, nil
	}
	// Find the matching close and the top-level commas of the group.
	depth, commas, close := 0, []int{}, -1
	for i := open; i < len(p) && close < 0; i++ {
		switch p[i] {
		case '\\':
			i++
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				close = i
			}
		case ',':
			if depth == 1 {
				commas = append(commas, i)
			}
		}
	}
	if close < 0 {
		return nil, errors.New("unmatched {")
	}
	prefix, suffix := p[:open], p[close+1:]
	var parts []string
	if len(commas) == 0 {
		// "{x}" is literal text: keep it, escaped so path.Match sees braces.
		parts = []string{`\{` + p[open+1:close] + `\}`}
	} else {
		start := open + 1
		for _, c := range append(commas, close) {
			parts = append(parts, p[start:c])
			start = c + 1
		}
	}
	rest, err := expandBraces(suffix)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, part := range parts {
		inner, err := expandBraces(part)
		if err != nil {
			return nil, err
		}
		for _, in := range inner {
			for _, r := range rest {
				out = append(out, prefix+in+r)
				if len(out) > maxBraceExpansions {
					return nil, fmt.Errorf("braces expand to more than %d patterns", maxBraceExpansions)
				}
			}
		}
	}
	return out, nil
}

// unescapedOnly returns p without its backslash-escaped characters.
func unescapedOnly(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] == '\\' {
			i++
			continue
		}
		b.WriteByte(p[i])
	}
	return b.String()
}
