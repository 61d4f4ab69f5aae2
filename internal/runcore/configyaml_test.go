package runcore_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/runcore"
)

// A run configuration stored before a configuration file's part of it
// became a type of its own loads, and encodes again to the same JSON
// object (its fields in another order): the stored names are unchanged.
func TestStoredConfigJSON(t *testing.T) {
	const stored = `{"version":1,"agent":"payer","model":{"provider":"openai","name":"gpt-4.1","baseUrl":"https://llm.example/v1","apiKeyEnv":"K","keyGiven":true},` +
		`"workdir":"/ws","system":"s","maxTurns":3,"timeout":"10m0s","deny":["webfetch"],"hooksFiles":["/h.yaml"],"policyFile":"/p.yaml",` +
		`"autonomy":"cautious","approvalTtl":"1h0m0s","mcpFiles":["/m.json"],"recordsFile":"/r.jsonl","answer":"wait",` +
		`"sandbox":{"bash":"workspace","read":["/d"],"connect":[443],"passEnv":["LANG"]},"claude":{"files":["/c.json"],"project":true,"timeout":"5s"},` +
		`"requestDigest":"sha256:00","pins":[{"path":"/p.yaml","sha256":"ab"}]}`
	var c runcore.RunConfig
	if err := json.Unmarshal([]byte(stored), &c); err != nil {
		t.Fatal(err)
	}
	if c.Model.Provider != "openai" || c.Model.BaseURL != "https://llm.example/v1" || c.PolicyFile != "/p.yaml" || len(c.Pins) != 1 {
		t.Fatalf("loaded %+v", c)
	}
	if err := runcore.CheckConfig(c); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	if err := json.Unmarshal(out, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(stored), &b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("encoded again:\n%s\nwant\n%s", out, stored)
	}
}

// The keys a run binds are the fields of RunConfig beside its AgentConfig.
func TestBoundKeys(t *testing.T) {
	if got := strings.Join(runcore.BoundKeys(), ","); got != "version,agent,answer,requestDigest,pins" {
		t.Errorf("BoundKeys() = %s", got)
	}
}
