package shellcmd

import (
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Bash runs code held in strings in more places than eval: a variable name
// given as a string ("a[$(rm x)]") has its array index evaluated, command
// substitutions included, by printf -v, read, mapfile, getopts, wait -p,
// unset, test -v, declare and its relatives, namerefs and ${!name}; prompt
// expansion (${x@P}, PS4) runs the substitutions in a value; BASH_ENV and
// ENV name a file a shell reads first; source and a shell read scripts from
// descriptors (/dev/stdin, /dev/fd/N). Where the analysis cannot tell what
// such a string runs, the command is opaque, as eval of a string that is not
// literal is. See the GNU Bash manual, "Arrays", "Shell Parameter
// Expansion", "Controlling the Prompt" and "Bash Startup Files".

// safeName matches a variable name whose evaluation runs nothing: a name,
// optionally with a numeric, @ or * index.
var safeName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\[([0-9]+|@|\*)\])?$`)

// isSafeName reports whether w is a literal name that bash evaluates
// without running anything.
func isSafeName(w Word) bool { return !w.Dynamic && safeNameString(w.Value) }

// safeNameString reports whether s is a safe name (safeName) that is not
// one of bash's command tables: a value stored in BASH_CMDS or
// BASH_ALIASES, by whatever assignment, names the program a later command
// runs ("BASH_CMDS[ls]=/bin/rm; ls x" runs rm).
func safeNameString(s string) bool { return safeName.MatchString(s) && !commandTable(s) }

// commandTable reports whether the variable name s (with or without an
// index) is BASH_CMDS or BASH_ALIASES, bash's hash table of programs and
// its aliases: assigning to them changes what a command name runs.
func commandTable(s string) bool {
	n, _, _ := strings.Cut(s, "[")
	return n == "BASH_CMDS" || n == "BASH_ALIASES"
}

// commandTableReason is the reason given for an assignment to a command
// table.
const commandTableReason = "an assignment to BASH_CMDS or BASH_ALIASES changes which program a command name runs"

// nameAsCode is the reason given for a name bash may evaluate as code.
const nameAsCode = "bash evaluates a variable name given as a string, and an array index in it may run commands"

// builtinCode checks the builtins of bash that evaluate strings as names or
// read scripts (program name with arguments args) and reports an opaque
// command when the analysis cannot see what they run.
func (a *analyzer) builtinCode(name string, args []Word, text string, depth int, via []string) {
	in := append(slices.Clone(via), name)
	unsafe := func(ws ...Word) bool {
		return slices.ContainsFunc(ws, func(w Word) bool { return !isSafeName(w) })
	}
	switch name {
	case "printf":
		for i := 0; i < len(args); i++ {
			v := args[i].Value
			if args[i].Dynamic && (args[i].Literal == "" || strings.HasPrefix(args[i].Literal, "-")) {
				a.opaque("printf's options are only known when the script runs", in, text)
				return
			}
			switch {
			case v == "-v" && i+1 < len(args):
				if unsafe(args[i+1]) {
					a.opaque(nameAsCode, in, text)
				}
				return
			case strings.HasPrefix(v, "-v") && len(v) > 2:
				if !safeNameString(v[2:]) {
					a.opaque(nameAsCode, in, text)
				}
				return
			}
			return // the format: no more options
		}
	case "read", "mapfile", "readarray", "wait":
		// Options with a value in the next word or the rest of the word;
		// mapfile's -C callback is code.
		valued := map[string]string{"read": "adinNptu", "mapfile": "dnOstuCc", "readarray": "dnOstuCc", "wait": "p"}[name]
		names := []Word{}
		i := 0
		for ; i < len(args); i++ {
			w := args[i]
			if w.Dynamic && (w.Literal == "" || strings.HasPrefix(w.Literal, "-")) {
				a.opaque(name+"'s options are only known when the script runs", in, text)
				return
			}
			if w.Value == "--" {
				i++
				break
			}
			if !strings.HasPrefix(w.Value, "-") || w.Value == "-" {
				break
			}
			for j := 1; j < len(w.Value); j++ {
				c := w.Value[j]
				if strings.IndexByte(valued, c) < 0 {
					continue
				}
				val := Word{Value: w.Value[j+1:]}
				if j == len(w.Value)-1 && i+1 < len(args) {
					i++
					val = args[i]
				}
				switch {
				case c == 'C':
					a.opaque(name+" -C runs its callback as code", in, text)
					return
				case c == 'a' && name == "read", c == 'p' && name == "wait":
					names = append(names, val) // read's -p is a prompt
				}
				break
			}
		}
		if name != "wait" {
			names = append(names, args[min(i, len(args)):]...)
		}
		if unsafe(names...) {
			a.opaque(nameAsCode, in, text)
		}
	case "hash", "enable":
		// hash -p PATH NAME makes NAME run PATH; enable -f FILE NAME loads
		// a builtin from a shared object.
		opt := map[string]string{"hash": "p", "enable": "f"}[name]
		for _, w := range args {
			if w.Value == "--" || !w.Dynamic && !strings.HasPrefix(w.Value, "-") {
				break
			}
			if w.Dynamic || strings.Contains(w.Value, opt) {
				a.opaque(name+" -"+opt+" binds a command name to a program the name does not say", in, text)
				return
			}
		}
	case "compgen", "complete":
		// -C runs a command for the completions, and the word list of -W
		// is expanded again, command substitutions included.
		for i := 0; i < len(args); i++ {
			w := args[i]
			if w.Value == "--" || !w.Dynamic && !strings.HasPrefix(w.Value, "-") {
				continue // a word to complete or a command name
			}
			if w.Dynamic && (w.Literal == "" || strings.HasPrefix(w.Literal, "-")) {
				a.opaque(name+"'s options are only known when the script runs", in, text)
				return
			}
			opts := strings.TrimPrefix(w.Value, "-")
			if strings.ContainsRune(opts, 'C') {
				a.opaque(name+" -C runs a command to complete", in, text)
				return
			}
			if j := strings.IndexByte(opts, 'W'); j >= 0 {
				list := Word{Value: opts[j+1:]}
				if list.Value == "" && i+1 < len(args) {
					i++
					list = args[i]
				}
				if list.Dynamic || strings.Contains(list.Value, "$(") || strings.Contains(list.Value, "`") {
					a.opaque(name+" -W expands its word list again, command substitutions included", in, text)
					return
				}
			}
		}
	case "fc":
		// fc without -l runs commands of the history (edited by -e's
		// editor, itself a command line).
		if !slices.ContainsFunc(args, func(w Word) bool {
			return !w.Dynamic && strings.HasPrefix(w.Value, "-") && !strings.HasPrefix(w.Value, "--") && strings.ContainsRune(w.Value, 'l') && !strings.ContainsAny(w.Value, "es")
		}) {
			a.opaque("fc runs commands from the history", in, text)
		}
	case "getopts":
		if len(args) >= 2 && unsafe(args[1]) {
			a.opaque(nameAsCode, in, text)
		}
	case "unset":
		var names []Word
		for _, w := range args {
			switch {
			case w.Value == "-f":
				return // function names are not evaluated
			case strings.HasPrefix(w.Value, "-") && !w.Dynamic:
			default:
				names = append(names, w)
			}
		}
		if unsafe(names...) {
			a.opaque(nameAsCode, in, text)
		}
	case "test", "[":
		for i, w := range args {
			if (w.Value == "-v" || w.Value == "-R") && i+1 < len(args) && unsafe(args[i+1]) {
				a.opaque(nameAsCode, in, text)
				return
			}
		}
	case "declare", "typeset", "local", "export", "readonly":
		nameref := false
		for _, w := range args {
			v := w.Value
			if strings.HasPrefix(v, "-") || strings.HasPrefix(v, "+") {
				nameref = nameref || strings.HasPrefix(v, "-") && strings.Contains(v, "n")
				continue
			}
			if a.declared(w, nameref) {
				a.opaque(nameAsCode, in, text)
				return
			}
		}
	case "env":
		for _, w := range args {
			n, _, ok := strings.Cut(w.Literal, "=")
			if ok && isAssignment(w.Literal) && specialValueUnsafe(n, valueOf(w)) {
				a.opaque(specialReason(n), in, text)
				return
			}
		}
	case "source", ".":
		rest := args
		if len(rest) > 0 && rest[0].Value == "--" {
			rest = rest[1:]
		} else if len(rest) > 1 && rest[0].Value == "-p" {
			rest = rest[2:]
		}
		if len(rest) == 0 {
			return
		}
		a.scriptFile(name, rest[0], depth, via, text)
	}
}

