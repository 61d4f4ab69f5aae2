package builtin

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Limits on a patch given to apply_patch.
const (
	maxPatchBytes = 4 << 20 // bytes of patchText
	maxPatchFiles = 200     // file sections
)

// patchOp is what a file section of a patch does.
type patchOp int

const (
	opAdd patchOp = iota
	opDelete
	opUpdate
)

// filePatch is one file section of a patch.
type filePatch struct {
	op     patchOp
	path   string
	moveTo string      // opUpdate: the new path, or ""
	add    string      // opAdd: the file's content
	hunks  []patchHunk // opUpdate
	line   int         // patch line of the section header (1-based)
}

// patchHunk is one "@@" hunk of an update: the lines it expects (context and
// removed, in order) and the lines it leaves (context and added).
type patchHunk struct {
	context  string // the text after "@@ ", a line to find before the hunk; "" for none
	old, new []string
	eof      bool // "*** End of File": the hunk ends at the end of the file
	line     int  // patch line where the hunk starts
}

// patchError is a parse error at a line of the patch.
type patchError struct {
	line int
	msg  string
}

func (e *patchError) Error() string { return fmt.Sprintf("patch line %d: %s", e.line, e.msg) }

const (
	beginPatch = "*** Begin Patch"
	endPatch   = "*** End Patch"
	addFile    = "*** Add File: "
	deleteFile = "*** Delete File: "
	updateFile = "*** Update File: "
	moveTo     = "*** Move to: "
	endOfFile  = "*** End of File"
)

// parsePatch parses patchText in the "*** Begin Patch" format:
//
//	*** Begin Patch
//	*** Add File: path        every following line starts with "+"
//	*** Delete File: path
//	*** Update File: path
//	*** Move to: new/path     (optional)
//	@@ a line to find first   ("@@" alone, or omitted for the first hunk)
//	 context line
//	-removed line
//	+added line
//	*** End of File           (optional: the hunk ends the file)
//	*** End Patch
//
// Lines may end in "\r\n". Errors name the patch line.
func parsePatch(text string) ([]filePatch, error) {
	if len(text) > maxPatchBytes {
		return nil, fmt.Errorf("the patch is %d bytes; at most %d are accepted", len(text), maxPatchBytes)
	}
	lines := strings.Split(normalizeNewlines(text), "\n")
	// Blank lines around the markers are tolerated.
	first, last := 0, len(lines)-1
	for first <= last && strings.TrimSpace(lines[first]) == "" {
		first++
	}
	for last >= first && strings.TrimSpace(lines[last]) == "" {
		last--
	}
	if first > last || strings.TrimSpace(lines[first]) != beginPatch {
		return nil, &patchError{first + 1, fmt.Sprintf("the patch must start with %q", beginPatch)}
	}
	if last == first || strings.TrimSpace(lines[last]) != endPatch {
		return nil, &patchError{last + 1, fmt.Sprintf("the patch must end with %q", endPatch)}
	}
	var files []filePatch
	i := first + 1
	for i < last {
		ln := lines[i]
		no := i + 1
		if len(files) == maxPatchFiles {
			return nil, &patchError{no, fmt.Sprintf("more than %d file sections", maxPatchFiles)}
		}
		switch {
		case strings.HasPrefix(ln, addFile):
			fp := filePatch{op: opAdd, path: strings.TrimSpace(ln[len(addFile):]), line: no}
			i++
			var content []string
			for ; i < last && !strings.HasPrefix(lines[i], "*** "); i++ {
				body, ok := strings.CutPrefix(lines[i], "+")
				if !ok {
					return nil, &patchError{i + 1, "every line of an added file must start with +"}
				}
				content = append(content, body)
			}
			if len(content) > 0 {
				fp.add = strings.Join(content, "\n") + "\n"
			}
			files = append(files, fp)
		case strings.HasPrefix(ln, deleteFile):
			files = append(files, filePatch{op: opDelete, path: strings.TrimSpace(ln[len(deleteFile):]), line: no})
			i++
		case strings.HasPrefix(ln, updateFile):
			fp := filePatch{op: opUpdate, path: strings.TrimSpace(ln[len(updateFile):]), line: no}
			i++
			if i < last && strings.HasPrefix(lines[i], moveTo) {
				fp.moveTo = strings.TrimSpace(lines[i][len(moveTo):])
				if fp.moveTo == "" {
					return nil, &patchError{i + 1, "Move to: needs a path"}
				}
				i++
			}
			var err error
			if fp.hunks, i, err = parseHunks(lines, i, last); err != nil {
				return nil, err
			}
			if len(fp.hunks) == 0 && fp.moveTo == "" {
				return nil, &patchError{no, fmt.Sprintf("Update File: %s has no hunk", fp.path)}
			}
			files = append(files, fp)
		case strings.TrimSpace(ln) == "":
			i++
			continue
		default:
			return nil, &patchError{no, fmt.Sprintf("want %q, %q or %q, found %q", strings.TrimSpace(addFile), strings.TrimSpace(updateFile), strings.TrimSpace(deleteFile), clipString(ln, 80))}
		}
		if fp := files[len(files)-1]; fp.path == "" { // each case above appended one section
			return nil, &patchError{fp.line, "a file section needs a path"}
		}
	}
	if len(files) == 0 {
		return nil, errors.New("the patch changes no file")
	}
	return files, nil
}

