package builtin

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/tollgate-dev/tollgate/tool"
)

// readInput is the input of the read tool.
type readInput struct {
	Path   string `json:"path" jsonschema:"the file to read, relative to the workspace root (or absolute inside it)"`
	Offset int    `json:"offset,omitempty" jsonschema:"the 1-based line number to start at (default 1)"`
	Limit  int    `json:"limit,omitempty" jsonschema:"the maximum number of lines to return (default 2000)"`
}

func (b *builtins) readTool() (tool.Tool, error) {
	s, err := jsonschema.For[readInput](nil)
	if err != nil {
		return nil, err
	}
	one := 1.0
	s.Properties["offset"].Minimum = &one
	s.Properties["limit"].Minimum = &one
	s.Properties["limit"].Description = fmt.Sprintf("the maximum number of lines to return (default %d)", b.opts.ReadLimit)
	desc := fmt.Sprintf("Read a text file of the workspace. The output numbers each line like `cat -n` "+
		"(line number, a tab, the text). Returns at most limit lines (default %d) starting at the 1-based "+
		"line offset; lines longer than %d bytes are cut. Use offset to page through long files.",
		b.opts.ReadLimit, b.opts.MaxLineBytes)
	return tool.New(toolRead, desc, b.read, &tool.FuncOptions{Hints: readOnlyHints(), InputSchema: s, Source: source})
}

func (b *builtins) read(ctx context.Context, in readInput) (tool.Result, error) {
	rel, err := b.ws.rel(in.Path)
	if err != nil {
		return tool.Error(describe(in.Path, err)), nil
	}
	root, err := b.ws.open()
	if err != nil {
		return tool.Error(err.Error()), nil
	}
	defer root.Close()
	f, fi, err := openRegular(root, rel, in.Path)
	if err != nil {
		return tool.Error(describe(in.Path, err)), nil
	}
	defer f.Close()
	if fi.IsDir() {
		return tool.Errorf("%s is a directory; use glob to list its files", in.Path), nil
	}
	real, err := b.ws.realOf(f, rel)
	if err != nil {
		return tool.Error(describe(in.Path, err)), nil
	}
	use := FileUse{Tool: toolRead, Path: in.Path, Real: real, Links: linkCount(fi), Hints: readOnlyHints()}
	if err := b.checkUse(ctx, use, pathArgs(in, func(c *readInput, p string) { c.Path = p })); err != nil {
		return refused(in.Path, real, err), nil
	}
	head := make([]byte, sniffLen)
	n, err := io.ReadFull(f, head)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return tool.Error(describe(in.Path, err)), nil
	}
	if isBinary(head[:n]) {
		return tool.Errorf("%s is a binary file; read shows text files only", in.Path), nil
	}
	offset, limit := max(in.Offset, 1), in.Limit
	if limit <= 0 {
		limit = b.opts.ReadLimit
	}
	lr := newLineReader(io.MultiReader(bytes.NewReader(head[:n]), f), b.opts.MaxLineBytes)
	var out strings.Builder
	lineNo, shown, more := 0, 0, false
	for {
		if lineNo%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return tool.Errorf("read %s: %v", in.Path, err), nil
			}
		}
		line, cut, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return tool.Error(describe(in.Path, err)), nil
		}
		lineNo++
		if lineNo < offset {
			continue
		}
		if shown == limit {
			more = true
			break
		}
		if lineNo == 1 {
			line = bytes.TrimPrefix(line, []byte(utf8BOM)) // not text: edit keeps it
		}
		line, cut = clip(line, b.opts.MaxLineBytes, cut)
		fmt.Fprintf(&out, "%6d\t%s", lineNo, line)
		if cut {
			out.WriteString(lineCutMarker)
		}
		out.WriteByte('\n')
		shown++
	}
	meta := map[string]any{"path": in.Path, "realPath": real, "offset": offset, "lines": shown}
	switch {
	case lineNo == 0:
		return tool.Result{Output: "[empty file]", Metadata: meta}, nil
	case shown == 0:
		return tool.Errorf("offset %d is past the end of %s (%d lines)", offset, in.Path, lineNo), nil
	case more:
		fmt.Fprintf(&out, "[showing lines %d-%d; more lines follow: continue with offset=%d]\n", offset, offset+shown-1, offset+shown)
		meta["more"] = true
	}
	return tool.Result{Output: out.String(), Metadata: meta}, nil
}
