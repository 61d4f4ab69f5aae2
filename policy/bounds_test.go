package policy

import (
	"errors"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/configfile"
)

// A 40 KB deeply nested policy needed hundreds of megabytes to parse; it is
// now refused, with a position, before it is parsed, and so is an oversized one.
func TestParsePolicyRefusesBombs(t *testing.T) {
	for name, tc := range map[string]struct{ doc, want string }{
		"nesting": {"rules: " + strings.Repeat("[", 20000) + strings.Repeat("]", 20000), "p.yaml:1:39: error: the policy is nested deeper than 32 levels"},
		"size":    {"rules: []\n" + strings.Repeat("#", maxPolicySize), "p.yaml: error: the document is larger than"},
	} {
		pol, probs, err := ParsePolicy("p.yaml", strings.NewReader(tc.doc))
		var pe *configfile.Error
		if pol != nil || !errors.As(err, &pe) || len(probs) != 1 || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: policy %v, problems %v, error %v; want %q", name, pol, probs, err, tc.want)
		}
	}
}
