package layer_test

import (
	"encoding/json"
	"testing"

	"github.com/tollgate-dev/tollgate/approval"
)

func bashCall(script string) approval.Call {
	b, _ := json.Marshal(map[string]string{"command": script})
	return approval.Call{Tool: "bash", Args: b}
}

// A remembered command covers the program it names run as the script
// itself runs it: never with assignments before it, by a path, through a
// wrapper, under another case, or after the script changed variables.
func TestAnswerRefusesChangedEnvironment(t *testing.T) {
	l := compile(t,
		propose(t, "git", "bash", `{"command":"git status --short"}`, approval.Allow),
		propose(t, "gotest", "bash", `{"command":"go test ./server"}`, approval.Allow),
	)
	for _, s := range []string{"git status --short", "go test ./...", "go test ./x && git status", `\go test`, "'go' test"} {
		if a := l.Answer(bashCall(s)); a == nil || !a.OK {
			t.Errorf("Answer(%q) = %v, want covered", s, a)
		}
	}
	for _, s := range []string{
		"HOME=. GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0='echo PWNED > pwned; false' git status --short",
		"./go test", "tmp/go test", "/usr/local/go/bin/go test",
		"PATH=. go test", "PATH=.; go test", "PATH=. ; go test ./x",
		"export PATH=.; go test", "declare -x PATH=.; go test", "typeset -x PATH=.; go test",
		"set -a; PATH=.; go test", "set -a && go test", "readonly PATH=.; go test", "local PATH=.; go test",
		"GOFLAGS=-toolexec=./evil go test", "LD_PRELOAD=./x.so go test", "BASH_ENV=./x go test",
		"env PATH=. go test", "env go test", "command go test", "exec go test", "sudo go test",
		"GO test", "Go test ./...", "GIT status",
		"for PATH in .; do go test; done", ": ${PATH:=.}; go test", "source ./x; go test", ". ./x && go test",
		"eval go test", "printf -v PATH .; go test", "$(echo go) test",
	} {
		if a := l.Answer(bashCall(s)); a != nil {
			t.Errorf("Answer(%q) = %+v, want no answer (a person is asked)", s, a)
		}
	}
}
