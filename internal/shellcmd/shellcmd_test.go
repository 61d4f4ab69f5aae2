package shellcmd

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// programs lists each command as "via>via>program", or "?" for an opaque one,
// or "" for redirections without a program.
func programs(a *Analysis) []string {
	var out []string
	for _, c := range a.Commands {
		p := c.Program
		if c.Opaque != "" {
			p = "?"
		}
		out = append(out, strings.Join(append(append([]string{}, c.Via...), p), ">"))
	}
	return out
}

func TestAnalyzePrograms(t *testing.T) {
	for _, tc := range []struct {
		script string
		want   []string
	}{
		{"rm -rf x", []string{"rm"}},
		{"/bin/rm -rf x", []string{"rm"}},
		{"/usr/bin/../bin/rm x", []string{"rm"}},
		{`\rm x`, []string{"rm"}},
		{`"rm" x`, []string{"rm"}},
		{`'r'm x`, []string{"rm"}},
		{`r""m x`, []string{"rm"}},
		{`r\m x`, []string{"rm"}},
		{`$'\x72m' x`, []string{"rm"}},
		{"(rm x)", []string{"rm"}},
		{"{ rm x; }", []string{"rm"}},
		{"echo $(rm x)", []string{"echo", "rm"}},
		{"echo `rm x`", []string{"echo", "rm"}},
		{"cat <(rm x)", []string{"cat", "rm"}},
		{"ls && rm x || true; echo a | rm b &", []string{"ls", "rm", "true", "echo", "rm"}},
		{"if true; then rm x; fi; while false; do rm y; done; for f in a; do rm $f; done", []string{"true", "rm", "false", "rm", "rm"}},
		{"f() { rm x; }; f", []string{"rm", "f"}},
		{"[[ -n $(rm x) ]]", []string{"rm"}},
		{"export A=$(rm x)", []string{"rm"}},
		{"A=$(rm x) ls", []string{"ls", "rm"}},
		{`sh -c "rm x"`, []string{"sh", "sh -c>rm"}},
		{`bash -ec 'ls; rm x'`, []string{"bash", "bash -c>ls", "bash -c>rm"}},
		{`bash -o pipefail -c 'rm x'`, []string{"bash", "bash -c>rm"}},
		{`sh -c "sh -c 'rm x'"`, []string{"sh", "sh -c>sh", "sh -c>sh -c>rm"}},
		{"bash script.sh", []string{"bash"}},
		{"echo rm x | sh", []string{"echo", "sh", "sh>?"}},
		{"bash <<'EOF'\nrm x\nEOF", []string{"bash", "bash <<>rm"}},
		{"bash <<< 'rm x'", []string{"bash", "bash <<>rm"}},
		{"bash <<EOF\n$X\nEOF", []string{"bash", "bash>?"}},
		{`eval "rm x"`, []string{"eval", "eval>rm"}},
		{`eval rm x`, []string{"eval", "eval>rm"}},
		{`eval "$CMD"`, []string{"eval", "eval>?"}},
		{"env rm x", []string{"env", "env>rm"}},
		{"env -i A=1 -u B rm x", []string{"env", "env>rm"}},
		{"env -S 'rm -f' x", []string{"env", "env -S>env>rm"}},
		{"sudo -u root rm x", []string{"sudo", "sudo>rm"}},
		{"sudo $OPTS rm x", []string{"sudo", "sudo>?"}},
		{"nohup rm x &", []string{"nohup", "nohup>rm"}},
		{"timeout -s KILL 5 rm x", []string{"timeout", "timeout>rm"}},
		{"timeout --kill-after=1 5s rm x", []string{"timeout", "timeout>rm"}},
		{"nice -n 5 ionice -c 3 rm x", []string{"nice", "nice>ionice", "nice>ionice>rm"}},
		{"command rm x", []string{"command", "command>rm"}},
		{"command -v rm", []string{"command"}},
		{"exec rm x", []string{"exec", "exec>rm"}},
		{"time rm x", []string{"rm"}}, // time is a keyword of bash
		{"xargs rm", []string{"xargs", "xargs>rm"}},
		{"xargs -0 -n 1 rm -f", []string{"xargs", "xargs>rm"}},
		{"xargs", []string{"xargs", "xargs>echo"}},
		{"xargs sh -c 'rm $1' _", []string{"xargs", "xargs>sh", "xargs>sh -c>rm"}},
		{"find . -delete", []string{"find", "find -delete>rm"}},
		{`find . -name '*.o' -exec rm -f {} \;`, []string{"find", "find -exec>rm"}},
		{`find . -execdir sh -c 'rm "$0"' {} +`, []string{"find", "find -execdir>sh", "find -execdir>sh -c>rm"}},
		{"watch rm x", []string{"watch", "watch>rm"}},
		{"su -c 'rm x' root", []string{"su", "su -c>rm"}},
		{"trap 'rm x' EXIT", []string{"trap", "trap>rm"}},
		{"alias x='rm -rf'", []string{"alias", "alias>rm"}},
		{"busybox rm x", []string{"busybox", "busybox>rm"}},
		{"parallel rm ::: a b", []string{"parallel", "parallel>rm"}},
		{"flock /tmp/l rm x", []string{"flock", "flock>rm"}},
		{"flock /tmp/l -c 'rm x'", []string{"flock", "flock -c>rm"}},
		{"$X a", []string{"?"}},
		{"$(echo rm) a", []string{"?", "echo"}},
		{"r{m,x} a", []string{"?"}},
		{"/bin/r? a", []string{"?"}},
		{"~/bin/rm a", []string{"?"}},
		{"echo 'unterminated", []string{"?"}},
		{"> /etc/passwd", []string{""}},
		{"(echo x) > /etc/passwd", []string{"", "echo"}},
		{"X='a[$(rm y)]'; echo $((X))", []string{"echo", "?"}},
		{"echo $((1+2))", []string{"echo"}},
	} {
		got := programs(Analyze(tc.script))
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("Analyze(%q) (-want +got):\n%s", tc.script, diff)
		}
	}
}

