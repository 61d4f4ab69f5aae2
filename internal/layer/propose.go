package layer

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/internal/shellcmd"
)

// Limits of what Propose accepts and makes.
const (
	// MaxLeadingWords is how many words after the program a command
	// pattern keeps ("git remote add *").
	MaxLeadingWords = 2
	// MaxRuleText is the longest rule text Propose makes, in bytes (the
	// store's limit for a layer rule).
	MaxRuleText = 16 << 10
	// MaxArgs is how many top-level arguments an exact-arguments rule
	// names at most.
	MaxArgs = 32
)

// ErrNoScope: the call's arguments give no scope a rule could be made of
// (a shell command the analysis cannot see through, arguments that are not
// a JSON object, a rule over the size limit). The message says why.
var ErrNoScope = errors.New("layer: no rule can be proposed for this call")

// Proposal is a rule proposed from a decided call: its ID, the tool and
// effect, the policy YAML it adds to the layer and a one-line summary of
// its scope.
type Proposal struct {
	ID     string          `json:"id"`
	Tool   string          `json:"tool"`
	Effect approval.Effect `json:"effect"`
	// Text is a policy document with the one rule (see docs/policies.md),
	// what the layer adds once the proposal is accepted.
	Text string `json:"text"`
	// Scope says what the rule covers ("bash commands git status *").
	Scope string `json:"scope"`
}

// Propose returns the rule that remembers a decision on one call: the
// tool with the program and leading words of each simple command of its
// shell script (a bash "command" argument, as package policy/shellcmd
// finds them: "go test ./server" gives the pattern "go test *"), or the
// tool with the directory of its path ("path" or "file_path" argument),
// or else the tool with exactly these arguments. effect is allow or deny;
// id names the rule (layerstore.LayerRule's ID rules); source, when not empty,
// is named in the rule's reason. Errors: [ErrNoScope] (wrapped with why),
// or a bad effect or ID.
func Propose(id, toolName string, args json.RawMessage, effect approval.Effect, source string) (Proposal, error) {
	return ProposeIn(id, toolName, args, effect, source, "")
}

