package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/internal/glob"
	"github.com/tollgate-dev/tollgate/internal/realpath"
	"github.com/tollgate-dev/tollgate/internal/shellcmd"
	"github.com/tollgate-dev/tollgate/tool"
)

// PolicySpec is a policy as plain data: what a policy file holds (see
// [ParsePolicy] for the YAML form) and what [NewPolicy] compiles.
type PolicySpec struct {
	// Name names the policy in errors, usually its file name.
	Name string
	// Autonomy is the autonomy level of the risk layer; empty turns that layer
	// off (only rules decide).
	Autonomy approval.Autonomy
	// Risks declare the risk of tools by name; the first declaration whose glob
	// matches the tool wins over the risk derived from hints.
	Risks []RiskDeclaration
	// Rules are the rules, in file order.
	Rules []Rule
	// Elicitation are the rules on MCP servers asking the person for
	// input (see [Policy.Elicitation]).
	Elicitation []ElicitationRule
}

// RiskDeclaration declares the risk of every tool whose name matches Tool.
type RiskDeclaration struct {
	// Tool is a glob with seed 000 matcher semantics (package internal/glob:
	// only '*' is special, case is ignored, the whole name must match).
	Tool string
	Risk approval.Risk
}

// Rule is one policy rule: when every condition holds, it votes Decision.
// Conditions that are empty (nil, zero) always hold.
type Rule struct {
	// ID names the rule; verdicts say "rule:<ID>". Unique within a policy.
	ID string
	// Tools are globs on the tool name; the rule applies when any matches. Empty
	// means every tool.
	Tools []string
	// Hints are conditions on the tool's hints. A tool without hints is judged
	// by the MCP specification's defaults (readOnly false, destructive true,
	// idempotent false, openWorld true), the strictest reading.
	Hints HintConditions
	// Risks, if not empty, require the call's risk to be one of them.
	Risks []approval.Risk
	// Args are conditions on argument values; all must hold.
	Args []ArgCondition
	// Command, if set, is a condition on the simple commands of a shell
	// script argument (bash's command): the rule votes about each simple
	// command it holds for. See [CommandCondition].
	Command *CommandCondition
	// Decision is what the rule votes when it matches.
	Decision approval.Effect
	// Reason explains the vote; on deny the model sees it.
	Reason string
	// Shadow makes the rule decide nothing: its would-be vote is reported
	// beside the real decision (Evaluation.Shadow, [Policy.AuthorizeShadow]).
	// In YAML, mode: shadow (mode: enforce, the default, decides).
	Shadow bool
	// Line and Col locate the rule's entry in its policy file (1-based),
	// for messages about it; zero for a rule built in code.
	Line, Col int
}

// HintConditions requires hints to have the given values; a nil field is no
// condition. The names are the JSON keys of [tool.Hints]. Destructive is read
// as the MCP specification defines it, meaningful only when ReadOnly is false:
// a read-only tool counts as not destructive, whatever its hint says, so
// `destructive: true` never matches a read-only tool.
type HintConditions struct {
	ReadOnly    *bool
	Destructive *bool
	Idempotent  *bool
	OpenWorld   *bool
}

// ArgCondition is a condition on one argument value. Every operator that is
// set must hold. A condition on a field the call does not have never holds;
// Prefix, PathPrefix and Regex never hold for a value that is not a string.
type ArgCondition struct {
	// Field is the argument's name, or a dotted path into nested objects
	// ("options.mode"). Names that contain dots cannot be addressed.
	Field string
	// Equals, if set, is a JSON value the argument must equal (numbers compare
	// by value, objects regardless of key order).
	Equals json.RawMessage
	// Prefix, if set, is a prefix the string argument must start with.
	Prefix string
	// PathPrefix, if set, is a slash-separated path the string argument must
	// lie under, compared segment-wise after cleaning both with [path.Clean]:
	// "/etc" matches "/etc", "/etc/passwd" and "/tmp/../etc/passwd", not
	// "/etcetera". Relative paths stay relative ("../x" lies under ".."),
	// unless the policy has a working directory ([Policy.WithWorkdir]), against
	// which relative paths on both sides are resolved first, symbolic links
	// included, so that the condition judges the file a path leads to. It judges one
	// argument's text: a grep over "." or a glob "secret/*" reaches files under
	// a denied prefix through other arguments, so deny such tools by name or
	// their pattern arguments too when a directory must stay unseen.
	PathPrefix string
	// Regex, if set, is an RE2 expression ([regexp] syntax) the string argument
	// must match somewhere (anchor it with ^ and $ to match the whole value).
	Regex string
	// PathGlob, if set, is a slash-separated glob the string argument, read
	// as a path, must match, with gitignore's rules (the rules of Claude
	// Code's Read and Edit permissions): * and ? do not cross '/', ** matches
	// any number of directories, [...] is a class; a glob with no '/' but a
	// trailing one matches a base name at any depth (".env" matches
	// "a/b/.env"); any other glob is anchored (relative globs at the
	// working directory, see [Policy.WithWorkdir]). A path also matches when
	// one of its parent directories matches ("secrets" covers
	// "secrets/key.pem"). Paths are cleaned and resolved as for PathPrefix.
	PathGlob string
}

