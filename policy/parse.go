package policy

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/goccy/go-yaml/ast"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/configfile"
	"github.com/tollgate-dev/tollgate/internal/bounded"
	"github.com/tollgate-dev/tollgate/internal/configread"
	"github.com/tollgate-dev/tollgate/internal/glob"
	"github.com/tollgate-dev/tollgate/internal/shellcmd"
)

// LoadPolicy reads the policy file at path; see [ParsePolicy].
func LoadPolicy(path string) (*Policy, []configfile.Problem, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("policy: %w", err)
	}
	defer f.Close()
	return ParsePolicy(path, f)
}

// ParsePolicy reads a policy in YAML from r; name (usually the file name)
// appears in problems and as the policy's name.
//
// The format:
//
//	autonomy: supervised            # full_auto | supervised | cautious | manual; omit to use rules only
//	risks:                          # declared risks, first matching glob wins over hints
//	  - tool: "sudo*"
//	    risk: escalation            # read_only | write | network | destructive | unknown | escalation
//	rules:
//	  - id: no-etc                  # required, unique
//	    description: free text      # ignored
//	    tool: ["write_*", "edit_*"] # glob or list of globs (seed 000 matcher); omit for every tool
//	    hints: {destructive: true}  # readOnly, destructive, idempotent, openWorld: true | false
//	    risk: [network]             # risk level or list of them
//	    args:                       # conditions on argument values, all must hold
//	      path: {pathPrefix: /etc}  # also: prefix, pathGlob (gitignore style), regex (RE2, unanchored), equals (any YAML value)
//	    decision: deny              # allow | ask | deny
//	    reason: the model sees this on deny
//	  - id: no-rm
//	    tool: bash
//	    command: {program: rm}      # each simple command of the script; also pattern: "git push *",
//	                                # flags: [-rf], writes: [/etc], opaque: true, field: command;
//	                                # a string is a pattern: command: "git push *"
//	    decision: deny
//	  - id: no-push
//	    tool: "Bash(git push:*)"    # a Claude Code permission rule as the rule's only tool
//	    decision: ask
//	permissions:                    # Claude Code's permissions object: rules with ids "deny:Read(.env)", ...
//	  deny: ["Read(.env)", "Bash(curl:*)"]
//	  ask: ["Edit(src/**)"]
//	  allow: ["Bash(npm run test:*)"]
//
// Command conditions and permission rules are described at
// [CommandCondition] and [PermissionRule].
//
// Unknown keys, values of the wrong type, unknown decisions, risks and
// autonomy levels, invalid globs, bad regular expressions, command patterns
// and flags, a rule that allows opaque commands, permission rules for tools
// tollgate does not have, duplicate rule IDs,
// YAML aliases and merge keys, and YAML syntax errors are errors; a rule with
// no condition (it matches every call), a deny without a reason, a tool
// glob that can never match a tool name ("edit|write", "mcp__.*") and a risk
// declaration shadowed by an earlier one are warnings. Every problem carries
// its file:line:col. Unlike seed 000's hook registry, which skips bad entries,
// a policy with any error does not load: the result is nil, with every
// problem and a [*configfile.Error] (Problems lists the errors, warnings
// excluded; test for it with errors.As); a policy that loads may still come with
// warnings. The only other error is one reading r.
//
// A document larger than 4 MiB or nested deeper than 32 lists and mappings
// is refused before it is parsed.
func ParsePolicy(name string, r io.Reader) (*Policy, []configfile.Problem, error) {
	src, err := bounded.Read(r, name, bounded.Limits{MaxBytes: maxPolicySize})
	var be *bounded.Error
	if errors.As(err, &be) {
		p := configfile.Problem{File: name, Severity: configfile.SeverityError, Message: be.Message}
		return nil, []configfile.Problem{p}, &configfile.Error{Problems: []configfile.Problem{p}}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("policy %s: %w", name, err)
	}
	// Aliases are refused where they are met, without being expanded.
	if errors.As(bounded.CheckYAML(name, src, bounded.Limits{MaxBytes: maxPolicySize, MaxDepth: maxPolicyDepth, AllowAliases: true}), &be) {
		p := configfile.Problem{File: name, Line: be.Line, Col: be.Col, Severity: configfile.SeverityError, Message: "the policy is " + be.Message}
		return nil, []configfile.Problem{p}, &configfile.Error{Problems: []configfile.Problem{p}}
	}
	ps := &policyParser{name: name}
	spec := ps.parse(src)
	spec.Name = name
	var pol *Policy
	if !ps.failed() {
		pol, err = NewPolicy(spec)
		if err != nil {
			ps.add(nil, configfile.SeverityError, "%v", err)
		}
	}
	slices.SortStableFunc(ps.problems, func(a, b configfile.Problem) int {
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return a.Col - b.Col
	})
	if ps.failed() {
		var errs []configfile.Problem
		for _, p := range ps.problems {
			if p.Severity == configfile.SeverityError {
				errs = append(errs, p)
			}
		}
		return nil, ps.problems, &configfile.Error{Problems: errs}
	}
	return pol, ps.problems, nil
}

