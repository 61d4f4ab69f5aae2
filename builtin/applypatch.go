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

// applyPatchInput is the input of the apply_patch tool.
type applyPatchInput struct {
	PatchText string `json:"patchText" jsonschema:"the patch, from *** Begin Patch to *** End Patch"`
}

func (b *builtins) applyPatchTool() (tool.Tool, error) {
	desc := "Apply a patch that adds, updates, moves or deletes files of the workspace, as one change: every " +
		"hunk is checked before anything is written, and if any part fails no file changes. Format:\n" +
		"*** Begin Patch\n*** Add File: path\n+line of the new file\n*** Update File: path\n*** Move to: new/path (optional)\n" +
		"@@ a line above the hunk (optional)\n context line\n-removed line\n+added line\n*** Delete File: path\n*** End Patch\n" +
		"Give about 3 lines of context around each change. Updated files keep their line endings and byte order mark."
	return tool.New(toolApplyPatch, desc, b.applyPatch, &tool.FuncOptions{Hints: &tool.Hints{Destructive: true}, Source: source})
}

// change is one file's part of a checked patch, ready to be written.
type change struct {
	fp      filePatch
	rel     string  // the file, workspace-relative
	dest    string  // where the new content goes (rel, or the Move to path); "" for a delete
	src     *pinned // rel, its directory held open
	dst     *pinned // dest, its directory held open (src when dest is rel); nil for a delete
	content []byte
	perm    fs.FileMode
	existed bool // rel existed (always, except for an add)
}

func (b *builtins) applyPatch(ctx context.Context, in applyPatchInput) (tool.Result, error) {
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

	// Check everything and compute every new content; nothing is written
	// yet (but missing directories for new files are made). Every file's
	// directory is opened once and judged (Options.CheckFile, Protect): the
	// commit goes through those descriptors.
	args := func(real string) any { return map[string]string{"path": real} }
	changes := make([]change, len(files))
	defer func() {
		for _, c := range changes {
			if c.src != nil {
				c.src.close()
			}
			if c.dst != nil && c.dst != c.src {
				c.dst.close()
			}
		}
	}()
	for i, fp := range files {
		c := &changes[i]
		*c = change{fp: fp, rel: targets[i].rel, dest: targets[i].dest, perm: filePerm}
		pn, err := b.pin(ctx, root, toolApplyPatch, c.rel, fp.path, fp.op == opAdd, args)
		var nr *notRegular
		switch {
		case errors.As(err, &nr):
			return tool.Errorf("patch line %d: %s is not a regular file", fp.line, fp.path), nil
		case err != nil:
			return tool.Errorf("patch line %d: %s", fp.line, describe(fp.path, err)), nil
		}
		c.src = pn
		if fp.op == opAdd && pn.fi != nil {
			return tool.Errorf("patch line %d: Add File: %s already exists; update it instead", fp.line, fp.path), nil
		}
		c.existed = fp.op != opAdd
		if c.existed {
			c.perm = pn.fi.Mode().Perm()
		}
		c.dst = pn
		switch fp.op {
		case opAdd:
			c.content = []byte(fp.add)
		case opDelete:
			c.dest, c.dst = "", nil
		case opUpdate:
			if pn.fi.Size() > maxEditBytes {
				return tool.Errorf("patch line %d: %s has %d bytes; apply_patch changes files of at most %d bytes", fp.line, fp.path, pn.fi.Size(), maxEditBytes), nil
			}
			data, err := pn.readAll(fp.path, maxEditBytes+1)
			if err != nil {
				return tool.Errorf("patch line %d: %s", fp.line, describe(fp.path, err)), nil
			}
			if len(data) > maxEditBytes {
				return tool.Errorf("patch line %d: %s grew past %d bytes; apply_patch changes files of at most %d bytes", fp.line, fp.path, maxEditBytes, maxEditBytes), nil
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
				dst, err := b.pin(ctx, root, toolApplyPatch, c.dest, fp.moveTo, true, args)
				if err != nil {
					return tool.Errorf("patch line %d: %s", fp.line, describe(fp.moveTo, err)), nil
				}
				c.dst = dst
				if dst.fi != nil {
					return tool.Errorf("patch line %d: Move to: %s already exists", fp.line, fp.moveTo), nil
				}
			}
		}
	}
	if err := ctx.Err(); err != nil {
		return tool.Errorf("apply_patch: %v; no file was changed", err), nil
	}
	if err := b.commitPatch(changes); err != nil {
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
		entry := map[string]any{"op": verb, "path": c.fp.path, "to": c.fp.moveTo, "realPath": c.src.real}
		if c.dst != nil && c.dst != c.src {
			entry["realTo"] = c.dst.real
		}
		summary = append(summary, entry)
	}
	return tool.Result{Output: out.String(), Metadata: map[string]any{"files": summary}}, nil
}

// commitPatch writes the checked changes as one change. New contents go to
// temporary files beside their targets first (a failure there leaves the
// workspace as it was); then each target is replaced by a rename, after a
// hard link keeps its old content; when a step fails, the steps done are
// undone in reverse order from those links. Every step goes through the
// directories the changes pinned. Directories created for new files are
// left in place. b.patchFault, when set (tests), fails a step.
func (b *builtins) commitPatch(changes []change) (err error) {
	type entry struct {
		dir  *os.Root
		name string
	}
	var undo []func() error
	var cleanup []entry
	defer func() {
		if err != nil {
			for i := len(undo) - 1; i >= 0; i-- {
				if uerr := undo[i](); uerr != nil {
					err = fmt.Errorf("%w (and undoing it failed: %v; the workspace may be partly changed)", err, uerr)
				}
			}
		}
		for _, e := range cleanup {
			_ = e.dir.Remove(e.name)
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
		if c.dst == nil {
			continue
		}
		tmp := sideName(c.dst.base, "tmp")
		if err := fault(); err != nil {
			return err
		}
		if err := c.dst.dir.WriteFile(tmp, c.content, c.perm); err != nil {
			return fmt.Errorf("%s: %s", c.fp.path, describe(c.fp.path, err))
		}
		cleanup = append(cleanup, entry{c.dst.dir, tmp})
		if err := c.dst.dir.Chmod(tmp, c.perm); err != nil {
			return fmt.Errorf("%s: %s", c.fp.path, describe(c.fp.path, err))
		}
		temps[i] = tmp
	}
	// Commit: keep each old file under a link, then rename or remove.
	for i, c := range changes {
		src, dst := c.src, c.dst
		if c.existed {
			bak := sideName(src.base, "bak")
			if err := src.dir.Link(src.base, bak); err != nil {
				return fmt.Errorf("%s: keeping the old content: %s", c.fp.path, describe(c.fp.path, err))
			}
			cleanup = append(cleanup, entry{src.dir, bak})
			undo = append(undo, func() error { return src.dir.Rename(bak, src.base) })
		}
		if err := fault(); err != nil {
			return err
		}
		if dst != nil {
			if err := dst.dir.Rename(temps[i], dst.base); err != nil {
				return fmt.Errorf("%s: %s", c.fp.path, describe(c.fp.path, err))
			}
			if !c.existed || dst != src {
				undo = append(undo, func() error { return dst.dir.Remove(dst.base) })
			}
		}
		if c.existed && dst != src {
			if err := src.dir.Remove(src.base); err != nil {
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