// parseHunks parses the hunks of an update section from lines[i:last] up to
// the next "*** " header; it returns them and the index of that header.
func parseHunks(lines []string, i, last int) ([]patchHunk, int, error) {
	var hunks []patchHunk
	var cur *patchHunk
	start := func(no int, context string) {
		hunks = append(hunks, patchHunk{context: context, line: no})
		cur = &hunks[len(hunks)-1]
	}
	for ; i < last; i++ {
		ln, no := lines[i], i+1
		switch {
		case ln == endOfFile || strings.TrimSpace(ln) == endOfFile:
			if cur == nil || len(cur.old)+len(cur.new) == 0 {
				return nil, i, &patchError{no, "End of File must follow a hunk's lines"}
			}
			cur.eof = true
			cur = nil
			continue
		case strings.HasPrefix(ln, "*** "):
			return hunks, i, nil
		case ln == "@@" || strings.HasPrefix(ln, "@@ "):
			ctx := strings.TrimPrefix(strings.TrimPrefix(ln, "@@"), " ")
			// "@@ -1,3 +1,4 @@" (unified diff ranges) carry no context line.
			if strings.HasPrefix(ctx, "-") && strings.Contains(ctx, " @@") {
				ctx = strings.TrimSpace(ctx[strings.Index(ctx, " @@")+3:])
			}
			start(no, ctx)
			continue
		}
		if cur == nil {
			if len(hunks) > 0 {
				return nil, i, &patchError{no, "a hunk after End of File must start with @@"}
			}
			start(no, "") // the first hunk may omit its @@ line
		}
		switch {
		case ln == "":
			// An empty line is an empty context line (editors strip the space).
			cur.old, cur.new = append(cur.old, ""), append(cur.new, "")
		case ln[0] == ' ':
			cur.old, cur.new = append(cur.old, ln[1:]), append(cur.new, ln[1:])
		case ln[0] == '-':
			cur.old = append(cur.old, ln[1:])
		case ln[0] == '+':
			cur.new = append(cur.new, ln[1:])
		default:
			return nil, i, &patchError{no, fmt.Sprintf("a hunk line must start with ' ', '-' or '+', found %q", clipString(ln, 80))}
		}
	}
	for _, h := range hunks {
		if len(h.old)+len(h.new) == 0 {
			return nil, i, &patchError{h.line, "empty hunk"}
		}
	}
	return hunks, i, nil
}

