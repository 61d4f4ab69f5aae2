package builtin

import (
	"bytes"
	"strings"
)

// utf8BOM is the UTF-8 byte order mark. read does not show it, edit and
// apply_patch match text after it and keep it, write keeps it on a file that
// had it.
const utf8BOM = "\uFEFF"

// textFile is a text file split into what the model sees and what only the
// disk holds: an optional BOM, and the line ending of every line.
//
// The text the model sees (text) has "\n" for every line break, whatever the
// file holds ("\r\n" or "\n"); ends[i] is the real ending of line i of text
// ("\r\n" or "\n"). A lone "\r" is not a line break (read does not break
// there either) and stays in the text.
type textFile struct {
	bom  bool
	text string
	ends []string
}

// parseText splits data as described on textFile.
func parseText(data []byte) *textFile {
	s := string(data)
	f := &textFile{}
	if rest, ok := strings.CutPrefix(s, utf8BOM); ok {
		f.bom, s = true, rest
	}
	if !strings.Contains(s, "\r\n") {
		f.text = s
		f.ends = make([]string, strings.Count(s, "\n"))
		for i := range f.ends {
			f.ends[i] = "\n"
		}
		return f
	}
	var b strings.Builder
	b.Grow(len(s))
	for {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			b.WriteString(s)
			break
		}
		end := "\n"
		line := s[:i]
		if strings.HasSuffix(line, "\r") {
			end, line = "\r\n", line[:len(line)-1]
		}
		b.WriteString(line)
		b.WriteByte('\n')
		f.ends = append(f.ends, end)
		s = s[i+1:]
	}
	f.text = b.String()
	return f
}

// dominant returns the line ending most lines of f have ("\n" when f has no
// line break, or as many of each).
func (f *textFile) dominant() string {
	crlf := 0
	for _, e := range f.ends {
		if e == "\r\n" {
			crlf++
		}
	}
	if crlf*2 > len(f.ends) {
		return "\r\n"
	}
	return "\n"
}

// endingsName names f's line endings for results and metadata: "lf", "crlf",
// "mixed" or "none".
func (f *textFile) endingsName() string {
	crlf := 0
	for _, e := range f.ends {
		if e == "\r\n" {
			crlf++
		}
	}
	switch {
	case len(f.ends) == 0:
		return "none"
	case crlf == 0:
		return "lf"
	case crlf == len(f.ends):
		return "crlf"
	}
	return "mixed"
}

// normalizeNewlines turns every "\r\n" of s into "\n": the form in which
// the model's oldString and newString are matched against textFile.text.
func normalizeNewlines(s string) string { return strings.ReplaceAll(s, "\r\n", "\n") }

// splice is one replacement in a textFile's text: text[start:end] becomes repl
// (which uses "\n" for its line breaks).
type splice struct {
	start, end int
	repl       string
}

// apply performs the splices (sorted, not overlapping) and returns the file's
// new bytes. Lines outside the splices keep their endings. The line breaks of
// a replacement take, in order, the endings of the line breaks it replaces;
// once those run out (the replacement has more lines), the ending of the last
// one replaced, or when it replaced none, the ending of the line it lies in;
// on a last line without a break, the file's dominant ending.
func (f *textFile) apply(splices []splice) []byte {
	var out bytes.Buffer
	out.Grow(len(f.text) + len(f.text)/16)
	if f.bom {
		out.WriteString(utf8BOM)
	}
	line := 0 // index into f.ends of the line break that ends the current line
	pos := 0
	copyOrig := func(to int) {
		for pos < to {
			i := strings.IndexByte(f.text[pos:to], '\n')
			if i < 0 {
				out.WriteString(f.text[pos:to])
				pos = to
				return
			}
			out.WriteString(f.text[pos : pos+i])
			out.WriteString(f.ends[line])
			line++
			pos += i + 1
		}
	}
	for _, s := range splices {
		copyOrig(s.start)
		// The endings of the breaks this splice replaces.
		old := f.text[s.start:s.end]
		n := strings.Count(old, "\n")
		replaced := f.ends[line : line+n]
		fallback := f.dominant()
		if n > 0 {
			fallback = replaced[n-1]
		} else if line < len(f.ends) {
			fallback = f.ends[line]
		}
		k := 0
		for r := s.repl; ; {
			i := strings.IndexByte(r, '\n')
			if i < 0 {
				out.WriteString(r)
				break
			}
			out.WriteString(r[:i])
			if k < len(replaced) {
				out.WriteString(replaced[k])
			} else {
				out.WriteString(fallback)
			}
			k++
			r = r[i+1:]
		}
		line += n
		pos = s.end
	}
	copyOrig(len(f.text))
	return out.Bytes()
}
