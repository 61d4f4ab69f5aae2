package toolkit_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/toolkit"
)

func TestGeminiSchema(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty", ``, `{"type":"object"}`},
		{"drops unknown keywords", `{"$schema":"x","$id":"y","type":"object","additionalProperties":false,"properties":{"a":{"type":"string","examples":["q"],"$comment":"c"}}}`,
			`{"type":"object","properties":{"a":{"type":"string"}}}`},
		{"nullable", `{"type":["null","integer"]}`, `{"type":"integer","nullable":true}`},
		{"only null", `{"type":["null"]}`, `{"nullable":true}`},
		{"several types", `{"type":["string","number"],"description":"d"}`, `{"anyOf":[{"type":"string"},{"type":"number"}],"description":"d"}`},
		{"const", `{"const":"x"}`, `{"type":"string","enum":["x"]}`},
		{"non-string const dropped", `{"const":3,"type":"integer"}`, `{"type":"integer"}`},
		{"string enum", `{"type":"string","enum":["a","b"]}`, `{"type":"string","enum":["a","b"]}`},
		{"number enum dropped", `{"type":"number","enum":[1.5,2]}`, `{"type":"number"}`},
		{"formats", `{"type":"object","properties":{"u":{"type":"string","format":"uri"},"t":{"type":"string","format":"date-time"}}}`,
			`{"type":"object","properties":{"u":{"type":"string"},"t":{"type":"string","format":"date-time"}}}`},
		{"oneOf becomes anyOf", `{"oneOf":[{"type":"string"},{"type":"null"}]}`, `{"anyOf":[{"type":"string"},{"nullable":true}]}`},
		{"required filtered", `{"type":"object","properties":{"a":{"type":"string"}},"required":["a","b"]}`,
			`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`},
		{"required without properties", `{"type":"object","required":["a"]}`, `{"type":"object"}`},
		{"empty properties dropped", `{"type":"object","properties":{}}`, `{"type":"object"}`},
		{"items", `{"type":"array","items":{"type":["string","null"]},"maxItems":3}`, `{"type":"array","items":{"type":"string","nullable":true},"maxItems":3}`},
		{"ref inlined with sibling description", `{"type":"object","properties":{"p":{"$ref":"#/definitions/P","description":"mine"}},"definitions":{"P":{"type":"string","description":"theirs"}}}`,
			`{"type":"object","properties":{"p":{"type":"string","description":"mine"}}}`},
		{"dangling ref", `{"$ref":"#/$defs/missing"}`, `{"type":"object"}`},
		{"numbers kept exactly", `{"type":"integer","minimum":1,"maximum":9007199254740993}`, `{"type":"integer","minimum":1,"maximum":9007199254740993}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := toolkit.GeminiSchema(json.RawMessage(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(got)
			if !jsonEqual(b, json.RawMessage(tt.want)) {
				t.Errorf("GeminiSchema(%s)\n got %s\nwant %s", tt.in, b, tt.want)
			}
		})
	}
	for _, bad := range []string{`[]`, `"x"`, `null`, `{`} {
		if _, err := toolkit.GeminiSchema(json.RawMessage(bad)); err == nil {
			t.Errorf("GeminiSchema(%s) succeeded, want an error", bad)
		}
	}
}

func TestGeminiToolsErrorNamesTheTool(t *testing.T) {
	_, err := toolkit.ProviderTools("gemini", []model.ToolDef{{Name: "broken", InputSchema: json.RawMessage(`[1]`)}})
	if err == nil || !strings.Contains(err.Error(), `"broken"`) {
		t.Errorf("ProviderTools error = %v, want one naming the tool", err)
	}
	if _, err := toolkit.ProviderTools("mistral", nil); err == nil || !strings.Contains(err.Error(), `"mistral"`) {
		t.Errorf("ProviderTools of an unknown provider: error = %v, want one naming it", err)
	}
}

func TestAdaptersOfNoTools(t *testing.T) {
	var got []string
	for _, p := range []string{"openai", "anthropic", "gemini"} {
		b, err := toolkit.ProviderTools(p, nil)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(b))
	}
	if diff := cmp.Diff([]string{`[]`, `[]`, `[{"functionDeclarations":[]}]`}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
