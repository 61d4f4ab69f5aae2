package policy

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/tollgate-dev/tollgate/internal/glob"
	"github.com/tollgate-dev/tollgate/internal/shellcmd"
)

// defaultCommandField is the argument a [CommandCondition] reads when its
// Field is empty: the command of the bash builtin (and of Claude Code's Bash).
const defaultCommandField = "command"

// CommandCondition is a condition on the simple commands of a shell script
// held in a string argument. The script is analysed as bash
// (bash syntax, every pipeline, list, subshell, substitution, function,
// eval, sh -c and wrapper such as sudo, env, xargs, timeout and find -exec
// seen through), and the rule is judged once per simple command: it votes
// about each command for which every operator that is set holds. Across the
// commands of one call deny > ask > allow holds, and a rule's allow counts
// only when every simple command of the script is allowed by some rule, so
// that "npm test && rm -rf ~" is not allowed by an allow rule on npm test.
//
// A word known only at run time ($X, $(...)) makes a condition that might
// hold a "maybe": a deny or ask rule then votes ask, an allow rule does not
// vote. A command the analysis cannot see through (a program known only at
// run time, text that does not parse, eval of a non-literal, a shell
// reading a pipe) is opaque: the rules with Opaque decide it, and when none
// does it is asked about ("rule:shell-opaque"), never allowed. This happens only
// for calls some command rule applies to.
type CommandCondition struct {
	// Field is the argument holding the script, or a dotted path to it;
	// empty means "command" (the script of the bash builtin and of Claude
	// Code's Bash). A call without it (or with a value
	// that is not a string) does not match.
	Field string
	// Programs, if not empty, are globs on the program's base name (seed
	// 000's matcher: only * is special, case is ignored): "rm" holds for
	// "/bin/rm", "\rm" and "sudo rm". One must match.
	Programs []string
	// Patterns, if not empty, are command patterns in the form of Claude
	// Code's Bash permission rules: the program and its arguments separated
	// by single spaces, where * matches any run of characters (spaces too);
	// a pattern that ends in " *" (or ":*") also matches the command without
	// more arguments ("git push *" matches "git push", not "git pushy"). The
	// program is matched by base name ignoring case, the arguments
	// case-sensitively; a pattern is at most 4096 bytes. One must match.
	Patterns []string
	// Flags, if not empty, must all be present among the arguments before
	// "--" ("-rf" holds for "-r -f" and "-fr"; "--force" for
	// "--force=true"); a dynamic argument makes a missing flag a "maybe".
	Flags []string
	// Writes, if not empty, are path prefixes; the condition holds when the
	// command writes through a redirection (>, >>, &>, <>, ...) to a path
	// under one of them, judged as [ArgCondition.PathPrefix] judges paths
	// (relative to the policy's working directory). A target known only at
	// run time, or a relative one in a script that changes directory, is a
	// "maybe".
	Writes []string
	// Opaque, if true, holds exactly for the opaque commands; it cannot be
	// combined with the other operators, and a rule with it cannot allow.
	Opaque bool
}

func (c CommandCondition) clone() CommandCondition {
	c.Programs = slices.Clone(c.Programs)
	c.Patterns = slices.Clone(c.Patterns)
	c.Flags = slices.Clone(c.Flags)
	c.Writes = slices.Clone(c.Writes)
	return c
}

type compiledCommand struct {
	CommandCondition
	patterns []*shellcmd.Pattern
	writes   []string // cleaned
}

func (cc *compiledCommand) field() string {
	if cc.Field == "" {
		return defaultCommandField
	}
	return cc.Field
}

