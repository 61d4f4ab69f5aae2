package mcptoken

import (
	"os"
	"strings"
	"testing"
)

// A login file others can read, or one for another URL, is refused.
func TestStoreRefusesBadFiles(t *testing.T) {
	store := &Store{Dir: t.TempDir()}
	if err := store.Save(&Login{Resource: "https://a.example/mcp", TokenURL: "https://as/token", Token: nil}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Load("https://a.example/mcp"); err == nil {
		t.Error("a login without a token loaded")
	}
	p := store.Path("https://b.example/mcp")
	if err := os.WriteFile(p, []byte(`{"resource":"https://a.example/mcp","tokenUrl":"x","token":{"access_token":"t"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Load("https://b.example/mcp"); err == nil {
		t.Error("a login for another URL loaded")
	}
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Load("https://b.example/mcp"); err == nil || !strings.Contains(err.Error(), "others") {
		t.Errorf("a world-readable login: %v", err)
	}
}
