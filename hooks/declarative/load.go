package declarative

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"

	"github.com/tollgate-dev/tollgate/configfile"
	"github.com/tollgate-dev/tollgate/internal/bounded"
	"github.com/tollgate-dev/tollgate/internal/configread"
	"github.com/tollgate-dev/tollgate/internal/glob"
)

// maxDocumentSize is the largest hooks document [FromYAML] reads, in bytes; a
// larger one is an ERROR and gives an empty registry.
const maxDocumentSize = 4 << 20

// maxDepth is the deepest nesting of lists and mappings in a hooks document
// (the top level counts 1); a deeper document is an ERROR and gives an empty
// registry, checked before the document is parsed.
const maxDepth = 32

// Diagnostic is one problem found while loading hooks: a skipped entry
// (a warning, Skipped), a warning about an entry that was kept, or a
// document that could not be read (an error, nothing loaded). It is the
// [configfile.Problem] every configuration file reports (File, Line and Col
// from 1, 0 when unknown, as for hooks built in code; Severity
// configfile.SeverityWarning or SeverityError; Message), with what the
// loader did about it. Its Error text is "FILE:LINE:COL: warning: MESSAGE" (or
// "error:"), leaving out what is unknown.
type Diagnostic struct {
	configfile.Problem
	// Skipped is true when an entry was left out because of this problem.
	Skipped bool
	// Unsafe is true when text a model or an error controls would reach code
	// unquoted: ${tool}, ${args}, ${callId} or ${error} in a shell command,
	// as the program of an argv (argv[0]), or in an argv element after an
	// interpreter (sh -c, python -c, ...). [FromYAML] skips such an entry
	// (Skipped is true too) unless [Options].AllowUnsafeCommands keeps it as
	// seed 000 would (then it is a warning); `tollgate hooks check` and
	// `tollgate run --hooks` refuse the file either way.
	Unsafe bool
}

// diag returns a diagnostic at line and col of file; sev is slog.LevelWarn
// or slog.LevelError.
func diag(file string, line, col int, sev slog.Level, skipped bool, msg string) Diagnostic {
	s := configfile.SeverityWarning
	if sev >= slog.LevelError {
		s = configfile.SeverityError
	}
	return Diagnostic{Problem: configfile.Problem{File: file, Line: line, Col: col, Severity: s, Message: msg}, Skipped: skipped}
}

// level is the slog level a diagnostic is logged at.
func (d Diagnostic) level() slog.Level {
	if d.Severity == configfile.SeverityError {
		return slog.LevelError
	}
	return slog.LevelWarn
}

// FromYAML reads hooks from a YAML document with a top-level hooks list (seed
// 000 fromYaml; the format is in the package documentation). It never fails:
// an entry with a missing, unknown or ill-typed event, matcher, action type or
// field is skipped with a WARN log, and so is a command action that would let
// the model choose code ([Diagnostic].Unsafe) unless opts.AllowUnsafeCommands
// is set; a document that cannot be read or parsed, is over 4 MiB or nested
// deeper than 32 lists and mappings, or whose shape is not a mapping with a
// hooks list, logs an ERROR and gives an empty registry. Every such problem is also kept, with its FILE:LINE:COL, in
// [Registry.Diagnostics]; check [Registry.Hooks] if a missing hook would
// matter. opts.File names the document (default "hooks").
func FromYAML(r io.Reader, opts *Options) *Registry {
	file := "hooks"
	if opts != nil && opts.File != "" {
		file = opts.File
	}
	var cfgs []Config
	var diags []Diagnostic
	// Aliases are refused entry by entry below, without being expanded.
	lim := bounded.Limits{MaxBytes: maxDocumentSize, MaxDepth: maxDepth, AllowAliases: true}
	src, err := io.ReadAll(io.LimitReader(r, maxDocumentSize+1))
	var be *bounded.Error
	switch {
	case err != nil:
		diags = []Diagnostic{diag(file, 0, 0, slog.LevelError, false, "reading the hooks document: "+err.Error()+"; no hooks loaded")}
	case len(src) > maxDocumentSize:
		diags = []Diagnostic{diag(file, 0, 0, slog.LevelError, false, fmt.Sprintf("the hooks document is larger than %d bytes; no hooks loaded", maxDocumentSize))}
	case errors.As(bounded.CheckYAML(file, src, lim), &be):
		diags = []Diagnostic{diag(file, be.Line, be.Col, slog.LevelError, false, "the hooks document is "+be.Message+"; no hooks loaded")}
	default:
		cfgs, diags = parseHooks(src, file, opts != nil && opts.AllowUnsafeCommands)
	}
	reg := newRegistry(cfgs, opts)
	reg.report(diags)
	return reg
}

