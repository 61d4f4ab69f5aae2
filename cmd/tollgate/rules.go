package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/approval/inbox"
	"github.com/tollgate-dev/tollgate/internal/layer"
	"github.com/tollgate-dev/tollgate/internal/layerstore"
	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/tool"
)

// newPolicyRulesCmd is 'tollgate policy rules': the rule layer of the
// store (docs/approvals.md, "Approve and remember"), read and changed by
// the person at the terminal, the OS user.
func newPolicyRulesCmd(env *cliEnv) *cobra.Command {
	c := &cobra.Command{
		Use:   "rules",
		Short: "The rule layer: rules remembered from decisions (list, propose, accept, remove, history)",
		Long: `The rule layer holds rules remembered from decisions, per tenant, in the
store (the local SQLite file, or the PostgreSQL store a server shares):
"propose" makes a rule from a decided approval (the tool with the command's
program and leading words, the file's directory, or the exact arguments),
"accept" puts it into the layer as its next version, "remove" takes it out.
From the next decision on, a remembered allow answers the asks it covers
(never a deny of the policy files) and a remembered deny denies. Every change
is kept with who made it (the OS user) and when ("history"). A server's
administrators do the same on the approvals page or over its API.`,
		Args: argsUsage(cobra.NoArgs),
	}
	c.AddCommand(rulesList(env), rulesPropose(env), rulesChange(env, layerstore.LayerAccept), rulesChange(env, layerstore.LayerRemove), rulesHistory(env))
	return c
}

// rulesFlags are the flags every rules command has: the store and the tenant.
type rulesFlags struct {
	state  stateFlags
	tenant string
}

func (f *rulesFlags) add(c *cobra.Command, env *cliEnv) {
	f.state.add(c.Flags(), env)
	c.Flags().StringVar(&f.tenant, "tenant", "", "the tenant whose layer this is (default: the default tenant of local runs)")
}

// open opens the store's rule layers.
func (f *rulesFlags) open(ctx context.Context) (store.Store, layerstore.Layers, error) {
	s, err := f.state.open(ctx)
	if err != nil {
		return nil, nil, err
	}
	ls, ok := s.(layerstore.Layers)
	if !ok {
		_ = s.Close()
		return nil, nil, withCode(exitError, errors.New("this store keeps no rule layer"))
	}
	return s, ls, nil
}