// ProposeIn is [Propose] for a call of a run whose workspace root is
// workspace (an absolute path; "" when not known). A path rule covers the
// path's directory only inside the workspace and below its root: a file at
// the workspace's root, an absolute path outside it (or any absolute path
// when the workspace is not known), and a path under a directory or of a
// file whose name starts with a '.' (.git, .claude, .codex, .bashrc) are
// remembered as exactly that path. An allowed shell command is remembered
// with a prefix only when plain words follow its program and the program
// does not run code or write files named by its arguments
// ([ExactPrograms]); otherwise the call is remembered with exactly its
// arguments. A denied one keeps its program's prefix: wide is a deny's
// safe side.
func ProposeIn(id, toolName string, args json.RawMessage, effect approval.Effect, source, workspace string) (Proposal, error) {
	if effect != approval.Allow && effect != approval.Deny {
		return Proposal{}, fmt.Errorf("layer: effect %q: want allow or deny", effect)
	}
	if !validID(id) {
		return Proposal{}, fmt.Errorf("layer: rule ID %q: want letters, digits, '-', '_' or '.'", id)
	}
	if toolName == "" || len(toolName) > 256 || !utf8.ValidString(toolName) || strings.ContainsFunc(toolName, func(r rune) bool { return r == '*' || unicode.IsControl(r) }) {
		return Proposal{}, fmt.Errorf("%w: the tool name %q cannot be named by a rule (empty, too long, a '*' or a control character)", ErrNoScope, toolName)
	}
	var fields map[string]json.RawMessage
	d := json.NewDecoder(bytes.NewReader(args))
	d.UseNumber()
	if err := d.Decode(&fields); err != nil || fields == nil {
		return Proposal{}, fmt.Errorf("%w: the arguments are not a JSON object", ErrNoScope)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "rules:\n  - id: %s\n    tool: %s\n", id, quote(toolName))
	var scope string
	script, isScript := stringField(fields, "command")
	p, isPath := stringField(fields, "path")
	if !isPath {
		p, isPath = stringField(fields, "file_path")
	}
	var pats []string
	if isScript && strings.EqualFold(toolName, "bash") {
		var err error
		if pats, err = patterns(script, effect == approval.Deny); err != nil {
			return Proposal{}, err
		}
	}
	switch {
	case isScript && strings.EqualFold(toolName, "bash") && pats != nil:
		qs := make([]string, len(pats))
		for i, pt := range pats {
			qs[i] = quote(pt)
		}
		fmt.Fprintf(&b, "    command: {pattern: [%s]}\n", strings.Join(qs, ", "))
		scope = fmt.Sprintf("%s commands %s", toolName, strings.Join(pats, ", "))
	case isPath:
		field := "path"
		if _, ok := fields["path"]; !ok {
			field = "file_path"
		}
		prefix := pathScope(p, workspace)
		fmt.Fprintf(&b, "    args: {%s: {pathPrefix: %s}}\n", field, quote(prefix))
		scope = fmt.Sprintf("%s on paths under %s", toolName, prefix)
	default:
		if len(fields) > MaxArgs {
			return Proposal{}, fmt.Errorf("%w: more than %d arguments", ErrNoScope, MaxArgs)
		}
		names := make([]string, 0, len(fields))
		for k := range fields {
			if k == "" || strings.Contains(k, ".") {
				return Proposal{}, fmt.Errorf("%w: the argument name %q cannot be named by a rule (empty, or a '.')", ErrNoScope, k)
			}
			names = append(names, k)
		}
		slices.Sort(names)
		if len(names) == 0 {
			scope = "every call of " + toolName + " (it had no arguments)"
			break
		}
		b.WriteString("    args:\n")
		for _, k := range names {
			v, err := json.Marshal(fields[k]) // compact
			if err != nil {
				return Proposal{}, fmt.Errorf("%w: argument %q: %v", ErrNoScope, k, err)
			}
			fmt.Fprintf(&b, "      %s: {equals: %s}\n", quote(k), v)
		}
		scope = fmt.Sprintf("%s with exactly these arguments", toolName)
	}
	verb := "always allow"
	if effect == approval.Deny {
		verb = "always deny"
	}
	reason := "remembered: " + verb + " " + scope
	if source != "" {
		reason += " (from " + source + ")"
	}
	fmt.Fprintf(&b, "    decision: %s\n    reason: %s\n", effect, quote(reason))
	if b.Len() > MaxRuleText {
		return Proposal{}, fmt.Errorf("%w: the rule would be %d bytes, more than %d", ErrNoScope, b.Len(), MaxRuleText)
	}
	return Proposal{ID: id, Tool: toolName, Effect: effect, Text: b.String(), Scope: scope}, nil
}

// NewID returns a new rule ID: the effect, the tool's name (its ASCII
// letters, digits, '-' and '_', at most 24) and 8 random hex digits
// ("allow-bash-3f2a9c01").
func NewID(effect approval.Effect, toolName string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := make([]rune, 0, 24)
	for _, c := range toolName {
		if len(name) == 24 {
			break
		}
		if c == '-' || c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9') {
			name = append(name, c)
		}
	}
	return fmt.Sprintf("%s-%s-%s", effect, string(name), hex.EncodeToString(b))
}

var idPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)

func validID(id string) bool { return idPattern.MatchString(id) }

