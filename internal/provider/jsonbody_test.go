package provider

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestJSONAnswer: a JSON Content-Type whose body starts with '{' (after
// white space) is one JSON answer, read from the returned reader without the white
// space before it; an event stream, under its own type or labelled JSON, is not, and loses no
// byte to the check.
func TestJSONAnswer(t *testing.T) {
	for _, tc := range []struct {
		ct, body string
		isJSON   bool
	}{
		{"application/json", ` {"type":"error"}`, true},
		{"application/json; charset=utf-8", "\r\n{}", true},
		{"application/problem+json", `{"title":"x"}`, true},
		{"Application/JSON", `{}`, true},
		{"application/json", "data: {\"a\":1}\n\n", false},
		{"application/json", "event: ping\n\n", false},
		{"application/json", "", false},
		{"text/event-stream", `{"looks":"like json"}`, false},
		{"", `{}`, false},
	} {
		resp := &http.Response{Header: http.Header{"Content-Type": {tc.ct}}, Body: io.NopCloser(strings.NewReader(tc.body))}
		r, isJSON := JSONAnswer(resp)
		b, err := io.ReadAll(r)
		want := tc.body
		if tc.isJSON {
			want = strings.TrimLeft(want, " \t\r\n")
		}
		if isJSON != tc.isJSON || err != nil || string(b) != want {
			t.Errorf("%q %q: JSON %v, read %q (%v); want %v and %q", tc.ct, tc.body, isJSON, b, err, tc.isJSON, want)
		}
	}
}
