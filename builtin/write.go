package builtin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/tollgate-dev/tollgate/tool"
)

// WriteInput is the input of the write tool.
type WriteInput struct {
	Path    string `json:"path" jsonschema:"the file to write, relative to the workspace root (or absolute inside it); missing parent directories are created"`
	Content string `json:"content" jsonschema:"the complete new content of the file"`
}

// EditInput is the input of the edit tool.
type EditInput struct {
	Path       string `json:"path" jsonschema:"the file to edit, relative to the workspace root (or absolute inside it)"`
	OldString  string `json:"oldString" jsonschema:"the exact text to replace, including whitespace and indentation"`
	NewString  string `json:"newString" jsonschema:"the text to put in its place (must differ from oldString)"`
	ReplaceAll bool   `json:"replaceAll,omitempty" jsonschema:"replace every occurrence; without it oldString must occur exactly once"`
}

// New files get these permission bits (before the umask).
const (
	filePerm = 0o644
	dirPerm  = 0o755
)

func (b *builtins) writeTool() (tool.Tool, error) {
	desc := "Write a file of the workspace, replacing its whole content; creates the file and any " +
		"missing parent directories. To change part of an existing file, prefer edit."
	return tool.New(Write, desc, b.write, &tool.FuncOptions{Hints: &tool.Hints{Destructive: true}, Source: Source})
}

func (b *builtins) write(ctx context.Context, in WriteInput) (tool.Result, error) {
	rel, err := b.ws.rel(in.Path)
	if err != nil {
		return tool.Error(describe(in.Path, err)), nil
	}
	if rel == "." {
		return tool.Errorf("%s is the workspace root, not a file", in.Path), nil
	}
	root, err := b.ws.open()
	if err != nil {
		return tool.Error(err.Error()), nil
	}
	defer root.Close()
	defer b.files.lock(rel)()
	created := false
	fi, err := root.Stat(rel)
	switch {
	case err == nil && fi.IsDir():
		return tool.Errorf("%s is a directory", in.Path), nil
	case err == nil && !fi.Mode().IsRegular():
		return tool.Error((&notRegular{path: in.Path, mode: fi.Mode()}).Error()), nil
	case err == nil && linkCount(fi) > 1:
		return tool.Error((&hardLinked{path: in.Path, links: linkCount(fi)}).Error()), nil
	case errors.Is(err, fs.ErrNotExist):
		created = true
		if dir := filepath.Dir(rel); dir != "." {
			if err := root.MkdirAll(dir, dirPerm); err != nil {
				return tool.Error(describe(in.Path, err)), nil
			}
		}
	case err != nil:
		return tool.Error(describe(in.Path, err)), nil
	}
	if err := ctx.Err(); err != nil {
		return tool.Errorf("write %s: %v", in.Path, err), nil
	}
	perm := fs.FileMode(filePerm)
	if !created {
		perm = fi.Mode().Perm()
	}
	if err := replaceFile(root, rel, []byte(in.Content), perm); err != nil {
		return tool.Error(describe(in.Path, err)), nil
	}
	verb := "overwrote"
	if created {
		verb = "created"
	}
	return tool.Result{
		Output:   fmt.Sprintf("%s %s (%s)", verb, in.Path, plural(len(in.Content), "byte", "bytes")),
		Metadata: map[string]any{"path": in.Path, "bytes": len(in.Content), "created": created},
	}, nil
}

func (b *builtins) editTool() (tool.Tool, error) {
	desc := "Edit a file of the workspace by replacing exact text: oldString must occur exactly once " +
		"(include enough surrounding lines to make it unique), or set replaceAll to replace every " +
		"occurrence. Read the file first and copy oldString exactly, including indentation."
	return tool.New(Edit, desc, b.edit, &tool.FuncOptions{Hints: &tool.Hints{Destructive: true}, Source: Source})
}

func (b *builtins) edit(ctx context.Context, in EditInput) (tool.Result, error) {
	switch {
	case in.OldString == "":
		return tool.Error("oldString must not be empty; use write to create or overwrite a whole file"), nil
	case in.OldString == in.NewString:
		return tool.Error("oldString and newString are equal; there is nothing to change"), nil
	}
	rel, err := b.ws.rel(in.Path)
	if err != nil {
		return tool.Error(describe(in.Path, err)), nil
	}
	root, err := b.ws.open()
	if err != nil {
		return tool.Error(err.Error()), nil
	}
	defer root.Close()
	defer b.files.lock(rel)()
	fi, err := root.Stat(rel)
	if err != nil {
		return tool.Error(describe(in.Path, err)), nil
	}
	if !fi.Mode().IsRegular() {
		return tool.Error((&notRegular{path: in.Path, mode: fi.Mode()}).Error()), nil
	}
	if n := linkCount(fi); n > 1 {
		return tool.Error((&hardLinked{path: in.Path, links: n}).Error()), nil
	}
	f, _, err := openRegular(root, rel, in.Path)
	if err != nil {
		return tool.Error(describe(in.Path, err)), nil
	}
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return tool.Error(describe(in.Path, err)), nil
	}
	text := string(data)
	n := strings.Count(text, in.OldString)
	switch {
	case n == 0:
		return tool.Errorf("oldString not found in %s; read the file and copy the text exactly, including whitespace and indentation", in.Path), nil
	case n > 1 && !in.ReplaceAll:
		return tool.Errorf("oldString occurs %d times in %s; include more surrounding context to make it unique, or set replaceAll to replace every occurrence", n, in.Path), nil
	}
	if in.ReplaceAll {
		text = strings.ReplaceAll(text, in.OldString, in.NewString)
	} else {
		text = strings.Replace(text, in.OldString, in.NewString, 1)
	}
	if err := ctx.Err(); err != nil {
		return tool.Errorf("edit %s: %v", in.Path, err), nil
	}
	if err := replaceFile(root, rel, []byte(text), fi.Mode().Perm()); err != nil {
		return tool.Error(describe(in.Path, err)), nil
	}
	return tool.Result{
		Output:   fmt.Sprintf("edited %s: replaced %s", in.Path, plural(n, "occurrence", "occurrences")),
		Metadata: map[string]any{"path": in.Path, "replacements": n},
	}, nil
}

// plural formats n with the singular or plural noun.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
