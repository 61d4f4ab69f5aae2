package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/builtin"
	"github.com/tollgate-dev/tollgate/policy"
	"github.com/tollgate-dev/tollgate/tool"
)

// maxExplainArgs bounds the --args of 'tollgate policy explain', in bytes.
const maxExplainArgs = 1 << 20

// newPolicyExplainCmd is 'tollgate policy explain': what a policy decides
// about one call, with each simple command of a shell script and the rule
// that decided it.
func newPolicyExplainCmd(env *cliEnv) *cobra.Command {
	var policyFile, toolName, args, workdir, autonomy string
	c := &cobra.Command{
		Use:   "explain [FILE] --tool NAME --args JSON",
		Short: "Show what a policy decides about a tool call, command by command",
		Long: `Show what a policy decides about one tool call: for a shell command, each
simple command the policy found in it (through pipelines, subshells,
substitutions, sh -c, eval, sudo, xargs, find -exec ...), the rule that
decided it, then every vote and the final decision, and for bash the
programs its sandbox refuses at exec whatever the spelling (those the policy
denies outright). The policy file is FILE
or --policy. Paths resolve against --workdir as in 'tollgate run'; the hints
of builtin tools are known, other tools have none (unknown risk).
Exit status 0 whatever the decision; 2 for a bad flag or file.`,
		Example: `  tollgate policy explain examples/demo/policy.yaml --tool bash --args '{"command":"sh -c \"rm notes.txt\""}'`,
		Args:    argsUsage(cobra.MaximumNArgs(1)),
		RunE: func(c *cobra.Command, pos []string) error {
			if len(pos) == 1 {
				if policyFile != "" {
					return usageErr("policy explain: give the policy as FILE or --policy, not both")
				}
				policyFile = pos[0]
			}
			if policyFile == "" && autonomy == "" {
				return usageErr("policy explain: which policy? give FILE, --policy or --autonomy")
			}
			if toolName == "" {
				return usageErr("policy explain: --tool is required")
			}
			if len(args) > maxExplainArgs {
				return usageErr("policy explain: --args is longer than %d bytes", maxExplainArgs)
			}
			var obj map[string]any
			if err := json.Unmarshal([]byte(args), &obj); err != nil || obj == nil {
				return usageErr("policy explain: --args must be a JSON object, e.g. '{\"command\":\"ls\"}'")
			}
			pol, err := loadPolicy(env.stderr, policyFile, autonomy)
			if err != nil {
				return err
			}
			abs, err := env.abs(workdir)
			if err != nil {
				return usageErr("policy explain: --workdir: %v", err)
			}
			real, err := filepath.EvalSymlinks(abs)
			if err != nil {
				real = abs
			}
			if pol, err = pol.WithWorkdir(real, abs); err != nil {
				return usageErr("policy explain: --workdir: %v", err)
			}
			pol = pol.WithPaths("apply_patch", builtin.PatchPaths)
			call := approval.Call{Tool: toolName, Args: json.RawMessage(args), Hints: builtinHints(toolName)}
			printExplanation(env, pol, call)
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&policyFile, "policy", "", "policy file (instead of FILE)")
	f.StringVar(&toolName, "tool", "", "the tool's name, e.g. bash (required)")
	f.StringVar(&args, "args", "{}", "the call's arguments as a JSON object")
	f.StringVar(&workdir, "workdir", ".", "workspace root that relative paths resolve against")
	f.StringVar(&autonomy, "autonomy", "", "autonomy level (overrides the policy file's)")
	return c
}

// builtinHints returns the hints of the builtin tool name, nil for others.
func builtinHints(name string) *tool.Hints {
	tools, err := builtin.New(os.TempDir(), nil)
	if err != nil {
		return nil
	}
	for _, t := range tools {
		if s := t.Spec(); s.Name == name {
			return s.Hints
		}
	}
	return nil
}

func printExplanation(env *cliEnv, pol *policy.Policy, call approval.Call) {
	w := env.stdout
	ev := pol.Evaluate(call)
	fmt.Fprintf(w, "tool %s, risk %s (from %s)\n", safeText(call.Tool), ev.Risk, ev.RiskFrom)
	if ev.Commands != nil {
		fmt.Fprintf(w, "simple commands (%d):\n", len(ev.Commands))
		for i, ce := range ev.Commands {
			c := ce.Command
			what := c.Program
			switch {
			case c.Opaque != "":
				what = "opaque: " + c.Opaque
			case what == "":
				what = "redirections only"
			}
			if len(c.Via) > 0 {
				what += ", via " + strings.Join(c.Via, " > ")
			}
			fmt.Fprintf(w, "  %d. %s  [%s]\n", i+1, oneLineSafe(c.Text), safeText(what))
			if ce.Verdict == nil {
				fmt.Fprintf(w, "     no rule\n")
				continue
			}
			fmt.Fprintf(w, "     %s by %s: %s\n", ce.Verdict.Decision, ce.Verdict.By, safeText(ce.Verdict.Reason))
		}
		allowed, unjudged := 0, 0
		for _, ce := range ev.Commands {
			switch {
			case ce.Verdict == nil:
				unjudged++
			case ce.Verdict.Decision == approval.Allow:
				allowed++
			}
		}
		if allowed > 0 && unjudged > 0 {
			fmt.Fprintf(w, "  (the allows do not count: %d simple command(s) no rule allows)\n", unjudged)
		}
	}
	fmt.Fprintln(w, "votes:")
	if len(ev.Verdicts) == 0 {
		fmt.Fprintln(w, "  none")
	}
	for _, v := range ev.Verdicts {
		fmt.Fprintf(w, "  %-5s by %s: %s\n", v.Decision, v.By, safeText(v.Reason))
	}
	fmt.Fprintf(w, "decision: %s by %s: %s\n", ev.Verdict.Decision, ev.Verdict.By, safeText(ev.Verdict.Reason))
	for _, v := range ev.Shadow {
		fmt.Fprintf(w, "shadow (decides nothing): %s by %s: %s\n", v.Decision, v.By, safeText(v.Reason))
	}
	if call.Tool == "bash" {
		if progs := pol.DeniedPrograms("bash"); len(progs) > 0 {
			fmt.Fprintf(w, "refused at exec by bash's sandbox, whatever the spelling: %s\n", safeText(strings.Join(progs, ", ")))
		}
	}
}

// oneLineSafe shows a command's text on one line, terminal-safe.
func oneLineSafe(s string) string {
	s = strings.ReplaceAll(s, "\n", "\\n")
	s = strings.ReplaceAll(s, "\r", "\\r")
	s = strings.ReplaceAll(s, "\t", "\\t")
	return safeText(s)
}
