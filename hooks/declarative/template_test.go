package declarative

import (
	"encoding/json"
	"errors"
	"regexp"
	"testing"
	"time"
)

func TestExpand(t *testing.T) {
	hctx := map[string]any{
		"tool": "file_read", "args": json.RawMessage(`{"path":"a"}`), "turn": 3, "latencyMs": int64(12),
		"success": false, "error": "disk full", "nil": nil, "ratio": 0.5, "d": 1500 * time.Millisecond,
		"err": errors.New("boom"), "list": []string{"a", "b"}, "evil": "${tool}", "a.b-c": "dotted",
	}
	tests := []struct{ in, want string }{
		{"${tool} starting", "file_read starting"},
		{"${tool} took ${latencyMs} ms, success=${success}", "file_read took 12 ms, success=false"},
		{"args=${args}", `args={"path":"a"}`},
		{"turn ${turn}", "turn 3"},
		{"[${nil}]", "[]"},
		{"${ratio} ${d} ${err} ${list}", `0.5 1.5s boom ["a","b"]`},
		// C19: a name not in the context stays as written; $f is not a template.
		{`for f in *; do echo "$f" ${HOME}; done`, `for f in *; do echo "$f" ${HOME}; done`},
		{"${unknown} ${tool}", "${unknown} file_read"},
		{"${}", "${}"},
		{"${tool", "${tool"},
		{"$${tool}", "$file_read"},
		{"${ tool}", "${ tool}"},
		{"${a${tool}}", "${afile_read}"},
		// One pass: a value is never expanded again.
		{"${evil}", "${tool}"},
		{"${a.b-c}", "dotted"},
		{"no templates", "no templates"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := Expand(tt.in, hctx); got != tt.want {
			t.Errorf("Expand(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

var refTemplate = regexp.MustCompile(`\$\{([A-Za-z0-9_.\-]+)\}`)

func FuzzExpand(f *testing.F) {
	for _, s := range []string{"${tool} x", "${HOME}", "$f", "${", "${}", "${a${tool}}", "$${tool}}", "${tool}${tool}", "${error}"} {
		f.Add(s, "v$", "${tool}")
	}
	f.Fuzz(func(t *testing.T, tmpl, tool, errText string) {
		hctx := map[string]any{"tool": tool, "error": errText, "turn": 1}
		got := Expand(tmpl, hctx)
		want := refTemplate.ReplaceAllStringFunc(tmpl, func(m string) string {
			if v, ok := hctx[m[2:len(m)-1]]; ok {
				return FormatValue(v)
			}
			return m
		})
		if got != want {
			t.Fatalf("Expand(%q) = %q, reference %q", tmpl, got, want)
		}
		if Expand(tmpl, nil) != tmpl {
			t.Fatalf("Expand(%q, nil) changed the text", tmpl)
		}
	})
}
