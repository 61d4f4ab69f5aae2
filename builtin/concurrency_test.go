package builtin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tollgate-dev/tollgate/builtin"
	"github.com/tollgate-dev/tollgate/tool"
)

// The calls of one turn run concurrently: 40 edits of different lines of one
// file, and reads during them, must all succeed and all land.
func TestConcurrentEditsOfOneFile(t *testing.T) {
	dir := t.TempDir()
	var lines []string
	for i := 0; i < 40; i++ {
		lines = append(lines, fmt.Sprintf("L%02d=old", i))
	}
	os.WriteFile(filepath.Join(dir, "f.txt"), []byte(strings.Join(lines, "\n")+"\n"), 0o640)
	tools, err := builtin.New(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]tool.Tool{}
	for _, tl := range tools {
		byName[tl.Spec().Name] = tl
	}
	var wg sync.WaitGroup
	errs := make(chan string, 80)
	for i := 0; i < 40; i++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			args, _ := json.Marshal(map[string]string{"path": "f.txt", "oldString": fmt.Sprintf("L%02d=old", i), "newString": fmt.Sprintf("L%02d=new", i)})
			if r, _ := byName["edit"].Call(context.Background(), args); r.IsError {
				errs <- r.Output
			}
		}()
		go func() {
			defer wg.Done()
			if r, _ := byName["read"].Call(context.Background(), json.RawMessage(`{"path":"f.txt"}`)); r.IsError || !strings.Contains(r.Output, "L39=") {
				errs <- "read saw a partial file: " + r.Output
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "f.txt"))
	if n := strings.Count(string(b), "=new"); n != 40 {
		t.Errorf("%d of 40 edits landed:\n%s", n, b)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "f.txt")); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want the file's own 0640", fi.Mode().Perm())
	}
	if m, _ := filepath.Glob(filepath.Join(dir, ".tollgate-*")); len(m) != 0 {
		t.Errorf("temporary files left: %v", m)
	}
}
