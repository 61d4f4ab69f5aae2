package provider

import (
	"strings"
	"testing"
)

func TestBodyText(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		// nginx's and Cloudflare's error pages: the title, on one line.
		{"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n",
			"the server answered with an HTML page: 502 Bad Gateway"},
		{"<!DOCTYPE html>\n<HTML lang=\"en\"><HEAD><TITLE>\n  example.com | 524: A timeout occurred\n</TITLE>",
			"the server answered with an HTML page: example.com | 524: A timeout occurred"},
		// Envoy's plain text, and control characters in it.
		{"upstream connect error or disconnect/reset before headers. reset reason: overflow\n", "upstream connect error or disconnect/reset before headers. reset reason: overflow"},
		{"bad\x1b[31m red\r\x00 \u2028end", "bad [31m red end"},
		{"<p>no title</p>", "<p>no title</p>"},
		{"", ""},
		{"\xff\xfe", "\ufffd\ufffd"},
		{strings.Repeat("é", 200), strings.Repeat("é", 150) + "..."},
		// Characters whose lower case has another length (Ⱥ: 2 bytes, 3
		// lower; İ: 2 bytes, 1 lower) before the title: its text, not a
		// crash or another slice of the page.
		{"<" + strings.Repeat("Ⱥ", 50) + "<title>x</title>", "the server answered with an HTML page: x"},
		{"<" + strings.Repeat("İ", 50) + "<TITLE>502</TITLE>", "the server answered with an HTML page: 502"},
	} {
		if got := BodyText([]byte(tc.body)); got != tc.want {
			t.Errorf("BodyText(%q) = %q, want %q", tc.body, got, tc.want)
		}
	}
}

// FuzzBodyText: whatever a server sends, the text is one line of printable
// characters within the limit.
func FuzzBodyText(f *testing.F) {
	f.Add([]byte("<html><title>502 Bad Gateway</title></html>"))
	f.Add([]byte("plain\r\ntext\x1b"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s := BodyText(b)
		if len(s) > maxBodyText+len("...")+len("the server answered with an HTML page: ") {
			t.Fatalf("%d bytes", len(s))
		}
		for _, r := range s {
			if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
				t.Fatalf("control character %U in %q", r, s)
			}
		}
	})
}