// Policy decides about tool calls from a risk layer (risk against autonomy,
// the matrix of the package doc) and rules, combining every source that has a say as
// deny > ask > allow ([Strongest]): a rule's allow never lowers what the
// autonomy level asks or denies, and every matching deny wins. It implements
// [Authorizer]; verdicts name their source as "rule:<id>" or "autonomy:<level>".
// When no rule matches and no autonomy level is set, it allows by "default".
//
// A Policy is immutable and safe for concurrent use.
type Policy struct {
	spec    PolicySpec
	rules   []compiledRule
	workdir workdir                                            // see WithWorkdir; zero compares paths as written
	paths   map[string]func(json.RawMessage) ([]string, error) // see WithPaths, by tool name
	// autonomyReasons are the reasons of the autonomy level's verdicts, by
	// risk, made once.
	autonomyReasons map[approval.Risk]string
}

type compiledRule struct {
	Rule
	args []compiledArg
	cmd  *compiledCommand
	// reason is the rule's Reason, or the default one naming the rule.
	reason string
}

type compiledArg struct {
	ArgCondition
	path   []string
	equals string // canonical JSON, "" when unset
	prefix string // cleaned PathPrefix
	glob   string // cleaned PathGlob
	re     *regexp.Regexp
}

// NewPolicy checks spec and compiles it. The error lists every problem: an
// invalid autonomy level, risk or decision, an empty or invalid glob, a
// duplicate or empty rule ID, a bad regular expression, an Equals that is not
// JSON, an empty field path.
func NewPolicy(spec PolicySpec) (*Policy, error) {
	var errs []error
	if spec.Autonomy != "" {
		_, err := approval.ParseAutonomy(string(spec.Autonomy))
		errs = append(errs, err)
	}
	for i, d := range spec.Risks {
		if !glob.Valid(d.Tool) {
			errs = append(errs, fmt.Errorf("risk declaration %d: invalid tool glob %q", i+1, d.Tool))
		}
		if !d.Risk.Valid() {
			errs = append(errs, fmt.Errorf("risk declaration %d: %w", i+1, badRisk(d.Risk)))
		}
	}
	spec = cloneSpec(spec) // the policy is immutable: share nothing with the caller
	p := &Policy{spec: spec}
	ids := map[string]bool{}
	for i, r := range spec.Rules {
		where := fmt.Sprintf("rule %d (%s)", i+1, r.ID)
		if r.ID == "" {
			errs = append(errs, fmt.Errorf("rule %d: missing id", i+1))
		} else if ids[r.ID] {
			errs = append(errs, fmt.Errorf("%s: duplicate id %q", where, r.ID))
		}
		ids[r.ID] = true
		if !r.Decision.Valid() {
			errs = append(errs, fmt.Errorf("%s: %w", where, badDecision(string(r.Decision))))
		}
		for _, g := range r.Tools {
			if !glob.Valid(g) {
				errs = append(errs, fmt.Errorf("%s: invalid tool glob %q", where, g))
			}
		}
		for _, rk := range r.Risks {
			if !rk.Valid() {
				errs = append(errs, fmt.Errorf("%s: %w", where, badRisk(rk)))
			}
		}
		cr := compiledRule{Rule: r}
		for _, a := range r.Args {
			ca, err := compileArg(a)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", where, err))
				continue
			}
			cr.args = append(cr.args, ca)
		}
		if r.Command != nil {
			cc, err := compileCommand(*r.Command)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", where, err))
			} else if r.Command.Opaque && r.Decision == approval.Allow {
				errs = append(errs, fmt.Errorf("%s: a rule on opaque commands cannot allow them (ask or deny)", where))
			}
			cr.cmd = cc
		}
		cr.reason = r.Reason
		if cr.reason == "" {
			cr.reason = fmt.Sprintf("policy rule %s says %s", r.ID, r.Decision)
		}
		p.rules = append(p.rules, cr)
	}
	p.makeAutonomyReasons()
	if err := errors.Join(errs...); err != nil {
		name := spec.Name
		if name == "" {
			name = "policy"
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return p, nil
}

func badRisk(r approval.Risk) error {
	return fmt.Errorf("unknown risk %q (want one of read_only, write, network, destructive, unknown, escalation)", r)
}

func badDecision(d string) error {
	return fmt.Errorf("unknown decision %q (want allow, ask or deny)", d)
}

func compileArg(a ArgCondition) (compiledArg, error) {
	ca := compiledArg{ArgCondition: a}
	if a.Field == "" {
		return ca, errors.New("argument condition without a field name")
	}
	ca.path = strings.Split(a.Field, ".")
	if slices.Contains(ca.path, "") {
		return ca, fmt.Errorf("argument field %q has an empty path segment", a.Field)
	}
	if a.Equals == nil && a.Prefix == "" && a.PathPrefix == "" && a.Regex == "" && a.PathGlob == "" {
		return ca, fmt.Errorf("argument %q: no condition (want equals, prefix, pathPrefix, pathGlob or regex)", a.Field)
	}
	if a.PathGlob != "" {
		g, err := cleanPathGlob(a.PathGlob)
		if err != nil {
			return ca, fmt.Errorf("argument %q: %w", a.Field, err)
		}
		ca.glob = g
	}
	if a.Equals != nil {
		c, err := canonicalJSON(a.Equals)
		if err != nil {
			return ca, fmt.Errorf("argument %q: equals is not a JSON value: %v", a.Field, err)
		}
		ca.equals = c
	}
	if a.PathPrefix != "" {
		ca.prefix = path.Clean(a.PathPrefix)
	}
	if a.Regex != "" {
		re, err := regexp.Compile(a.Regex)
		if err != nil {
			return ca, fmt.Errorf("argument %q: bad regex: %v", a.Field, err)
		}
		ca.re = re
	}
	return ca, nil
}

func canonicalJSON(b json.RawMessage) (string, error) {
	var v any
	d := json.NewDecoder(bytes.NewReader(b))
	if err := d.Decode(&v); err != nil {
		return "", err
	}
	if d.More() {
		return "", errors.New("more than one value")
	}
	c, err := json.Marshal(v)
	return string(c), err
}

// Spec returns a copy of the policy's specification.
func (p *Policy) Spec() PolicySpec { return cloneSpec(p.spec) }

// cloneSpec copies spec down to every list and value a rule holds.
func cloneSpec(spec PolicySpec) PolicySpec {
	spec.Risks = slices.Clone(spec.Risks)
	spec.Rules = slices.Clone(spec.Rules)
	for i := range spec.Rules {
		r := &spec.Rules[i]
		r.Tools = slices.Clone(r.Tools)
		r.Risks = slices.Clone(r.Risks)
		r.Args = slices.Clone(r.Args)
		if r.Command != nil {
			c := r.Command.clone()
			r.Command = &c
		}
		for j := range r.Args {
			r.Args[j].Equals = slices.Clone(r.Args[j].Equals)
		}
		h := r.Hints
		for _, b := range []**bool{&h.ReadOnly, &h.Destructive, &h.Idempotent, &h.OpenWorld} {
			if *b != nil {
				v := **b
				*b = &v
			}
		}
		r.Hints = h
	}
	return spec
}

// WithAutonomy returns a copy of p with autonomy level a ("" turns the risk
// layer off), or an error for an unknown level. The command line's --autonomy
// uses it to override the policy file's level.
func (p *Policy) WithAutonomy(a approval.Autonomy) (*Policy, error) {
	if a != "" {
		if _, err := approval.ParseAutonomy(string(a)); err != nil {
			return nil, err
		}
	}
	c := *p
	c.spec.Autonomy = a
	c.makeAutonomyReasons()
	return &c, nil
}

// WithWorkdir returns a copy of p that resolves relative paths against the
// absolute directory dir (the workspace root of the builtin tools) before it
// compares them with pathPrefix, on both sides: then "secret" as a prefix
// also covers "/work/ws/secret/a.txt" and "./secret/a.txt" when dir is
// /work/ws, as the tools would read the same file. Symbolic links are
// resolved too, on both sides and when the call is judged, so a rule judges
// the file a path leads to: with a link public -> secret, "public/a.txt" lies
// under "secret" (the same holds for the path arguments of any tool, an MCP
// filesystem server's included). A file that does not exist yet is judged by
// its existing parent directories. A hard link is a second name of a file,
// which no path can tell apart: the builtin write and edit refuse files with
// more than one. An empty dir compares paths as written, without looking at
// the file system; a relative dir is an error.
//
// The links are those at the time of the decision: a link changed between
// the decision and the call (by a bash call of the same turn, say) is not
// seen here. [CheckFile] closes that gap for tools that report the file
// they opened (the builtin file tools, builtin.Options.CheckFile).
//
// aliases are other absolute spellings of the same directory (the path as
// given and the path with its symbolic links resolved, say): an absolute
// argument under an alias is read as under dir, so that no spelling of a
// workspace file escapes a rule.
func (p *Policy) WithWorkdir(dir string, aliases ...string) (*Policy, error) {
	c := *p
	c.workdir = workdir{}
	if dir == "" {
		return &c, nil
	}
	for _, d := range append([]string{dir}, aliases...) {
		if !path.IsAbs(filepath.ToSlash(d)) {
			return nil, fmt.Errorf("approval: WithWorkdir(%q): the directory must be absolute", d)
		}
	}
	c.workdir.dir = path.Clean(filepath.ToSlash(dir))
	for _, a := range aliases {
		if a := path.Clean(filepath.ToSlash(a)); a != c.workdir.dir {
			c.workdir.aliases = append(c.workdir.aliases, a)
		}
	}
	return &c, nil
}

// WithPaths returns a copy of p that judges a call of the tool named
// toolName (the exact name) once for each path that paths finds in its
// arguments, as if the call had a "path" argument naming that file (with
// its other arguments as they are): a rule votes when it holds for one of
// them, so that a rule on "path" (pathPrefix, pathGlob, prefix, regex)
// judges every file such a call touches. It is how apply_patch, whose
// files are named inside its patch, meets the same path rules as write
// (builtin.PatchPaths finds them). When paths returns an error or no path,
// the call is judged on its arguments as they are. paths must be safe for
// concurrent use; a later WithPaths for the same tool replaces it, and a
// nil paths removes it.
func (p *Policy) WithPaths(toolName string, paths func(args json.RawMessage) ([]string, error)) *Policy {
	c := *p
	c.paths = maps.Clone(p.paths)
	if c.paths == nil {
		c.paths = map[string]func(json.RawMessage) ([]string, error){}
	}
	if paths == nil {
		delete(c.paths, toolName)
	} else {
		c.paths[toolName] = paths
	}
	return &c
}

// variants returns the argument objects a call is judged on: args, or one
// per path of WithPaths for the call's tool.
func (p *Policy) variants(c approval.Call, args map[string]any) []map[string]any {
	f := p.paths[c.Tool]
	if f == nil {
		return []map[string]any{args}
	}
	ps, err := f(c.Args)
	if err != nil || len(ps) == 0 {
		return []map[string]any{args}
	}
	out := make([]map[string]any, 0, len(ps))
	for _, path := range ps {
		v := maps.Clone(args)
		if v == nil {
			v = map[string]any{}
		}
		v["path"] = path
		out = append(out, v)
	}
	return out
}

// workdir is a policy's working directory and its other spellings.
type workdir struct {
	dir     string
	aliases []string
}

// Evaluation explains a policy's decision about one call.
type Evaluation struct {
	// Risk is the call's risk level.
	Risk approval.Risk
	// RiskFrom says where the risk came from: "hints", or "declared:<glob>".
	RiskFrom string
	// Verdicts lists every source that had a say: the matching rules in
	// policy order, then the autonomy level (when set).
	Verdicts []approval.Verdict
	// Verdict is the strongest of Verdicts under deny > ask > allow (the first
	// among equals), or an allow by "default" when Verdicts is empty.
	Verdict approval.Verdict
	// Commands lists the simple commands of the call's shell script, each
	// with what the rules said about it, when some rule with a command
	// condition applies to the call (see [CommandCondition]).
	Commands []CommandEvaluation
	// Shadow lists what the matching shadow rules ([Rule.Shadow]) would
	// have voted, in policy order; they are not in Verdicts.
	Shadow []approval.Verdict
}

// CommandEvaluation is what the rules with a command condition said about
// one simple command of a call's script.
type CommandEvaluation struct {
	// Command is the simple command: its Program (the base name, "rm" for
	// "/bin/rm", "\rm" and "'rm'"; empty for an opaque command), Name (the
	// program word as resolved), Args (words: Value, and Dynamic when part
	// is known only at run time), Assigns, Redirects (Op, Target, Write),
	// Via (the commands that run it: "sudo", "sh -c"), Opaque (why it
	// cannot be seen through) and Text (its source). Its JSON form uses
	// those names in lower case.
	Command shellcmd.Command
	// Verdicts are the votes of the rules that hold for it, in policy order;
	// a rule that may hold (a word known only at run time) votes ask, unless
	// it allows (then it does not vote); an opaque command no rule speaks
	// about gets an ask by "rule:shell-opaque".
	Verdicts []approval.Verdict
	// Verdict is the strongest of Verdicts, nil when no rule had a say.
	Verdict *approval.Verdict
}

// Evaluate decides about c and says why. Arguments that are not a JSON object
// are treated as an empty object (the agent validates them before this step).
func (p *Policy) Evaluate(c approval.Call) Evaluation {
	ev := Evaluation{Risk: approval.RiskOf(c.Hints), RiskFrom: "hints"}
	for _, d := range p.spec.Risks {
		if glob.Match(d.Tool, c.Tool) {
			ev.Risk, ev.RiskFrom = d.Risk, "declared:"+d.Tool
			break
		}
	}
	var args map[string]any
	if p.needsArgs(c.Tool) && len(bytes.TrimSpace(c.Args)) > 0 {
		d := json.NewDecoder(bytes.NewReader(c.Args))
		d.UseNumber()
		_ = d.Decode(&args)
	}
	var cmdRules, shadow []*compiledRule
	variants := p.variants(c, args)
	for i := range p.rules {
		r := &p.rules[i]
		if !slices.ContainsFunc(variants, func(a map[string]any) bool { return r.matches(c, ev.Risk, a, p.workdir) }) {
			continue
		}
		if r.Shadow {
			shadow = append(shadow, r)
			continue
		}
		if r.cmd != nil {
			cmdRules = append(cmdRules, r)
			continue
		}
		ev.Verdicts = append(ev.Verdicts, r.verdict(r.Decision, ""))
	}
	if len(cmdRules) > 0 {
		ev.Commands, ev.Verdicts = p.judgeCommands(cmdRules, args, ev.Verdicts)
	}
	ev.Shadow = p.shadowVerdicts(shadow, args)
	if a := p.spec.Autonomy; a != "" {
		d := autonomyDecision(a, ev.Risk)
		reason, ok := p.autonomyReasons[ev.Risk]
		if !ok {
			reason = autonomyReason(a, ev.Risk)
		}
		ev.Verdicts = append(ev.Verdicts, approval.Verdict{Decision: d, Reason: reason, By: tool.Principal{Kind: tool.PrincipalAutonomy, Name: string(a)}})
	}
	if len(ev.Verdicts) == 0 {
		ev.Verdict = approval.Verdict{Decision: approval.Allow, By: approval.Default, Reason: "no policy rule matched and no autonomy level is set"}
	} else {
		ev.Verdict = approval.Strongest(ev.Verdicts...)
	}
	return ev
}

// needsArgs reports whether evaluating a call of tool reads its arguments:
// a rule for the tool has argument conditions or is about commands, or the
// tool's paths are extracted (WithPaths). Otherwise they are not decoded.
func (p *Policy) needsArgs(tool string) bool {
	if p.paths[tool] != nil {
		return true
	}
	for i := range p.rules {
		r := &p.rules[i]
		if (len(r.args) > 0 || r.cmd != nil) && (len(r.Tools) == 0 || slices.ContainsFunc(r.Tools, func(g string) bool { return glob.Match(g, tool) })) {
			return true
		}
	}
	return false
}

// makeAutonomyReasons makes p.autonomyReasons for p's autonomy level.
func (p *Policy) makeAutonomyReasons() {
	p.autonomyReasons = nil
	if a := p.spec.Autonomy; a != "" {
		p.autonomyReasons = make(map[approval.Risk]string, len(risks))
		for _, r := range risks {
			p.autonomyReasons[r] = autonomyReason(a, r)
		}
	}
}

// autonomyReason is the reason of autonomy level a's verdict on risk r.
func autonomyReason(a approval.Autonomy, r approval.Risk) string {
	if r == approval.RiskEscalation {
		return "escalation is denied at every autonomy level"
	}
	return fmt.Sprintf("%s risk at autonomy %s: %s", r, a, autonomyDecision(a, r))
}

// verdict is r's vote d; note is added to the reason.
func (r *compiledRule) verdict(d approval.Effect, note string) approval.Verdict {
	reason := r.reason
	if reason == "" { // a rule not made by NewPolicy
		reason = r.Reason
		if reason == "" {
			reason = fmt.Sprintf("policy rule %s says %s", r.ID, r.Decision)
		}
	}
	if note != "" {
		reason += " (" + note + ")"
	}
	return approval.Verdict{Decision: d, Reason: reason, By: tool.Principal{Kind: tool.PrincipalRule, Name: r.ID}}
}

// opaqueVerdict is the vote about an opaque command no rule speaks about.
func opaqueVerdict(c *shellcmd.Command) approval.Verdict {
	return approval.Verdict{Decision: approval.Ask, By: shellOpaque, Reason: "a person decides: the policy cannot see what part of the shell command runs (" + c.Opaque + ")"}
}

// judgeCommands applies the command rules rs (whose other conditions hold)
// to each simple command of the script argument(s) they read, and adds
// their votes to vs: every deny and ask of a command, and the allows only
// when every simple command of the script is allowed by some rule.
func (p *Policy) judgeCommands(rs []*compiledRule, args map[string]any, vs []approval.Verdict) ([]CommandEvaluation, []approval.Verdict) {
	var out []CommandEvaluation
	fields := map[string][]*compiledRule{}
	var order []string
	for _, r := range rs {
		f := r.cmd.field()
		if _, ok := fields[f]; !ok {
			order = append(order, f)
		}
		fields[f] = append(fields[f], r)
	}
	seen := map[approval.Verdict]bool{}
	add := func(v approval.Verdict) {
		if !seen[v] {
			seen[v] = true
			vs = append(vs, v)
		}
	}
	for _, f := range order {
		script, ok := lookup(args, strings.Split(f, "."))
		str, isStr := script.(string)
		if !ok || !isStr {
			continue // no script: the command conditions do not hold
		}
		an := shellcmd.Analyze(str)
		var allows []approval.Verdict
		allAllowed := len(an.Commands) > 0
		for i := range an.Commands {
			c := &an.Commands[i]
			ce := CommandEvaluation{Command: *c}
			speaksOpaque := false
			for _, r := range fields[f] {
				t := r.cmd.match(c, p.workdir, an.ChangesDir)
				if r.cmd.Opaque && t == shellcmd.Yes {
					speaksOpaque = true
				}
				switch {
				case t == shellcmd.Yes:
					ce.Verdicts = append(ce.Verdicts, r.verdict(r.Decision, ""))
				case t == shellcmd.Maybe && r.Decision != approval.Allow:
					ce.Verdicts = append(ce.Verdicts, r.verdict(approval.Ask, "the rule may hold: part of the command is known only when it runs; a person decides"))
				}
			}
			if c.Opaque != "" && !speaksOpaque {
				ce.Verdicts = append(ce.Verdicts, opaqueVerdict(c))
			}
			if len(ce.Verdicts) > 0 {
				v := approval.Strongest(ce.Verdicts...)
				ce.Verdict = &v
				if v.Decision == approval.Allow {
					allows = append(allows, v)
				} else {
					add(v)
				}
			} else {
				allAllowed = false
			}
			out = append(out, ce)
		}
		if allAllowed {
			for _, v := range allows {
				add(v)
			}
		}
	}
	return out, vs
}

func lookup(args map[string]any, path []string) (any, bool) {
	var v any = args
	for _, seg := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[seg]; !ok {
			return nil, false
		}
	}
	return v, true
}