// Load reads the hooks file at path with [FromYAML], naming it by path in
// diagnostics and hook sources. The error is only for a file that cannot be
// opened (it wraps the os error, e.g. fs.ErrNotExist); problems inside the file
// never fail.
func Load(path string, opts *Options) (*Registry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("hooks: %w", err)
	}
	defer f.Close()
	var o Options
	if opts != nil {
		o = *opts
	}
	o.File = path
	return FromYAML(f, &o), nil
}

// loader walks the AST of one document.
type loader struct {
	file        string
	diags       []Diagnostic
	allowUnsafe bool // Options.AllowUnsafeCommands
}

func (l *loader) add(n ast.Node, sev slog.Level, skipped bool, format string, args ...any) {
	line, col := position(n)
	l.diags = append(l.diags, diag(l.file, line, col, sev, skipped, fmt.Sprintf(format, args...)))
}

func (l *loader) fatal(n ast.Node, format string, args ...any) {
	l.add(n, slog.LevelError, false, format+"; no hooks loaded", args...)
}

// parseHooks turns a document into valid configs and diagnostics; on an
// ERROR it returns no configs.
func parseHooks(src []byte, file string, allowUnsafe bool) (cfgs []Config, diags []Diagnostic) {
	l := &loader{file: file, allowUnsafe: allowUnsafe}
	defer func() {
		// The parser is third-party code; a document must never crash the host.
		if p := recover(); p != nil {
			cfgs = nil
			diags = append(l.diags, diag(file, 0, 0, slog.LevelError, false, fmt.Sprintf("the YAML parser failed on this document (%v); no hooks loaded", p)))
		}
	}()
	f, err := configread.ParseYAML(file, src, parser.ParseComments, parser.AllowDuplicateMapKey())
	if err != nil {
		d := diag(file, 0, 0, slog.LevelError, false, "the document does not parse as YAML: "+err.Error()+"; no hooks loaded")
		if p, ok := errors.AsType[*configfile.Problem](err); ok {
			d.Line, d.Col = p.Line, p.Col
			d.Message = "the document does not parse as YAML: " + p.Message + "; no hooks loaded"
		}
		return nil, []Diagnostic{d}
	}
	var body ast.Node
	for _, doc := range f.Docs {
		if doc == nil || doc.Body == nil || isNull(doc.Body) || isComment(doc.Body) {
			continue
		}
		if body != nil {
			l.add(doc.Body, slog.LevelWarn, false, "only the first YAML document is read; this one is ignored")
			continue
		}
		body = doc.Body
	}
	if body == nil {
		l.add(nil, slog.LevelWarn, false, "the document is empty: no hooks")
		return nil, l.diags
	}
	top, ok := unwrap(body).(*ast.MappingNode)
	if !ok {
		l.fatal(body, "the document must be a mapping with a top-level hooks list, not %s", kind(body))
		return nil, l.diags
	}
	var list ast.Node
	seen := false
	for _, mv := range top.Values {
		key := keyString(mv)
		if key != "hooks" {
			l.add(mv, slog.LevelWarn, false, "unknown top-level key %q is ignored (want hooks)", key)
			continue
		}
		if seen {
			l.fatal(mv, "the key hooks appears twice")
			return nil, l.diags
		}
		seen = true
		list = mv.Value
	}
	if !seen {
		l.add(body, slog.LevelWarn, false, "no top-level hooks list: no hooks")
		return nil, l.diags
	}
	if list == nil || isNull(list) {
		l.add(list, slog.LevelWarn, false, "the hooks list is empty")
		return nil, l.diags
	}
	if _, isAlias := list.(*ast.AliasNode); isAlias {
		l.fatal(list, "hooks is a YAML alias; aliases are not supported")
		return nil, l.diags
	}
	seq, ok := unwrap(list).(*ast.SequenceNode)
	if !ok {
		l.fatal(list, "hooks must be a list, not %s", kind(list))
		return nil, l.diags
	}
	for i, item := range seq.Values {
		if c, ok := l.entry(i+1, item); ok {
			cfgs = append(cfgs, c)
		}
	}
	return cfgs, l.diags
}

