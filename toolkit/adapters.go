package toolkit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tollgate-dev/tollgate/model"
)

// ProviderTools returns defs (from [Toolkit.Defs], or as a BeforeLLM hook
// replaced them) as the "tools" array of a provider's API, in order, as
// JSON ready to send:
//
//   - "openai", the Chat Completions API:
//     [{"type":"function","function":{name, description, parameters}}];
//   - "anthropic", the Messages API: [{name, description, input_schema}];
//   - "gemini", generateContent: one tool holding a function declaration
//     per definition, [{"functionDeclarations":[{name, description,
//     parameters}]}].
//
// OpenAI and Anthropic get the schemas unchanged (non-strict function
// calling), an empty one as {"type":"object","properties":{}}. Gemini
// accepts only a subset of JSON Schema (the Schema object of the Gemini
// API, after OpenAPI 3.0), so each schema is rewritten into it:
//
//   - dropped: $schema, $id, $defs, additionalProperties, patternProperties,
//     not, allOf, if/then/else, exclusive bounds, examples and every other
//     keyword Gemini does not know;
//   - "type": ["T","null"] becomes "type": "T" with "nullable": true (and
//     "type": "null" becomes "nullable": true); several non-null types
//     become an anyOf of one type each;
//   - "const": "v" becomes "enum": ["v"]; an enum is kept only when it lists
//     strings only, and gets "type": "string" when it has no type; "format"
//     only when Gemini knows it; "oneOf" becomes "anyOf" (a weaker
//     contract, which is what Gemini can express);
//   - local references (#/$defs/X, #/definitions/X) are inlined, recursion
//     cut at a depth of 3; "required" keeps only properties that exist; an
//     empty "properties" is dropped, and "parameters" is omitted for a
//     function without any, as Gemini requires.
//
// It returns an error for another provider, and for gemini one naming the
// tool whose schema is not a JSON object.
func ProviderTools(provider string, defs []model.ToolDef) (json.RawMessage, error) {
	var v any
	switch provider {
	case "openai":
		v = openAITools(defs)
	case "anthropic":
		v = anthropicTools(defs)
	case "gemini":
		g, err := geminiTools(defs)
		if err != nil {
			return nil, err
		}
		v = []geminiTool{g}
	default:
		return nil, fmt.Errorf("toolkit: provider %q: want openai, anthropic or gemini", provider)
	}
	return json.Marshal(v)
}

// openAITool is one element of the "tools" array of the OpenAI Chat
// Completions API.
type openAITool struct {
	// Type is always "function".
	Type     string         `json:"type"`
	Function openAIFunction `json:"function"`
}

// openAIFunction is the "function" member of an openAITool.
type openAIFunction struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Parameters is the JSON Schema of the arguments, passed unchanged.
	Parameters json.RawMessage `json:"parameters"`
}

func openAITools(defs []model.ToolDef) []openAITool {
	out := make([]openAITool, len(defs))
	for i, d := range defs {
		out[i] = openAITool{Type: "function", Function: openAIFunction{
			Name: d.Name, Description: d.Description, Parameters: schemaOrEmpty(d.InputSchema),
		}}
	}
	return out
}

// anthropicTool is one element of the "tools" array of the Anthropic
// Messages API.
type anthropicTool struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// InputSchema is the JSON Schema of the arguments, passed unchanged.
	InputSchema json.RawMessage `json:"input_schema"`
}

func anthropicTools(defs []model.ToolDef) []anthropicTool {
	out := make([]anthropicTool, len(defs))
	for i, d := range defs {
		out[i] = anthropicTool{Name: d.Name, Description: d.Description, InputSchema: schemaOrEmpty(d.InputSchema)}
	}
	return out
}

// geminiTool is one element of the "tools" array of the Gemini API.
type geminiTool struct {
	FunctionDeclarations []geminiFunction `json:"functionDeclarations"`
}

// geminiFunction is one function declaration of a geminiTool.
type geminiFunction struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Parameters is the argument schema rewritten by geminiSchema; it is
	// omitted for a function without parameters, which Gemini requires.
	Parameters map[string]any `json:"parameters,omitempty"`
}

func geminiTools(defs []model.ToolDef) (geminiTool, error) {
	t := geminiTool{FunctionDeclarations: make([]geminiFunction, 0, len(defs))}
	for _, d := range defs {
		params, err := geminiSchema(d.InputSchema)
		if err != nil {
			return geminiTool{}, fmt.Errorf("toolkit: Gemini schema of tool %q: %w", d.Name, err)
		}
		if props, _ := params["properties"].(map[string]any); len(props) == 0 {
			params = nil // Gemini rejects an OBJECT without properties
		}
		t.FunctionDeclarations = append(t.FunctionDeclarations, geminiFunction{
			Name: d.Name, Description: d.Description, Parameters: params,
		})
	}
	return t, nil
}

