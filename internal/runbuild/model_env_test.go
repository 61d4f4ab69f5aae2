package runbuild

import (
	"errors"
	"testing"

	"github.com/tollgate-dev/tollgate/runs"
)

// The key's variables are read through ModelOptions.Getenv, not from the
// process's environment, when a host gives it.
func TestOpenModelReadsKeysThroughGetenv(t *testing.T) {
	t.Parallel()
	env := map[string]string{"MY_KEY": "sk-from-getenv"}
	getenv := func(name string) string { return env[name] }
	ref := runs.ModelRef{Provider: "openai", Name: "m", BaseURL: "http://127.0.0.1:1/v1", APIKeyEnv: "MY_KEY"}
	if _, _, err := OpenModel(ref, &ModelOptions{Getenv: getenv}); err != nil {
		t.Errorf("OpenModel with the key in Getenv's variables: %v", err)
	}
	ref.APIKeyEnv = "UNSET_KEY"
	_, _, err := OpenModel(ref, &ModelOptions{Getenv: getenv})
	if ke, ok := errors.AsType[*KeyError](err); !ok || ke.Variable != "UNSET_KEY" {
		t.Errorf("OpenModel with the variable unset in Getenv's: err = %v, want a KeyError naming UNSET_KEY", err)
	}
	hosted := runs.ModelRef{Provider: "anthropic", Name: "m"}
	if _, _, err := OpenModel(hosted, &ModelOptions{Getenv: func(string) string { return "" }}); err == nil {
		t.Error("OpenModel for the hosted service found a key Getenv does not have")
	}
}
