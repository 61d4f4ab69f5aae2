package builtin_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tollgate-dev/tollgate/builtin"
)

// The file tools tell Options.CheckFile which file they opened (through a
// link, the real one), with the call's arguments naming it, and record its
// real path next to the requested one in the result's metadata; a refusal
// names both and reads or writes nothing.
func TestCheckFileSeesTheOpenedFile(t *testing.T) {
	var mu sync.Mutex
	var uses []builtin.FileUse
	deny := ""
	root, tools := workspace(t, map[string]string{"real/a.txt": "alpha\n"}, &builtin.Options{CheckFile: func(_ context.Context, u builtin.FileUse) error {
		mu.Lock()
		defer mu.Unlock()
		uses = append(uses, u)
		if deny != "" && strings.HasSuffix(u.Real, deny) {
			return errors.New("not this one")
		}
		return nil
	}})
	if err := os.Symlink("real", filepath.Join(root, "alias")); err != nil {
		t.Fatal(err)
	}
	real := mustEval(t, root)
	last := func() builtin.FileUse {
		mu.Lock()
		defer mu.Unlock()
		if len(uses) == 0 {
			t.Fatal("CheckFile was not called")
		}
		u := uses[len(uses)-1]
		uses = nil
		return u
	}
	argPath := func(u builtin.FileUse) string {
		var m map[string]any
		if err := json.Unmarshal(u.Args, &m); err != nil {
			t.Fatal(err)
		}
		p, _ := m["path"].(string)
		return p
	}

	res := call(t, tools, "read", map[string]any{"path": "alias/a.txt"})
	u := last()
	want := filepath.Join(real, "real", "a.txt")
	if res.IsError || res.Metadata["realPath"] != want || res.Metadata["path"] != "alias/a.txt" {
		t.Errorf("read: %+v, want realPath %s", res, want)
	}
	if u.Tool != "read" || u.Path != "alias/a.txt" || u.Real != want || u.Links != 1 || u.Write || argPath(u) != want || u.Hints == nil || !u.Hints.ReadOnly {
		t.Errorf("read: FileUse %+v", u)
	}

	res = call(t, tools, "write", map[string]any{"path": "alias/new/b.txt", "content": "b"})
	u = last()
	want = filepath.Join(real, "real", "new", "b.txt")
	if res.IsError || res.Metadata["realPath"] != want {
		t.Errorf("write: %+v, want realPath %s", res, want)
	}
	if u.Tool != "write" || u.Real != want || !u.Write || argPath(u) != want {
		t.Errorf("write: FileUse %+v", u)
	}

	res = call(t, tools, "edit", map[string]any{"path": "alias/a.txt", "oldString": "alpha", "newString": "beta"})
	if u = last(); res.IsError || res.Metadata["realPath"] != filepath.Join(real, "real", "a.txt") || u.Tool != "edit" {
		t.Errorf("edit: %+v, FileUse %+v", res, u)
	}

	mu.Lock()
	deny = "a.txt"
	mu.Unlock()
	res = call(t, tools, "read", map[string]any{"path": "alias/a.txt"})
	if !res.IsError || res.Output != "refused: alias/a.txt leads to real/a.txt: not this one" || res.Metadata["realPath"] != filepath.Join(real, "real", "a.txt") {
		t.Errorf("refused read: %+v", res)
	}
	res = call(t, tools, "edit", map[string]any{"path": "alias/a.txt", "oldString": "beta", "newString": "gamma"})
	if !res.IsError || !strings.Contains(res.Output, "not this one") {
		t.Errorf("refused edit: %+v", res)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "real", "a.txt")); string(b) != "beta\n" {
		t.Errorf("a refused edit changed the file: %q", b)
	}
	res = call(t, tools, "grep", map[string]any{"pattern": "beta"})
	if res.IsError || !strings.HasPrefix(res.Output, "no matches\n[1 file not searched") || res.Metadata["refused"] != 1 {
		t.Errorf("grep: %+v", res)
	}
}
