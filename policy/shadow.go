package policy

import (
	"context"
	"fmt"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/tool"
	"slices"
)

// ruleMode reads a rule's mode (the key mode of a rule in a policy file):
// enforce, the default, decides; shadow decides nothing, and its would-be
// vote is reported beside the real decision ([Rule.Shadow]). It returns true
// for shadow; errors name the modes.
func ruleMode(s string) (shadow bool, err error) {
	switch s {
	case "enforce":
		return false, nil
	case "shadow":
		return true, nil
	}
	return false, fmt.Errorf("unknown mode %q (want enforce or shadow)", s)
}

// AuthorizeShadow is what the gate asks an authorizer that has it, to record
// shadow votes beside the decision (gate.Decision.Shadow): the Verdict and the
// Shadow of [Policy.Evaluate]. It never returns an error.
func (p *Policy) AuthorizeShadow(ctx context.Context, c approval.Call) (approval.Verdict, []approval.Verdict, error) {
	ev := p.Evaluate(c)
	return ev.Verdict, ev.Shadow, nil
}

// shadowVerdicts are the would-be votes of the matching shadow rules rs,
// in policy order: a rule with a command condition votes about the
// call's simple commands as an enforced one would (its own votes only).
func (p *Policy) shadowVerdicts(rs []*compiledRule, args map[string]any) []approval.Verdict {
	var cmds []*compiledRule
	var vs []approval.Verdict
	for _, r := range rs {
		if r.cmd != nil {
			cmds = append(cmds, r)
			continue
		}
		vs = append(vs, r.verdict(r.Decision, ""))
	}
	if len(cmds) == 0 {
		return vs
	}
	_, cvs := p.judgeCommands(cmds, args, nil)
	for _, v := range cvs {
		if v.By.Kind == tool.PrincipalRule && slices.ContainsFunc(cmds, func(r *compiledRule) bool { return r.ID == v.By.Name }) {
			vs = append(vs, v)
		}
	}
	return vs
}