// entry reads hook n (from 1); it reports and returns false when the entry is
// skipped.
func (l *loader) entry(n int, item ast.Node) (Config, bool) {
	skip := func(at ast.Node, format string, args ...any) (Config, bool) {
		l.add(at, slog.LevelWarn, true, fmt.Sprintf("skipped hook %d: ", n)+format, args...)
		return Config{}, false
	}
	if _, isAlias := item.(*ast.AliasNode); isAlias {
		return skip(item, "YAML aliases are not supported")
	}
	m, ok := unwrap(item).(*ast.MappingNode)
	if !ok {
		return skip(item, "a hook must be a mapping with event, matcher and action, not %s", kind(item))
	}
	line, col := position(item)
	c := Config{Source: fmt.Sprintf("%s:%d:%d", l.file, line, col)}
	fields, bad, at := l.fields(m, "event", "matcher", "action")
	if bad != "" {
		return skip(at, "%s", bad)
	}
	ev, ok := fields["event"]
	if !ok || isNull(ev.Value) {
		return skip(item, "missing event")
	}
	name, ok := scalarString(ev.Value)
	if !ok {
		return skip(ev.Value, "event must be a string, not %s", kind(ev.Value))
	}
	e, err := parseEvent(name)
	if err != nil {
		return skip(ev.Value, "%v", err)
	}
	c.Event = e
	var warnings []func()
	if mv, ok := fields["matcher"]; ok {
		if isNull(mv.Value) {
			warnings = append(warnings, func() {
				l.add(mv, slog.LevelWarn, false, "hook %d: matcher is null; the hook runs for every tool", n)
			})
		} else {
			s, ok := scalarString(mv.Value)
			if !ok {
				return skip(mv.Value, "matcher must be a string glob, not %s", kind(mv.Value))
			}
			if s == "" {
				warnings = append(warnings, func() {
					l.add(mv.Value, slog.LevelWarn, false, "hook %d: matcher is empty; the hook runs for every tool (leave matcher out to say so)", n)
				})
			}
			if !e.usesMatcher() {
				warnings = append(warnings, func() {
					l.add(mv.Value, slog.LevelWarn, false, "hook %d: matcher is ignored for %s: the hook runs for every tool", n, e.camelName())
				})
			} else if msg := glob.ToolNameProblem(s); msg != "" && s != "" {
				warnings = append(warnings, func() {
					l.add(mv.Value, slog.LevelWarn, false, "hook %d: %s; the hook never runs", n, msg)
				})
			}
			c.Matcher = Matcher(s)
		}
	}
	av, ok := fields["action"]
	if !ok || isNull(av.Value) {
		return skip(item, "missing action")
	}
	if _, isAlias := av.Value.(*ast.AliasNode); isAlias {
		return skip(av.Value, "YAML aliases are not supported")
	}
	am, ok := unwrap(av.Value).(*ast.MappingNode)
	if !ok {
		return skip(av.Value, "action must be a mapping with type and message or command, not %s", kind(av.Value))
	}
	afields, bad, at := l.fields(am, "type", "message", "command", "argv", "timeout")
	if bad != "" {
		return skip(at, "action: %s", bad)
	}
	tv, ok := afields["type"]
	if !ok || isNull(tv.Value) {
		return skip(av.Value, "action: missing type (log or command)")
	}
	ts, ok := scalarString(tv.Value)
	if !ok {
		return skip(tv.Value, "action: type must be a string, not %s", kind(tv.Value))
	}
	at2, err := parseActionType(ts)
	if err != nil {
		return skip(tv.Value, "action: %v", err)
	}
	a := Action{Type: at2}
	for _, k := range []string{"message", "command"} {
		fv, ok := afields[k]
		if !ok {
			continue
		}
		s, ok := scalarString(fv.Value)
		if !ok {
			return skip(fv.Value, "action: %s must be a string, not %s", k, kind(fv.Value))
		}
		if k == "message" {
			a.Message = s
		} else {
			a.Command = s
			if s == "" {
				return skip(fv.Value, "action: command is empty")
			}
		}
		if w := cutByComment(fv); w != "" {
			warnings = append(warnings, func() { l.add(fv.Value, slog.LevelWarn, false, "hook %d: %s %s", n, k, w) })
		}
	}
	if fv, ok := afields["argv"]; ok {
		if _, isAlias := fv.Value.(*ast.AliasNode); isAlias {
			return skip(fv.Value, "YAML aliases are not supported")
		}
		seq, ok := unwrap(fv.Value).(*ast.SequenceNode)
		if !ok {
			return skip(fv.Value, "action: argv must be a list [program, arg, ...], not %s", kind(fv.Value))
		}
		a.Argv = []string{}
		for j, el := range seq.Values {
			s, ok := scalarText(el)
			if !ok {
				return skip(el, "action: argv[%d] must be a string, not %s", j, kind(el))
			}
			a.Argv = append(a.Argv, s)
			if w := cutByComment(el); w != "" {
				warnings = append(warnings, func() { l.add(el, slog.LevelWarn, false, "hook %d: argv[%d] %s", n, j, w) })
			}
		}
		if len(a.Argv) > 0 && strings.Contains(a.Argv[0], "${") && firstUnsafeKey(a.Argv[0]) == "" {
			warnings = append(warnings, func() {
				l.add(seq.Values[0], slog.LevelWarn, false, "hook %d: argv[0] uses a template: the program to run would come from the context", n)
			})
		}
	}
	if fv, ok := afields["timeout"]; ok {
		s, ok := scalarString(fv.Value)
		if !ok {
			return skip(fv.Value, "action: timeout must be a Go duration with a unit such as \"5s\" or \"500ms\", not %s %q", kind(fv.Value), fv.Value.GetToken().Value)
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			return skip(fv.Value, "action: timeout %q is not a Go duration such as \"5s\" or \"500ms\"", s)
		}
		if d < minTimeout || d > maxTimeout {
			return skip(fv.Value, "action: timeout %s is out of bounds (%s to %s)", d, minTimeout, maxTimeout)
		}
		if a.Type != ActionCommand {
			return skip(fv.Value, "action: timeout applies to command actions only")
		}
		a.Timeout = d
	}
	if err := a.validate(); err != nil {
		return skip(av.Value, "action: %s", strings.TrimPrefix(err.Error(), errInvalidAction.Error()+": "))
	}
	// Model- or error-controlled text that would become code: skipped unless
	// the caller keeps seed 000's literal behaviour.
	var unsafe []func(sev slog.Level, skipped bool)
	flag := func(at ast.Node, format string, args ...any) {
		unsafe = append(unsafe, func(sev slog.Level, skipped bool) {
			prefix := fmt.Sprintf("hook %d: ", n)
			if skipped {
				prefix = fmt.Sprintf("skipped hook %d: ", n)
			}
			l.add(at, sev, skipped, prefix+format, args...)
			l.diags[len(l.diags)-1].Unsafe = true
		})
	}
	if a.Type == ActionCommand && a.Command != "" {
		for _, name := range templateNames(a.Command) {
			if unsafeKey(name) {
				flag(afields["command"].Value, "command uses ${%s}, whose value comes from the model or an error and is not quoted: the shell may run it; use $TOLLGATE_%s, stdin or argv instead", name, mustEnvSuffix(name))
			}
		}
	}
	if a.Type == ActionCommand && len(a.Argv) > 0 {
		argvNode := afields["argv"].Value
		if name := firstUnsafeKey(a.Argv[0]); name != "" {
			flag(argvNode, "argv[0] uses ${%s}: the model or an error would choose the program to run; name the program and pass the value as an argument, $TOLLGATE_%s or stdin", name, mustEnvSuffix(name))
		} else if i, name := unsafeArgv(a.Argv); i >= 0 {
			interp := a.Argv[interpreterAt(a.Argv)]
			if path.Base(interp) == "env" {
				interp += " -S"
			}
			flag(argvNode, "argv[%d] uses ${%s} as an argument of %s, which reads it as code: the model could write code there; pass it as $TOLLGATE_%s or stdin instead", i, name, interp, mustEnvSuffix(name))
		}
	}
	if len(unsafe) > 0 && !l.allowUnsafe {
		for _, u := range unsafe {
			u(slog.LevelWarn, true)
		}
		return Config{}, false
	}
	for _, u := range unsafe {
		warnings = append(warnings, func() { u(slog.LevelWarn, false) })
	}
	c.Action = a
	for _, w := range warnings {
		w()
	}
	return c, true
}