// Limits of a policy document, checked before it is parsed.
const (
	maxPolicySize  = 4 << 20 // bytes
	maxPolicyDepth = 32      // nested lists and mappings, the top level counting 1
)

type policyParser struct {
	name     string
	problems []configfile.Problem
}

func (ps *policyParser) failed() bool {
	return slices.ContainsFunc(ps.problems, func(p configfile.Problem) bool { return p.Severity == configfile.SeverityError })
}

func (ps *policyParser) add(n ast.Node, sev configfile.Severity, format string, args ...any) {
	p := configfile.Problem{File: ps.name, Severity: sev, Message: fmt.Sprintf(format, args...)}
	pos := configread.NodePos(n)
	p.Line, p.Col = pos.Line, pos.Col
	ps.problems = append(ps.problems, p)
}

// unknownKey reports key, an unknown what ("key", "hint") of the entry in
// says (" in a rule", or ""), with the key probably meant or, when none is
// close, the keys wanted (want, the text in parentheses).
func (ps *policyParser) unknownKey(n ast.Node, what, key, in, want string, known ...string) {
	if s := configread.Suggest(key, known); s != "" {
		ps.errorf(n, "unknown %s %q%s; did you mean %q?", what, key, in, s)
		return
	}
	ps.errorf(n, "unknown %s %q%s (%s)", what, key, in, want)
}

func (ps *policyParser) errorf(n ast.Node, format string, args ...any) {
	ps.add(n, configfile.SeverityError, format, args...)
}

func (ps *policyParser) warnf(n ast.Node, format string, args ...any) {
	ps.add(n, configfile.SeverityWarning, format, args...)
}

func (ps *policyParser) parse(src []byte) (spec PolicySpec) {
	f, err := configread.ParseYAML(ps.name, src, 0)
	if err != nil {
		ce, _ := errors.AsType[*configfile.Error](err)
		for _, p := range ce.Problems {
			p.Severity = configfile.SeverityError
			ps.problems = append(ps.problems, p)
		}
		return spec
	}
	var body ast.Node
	for _, d := range f.Docs {
		if d == nil || d.Body == nil || configread.IsComment(d.Body) {
			continue
		}
		if body != nil {
			ps.errorf(d.Body, "a policy file holds one YAML document")
			continue
		}
		body = d.Body
	}
	if body == nil {
		ps.warnf(nil, "empty policy: with no rules and no autonomy level every call is allowed")
		return spec
	}
	top, ok := ps.mapping(body, "the policy")
	if !ok {
		return spec
	}
	for _, kv := range top {
		key, kn := ps.key(kv)
		switch key {
		case "":
		case "autonomy":
			if s, ok := ps.str(kv.Value, "autonomy"); ok {
				if a, err := approval.ParseAutonomy(s); err != nil {
					ps.errorf(kv.Value, "%v", err)
				} else {
					spec.Autonomy = a
				}
			}
		case "risks":
			spec.Risks = ps.risks(kv.Value)
		case "rules":
			spec.Rules = append(spec.Rules, ps.rules(kv.Value)...)
		case "permissions":
			spec.Rules = append(spec.Rules, ps.permissions(kv.Value)...)
		case "elicitation":
			spec.Elicitation = append(spec.Elicitation, ps.elicitation(kv.Value)...)
		default:
			ps.unknownKey(kn, "key", key, "", "want autonomy, risks, rules, permissions or elicitation", "autonomy", "risks", "rules", "permissions", "elicitation")
		}
	}
	if spec.Autonomy == "" && len(spec.Rules) == 0 && len(spec.Elicitation) == 0 && !ps.failed() {
		ps.warnf(body, "no rules and no autonomy level: every call is allowed")
	}
	return spec
}

