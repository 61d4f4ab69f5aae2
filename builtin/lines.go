package builtin

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"unicode/utf8"
)

// sniffLen is how many leading bytes are checked for a NUL byte to tell a
// binary file from text (the heuristic of git and grep).
const sniffLen = 8000

// isBinary reports whether head, the start of a file, looks binary.
func isBinary(head []byte) bool { return bytes.IndexByte(head, 0) >= 0 }

// lineReader yields the lines of r without their "\n" or "\r\n", keeping at
// most max bytes of each (the rest of a longer line is read and dropped), so
// a file with one huge line never takes more than max bytes of memory.
type lineReader struct {
	r   *bufio.Reader
	max int
	buf []byte
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next line and whether it was cut. It returns io.EOF when
// nothing is left. The line is valid until the next call.
func (l *lineReader) next() (line []byte, cut bool, err error) {
	l.buf = l.buf[:0]
	total, content := 0, 0 // bytes read; bytes of the line without "\n"
	var last byte
	for {
		chunk, err := l.r.ReadSlice('\n')
		total += len(chunk)
		if err == nil {
			chunk = chunk[:len(chunk)-1]
		}
		if len(chunk) > 0 {
			last = chunk[len(chunk)-1]
		}
		content += len(chunk)
		if room := l.max - len(l.buf); room > 0 {
			l.buf = append(l.buf, chunk[:min(room, len(chunk))]...)
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err != nil && (err != io.EOF || total == 0):
			return nil, false, err
		}
		if last == '\r' {
			content--
		}
		if content > l.max {
			return l.buf, true, nil
		}
		return l.buf[:content], false, nil
	}
}

// clip cuts s to at most max bytes, reporting whether s is now a part of its
// line (it was cut here, or already, as cut says). A part never ends in a rune
// split in two.
func clip(s []byte, max int, cut bool) ([]byte, bool) {
	if len(s) > max {
		s, cut = s[:max], true
	}
	if cut {
		for i := 0; i < utf8.UTFMax-1 && len(s) > 0; i++ {
			if r, size := utf8.DecodeLastRune(s); r != utf8.RuneError || size != 1 {
				break
			}
			s = s[:len(s)-1]
		}
	}
	return s, cut
}

// lineCutMarker follows a line shown only in part.
const lineCutMarker = " ... [line truncated]"