// quote is s as a YAML double-quoted scalar (a JSON string is one).
func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func stringField(fields map[string]json.RawMessage, name string) (string, bool) {
	raw, ok := fields[name]
	if !ok {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// plainWord matches a leading word a pattern keeps: a subcommand such as
// "test", "run" or "add", not a flag, a path, an assignment or a glob.
var plainWord = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_:+-]*$`)

// progName matches a program a pattern may name.
var progName = regexp.MustCompile(`^[A-Za-z0-9._+-]+$`)

// ExactPrograms are the programs a remembered shell command never names
// with a prefix: they run code, start other commands, change the
// environment or write files named by their arguments, so that "sed *"
// would cover "sed -i" and "node *" "node -e". A command of one of them is
// remembered with exactly the call's arguments. Every program whose name
// starts with "python" is one too.
var ExactPrograms = []string{
	"node", "nodejs", "deno", "bun", "npx", "pnpx", "perl", "ruby", "php", "lua", "luajit", "Rscript", "julia", "osascript",
	"sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "csh", "tcsh", "busybox",
	"awk", "gawk", "mawk", "nawk", "sed", "gsed", "find", "xargs", "parallel", "env", "curl", "wget",
	"tee", "dd", "cp", "mv", "rm", "install", "ln", "chmod", "chown", "touch", "truncate", "mkdir", "rsync", "scp", "ssh", "tar", "unzip",
	"vi", "vim", "nvim", "ed", "ex", "emacs", "nano",
	"sudo", "doas", "su", "runuser", "nohup", "nice", "timeout", "time", "watch", "stdbuf", "setsid", "flock", "chroot", "unshare",
	"export", "declare", "typeset", "local", "readonly", "set", "unset", "shopt", "source", ".", "eval", "exec", "builtin", "command", "alias", "trap",
}

// exactGit are git subcommands that run commands or change what later git
// commands run: never remembered with a prefix.
var exactGit = []string{"config", "submodule", "bisect", "filter-branch", "rebase", "difftool", "mergetool", "daemon", "alias", "hook"}

// exact reports whether the command c is remembered only as it is.
func exact(c shellcmd.Command) bool {
	if strings.HasPrefix(c.Program, "python") || slices.Contains(ExactPrograms, c.Program) || len(c.Assigns) > 0 || c.Name != c.Program {
		return true
	}
	if c.Program == "git" && (len(c.Args) == 0 || strings.HasPrefix(c.Args[0].Value, "-") || slices.Contains(exactGit, c.Args[0].Value)) {
		return true
	}
	return false
}

// patterns returns the command patterns of a script: for each simple
// command, its program and up to MaxLeadingWords plain words, then " *".
// For an allow, it returns nil (no error) when some command must be
// remembered exactly ([ExactPrograms], no plain word after the program,
// assignments before it, a program named by a path, a script that sets
// variables): the caller then remembers the exact arguments. A deny (wide
// is its safe side) keeps the prefix of every command.
func patterns(script string, deny bool) ([]string, error) {
	an := shellcmd.Analyze(script)
	for _, c := range an.Commands {
		if c.Opaque != "" {
			return nil, fmt.Errorf("%w: part of the command is known only when it runs (%s); write the rule by hand", ErrNoScope, c.Opaque)
		}
	}
	var out []string
	for _, c := range an.Commands {
		if c.Opaque != "" {
			return nil, fmt.Errorf("%w: part of the command is known only when it runs (%s); write the rule by hand", ErrNoScope, c.Opaque)
		}
		if c.Program == "" {
			continue // a redirection alone
		}
		if !progName.MatchString(c.Program) {
			return nil, fmt.Errorf("%w: the program %q is not a plain name", ErrNoScope, c.Program)
		}
		if !deny && exact(c) {
			return nil, nil
		}
		words := []string{c.Program}
		for _, w := range c.Args {
			if len(words) > MaxLeadingWords || w.Dynamic || w.Glob || !plainWord.MatchString(w.Value) {
				break
			}
			words = append(words, w.Value)
		}
		p := strings.Join(words, " ") + " *"
		switch {
		case deny:
		case len(c.Args) == 0:
			p = c.Program // no arguments: exactly this command
		case len(words) == 1:
			return nil, nil // no plain word follows the program: exactly these arguments
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: the command runs no program", ErrNoScope)
	}
	if an.SetsVariables && !deny {
		return nil, nil
	}
	return out, nil
}

// pathScope is the path prefix of a path rule: the path's directory when
// it lies below the workspace's root (a relative path, or an absolute one
// under workspace); otherwise, or when a segment of the path starts with
// '.' (.git, .claude, .codex, a dotfile), the path itself.
func pathScope(p, workspace string) string {
	c := path.Clean(p)
	rel := c
	if path.IsAbs(c) {
		ws := path.Clean(workspace)
		if workspace == "" || !path.IsAbs(ws) || ws == "/" || !strings.HasPrefix(c, ws+"/") {
			return c // outside the workspace, or it is not known
		}
		rel = strings.TrimPrefix(c, ws+"/")
	}
	if rel == ".." || strings.HasPrefix(rel, "../") || hasDotSegment(rel) {
		return c
	}
	dir := path.Dir(c)
	if path.Dir(rel) == "." {
		return c // a file at the workspace's root
	}
	return dir
}

// hasDotSegment reports whether a segment of the slash-separated path p
// starts with '.' (".git", ".bashrc").
func hasDotSegment(p string) bool {
	for _, seg := range strings.Split(p, "/") {
		if strings.HasPrefix(seg, ".") && seg != "." && seg != ".." {
			return true
		}
	}
	return false
}
