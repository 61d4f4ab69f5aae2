package toolkit_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/tollgate-dev/tollgate/tool"
	"github.com/tollgate-dev/tollgate/toolkit"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// lookupSchema exercises every rewrite of GeminiSchema.
const lookupSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "id": {"type": ["string", "null"], "description": "record id", "format": "uuid"},
    "kind": {"const": "user"},
    "limit": {"type": "integer", "minimum": 1, "maximum": 50, "exclusiveMaximum": 51, "format": "int32"},
    "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}, "minItems": 1},
    "owner": {"$ref": "#/$defs/person", "description": "who owns it"},
    "when": {"type": "string", "format": "date-time"},
    "value": {"oneOf": [{"type": "number"}, {"type": "boolean"}]},
    "level": {"type": "integer", "enum": [1, 2, 3]},
    "either": {"type": ["string", "integer"]},
    "meta": {"type": "object", "additionalProperties": {"type": "string"}}
  },
  "required": ["kind", "id", "gone"],
  "additionalProperties": false,
  "$defs": {
    "person": {
      "type": "object",
      "properties": {"name": {"type": "string"}, "boss": {"$ref": "#/$defs/person"}},
      "required": ["name"]
    }
  }
}`

// goldenToolkit is the builtins plus three extras: a typed tool, a tool with a
// rich hand-written schema and a tool without any schema.
func goldenToolkit(t *testing.T) *toolkit.Toolkit {
	t.Helper()
	var s jsonschema.Schema
	if err := json.Unmarshal([]byte(lookupSchema), &s); err != nil {
		t.Fatal(err)
	}
	lookup := fake("lookup", "mcp:records")
	lookup.spec.Description = "look a record up"
	lookup.spec.InputSchema = &s
	return mustNew(t, &toolkit.Options{
		Workdir: t.TempDir(),
		Extra:   []tool.Tool{echoTool(t, "echo"), lookup, fake("ping", "func")},
	})
}

func TestGoldenProviderFormats(t *testing.T) {
	k := goldenToolkit(t)
	formats := map[string]any{"defs.golden.json": k.Defs()}
	for _, p := range []string{"openai", "anthropic", "gemini"} {
		v, err := toolkit.ProviderTools(p, k.Defs())
		if err != nil {
			t.Fatal(err)
		}
		formats[p+".golden.json"] = v
	}
	for file, v := range formats {
		t.Run(file, func(t *testing.T) {
			got, err := json.MarshalIndent(v, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			path := filepath.Join("testdata", file)
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(want, got) {
				t.Errorf("%s differs (-want +got; go test -update rewrites it):\n%s", path, cmp.Diff(string(want), string(got)))
			}
		})
	}
}
