package agent_test

import (
	"encoding/json"

	"github.com/google/jsonschema-go/jsonschema"
)

func mustSchema(s string) *jsonschema.Schema {
	var sc jsonschema.Schema
	if err := json.Unmarshal([]byte(s), &sc); err != nil {
		panic(err)
	}
	return &sc
}