// interpreters read an argument as code (sh -c, python -c, perl -e, ...):
// in argv after one of them, model-controlled text is as dangerous as in a
// shell command. A name matches with a version after it (python3.11,
// perl5.36.0, lua5.4, tclsh8.6), as Debian and others install them.
var interpreters = map[string]bool{
	"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "mksh": true, "ash": true,
	"fish": true, "csh": true, "tcsh": true, "busybox": true, "ssh": true, "eval": true,
	"python": true, "python2": true, "python3": true, "perl": true, "ruby": true, "node": true,
	"nodejs": true, "php": true, "lua": true, "awk": true, "gawk": true, "mawk": true, "osascript": true,
	"pypy": true, "pypy3": true, "luajit": true, "tclsh": true, "wish": true, "expect": true,
	"deno": true, "bun": true, "pwsh": true, "Rscript": true, "julia": true, "sed": true,
	"nawk": true, "busybox.static": true, "rbash": true, "yash": true, "posh": true,
}

// isInterpreter reports whether the program a names an interpreter, by its
// base name with any version after it left out.
func isInterpreter(a string) bool {
	b := path.Base(a)
	return interpreters[b] || interpreters[strings.TrimRight(b, "0123456789.-_")]
}

// envSplits reports whether the options of env (the elements after it)
// include -S or --split-string: env then splits a string into words (with
// quotes, escapes and ${NAME}), so text in it can add words and, first,
// choose the program.
func envSplits(opts []string) bool {
	for _, o := range opts {
		switch {
		case o == "--":
			return false
		case strings.HasPrefix(o, "--"):
			if name, _, _ := strings.Cut(o, "="); len(name) > 3 && strings.HasPrefix("--split-string", name) {
				return true
			}
		case strings.HasPrefix(o, "-") && len(o) > 1:
			for _, c := range o[1:] {
				if c == 'S' {
					return true
				}
				if strings.ContainsRune("uCa", c) {
					break // the rest is the option's value
				}
			}
		default:
			return false // NAME=VALUE or the command
		}
	}
	return false
}

