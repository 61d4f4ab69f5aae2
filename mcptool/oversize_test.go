package mcptool

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"
)

// cutThrough runs in through a noiseFilter with a limit of max bytes per
// message, one byte at a time, and returns what comes out.
func cutThrough(t testing.TB, in string, max int) string {
	t.Helper()
	f := newNoiseFilter(strings.NewReader(in), slog.New(slog.DiscardHandler), "s", max)
	out, err := io.ReadAll(iotest.OneByteReader(f))
	if err != nil {
		t.Fatalf("ReadAll: %v", err)
	}
	return string(out)
}

// A message over the limit is replaced, whatever the order of its keys: a
// tool result keeps the start of its text (escapes decoded, never cut in
// the middle of one) and isError; any other response becomes an error for
// its ID; a notification is dropped. Messages within the limit pass whole.
func TestOversizedMessages(t *testing.T) {
	big := strings.Repeat("é\\n\\u00e9\\\"", cutResultBytes/4)
	small := `{"jsonrpc":"2.0","id":3,"result":{}}` + "\n"
	type resp struct {
		ID     json.RawMessage `json:"id"`
		Result *struct {
			Content []struct{ Text string } `json:"content"`
			IsError bool                    `json:"isError"`
			Meta    map[string]any          `json:"_meta"`
		} `json:"result"`
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	for _, tc := range []struct {
		name, in string
		check    func(t *testing.T, r *resp)
	}{
		{"id first", `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"` + big + `"}]}}`, func(t *testing.T, r *resp) {
			if string(r.ID) != "7" || r.Result == nil || r.Result.IsError {
				t.Fatalf("%+v", r)
			}
			text := r.Result.Content[0].Text
			var whole string
			_ = json.Unmarshal([]byte(`"`+big+`"`), &whole)
			kept, _, _ := strings.Cut(text, "\n[cut: ")
			if !strings.HasPrefix(whole, kept) || len(kept) < cutResultBytes/2 || !utf8.ValidString(kept) {
				t.Fatalf("kept %d bytes, not a prefix of the text", len(kept))
			}
			if n, _ := r.Result.Meta[cutMeta].(float64); n < float64(len(big)) {
				t.Fatalf("_meta = %v", r.Result.Meta)
			}
		}},
		{"id last, two items, isError", `{"result":{"isError":true,"content":[{"type":"text","text":"first"},{"type":"image","data":"` + strings.Repeat("A", 2*cutResultBytes) + `"},{"text":"second","type":"text"}]},"jsonrpc":"2.0","id":"req-\"9"}`, func(t *testing.T, r *resp) {
			if string(r.ID) != `"req-\"9"` || r.Result == nil || !r.Result.IsError {
				t.Fatalf("%+v", r)
			}
			if text := r.Result.Content[0].Text; !strings.HasPrefix(text, "first\nsecond\n[cut: ") {
				t.Fatalf("text %.100q", text)
			}
		}},
		{"other result", `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"` + strings.Repeat("x", 2*cutResultBytes) + `"}]}}`, func(t *testing.T, r *resp) {
			if string(r.ID) != "1" || r.Error == nil || r.Error.Code != -32603 || !strings.Contains(r.Error.Message, "over the limit") {
				t.Fatalf("%+v", r)
			}
		}},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"` + strings.Repeat("x", 2*cutResultBytes) + `"}}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := cutThrough(t, tc.in+"\n"+small, cutResultBytes)
			first, rest, _ := strings.Cut(out, "\n")
			if tc.check == nil {
				if out != small {
					t.Fatalf("got %.200q; want the notification dropped", out)
				}
				return
			}
			if rest != small {
				t.Fatalf("the next message did not pass: %.200q", rest)
			}
			var r resp
			if err := json.Unmarshal([]byte(first), &r); err != nil {
				t.Fatalf("replacement is not JSON: %v: %.200q", err, first)
			}
			tc.check(t, &r)
		})
	}
	// Within the limit: whole, even when long.
	long := `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"` + strings.Repeat("y", 3*noiseCheckLen) + `"}]}}` + "\n"
	if got := cutThrough(t, long+small, 4*noiseCheckLen); got != long+small {
		t.Fatalf("a long message within the limit was changed (%d bytes out)", len(got))
	}
}

// FuzzOversize: whatever an oversized line holds, the replacement is nil or
// one valid JSON-RPC message on one line, and the scanner's memory stays
// bounded.
func FuzzOversize(f *testing.F) {
	f.Add(`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"a\u00e9\"b"}],"isError":true}}`)
	f.Add(`{"result":{"content":[{"text":"x"}]},"id":"q"}`)
	f.Add(`{"id":[1,2],"method":"x"}`)
	f.Add(`{"id":1e400,"error":{}}`)
	f.Fuzz(func(t *testing.T, in string) {
		var s oversize
		s.write([]byte(in))
		msg, _ := s.replacement(10)
		if msg != nil && (!json.Valid(msg) || strings.Contains(string(msg), "\n")) {
			t.Fatalf("replacement %q", msg)
		}
		if len(s.id) > maxIDBytes || s.textBytes > cutResultBytes+6 || len(s.key) > maxKeyBytes {
			t.Fatalf("unbounded: id %d, text %d, key %d", len(s.id), s.textBytes, len(s.key))
		}
	})
}

// An oversized message nested millions of levels deep, or holding millions
// of empty texts, costs the scanner no memory per level or per text: a
// server cannot grow tollgate's memory by the size of its message.
func TestOversizeMemoryIsBounded(t *testing.T) {
	var s oversize
	s.write([]byte(`{"jsonrpc":"2.0","result":{"content":[`))
	deep := bytes.Repeat([]byte("["), 4<<20)
	s.write(deep)
	s.write(bytes.Repeat([]byte("]"), 4<<20))
	if cap(s.stack) > 16 {
		t.Fatalf("4 Mi levels of nesting kept %d frames", cap(s.stack))
	}
	empty := bytes.Repeat([]byte(`{"type":"text","text":""},`), 100_000)
	s.write(empty)
	if len(s.texts) > 4096 {
		t.Fatalf("100k empty texts kept %d entries", len(s.texts))
	}
	s.write([]byte(`{"type":"text","text":"end"}]},"id":7}`))
	if string(s.id) != "7" {
		t.Fatalf("the ID after the deep part: %q", s.id)
	}
}
