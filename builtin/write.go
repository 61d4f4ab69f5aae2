package builtin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/tollgate-dev/tollgate/tool"
)

// writeInput is the input of the write tool.
type writeInput struct {
	Path    string `json:"path" jsonschema:"the file to write, relative to the workspace root (or absolute inside it); missing parent directories are created"`
	Content string `json:"content" jsonschema:"the complete new content of the file"`
}

// editInput is the input of the edit tool.
type editInput struct {
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
		"missing parent directories. An existing file keeps its CRLF line endings and byte order mark " +
		"when the content has none of its own. To change part of an existing file, prefer edit."
	return tool.New(toolWrite, desc, b.write, &tool.FuncOptions{Hints: &tool.Hints{Destructive: true}, Source: source})
}

func (b *builtins) write(ctx context.Context, in writeInput) (tool.Result, error) {
	rel, err := b.ws.rel(in.Path)
	if err != nil {
		return tool.Error(describe(in.Path, err)), nil
	}
	if err := b.ws.writable(rel, in.Path); err != nil {
		return tool.Error(err.Error()), nil
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
	pn, err := b.pin(ctx, root, toolWrite, rel, in.Path, true, pathArgs(in, func(c *writeInput, p string) { c.Path = p }))
	var nr *notRegular
	if errors.As(err, &nr) && nr.mode.IsDir() {
		return tool.Errorf("%s is a directory", in.Path), nil
	}
	if err != nil {
		return tool.Error(describe(in.Path, err)), nil
	}
	defer pn.close()
	created := pn.fi == nil
	if err := ctx.Err(); err != nil {
		return tool.Errorf("write %s: %v", in.Path, err), nil
	}
	perm := fs.FileMode(filePerm)
	content := []byte(in.Content)
	var kept []string
	if !created {
		perm = pn.fi.Mode().Perm()
		content, kept = keepConventions(pn, in.Path, content)
	}
	if err := replaceFile(pn.dir, pn.base, content, perm); err != nil {
		return tool.Error(describe(in.Path, err)), nil
	}
	verb := "overwrote"
	if created {
		verb = "created"
	}
	out := fmt.Sprintf("%s %s (%s)", verb, in.Path, plural(len(content), "byte", "bytes"))
	if len(kept) > 0 {
		out += "; kept the file's " + strings.Join(kept, " and ")
	}
	return tool.Result{
		Output:   out,
		Metadata: map[string]any{"path": in.Path, "realPath": pn.real, "bytes": len(content), "created": created},
	}, nil
}

// keepConventions keeps, in the new content of an existing file, the old
// file's UTF-8 BOM (when the content has none) and its CRLF line endings
// (when every line break of the old file's first 8000 bytes is CRLF and the
// content has no carriage return at all). It returns the content to write and
// what it kept, for the result. A content that says otherwise (has a BOM of
// its own, any "\r") is written as it is.
func keepConventions(pn *pinned, spelled string, content []byte) ([]byte, []string) {
	head, err := pn.readAll(spelled, sniffLen)
	if err != nil {
		return content, nil
	}
	var kept []string
	if bytes.Contains(head, []byte("\r\n")) && bytes.Count(head, []byte("\r\n")) == bytes.Count(head, []byte("\n")) &&
		bytes.Contains(content, []byte("\n")) && !bytes.Contains(content, []byte("\r")) {
		content = bytes.ReplaceAll(content, []byte("\n"), []byte("\r\n"))
		kept = append(kept, "CRLF line endings")
	}
	if bytes.HasPrefix(head, []byte(utf8BOM)) && !bytes.HasPrefix(content, []byte(utf8BOM)) {
		content = append([]byte(utf8BOM), content...)
		kept = append(kept, "byte order mark")
	}
	return content, kept
}

func (b *builtins) editTool() (tool.Tool, error) {
	desc := "Edit a file of the workspace by replacing exact text: oldString must occur exactly once " +
		"(include enough surrounding lines to make it unique), or set replaceAll to replace every " +
		"occurrence. Read the file first and copy oldString exactly, including indentation. Write line " +
		"breaks as \\n: the file keeps its own line endings (CRLF, LF or mixed) and byte order mark."
	return tool.New(toolEdit, desc, b.edit, &tool.FuncOptions{Hints: &tool.Hints{Destructive: true}, Source: source})
}

func (b *builtins) edit(ctx context.Context, in editInput) (tool.Result, error) {
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
	if err := b.ws.writable(rel, in.Path); err != nil {
		return tool.Error(err.Error()), nil
	}
	root, err := b.ws.open()
	if err != nil {
		return tool.Error(err.Error()), nil
	}
	defer root.Close()
	defer b.files.lock(rel)()
	pn, err := b.pin(ctx, root, toolEdit, rel, in.Path, false, pathArgs(in, func(c *editInput, p string) { c.Path = p }))
	if err != nil {
		return tool.Error(describe(in.Path, err)), nil
	}
	defer pn.close()
	fi := pn.fi
	if fi.Size() > maxEditBytes {
		return tool.Errorf("%s has %d bytes; edit changes files of at most %d bytes (use bash for larger ones)", in.Path, fi.Size(), maxEditBytes), nil
	}
	data, err := pn.readAll(in.Path, maxEditBytes+1)
	if len(data) > maxEditBytes {
		return tool.Errorf("%s grew past %d bytes; edit changes files of at most %d bytes", in.Path, maxEditBytes, maxEditBytes), nil
	}
	if err != nil {
		return tool.Error(describe(in.Path, err)), nil
	}
	tf := parseText(data)
	oldS, newS := normalizeNewlines(in.OldString), normalizeNewlines(in.NewString)
	if rest, ok := strings.CutPrefix(oldS, utf8BOM); ok && tf.bom {
		oldS, newS = rest, strings.TrimPrefix(newS, utf8BOM) // the BOM is kept in any case
	}
	if oldS == newS {
		return tool.Error("oldString and newString differ only in line endings; edit keeps the file's line endings, so there is nothing to change"), nil
	}
	n := strings.Count(tf.text, oldS)
	switch {
	case n == 0:
		return tool.Errorf("oldString not found in %s; read the file and copy the text exactly, including whitespace and indentation", in.Path), nil
	case n > 1 && !in.ReplaceAll:
		return tool.Errorf("oldString occurs %d times in %s; include more surrounding context to make it unique, or set replaceAll to replace every occurrence", n, in.Path), nil
	}
	var splices []splice
	for from := 0; ; {
		i := strings.Index(tf.text[from:], oldS)
		if i < 0 {
			break
		}
		start := from + i
		splices = append(splices, splice{start: start, end: start + len(oldS), repl: newS})
		from = start + len(oldS)
		if !in.ReplaceAll {
			break
		}
	}
	out := tf.apply(splices)
	if err := ctx.Err(); err != nil {
		return tool.Errorf("edit %s: %v", in.Path, err), nil
	}
	if err := replaceFile(pn.dir, pn.base, out, fi.Mode().Perm()); err != nil {
		return tool.Error(describe(in.Path, err)), nil
	}
	return tool.Result{
		Output:   fmt.Sprintf("edited %s: replaced %s", in.Path, plural(n, "occurrence", "occurrences")),
		Metadata: map[string]any{"path": in.Path, "realPath": pn.real, "replacements": n, "lineEndings": tf.endingsName(), "bom": tf.bom},
	}, nil
}

// plural formats n with the singular or plural noun.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
