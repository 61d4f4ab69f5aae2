package runcore_test

import (
	"testing"

	"github.com/tollgate-dev/tollgate/internal/runcore"
)

// A model reference reads back what String writes, and bad text says what
// to write instead.
func TestParseModelRef(t *testing.T) {
	for _, s := range []string{"openai:gpt-4.1-mini", "anthropic:claude-sonnet-4-5", "script:/a/b:c.yaml"} {
		ref, err := runcore.ParseModelRef(s)
		if err != nil || ref.String() != s {
			t.Errorf("ParseModelRef(%q) = %+v, %v", s, ref, err)
		}
	}
	for s, want := range map[string]string{
		"gpt":           `want openai:MODEL, anthropic:MODEL or script:PATH, got "gpt"`,
		"openai:":       `want openai:MODEL, anthropic:MODEL or script:PATH, got "openai:"`,
		"gemini:pro":    `"gemini:pro": unknown provider "gemini" (known: script, openai, anthropic)`,
		"antropic:opus": `"antropic:opus": unknown provider "antropic"; did you mean "anthropic"?`,
	} {
		if _, err := runcore.ParseModelRef(s); err == nil || err.Error() != want {
			t.Errorf("ParseModelRef(%q) = %v, want %q", s, err, want)
		}
	}
}