func TestAnalyzeLimits(t *testing.T) {
	long := strings.Repeat("a", MaxScriptSize+1)
	if got := programs(Analyze(long)); !cmp.Equal(got, []string{"?"}) {
		t.Errorf("a script over the size limit: %v, want one opaque command", got)
	}
	deep := strings.Repeat("eval ", MaxDepth+2) + "rm x"
	a := Analyze(deep)
	last := a.Commands[len(a.Commands)-1]
	if last.Opaque == "" || !strings.Contains(last.Opaque, "nest") {
		t.Errorf("scripts nested %d deep: last command %+v, want opaque (nesting)", MaxDepth+2, last)
	}
	many := strings.Repeat("true;", MaxCommands+10) + "rm x"
	a = Analyze(many)
	if n := len(a.Commands); n != MaxCommands+1 || a.Commands[n-1].Opaque == "" {
		t.Errorf("%d commands: got %d, last %+v; want %d with an opaque last", MaxCommands+11, n, a.Commands[n-1], MaxCommands+1)
	}
}

func TestRedirects(t *testing.T) {
	a := Analyze("echo a > /etc/x 2>&1 >> log &> all <in >&2 >& file; cd /tmp")
	var got []string
	for _, r := range a.Commands[0].Redirects {
		w := "r"
		if r.Write {
			w = "w"
		}
		got = append(got, r.Op+r.Target.Value+":"+w)
	}
	want := []string{">/etc/x:w", ">&1:r", ">>log:w", "&>all:w", "<in:r", ">&2:r", ">&file:w"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("redirects (-want +got):\n%s", diff)
	}
	if !a.ChangesDir {
		t.Error("ChangesDir is false for a script with cd")
	}
}

