package archtest

import (
	"os/exec"
	"strings"
	"testing"
)

// The agent and the gate decide calls with the vocabulary of approval,
// never with a parser: neither the YAML library nor the shell parser of
// the policy language may be among their dependencies.
func TestAgentPullsNoParser(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", module+"/agent", module+"/gate").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, parser := range []string{"github.com/goccy/go-yaml", "mvdan.cc/sh/"} {
			if strings.HasPrefix(dep, parser) {
				t.Errorf("the agent depends on %s", dep)
			}
		}
	}
}
