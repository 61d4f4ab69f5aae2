package runcore

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"

	"github.com/tollgate-dev/tollgate/internal/configread"
)

// BoundKeys returns the JSON names of the fields of a [RunConfig] that a
// run binds when it starts, those beside its [AgentConfig] (version,
// agent, answer, requestDigest, pins): a configuration file does not set
// them.
func BoundKeys() []string {
	var keys []string
	t := reflect.TypeFor[RunConfig]()
	for i := range t.NumField() {
		if f := t.Field(i); !f.Anonymous {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			keys = append(keys, name)
		}
	}
	return keys
}

// UnmarshalYAML reads a model reference inline in its configuration (n is
// the mapping that holds it): model: in its text form ([ParseModelRef]),
// with baseUrl: and apiKeyEnv: beside it. An absent model: leaves
// Provider and Name empty ([RunConfig.Resolve] refuses that). Errors are
// at the value they are about.
func (m *ModelRef) UnmarshalYAML(n ast.Node) error {
	entries, _ := configread.Entries(n)
	for _, mv := range entries {
		switch configread.Key(mv) {
		case "model":
			if configread.IsNull(mv.Value) {
				continue
			}
			s, ok := configread.ScalarText(mv.Value)
			if !ok {
				return valueError(mv.Value, "want openai:MODEL, anthropic:MODEL or script:PATH, got %s", configread.Kind(mv.Value, false))
			}
			ref, err := ParseModelRef(s)
			if err != nil {
				return valueError(mv.Value, "%v", err)
			}
			m.Provider, m.Name = ref.Provider, ref.Name
		case "baseUrl", "apiKeyEnv":
			s, ok := configread.Text(mv.Value)
			if !ok && !configread.IsNull(mv.Value) {
				return valueError(mv.Value, "want text, got %s", configread.Kind(mv.Value, false))
			}
			if configread.Key(mv) == "baseUrl" {
				m.BaseURL = s
			} else {
				m.APIKeyEnv = s
			}
		}
	}
	return nil
}

// UnmarshalYAML reads a duration as a configuration file writes it, Go's
// text form ("30s", "10m", "1h30m"); null is zero. A number without a
// unit, text that does not parse and a negative duration are errors at
// the value.
func (d *Duration) UnmarshalYAML(n ast.Node) error {
	if configread.IsNull(n) {
		*d = 0
		return nil
	}
	s, ok := configread.ScalarText(n)
	v, err := time.ParseDuration(s)
	if !ok || err != nil || v < 0 {
		return valueError(n, "want a duration such as 30s or 10m, got %q", s)
	}
	*d = Duration(v)
	return nil
}

// yamlValueError is a problem with one YAML value, at its token: the YAML
// decoder returns it as it returns its own errors, with the position.
type yamlValueError struct {
	tk  *token.Token
	msg string
}

func valueError(n ast.Node, format string, args ...any) error {
	e := &yamlValueError{msg: fmt.Sprintf(format, args...)}
	if n = configread.Unwrap(n); n != nil {
		e.tk = n.GetToken()
	}
	return e
}

func (e *yamlValueError) Error() string                      { return e.msg }
func (e *yamlValueError) GetToken() *token.Token             { return e.tk }
func (e *yamlValueError) GetMessage() string                 { return e.msg }
func (e *yamlValueError) FormatError(color, src bool) string { return e.msg }