func TestPattern(t *testing.T) {
	for _, tc := range []struct {
		pat, script string
		want        Tri
	}{
		{"git push *", "git push origin main", Yes},
		{"git push *", "git push", Yes},
		{"git push:*", "git push -f", Yes},
		{"git push *", "git pushy", No},
		{"git push *", "/usr/bin/git push x", Yes},
		{"git push *", "git status", No},
		{"git push *", "git $SUB origin", Maybe},
		{"git push *", "git pu$X", Maybe},
		{"git push *", "git push $REMOTE", Yes},
		{"git push *", "$G push", Maybe},
		{"npm run test *", "npm run test -- --watch", Yes},
		{"npm run test:*", "npm run test", Yes},
		{"npm run test", "npm run test", Yes},
		{"npm run test", "npm run test x", No},
		{"ls*", "lsof", Yes},
		{"ls *", "lsof", No},
		{"rm *", "RM -rf x", Yes},
		{"git * main", "git push origin main", Yes},
		{"git * main", "git push origin dev", No},
		{"rm", "> x", No},
	} {
		p, err := CompilePattern(tc.pat)
		if err != nil {
			t.Fatal(err)
		}
		c := Analyze(tc.script).Commands[0]
		if got := p.Match(&c); got != tc.want {
			t.Errorf("pattern %q on %q: %v, want %v", tc.pat, tc.script, got, tc.want)
		}
	}
	for _, bad := range []string{"", "  ", "a\x00b", strings.Repeat("a", MaxPatternSize+1)} {
		if _, err := CompilePattern(bad); err == nil {
			t.Errorf("CompilePattern(%q): no error", bad)
		}
	}
}

func TestHasFlags(t *testing.T) {
	for _, tc := range []struct {
		flags  []string
		script string
		want   Tri
	}{
		{[]string{"-rf"}, "rm -rf x", Yes},
		{[]string{"-rf"}, "rm -r -f x", Yes},
		{[]string{"-rf"}, "rm -fvr x", Yes},
		{[]string{"-rf"}, "rm -r x", No},
		{[]string{"-rf"}, "rm -r $F", Maybe},
		{[]string{"-rf"}, "rm -- -rf", No},
		{[]string{"--force"}, "git push --force", Yes},
		{[]string{"--force"}, "git push --force=true", Yes},
		{[]string{"--force"}, "git push --forced", No},
		{[]string{"-delete"}, "find . -delete", Yes},
	} {
		c := Analyze(tc.script).Commands[0]
		if got := c.HasFlags(tc.flags); got != tc.want {
			t.Errorf("HasFlags(%q) on %q: %v, want %v", tc.flags, tc.script, got, tc.want)
		}
	}
}

// FuzzAnalyze checks that no script crashes the analysis or breaks its
// invariants: every command is opaque, has a program (a base name), or is
// only redirections; the number of commands is bounded.
func FuzzAnalyze(f *testing.F) {
	for _, s := range []string{"rm -rf x", "sh -c 'rm x'", "find . -delete", "xargs rm", "$X", "eval \"$(cat)\"", "a | b && c; (d) > e", "bash <<E\nrm\nE"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a := Analyze(s)
		if len(a.Commands) > MaxCommands+1 {
			t.Fatalf("%d commands", len(a.Commands))
		}
		for _, c := range a.Commands {
			switch {
			case c.Opaque != "":
				if c.Program != "" {
					t.Fatalf("opaque command with program %q", c.Program)
				}
			case c.Program != "":
				if strings.Contains(c.Program, "/") && c.Program != c.Name {
					t.Fatalf("program %q is not a base name", c.Program)
				}
			case len(c.Redirects) == 0:
				t.Fatalf("command with neither program, opaque reason nor redirections: %+v", c)
			}
			p, _ := CompilePattern("rm *")
			_ = p.Match(&c)
			_ = c.HasFlags([]string{"-rf", "--force"})
		}
	})
}

