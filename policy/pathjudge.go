package policy

import (
	"slices"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/internal/glob"
	"github.com/tollgate-dev/tollgate/tool"
)

// JudgesPaths is what [approval.CheckFile] asks an authorizer: it reports whether a rule that
// denies or asks, and that may apply to tool, has a pathPrefix or pathGlob
// condition.
func (p *Policy) JudgesPaths(toolName string) (tool.Principal, bool) {
	return p.pathRule(toolName)
}

// pathRule returns the principal of the first rule that denies or asks, may
// apply to toolName, and has a pathPrefix or pathGlob condition.
func (p *Policy) pathRule(toolName string) (tool.Principal, bool) {
	for i := range p.rules {
		r := &p.rules[i]
		if r.Decision == approval.Allow {
			continue
		}
		if len(r.Tools) > 0 && !slices.ContainsFunc(r.Tools, func(g string) bool { return glob.Match(g, toolName) }) {
			continue
		}
		for _, a := range r.args {
			if a.PathPrefix != "" || a.glob != "" {
				return tool.Principal{Kind: tool.PrincipalRule, Name: r.ID}, true
			}
		}
	}
	return tool.Principal{}, false
}
