package shellcmd

import (
	"errors"
	"fmt"
	"strings"
)

// Tri is the answer of a condition on a command whose words may be known
// only at run time.
type Tri int

// The answers, from weakest to strongest.
const (
	// No: the condition does not hold, whatever the dynamic words become.
	No Tri = iota
	// Maybe: it holds for some values of the dynamic words.
	Maybe
	// Yes: it holds, whatever the dynamic words become.
	Yes
)

// String returns "no", "maybe" or "yes".
func (t Tri) String() string {
	switch t {
	case Yes:
		return "yes"
	case Maybe:
		return "maybe"
	}
	return "no"
}

// MaxPatternSize is the longest [Pattern] accepted, in bytes.
const MaxPatternSize = 4096

// Pattern is a command pattern in the form of Claude Code's Bash permission
// rules: the program and its arguments separated by single spaces, where *
// matches any run of characters (spaces included) and every other character
// matches itself. A pattern that ends in " *" (or in ":*", the older
// spelling) also matches the command without further arguments: "git push *"
// matches "git push", "git push origin main", not "git pushy"; "ls*" matches
// "lsof". The program is matched by base name, ignoring case ("rm -rf *"
// matches "/bin/RM -rf x"); arguments are case-sensitive. Build one with
// [CompilePattern].
type Pattern struct {
	text string
	pat  string // normalised: program lower-cased, ":*" spelled " *"
	opt  bool   // the trailing " *" may match nothing
}

// CompilePattern checks and compiles a command pattern. Errors: an empty
// pattern, one longer than [MaxPatternSize], control characters.
func CompilePattern(p string) (*Pattern, error) {
	if strings.TrimSpace(p) == "" {
		return nil, errors.New("empty command pattern")
	}
	if len(p) > MaxPatternSize {
		return nil, fmt.Errorf("command pattern longer than %d bytes", MaxPatternSize)
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f {
			return nil, fmt.Errorf("command pattern %q has a control character", p)
		}
	}
	q := strings.Join(strings.Fields(p), " ")
	if strings.HasSuffix(q, ":*") {
		q = strings.TrimSuffix(q, ":*") + " *"
	}
	prog, rest, hasRest := strings.Cut(q, " ")
	prog = strings.ToLower(base(prog))
	if hasRest {
		q = prog + " " + rest
	} else {
		q = prog
	}
	return &Pattern{text: p, pat: q, opt: strings.HasSuffix(q, " *")}, nil
}

// String returns the pattern as written.
func (p *Pattern) String() string { return p.text }

// Match reports whether c matches the pattern: [Yes] when it does whatever
// its dynamic words become, [Maybe] when it could, [No] otherwise (and for
// an opaque command or one without a program, [Maybe] and [No]).
func (p *Pattern) Match(c *Command) Tri {
	if c.Opaque != "" {
		return Maybe
	}
	if c.Program == "" {
		return No
	}
	var full strings.Builder // with dynamic parts as 0 bytes
	var lit strings.Builder  // the text before the first dynamic part
	dynamic := false
	full.WriteString(strings.ToLower(c.Program))
	lit.WriteString(strings.ToLower(c.Program))
	for _, w := range c.Args {
		full.WriteByte(' ')
		m := w.match
		if m == "" && w.Value != "" && !w.Dynamic {
			m = w.Value
		}
		full.WriteString(m)
		if !dynamic {
			lit.WriteByte(' ')
			if w.Dynamic {
				lit.WriteString(w.Literal)
				dynamic = true
			} else {
				lit.WriteString(w.Value)
			}
		}
	}
	s := full.String()
	if globMatch(p.pat, s) || (p.opt && globMatch(strings.TrimSuffix(p.pat, " *"), s)) {
		return Yes
	}
	if dynamic && (globPrefix(p.pat, lit.String()) || (p.opt && globPrefix(strings.TrimSuffix(p.pat, " *"), lit.String()))) {
		return Maybe
	}
	return No
}

// globMatch matches s against pat, where only * is special and matches any
// run of bytes (0 bytes included); it runs in O(len(pat)*len(s)).
func globMatch(pat, s string) bool {
	px, sx := 0, 0
	starPx, starSx := -1, 0
	for px < len(pat) || sx < len(s) {
		if px < len(pat) {
			if pat[px] == '*' {
				starPx, starSx = px, sx
				px++
				continue
			}
			if sx < len(s) && pat[px] == s[sx] {
				px++
				sx++
				continue
			}
		}
		if starPx >= 0 && starSx < len(s) {
			starSx++
			px, sx = starPx+1, starSx
			continue
		}
		return false
	}
	return true
}

// globPrefix reports whether some string that starts with prefix matches
// pat: whether pat, read over prefix, still has a live state.
func globPrefix(pat, prefix string) bool {
	live := make([]bool, len(pat)+1)
	live[0] = true
	closeStars := func() {
		for i := 0; i < len(pat); i++ {
			if live[i] && pat[i] == '*' {
				live[i+1] = true
			}
		}
	}
	closeStars()
	for k := 0; k < len(prefix); k++ {
		next := make([]bool, len(pat)+1)
		any := false
		for i := 0; i < len(pat); i++ {
			if !live[i] {
				continue
			}
			if pat[i] == '*' {
				next[i] = true
				any = true
			} else if pat[i] == prefix[k] {
				next[i+1] = true
				any = true
			}
		}
		if !any {
			return false
		}
		live = next
		closeStars()
	}
	for _, l := range live {
		if l {
			return true
		}
	}
	return false
}

// HasFlags reports whether c has every flag in flags among its arguments
// before "--". A flag "--force" is present as "--force" or "--force=...". A
// flag "-rf" is present when an argument is exactly "-rf", or when each of
// its letters appears in some cluster of short options ("-r -f", "-fr",
// "-rfv"). A dynamic argument before "--" makes a missing flag [Maybe]. An
// opaque command gives [Maybe]; a command without a program, [No].
func (c *Command) HasFlags(flags []string) Tri {
	if c.Opaque != "" {
		return Maybe
	}
	if c.Program == "" {
		return No
	}
	var exact []string
	short := map[rune]bool{}
	dynamic := false
	for _, w := range c.Args {
		if w.Value == "--" && !w.Dynamic {
			break
		}
		if w.Dynamic {
			dynamic = true
			continue
		}
		v := w.Value
		if !strings.HasPrefix(v, "-") || v == "-" {
			continue
		}
		exact = append(exact, v)
		if !strings.HasPrefix(v, "--") {
			for _, r := range v[1:] {
				short[r] = true
			}
		}
	}
	for _, f := range flags {
		if !hasFlag(f, exact, short) {
			if dynamic {
				return Maybe
			}
			return No
		}
	}
	return Yes
}

func hasFlag(f string, exact []string, short map[rune]bool) bool {
	for _, e := range exact {
		if e == f || (strings.HasPrefix(f, "--") && strings.HasPrefix(e, f+"=")) {
			return true
		}
	}
	if strings.HasPrefix(f, "--") || len(f) < 2 {
		return false
	}
	for _, r := range f[1:] {
		if !short[r] {
			return false
		}
	}
	return true
}

// ValidFlag reports whether f is usable with [Command.HasFlags]: "-x",
// "-xyz" or "--name", without spaces or control characters.
func ValidFlag(f string) bool {
	if len(f) < 2 || f[0] != '-' || f == "--" {
		return false
	}
	for _, r := range f {
		if r <= ' ' || r == 0x7f || r == '=' {
			return false
		}
	}
	return true
}
