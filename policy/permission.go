package policy

import (
	"fmt"
	"github.com/tollgate-dev/tollgate/approval"
	"os"
	"path"
	"strings"
)

// PermissionRule returns a rule with the given id and decision that means
// what the Claude Code permission rule perm means (as written in the allow,
// ask and deny lists of Claude Code's settings.json), on tollgate's builtin
// tools:
//
//	Bash, Bash(*)            every call of bash
//	Bash(git push:*)         bash commands with a simple command matching "git push *"
//	Bash(npm run test *)     the same pattern form ('*' anywhere; see CommandCondition.Patterns)
//	Bash(npm test)           exactly that command
//	Read, Read(.env)         read, grep and glob, on a path matching the gitignore-style glob
//	Edit(src/**), Write(...) edit and write, on a path matching the glob
//	Grep, Glob               grep, glob (no specifier)
//	mcp__server, mcp__server__tool, mcp__server__*   MCP tools by name
//
// Bash patterns are judged on every simple command of the script, as a
// [CommandCondition] does: "Bash(rm:*)" also holds for "/bin/rm x",
// "(rm x)" and "sh -c 'rm x'", and an allow holds for a call only when
// every simple command is allowed. Paths follow Claude Code's four forms:
// "//abs" is the absolute path /abs, "~/p" is under the home directory
// (read from the environment now), "/p" and "p" are relative to the
// workspace ([Policy.WithWorkdir]; Claude Code's project root and current
// directory are both the workspace here). As in Claude Code, Read rules on
// grep and glob judge the directory searched (best effort): a search of a
// parent directory is not caught.
//
// Errors: an unknown tool name, a specifier on a tool that takes none, a
// bad pattern or glob.
func PermissionRule(id, perm string, d approval.Effect) (Rule, error) {
	r := Rule{ID: id, Decision: d}
	s := strings.TrimSpace(perm)
	name, spec, hasSpec := strings.Cut(s, "(")
	if hasSpec {
		if !strings.HasSuffix(spec, ")") {
			return r, fmt.Errorf("permission rule %q: missing ')'", perm)
		}
		spec = strings.TrimSuffix(spec, ")")
		if spec == "*" {
			hasSpec = false
		}
	}
	switch {
	case name == "Bash":
		r.Tools = []string{"bash"}
		if hasSpec {
			if strings.TrimSpace(spec) == "" {
				return r, fmt.Errorf("permission rule %q: empty command pattern", perm)
			}
			r.Command = &CommandCondition{Patterns: []string{spec}}
		}
	case name == "Read" || name == "Edit" || name == "Write":
		r.Tools = []string{"read", "grep", "glob"}
		if name != "Read" {
			r.Tools = []string{"edit", "write"}
		}
		if hasSpec {
			g, err := permissionPath(spec)
			if err != nil {
				return r, fmt.Errorf("permission rule %q: %w", perm, err)
			}
			if _, err := cleanPathGlob(g); err != nil {
				return r, fmt.Errorf("permission rule %q: %w", perm, err)
			}
			r.Args = []ArgCondition{{Field: "path", PathGlob: g}}
		}
	case name == "Grep" || name == "Glob":
		if hasSpec {
			return r, fmt.Errorf("permission rule %q: %s takes no specifier", perm, name)
		}
		r.Tools = []string{strings.ToLower(name)}
	case strings.HasPrefix(name, "mcp__"):
		if hasSpec {
			return r, fmt.Errorf("permission rule %q: MCP tools take no specifier", perm)
		}
		g := name
		if strings.Count(strings.TrimSuffix(g, "__*"), "__") == 1 && !strings.HasSuffix(g, "*") {
			g += "__*" // mcp__server: every tool of the server
		}
		r.Tools = []string{g}
	default:
		return r, fmt.Errorf("permission rule %q: unknown tool %q (want Bash, Read, Edit, Write, Grep, Glob or mcp__server__tool)", perm, name)
	}
	return r, nil
}

// permissionPath turns a Claude Code Read/Edit path into a PathGlob.
func permissionPath(p string) (string, error) {
	switch {
	case p == "":
		return "", fmt.Errorf("empty path")
	case strings.HasPrefix(p, "//"):
		return path.Clean("/" + strings.TrimLeft(p, "/")), nil
	case p == "~" || strings.HasPrefix(p, "~/"):
		home, err := os.UserHomeDir()
		if err != nil || !path.IsAbs(home) {
			return "", fmt.Errorf("%s: the home directory is not known", p)
		}
		return path.Join(home, strings.TrimPrefix(p, "~")), nil
	case strings.HasPrefix(p, "/"):
		return "./" + strings.TrimLeft(p, "/"), nil // anchored at the workspace
	}
	return p, nil
}

// isPermissionRule reports whether s has the shape Name(specifier) of a
// Claude Code permission rule (no tool name contains a parenthesis).
func isPermissionRule(s string) bool {
	i := strings.IndexByte(s, '(')
	return i > 0 && strings.HasSuffix(s, ")")
}