// The launchers of issue 23 (each allowed a rule on rm before) and the
// dynamic loader run their command; those that run a shell on their input
// are opaque.
func TestAnalyzeLaunchers(t *testing.T) {
	for _, tc := range []struct {
		script string
		want   []string
	}{
		{"prlimit --nofile=100 rm v", []string{"prlimit", "prlimit>rm"}},
		{"prlimit -n100 --pid 1", []string{"prlimit"}},
		{"prlimit -o RESOURCE rm v", []string{"prlimit", "prlimit>rm"}},
		{"nsenter -t 1 -m -u rm v", []string{"nsenter", "nsenter>rm"}},
		{"nsenter -m/proc/1/ns/mnt --wd=/ rm v", []string{"nsenter", "nsenter>rm"}},
		{"nsenter -U/proc/1/ns/ust rm v", []string{"nsenter", "nsenter>rm"}},
		{"prlimit -nunlimited:4096 -tsoft rm v", []string{"prlimit", "prlimit>rm"}},
		{"nsenter -t 1 -m", []string{"nsenter", "nsenter>?"}},
		{"setpriv --reuid 0 --inh-caps=-all rm v", []string{"setpriv", "setpriv>rm"}},
		{"strace -f -o /dev/null -e trace=none rm v", []string{"strace", "strace>rm"}},
		{"strace -p 1", []string{"strace"}},
		{"fakeroot -- rm v", []string{"fakeroot", "fakeroot>rm"}},
		{"fakeroot", []string{"fakeroot", "fakeroot>?"}},
		{`script -qc "rm v" /dev/null`, []string{"script", "script -c>rm"}},
		{`script -q -c'rm v'`, []string{"script", "script -c>rm"}},
		{`script --command="ls; rm v" log`, []string{"script", "script -c>ls", "script -c>rm"}},
		{`script -c "$X"`, []string{"script", "script -c>?"}},
		{"script log", []string{"script", "script>?"}},
		{"systemd-run --user --pipe --wait -p Nice=5 rm v", []string{"systemd-run", "systemd-run>rm"}},
		{"systemd-run -S", []string{"systemd-run", "systemd-run>?"}},
		{"toybox rm v", []string{"toybox", "toybox>rm"}},
		{"toybox sh -c 'rm v'", []string{"toybox", "sh", "sh -c>rm"}},
		{"/lib64/ld-linux-x86-64.so.2 --library-path /lib /bin/rm v", []string{"ld-linux-x86-64.so.2", "ld-linux-x86-64.so.2>rm"}},
		{"setpriv env rm v", []string{"setpriv", "setpriv>env", "setpriv>env>rm"}},
	} {
		got := programs(Analyze(tc.script))
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("Analyze(%q) (-want +got):\n%s", tc.script, diff)
		}
	}
}

// Bash's command tables change what a command name runs: hash -p, an
// assignment to BASH_CMDS or BASH_ALIASES (in any of bash's ways of
// assigning), and enable -f (a builtin from a shared object). A script that
// uses them is opaque, since "foo x" may then run rm.
func TestCommandTablesOpaque(t *testing.T) {
	for _, s := range []string{
		"hash -p /bin/rm foo; foo x",
		"hash -rp/bin/rm foo; foo x",
		"builtin hash -p /bin/rm foo; foo x",
		"enable -f ./x.so foo; foo x",
		"BASH_CMDS[foo]=/bin/rm; foo x",
		"BASH_CMDS=/bin/rm; 0 x",
		"BASH_CMDS+=([foo]=/bin/rm); foo x",
		"declare -A BASH_CMDS=([foo]=/bin/rm); foo x",
		"builtin declare -A BASH_CMDS=([foo]=/bin/rm); foo x",
		"for BASH_CMDS in /bin/rm; do 0 x; done",
		"read BASH_CMDS <<< /bin/rm; 0 x",
		"printf -v BASH_CMDS /bin/rm; 0 x",
		"declare -n r=BASH_CMDS; r[foo]=/bin/rm; foo x",
		"shopt -s expand_aliases; BASH_ALIASES[foo]=rm\nfoo x",
	} {
		if got := programs(Analyze(s)); !slices.ContainsFunc(got, opaqueEntry) {
			t.Errorf("%q: %v, want an opaque command", s, got)
		}
	}
	for _, s := range []string{"hash ls", "hash -r", "enable -n kill", "BASH_VERSION_X=1"} {
		if got := programs(Analyze(s)); slices.ContainsFunc(got, opaqueEntry) {
			t.Errorf("%q: %v, want no opaque command", s, got)
		}
	}
}

