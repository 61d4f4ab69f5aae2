package bounded

import (
	"errors"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

// A tag over a scalar where a list is expected makes the YAML decoder
// dereference nil; UnmarshalYAML turns that into an error.
func TestUnmarshalYAMLDecoderPanic(t *testing.T) {
	var v struct {
		Keys []string `yaml:"keys"`
	}
	err := UnmarshalYAML([]byte("keys: !x 0\n"), &v)
	if err == nil || !strings.HasPrefix(err.Error(), "the YAML decoder failed") {
		t.Fatalf("err = %v, want the decoder's failure", err)
	}
	if IsLimit(err) {
		t.Errorf("IsLimit(%v) = true; no limit was passed", err)
	}
	// The decoder's own errors come back as they are, with their position.
	err = UnmarshalYAML([]byte("kyes: [a]\n"), &v, yaml.DisallowUnknownField())
	var ye yaml.Error
	if !errors.As(err, &ye) || ye.GetToken() == nil || ye.GetToken().Position.Line != 1 {
		t.Errorf("err = %v, want a yaml.Error at line 1", err)
	}
	if err := UnmarshalYAML([]byte("keys: [a, b]\n"), &v); err != nil || len(v.Keys) != 2 {
		t.Errorf("keys = %q, err = %v", v.Keys, err)
	}
}
