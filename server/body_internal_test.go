package server

import "testing"

// An unknown key of a nested object is refused with the fields of that
// object, not of the body's top level.
func TestUnknownNestedKeyNamesItsObjectsFields(t *testing.T) {
	type call struct {
		Name string `json:"name"`
		Args string `json:"args"`
	}
	var v struct {
		Call    call   `json:"call"`
		Session string `json:"session"`
	}
	err := decodeBody("body", []byte(`{"session":"s","call":{"name":"bash","cmd":"ls"}}`), 1<<20, &v)
	if want := `body: unknown field "cmd" (its fields: args, name)`; err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
}
