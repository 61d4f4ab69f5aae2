// Package policy is the policy language of tollgate: the authorizers
// written in YAML (seed 000's "approval policies"), Claude Code's
// permission rules and the shell-aware command conditions, over the
// vocabulary of package approval (effects, verdicts, principals, risk,
// autonomy). A rule's allow is a vote, never an exemption: it cannot lower
// an ask or a deny of another rule or of the autonomy level.
//
// [Policy] is the built-in [approval.Authorizer], loaded from YAML with [LoadPolicy] or
// [ParsePolicy] (problems come back as data with file:line:col) or built with
// [NewPolicy]. It has two layers, combined deny > ask > allow with each other
// and, in the agent, with every hook and other authorizer:
//
//   - risk against autonomy: each call has a [approval.Risk] (from its tool's hints by
//     [approval.RiskOf], or declared for the tool in the policy) and the policy an
//     [approval.Autonomy] level, and the matrix below decides.
//   - rules: a tool glob (seed 000's matcher semantics: only '*' is special,
//     case is ignored, no implicit prefix), conditions on the hints, the risk
//     and argument values (equals, prefix, pathPrefix, pathGlob, regex), an
//     id and a decision.
//
// The matrix of risk against autonomy:
//
//	risk         full_auto  supervised  cautious  manual
//	read_only    allow      allow       allow     ask
//	write        allow      allow       ask       ask
//	network      allow      ask         ask       ask
//	destructive  allow      ask         ask       ask
//	unknown      allow      ask         ask       ask
//	escalation   deny       deny        deny      deny
//
// Each level is at least as strict as the one before it for every risk;
// unknown (a tool without hints, treated as mutating) is asked about wherever
// destructive is, escalation is denied at every level, and an invalid level
// or risk denies (fail closed).
//
// A rule may also carry a [CommandCondition]: the shell script in bash's
// command argument is parsed (bash syntax, with mvdan.cc/sh) and the rule judges
// every simple command in it, with the program matched by base name after
// quotes, backslashes and paths are resolved and wrappers (sh -c, eval,
// sudo, env, xargs, find -exec and -delete, ...) are seen through. Anything
// the analysis cannot see through is asked about (by "rule:shell-opaque"), never
// allowed. Claude Code's permission rules ("Bash(git push:*)",
// "Read(.env)", "Edit(src/**)") are accepted as a shorthand with the same
// meaning ([PermissionRule]).
//
// [Policy.WithPaths] lets the path rules judge the files named inside an
// argument (apply_patch's patch); a policy judges paths
// ([Policy.JudgesPaths]), so that approval.CheckFile refuses files with other
// names where a rule judges the tool by path.
package policy
