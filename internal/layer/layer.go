// Package layer is the rule layer: the policy that people build from their
// decisions ("approve and remember", docs/approvals.md). A rule is
// proposed from a decided call ([Propose]: the tool with a command prefix,
// a path prefix or the exact arguments), accepted by an administrator into
// a tenant's layer (kept, versioned, by the stores: internal/layerstore's
// Layers), and applies from the next decision of that tenant's runs.
//
// The policy files decide under deny > ask > allow, so a remembered allow
// cannot be one more allow vote: it would never lower an ask. The layer's
// two effects therefore act at two places of the gate (seed 002):
//
//   - a remembered deny is one more authorizer's deny vote ([Layer.Authorize]);
//   - a remembered allow answers the pending request of an ask whose
//     arguments fall inside its scope, as a Permission hook answers
//     ([Layer.Answer], [PermissionHook]): the decision is recorded as
//     approved by hook:rule-layer, "approved by rule layer v3 (rule R),
//     accepted by person:alice". It never meets a deny of the files:
//     a denied call asks no one.
//
// A remembered allow of a shell command never covers a script that
// writes a file through a redirection, nor one the analysis cannot see
// through, nor a command that runs with a changed environment or another
// program than the one named (assignments before it, a path, another case,
// a wrapper, a script that sets variables); a remembered path prefix
// never covers a dotfile or a directory such as .git below it: those are
// asked about as before.
package layer

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/shellcmd"
	"github.com/tollgate-dev/tollgate/policy"
	"github.com/tollgate-dev/tollgate/tool"
)

// HookName is the name of the layer's Permission hook: decisions it makes
// are by hook:rule-layer.
const HookName = "rule-layer"

// Rule is one accepted rule of a layer as the store keeps it.
type Rule struct {
	// ID is the rule's ID; its text's one rule must have it.
	ID string
	// Text is the rule: a policy document with one rule whose decision is
	// allow or deny (what [Propose] makes).
	Text string
	// AcceptedBy is who accepted it into the layer.
	AcceptedBy tool.Principal
}

// Layer is a tenant's layer at one version, compiled. It is immutable and
// safe for concurrent use.
type Layer struct {
	version     int64
	allow, deny *policy.Policy
	accepted    map[string]tool.Principal
	// patterns are the command patterns of the allow rules, by the
	// program they name as written; fields are the arguments their
	// scripts are in.
	patterns map[string][]*shellcmd.Pattern
	fields   []string
	cmdRules map[string]bool // the allow rules with a command condition
	// paths are the path prefixes of the allow rules, by rule ID;
	// workdir is the directory relative paths resolve against.
	paths   map[string][]policy.ArgCondition
	workdir string
}

// Compile parses rules, the accepted rules of a layer at version. Errors
// name the rule: a text that does not load as a policy, holds anything but
// one rule, a rule with another ID, a decision other than allow or deny,
// or a shadow rule.
func Compile(version int64, rules []Rule) (*Layer, error) {
	l := &Layer{version: version, accepted: map[string]tool.Principal{}, patterns: map[string][]*shellcmd.Pattern{}, cmdRules: map[string]bool{}, paths: map[string][]policy.ArgCondition{}}
	var allow, deny []policy.Rule
	for _, r := range rules {
		pr, err := ParseRule(r.ID, r.Text)
		if err != nil {
			return nil, err
		}
		l.accepted[r.ID] = r.AcceptedBy
		if pr.Decision == approval.Allow {
			allow = append(allow, pr)
			if err := l.addPatterns(r.ID, pr.Command); err != nil {
				return nil, err
			}
			for _, a := range pr.Args {
				if a.PathPrefix != "" {
					l.paths[r.ID] = append(l.paths[r.ID], a)
				}
			}
		} else {
			deny = append(deny, pr)
		}
	}
	var err error
	name := fmt.Sprintf("rule layer v%d", version)
	if l.allow, err = policy.NewPolicy(policy.PolicySpec{Name: name, Rules: allow}); err != nil {
		return nil, err
	}
	if l.deny, err = policy.NewPolicy(policy.PolicySpec{Name: name, Rules: deny}); err != nil {
		return nil, err
	}
	return l, nil
}

// ParseRule loads the text of the layer rule id: a policy document with
// exactly one rule, of that ID, deciding allow or deny, enforced.
func ParseRule(id, text string) (policy.Rule, error) {
	where := "layer rule " + id
	pol, problems, err := policy.ParsePolicy(where, strings.NewReader(text))
	if err != nil {
		var msgs []string
		for _, p := range problems {
			msgs = append(msgs, p.Error())
		}
		if len(msgs) == 0 {
			msgs = append(msgs, err.Error())
		}
		return policy.Rule{}, fmt.Errorf("%s: %s", where, strings.Join(msgs, "; "))
	}
	spec := pol.Spec()
	switch {
	case len(spec.Rules) != 1 || spec.Autonomy != "" || len(spec.Risks) > 0:
		return policy.Rule{}, fmt.Errorf("%s: want a policy with exactly one rule and nothing else", where)
	case spec.Rules[0].ID != id:
		return policy.Rule{}, fmt.Errorf("%s: its rule's id is %q", where, spec.Rules[0].ID)
	case spec.Rules[0].Decision != approval.Allow && spec.Rules[0].Decision != approval.Deny:
		return policy.Rule{}, fmt.Errorf("%s: decision %s: a layer rule allows or denies", where, spec.Rules[0].Decision)
	case spec.Rules[0].Shadow:
		return policy.Rule{}, fmt.Errorf("%s: a layer rule cannot be a shadow rule", where)
	}
	return spec.Rules[0], nil
}