// unwrap strips anchors and tags and rejects aliases (nil return).
func (ps *policyParser) unwrap(n ast.Node) ast.Node {
	for {
		switch x := n.(type) {
		case *ast.AnchorNode:
			n = x.Value
		case *ast.TagNode:
			n = x.Value
		case *ast.AliasNode:
			ps.errorf(x, "YAML aliases are not supported in policy files; write the value out")
			return nil
		default:
			return n
		}
	}
}

func (ps *policyParser) mapping(n ast.Node, what string) ([]*ast.MappingValueNode, bool) {
	n = ps.unwrap(n)
	switch x := n.(type) {
	case nil:
		return nil, false
	case *ast.MappingNode:
		return x.Values, true
	case *ast.MappingValueNode:
		return []*ast.MappingValueNode{x}, true
	case *ast.NullNode:
		return nil, true
	}
	ps.errorf(n, "%s must be a mapping, not %s", what, describe(n))
	return nil, false
}

func (ps *policyParser) sequence(n ast.Node, what string) ([]ast.Node, bool) {
	n = ps.unwrap(n)
	switch x := n.(type) {
	case nil:
		return nil, false
	case *ast.SequenceNode:
		return x.Values, true
	case *ast.NullNode:
		return nil, true
	}
	ps.errorf(n, "%s must be a list, not %s", what, describe(n))
	return nil, false
}

func describe(n ast.Node) string { return configread.Kind(n, false) }

// key returns the text of a mapping key ("" after reporting a problem).
func (ps *policyParser) key(kv *ast.MappingValueNode) (string, ast.Node) {
	var k ast.Node = kv.Key
	if mk, ok := k.(*ast.MappingKeyNode); ok {
		k = mk.Value
	}
	if _, ok := k.(*ast.MergeKeyNode); ok {
		ps.errorf(k, "YAML merge keys (<<) are not supported in policy files")
		return "", k
	}
	k = ps.unwrap(k)
	if k == nil {
		return "", kv.Key
	}
	s, ok := scalarText(k)
	if !ok {
		ps.errorf(k, "a key must be a string, not %s", describe(k))
		return "", k
	}
	return s, k
}

func scalarText(n ast.Node) (string, bool) { return configread.ScalarText(n) }

// str reads a string value; numbers and booleans are rejected so that
// "decision: yes" or "id: 12" say what they are.
func (ps *policyParser) str(n ast.Node, what string) (string, bool) {
	n = ps.unwrap(n)
	if n == nil {
		return "", false
	}
	switch x := n.(type) {
	case *ast.StringNode:
		return x.Value, true
	case *ast.LiteralNode:
		s, _ := scalarText(x)
		return s, true
	}
	ps.errorf(n, "%s must be a string, not %s", what, describe(n))
	return "", false
}

// strs reads a string or a list of strings.
func (ps *policyParser) strs(n ast.Node, what string) ([]string, []ast.Node) {
	u := ps.unwrap(n)
	if u == nil {
		return nil, nil
	}
	if _, ok := u.(*ast.SequenceNode); !ok {
		s, ok := ps.str(u, what)
		if !ok {
			return nil, nil
		}
		return []string{s}, []ast.Node{u}
	}
	items, _ := ps.sequence(u, what)
	var out []string
	var nodes []ast.Node
	for _, it := range items {
		if s, ok := ps.str(it, what); ok {
			out = append(out, s)
			nodes = append(nodes, it)
		}
	}
	if len(items) == 0 {
		ps.errorf(u, "%s: empty list", what)
	}
	return out, nodes
}