// interpreterAt returns the index of the first argv element that names an
// interpreter, or env with -S (wrappers such as env, sudo or timeout may
// come before it), or -1.
func interpreterAt(argv []string) int {
	for i, a := range argv {
		if isInterpreter(a) || path.Base(a) == "env" && envSplits(argv[i+1:]) {
			return i
		}
	}
	return -1
}

// unsafeArgv returns the index and key of the first argv element, after an
// interpreter, that uses a model-controlled key; -1 when there is none.
func unsafeArgv(argv []string) (int, string) {
	start := interpreterAt(argv)
	if start < 0 {
		return -1, ""
	}
	for i := start + 1; i < len(argv); i++ {
		for _, name := range templateNames(argv[i]) {
			if unsafeKey(name) {
				return i, name
			}
		}
	}
	return -1, ""
}

// firstUnsafeKey returns the first model-controlled key s uses, or "".
func firstUnsafeKey(s string) string {
	for _, name := range templateNames(s) {
		if unsafeKey(name) {
			return name
		}
	}
	return ""
}

// unsafeKey reports whether a context key's value is written by the model or
// by an error: tool, args, callId, error.
func unsafeKey(k string) bool { return k == "tool" || k == "args" || k == "error" || k == "callId" }

func mustEnvSuffix(key string) string {
	n, _ := envName(key)
	return strings.TrimPrefix(n, "TOLLGATE_")
}