// declared reports whether the declare argument w (NAME, NAME=VALUE, or a
// word only known at run time) makes bash evaluate a name it cannot see:
// the name is not a safe one, or, for a nameref, the value is not.
func (a *analyzer) declared(w Word, nameref bool) bool {
	name, value, hasValue := strings.Cut(w.Value, "=")
	lname, _, lhas := strings.Cut(w.Literal, "=")
	if w.Dynamic && !lhas {
		return true // even the name is known only at run time
	}
	if w.Dynamic {
		name = lname
	}
	if !safeNameString(name) {
		return true
	}
	if hasValue && specialValueUnsafe(name, Word{Value: value, Dynamic: w.Dynamic}) {
		return true
	}
	return nameref && hasValue && (w.Dynamic || !safeNameString(value))
}

// valueOf is the part of the NAME=VALUE word w after the first "=".
func valueOf(w Word) Word {
	_, v, _ := strings.Cut(w.Value, "=")
	return Word{Value: v, Dynamic: w.Dynamic}
}

// specialValueUnsafe reports whether assigning value to the variable name
// runs code the analysis cannot see: BASH_ENV and ENV name a script a shell
// reads first (one from a descriptor or only known at run time), the prompts
// (PS0 to PS4, PS4 with xtrace) are expanded with their command
// substitutions, PROMPT_COMMAND is a script.
func specialValueUnsafe(name string, value Word) bool {
	switch name {
	case "BASH_ENV", "ENV":
		return value.Dynamic || isDeviceOrProc(value.Value)
	case "PS0", "PS1", "PS2", "PS3", "PS4":
		return value.Dynamic || strings.ContainsAny(value.Value, "$`")
	case "PROMPT_COMMAND":
		return value.Value != "" || value.Dynamic
	}
	return false
}