// Version returns the layer's version.
func (l *Layer) Version() int64 { return l.version }

// WithWorkdir returns the layer with its path prefixes resolved against a
// run's working directory, as [policy.Policy.WithWorkdir] does.
func (l *Layer) WithWorkdir(dir string) (*Layer, error) {
	if dir == "" {
		return l, nil
	}
	out := *l
	out.workdir = path.Clean(filepath.ToSlash(dir))
	var err error
	if out.allow, err = l.allow.WithWorkdir(dir); err != nil {
		return nil, err
	}
	if out.deny, err = l.deny.WithWorkdir(dir); err != nil {
		return nil, err
	}
	return &out, nil
}

// Authorize implements [approval.Authorizer]: the layer's deny rules'
// vote on c (a deny, or an ask where a deny rule may hold: a word known
// only at run time), each named rule:ID with the layer's version and who
// accepted it in the reason; otherwise an allow by the runtime's default
// with no reason, which never outweighs another authorizer's verdict and
// decides as a gate without authorizers does.
func (l *Layer) Authorize(ctx context.Context, c approval.Call) (approval.Verdict, error) {
	v := l.deny.Evaluate(c).Verdict
	if v.Decision == approval.Allow || v.By == approval.Default {
		return approval.Verdict{Decision: approval.Allow, By: approval.Default}, nil
	}
	v.Reason = fmt.Sprintf("%s (rule layer v%d%s)", v.Reason, l.version, l.acceptedBy(v.By.Name))
	return v, nil
}

func (l *Layer) acceptedBy(id string) string {
	if p, ok := l.accepted[id]; ok && !p.IsZero() {
		return ", accepted by " + p.String()
	}
	return ""
}

// Answer returns the layer's answer to the approval request of an ask on
// c, or nil when no allow rule covers c: every simple command of a shell
// script must be allowed by the rules, and a script that writes through a
// redirection is never covered. Neither is a script that changes what
// its commands run with: a command with assignments before it
// ("GOFLAGS=... go test"), a program named by a path ("./go") or not
// exactly as the rule names it ("GO"), one run through a wrapper ("env",
// "sudo"), one that changes the environment ("export", "set", "source",
// ...) or a statement that sets a variable ("PATH=.", "declare"); nor a
// path below a path prefix through a name that starts with '.'. The
// answer approves with the reason "approved by rule layer vN (rule ID),
// accepted by P".
func (l *Layer) Answer(c approval.Call) *tool.Answer {
	ev := l.allow.Evaluate(c)
	v := ev.Verdict
	if v.Decision != approval.Allow || v.By.Kind != tool.PrincipalRule || v.By == approval.Default {
		return nil
	}
	for _, ce := range ev.Commands {
		if writes(ce.Command) {
			return nil
		}
	}
	if l.cmdRules[v.By.Name] && !l.scriptsCovered(c.Args) {
		return nil
	}
	if !l.pathsCovered(v.By.Name, c.Args) {
		return nil
	}
	return &tool.Answer{OK: true, Reason: fmt.Sprintf("approved by rule layer v%d (rule %s)%s", l.version, v.By.Name, l.acceptedBy(v.By.Name))}
}

func (l *Layer) addPatterns(id string, cc *policy.CommandCondition) error {
	if cc == nil {
		return nil
	}
	l.cmdRules[id] = true
	f := cc.Field
	if f == "" {
		f = "command"
	}
	if !slices.Contains(l.fields, f) {
		l.fields = append(l.fields, f)
	}
	for _, text := range cc.Patterns {
		p, err := shellcmd.CompilePattern(text)
		if err != nil {
			return fmt.Errorf("layer rule %s: %w", id, err)
		}
		prog, _, _ := strings.Cut(strings.Join(strings.Fields(text), " "), " ")
		l.patterns[prog] = append(l.patterns[prog], p)
	}
	return nil
}

// envPrograms change the environment or the meaning of the commands that
// follow them (or run a command given as words): a script that runs one
// is never covered.
var envPrograms = map[string]bool{
	"export": true, "declare": true, "typeset": true, "local": true, "readonly": true, "set": true, "unset": true,
	"env": true, "shopt": true, "enable": true, "hash": true, "alias": true, "source": true, ".": true, "eval": true,
	"exec": true, "builtin": true, "command": true, "read": true, "mapfile": true, "readarray": true, "getopts": true,
	"let": true, "trap": true, "ulimit": true, "umask": true,
}

