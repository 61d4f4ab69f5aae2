package policy

import (
	"fmt"

	"github.com/goccy/go-yaml/ast"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/internal/glob"
)

// ElicitationRule says whether MCP servers may ask the person for input
// in the middle of a call (MCP elicitation): in a policy file, an entry of
// the top-level "elicitation" list with the keys id, server, trusted,
// decision and reason. Conditions that are empty hold for every server.
type ElicitationRule struct {
	// ID names the rule; a declined elicitation says "rule:<ID>". Unique
	// among the policy's elicitation rules.
	ID string
	// Server is a glob of server names as mcp.json names them (package
	// internal/glob: only '*' is special, case is ignored); empty: any.
	Server string
	// Trusted, when set, holds only for servers trusted (true) or not
	// trusted (false) in mcp.json ("trust": true).
	Trusted *bool
	// Decision is allow or deny; a server denied is told decline, and the
	// person is not asked.
	Decision approval.Effect
	// Reason says why; the log and the call's record show it.
	Reason string
}

// maxElicitationRules bounds the elicitation rules of one policy.
const maxElicitationRules = 1000

// Elicitation reports whether the MCP server named server (trusted or
// not in mcp.json) may ask the person for input: by the policy's
// elicitation rules, deny > allow among those that hold; no rule that
// holds allows. A deny names its rule ("rule:<ID>") and reason.
func (p *Policy) Elicitation(server string, trusted bool) (ok bool, by, reason string) {
	if p == nil {
		return true, "", ""
	}
	for _, r := range p.spec.Elicitation {
		if r.Decision != approval.Deny {
			continue
		}
		if r.Server != "" && !glob.Match(r.Server, server) {
			continue
		}
		if r.Trusted != nil && *r.Trusted != trusted {
			continue
		}
		reason := r.Reason
		if reason == "" {
			reason = fmt.Sprintf("policy rule %s forbids MCP server %q to ask for input", r.ID, server)
		}
		return false, "rule:" + r.ID, reason
	}
	return true, "", ""
}

// elicitation reads the top-level "elicitation" list.
func (ps *policyParser) elicitation(n ast.Node) []ElicitationRule {
	items, _ := ps.sequence(n, "elicitation")
	if len(items) > maxElicitationRules {
		ps.errorf(n, "%d elicitation rules; at most %d", len(items), maxElicitationRules)
		return nil
	}
	var out []ElicitationRule
	ids := map[string]bool{}
	for _, it := range items {
		kvs, ok := ps.mapping(it, "an elicitation rule")
		if !ok {
			continue
		}
		var r ElicitationRule
		for _, kv := range kvs {
			key, kn := ps.key(kv)
			switch key {
			case "":
			case "id":
				if s, ok := ps.str(kv.Value, "id"); ok {
					r.ID = s
					if s == "" || ids[s] {
						ps.errorf(kv.Value, "elicitation rule id %q is empty or used twice", s)
					}
					ids[s] = true
				}
			case "server":
				if s, ok := ps.str(kv.Value, "server"); ok {
					r.Server = s
					if !glob.Valid(s) {
						ps.errorf(kv.Value, "invalid server glob %q (empty or with control characters)", s)
					}
				}
			case "trusted":
				v := ps.unwrap(kv.Value)
				if b, ok := v.(*ast.BoolNode); ok {
					val := b.Value
					r.Trusted = &val
				} else if v != nil {
					ps.errorf(v, "trusted must be true or false, not %s", describe(v))
				}
			case "decision":
				if s, ok := ps.str(kv.Value, "decision"); ok {
					r.Decision = approval.Effect(s)
					if r.Decision != approval.Allow && r.Decision != approval.Deny {
						ps.errorf(kv.Value, "elicitation decision %q: want allow or deny", s)
					}
				}
			case "reason":
				if s, ok := ps.str(kv.Value, "reason"); ok {
					r.Reason = s
				}
			default:
				ps.errorf(kn, "unknown key %q in an elicitation rule (want id, server, trusted, decision, reason)", key)
			}
		}
		if r.ID == "" || r.Decision == "" {
			ps.errorf(it, "an elicitation rule needs id and decision")
			continue
		}
		out = append(out, r)
	}
	return out
}