// checkGlob reports a tool glob that is invalid (an error) or that can
// never match a tool name (a warning).
func (ps *policyParser) checkGlob(n ast.Node, g string) {
	if !glob.Valid(g) {
		ps.errorf(n, "invalid tool glob %q (empty or with control characters)", g)
	} else if msg := glob.ToolNameProblem(g); msg != "" {
		ps.warnf(n, "%s", msg)
	}
}

func (ps *policyParser) riskList(n ast.Node) []approval.Risk {
	rs, nodes := ps.strs(n, "risk")
	var out []approval.Risk
	for i, r := range rs {
		if !approval.Risk(r).Valid() {
			ps.errorf(nodes[i], "%v", badRisk(approval.Risk(r)))
			continue
		}
		out = append(out, approval.Risk(r))
	}
	return out
}

func (ps *policyParser) risks(n ast.Node) []RiskDeclaration {
	items, _ := ps.sequence(n, "risks")
	var out []RiskDeclaration
	seen := map[string]int{}
	for _, it := range items {
		kvs, ok := ps.mapping(it, "a risk declaration")
		if !ok {
			continue
		}
		var d RiskDeclaration
		var haveTool, haveRisk bool
		for _, kv := range kvs {
			key, kn := ps.key(kv)
			switch key {
			case "":
			case "tool":
				if s, ok := ps.str(kv.Value, "tool"); ok {
					haveTool = true
					d.Tool = s
					if !glob.Valid(s) {
						ps.errorf(kv.Value, "invalid tool glob %q (empty or with control characters)", s)
					} else if msg := glob.ToolNameProblem(s); msg != "" {
						ps.warnf(kv.Value, "%s", msg)
					} else if line, dup := seen[strings.ToLower(s)]; dup {
						ps.warnf(kv.Value, "risk declaration for %q is shadowed by the one on line %d", s, line)
					} else if tk := kv.Value.GetToken(); tk != nil && tk.Position != nil {
						seen[strings.ToLower(s)] = tk.Position.Line
					}
				}
			case "risk":
				if s, ok := ps.str(kv.Value, "risk"); ok {
					haveRisk = true
					d.Risk = approval.Risk(s)
					if !d.Risk.Valid() {
						ps.errorf(kv.Value, "%v", badRisk(d.Risk))
					}
				}
			default:
				ps.unknownKey(kn, "key", key, " in a risk declaration", "want tool, risk", "tool", "risk")
			}
		}
		if !haveTool || !haveRisk {
			ps.errorf(it, "a risk declaration needs tool and risk")
			continue
		}
		out = append(out, d)
	}
	return out
}

