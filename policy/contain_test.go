package policy

import (
	"github.com/tollgate-dev/tollgate/approval"
	"testing"
)

// containPolicy denies rm at full autonomy: every spelling below must not be
// allowed.
const containPolicy = `
autonomy: full_auto
rules:
  - id: no-rm
    tool: bash
    command: {program: rm}
    decision: deny
    reason: no rm
`

// env -S runs the command its string names: a rule on rm holds for every
// spelling of it (the joined ones dropped the word after them).
func TestEnvSplitStringIsTheCommandItRuns(t *testing.T) {
	p := mustParse(t, containPolicy)
	for _, cmd := range []string{
		"env -Snice rm -v victim",
		"env -Srm victim",
		"env -S rm victim",
		"env -S'rm -f' victim",
		"env --split-string=nice rm victim",
		"env --split-string 'rm victim'",
		"env --sp=rm victim",
		"env -iS rm victim",
		"env -S'-i rm' victim",
		"env --block-signal rm victim",
	} {
		ev := p.Evaluate(bashCall(cmd))
		if ev.Verdict.Decision != approval.Deny || ev.Verdict.By.String() != "rule:no-rm" {
			t.Errorf("%q: %s by %s (%s), want deny by rule:no-rm", cmd, ev.Verdict.Decision, ev.Verdict.By, ev.Verdict.Reason)
		}
	}
}

// A script a shell or source reads from a descriptor is what runs: its
// here-string is analysed, and a descriptor the analysis cannot see is
// unknown code, asked about like eval "$X". Each of these deleted the file
// at full autonomy.
func TestScriptsFromDescriptorsAreAnalysed(t *testing.T) {
	p := mustParse(t, containPolicy)
	for _, tc := range []struct{ cmd, by string }{
		{`bash -s foo <<<"rm v"`, "rule:no-rm"},
		{`bash -s <<<"rm v"`, "rule:no-rm"},
		{`bash /dev/fd/0 <<< "rm v"`, "rule:no-rm"},
		{`bash /dev/stdin <<< "rm v"`, "rule:no-rm"},
		{`bash /proc/self/fd/0 <<< "rm v"`, "rule:no-rm"},
		{`sh ../../../../../dev/stdin <<< "rm v"`, "rule:no-rm"},
		{`bash /dev/fd/3 3<<<"rm v"`, "rule:no-rm"},
		{`bash -c "source /dev/stdin" <<<"rm v"`, "rule:shell-opaque"},
		{`. /dev/stdin <<<"rm v"`, "rule:no-rm"},
		{`source /dev/stdin <<<"rm v"`, "rule:no-rm"},
		{`source <(echo rm v)`, "rule:shell-opaque"},
		{`. <(echo rm v)`, "rule:shell-opaque"},
		{`source /dev/fd/3 3<<<"rm v"`, "rule:no-rm"},
		{`source /dev/fd/3`, "rule:shell-opaque"},
		{`source /proc/1/fd/0`, "rule:shell-opaque"},
		{`source "$F"`, "rule:shell-opaque"},
		{`bash /dev/fd/0 < script.txt`, "rule:shell-opaque"},
		{`bash -s < <(echo rm v)`, "rule:shell-opaque"},
	} {
		ev := p.Evaluate(bashCall(tc.cmd))
		if ev.Verdict.Decision == approval.Allow || ev.Verdict.By.String() != tc.by {
			t.Errorf("%q: %s by %s (%s), want %s", tc.cmd, ev.Verdict.Decision, ev.Verdict.By, ev.Verdict.Reason, tc.by)
		}
	}
	for _, cmd := range []string{"source venv/bin/activate", ". ~/.profile", "bash build.sh", "echo hi | cat"} {
		if ev := p.Evaluate(bashCall(cmd)); ev.Verdict.Decision != approval.Allow {
			t.Errorf("%q: %s by %s (%s), want allow", cmd, ev.Verdict.Decision, ev.Verdict.By, ev.Verdict.Reason)
		}
	}
}