// applyHunks applies the hunks of an update to the file f (see textFile) and
// returns the file's new bytes, or an error naming the hunk that does not fit.
// A hunk's lines are found at or after the end of the previous hunk: exactly,
// then ignoring trailing whitespace, then ignoring surrounding whitespace.
func applyHunks(f *textFile, hunks []patchHunk) ([]byte, error) {
	lines := strings.Split(f.text, "\n")
	finalBreak := strings.HasSuffix(f.text, "\n")
	if finalBreak || f.text == "" {
		lines = lines[:len(lines)-1]
	}
	// offsets[k] is the byte offset of line k in f.text; offsets[len] the end.
	offsets := make([]int, len(lines)+1)
	for k, l := range lines {
		offsets[k+1] = offsets[k] + len(l) + 1
	}
	offsets[len(lines)] = len(f.text)
	var splices []splice
	at := 0
	for n, h := range hunks {
		if h.context != "" {
			k := seekLines(lines, []string{h.context}, at, false)
			if k < 0 {
				return nil, fmt.Errorf("hunk %d (patch line %d): the line %q after @@ is not in the file", n+1, h.line, clipString(h.context, 80))
			}
			at = k + 1
		}
		var start, count int
		if len(h.old) == 0 {
			start = len(lines)
			if h.context != "" && !h.eof {
				start = at
			}
		} else {
			old := h.old
			start = seekLines(lines, old, at, h.eof)
			if start < 0 && old[len(old)-1] == "" {
				old = old[:len(old)-1]
				start = seekLines(lines, old, at, h.eof)
			}
			if start < 0 {
				return nil, fmt.Errorf("hunk %d (patch line %d): its lines are not in the file after line %d:\n%s",
					n+1, h.line, at, clipString(strings.Join(h.old, "\n"), 1000))
			}
			count = len(old)
		}
		repl := strings.Join(h.new, "\n")
		sp := splice{start: offsets[start], end: offsets[start+count]}
		switch {
		case len(h.new) == 0:
		case start+count < len(lines) || finalBreak:
			repl += "\n"
		case count == 0 && len(lines) > 0:
			repl = "\n" + repl // after a last line without a break
		}
		if len(h.new) == 0 && start+count == len(lines) && !finalBreak && start > 0 &&
			(len(splices) == 0 || splices[len(splices)-1].end < sp.start) {
			sp.start-- // removing the last lines: drop the break before them too
		}
		sp.repl = repl
		splices = append(splices, sp)
		at = start + count
	}
	return f.apply(splices), nil
}

// seekLines finds want in lines at or after from and returns its index, or
// -1. With eof it first tries the end of the file. Three passes: exact,
// trailing whitespace ignored, surrounding whitespace ignored.
func seekLines(lines, want []string, from int, eof bool) int {
	if len(want) > len(lines) {
		return -1
	}
	for _, norm := range []func(string) string{
		func(s string) string { return s },
		func(s string) string { return strings.TrimRight(s, " \t") },
		strings.TrimSpace,
	} {
		match := func(k int) bool {
			for j, w := range want {
				if norm(lines[k+j]) != norm(w) {
					return false
				}
			}
			return true
		}
		if eof && len(lines)-len(want) >= from && match(len(lines)-len(want)) {
			return len(lines) - len(want)
		}
		for k := from; k+len(want) <= len(lines); k++ {
			if match(k) {
				return k
			}
		}
	}
	return -1
}

// PatchPaths returns the paths of the files an apply_patch call touches, as
// its patch names them (relative to the workspace root or absolute, with
// \xNN read as the byte NN as the tool reads it), in patch order: the path
// of every Add, Update and Delete section and every Move to path. args are
// the call's arguments ({"patchText": "*** Begin Patch ..."}); the error
// says why they hold no patch that parses (the tool refuses such a call
// too). Given to policy.Policy.WithPaths for apply_patch, it lets a
// policy's path rules judge each file a patch touches.
func PatchPaths(args json.RawMessage) ([]string, error) {
	var in applyPatchInput
	if err := json.Unmarshal(args, &in); err != nil {
		return nil, fmt.Errorf("apply_patch arguments: %w", err)
	}
	files, err := parsePatch(in.PatchText)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, f := range files {
		out = append(out, unspellPath(f.path))
		if f.moveTo != "" {
			out = append(out, unspellPath(f.moveTo))
		}
	}
	return out, nil
}
