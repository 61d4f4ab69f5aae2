package shellcmd

import (
	"slices"
	"strings"
)

// launcher describes a command that runs another beyond [wrappers]: one
// whose short options may take an optional attached value (nsenter -m,
// script -t), that runs a script string (script -c), that runs a shell on
// its standard input without a command (nsenter, fakeroot), or that runs
// no command from its operands (script FILE).
type launcher struct {
	flags, valued string   // short options without and with a value
	optional      string   // short options whose value, if any, is the rest of the word
	longValued    []string // long options with a value (--name VALUE or --name=VALUE)
	// command is the short option (and longCommand its long form) whose
	// value is a script a shell runs (script -c).
	command     byte
	longCommand string
	// shell are options that make it run an interactive shell (systemd-run
	// -S, script without -c): what the shell reads is unknown.
	shell, longShell string
	// bare, when not empty, is why running it without a command is opaque
	// (it then runs a shell on its standard input).
	bare string
	// noCommand: its operands are files, not a command (script FILE).
	noCommand bool
}

// launchers are prlimit, nsenter, setpriv, strace, fakeroot, script,
// systemd-run and toybox, each with its options as util-linux, strace,
// fakeroot, systemd and toybox define them; the dynamic loader (ld.so) is
// [loaderLauncher].
var launchers = map[string]launcher{
	"prlimit": {flags: "hV", valued: "po", optional: "cdefilmnqrstuvxy", longValued: []string{"--pid", "--output"}},
	"nsenter": {flags: "aFZechV", valued: "tSGW", optional: "muinpCTUrw",
		longValued: []string{"--target", "--setuid", "--setgid", "--wdns"},
		bare:       "nsenter without a program runs a shell on its standard input"},
	"setpriv": {flags: "dVh", longValued: []string{"--inh-caps", "--ambient-caps", "--bounding-set", "--groups", "--ruid", "--euid",
		"--rgid", "--egid", "--reuid", "--regid", "--securebits", "--pdeathsig", "--selinux-label", "--apparmor-profile",
		"--landlock-access", "--landlock-rule"}},
	"strace": {flags: "cCdDfFhiknqrtTvVwxyYzZ", valued: "abeEIoOpPsSuUXA", longValued: []string{"--output", "--trace", "--abbrev",
		"--verbose", "--raw", "--read", "--write", "--fault", "--inject", "--status", "--signal", "--env", "--attach",
		"--trace-path", "--string-limit", "--columns", "--user", "--summary-sort-by", "--const-print-style", "--decode-fds"}},
	"fakeroot": {flags: "uhv", valued: "lisb", longValued: []string{"--lib", "--faked", "--fd-base"},
		bare: "fakeroot without a program runs a shell on its standard input"},
	"script": {flags: "aefqhV", valued: "BEIOmTo", optional: "t", command: 'c', longCommand: "--command",
		longValued: []string{"--log-io", "--echo", "--log-in", "--log-out", "--logging-format", "--log-timing", "--output-limit"},
		bare:       "script without -c runs a shell on its standard input", noCommand: true},
	"systemd-run": {flags: "dtPqGrhV", valued: "upEHM", shell: "S", longShell: "--shell",
		longValued: []string{"--unit", "--property", "--setenv", "--host", "--machine", "--slice", "--description",
			"--service-type", "--uid", "--gid", "--nice", "--working-directory", "--on-active", "--on-boot", "--on-startup",
			"--on-unit-active", "--on-unit-inactive", "--on-calendar", "--path-property", "--socket-property",
			"--timer-property", "--json", "--expand-environment"}},
	"toybox": {},
}

// loaderLauncher is the dynamic loader run as a program
// (ld-linux-x86-64.so.2 [OPTIONS] PROGRAM ARGS): it loads and runs
// PROGRAM.
var loaderLauncher = launcher{longValued: []string{"--library-path", "--inhibit-rpath", "--audit", "--preload", "--argv0",
	"--glibc-hwcaps-prefix", "--glibc-hwcaps-mask"}}