// geminiKept reports whether Gemini's Schema object (a subset of the OpenAPI
// 3.0 schema object) accepts keyword k as it is. "type", "format", "enum",
// "const", "properties", "required", "items", "anyOf", "oneOf" and "$ref" are
// translated; every other keyword is dropped.
func geminiKept(k string) bool {
	switch k {
	case "description", "title", "nullable", "default", "example",
		"minimum", "maximum", "minLength", "maxLength", "pattern",
		"minItems", "maxItems", "minProperties", "maxProperties", "propertyOrdering":
		return true
	}
	return false
}

// geminiFormat reports whether Gemini accepts the "format" value f.
func geminiFormat(f string) bool {
	switch f {
	case "enum", "date-time", "int32", "int64", "float", "double":
		return true
	}
	return false
}

// maxRefDepth bounds how deeply geminiSchema inlines "$ref"s; a recursive
// schema is cut there to a plain {"type":"object"}.
const maxRefDepth = 3

// geminiSchema rewrites a JSON Schema into the subset Gemini's function
// declarations accept, as [ProviderTools] says. An empty schema gives
// {"type":"object"}. It returns an error when schema is not a JSON object.
func geminiSchema(schema json.RawMessage) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(schemaOrEmpty(schema)))
	dec.UseNumber()
	var root map[string]any
	if err := dec.Decode(&root); err != nil || root == nil {
		return nil, fmt.Errorf("schema is not a JSON object: %.80s", schema)
	}
	c := &geminiConv{root: root}
	return c.node(root, 0), nil
}

type geminiConv struct{ root map[string]any }

func (c *geminiConv) node(s map[string]any, depth int) map[string]any {
	if ref, ok := s["$ref"].(string); ok {
		target := c.resolve(ref)
		if target == nil || depth >= maxRefDepth {
			out := map[string]any{"type": "object"}
			if d, ok := s["description"]; ok {
				out["description"] = d
			}
			return out
		}
		merged := map[string]any{}
		for k, v := range target {
			merged[k] = v
		}
		for k, v := range s { // siblings of $ref (a description) win
			if k != "$ref" {
				merged[k] = v
			}
		}
		return c.node(merged, depth+1)
	}
	out := map[string]any{}
	for k, v := range s {
		if geminiKept(k) {
			out[k] = v
		}
	}
	switch t := s["type"].(type) {
	case string:
		if t == "null" {
			out["nullable"] = true // Gemini has no null type
		} else {
			out["type"] = t
		}
	case []any:
		var types []string
		for _, x := range t {
			if x == "null" {
				out["nullable"] = true
			} else if ts, ok := x.(string); ok {
				types = append(types, ts)
			}
		}
		switch len(types) {
		case 0:
		case 1:
			out["type"] = types[0]
		default:
			alts := make([]any, len(types))
			for i, ts := range types {
				alts[i] = map[string]any{"type": ts}
			}
			out["anyOf"] = alts
		}
	}
	if f, ok := s["format"].(string); ok && geminiFormat(f) {
		out["format"] = f
	}
	if v, ok := s["const"]; ok {
		if str, ok := v.(string); ok {
			out["enum"] = []any{str}
		}
	}
	if e, ok := s["enum"].([]any); ok && allStrings(e) {
		out["enum"] = e
	}
	if _, ok := out["enum"]; ok && out["type"] == nil {
		out["type"] = "string" // Gemini enums are string enums
	}
	if props, ok := s["properties"].(map[string]any); ok && len(props) > 0 {
		conv := map[string]any{}
		for name, p := range props {
			if ps, ok := p.(map[string]any); ok {
				conv[name] = c.node(ps, depth)
			}
		}
		out["properties"] = conv
		if req, ok := s["required"].([]any); ok {
			var kept []any
			for _, r := range req {
				if name, ok := r.(string); ok && conv[name] != nil {
					kept = append(kept, name)
				}
			}
			if len(kept) > 0 {
				out["required"] = kept
			}
		}
	}
	if items, ok := s["items"].(map[string]any); ok {
		out["items"] = c.node(items, depth)
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		if alts, ok := s[key].([]any); ok {
			var conv []any
			for _, a := range alts {
				if as, ok := a.(map[string]any); ok {
					conv = append(conv, c.node(as, depth))
				}
			}
			if len(conv) > 0 {
				out["anyOf"] = append(anySlice(out["anyOf"]), conv...)
			}
		}
	}
	return out
}

// resolve finds a local reference "#/$defs/X" or "#/definitions/X".
func (c *geminiConv) resolve(ref string) map[string]any {
	for _, prefix := range []string{"#/$defs/", "#/definitions/"} {
		if name, ok := strings.CutPrefix(ref, prefix); ok {
			defs, _ := c.root[strings.TrimSuffix(strings.TrimPrefix(prefix, "#/"), "/")].(map[string]any)
			target, _ := defs[name].(map[string]any)
			return target
		}
	}
	return nil
}

func allStrings(vs []any) bool {
	for _, v := range vs {
		if _, ok := v.(string); !ok {
			return false
		}
	}
	return len(vs) > 0
}

func anySlice(v any) []any {
	s, _ := v.([]any)
	return s
}

// schemaOrEmpty returns schema, or the empty object schema when it is empty.
func schemaOrEmpty(schema json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(schema)) == 0 {
		return json.RawMessage(emptyObjectSchema)
	}
	return schema
}