// Bash evaluates strings as code outside eval: a variable name with an
// array index ("a[$(rm v)]") given to printf -v, read, declare, test -v,
// unset, ${!x} or a nameref runs the substitution, as do ${x@P} and a
// BASH_ENV read from a descriptor. Each spelling ran rm at full autonomy;
// each is now unknown code, asked about.
func TestCodeInStringsIsUnknownCode(t *testing.T) {
	p := mustParse(t, containPolicy)
	for _, cmd := range []string{
		`printf -v 'a[$(rm v1)]' 1`,
		`printf -va[\$\(rm\ v1\)] 1`,
		`read 'b[$(rm v2)]' <<< 1`,
		`read -a 'b[$(rm v2)]' <<< 1`,
		`mapfile 'b[$(rm v2)]' <<< 1`,
		`mapfile -C 'rm v2' -c 1 arr <<< 1`,
		`getopts a 'o[$(rm v)]'`,
		`declare 'c[$(rm v3)]=1'`,
		`typeset 'c[$(rm v3)]=1'`,
		`local "c[\$(rm v3)]"=1`,
		`export 'c[$(rm v3)]=1'`,
		`builtin declare 'c[$(rm v3)]=1'`,
		`declare "$n=1"`,
		`test -v 'a[$(rm x)]'`,
		`[ -v 'a[$(rm x)]' ]`,
		`[[ -v 'a[$(rm x)]' ]]`,
		`unset 'a[$(rm x)]'`,
		`unset -v "a[\$(rm x)]"`,
		`x='a[$(rm v)]'; echo ${!x}`,
		`x='a[$(rm v)]'; declare -n r=$x; echo $r`,
		`declare -n r='a[$(rm v)]'; echo $r`,
		`local -n r='a[$(rm v)]'`,
		`x='$(rm v)'; echo ${x@P}`,
		`BASH_ENV=<(echo rm v) bash -c true`,
		`export BASH_ENV=/dev/stdin; bash -c true <<<"rm v"`,
		`env BASH_ENV=/dev/fd/0 bash -c true <<<"rm v"`,
		`PS4='$(rm v)' bash -xc true`,
		`x='a[$(rm v)]'; [[ $x -eq 0 ]]`,
		`wait -p 'a[$(rm v)]'`,
		`k='b[$(rm v)]'; a[$k]=1`,
		`k='b[$'"(rm v)]"; a[$k]=1`,
		`k=$'b[$(rm v)]'; (( a[k] ))`,
		`k='b[$(rm v)]'; echo ${a[$k]}`,
		`k='b[$(rm v)]'; echo ${a[k]}`,
	} {
		ev := p.Evaluate(bashCall(cmd))
		if ev.Verdict.Decision == approval.Allow || (ev.Verdict.By.String() != "rule:shell-opaque" && ev.Verdict.By.String() != "rule:no-rm") {
			t.Errorf("%q: %s by %s (%s), want ask by rule:shell-opaque", cmd, ev.Verdict.Decision, ev.Verdict.By, ev.Verdict.Reason)
		}
	}
	for _, cmd := range []string{
		"printf -v out '%s' x", "read -r line <<< x", "read -p 'name? ' name", "read -a arr <<< x", "declare -a arr=(1 2)", "local x=1", "export PATH=/usr/bin",
		"unset x y", "test -v HOME", "[[ -v arr[0] ]]", "echo ${!arr[@]} ${!BASH*}", "declare -n r=arr", "mapfile -t lines < f",
		"BASH_ENV=/etc/profile bash -c true", "PS4='+ ' bash -xc true", "a[0]=1; echo ${a[@]} ${a[1]}", "i=1; a[$i]=x",
	} {
		if ev := p.Evaluate(bashCall(cmd)); ev.Verdict.Decision != approval.Allow {
			t.Errorf("%q: %s by %s (%s), want allow", cmd, ev.Verdict.Decision, ev.Verdict.By, ev.Verdict.Reason)
		}
	}
}
