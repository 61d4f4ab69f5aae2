package declarative

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ActionType says what an [Action] does (seed 000, "Actions").
type ActionType uint8

// The action types.
const (
	// ActionLog writes a message at INFO, prefixed "[HOOK] ".
	ActionLog ActionType = iota + 1
	// ActionCommand runs a command (sh -c, or an argv without a shell).
	ActionCommand
)

// String returns "log" or "command", the YAML spelling.
func (t ActionType) String() string {
	switch t {
	case ActionLog:
		return "log"
	case ActionCommand:
		return "command"
	}
	return fmt.Sprintf("ActionType(%d)", uint8(t))
}

// parseActionType accepts "log" and "command" in any letter case (seed 000:
// "Action types are log and command, in any case").
func parseActionType(s string) (ActionType, error) {
	switch {
	case strings.EqualFold(s, "log"):
		return ActionLog, nil
	case strings.EqualFold(s, "command"):
		return ActionCommand, nil
	}
	return 0, fmt.Errorf("unknown action type %q (want log or command)", s)
}

// Command timeouts. A command action waits Timeout (defaultTimeout when zero)
// and then kills the command's whole process group (seed 000: "It waits for up
// to 30 seconds and then kills the command").
const (
	defaultTimeout = 30 * time.Second
	// minTimeout and maxTimeout bound Action.Timeout (inclusive); a value
	// outside them skips the hook with a warning.
	minTimeout = time.Millisecond
	maxTimeout = 10 * time.Minute
)

// Action is what a hook does. Build one with [Log], [Command] or [Argv].
// Message, Command and the elements of Argv are templates (see [Expand]).
type Action struct {
	// Type is ActionLog or ActionCommand.
	Type ActionType
	// Message is the log line of a log action; required for ActionLog.
	Message string
	// Command is run with sh -c. A command action has exactly one of Command
	// and Argv.
	Command string
	// Argv is a program and its arguments, run without a shell; each element is
	// expanded on its own, so no value can become shell syntax. The program is
	// looked up in PATH when it has no slash.
	Argv []string
	// Timeout bounds a command action; 0 means 30 s (seed 000). Otherwise it
	// must lie between 1 ms and 10 minutes, inclusive: a hook with another
	// timeout is skipped with a warning. Log actions have none.
	Timeout time.Duration
}

// Log returns a log action (seed 000 HookAction.log).
func Log(message string) Action { return Action{Type: ActionLog, Message: message} }

// Command returns a command action run with sh -c (seed 000
// HookAction.command). Substituted values are not quoted: prefer the
// TOLLGATE_* environment variables, stdin or [Argv] for values that come from
// the model or from an error.
func Command(command string) Action { return Action{Type: ActionCommand, Command: command} }

// Argv returns a command action that runs program with args and no shell;
// each element is expanded on its own.
func Argv(program string, args ...string) Action {
	return Action{Type: ActionCommand, Argv: append([]string{program}, args...)}
}

// withTimeout returns a copy of a with Timeout set to d.
func (a Action) withTimeout(d time.Duration) Action {
	a.Timeout = d
	return a
}

// describe says what the action does in one line, e.g. `log "${tool}
// starting"` or `command "echo hi" timeout=5s`.
func (a Action) describe() string {
	var b strings.Builder
	b.WriteString(a.Type.String())
	switch a.Type {
	case ActionLog:
		b.WriteString(" " + strconv.Quote(a.Message))
	case ActionCommand:
		if a.Argv != nil {
			b.WriteString(" argv[")
			for i, s := range a.Argv {
				if i > 0 {
					b.WriteString(" ")
				}
				b.WriteString(strconv.Quote(s))
			}
			b.WriteString("]")
		} else {
			b.WriteString(" " + strconv.Quote(a.Command))
		}
		if a.Timeout != 0 {
			b.WriteString(" timeout=" + a.Timeout.String())
		}
	}
	return b.String()
}

// errInvalidAction is wrapped by the error [Action.validate] returns.
var errInvalidAction = errors.New("invalid hook action")

// validate reports whether a can run: a known type, a message for a log
// action, exactly one of a non-empty Command or Argv (with a non-empty
// program) for a command action, no field of the other type, and a timeout in
// bounds. The error wraps [errInvalidAction]; registries skip such hooks.
func (a Action) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", errInvalidAction, fmt.Sprintf(format, args...))
	}
	switch a.Type {
	case ActionLog:
		if a.Message == "" {
			return bad("a log action needs message")
		}
		if a.Command != "" || a.Argv != nil || a.Timeout != 0 {
			return bad("a log action takes only message (command, argv and timeout are for command actions)")
		}
	case ActionCommand:
		if a.Message != "" {
			return bad("a command action takes no message")
		}
		switch {
		case a.Command == "" && a.Argv == nil:
			return bad("a command action needs command or argv")
		case a.Command != "" && a.Argv != nil:
			return bad("a command action takes command or argv, not both")
		case a.Argv != nil && (len(a.Argv) == 0 || a.Argv[0] == ""):
			return bad("argv needs a program as its first element")
		}
		if a.Timeout != 0 && (a.Timeout < minTimeout || a.Timeout > maxTimeout) {
			return bad("timeout %s is out of bounds (%s to %s)", a.Timeout, minTimeout, maxTimeout)
		}
	default:
		return bad("unknown action type %d (want ActionLog or ActionCommand)", a.Type)
	}
	return nil
}

// timeout returns the effective timeout of a command action.
func (a Action) timeout() time.Duration {
	if a.Timeout == 0 {
		return defaultTimeout
	}
	return a.Timeout
}
