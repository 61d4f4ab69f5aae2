package claudegate

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
)

// maxTranscriptTail bounds how much of a transcript's end is read for its
// last prompt and stated intent: 256 KiB.
const maxTranscriptTail = 256 << 10

// TranscriptNotes returns the last user prompt and the model's last text
// (its stated intent) in the transcript file Claude Code names in each
// hook event (JSON lines with type "user" or "assistant" and a message),
// reading at most its last 256 KiB. A file that cannot be read, is not a
// regular file, or has neither gives empty strings. Each is cut to 4 KiB.
func TranscriptNotes(path string) (prompt, intent string) {
	if path == "" {
		return "", ""
	}
	f, err := os.Open(path)
	if err != nil {
		return "", ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return "", ""
	}
	off := max(fi.Size()-maxTranscriptTail, 0)
	b, err := io.ReadAll(io.NewSectionReader(f, off, maxTranscriptTail))
	if err != nil {
		return "", ""
	}
	lines := bytes.Split(b, []byte("\n"))
	for i := len(lines) - 1; i >= 0 && (prompt == "" || intent == ""); i-- {
		typ, text := transcriptLine(lines[i])
		switch {
		case typ == "user" && prompt == "" && text != "":
			prompt = text
		case typ == "assistant" && intent == "" && text != "" && prompt == "":
			intent = text
		}
	}
	return cut(prompt, maxNoteBytes), cut(intent, maxNoteBytes)
}

// transcriptLine returns a transcript line's type and its text: a string
// content, or its text blocks joined (tool results and tool calls have
// none).
func transcriptLine(line []byte) (typ, text string) {
	var l struct {
		Type    string `json:"type"`
		Message struct {
			Content json.RawMessage `json:"content"`
		} `json:"message"`
	}
	if json.Unmarshal(line, &l) != nil {
		return "", ""
	}
	var s string
	if json.Unmarshal(l.Message.Content, &s) == nil {
		return l.Type, s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(l.Message.Content, &blocks)
	var out []byte
	for _, bl := range blocks {
		if bl.Type == "text" && bl.Text != "" {
			if len(out) > 0 {
				out = append(out, '\n')
			}
			out = append(out, bl.Text...)
		}
	}
	return l.Type, string(out)
}
