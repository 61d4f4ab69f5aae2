package server

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
)

// Bodies of the API show arguments as a person wrote them: curl prints
// "echo hi > a.txt && ls", not "\u003e" and "\u0026\u0026".
func TestWriteJSONKeepsShellText(t *testing.T) {
	rec := httptest.NewRecorder()
	writeJSON(rec, 200, map[string]any{"arguments": json.RawMessage(`{"command":"echo hi > a.txt && ls <b"}`)})
	body := rec.Body.String()
	if !strings.Contains(body, `"command": "echo hi > a.txt && ls <b"`) {
		t.Errorf("body %s", body)
	}
	if h := rec.Header(); h.Get("Content-Type") != "application/json" || h.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("headers %v: the body is JSON and must not be sniffed as anything else", h)
	}
}

// So are problem details.
func TestWriteProblemNoSniff(t *testing.T) {
	rec := httptest.NewRecorder()
	problemf(rec, nil, 404, "no run <b>x</b>")
	if h := rec.Header(); h.Get("Content-Type") != "application/problem+json" || h.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("headers %v", h)
	}
}
