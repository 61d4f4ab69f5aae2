package mcptool

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// mcp.json is bounded before it is parsed: nesting, size, and a FIFO in its
// place (which would block a plain read) are refused with the file's name.
func TestConfigLimits(t *testing.T) {
	deep := `{"mcpServers": {"s": {"command": "x", "args": ` + strings.Repeat("[", 20) + strings.Repeat("]", 20) + `}}}`
	if _, err := Parse("m.json", []byte(deep)); err == nil || err.Error() != "m.json:1:60: nested deeper than 16 levels" {
		t.Errorf("deep: %v", err)
	}
	dir := t.TempDir()
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, []byte(`{"mcpServers": {}}`+strings.Repeat(" ", maxConfigSize)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(big); err == nil || !strings.Contains(err.Error(), "larger than 1048576 bytes") {
		t.Errorf("big: %v", err)
	}
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(fifo); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("fifo: %v", err)
	}
}
