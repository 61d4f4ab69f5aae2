package provider

import (
	"bytes"
	stdcmp "cmp"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBaseURL(t *testing.T) {
	for _, tt := range []struct{ base, want, err string }{
		{"", "https://api.example.com/v1/", ""},
		{"http://localhost:11434/v1", "http://localhost:11434/v1/", ""},
		{"https://x.example/", "https://x.example/", ""},
		{"ftp://x.example", "", `p: base URL "ftp://x.example" is not an absolute http(s) URL`},
		{"localhost:8080/sk-KEY", "", `p: base URL "localhost:8080/[redacted]" is not an absolute http(s) URL`},
	} {
		got, err := BaseURL("p", tt.base, "https://api.example.com/v1", "sk-KEY")
		if got != tt.want || fmt.Sprint(err) != stdcmp.Or(tt.err, "<nil>") {
			t.Errorf("BaseURL(%q) = %q, %v; want %q, %s", tt.base, got, err, tt.want, tt.err)
		}
	}
}

func TestHeaders(t *testing.T) {
	set := func(k, v string) string { return "set " + k + "=" + v }
	add := func(k, v string) string { return "add " + k + "=" + v }
	got := Headers(http.Header{"X-Tenant": {"a", "b"}, "Http-Referer": {"r"}}, set, add)
	want := []string{"set Http-Referer=r", "set X-Tenant=a", "add X-Tenant=b"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Headers (-want +got):\n%s", d)
	}
}

func TestLoggerAndTruncate(t *testing.T) {
	Logger(nil, "p").Info("discarded")
	var buf bytes.Buffer
	Logger(slog.New(slog.NewTextHandler(&buf, nil)), "p").Info("hi")
	if !strings.Contains(buf.String(), "provider=p") {
		t.Errorf("log = %q, want provider=p", buf.String())
	}
	if got := Truncate("abcdef", 3); got != "abc..." {
		t.Errorf("Truncate = %q", got)
	}
	if got := Truncate("abc", 3); got != "abc" {
		t.Errorf("Truncate = %q", got)
	}
}
