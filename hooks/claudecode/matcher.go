package claudecode

import (
	"fmt"
	"regexp"
	"strings"
)

// nameMatcher is a compiled matcher group "matcher", read as Claude Code reads
// it: "*", "" or absent match everything; a matcher of only ASCII letters,
// digits, '_', '-', ' ', ',' and '|' is a list of exact names split on '|'
// or ',' ("Edit|Write"); anything else is an unanchored, case-sensitive RE2
// regular expression ("mcp__memory__.*", and "Edit.*" also matches
// "NotebookEdit").
type nameMatcher struct {
	all   bool
	names map[string]bool
	re    *regexp.Regexp
}

// compileMatcher compiles s; the error names a pattern RE2 cannot compile
// (such a group is skipped: it would match nothing).
func compileMatcher(s string) (*nameMatcher, error) {
	if s == "" || s == "*" {
		return &nameMatcher{all: true}, nil
	}
	if isNameList(s) {
		m := &nameMatcher{names: map[string]bool{}}
		for _, part := range strings.FieldsFunc(s, func(r rune) bool { return r == '|' || r == ',' }) {
			if p := strings.TrimSpace(part); p != "" {
				m.names[p] = true
			}
		}
		return m, nil
	}
	re, err := regexp.Compile(s)
	if err != nil {
		return nil, fmt.Errorf("matcher %q is not a regular expression RE2 can compile: %v", s, err)
	}
	return &nameMatcher{re: re}, nil
}

func isNameList(s string) bool {
	for _, c := range []byte(s) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '_' || c == '-' || c == ' ' || c == ',' || c == '|':
		default:
			return false
		}
	}
	return true
}

// Match reports whether the matcher matches v (a tool name, or for
// SessionStart the source, for Notification the notification type).
func (m *nameMatcher) Match(v string) bool {
	switch {
	case m == nil || m.all:
		return true
	case m.names != nil:
		return m.names[v]
	}
	return m.re.MatchString(v)
}

// ifCond is a handler's "if": a tool name and, optionally, a glob on the
// call's main argument (Bash: command; Read, Write, Edit: file_path; Grep,
// Glob: pattern; other tools: the whole input as JSON).
type ifCond struct {
	tool string
	glob string
	has  bool
}

// parseIf reads "Tool" or "Tool(glob)". In the glob, '*' matches any run of
// characters ('/' included) and everything else matches itself; a trailing
// ":*" (Claude Code's "Bash(git push:*)") matches the prefix before it
// followed by anything.
func parseIf(s string) (ifCond, error) {
	s = strings.TrimSpace(s)
	open := strings.IndexByte(s, '(')
	if open < 0 {
		if !isToolName(s) {
			return ifCond{}, fmt.Errorf("%q is not Tool or Tool(glob)", s)
		}
		return ifCond{tool: s}, nil
	}
	if !strings.HasSuffix(s, ")") || !isToolName(s[:open]) {
		return ifCond{}, fmt.Errorf("%q is not Tool or Tool(glob)", s)
	}
	g := s[open+1 : len(s)-1]
	if strings.HasSuffix(g, ":*") {
		g = strings.TrimSuffix(g, ":*") + "*"
	}
	return ifCond{tool: s[:open], glob: g, has: true}, nil
}

func isToolName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// match reports whether the condition holds for a call of tool (Claude Code
// name) whose main argument is arg.
func (c ifCond) match(tool, arg string) bool {
	if c.tool != tool {
		return false
	}
	return !c.has || globMatch(c.glob, arg)
}

// globMatch matches s against a glob where only '*' is special.
func globMatch(g, s string) bool {
	parts := strings.Split(g, "*")
	if len(parts) == 1 {
		return g == s
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return strings.HasSuffix(s, last)
}
