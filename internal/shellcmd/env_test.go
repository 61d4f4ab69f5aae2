package shellcmd

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// env -S splits its string into words that env reads again as arguments:
// the joined and long spellings run the command they name, with the words
// after them, and options inside the string are env's own. Before, the
// joined forms dropped the word after them ("env -Snice rm v" ran rm
// unseen) and "env -Sx" panicked.
func TestEnvSplitString(t *testing.T) {
	for _, tc := range []struct {
		script string
		want   []string
	}{
		{"env -Snice rm -v victim", []string{"env", "env -S>env>nice", "env -S>env>nice>rm"}},
		{"env -S'nice' rm v", []string{"env", "env -S>env>nice", "env -S>env>nice>rm"}},
		{"env -Srm v", []string{"env", "env -S>env>rm"}},
		{"env -S rm v", []string{"env", "env -S>env>rm"}},
		{"env -S 'rm -f' v", []string{"env", "env -S>env>rm"}},
		{"env --split-string=nice rm v", []string{"env", "env -S>env>nice", "env -S>env>nice>rm"}},
		{"env --split-string nice rm v", []string{"env", "env -S>env>nice", "env -S>env>nice>rm"}},
		{"env --split=rm v", []string{"env", "env -S>env>rm"}},
		{"env --sp rm v", []string{"env", "env -S>env>rm"}},
		{"env -iS rm v", []string{"env", "env -S>env>rm"}},
		{"env -vSrm v", []string{"env", "env -S>env>rm"}},
		{"env -S'-i rm' v", []string{"env", "env -S>env>rm"}},
		{"env -S'-u HOME rm' v", []string{"env", "env -S>env>rm"}},
		{"env -S'A=1 rm' v", []string{"env", "env -S>rm"}},
		{"env -S'-S rm' v", []string{"env", "env -S>env -S>env>rm"}},
		{"env -S'true; rm v'", []string{"env", "env -S>true", "env -S>rm"}},
		{`env -S"$X" v`, []string{"env", "env>?"}},
		{`env -S "$X" v`, []string{"env", "env -S>?"}},
		{"env -Sx", []string{"env", "env -S>env>x"}},
		{"env -S", []string{"env"}},
		{"env -S ''", []string{"env"}},
		{"env --block-signal rm v", []string{"env", "env>rm"}},
		{"env --unset HOME rm v", []string{"env", "env>rm"}},
		{"env --u HOME rm v", []string{"env", "env>rm"}},
		{"env --nonsense rm v", []string{"env", "env>?"}},
		{"env -C /tmp -u A B=2 rm v", []string{"env", "env>rm"}},
		{"env A=$X rm v", []string{"env", "env>rm"}},
		{"env $X rm v", []string{"env", "env>?"}},
	} {
		if got := programs(Analyze(tc.script)); !cmp.Equal(got, tc.want) {
			t.Errorf("%q:\n%s", tc.script, cmp.Diff(tc.want, got))
		}
	}
}
