package claudegate

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/builtin"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/policy"
	"github.com/tollgate-dev/tollgate/tool"
)

// codexPatchTool is Codex's file edit tool, whose hook events hold the
// patch as tool_input.command ("*** Begin Patch ...", the format of
// tollgate's apply_patch).
const codexPatchTool = "apply_patch"

// codexPatchPaths returns the paths of the files a Codex apply_patch
// call's patch touches, as the patch names them ([builtin.PatchPaths]);
// the error says why its arguments hold no patch that parses.
func codexPatchPaths(args json.RawMessage) ([]string, error) {
	var in struct {
		Command string `json:"command"`
	}
	if err := json.Unmarshal(args, &in); err != nil {
		return nil, err
	}
	if in.Command == "" {
		return nil, errors.New("no patch in the arguments' command")
	}
	b, err := json.Marshal(map[string]string{"patchText": in.Command})
	if err != nil {
		return nil, err
	}
	return builtin.PatchPaths(b)
}

// patchPolicy returns p as a Codex session's calls need it: each file an
// apply_patch call touches is a path its rules see, as in a run on a
// workspace ([policy.Policy.WithPaths]); p itself for other agents.
func (b *Bridge) patchPolicy(p *policy.Policy) *policy.Policy {
	if b.opts.Source != gate.SourceCodex {
		return p
	}
	return p.WithPaths(codexPatchTool, codexPatchPaths)
}

// patchAuthorizers returns azs as a Codex session working in cwd needs
// them: each judges an apply_patch call once for each file its patch
// touches, as a call with that file's path (absolute against cwd) as its
// "path" argument, and a patch whose files cannot be read is denied; azs
// themselves for other agents.
func (b *Bridge) patchAuthorizers(azs []approval.Authorizer, cwd string) []approval.Authorizer {
	if b.opts.Source != gate.SourceCodex {
		return azs
	}
	out := make([]approval.Authorizer, 0, len(azs)+1)
	out = append(out, readablePatch{})
	for _, az := range azs {
		out = append(out, perFile{az: az, cwd: cwd})
	}
	return out
}

// readablePatch denies a Codex apply_patch call whose patch tollgate
// cannot read: the files it would touch could not be judged.
type readablePatch struct{}

func (readablePatch) Authorize(_ context.Context, c approval.Call) (approval.Verdict, error) {
	if c.Tool != codexPatchTool {
		return approval.Verdict{Decision: approval.Allow, By: approval.Default}, nil
	}
	if _, err := codexPatchPaths(c.Args); err != nil {
		return approval.Verdict{Decision: approval.Deny, By: tool.Principal{Kind: tool.PrincipalRule, Name: "codex-apply-patch"},
			Reason: "tollgate could not read the files this patch touches (" + err.Error() + "), so it cannot judge them"}, nil
	}
	return approval.Verdict{Decision: approval.Allow, By: approval.Default}, nil
}

// perFile is az judging a Codex apply_patch call once for each file, its
// arguments with that file as "path": the first deny, else the first ask,
// else az's verdict on the last file.
type perFile struct {
	az  approval.Authorizer
	cwd string
}

func (f perFile) Authorize(ctx context.Context, c approval.Call) (approval.Verdict, error) {
	if c.Tool != codexPatchTool {
		return f.az.Authorize(ctx, c)
	}
	paths, err := codexPatchPaths(c.Args)
	var args map[string]any
	if err != nil || len(paths) == 0 || json.Unmarshal(c.Args, &args) != nil || args == nil {
		return f.az.Authorize(ctx, c) // readablePatch denies a patch it cannot read
	}
	var out approval.Verdict
	for _, p := range paths {
		if !filepath.IsAbs(p) && filepath.IsAbs(f.cwd) {
			p = f.cwd + string(filepath.Separator) + p // not cleaned: lnk/.. is judged where the kernel goes
		}
		args["path"] = p
		one := c
		if one.Args, err = json.Marshal(args); err != nil {
			return approval.Verdict{}, err
		}
		v, err := f.az.Authorize(ctx, one)
		if err != nil || v.Decision == approval.Deny {
			return v, err
		}
		if out.Decision != approval.Ask {
			out = v
		}
	}
	return out, nil
}
