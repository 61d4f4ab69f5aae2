package agent

import (
	"context"
	"fmt"
	"strings"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/hooks"
	"github.com/tollgate-dev/tollgate/internal/toolcall"
	"github.com/tollgate-dev/tollgate/tool"
)

// governance is what an agent hands down to the tools it runs, so that a
// sub-agent started by one of them is governed by its callers too.
type governance struct {
	authorizers []approval.Authorizer // the caller's own and everything it inherited
	waitFor     tool.WaitFunc
	depth       int
	// hooks are the caller's, whose SubagentStop hooks judge the final
	// answer of a sub-agent its tools run; parent is the caller's run.
	hooks  *hooks.Hooks
	parent hooks.RunInfo
}

type governanceKey struct{}

// inherited returns the governance handed down through ctx, if any.
func inherited(ctx context.Context) *governance {
	g, _ := ctx.Value(governanceKey{}).(*governance)
	return g
}

// handDown returns a's governance (with what a inherited through ctx, the
// run's context) for the tools a runs; it is made once per run.
func (a *Agent) handDown(ctx context.Context) *governance {
	g := &governance{waitFor: a.opts.WaitFor, hooks: a.opts.Hooks}
	g.parent, _ = hooks.RunFrom(ctx)
	for _, az := range a.opts.Authorizers {
		g.authorizers = append(g.authorizers, prefixed{az, a.opts.ID})
	}
	if up := inherited(ctx); up != nil {
		g.authorizers = append(g.authorizers, up.authorizers...)
		g.depth = up.depth + 1
		if g.waitFor == nil {
			g.waitFor = up.waitFor
		}
	}
	return g
}

// prefixed names an inherited authorizer's verdicts after the agent it came
// from: the principal's name becomes "<agent id>/<name>" ("rule:parent/no-rm").
type prefixed struct {
	az    approval.Authorizer
	agent string
}

func (p prefixed) Authorize(ctx context.Context, c approval.Call) (approval.Verdict, error) {
	v, err := p.az.Authorize(ctx, c)
	if v.By.IsZero() {
		v.By = tool.Principal{Kind: tool.PrincipalRule, Name: "authorizer"}
	}
	v.By.Name = p.agent + "/" + v.By.Name
	return v, err
}

// maxSubAgentDepth bounds how deeply sub-agents may nest (an agent used as a
// tool by an agent used as a tool ...); a deeper call is an error result.
const maxSubAgentDepth = 8

type subAgentInput struct {
	Prompt string `json:"prompt" jsonschema:"the task for the sub-agent, in plain language"`
}

// AsTool returns a tool named name that runs a as a sub-agent on the prompt it
// is given ({"prompt": string}) and returns the sub-agent's final answer.
// Sub-agents nest at most 8 deep; a deeper call is an error result.
//
// The sub-agent is governed by every agent above it (case C16): each
// authorizer of the agent that calls the tool, and of that agent's own
// callers, also judges every call the sub-agent makes, combined with the
// sub-agent's own as deny > ask > allow, so a child is denied whatever its
// parent's policy denies. Their verdicts are recorded with the principal's
// name prefixed by the agent's ID ("rule:<agent id>/<rule id>").
// When the sub-agent has no WaitFor of its own it asks its pending requests
// through the nearest caller's WaitFor. A sub-agent that halts pending with no
// WaitFor anywhere, or ends incomplete or failed, gives an error result that
// says so (listing the pending requests); a halted sub-run is not resumable
// through its parent.
//
// When the sub-agent gives its final answer and its own Stop hooks let it
// end, the calling agent's SubagentStop hooks are asked: a reason continues
// the sub-agent with it as a user message, within the same cap of
// 8 continuations per run.
//
// The tool has no hints (unknown, so gates treat it as mutating). AsTool
// returns an error for an invalid name.
func (a *Agent) AsTool(name, description string) (tool.Tool, error) {
	return tool.New(name, description, func(ctx context.Context, in subAgentInput) (tool.Result, error) {
		if g := inherited(ctx); g != nil && g.depth >= maxSubAgentDepth {
			return tool.Errorf("sub-agent %s: nested more than %d deep", name, maxSubAgentDepth), nil
		}
		res, err := a.Run(toolcall.Without(ctx), in.Prompt)
		if err != nil {
			return tool.Errorf("sub-agent %s failed: %v", name, err), nil
		}
		switch res.Status {
		case StatusDone:
			return tool.Result{Output: res.Text, Metadata: map[string]any{"subAgentRun": res.RunID, "toolCalls": len(res.ToolCalls)}}, nil
		case StatusPending:
			var ps []string
			for _, p := range res.Pending {
				ps = append(ps, p.ID+": "+p.Prompt)
			}
			return tool.Errorf("sub-agent %s halted waiting for answers (no one to ask here): %s", name, strings.Join(ps, "; ")), nil
		}
		return tool.Errorf("sub-agent %s ended %s: %s", name, res.Status, res.Reason), nil
	}, &tool.FuncOptions{Source: fmt.Sprintf("agent:%s", a.opts.ID)})
}
