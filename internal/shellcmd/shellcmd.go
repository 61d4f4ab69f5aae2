// Package shellcmd finds every simple command a bash script would run, so
// that a policy can judge the programs rather than the text: "rm x",
// "/bin/rm x", "\rm x", "\"rm\" x", "(rm x)", "$(rm x)", "sh -c 'rm x'",
// "xargs rm" and "find . -delete" all contain a simple command whose
// program is rm.
//
// [Analyze] parses a script with mvdan.cc/sh/v3 (bash syntax) and walks it:
// pipelines, lists, subshells, blocks, functions, command and process
// substitutions, here-documents, conditions and loops. Each simple command
// becomes a [Command] with its program resolved (quotes and backslashes
// removed, the base name of a path), its argument words and its
// redirections. Commands that run other commands are unwrapped, and the
// command they run is reported too, after the wrapper itself:
//
//   - sh, bash, dash, zsh, ksh, mksh, ash and busybox sh with -c: the script
//     string is analysed; reading its script from stdin (no script file,
//     -s, /dev/stdin) or a descriptor (/dev/fd/N, /proc/self/fd/N), and
//     likewise source and ".": a literal here-document or here-string on
//     that descriptor is analysed; anything else there (a pipe, a file, a
//     process substitution) is opaque.
//   - eval (its literal arguments joined with spaces), trap's command,
//     alias values, watch (its arguments joined), su -c (and runuser USER
//     -c; -c in a cluster, attached or as --session-command too), sg
//     GROUP [-c] COMMAND, flock -c and GNU
//     parallel's command: analysed as scripts. env -S splits its string
//     into words that env reads again.
//   - Code in strings outside eval is opaque when it is not a plain name:
//     the variable names given to printf -v, read, mapfile, getopts,
//     wait -p, unset, test -v, declare and its relatives and namerefs
//     (bash evaluates an array index in them, command substitutions
//     included), ${!name}, ${name@P}, and BASH_ENV, ENV, PS0 to PS4 and
//     PROMPT_COMMAND set to what may run code. hash -p, enable -f and any
//     assignment to BASH_CMDS or BASH_ALIASES are opaque: they change which
//     program a command name runs. So are compgen and complete with -C or
//     with a -W word list that holds a command substitution or is only
//     known at run time, and fc but fc -l (it runs commands of the history).
//   - env, sudo, doas, nohup, timeout, nice, ionice, stdbuf, setsid, time,
//     command, builtin, exec, chroot, unshare, taskset, unbuffer, runuser,
//     setarch (and its links linux32, linux64, i386, x86_64, uname26),
//     busybox and xargs: their options are skipped and the command they run
//     is reported (xargs appends words it reads at run time: a dynamic
//     argument).
//   - prlimit, nsenter, setpriv, strace, fakeroot, systemd-run, toybox and
//     a dynamic loader run as a program (ld.so) run their command, and
//     script -c its script; nsenter and fakeroot without a command, script
//     without -c and systemd-run -S run a shell on their input: opaque.
//   - find -exec, -execdir, -ok and -okdir run a command per file, and
//     find -delete is reported as the command "rm" (with a dynamic
//     argument), so that a rule on rm covers it.
//
// What the analysis cannot see through is an opaque [Command] (Opaque is
// the reason): a program that is only known at run time ($X, $(...), a glob
// or brace pattern), text that does not parse, eval or sh -c of a string
// that is not literal, a shell reading its script from a pipe, more than
// [MaxDepth] nested scripts or [MaxCommands] commands, a script longer than
// [MaxScriptSize], and arithmetic evaluation in a script that also holds a
// string with a command substitution (bash runs those inside array indices).
// Code in other languages (python -c, perl -e) is not analysed: it is the
// program python with its arguments.
//
// Words keep what is known before the script runs: a word built from a
// parameter, a substitution, a tilde, a brace or an unquoted glob is
// Dynamic, and [Pattern.Match] and [Command.HasFlags] answer [Maybe] when
// the outcome depends on it. Pathname expansion is not performed: "rm *"
// has the argument "*".
//
// The analysis never fails and never runs anything; it is safe for
// concurrent use.
package shellcmd

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// Limits of [Analyze]. Beyond them the rest of the script is reported as
// one opaque command.
const (
	// MaxScriptSize is the largest script analysed, in bytes.
	MaxScriptSize = 64 << 10
	// MaxDepth is how many scripts may nest (sh -c inside eval inside ...).
	MaxDepth = 8
	// MaxCommands is the most simple commands reported for one script.
	MaxCommands = 1024
)

// Word is one argument word as far as it is known before the script runs.
type Word struct {
	// Value is the word after quote removal; parts known only at run time
	// appear as written ("$HOME", "$(date)", "~", "{a,b}").
	Value string `json:"value"`
	// Dynamic is true when part of the word is known only at run time (a
	// parameter, a command or arithmetic substitution, a tilde, a brace
	// expansion): an unquoted dynamic part may even become several words.
	Dynamic bool `json:"dynamic,omitempty"`
	// Literal is the part of Value before the first dynamic part (all of it
	// when the word is not Dynamic).
	Literal string `json:"-"`
	// Glob is true when the word has an unquoted *, ? or [ (pathname
	// expansion, not performed here).
	Glob bool `json:"glob,omitempty"`
	// match is Value with each dynamic part replaced by one 0 byte, which
	// only a pattern's * can match.
	match string
}

