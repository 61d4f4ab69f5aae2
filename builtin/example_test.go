package builtin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tollgate-dev/tollgate/builtin"
)

// Every builtin is confined to its workspace root: paths inside it work,
// paths that leave it (by "..", as an absolute path elsewhere, or through a
// symbolic link) are refused with an error result the model sees.
func ExampleNew_confinement() {
	parent, _ := os.MkdirTemp("", "tollgate-example")
	defer os.RemoveAll(parent)
	ws := filepath.Join(parent, "workspace")
	_ = os.MkdirAll(ws, 0o755)
	_ = os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("inside\n"), 0o644)
	_ = os.WriteFile(filepath.Join(parent, "secret.txt"), []byte("outside\n"), 0o644)
	_ = os.Symlink("../secret.txt", filepath.Join(ws, "shortcut"))

	tools, err := builtin.New(ws, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	read := tools[1] // in the order of builtin.Names: bash, read, ...
	for _, path := range []string{"notes.txt", "../secret.txt", "shortcut"} {
		args, _ := json.Marshal(map[string]string{"path": path})
		res, _ := read.Call(context.Background(), args)
		fmt.Printf("read %s: error=%v %q\n", path, res.IsError, res.Output)
	}
	// Output:
	// read notes.txt: error=false "     1\tinside\n"
	// read ../secret.txt: error=true "refused: path \"../secret.txt\" is outside the workspace"
	// read shortcut: error=true "refused: path \"shortcut\" leads outside the workspace through a symbolic link (links must be relative and stay inside)"
}