// Authorize implements [Authorizer]: the Verdict of [Policy.Evaluate]. It never
// returns an error.
func (p *Policy) Authorize(ctx context.Context, c approval.Call) (approval.Verdict, error) {
	return p.Evaluate(c).Verdict, nil
}

// mcpDefaults are the MCP specification's defaults for missing annotations.
var mcpDefaults = tool.Hints{ReadOnly: false, Destructive: true, Idempotent: false, OpenWorld: true}

func (r *compiledRule) matches(c approval.Call, risk approval.Risk, args map[string]any, wd workdir) bool {
	if len(r.Tools) > 0 && !slices.ContainsFunc(r.Tools, func(g string) bool { return glob.Match(g, c.Tool) }) {
		return false
	}
	h := mcpDefaults
	if c.Hints != nil {
		h = *c.Hints
	}
	if h.ReadOnly {
		h.Destructive = false
	}
	for _, hc := range []struct {
		want *bool
		got  bool
	}{{r.Hints.ReadOnly, h.ReadOnly}, {r.Hints.Destructive, h.Destructive}, {r.Hints.Idempotent, h.Idempotent}, {r.Hints.OpenWorld, h.OpenWorld}} {
		if hc.want != nil && *hc.want != hc.got {
			return false
		}
	}
	if len(r.Risks) > 0 && !slices.Contains(r.Risks, risk) {
		return false
	}
	for i := range r.args {
		if !r.args[i].holds(args, wd) {
			return false
		}
	}
	return true
}