// Redirect is one redirection of a command.
type Redirect struct {
	// Op is the operator as written: >, >>, >|, &>, &>>, <>, <, <<<, ...
	Op string `json:"op"`
	// FD is the file descriptor number written before the operator, if any.
	FD string `json:"fd,omitempty"`
	// Target is the file (or descriptor, for >& and <&) the operator names.
	Target Word `json:"target"`
	// Write is true when the redirection opens a file for writing (>, >>,
	// >|, &>, &>>, <>, and >& with a file name).
	Write bool `json:"write,omitempty"`
}

// Command is one simple command of a script.
type Command struct {
	// Program is the base name of the program after quote removal and
	// path resolution ("rm" for "/bin/rm", "\rm" and "'rm'"); empty for an
	// opaque command and for redirections without a command ("> file").
	Program string `json:"program,omitempty"`
	// Name is the program word as resolved ("/bin/rm").
	Name string `json:"name,omitempty"`
	// Args are the words after the program.
	Args []Word `json:"args,omitempty"`
	// Assigns are the variable assignments written before the program
	// ("GOFLAGS=-x" of "GOFLAGS=-x go test"), as written: they change the
	// environment the program runs with.
	Assigns []string `json:"assigns,omitempty"`
	// Redirects are the command's redirections (also those of a subshell
	// or block, reported on a command without a program).
	Redirects []Redirect `json:"redirects,omitempty"`
	// Via lists the commands that run this one, outermost first ("sudo",
	// "sh -c", "find -delete"); empty for a command of the script itself.
	Via []string `json:"via,omitempty"`
	// Opaque, when not empty, says why the analysis cannot tell what this
	// command runs, without quoting the script (it may hold secrets).
	// Program is empty then.
	Opaque string `json:"opaque,omitempty"`
	// Text is the command's source text (for a command found inside a
	// string, the text of that string), for messages.
	Text string `json:"text"`
}

// Analysis is the result of [Analyze].
type Analysis struct {
	// Commands are the simple commands in the order they appear.
	Commands []Command
	// ChangesDir is true when some command may change the working directory
	// (cd, pushd, popd): relative paths in redirections are then not known
	// to be relative to the starting directory.
	ChangesDir bool
	// SetsVariables is true when some part of the script may set a shell
	// variable other than through a simple command's [Command.Assigns]: an
	// assignment without a command ("PATH=."), a declaration (export,
	// declare, typeset, local, readonly), a for or select loop's variable,
	// arithmetic, or a parameter expansion that assigns ("${X:=v}").
	SetsVariables bool
}

// Analyze returns every simple command of script (bash syntax). It never
// fails: what it cannot see through is reported as an opaque command.
func Analyze(script string) *Analysis {
	a := &analyzer{}
	if len(script) > MaxScriptSize {
		a.opaque(fmt.Sprintf("the script is longer than %d bytes", MaxScriptSize), nil, truncate(script))
		return &a.res
	}
	a.script(script, 0, nil)
	return &a.res
}

type analyzer struct {
	res     Analysis
	full    bool // MaxCommands reached; the opaque marker is added
	arith   bool // the script uses arithmetic evaluation
	cmdText bool // some literal text holds $( or `
	// fdIn maps the input descriptors of the simple command being
	// analysed to their literal here-documents (see inputs).
	fdIn map[string]*syntax.Word
	// assigns are the assignments of the simple command being analysed,
	// until its command is reported.
	assigns []string
}

// assigns returns the text of a simple command's assignments.
func assigns(src string, as []*syntax.Assign) []string {
	if len(as) == 0 {
		return nil
	}
	out := make([]string, len(as))
	for i, x := range as {
		out[i] = nodeText(src, x)
		if out[i] == "" {
			out[i] = "?" // never empty: an assignment is there
		}
	}
	return out
}

func (a *analyzer) add(c Command) {
	if a.full {
		return
	}
	if len(a.res.Commands) >= MaxCommands {
		a.full = true
		a.res.Commands = append(a.res.Commands, Command{Opaque: fmt.Sprintf("more than %d simple commands", MaxCommands), Text: "…"})
		return
	}
	a.res.Commands = append(a.res.Commands, c)
}

func (a *analyzer) opaque(reason string, via []string, text string) {
	a.add(Command{Opaque: reason, Via: slices.Clone(via), Text: text})
}