func printJSON(env *cliEnv, v any) error {
	enc := json.NewEncoder(env.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func rulesList(env *cliEnv) *cobra.Command {
	f := &rulesFlags{}
	var jsonOut bool
	c := &cobra.Command{
		Use:   "list",
		Short: "Show the layer's version, its rules and the proposals waiting",
		Args:  argsUsage(cobra.NoArgs),
		RunE: func(c *cobra.Command, args []string) error {
			s, ls, err := f.open(c.Context())
			if err != nil {
				return err
			}
			defer s.Close()
			l, err := ls.GetLayer(c.Context(), f.tenant)
			if err != nil {
				return withCode(exitError, err)
			}
			if jsonOut {
				return printJSON(env, l)
			}
			fmt.Fprintf(env.stdout, "rule layer of tenant %q: version %d, %d rule(s), %d proposal(s)\n", f.tenant, l.Version, len(l.Rules), len(l.Proposed))
			for _, r := range l.Rules {
				fmt.Fprintf(env.stdout, "\n%s: %s %s, in force since version %d, accepted by %s\n%s", field(r.ID), r.Effect, field(r.Tool), r.Version, r.AcceptedBy, textBlock(r.Text))
			}
			for _, r := range l.Proposed {
				fmt.Fprintf(env.stdout, "\n%s: %s %s, proposed by %s (accept with: tollgate policy rules accept %s)\n%s", field(r.ID), r.Effect, field(r.Tool), r.ProposedBy, field(r.ID), textBlock(r.Text))
			}
			for _, r := range l.Unsealed {
				fmt.Fprintf(env.stdout, "\n%s: NOT APPLIED: the store holds it as accepted, but its seal is missing or wrong (written or altered outside tollgate, or accepted with another store key)\n%s", field(r.ID), textBlock(r.Text))
			}
			return nil
		},
	}
	f.add(c, env)
	c.Flags().BoolVar(&jsonOut, "json", false, "print the layer as JSON")
	return c
}

// textBlock is a rule's text for the terminal: each line indented by
// four spaces with its own indentation kept (the YAML must read as the
// layer reads it), control characters escaped, a line cut at 4,000 bytes.
func textBlock(s string) string {
	var out strings.Builder
	for _, line := range splitLines(s) {
		line = safeText(line)
		if len(line) > 4000 {
			cut := 4000
			for cut > 0 && !utf8.RuneStart(line[cut]) {
				cut-- // never split a character
			}
			line = line[:cut] + "…"
		}
		out.WriteString("    " + line + "\n")
	}
	return out.String()
}

func splitLines(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

func rulesPropose(env *cliEnv) *cobra.Command {
	f := &rulesFlags{}
	var deny bool
	c := &cobra.Command{
		Use:   "propose APPROVAL",
		Short: "Propose a rule that remembers the decision on an approval (always allow it; --deny: always deny it)",
		Args:  argsUsage(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			s, ls, err := f.open(c.Context())
			if err != nil {
				return err
			}
			defer s.Close()
			a, err := inbox.New(s, nil).Find(c.Context(), inbox.Query{Tenant: f.tenant, ID: args[0]})
			if err != nil {
				return withCode(exitError, fmt.Errorf("approval %s: %w", field(args[0]), err))
			}
			if a.Status == store.StatusPending {
				return withCode(exitError, fmt.Errorf("approval %s is not decided yet: decide it, then remember the decision", field(a.ID)))
			}
			if a.Unverified {
				return withCode(exitError, fmt.Errorf("approval %s carries no valid seal (its decision was not made through tollgate): no rule can be made of it", field(a.ID)))
			}
			d, err := approval.ParseRequestData(a.Request)
			if err != nil || a.Kind != tool.KindApproval {
				return withCode(exitError, fmt.Errorf("approval %s is not about a tool call's arguments: no rule can be made of it", field(a.ID)))
			}
			eff := approval.Allow
			if deny {
				eff = approval.Deny
			}
			callArgs := d.Args
			if len(a.Data) > 0 && (a.Status == store.StatusApproved || a.Status == store.StatusUsed) {
				callArgs = a.Data // approved with edits: what was approved is what the person wrote
			}
			workdir := ""
			if run, err := s.GetRun(c.Context(), a.RunID); err == nil {
				if cfg, err := runcore.LoadConfig(run); err == nil {
					workdir = cfg.Workdir
				}
			}
			p, err := layer.ProposeIn(layer.NewID(eff, a.Tool), a.Tool, callArgs, eff, a.RunID+"/"+a.ID, workdir)
			if err != nil {
				return withCode(exitError, err)
			}
			r, err := ls.ProposeLayerRule(c.Context(), layerstore.LayerRule{ID: p.ID, Tenant: f.tenant, Text: p.Text, Effect: string(eff), Tool: a.Tool,
				Source: a.RunID + "/" + a.ID, ProposedBy: tool.Principal{Kind: tool.PrincipalPerson, Name: currentUser()}})
			if err != nil {
				return withCode(exitError, err)
			}
			fmt.Fprintf(env.stdout, "proposed rule %s (%s); once accepted, the layer adds:\n%s\naccept it with: tollgate policy rules accept %s\n", field(r.ID), oneLine(p.Scope, 500), textBlock(r.Text), field(r.ID))
			if eff == approval.Allow && !coversItsCall(p, a.Tool, callArgs, workdir) {
				fmt.Fprintln(env.stdout, "note: this rule does not cover the call it was proposed from, which will still be asked: a remembered allow never covers a write redirection, an assignment or environment change, a program named by a path, or what the shell analysis cannot see through (docs/approvals.md)")
			}
			return nil
		},
	}
	f.add(c, env)
	c.Flags().BoolVar(&deny, "deny", false, "remember it as always denied")
	return c
}

func rulesChange(env *cliEnv, action layerstore.LayerAction) *cobra.Command {
	f := &rulesFlags{}
	use, short := "accept RULE", "Accept a proposed rule into the layer, as its next version"
	if action == layerstore.LayerRemove {
		use, short = "remove RULE", "Remove a rule from the layer (or drop a proposal), as its next version"
	}
	c := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  argsUsage(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			s, ls, err := f.open(c.Context())
			if err != nil {
				return err
			}
			defer s.Close()
			by := tool.Principal{Kind: tool.PrincipalPerson, Name: currentUser()}
			var ch layerstore.LayerChange
			if action == layerstore.LayerAccept {
				l, err := ls.GetLayer(c.Context(), f.tenant)
				if err != nil {
					return withCode(exitError, err)
				}
				for _, p := range l.Proposed {
					if p.ID == args[0] {
						if _, err := layer.ParseRule(p.ID, p.Text); err != nil {
							return withCode(exitError, err)
						}
					}
				}
				ch, err = ls.AcceptLayerRule(c.Context(), f.tenant, args[0], by)
				if err != nil {
					return withCode(exitError, err)
				}
			} else if ch, err = ls.RemoveLayerRule(c.Context(), f.tenant, args[0], by); err != nil {
				return withCode(exitError, err)
			}
			fmt.Fprintf(env.stdout, "rule layer version %d: %s %s by %s\n", ch.Version, ch.Action, field(ch.RuleID), ch.By)
			return nil
		},
	}
	f.add(c, env)
	return c
}

func rulesHistory(env *cliEnv) *cobra.Command {
	f := &rulesFlags{}
	var jsonOut bool
	var limit int
	c := &cobra.Command{
		Use:   "history",
		Short: "Show the layer's changes, newest first: version, what, which rule, who, when",
		Args:  argsUsage(cobra.NoArgs),
		RunE: func(c *cobra.Command, args []string) error {
			if limit < 0 {
				return usageErr("policy rules history: --limit %d: want 0 or more", limit)
			}
			s, ls, err := f.open(c.Context())
			if err != nil {
				return err
			}
			defer s.Close()
			h, err := ls.LayerHistory(c.Context(), f.tenant, limit)
			if err != nil {
				return withCode(exitError, err)
			}
			if jsonOut {
				return printJSON(env, h)
			}
			for _, ch := range h {
				fmt.Fprintf(env.stdout, "v%d  %s  %s %s rule %s (%s) by %s\n", ch.Version, ch.At.Local().Format("2006-01-02 15:04:05"), ch.Action, ch.Effect, field(ch.RuleID), field(ch.Tool), ch.By)
			}
			return nil
		},
	}
	f.add(c, env)
	c.Flags().BoolVar(&jsonOut, "json", false, "print the changes as JSON")
	c.Flags().IntVar(&limit, "limit", 0, "show at most this many changes (0: 100)")
	return c
}

// coversItsCall reports whether the allow rule p, once accepted, answers
// the call it was proposed from (tool with args, in workdir): a person
// should know when remembering changes nothing.
func coversItsCall(p layer.Proposal, toolName string, args json.RawMessage, workdir string) bool {
	l, err := layer.Compile(1, []layer.Rule{{ID: p.ID, Text: p.Text, AcceptedBy: tool.Principal{Kind: tool.PrincipalPerson, Name: "check"}}})
	if err == nil {
		l, err = l.WithWorkdir(workdir)
	}
	return err == nil && l.Answer(approval.Call{Tool: toolName, Args: args}) != nil
}