func specialReason(name string) string {
	if name == "BASH_ENV" || name == "ENV" {
		return name + " names a script a shell reads first, from a descriptor or only known when the script runs"
	}
	return name + " holds code or command substitutions bash runs"
}

// scriptFile handles a script that the shell or source (what) reads from
// the file word w: a descriptor's here-document is analysed, a descriptor
// the analysis cannot see and a name only known at run time are opaque, a
// regular file is judged as the program name with its arguments.
func (a *analyzer) scriptFile(what string, w Word, depth int, via []string, text string) {
	in := append(slices.Clone(via), what)
	if w.Dynamic && !(strings.HasPrefix(w.Value, "~") && strings.Count(w.match, "\x00") == 1 && strings.HasPrefix(w.match, "\x00")) {
		a.opaque(what+" runs a script file that is only known when the script runs", in, text)
		return
	}
	if fd, ok := fdPath(w.Value); ok {
		a.fdScript(what, fd, depth, via, text)
		return
	}
	if isDeviceOrProc(w.Value) {
		a.opaque(what+" reads its script from a device or a process's file", in, text)
	}
}

// fdScript analyses the script a shell or source (what) reads from
// descriptor fd of the current simple command: a literal here-document or
// here-string there is analysed; anything else is opaque.
func (a *analyzer) fdScript(what, fd string, depth int, via []string, text string) {
	in := append(slices.Clone(via), what)
	doc, ok := a.fdIn[fd]
	switch {
	case ok && doc != nil:
		d := resolve(doc)
		if d.Dynamic {
			a.opaque(what+" runs a here-document with substitutions", in, text)
			return
		}
		a.script(d.Value, depth+1, append(slices.Clone(via), what+" <<"))
	case fd == "0":
		a.opaque(what+" reads its script from standard input", in, text)
	default:
		a.opaque(what+" reads its script from descriptor "+fd, in, text)
	}
}

// fdPath returns the descriptor a path reads ("0" for /dev/stdin,
// /dev/fd/0, /proc/self/fd/0, and for relative spellings ending so).
func fdPath(p string) (string, bool) {
	c := path.Clean(p)
	if c == "/dev/stdin" || strings.HasSuffix(c, "dev/stdin") {
		return "0", true
	}
	dir, fd := path.Split(c)
	if isDigits(fd) && strings.HasSuffix(dir, "fd/") {
		if n, err := strconv.Atoi(fd); err == nil {
			return strconv.Itoa(n), true
		}
		return fd, true
	}
	return "", false
}

// isDeviceOrProc reports whether p may name a device or a process's file
// (/dev, /proc, or a relative path that reaches them).
func isDeviceOrProc(p string) bool {
	c := path.Clean(p)
	for strings.HasPrefix(c, "../") {
		c = c[3:]
	}
	c = strings.TrimPrefix(c, "/")
	return c == "dev" || c == "proc" || strings.HasPrefix(c, "dev/") || strings.HasPrefix(c, "proc/")
}

