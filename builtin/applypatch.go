package builtin

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tollgate-dev/tollgate/tool"
)

// ApplyPatchInput is the input of the apply_patch tool.
type ApplyPatchInput struct {
	PatchText string `json:"patchText" jsonschema:"the patch, from *** Begin Patch to *** End Patch"`
}

func (b *builtins) applyPatchTool() (tool.Tool, error) {
	desc := "Apply a patch that adds, updates, moves or deletes files of the workspace, as one change: every " +
		"hunk is checked before anything is written, and if any part fails no file changes. Format:\n" +
		"*** Begin Patch\n*** Add File: path\n+line of the new file\n*** Update File: path\n*** Move to: new/path (optional)\n" +
		"@@ a line above the hunk (optional)\n context line\n-removed line\n+added line\n*** Delete File: path\n*** End Patch\n" +
		"Give about 3 lines of context around each change. Updated files keep their line endings and byte order mark."
	return tool.New(ApplyPatch, desc, b.applyPatch, &tool.FuncOptions{Hints: &tool.Hints{Destructive: true}, Source: Source})
}

// change is one file's part of a checked patch, ready to be written.
type change struct {
	fp      filePatch
	rel     string // the file, workspace-relative
	dest    string // where the new content goes (rel, or the Move to path); "" for a delete
	content []byte
	perm    fs.FileMode
	existed bool // rel existed (always, except for an add)
}

func (b *builtins) applyPatch(ctx context.Context, in ApplyPatchInput) (tool.Result, error) {
	files, err := parsePatch(in.PatchText)
	if err != nil {
		return tool.Errorf("invalid patch: %v", err), nil
	}
	root, err := b.ws.open()
	if err != nil {
		return tool.Error(err.Error()), nil
	}
	defer root.Close()

	// Resolve every path and lock every file touched, in one order (no deadlock
	// with another patch), before anything is read.
	type target struct{ rel, dest string }
	targets := make([]target, len(files))
	var lockNames []string
	for i, fp := range files {
		rel, err := b.ws.rel(fp.path)
		if err != nil {
			return tool.Errorf("patch line %d: %s", fp.line, describe(fp.path, err)), nil
		}
		if err := b.ws.writable(rel, fp.path); err != nil {
			return tool.Errorf("patch line %d: %v", fp.line, err), nil
		}
		if rel == "." {
			return tool.Errorf("patch line %d: %s is the workspace root, not a file", fp.line, fp.path), nil
		}
		targets[i] = target{rel, rel}
		if fp.moveTo != "" {
			dest, err := b.ws.rel(fp.moveTo)
			if err != nil {
				return tool.Errorf("patch line %d: %s", fp.line, describe(fp.moveTo, err)), nil
			}
			if err := b.ws.writable(dest, fp.moveTo); err != nil {
				return tool.Errorf("patch line %d: %v", fp.line, err), nil
			}
			if dest == "." {
				return tool.Errorf("patch line %d: %s is the workspace root, not a file", fp.line, fp.moveTo), nil
			}
			targets[i].dest = dest
		}
		lockNames = append(lockNames, targets[i].rel, targets[i].dest)
	}
	slices.Sort(lockNames)
	lockNames = slices.Compact(lockNames)
	paths := 0
	for _, t := range targets {
		paths++
		if t.dest != t.rel {
			paths++
		}
	}
	if len(lockNames) < paths {
		return tool.Error("invalid patch: a file appears in more than one section (or is moved onto another one); give each file one section"), nil
	}
	for _, n := range lockNames {
		defer b.files.lock(n)()
	}

	// Check everything and compute every new content; nothing is written yet.
	changes := make([]change, len(files))
	for i, fp := range files {
		c := change{fp: fp, rel: targets[i].rel, dest: targets[i].dest, perm: filePerm}
		fi, err := root.Stat(c.rel)
		switch {
		case fp.op == opAdd && err == nil:
			return tool.Errorf("patch line %d: Add File: %s already exists; update it instead", fp.line, fp.path), nil
		case fp.op == opAdd && !errors.Is(err, fs.ErrNotExist):
			return tool.Errorf("patch line %d: %s", fp.line, describe(fp.path, err)), nil
		case fp.op != opAdd && err != nil:
			return tool.Errorf("patch line %d: %s", fp.line, describe(fp.path, err)), nil
		case fp.op != opAdd && !fi.Mode().IsRegular():
			return tool.Errorf("patch line %d: %s is not a regular file", fp.line, fp.path), nil
		}
		c.existed = fp.op != opAdd
		if c.existed {
			c.perm = fi.Mode().Perm()
		}
		switch fp.op {
		case opAdd:
			c.content = []byte(fp.add)
		case opDelete:
			c.dest = ""
		case opUpdate:
			if fi, err := root.Stat(c.rel); err == nil && fi.Size() > MaxEditBytes {
				return tool.Errorf("patch line %d: %s has %d bytes; apply_patch changes files of at most %d bytes", fp.line, fp.path, fi.Size(), MaxEditBytes), nil
			}
			data, err := root.ReadFile(c.rel)
			if err != nil {
				return tool.Errorf("patch line %d: %s", fp.line, describe(fp.path, err)), nil
			}
			if isBinary(data[:min(len(data), sniffLen)]) {
				return tool.Errorf("patch line %d: %s is a binary file", fp.line, fp.path), nil
			}
			if c.content, err = applyHunks(parseText(data), fp.hunks); err != nil {
				return tool.Errorf("%s: %v; no file was changed", fp.path, err), nil
			}
			if c.dest != c.rel {
				if _, err := root.Lstat(c.dest); err == nil {
					return tool.Errorf("patch line %d: Move to: %s already exists", fp.line, fp.moveTo), nil
				}
			}
		}
		changes[i] = c
	}
	if err := ctx.Err(); err != nil {
		return tool.Errorf("apply_patch: %v; no file was changed", err), nil
	}
	if err := b.commitPatch(root, changes); err != nil {
		return tool.Errorf("apply_patch: %v; no file was changed", err), nil
	}

	var out strings.Builder
	out.WriteString("applied the patch:\n")
	var summary []map[string]any
	for _, c := range changes {
		verb, path := "", c.fp.path
		switch {
		case c.fp.op == opAdd:
			verb = "A"
		case c.fp.op == opDelete:
			verb = "D"
		case c.dest != c.rel:
			verb, path = "R", c.fp.path+" -> "+c.fp.moveTo
		default:
			verb = "M"
		}
		fmt.Fprintf(&out, "%s %s\n", verb, path)
		summary = append(summary, map[string]any{"op": verb, "path": c.fp.path, "to": c.fp.moveTo})
	}
	return tool.Result{Output: out.String(), Metadata: map[string]any{"files": summary}}, nil
}