// opaqueEntry reports whether an entry of programs is an opaque command.
func opaqueEntry(p string) bool { return strings.HasSuffix(p, "?") }

// compgen -C runs a command, compgen -W expands its word list again
// (command substitutions included), and fc runs commands of the history
// through an editor that is a command line: opaque. Listing is not.
func TestCompletionAndHistoryOpaque(t *testing.T) {
	for _, s := range []string{
		"compgen -C 'rm x' x",
		"compgen -W '$(rm x)' x",
		"compgen -W\"`rm x`\" x",
		`compgen -W "$v" x`,
		"complete -C 'rm x' ls",
		"set -o history; history -s echo hi; fc -e 'rm x;:' -1",
		"FCEDIT='rm x;:' fc -1",
		"fc -s",
	} {
		if got := programs(Analyze(s)); !slices.ContainsFunc(got, opaqueEntry) {
			t.Errorf("%q: %v, want an opaque command", s, got)
		}
	}
	for _, s := range []string{"compgen -W 'a b' x", "compgen -A file -f x", "fc -l", "fc -ln -5", "complete -F f ls"} {
		if got := programs(Analyze(s)); slices.ContainsFunc(got, opaqueEntry) {
			t.Errorf("%q: %v, want no opaque command", s, got)
		}
	}
}

// su's command in every spelling (a cluster, attached, --session-command),
// runuser in su's form, setarch and its architecture links, and sg run the
// command they are given.
func TestSuSetarchSg(t *testing.T) {
	for _, tc := range []struct {
		script string
		want   []string
	}{
		{"su -lc 'rm x' root", []string{"su", "su -c>rm"}},
		{"su -c'rm x' root", []string{"su", "su -c>rm"}},
		{"su --session-command='rm x' root", []string{"su", "su -c>rm"}},
		{"su -s /bin/sh -c 'rm x'", []string{"su", "su -c>rm"}},
		{"runuser root -c 'rm x'", []string{"runuser", "runuser -c>rm"}},
		{"runuser -l root -c 'rm x'", []string{"runuser", "runuser -c>rm"}},
		{"runuser -u root -- rm x", []string{"runuser", "runuser>rm"}},
		{"setarch x86_64 -R rm x", []string{"setarch", "setarch>rm"}},
		{"x86_64 rm x", []string{"x86_64", "x86_64>rm"}},
		{"linux64 -R rm x", []string{"linux64", "linux64>rm"}},
		{"setarch x86_64", []string{"setarch", "setarch>?"}},
		{"sg wheel -c 'rm x'", []string{"sg", "sg -c>rm"}},
		{"sg wheel 'rm x'", []string{"sg", "sg -c>rm"}},
		{"sg wheel", []string{"sg", "sg>?"}},
	} {
		if got := programs(Analyze(tc.script)); !slices.Equal(got, tc.want) {
			t.Errorf("%q: %v, want %v", tc.script, got, tc.want)
		}
	}
}

// env takes every word with "=" before the command as an assignment, and
// one of BASH_FUNC_NAME%% defines a function that the bash it starts runs:
// opaque.
func TestEnvExportedFunction(t *testing.T) {
	for _, tc := range []struct {
		script string
		want   []string
	}{
		{"env 'BASH_FUNC_x%%=() { rm y; }' bash -c x", []string{"env", "env>?"}},
		{"env -i 'BASH_FUNC_x%%=() { rm y; }' bash -c x", []string{"env", "env>?"}},
		{"env a/b=c rm x", []string{"env", "env>rm"}},
	} {
		if got := programs(Analyze(tc.script)); !slices.Equal(got, tc.want) {
			t.Errorf("%q: %v, want %v", tc.script, got, tc.want)
		}
	}
}