// fields indexes a mapping by key; it reports an unknown, duplicate or
// non-string key as bad, with its node.
func (l *loader) fields(m *ast.MappingNode, known ...string) (map[string]*ast.MappingValueNode, string, ast.Node) {
	out := make(map[string]*ast.MappingValueNode, len(m.Values))
	for _, mv := range m.Values {
		k := keyString(mv)
		if k == "<<" {
			return nil, "YAML merge keys (<<) are not supported", mv
		}
		ok := false
		for _, kn := range known {
			ok = ok || k == kn
		}
		if !ok {
			if s := configread.Suggest(k, known); s != "" {
				return nil, fmt.Sprintf("unknown field %q; did you mean %q?", k, s), mv
			}
			return nil, fmt.Sprintf("unknown field %q (want %s)", k, strings.Join(known, ", ")), mv
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Sprintf("field %q appears twice", k), mv
		}
		out[k] = mv
	}
	return out, "", nil
}

// cutByComment returns a warning when a plain (unquoted) scalar is followed by
// a comment on its line: YAML ends the value where " #" begins, so
// `command: echo a #b` runs `echo a`.
func cutByComment(n ast.Node) string {
	var val ast.Node = n
	var cg *ast.CommentGroupNode
	if mv, ok := n.(*ast.MappingValueNode); ok {
		val = mv.Value
		cg = mv.GetComment()
	}
	sn, ok := val.(*ast.StringNode)
	if !ok || sn.Token == nil || sn.Token.Type != token.StringType || sn.Token.Position == nil {
		return ""
	}
	if c := sn.GetComment(); c != nil {
		cg = c
	}
	if cg == nil || cg.GetToken() == nil || cg.GetToken().Position == nil || cg.GetToken().Position.Line != sn.Token.Position.Line {
		return ""
	}
	return fmt.Sprintf("is %q: the rest of the line, %q, is a YAML comment and was dropped; quote the whole value to keep it",
		sn.Value, strings.TrimSpace(cg.String()))
}

// unwrap removes anchors and tags around a node.
func unwrap(n ast.Node) ast.Node { return configread.Unwrap(n) }

func isComment(n ast.Node) bool { return configread.IsComment(n) }

func isNull(n ast.Node) bool { return configread.IsNull(n) }

// scalarString returns the text of a string scalar (plain, quoted or block).
func scalarString(n ast.Node) (string, bool) { return configread.Text(n) }

// scalarText is scalarString that also takes numbers and booleans as written
// (argv: [sleep, 5]).
func scalarText(n ast.Node) (string, bool) { return configread.ScalarText(n) }

func keyString(mv *ast.MappingValueNode) string { return configread.Key(mv) }

// kind names a node's type for messages.
func kind(n ast.Node) string { return configread.Kind(n, false) }

// position returns where a node starts: for a mapping, its first key.
func position(n ast.Node) (int, int) {
	p := configread.NodePos(n)
	return p.Line, p.Col
}