func (ps *policyParser) rules(n ast.Node) []Rule {
	items, _ := ps.sequence(n, "rules")
	var out []Rule
	ids := map[string]int{}
	for _, it := range items {
		kvs, ok := ps.mapping(it, "a rule")
		if !ok {
			continue
		}
		var r Rule
		if len(kvs) > 0 { // the entry's first key: where a reader sees it start
			if tk := kvs[0].Key.GetToken(); tk != nil && tk.Position != nil {
				r.Line, r.Col = tk.Position.Line, tk.Position.Column
			}
		}
		var idNode, decNode, cmdNode ast.Node
		var perm string
		var permNode ast.Node
		conditions := 0
		for _, kv := range kvs {
			key, kn := ps.key(kv)
			switch key {
			case "":
			case "id":
				if s, ok := ps.str(kv.Value, "id"); ok {
					r.ID, idNode = s, kv.Value
					if s == "" {
						ps.errorf(kv.Value, "empty rule id")
					} else if line, dup := ids[s]; dup {
						ps.errorf(kv.Value, "duplicate rule id %q (first on line %d)", s, line)
					} else if tk := kv.Value.GetToken(); tk != nil && tk.Position != nil {
						ids[s] = tk.Position.Line
					}
				}
			case "description":
				ps.str(kv.Value, "description")
			case "tool":
				gs, nodes := ps.strs(kv.Value, "tool")
				for i, g := range gs {
					if isPermissionRule(g) {
						if len(gs) > 1 {
							ps.errorf(nodes[i], "the permission rule %q must be the rule's only tool (write one rule per permission)", g)
							continue
						}
						perm, permNode = g, nodes[i]
						continue
					}
					ps.checkGlob(nodes[i], g)
					r.Tools = append(r.Tools, g)
				}
				conditions++
			case "command":
				r.Command = ps.command(kv.Value)
				cmdNode = kv.Value
				conditions++
			case "hints":
				r.Hints = ps.hints(kv.Value)
				conditions++
			case "risk":
				r.Risks = ps.riskList(kv.Value)
				conditions++
			case "args":
				r.Args = ps.args(kv.Value)
				conditions++
			case "decision":
				if s, ok := ps.str(kv.Value, "decision"); ok {
					r.Decision, decNode = approval.Effect(s), kv.Value
					if !r.Decision.Valid() {
						ps.errorf(kv.Value, "%v", badDecision(s))
					}
				}
			case "reason":
				if s, ok := ps.str(kv.Value, "reason"); ok {
					r.Reason = s
				}
			case "mode":
				if s, ok := ps.str(kv.Value, "mode"); ok {
					shadow, err := ruleMode(s)
					if err != nil {
						ps.errorf(kv.Value, "%v", err)
					}
					r.Shadow = shadow
				}
			default:
				ps.unknownKey(kn, "key", key, " in a rule", "want id, description, tool, command, hints, risk, args, decision, reason, mode", "id", "description", "tool", "command", "hints", "risk", "args", "decision", "reason", "mode")
			}
		}
		if perm != "" {
			pr, err := PermissionRule(r.ID, perm, r.Decision)
			switch {
			case err != nil:
				ps.errorf(permNode, "%v", err)
			case pr.Command != nil && r.Command != nil:
				ps.errorf(cmdNode, "rule %q: the permission rule %q already sets the command condition", r.ID, perm)
			default:
				r.Tools = pr.Tools
				if pr.Command != nil {
					r.Command = pr.Command
				}
				r.Args = append(r.Args, pr.Args...)
			}
		}
		if r.Command != nil && r.Command.Opaque && r.Decision == approval.Allow && cmdNode != nil {
			ps.errorf(cmdNode, "rule %q: opaque commands cannot be allowed (ask or deny)", r.ID)
		}
		if idNode == nil {
			ps.errorf(it, "a rule needs an id")
		}
		if decNode == nil {
			ps.errorf(it, "rule %q needs a decision (allow, ask or deny)", r.ID)
		}
		if conditions == 0 && idNode != nil {
			ps.warnf(idNode, "rule %q has no condition (tool, command, hints, risk, args): it matches every call", r.ID)
		}
		if r.Decision == approval.Deny && r.Reason == "" && decNode != nil {
			ps.warnf(decNode, "rule %q denies without a reason: the model only learns that the rule denied the call", r.ID)
		}
		out = append(out, r)
	}
	return out
}

func (ps *policyParser) hints(n ast.Node) HintConditions {
	var h HintConditions
	kvs, _ := ps.mapping(n, "hints")
	for _, kv := range kvs {
		key, kn := ps.key(kv)
		var dst **bool
		switch key {
		case "":
			continue
		case "readOnly":
			dst = &h.ReadOnly
		case "destructive":
			dst = &h.Destructive
		case "idempotent":
			dst = &h.Idempotent
		case "openWorld":
			dst = &h.OpenWorld
		default:
			ps.unknownKey(kn, "hint", key, "", "want readOnly, destructive, idempotent, openWorld", "readOnly", "destructive", "idempotent", "openWorld")
			continue
		}
		v := ps.unwrap(kv.Value)
		b, ok := v.(*ast.BoolNode)
		if !ok {
			if v != nil {
				ps.errorf(v, "hint %s must be true or false, not %s", key, describe(v))
			}
			continue
		}
		val := b.Value
		*dst = &val
	}
	return h
}