// isLoader reports whether name is the file name of a dynamic loader
// (ld-linux-x86-64.so.2, ld-linux-aarch64.so.1, ld.so, ld64.so.2,
// ld-musl-x86_64.so.1).
func isLoader(name string) bool {
	return name == "ld.so" || strings.HasPrefix(name, "ld-") && strings.Contains(name, ".so") ||
		strings.HasPrefix(name, "ld64.so")
}

// launch reports what a launcher runs, and false when name is none.
func (a *analyzer) launch(name string, args []Word, text string, depth int, via []string, hops int) bool {
	l, ok := launchers[name]
	if !ok && isLoader(name) {
		l, ok = loaderLauncher, true
	}
	if !ok {
		return false
	}
	v := append(slices.Clone(via), name)
	rest, script, shell, ok := l.skip(args)
	switch {
	case !ok:
		a.opaque(name+"'s options are only known when the script runs", v, text)
	case script != nil && script.Dynamic:
		a.opaque(name+" -c runs text that is only known when the script runs", append(slices.Clone(via), name+" -c"), text)
	case script != nil:
		a.script(script.Value, depth+1, append(slices.Clone(via), name+" -c"))
	case shell:
		a.opaque(name+" runs an interactive shell", v, text)
	case len(rest) == 0 || l.noCommand:
		if l.bare != "" {
			a.opaque(l.bare, v, text)
		}
	case name == "toybox" && rest[0].Value == "sh":
		a.command(rest, nil, nil, text, depth, via, hops+1)
	default:
		a.command(rest, nil, nil, text, depth, v, hops+1)
	}
	return true
}

// skip skips the launcher's options and returns the words from its command
// on, the script of its command option (nil without), and whether an
// option makes it run an interactive shell; ok is false when an option
// word is dynamic.
func (l launcher) skip(args []Word) (rest []Word, script *Word, shell, ok bool) {
	i := 0
	for i < len(args) {
		w := args[i]
		v := w.Value
		if w.Dynamic && (w.Literal == "" || strings.HasPrefix(w.Literal, "-")) {
			return nil, nil, false, false
		}
		if v == "--" {
			i++
			break
		}
		if !strings.HasPrefix(v, "-") || v == "-" {
			break
		}
		i++
		if strings.HasPrefix(v, "--") {
			name, val, hasVal := strings.Cut(v, "=")
			switch {
			case l.longCommand != "" && name == l.longCommand && hasVal:
				script = &Word{Value: val, Dynamic: w.Dynamic}
			case l.longCommand != "" && name == l.longCommand && i < len(args):
				script = &args[i]
				i++
			case l.longShell != "" && name == l.longShell:
				shell = true
			case !hasVal && slices.Contains(l.longValued, name):
				i++
			}
			continue
		}
		var s *Word
		s, shell, i = l.cluster(v, w.Dynamic, args, i, shell)
		if s != nil {
			script = s
		}
	}
	return args[min(i, len(args)):], script, shell, true
}

// cluster reads one cluster of short options v (args[i] is the word after
// it) and returns the script of a command option in it, whether it asks for
// an interactive shell, and the index of the next word.
func (l launcher) cluster(v string, dynamic bool, args []Word, i int, shell bool) (*Word, bool, int) {
	for j := 1; j < len(v); j++ {
		c := v[j]
		switch {
		case strings.IndexByte(l.optional, c) >= 0:
			return nil, shell, i
		case l.command != 0 && c == l.command:
			if j < len(v)-1 {
				return &Word{Value: v[j+1:], Dynamic: dynamic}, shell, i
			}
			if i < len(args) {
				return &args[i], shell, i + 1
			}
			return nil, shell, i
		case strings.IndexByte(l.shell, c) >= 0:
			shell = true
		case strings.IndexByte(l.valued, c) >= 0:
			if j == len(v)-1 {
				i++
			}
			return nil, shell, i
		}
	}
	return nil, shell, i
}
