package approval

import (
	"context"
	"fmt"

	"github.com/tollgate-dev/tollgate/internal/toolctx"
	"github.com/tollgate-dev/tollgate/tool"
)

// pathJudge is implemented by an [Authorizer] whose verdicts about a tool
// can depend on the paths in its arguments (a policy of package policy: a
// rule that denies or asks with a pathPrefix or pathGlob condition). [CheckFile] refuses, for
// such a tool, a file with other names (hard links), which a path cannot
// tell apart.
type pathJudge interface {
	// JudgesPaths reports whether some verdict about tool may depend on a
	// path argument, and who would give it (a policy's rule; zero when
	// the judge names none).
	JudgesPaths(tool string) (by tool.Principal, ok bool)
}

// CheckFile judges again, with azs, a call that has already been authorized,
// at the moment its tool uses a file: c is the call with its path argument
// replaced by the real path of the file the tool has opened (see
// builtin.FileUse), and links is that file's number of hard links. It
// closes the gap between the decision about a path and the use of the file
// it leads to: a symbolic link changed in between (by a command the model
// ran) cannot lead a call that was judged on one file to another, since
// what is judged here is what the tool holds open.
//
// It returns nil when the strongest verdict ([Strongest]) is allow, or is
// ask and the call runs after an accepting answer ([tool.Invocation].Answer: a
// person approved it); otherwise an error that names the source and its
// reason: a deny, an ask no one answered for this call, or an authorizer's
// error. A file with more than one hard link is refused when an authorizer
// judges paths for c.Tool (it has a method JudgesPaths(tool string) (by
// tool.Principal, ok bool) that reports true, as a policy of package policy does
// for a tool a pathPrefix or pathGlob rule denies or asks about): another name of the file might lie
// where a rule denies, and no path shows it. With no authorizer it returns
// nil.
func CheckFile(ctx context.Context, c Call, links uint64, azs ...Authorizer) error {
	if links > 1 {
		for _, az := range azs {
			pj, ok := az.(pathJudge)
			if !ok {
				continue
			}
			if by, judges := pj.JudgesPaths(c.Tool); judges {
				if by.IsZero() {
					by = Runtime
				}
				reason := fmt.Sprintf("the file has %d hard links, and the policy judges %s by path: another name of it may be one the policy denies", links, c.Tool)
				return refuse(ctx, Verdict{Decision: Deny, By: by, Reason: reason}, reason)
			}
		}
	}
	var vs []Verdict
	for i, az := range azs {
		v, err := az.Authorize(ctx, c)
		if v.By.IsZero() {
			v.By = tool.Principal{Kind: tool.PrincipalRule, Name: fmt.Sprintf("authorizer#%d", i+1)}
		}
		if err != nil {
			return refuse(ctx, Verdict{Decision: Deny, By: v.By, Reason: "authorization failed: " + err.Error()}, fmt.Sprintf("%s failed: %v", v.By, err))
		}
		if !v.Decision.Valid() {
			return refuse(ctx, Verdict{Decision: Deny, By: v.By, Reason: fmt.Sprintf("authorizer returned invalid decision %q", v.Decision)}, fmt.Sprintf("%s returned invalid decision %q", v.By, v.Decision))
		}
		vs = append(vs, v)
	}
	if len(vs) == 0 {
		return nil
	}
	v := Strongest(vs...)
	reason := v.Reason
	if reason == "" {
		reason = "no reason given"
	}
	switch v.Decision {
	case Deny:
		return refuse(ctx, v, fmt.Sprintf("denied by %s: %s", v.By, reason))
	case Ask:
		if ans := tool.InvocationFrom(ctx).Answer; ans != nil && ans.OK {
			return nil
		}
		return refuse(ctx, v, fmt.Sprintf("%s asks a person about this file (%s), and no one approved this call for it", v.By, reason))
	}
	return nil
}

// refuse returns the refusal of verdict v with text msg, and hands it to the
// call's refusal sink when the context has one (package agent's tool calls
// do): the call's record then says the file was refused, and by whom.
func refuse(ctx context.Context, v Verdict, msg string) *FileRefusal {
	fr := &FileRefusal{Verdict: v, msg: msg}
	if s, ok := ctx.Value(toolctx.RefusalKey{}).(toolctx.RefusalSink); ok {
		s.Refused(fr)
	}
	return fr
}

// FileRefusal is the error of [CheckFile] when it refuses the file: a
// verdict denied it, asked and no one approved the call, an authorizer
// failed (Verdict is then a deny by that authorizer, as in a call's
// authorization), or the file has other names a path-judging authorizer
// cannot see (Verdict is then a deny by the rule the path judge names, or
// by the runtime when it names none). A tool call of package agent whose
// error result carries such a refusal is recorded as denied by
// Verdict.By, with its reason.
type FileRefusal struct {
	// Verdict is the strongest verdict about the file.
	Verdict Verdict
	msg     string
}

// Error says who refused and why.
func (e *FileRefusal) Error() string { return e.msg }
