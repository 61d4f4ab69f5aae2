package policy

import (
	"slices"
	"strings"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/internal/glob"
)

// programDenier is an [Authorizer] that can say which programs it denies
// outright in the shell scripts of a tool, so that a sandbox can refuse
// them at exec (package sandbox, Policy.DenyExec) whatever the script's
// spelling. [*Policy] implements it.
type programDenier interface {
	// DeniedPrograms returns globs on program base names (only * is
	// special, case is ignored) that every call of tool is denied for.
	DeniedPrograms(tool string) []string
}

// DeniedPrograms returns the programs that the authorizers deny outright in
// the shell scripts of tool (globs on program base names: only * is special,
// case is ignored), without duplicates, in order, so that a sandbox can
// refuse them at exec (package sandbox, Policy.DenyExec) whatever the
// script's spelling. An authorizer says so with a method DeniedPrograms(tool
// string) []string, as [*Policy] has.
func DeniedPrograms(tool string, auths ...approval.Authorizer) []string {
	var out []string
	for _, a := range auths {
		if d, ok := a.(programDenier); ok {
			for _, g := range d.DeniedPrograms(tool) {
				if !slices.Contains(out, g) {
					out = append(out, g)
				}
			}
		}
	}
	return out
}

// DeniedPrograms is what [DeniedPrograms] asks p: the programs of the deny rules
// whose only conditions are the tool (a glob matching tool, or none) and
// a command condition on the default field ("command") with
// programs alone ("command: {program: rm}") or with patterns alone that
// each cover a whole program ("rm *", "rm:*", "rm*", as Claude Code's
// "Bash(rm:*)" is read). A rule with any other condition (flags, writes,
// arguments, hints, risks, a pattern with arguments) denies some uses of a
// program only, and is left to the analysis of the script.
func (p *Policy) DeniedPrograms(tool string) []string {
	var out []string
	for _, r := range p.rules {
		if r.Decision != approval.Deny || r.Command == nil || !r.unconditional(tool) {
			continue
		}
		c := r.Command
		if c.Opaque || len(c.Flags) > 0 || len(c.Writes) > 0 || (c.Field != "" && c.Field != defaultCommandField) {
			continue
		}
		var progs []string
		switch {
		case len(c.Programs) > 0 && len(c.Patterns) == 0:
			progs = c.Programs
		case len(c.Programs) == 0 && len(c.Patterns) > 0:
			for _, pat := range c.Patterns {
				g, ok := patternProgram(pat)
				if !ok {
					progs = nil
					break
				}
				progs = append(progs, g)
			}
		}
		for _, g := range progs {
			if !slices.Contains(out, g) {
				out = append(out, g)
			}
		}
	}
	return out
}

// unconditional reports whether the rule applies to every call of tool
// whatever its arguments, hints and risk, but for its command condition.
func (r *compiledRule) unconditional(tool string) bool {
	if len(r.Tools) > 0 && !slices.ContainsFunc(r.Tools, func(g string) bool { return glob.Match(g, tool) }) {
		return false
	}
	h := r.Hints
	return len(r.Args) == 0 && len(r.Risks) == 0 && h.ReadOnly == nil && h.Destructive == nil && h.Idempotent == nil && h.OpenWorld == nil
}

// patternProgram returns the program glob of a command pattern that
// matches every use of a program ("rm *", "rm:*", "/bin/rm *": "rm";
// "rm*": "rm*"), and false for one that does not ("rm -rf *", "rm", "r*m").
func patternProgram(pat string) (string, bool) {
	q := strings.Join(strings.Fields(pat), " ")
	if s, ok := strings.CutSuffix(q, ":*"); ok {
		q = s + " *"
	}
	prog, ok := strings.CutSuffix(q, " *")
	if ok && strings.Contains(prog, "*") {
		return "", false // "r*m *" matches "rx y m z" too
	}
	if !ok {
		if strings.HasSuffix(q, "*") && !strings.ContainsAny(strings.TrimSuffix(q, "*"), " *") {
			prog = q
		} else {
			return "", false
		}
	}
	if i := strings.LastIndexByte(prog, '/'); i >= 0 {
		prog = prog[i+1:]
	}
	if prog == "" || strings.Contains(prog, " ") || prog == "*" || !glob.Valid(prog) {
		return "", false
	}
	return strings.ToLower(prog), true
}