// inputs maps each descriptor a statement's redirections give input to
// ("0" for stdin) to its literal here-document or here-string, or to nil
// when it comes from elsewhere (a file, a descriptor, a process
// substitution).
func inputs(rs []*syntax.Redirect) map[string]*syntax.Word {
	m := map[string]*syntax.Word{}
	for _, r := range rs {
		fd := "0"
		if r.N != nil {
			fd = r.N.Value
		}
		switch r.Op {
		case syntax.Hdoc, syntax.DashHdoc:
			m[fd] = r.Hdoc
		case syntax.WordHdoc:
			m[fd] = r.Word
		case syntax.RdrIn, syntax.RdrInOut, syntax.DplIn:
			m[fd] = nil
		case syntax.RdrAll, syntax.AppAll, syntax.RdrAllClob, syntax.AppAllClob:
		default:
			if r.N != nil {
				delete(m, fd) // an output redirection of that descriptor
			}
		}
	}
	return m
}

// evaluatedIndex reports whether an array subscript is evaluated as
// arithmetic that may name variables (whose values bash evaluates in turn,
// array indices and their command substitutions included): any but a
// number, @ or *.
func evaluatedIndex(ix syntax.ArithmExpr) bool {
	if ix == nil {
		return false
	}
	if w, ok := ix.(*syntax.Word); ok {
		if l := w.Lit(); l == "@" || l == "*" || isDigits(l) {
			return false
		}
	}
	return true
}

// nodeCode checks the nodes of a script that make bash run strings as code:
// ${!name}, ${name@P}, declare arguments and namerefs, assignments to
// BASH_ENV, ENV and the prompts, [[ -v name ]]; arithmetic comparisons in
// [[ ]] count as arithmetic evaluation.
func (a *analyzer) nodeCode(n syntax.Node, src string, via []string) {
	switch x := n.(type) {
	case *syntax.Word:
		// A command substitution spelled across quotes ('a[$'"(rm v)]")
		// or with $'\x24' is text that holds one all the same.
		// (match: the literal parts, each dynamic one a 0 byte.)
		if v := resolve(x).match; !a.cmdText && (strings.Contains(v, "$(") || strings.Contains(v, "`")) {
			a.cmdText = true
		}
	case *syntax.ParamExp:
		if evaluatedIndex(x.Index) {
			a.arith = true // ${a[$k]}: an indexed array's subscript is arithmetic
		}
		switch {
		case x.Excl && x.Names == 0 && x.Index == nil:
			a.opaque("${!name} evaluates a variable name only known when the script runs", via, nodeText(src, x))
		case x.Exp != nil && x.Exp.Op == syntax.OtherParamOps && wordLit(x.Exp.Word) == "P":
			a.opaque("${name@P} runs the command substitutions in a value", via, nodeText(src, x))
		}
	case *syntax.DeclClause:
		nameref := x.Variant != nil && x.Variant.Value == "nameref"
		for _, as := range x.Args {
			if l := wordLit(as.Value); as.Naked && as.Name == nil && (strings.HasPrefix(l, "-") || strings.HasPrefix(l, "+")) {
				nameref = nameref || strings.HasPrefix(l, "-") && strings.Contains(l, "n")
			}
		}
		for _, as := range x.Args {
			switch {
			case as.Naked && as.Name == nil:
				w := resolve(as.Value)
				if strings.HasPrefix(w.Value, "-") || strings.HasPrefix(w.Value, "+") {
					continue
				}
				if a.declared(w, nameref) {
					a.opaque(nameAsCode, via, nodeText(src, x))
					return
				}
			case nameref && as.Value != nil && !isSafeName(resolve(as.Value)):
				a.opaque(nameAsCode, via, nodeText(src, x))
				return
			}
		}
	case *syntax.Assign:
		if evaluatedIndex(x.Index) {
			a.arith = true // a[$k]=1
		}
		if x.Name != nil && commandTable(x.Name.Value) {
			a.opaque(commandTableReason, via, nodeText(src, x))
		} else if x.Name != nil && x.Value != nil && specialValueUnsafe(x.Name.Value, resolve(x.Value)) {
			a.opaque(specialReason(x.Name.Value), via, nodeText(src, x))
		}
	case *syntax.WordIter:
		if x.Name != nil && commandTable(x.Name.Value) { // for BASH_CMDS in /bin/rm; do 0 x; done
			a.opaque(commandTableReason, via, nodeText(src, x))
		}
	case *syntax.UnaryTest:
		if w, ok := x.X.(*syntax.Word); ok && (x.Op == syntax.TsVarSet || x.Op == syntax.TsRefVar) && !isSafeName(resolve(w)) {
			a.opaque(nameAsCode, via, nodeText(src, x))
		}
	case *syntax.BinaryTest:
		switch x.Op {
		case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
			a.arith = true
		}
	}
}