func truncate(s string) string {
	const n = 200
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// script analyses src, found at nesting depth depth through via.
func (a *analyzer) script(src string, depth int, via []string) {
	if depth > MaxDepth {
		a.opaque(fmt.Sprintf("scripts nest more than %d deep", MaxDepth), via, truncate(src))
		return
	}
	f, err := parse(src)
	if err != nil {
		a.opaque(parseReason(err), via, truncate(src))
		return
	}
	top := depth == 0
	if top {
		a.arith, a.cmdText = false, false
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		a.nodeCode(n, src, via)
		switch x := n.(type) {
		case *syntax.Stmt:
			a.stmt(x, src, depth, via)
		case *syntax.ArithmExp, *syntax.ArithmCmd, *syntax.LetClause:
			a.arith = true
			a.res.SetsVariables = true
		case *syntax.CallExpr:
			if len(x.Args) == 0 && len(x.Assigns) > 0 {
				a.res.SetsVariables = true
			}
		case *syntax.WordIter:
			a.res.SetsVariables = true
		case *syntax.ParamExp:
			if x.Exp != nil && (x.Exp.Op == syntax.AssignUnset || x.Exp.Op == syntax.AssignUnsetOrNull) {
				a.res.SetsVariables = true
			}
		case *syntax.DeclClause:
			a.res.SetsVariables = true
			// declare -i makes later assignments arithmetic.
			for _, as := range x.Args {
				if l := wordLit(as.Value); as.Naked && strings.HasPrefix(l, "-") && strings.Contains(l, "i") {
					a.arith = true
				}
			}
		case *syntax.SglQuoted:
			if strings.Contains(x.Value, "$(") || strings.Contains(x.Value, "`") {
				a.cmdText = true
			}
		case *syntax.Lit:
			if strings.Contains(x.Value, "$(") || strings.Contains(x.Value, "`") {
				a.cmdText = true
			}
		}
		return true
	})
	if top && a.arith && a.cmdText {
		a.opaque("arithmetic evaluation in a script that holds a command substitution in a string (bash may run it from an array index)", via, truncate(src))
	}
}

// parseReason says where a script fails to parse, without quoting it.
func parseReason(err error) string {
	var pe syntax.ParseError
	if errors.As(err, &pe) {
		return fmt.Sprintf("the script does not parse (line %d, column %d)", pe.Pos.Line(), pe.Pos.Col())
	}
	return "the script does not parse"
}

// parse parses src as bash, turning a panic of the parser into an error.
func parse(src string) (f *syntax.File, err error) {
	defer func() {
		if p := recover(); p != nil {
			f, err = nil, fmt.Errorf("parser failed: %v", p)
		}
	}()
	return syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
}

func nodeText(src string, n syntax.Node) string {
	s, e := int(n.Pos().Offset()), int(n.End().Offset())
	if s < 0 || e > len(src) || s > e {
		return ""
	}
	return truncate(src[s:e])
}

func (a *analyzer) stmt(st *syntax.Stmt, src string, depth int, via []string) {
	rs := redirects(st.Redirs)
	call, ok := st.Cmd.(*syntax.CallExpr)
	if !ok || len(call.Args) == 0 {
		if len(rs) > 0 {
			a.add(Command{Redirects: rs, Via: slices.Clone(via), Text: nodeText(src, st)})
		}
		return
	}
	words := make([]Word, len(call.Args))
	for i, w := range call.Args {
		words[i] = resolve(w)
	}
	var stdin *syntax.Word // a literal script on stdin, for sh
	for _, r := range st.Redirs {
		if r.Hdoc != nil && (r.Op == syntax.Hdoc || r.Op == syntax.DashHdoc) {
			stdin = r.Hdoc
		} else if r.Op == syntax.WordHdoc {
			stdin = r.Word
		}
	}
	prev := a.fdIn
	a.fdIn = inputs(st.Redirs)
	a.assigns = assigns(src, call.Assigns)
	a.command(words, rs, stdin, nodeText(src, call), depth, via, 0)
	a.assigns = nil
	a.fdIn = prev
}

