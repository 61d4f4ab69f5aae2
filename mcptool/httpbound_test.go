package mcptool

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// hugeHTTPServer is a streamable-HTTP MCP server, written by hand, whose
// one tool answers with a result of size bytes, as one JSON body or as one
// SSE event; written counts the bytes of results it managed to send.
func hugeHTTPServer(t *testing.T, sse bool, size int) (*httptest.Server, *atomic.Int64) {
	var written atomic.Int64
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"params"`
		}
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.Header().Set("Mcp-Session-Id", "s1")
		if len(m.ID) == 0 {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		reply := func(result string) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":` + result + `}`))
		}
		switch m.Method {
		case "initialize":
			reply(`{"protocolVersion":"` + m.Params.ProtocolVersion + `","capabilities":{"tools":{}},"serverInfo":{"name":"huge","version":"1"}}`)
		case "tools/list":
			reply(`{"tools":[{"name":"big","inputSchema":{"type":"object"}}]}`)
		case "tools/call":
			head, tail := `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{"content":[{"type":"text","text":"`, `"}]}}`
			if sse {
				w.Header().Set("Content-Type", "text/event-stream")
				head, tail = "data: "+head, tail+"\n\n"
			} else {
				w.Header().Set("Content-Type", "application/json")
			}
			if _, err := w.Write([]byte(head)); err != nil {
				return
			}
			chunk := bytes.Repeat([]byte("A"), 64<<10)
			for n := 0; n < size; n += len(chunk) {
				if _, err := w.Write(chunk); err != nil {
					return
				}
				written.Add(int64(len(chunk)))
			}
			_, _ = w.Write([]byte(tail))
		default:
			reply(`{}`)
		}
	}))
	t.Cleanup(hs.Close)
	return hs, &written
}

// A streamable-HTTP server's tool result larger than MaxMessageBytes, as a
// JSON body or as an SSE event, fails the call once the limit is read: the
// client stops reading there instead of holding the whole result in memory.
func TestStreamableHTTPResultBounded(t *testing.T) {
	const limit, size = 1 << 20, 64 << 20
	for _, sse := range []bool{false, true} {
		name := map[bool]string{false: "json", true: "sse"}[sse]
		t.Run(name, func(t *testing.T) {
			hs, written := hugeHTTPServer(t, sse, size)
			s := open(t, &Config{Servers: map[string]*ServerConfig{"huge": {URL: hs.URL, Timeout: 20 * time.Second}}}, &Options{MaxMessageBytes: limit})
			big := toolsByName(s)["mcp__huge__big"]
			if big == nil {
				t.Fatalf("no tool; status %+v", s.Servers())
			}
			res, err := big.Call(context.Background(), json.RawMessage(`{}`))
			if err == nil && !res.IsError {
				t.Fatalf("a %d-byte result under a %d-byte limit was returned whole (%d bytes)", size, limit, len(res.Output))
			}
			msg := res.Output
			if err != nil {
				msg = err.Error()
			}
			if !strings.Contains(msg, "size limit") {
				t.Errorf("the failure does not say the limit was passed: %s", msg)
			}
			if w := written.Load(); w >= size/4 {
				t.Errorf("the server sent %d bytes before the client stopped reading; want far less than %d", w, size)
			}
		})
	}
}

// A streamable-HTTP server with configured headers that redirects to
// another host is not followed: the headers (a key) never reach that host,
// and the error says why.
func TestStreamableHTTPCrossHostRedirectRefused(t *testing.T) {
	var leaked atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" || r.Header.Get("X-Api-Key") != "" {
			leaked.Add(1)
		}
		w.WriteHeader(http.StatusNotFound)
	}))
	t.Cleanup(other.Close)
	// 127.0.0.1 and localhost are different hosts to a browser and to us.
	target := strings.Replace(other.URL, "127.0.0.1", "localhost", 1)
	redir := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target+"/mcp", http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redir.Close)
	cfg := &Config{Servers: map[string]*ServerConfig{"r": {URL: redir.URL + "/mcp", Timeout: 5 * time.Second,
		Headers: map[string]string{"Authorization": "Bearer ${KEY}", "X-Api-Key": "${KEY}"}}}}
	lookup := func(name string) (string, bool) { return "sk-secret", name == "KEY" }
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Open(ctx, cfg, &Options{LookupEnv: lookup})
	msg := ""
	if err != nil {
		msg = err.Error()
	} else {
		t.Cleanup(func() { _ = s.Close() })
		if st := status(t, s, "r"); st.Err != nil {
			msg = st.Err.Error()
		}
	}
	if leaked.Load() != 0 {
		t.Fatalf("the configured headers reached the host redirected to %d times", leaked.Load())
	}
	if !strings.Contains(msg, "redirect to another host refused") {
		t.Errorf("the server's failure does not say the redirect was refused: %q", msg)
	}
}