// commitPatch writes the checked changes as one change. New contents go to
// temporary files beside their targets first (a failure there leaves the
// workspace as it was); then each target is replaced by a rename, after a
// hard link keeps its old content; when a step fails, the steps done are
// undone in reverse order from those links. Directories created for new
// files are left in place. b.patchFault, when set (tests), fails a step.
func (b *builtins) commitPatch(root *os.Root, changes []change) (err error) {
	var undo []func() error
	var cleanup []string
	defer func() {
		if err != nil {
			for i := len(undo) - 1; i >= 0; i-- {
				if uerr := undo[i](); uerr != nil {
					err = fmt.Errorf("%w (and undoing it failed: %v; the workspace may be partly changed)", err, uerr)
				}
			}
		}
		for _, p := range cleanup {
			_ = root.Remove(p)
		}
	}()
	step := 0
	fault := func() error {
		step++
		if b.patchFault != nil {
			return b.patchFault(step)
		}
		return nil
	}
	// Stage: every new content in a temporary file.
	temps := make([]string, len(changes))
	for i, c := range changes {
		if c.dest == "" {
			continue
		}
		if dir := filepath.Dir(c.dest); dir != "." {
			if err := root.MkdirAll(dir, dirPerm); err != nil {
				return fmt.Errorf("%s: %s", c.fp.path, describe(filepath.Dir(c.dest), err))
			}
		}
		tmp := sideName(c.dest, "tmp")
		if err := fault(); err != nil {
			return err
		}
		if err := root.WriteFile(tmp, c.content, c.perm); err != nil {
			return fmt.Errorf("%s: %s", c.fp.path, describe(c.fp.path, err))
		}
		cleanup = append(cleanup, tmp)
		if err := root.Chmod(tmp, c.perm); err != nil {
			return fmt.Errorf("%s: %s", c.fp.path, describe(c.fp.path, err))
		}
		temps[i] = tmp
	}
	// Commit: keep each old file under a link, then rename or remove.
	for i, c := range changes {
		if c.existed {
			bak := sideName(c.rel, "bak")
			if err := root.Link(c.rel, bak); err != nil {
				return fmt.Errorf("%s: keeping the old content: %s", c.fp.path, describe(c.fp.path, err))
			}
			cleanup = append(cleanup, bak)
			undo = append(undo, func() error { return root.Rename(bak, c.rel) })
		}
		if err := fault(); err != nil {
			return err
		}
		if c.dest != "" {
			if err := root.Rename(temps[i], c.dest); err != nil {
				return fmt.Errorf("%s: %s", c.fp.path, describe(c.fp.path, err))
			}
			if !c.existed || c.dest != c.rel {
				undo = append(undo, func() error { return root.Remove(c.dest) })
			}
		}
		if c.existed && c.dest != c.rel {
			if err := root.Remove(c.rel); err != nil {
				return fmt.Errorf("%s: %s", c.fp.path, describe(c.fp.path, err))
			}
		}
	}
	return nil
}

// sideName returns a fresh hidden name beside rel.
func sideName(rel, kind string) string {
	var r [6]byte
	_, _ = rand.Read(r[:])
	return filepath.Join(filepath.Dir(rel), ".tollgate-"+hex.EncodeToString(r[:])+"."+kind)
}