func redirects(rs []*syntax.Redirect) []Redirect {
	var out []Redirect
	for _, r := range rs {
		if r.Op == syntax.Hdoc || r.Op == syntax.DashHdoc {
			continue // the body is text on stdin; substitutions in it are walked
		}
		x := Redirect{Op: r.Op.String()}
		if r.N != nil {
			x.FD = r.N.Value
		}
		if r.Word != nil {
			x.Target = resolve(r.Word)
		}
		switch r.Op {
		case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.AppClob, syntax.RdrAll, syntax.RdrAllClob, syntax.AppAll, syntax.AppAllClob, syntax.RdrInOut:
			x.Write = true
		case syntax.DplOut:
			// >&2 and >&- duplicate descriptors; >& file writes the file.
			t := x.Target.Value
			x.Write = x.Target.Dynamic || !(t == "-" || isDigits(strings.TrimSuffix(t, "-")))
		}
		out = append(out, x)
	}
	return out
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// resolve computes what is known of w before the script runs.
func resolve(w *syntax.Word) Word {
	var val, match strings.Builder
	out := Word{}
	dyn := func(text string) {
		if !out.Dynamic {
			out.Literal = val.String()
		}
		out.Dynamic = true
		val.WriteString(text)
		match.WriteByte(0)
	}
	lit := func(s string) {
		val.WriteString(s)
		match.WriteString(s)
	}
	// Brace expansion turns one word into several: dynamic.
	cp := *w
	cp.Parts = slices.Clone(w.Parts)
	if syntax.SplitBraces(&cp) {
		out.Value = printWord(w)
		out.Dynamic, out.Literal, out.match = true, "", "\x00"
		return out
	}
	for i, p := range w.Parts {
		switch x := p.(type) {
		case *syntax.Lit:
			s := x.Value
			if i == 0 && strings.HasPrefix(s, "~") {
				end := strings.IndexByte(s, '/')
				if end < 0 {
					end = len(s)
				}
				dyn(s[:end])
				s = s[end:]
			}
			u, glob := unescape(s)
			out.Glob = out.Glob || glob
			lit(u)
		case *syntax.SglQuoted:
			if x.Dollar {
				s, _, err := expand.Format(nil, x.Value, nil)
				if err != nil {
					dyn("$'" + x.Value + "'")
					continue
				}
				s, _, _ = strings.Cut(s, "\x00")
				lit(s)
				continue
			}
			lit(x.Value)
		case *syntax.DblQuoted:
			for _, q := range x.Parts {
				if l, ok := q.(*syntax.Lit); ok {
					lit(unescapeDouble(l.Value))
					continue
				}
				dyn(printNode(q))
			}
		default:
			dyn(printNode(p))
		}
	}
	out.Value = val.String()
	out.match = match.String()
	if !out.Dynamic {
		out.Literal = out.Value
	}
	return out
}

// unescape removes the backslashes of unquoted text and reports whether
// it holds an unquoted glob character.
func unescape(s string) (string, bool) {
	if !strings.ContainsAny(s, "\\*?[") {
		return s, false
	}
	var b strings.Builder
	glob := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			i++
			if s[i] != '\n' {
				b.WriteByte(s[i])
			}
			continue
		case c == '*' || c == '?' || c == '[':
			glob = true
		}
		b.WriteByte(c)
	}
	return b.String(), glob
}