// covered reports whether the layer's allow rules cover the simple
// command c on their own terms: no assignments before it, a program named
// by a bare name (not a path) that is not one of [envPrograms], run by the
// script itself (not through a wrapper), and one of the rules' patterns
// naming exactly that program (case and all) matching it.
func (l *Layer) covered(c *shellcmd.Command) bool {
	if c.Opaque != "" || c.Program == "" || len(c.Assigns) > 0 || len(c.Via) > 0 ||
		c.Name != c.Program || strings.Contains(c.Name, "/") || envPrograms[c.Program] {
		return false
	}
	if c.Program == "printf" && slices.ContainsFunc(c.Args, func(w shellcmd.Word) bool { return strings.HasPrefix(w.Value, "-v") || w.Dynamic }) {
		return false // printf -v assigns a variable
	}
	for _, p := range l.patterns[c.Program] {
		if p.Match(c) == shellcmd.Yes {
			return true
		}
	}
	return false
}

// scriptsCovered checks the scripts of c's arguments that the allow
// rules' command conditions read: each is analysed again, and a script
// that may set a variable, or has a simple command the layer does not
// cover on its own terms ([Layer.covered]), is not covered. Fail closed:
// what the analysis cannot see through is opaque, and never covered.
func (l *Layer) scriptsCovered(args json.RawMessage) bool {
	if len(l.fields) == 0 {
		return true
	}
	var m map[string]any
	if len(args) > 0 && json.Unmarshal(args, &m) != nil {
		return false
	}
	for _, f := range l.fields {
		var v any = m
		for _, seg := range strings.Split(f, ".") {
			mm, ok := v.(map[string]any)
			if !ok {
				v = nil
				break
			}
			v = mm[seg]
		}
		script, ok := v.(string)
		if !ok {
			if v != nil {
				return false // not a script: a command rule cannot have matched
			}
			continue
		}
		an := shellcmd.Analyze(script)
		if an.SetsVariables {
			return false
		}
		for i := range an.Commands {
			c := &an.Commands[i]
			if c.Program == "" && c.Opaque == "" {
				continue // a redirection alone: judged by writes
			}
			if !l.covered(c) {
				return false
			}
		}
	}
	return true
}

// pathsCovered reports whether the path prefixes of the allow rule id
// cover the call's paths without reaching, below the prefix, a file or
// directory whose name starts with '.' (.git/hooks, .claude, .codex,
// .bashrc): those only an exact rule covers.
func (l *Layer) pathsCovered(id string, args json.RawMessage) bool {
	conds := l.paths[id]
	if len(conds) == 0 {
		return true
	}
	var m map[string]any
	if json.Unmarshal(args, &m) != nil {
		return false
	}
	for _, a := range conds {
		var v any = m
		for _, seg := range strings.Split(a.Field, ".") {
			mm, ok := v.(map[string]any)
			if !ok {
				return false
			}
			v = mm[seg]
		}
		p, ok := v.(string)
		if !ok {
			return false
		}
		p, prefix := l.resolve(p), l.resolve(a.PathPrefix)
		if p == prefix {
			continue
		}
		rest := strings.TrimPrefix(p, strings.TrimSuffix(prefix, "/")+"/")
		if rest == p || hasDotSegment(rest) {
			return false
		}
	}
	return true
}

// resolve cleans p, resolved against the layer's working directory when
// relative and it has one.
func (l *Layer) resolve(p string) string {
	p = filepath.ToSlash(p)
	if !path.IsAbs(p) && l.workdir != "" {
		p = path.Join(l.workdir, p)
	}
	return path.Clean(p)
}

func writes(c shellcmd.Command) bool {
	for _, r := range c.Redirects {
		if r.Write {
			return true
		}
	}
	return false
}

// Getter returns the layer that applies now (the store's latest version,
// compiled); an error fails closed: [Authorizer] denies and
// [PermissionHook] leaves the request to a person.
type Getter func(ctx context.Context) (*Layer, error)

// Authorizer is the layer's deny rules as an authorizer, reading the
// layer at every call (a change applies from the next decision). A layer
// that cannot be read denies (fail closed).
func Authorizer(get Getter) approval.Authorizer {
	return approval.AuthorizerFunc(func(ctx context.Context, c approval.Call) (approval.Verdict, error) {
		l, err := get(ctx)
		if err != nil {
			return approval.Verdict{By: tool.Principal{Kind: tool.PrincipalRule, Name: HookName}}, fmt.Errorf("the rule layer could not be read: %w", err)
		}
		return l.Authorize(ctx, c)
	})
}

// PermissionHook is the layer's allow rules as a Permission hook (register
// it as [HookName]): it answers an ask the layer covers, reading the layer
// at every ask; it has no opinion (a person is asked) when it covers
// nothing or the layer cannot be read.
func PermissionHook(get Getter) hooks.PermissionFunc {
	return func(ctx context.Context, ev *hooks.PermissionEvent) (*tool.Answer, error) {
		l, err := get(ctx)
		if err != nil {
			return nil, nil
		}
		return l.Answer(approval.Call{Tool: ev.Name, CallID: ev.ID, Args: ev.Args, Hints: ev.Hints}), nil
	}
}
