package claudegate

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/internal/realpath"
	"github.com/tollgate-dev/tollgate/tool"
)

// ProtectFiles returns an authorizer that denies every call whose "path"
// argument (Write, Edit and MultiEdit's file_path, as the bridge maps
// them) names one of paths or lies under one of them: the files that
// govern the agent (the policies, hooks and records files, the state
// directory, the workspace's .claude settings), which it must not rewrite
// to govern its next call. A relative path is judged against the
// session's workspace when the call says it, and denied otherwise. The
// paths are made absolute and cleaned; each is also compared by its real
// path, and a path a file tool names by the file the kernel would reach
// through it. Commands the agent's shell runs are not judged here.
func ProtectFiles(paths ...string) approval.Authorizer {
	var clean []string
	for _, p := range paths {
		if p == "" {
			continue
		}
		if a, err := filepath.Abs(p); err == nil {
			clean = append(clean, a)
			if r := realpath.Resolve(a); r != a {
				clean = append(clean, r) // the links of the part that exists resolved
			}
		}
	}
	by := tool.Principal{Kind: tool.PrincipalRule, Name: "governing-files"}
	return approval.AuthorizerFunc(func(_ context.Context, c approval.Call) (approval.Verdict, error) {
		var a struct {
			Path string `json:"path"`
		}
		if json.Unmarshal(c.Args, &a) != nil || a.Path == "" || (c.Hints != nil && c.Hints.ReadOnly) {
			return approval.Verdict{Decision: approval.Allow, By: approval.Default}, nil
		}
		p := filepath.Clean(a.Path)
		if !filepath.IsAbs(p) {
			return approval.Verdict{Decision: approval.Deny, By: by, Reason: "a file tool's path must be absolute here, so that it can be told apart from tollgate's governing files"}, nil
		}
		// Also the file the kernel would reach: the links of the part of the
		// path that exists resolved, each ".." applied after the links
		// before it (the path as given, never cleaned as text first).
		cands := []string{p, realpath.Resolve(a.Path)}
		for _, q := range clean {
			for _, c := range cands {
				if c == q || strings.HasPrefix(c, q+string(filepath.Separator)) {
					return approval.Verdict{Decision: approval.Deny, By: by, Reason: q + " governs this agent (its policy, hooks, records or state): the agent may not change it"}, nil
				}
			}
		}
		return approval.Verdict{Decision: approval.Allow, By: approval.Default}, nil
	})
}