func (a *compiledArg) holds(args map[string]any, wd workdir) bool {
	var v any = args
	for _, seg := range a.path {
		m, ok := v.(map[string]any)
		if !ok {
			return false
		}
		if v, ok = m[seg]; !ok {
			return false
		}
	}
	if a.equals != "" {
		b, err := json.Marshal(v)
		if err != nil {
			return false
		}
		c, err := canonicalJSON(b)
		if err != nil || c != a.equals {
			return false
		}
	}
	if a.Prefix == "" && a.PathPrefix == "" && a.re == nil && a.glob == "" {
		return true
	}
	s, ok := v.(string)
	if !ok {
		return false
	}
	if a.Prefix != "" && !strings.HasPrefix(s, a.Prefix) {
		return false
	}
	if a.PathPrefix != "" && !underPath(wd.resolve(s), wd.resolve(a.prefix)) {
		return false
	}
	if a.re != nil && !a.re.MatchString(s) {
		return false
	}
	if a.glob != "" && !pathGlobMatch(a.glob, wd, s) {
		return false
	}
	return true
}

// resolve cleans p and, when the working directory is set, makes a relative
// p absolute against it, maps an absolute p under an alias onto it, and
// resolves the symbolic links of the part of it that exists, so that p names
// the file the tools would reach. Its ".." are applied as the kernel
// applies them, after the links before them: p is never cleaned as text
// first (lnk/.. is the parent of lnk's target, not the directory holding
// lnk).
func (wd workdir) resolve(p string) string {
	if wd.dir == "" {
		return path.Clean(p)
	}
	if !path.IsAbs(p) {
		return realpath.Resolve(wd.dir + "/" + p)
	}
	for _, a := range wd.aliases {
		if p == a || strings.HasPrefix(p, a+"/") {
			return realpath.Resolve(wd.dir + "/" + strings.TrimPrefix(p, a))
		}
	}
	return realpath.Resolve(p)
}

// underPath reports whether the cleaned path p equals dir or lies below it.
func underPath(p, dir string) bool {
	switch {
	case p == dir:
		return true
	case dir == "/":
		return strings.HasPrefix(p, "/")
	case dir == ".":
		return !strings.HasPrefix(p, "/") && p != ".." && !strings.HasPrefix(p, "../")
	}
	return strings.HasPrefix(p, dir+"/")
}