// unescapeDouble removes the backslashes that escape inside double quotes.
func unescapeDouble(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			switch s[i+1] {
			case '$', '`', '"', '\\':
				i++
			case '\n':
				i++
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func printNode(n syntax.Node) string {
	var b strings.Builder
	if err := syntax.NewPrinter(syntax.Minify(true)).Print(&b, n); err != nil {
		return "…"
	}
	return b.String()
}

func printWord(w *syntax.Word) string { return printNode(w) }

func wordLit(w *syntax.Word) string {
	if w == nil {
		return ""
	}
	return w.Lit()
}

// command reports the simple command words (with redirections rs and a
// literal stdin script, if any) and what it runs.
func (a *analyzer) command(words []Word, rs []Redirect, stdin *syntax.Word, text string, depth int, via []string, hops int) {
	if len(words) == 0 {
		if len(rs) > 0 {
			a.add(Command{Redirects: rs, Via: slices.Clone(via), Text: text})
		}
		return
	}
	prog := words[0]
	if prog.Dynamic || prog.Glob || prog.Value == "" {
		reason := "the program is only known when the script runs"
		if !prog.Dynamic && !prog.Glob {
			reason = "the program name is empty"
		}
		a.add(Command{Opaque: reason, Args: words, Redirects: rs, Via: slices.Clone(via), Text: text})
		return
	}
	c := Command{Program: base(prog.Value), Name: prog.Value, Args: words[1:], Assigns: a.assigns, Redirects: rs, Via: slices.Clone(via), Text: text}
	a.assigns = nil // the statement's own command has them, not what it wraps
	a.add(c)
	if hops > 32 {
		a.opaque("too many nested wrappers", via, text)
		return
	}
	args := words[1:]
	name := c.Program
	a.builtinCode(name, args, text, depth, via)
	switch name {
	case "cd", "pushd", "popd":
		a.res.ChangesDir = true
	}
	in := func(what string) []string { return append(slices.Clone(via), what) }
	// A script given as literal text.
	sub := func(what string, ws []Word) {
		for _, w := range ws {
			if w.Dynamic {
				a.opaque(what+" runs text that is only known when the script runs", in(what), text)
				return
			}
		}
		parts := make([]string, len(ws))
		for i, w := range ws {
			parts[i] = w.Value
		}
		a.script(strings.Join(parts, " "), depth+1, in(what))
	}
	// The command a wrapper runs.
	run := func(what string, ws []Word, extra bool) {
		if extra {
			ws = append(slices.Clone(ws), Word{Value: "{}", Dynamic: true, match: "\x00"})
		}
		a.command(ws, nil, nil, text, depth, in(what), hops+1)
	}
	switch name {
	case "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "rbash", "posh", "yash":
		a.shell(name, args, stdin, text, depth, via)
	case "eval":
		if len(args) > 0 {
			sub("eval", args)
		}
	case "trap":
		rest := args
		if len(rest) > 0 && rest[0].Value == "--" {
			rest = rest[1:]
		}
		if len(rest) >= 2 && !strings.HasPrefix(rest[0].Value, "-") {
			sub("trap", rest[:1])
		}
	case "alias":
		for _, w := range args {
			if _, v, ok := strings.Cut(w.Value, "="); ok && !w.Dynamic {
				a.script(v, depth+1, in("alias"))
			} else if w.Dynamic {
				a.opaque("alias defines a command that is only known when the script runs", in("alias"), text)
			}
		}
	case "watch":
		rest, ok := skipOptions(args, "ndgqcbtpxwe", "nq", []string{"--interval", "--differences", "--chgexit", "--equexit", "--errexit", "--beep", "--exec", "--precise", "--no-title", "--color", "--no-wrap"}, []string{"--interval", "--equexit"}, 0)
		if !ok {
			a.opaque("watch's options are only known when the script runs", in("watch"), text)
		} else if len(rest) > 0 {
			sub("watch", rest)
		}
	case "su":
		a.suCommand(name, args, text, in, sub)
	case "runuser":
		if slices.ContainsFunc(args, func(w Word) bool {
			return w.Value == "-u" || strings.HasPrefix(w.Value, "--user") || strings.HasPrefix(w.Value, "-u") && !strings.HasPrefix(w.Value, "--")
		}) {
			rest, ok := skipOptions(args, wrappers["runuser"].flags, wrappers["runuser"].valued, nil, wrappers["runuser"].longValued, 0)
			a.wrapped(name, rest, ok, text, depth, via, hops)
		} else {
			a.suCommand(name, args, text, in, sub) // runuser USER -c COMMAND, as su
		}
	case "setarch", "linux32", "linux64", "i386", "x86_64", "uname26":
		// setarch ARCH [options] [program [arguments]]; the links named
		// after an architecture take no ARCH. Without a program it runs a
		// shell on its standard input.
		positional := 0
		if name == "setarch" {
			positional = 1
		}
		const flags = "v3BFILRSTXZ"
		longFlags := []string{"--verbose", "--3gb", "--4gb", "--32bit", "--fdpic-funcptrs", "--short-inode", "--addr-compat-layout",
			"--addr-no-randomize", "--whole-seconds", "--sticky-timeouts", "--read-implies-exec", "--mmap-page-zero", "--uname-2.6", "--list", "--show"}
		rest, ok := skipOptions(args, flags, "", longFlags, nil, positional)
		if ok {
			rest, ok = skipOptions(rest, flags, "", longFlags, nil, 0)
		}
		if ok && len(rest) == 0 && !slices.ContainsFunc(args, func(w Word) bool { return w.Value == "--list" || strings.HasPrefix(w.Value, "--show") }) {
			a.opaque(name+" without a program runs a shell on its standard input", in(name), text)
			return
		}
		a.wrapped(name, rest, ok, text, depth, via, hops)
	case "sg":
		// sg GROUP [-c] COMMAND: the command is a script for /bin/sh;
		// without one it runs a shell on its standard input.
		rest := args
		if len(rest) > 0 && rest[0].Value == "-" {
			rest = rest[1:]
		}
		if len(rest) > 0 {
			rest = rest[1:] // the group
		}
		if len(rest) > 0 && rest[0].Value == "-c" {
			rest = rest[1:]
		}
		if len(rest) == 0 {
			a.opaque("sg without a command runs a shell on its standard input", in(name), text)
			return
		}
		sub("sg -c", rest[:1])
	case "parallel":
		var cmd []Word
		for _, w := range args {
			if w.Value == ":::" || w.Value == "::::" || w.Value == ":::+" {
				break
			}
			cmd = append(cmd, w)
		}
		// Options of parallel are many; the command starts at the first
		// word that is not an option.
		for len(cmd) > 0 && strings.HasPrefix(cmd[0].Value, "-") {
			cmd = cmd[1:]
		}
		if len(cmd) > 0 {
			sub("parallel", cmd)
		}
	case "find":
		a.find(args, text, depth, via, hops)
	case "xargs":
		rest, ok := skipOptions(args, "0Ii", "EeIiLlnPsad", []string{"--null", "--no-run-if-empty", "--interactive", "--verbose", "--exit", "--open-tty", "--show-limits"}, []string{"--arg-file", "--delimiter", "--eof", "--replace", "--max-lines", "--max-args", "--max-procs", "--max-chars", "--process-slot-var"}, 0)
		switch {
		case !ok:
			a.opaque("xargs's options are only known when the script runs", in("xargs"), text)
		case len(rest) == 0:
			run("xargs", []Word{{Value: "echo", Literal: "echo", match: "echo"}}, true)
		default:
			run("xargs", rest, true)
		}
	case "env":
		a.env(args, text, depth, via, hops)
	case "flock":
		for i, w := range args {
			if (w.Value == "-c" || w.Value == "--command") && i+1 < len(args) {
				sub("flock -c", args[i+1:i+2])
				return
			}
		}
		rest, ok := skipOptions(args, "sexunoFh", "wEc", []string{"--shared", "--exclusive", "--unlock", "--nonblock", "--close", "--no-fork", "--verbose"}, []string{"--timeout", "--wait", "--conflict-exit-code"}, 1)
		a.wrapped("flock", rest, ok, text, depth, via, hops)
	default:
		if a.launch(name, args, text, depth, via, hops) {
			return
		}
		if wr, ok := wrappers[name]; ok {
			if name == "command" && slices.ContainsFunc(args, func(w Word) bool { return w.Value == "-v" || w.Value == "-V" }) {
				return // command -v only looks the name up
			}
			if (name == "sudo" || name == "doas") && len(args) > 0 && slices.ContainsFunc(args, func(w Word) bool { return w.Value == "-e" || w.Value == "--edit" }) {
				return // sudo -e edits files: judged as sudo
			}
			rest, ok := skipOptions(args, wr.flags, wr.valued, wr.longFlags, wr.longValued, wr.positional)
			a.wrapped(name, rest, ok, text, depth, via, hops)
		}
	}
}

// wrapped reports the command rest a wrapper runs; ok false means its
// options could not be read.
func (a *analyzer) wrapped(name string, rest []Word, ok bool, text string, depth int, via []string, hops int) {
	v := append(slices.Clone(via), name)
	if !ok {
		a.opaque(name+"'s options are only known when the script runs", v, text)
		return
	}
	if len(rest) == 0 {
		return
	}
	if name == "busybox" && rest[0].Value == "sh" {
		a.command(rest, nil, nil, text, depth, via, hops+1)
		return
	}
	a.command(rest, nil, nil, text, depth, v, hops+1)
}

// suCommand reports the command of su (or runuser in su's form): the
// script of -c, --command or --session-command (also in a cluster of short
// options, "-lc", or attached, "-cSCRIPT"), analysed with sub. Options that
// are only known when the script runs make it opaque.
func (a *analyzer) suCommand(name string, args []Word, text string, in func(string) []string, sub func(string, []Word)) {
	what := name + " -c"
	for i := 0; i < len(args); i++ {
		w := args[i]
		v := w.Value
		if w.Dynamic && (w.Literal == "" || strings.HasPrefix(w.Literal, "-")) {
			a.opaque(name+"'s options are only known when the script runs", in(name), text)
			return
		}
		switch {
		case v == "--":
			return // what follows are the shell's arguments
		case v == "--command" || v == "--session-command":
			if i+1 < len(args) {
				sub(what, args[i+1:i+2])
			}
			return
		case strings.HasPrefix(v, "--command=") || strings.HasPrefix(v, "--session-command="):
			_, val, _ := strings.Cut(v, "=")
			sub(what, []Word{{Value: val, Dynamic: w.Dynamic, Literal: val}})
			return
		case strings.HasPrefix(v, "--") || !strings.HasPrefix(v, "-"):
			continue
		}
		for j := 1; j < len(v); j++ {
			if v[j] == 'c' {
				if j < len(v)-1 {
					sub(what, []Word{{Value: v[j+1:], Dynamic: w.Dynamic, Literal: v[j+1:]}})
				} else if i+1 < len(args) {
					sub(what, args[i+1:i+2])
				}
				return
			}
			if strings.IndexByte("sgGw", v[j]) >= 0 { // an option whose value is the rest
				if j == len(v)-1 {
					i++
				}
				break
			}
		}
	}
}

// wrapper describes the options of a command that runs another command.
type wrapper struct {
	flags, valued         string   // short options without and with a value
	longFlags, longValued []string // long options without and with a value
	positional            int      // operands before the command (timeout's duration)
}

var wrappers = map[string]wrapper{
	"sudo":       {flags: "AbEeHiKklnPSsVv", valued: "CDghprTtUu", longValued: []string{"--user", "--group", "--host", "--prompt", "--close-from", "--chdir", "--role", "--type", "--command-timeout", "--other-user"}},
	"doas":       {flags: "Lns", valued: "uC"},
	"nohup":      {},
	"time":       {flags: "pv", valued: "fo", longValued: []string{"--format", "--output"}},
	"nice":       {valued: "n", longValued: []string{"--adjustment"}},
	"ionice":     {flags: "tu", valued: "cnp", longValued: []string{"--class", "--classdata", "--pid", "--pgid", "--uid"}},
	"stdbuf":     {valued: "ioe", longValued: []string{"--input", "--output", "--error"}},
	"setsid":     {flags: "cfw"},
	"timeout":    {flags: "v", valued: "sk", longFlags: []string{"--preserve-status", "--foreground", "--verbose"}, longValued: []string{"--signal", "--kill-after"}, positional: 1},
	"command":    {flags: "p"},
	"builtin":    {},
	"exec":       {flags: "cl", valued: "a"},
	"chroot":     {longValued: []string{"--userspec", "--groups"}, positional: 1},
	"unshare":    {flags: "mUuinpCTrcf", valued: "S", longValued: []string{"--setuid", "--setgid", "--wd", "--root"}},
	"taskset":    {flags: "acp", positional: 1},
	"unbuffer":   {flags: "p"},
	"runuser":    {flags: "lmpf", valued: "ugGsw", longValued: []string{"--user", "--group", "--supp-group", "--shell", "--whitelist-environment"}},
	"busybox":    {},
	"chrt":       {flags: "bdfiormRpav", valued: "TPD", positional: 1},
	"caffeinate": {flags: "dimsu", valued: "tw"},
	"doit":       {},
}

// skipOptions skips a wrapper's options and operands and returns the words
// from the command on; ok is false when an option word is dynamic (the
// command's position is then unknown).
func skipOptions(args []Word, flags, valued string, longFlags, longValued []string, positional int) ([]Word, bool) {
	i := 0
	for i < len(args) {
		w := args[i]
		v := w.Value
		if w.Dynamic && (w.Literal == "" || strings.HasPrefix(w.Literal, "-")) {
			return nil, false
		}
		if v == "--" {
			i++
			break
		}
		if !strings.HasPrefix(v, "-") || v == "-" {
			if strings.Contains(v, "=") && isAssignment(v) {
				i++ // env and sudo take NAME=VALUE before the command
				continue
			}
			break
		}
		i++
		if strings.HasPrefix(v, "--") {
			if strings.Contains(v, "=") {
				continue
			}
			if slices.Contains(longValued, v) {
				i++
			}
			continue
		}
		// A cluster of short options; the first that takes a value takes
		// the rest of the word or the next word.
		for j := 1; j < len(v); j++ {
			if strings.IndexByte(valued, v[j]) >= 0 {
				if j == len(v)-1 {
					i++
				}
				break
			}
		}
	}
	for ; positional > 0 && i < len(args); positional-- {
		if args[i].Dynamic {
			return nil, false
		}
		i++
	}
	if i > len(args) {
		i = len(args)
	}
	return args[i:], true
}

func isAssignment(s string) bool {
	name, _, _ := strings.Cut(s, "=")
	if name == "" {
		return false
	}
	for i, c := range name {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// shell handles sh and its relatives: -c SCRIPT, a script file, or stdin.
func (a *analyzer) shell(name string, args []Word, stdin *syntax.Word, text string, depth int, via []string) {
	what := name + " -c"
	c, s := false, false
	i := 0
	for i < len(args) {
		v := args[i].Value
		if args[i].Dynamic && (args[i].Literal == "" || strings.HasPrefix(args[i].Literal, "-") || strings.HasPrefix(args[i].Literal, "+")) {
			a.opaque(name+"'s options are only known when the script runs", append(slices.Clone(via), name), text)
			return
		}
		if v == "--" || v == "-" {
			i++
			break
		}
		if len(v) < 2 || (v[0] != '-' && v[0] != '+') {
			break
		}
		i++
		if strings.HasPrefix(v, "--") {
			if v == "--rcfile" || v == "--init-file" {
				i++
			}
			continue
		}
		if strings.ContainsRune(v[1:], 'c') {
			c = true
		}
		if v[0] == '-' && strings.ContainsRune(v[1:], 's') {
			s = true // the script is read from stdin; operands are its arguments
		}
		if strings.ContainsAny(v[1:], "oO") && i < len(args) {
			i++ // -o OPTION
		}
	}
	rest := args[min(i, len(args)):]
	switch {
	case c && len(rest) > 0:
		w := rest[0]
		v := append(slices.Clone(via), what)
		if w.Dynamic {
			a.opaque(what+" runs a script that is only known when the script runs", v, text)
			return
		}
		a.script(w.Value, depth+1, v)
	case c:
		a.opaque(what+" without a script", append(slices.Clone(via), what), text)
	case len(rest) > 0 && !s:
		// A script file: judged as the program name with its arguments,
		// unless it is a descriptor (/dev/stdin, /dev/fd/N) or not known.
		a.scriptFile(name, rest[0], depth, via, text)
	default:
		// -s, or no script file: the script is read from standard input.
		a.fdScript(name, "0", depth, via, text)
	}
}

// env handles env [OPTION]... [NAME=VALUE]... [COMMAND [ARG]...] as GNU
// coreutils' env reads it (getopt with "+a:C:iS:u:v0": options stop at the
// first word that is not one, short options cluster, a long option may be
// any unambiguous prefix of its name). -S STRING (--split-string, -SSTRING,
// -vS STRING) splits STRING into words that are read again as env's
// arguments, followed by the remaining ones.
func (a *analyzer) env(args []Word, text string, depth int, via []string, hops int) {
	in := append(slices.Clone(via), "env")
	if hops > 32 {
		a.opaque("too many nested wrappers", via, text)
		return
	}
	i := 0
	for i < len(args) {
		w := args[i]
		v := w.Value
		if w.Dynamic && (w.Literal == "" || strings.HasPrefix(w.Literal, "-")) {
			a.opaque("env's options are only known when the script runs", in, text)
			return
		}
		if v == "--" {
			i++
			break
		}
		if !strings.HasPrefix(v, "-") || v == "-" {
			if l := w.Literal; strings.Contains(l, "=") {
				// NAME=VALUE (any word with "=", as env reads it): env runs
				// the next word even when it starts with "-"; reading on as
				// options reports more, not less.
				if strings.HasPrefix(l, "BASH_FUNC_") {
					// BASH_FUNC_f%%='() { rm x; }' is a function f that
					// every bash started under it defines.
					a.opaque("env exports a bash function (BASH_FUNC_) that a bash it starts runs", in, text)
					return
				}
				i++
				continue
			}
			break
		}
		i++
		var split *Word
		if strings.HasPrefix(v, "--") {
			name, val, eq := strings.Cut(v, "=")
			long, ok := envLongOption(name)
			switch {
			case !ok:
				a.opaque("env has an option this analysis does not know", in, text)
				return
			case long == "--split-string" && eq:
				split = &Word{Value: val}
			case long == "--split-string" && i < len(args):
				split = &args[i]
				i++
			case envLongOptions[long] && !eq:
				i++ // its value is the next word
			}
		} else {
			for j := 1; j < len(v); j++ {
				if v[j] == 'S' {
					if j+1 < len(v) {
						split = &Word{Value: v[j+1:]}
					} else if i < len(args) {
						split = &args[i]
						i++
					}
					break
				}
				if strings.IndexByte("aCuP", v[j]) >= 0 {
					if j == len(v)-1 {
						i++ // its value is the next word
					}
					break
				}
			}
		}
		if split != nil {
			a.envSplit(*split, args[min(i, len(args)):], text, depth, via, hops)
			return
		}
	}
	a.wrapped("env", args[min(i, len(args)):], true, text, depth, via, hops)
}

// envSplit handles env -S STRING followed by the words rest: STRING is split
// into words (quotes and backslashes as in sh; GNU env also expands ${NAME},
// a dynamic word here) and env reads them and rest again as its arguments.
// A string that is not a plain list of words (operators, redirections, a
// comment) is analysed as a script with rest appended, which holds at least
// every command env could run.
func (a *analyzer) envSplit(s Word, rest []Word, text string, depth int, via []string, hops int) {
	vv := append(slices.Clone(via), "env -S")
	if s.Dynamic {
		a.opaque("env -S runs text that is only known when the script runs", vv, text)
		return
	}
	if words, ok := splitWords(s.Value); ok {
		a.env(append(words, rest...), text, depth, vv, hops+1)
		return
	}
	parts := []string{s.Value}
	for _, r := range rest {
		q, err := syntax.Quote(r.Value, syntax.LangBash)
		if r.Dynamic || err != nil {
			q = "\"$X\""
		}
		parts = append(parts, q)
	}
	a.script(strings.Join(parts, " "), depth+1, vv)
}

// splitWords splits s into words when it is a plain list of words: no
// operator, redirection, assignment prefix or comment.
func splitWords(s string) ([]Word, bool) {
	if strings.Contains(s, "#") {
		return nil, false
	}
	f, err := parse(s)
	if err != nil || len(f.Stmts) > 1 {
		return nil, false
	}
	if len(f.Stmts) == 0 {
		return nil, true
	}
	st := f.Stmts[0]
	call, ok := st.Cmd.(*syntax.CallExpr)
	if !ok || len(st.Redirs) > 0 || st.Negated || st.Background || st.Coprocess || len(call.Assigns) > 0 {
		return nil, false
	}
	words := make([]Word, len(call.Args))
	for i, w := range call.Args {
		words[i] = resolve(w)
	}
	return words, true
}

// envLongOptions are GNU env's long options, each with whether it takes a
// value in the next word (the signal options take one only after "=").
var envLongOptions = map[string]bool{
	"--argv0": true, "--chdir": true, "--unset": true, "--split-string": true,
	"--ignore-environment": false, "--null": false, "--debug": false,
	"--default-signal": false, "--ignore-signal": false, "--block-signal": false,
	"--list-signal-handling": false, "--help": false, "--version": false,
}

// envLongOption returns the long option of env that name spells, in full or
// as an unambiguous prefix (getopt_long).
func envLongOption(name string) (string, bool) {
	if _, ok := envLongOptions[name]; ok {
		return name, true
	}
	found := ""
	for o := range envLongOptions {
		if len(name) > 2 && strings.HasPrefix(o, name) {
			if found != "" {
				return "", false
			}
			found = o
		}
	}
	return found, found != ""
}

// find handles -exec and friends, and -delete.
func (a *analyzer) find(args []Word, text string, depth int, via []string, hops int) {
	for i := 0; i < len(args); i++ {
		v := args[i].Value
		switch v {
		case "-exec", "-execdir", "-ok", "-okdir":
			j := i + 1
			for j < len(args) && args[j].Value != ";" && args[j].Value != "+" {
				j++
			}
			ws := slices.Clone(args[i+1 : j])
			for k := range ws {
				if w := ws[k]; strings.Contains(w.Value, "{}") {
					lit, _, _ := strings.Cut(w.Literal, "{}")
					ws[k] = Word{Value: w.Value, Dynamic: true, Literal: lit, Glob: w.Glob, match: strings.ReplaceAll(w.match, "{}", "\x00")}
				}
			}
			a.command(ws, nil, nil, text, depth, append(slices.Clone(via), "find "+v), hops+1)
			i = j
		case "-delete":
			a.add(Command{Program: "rm", Name: "rm", Args: []Word{{Value: "{}", Dynamic: true, match: "\x00"}}, Via: append(slices.Clone(via), "find -delete"), Text: text})
		}
	}
}

// base returns the base name of a program path ("rm" for "/bin/rm").
func base(p string) string {
	if !strings.Contains(p, "/") {
		return p
	}
	b := path.Base(strings.TrimRight(p, "/"))
	if b == "." || b == "/" {
		return p
	}
	return b
}