func (ps *policyParser) args(n ast.Node) []ArgCondition {
	var out []ArgCondition
	kvs, _ := ps.mapping(n, "args")
	for _, kv := range kvs {
		field, fn := ps.key(kv)
		if field == "" {
			continue
		}
		if slices.Contains(strings.Split(field, "."), "") {
			ps.errorf(fn, "argument field %q has an empty path segment", field)
			continue
		}
		c := ArgCondition{Field: field}
		ops, ok := ps.mapping(kv.Value, fmt.Sprintf("the condition on %q", field))
		if !ok {
			continue
		}
		if len(ops) == 0 {
			ps.errorf(kv.Value, "the condition on %q is empty (want equals, prefix, pathPrefix, pathGlob or regex)", field)
			continue
		}
		for _, op := range ops {
			key, kn := ps.key(op)
			switch key {
			case "":
			case "equals":
				v, err := ps.value(op.Value)
				if err != nil {
					ps.errorf(op.Value, "equals: %v", err)
					continue
				}
				b, err := json.Marshal(v)
				if err != nil {
					ps.errorf(op.Value, "equals: %v", err)
					continue
				}
				c.Equals = b
			case "prefix", "pathPrefix":
				s, ok := ps.str(op.Value, key)
				if !ok {
					continue
				}
				if s == "" {
					ps.errorf(op.Value, "%s is empty: it would match every string", key)
					continue
				}
				if key == "prefix" {
					c.Prefix = s
				} else {
					c.PathPrefix = s
				}
			case "pathGlob":
				s, ok := ps.str(op.Value, key)
				if !ok {
					continue
				}
				if _, err := cleanPathGlob(s); err != nil {
					ps.errorf(op.Value, "%v", err)
					continue
				}
				c.PathGlob = s
			case "regex":
				s, ok := ps.str(op.Value, key)
				if !ok {
					continue
				}
				if s == "" {
					ps.errorf(op.Value, "regex is empty: it would match every string")
					continue
				}
				if _, err := compileArg(ArgCondition{Field: field, Regex: s}); err != nil {
					ps.errorf(op.Value, "%v", err)
					continue
				}
				c.Regex = s
			default:
				ps.errorf(kn, "unknown condition %q on argument %q (want equals, prefix, pathPrefix, pathGlob, regex)", key, field)
			}
		}
		out = append(out, c)
	}
	return out
}