func compileCommand(c CommandCondition) (*compiledCommand, error) {
	cc := &compiledCommand{CommandCondition: c.clone()}
	var errs []error
	if c.Field != "" && slices.Contains(strings.Split(c.Field, "."), "") {
		errs = append(errs, fmt.Errorf("command field %q has an empty path segment", c.Field))
	}
	empty := len(c.Programs) == 0 && len(c.Patterns) == 0 && len(c.Flags) == 0 && len(c.Writes) == 0
	switch {
	case c.Opaque && !empty:
		errs = append(errs, errors.New("command: opaque cannot be combined with program, pattern, flags or writes (an opaque command has none)"))
	case !c.Opaque && empty:
		errs = append(errs, errors.New("command: no condition (want program, pattern, flags, writes or opaque)"))
	}
	for _, g := range c.Programs {
		if !glob.Valid(g) || strings.Contains(g, "/") {
			errs = append(errs, fmt.Errorf("command: invalid program %q (a base name or a glob with *)", g))
		}
	}
	for _, p := range c.Patterns {
		cp, err := shellcmd.CompilePattern(p)
		if err != nil {
			errs = append(errs, fmt.Errorf("command: %w", err))
			continue
		}
		cc.patterns = append(cc.patterns, cp)
	}
	for _, f := range c.Flags {
		if !shellcmd.ValidFlag(f) {
			errs = append(errs, fmt.Errorf("command: invalid flag %q (want -x, -xyz or --name)", f))
		}
	}
	for _, w := range c.Writes {
		if w == "" {
			errs = append(errs, errors.New("command: empty writes path"))
			continue
		}
		cc.writes = append(cc.writes, path.Clean(w))
	}
	return cc, errors.Join(errs...)
}

// match judges one simple command.
func (cc *compiledCommand) match(c *shellcmd.Command, wd workdir, changesDir bool) shellcmd.Tri {
	if cc.Opaque {
		if c.Opaque != "" {
			return shellcmd.Yes
		}
		return shellcmd.No
	}
	if c.Opaque != "" {
		return shellcmd.No // judged by the rules on opaque commands, or asked about
	}
	t := shellcmd.Yes
	if len(cc.Programs) > 0 && (c.Program == "" || !slices.ContainsFunc(cc.Programs, func(g string) bool { return glob.Match(g, c.Program) })) {
		return shellcmd.No
	}
	if len(cc.patterns) > 0 {
		best := shellcmd.No
		for _, p := range cc.patterns {
			best = max(best, p.Match(c))
		}
		t = min(t, best)
	}
	if len(cc.Flags) > 0 {
		t = min(t, c.HasFlags(cc.Flags))
	}
	if len(cc.writes) > 0 {
		t = min(t, cc.writesUnder(c, wd, changesDir))
	}
	return t
}

func (cc *compiledCommand) writesUnder(c *shellcmd.Command, wd workdir, changesDir bool) shellcmd.Tri {
	best := shellcmd.No
	for _, r := range c.Redirects {
		if !r.Write {
			continue
		}
		if r.Target.Dynamic || r.Target.Glob {
			best = max(best, shellcmd.Maybe)
			continue
		}
		p := r.Target.Value
		for _, w := range cc.writes {
			if underPath(wd.resolve(p), wd.resolve(w)) {
				if changesDir && !path.IsAbs(p) {
					best = max(best, shellcmd.Maybe)
				} else {
					return shellcmd.Yes
				}
			} else if changesDir && !path.IsAbs(p) {
				best = max(best, shellcmd.Maybe)
			}
		}
	}
	return best
}

// cleanPathGlob checks a PathGlob and returns it in the form pathGlobMatch
// uses.
func cleanPathGlob(g string) (string, error) {
	for _, r := range g {
		if r < 0x20 || r == 0x7f {
			return "", fmt.Errorf("pathGlob %q has a control character", g)
		}
	}
	g = strings.TrimSuffix(g, "/") // gitignore's "directories only": a directory's files are covered anyway
	if g == "" {
		return "", errors.New("empty pathGlob")
	}
	if !doublestar.ValidatePattern(g) {
		return "", fmt.Errorf("invalid pathGlob %q", g)
	}
	return g, nil
}

// pathGlobMatch reports whether the path p, or one of its parent
// directories, matches the gitignore-style glob g.
func pathGlobMatch(g string, wd workdir, p string) bool {
	rp := wd.resolve(p)
	if !strings.Contains(g, "/") {
		// A base name at any depth.
		for _, seg := range strings.Split(rp, "/") {
			if seg == "" {
				continue
			}
			if ok, _ := doublestar.Match(g, seg); ok {
				return true
			}
		}
		return false
	}
	pat := g
	if !path.IsAbs(pat) {
		pat = wd.resolve(pat)
	}
	for q := rp; ; {
		if ok, _ := doublestar.Match(pat, q); ok {
			return true
		}
		parent := path.Dir(q)
		if parent == q || q == "." {
			return false
		}
		q = parent
	}
}