// value converts a YAML node to a JSON-encodable Go value.
func (ps *policyParser) value(n ast.Node) (any, error) {
	n = ps.unwrap(n)
	switch x := n.(type) {
	case nil:
		return nil, errors.New("unsupported value")
	case *ast.NullNode:
		return nil, nil
	case *ast.StringNode:
		return x.Value, nil
	case *ast.LiteralNode:
		s, _ := scalarText(x)
		return s, nil
	case *ast.BoolNode:
		return x.Value, nil
	case *ast.IntegerNode:
		return x.Value, nil
	case *ast.FloatNode:
		return x.Value, nil
	case *ast.InfinityNode, *ast.NanNode:
		return nil, errors.New("infinity and NaN are not JSON numbers")
	case *ast.SequenceNode:
		out := []any{}
		for _, it := range x.Values {
			v, err := ps.value(it)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case *ast.MappingNode, *ast.MappingValueNode:
		kvs, _ := ps.mapping(x, "a value")
		out := map[string]any{}
		for _, kv := range kvs {
			k, _ := ps.key(kv)
			v, err := ps.value(kv.Value)
			if err != nil {
				return nil, err
			}
			out[k] = v
		}
		return out, nil
	}
	return nil, fmt.Errorf("unsupported value (%s)", describe(n))
}

// command reads a rule's command condition: a string (a command pattern,
// as in Claude Code's Bash rules) or a mapping of operators.
func (ps *policyParser) command(n ast.Node) *CommandCondition {
	u := ps.unwrap(n)
	if u == nil {
		return nil
	}
	c := &CommandCondition{}
	if _, ok := u.(*ast.StringNode); ok {
		s, _ := ps.str(u, "command")
		if _, err := shellcmd.CompilePattern(s); err != nil {
			ps.errorf(u, "command: %v", err)
			return nil
		}
		c.Patterns = []string{s}
		return c
	}
	kvs, ok := ps.mapping(u, "command")
	if !ok {
		return nil
	}
	for _, kv := range kvs {
		key, kn := ps.key(kv)
		switch key {
		case "":
		case "field":
			if s, ok := ps.str(kv.Value, "field"); ok {
				c.Field = s
			}
		case "program":
			gs, nodes := ps.strs(kv.Value, "program")
			for i, g := range gs {
				if !glob.Valid(g) || strings.Contains(g, "/") {
					ps.errorf(nodes[i], "invalid program %q (a base name such as rm, or a glob with *)", g)
				}
			}
			c.Programs = gs
		case "pattern":
			ps2, nodes := ps.strs(kv.Value, "pattern")
			for i, p := range ps2 {
				if _, err := shellcmd.CompilePattern(p); err != nil {
					ps.errorf(nodes[i], "%v", err)
				}
			}
			c.Patterns = ps2
		case "flags":
			fs, nodes := ps.strs(kv.Value, "flags")
			for i, f := range fs {
				if !shellcmd.ValidFlag(f) {
					ps.errorf(nodes[i], "invalid flag %q (want -x, -xyz or --name)", f)
				}
			}
			c.Flags = fs
		case "writes":
			ws, nodes := ps.strs(kv.Value, "writes")
			for i, w := range ws {
				if w == "" {
					ps.errorf(nodes[i], "writes: empty path")
				}
			}
			c.Writes = ws
		case "opaque":
			v := ps.unwrap(kv.Value)
			b, ok := v.(*ast.BoolNode)
			if !ok {
				if v != nil {
					ps.errorf(v, "opaque must be true or false, not %s", describe(v))
				}
				continue
			}
			c.Opaque = b.Value
		default:
			ps.unknownKey(kn, "key", key, " in a command condition", "want program, pattern, flags, writes, opaque, field", "program", "pattern", "flags", "writes", "opaque", "field")
		}
	}
	if _, err := compileCommand(*c); err != nil && !ps.failed() {
		ps.errorf(u, "%v", err)
	}
	return c
}

// permissions reads Claude Code's permissions object: allow, ask and deny
// lists of permission rules, each becoming a rule whose id is
// "<list>:<rule>" ("deny:Bash(rm:*)").
func (ps *policyParser) permissions(n ast.Node) []Rule {
	kvs, ok := ps.mapping(n, "permissions")
	if !ok {
		return nil
	}
	var out []Rule
	seen := map[string]bool{}
	for _, kv := range kvs {
		key, kn := ps.key(kv)
		var d approval.Effect
		switch key {
		case "":
			continue
		case "allow", "ask", "deny":
			d = approval.Effect(key)
		default:
			ps.unknownKey(kn, "key", key, " in permissions", "tollgate reads allow, ask and deny; set the rest with tollgate's flags", "allow", "ask", "deny")
			continue
		}
		items, _ := ps.sequence(kv.Value, "permissions."+key)
		for _, it := range items {
			s, ok := ps.str(it, "a permission rule")
			if !ok {
				continue
			}
			id := key + ":" + s
			if seen[id] {
				ps.warnf(it, "permission rule %q is listed twice in %s", s, key)
				continue
			}
			seen[id] = true
			r, err := PermissionRule(id, s, d)
			if err != nil {
				ps.errorf(it, "%v", err)
				continue
			}
			r.Reason = fmt.Sprintf("the permission rule %s says %s", s, d)
			if tk := it.GetToken(); tk != nil && tk.Position != nil {
				r.Line, r.Col = tk.Position.Line, tk.Position.Column
			}
			out = append(out, r)
		}
	}
	return out
}
