// Package configfile is what a program sees of a configuration file that
// does not load: every problem of the file as FILE:LINE:COL: field:
// message, the form compilers use and editors jump to.
//
// tollgate reads several kinds of configuration file: server.yaml and its
// tokens file, `tollgate worker`'s file, policies, seed 000's hooks YAML,
// mcp.json and the scripts of model/scripted. A file with errors is refused
// with an [*Error] listing every [Problem] found; test for it with
// errors.As (a single problem is found the same way, as a *Problem):
//
//	var ce *configfile.Error
//	if errors.As(err, &ce) {
//		for _, p := range ce.Problems { ... p.Line, p.Field, p.Message ... }
//	}
//
// Hooks files (seed 000's YAML, Claude Code's settings.json), whose bad
// entries are skipped rather than refused, list their problems as
// diagnostics that embed a Problem and say what was skipped.
package configfile

import (
	"fmt"
	"strings"
)

// Severity says whether a [Problem] stops its file from loading.
type Severity string

// The severities of a [Problem]. A problem without one is an error.
const (
	// SeverityError: the file does not load.
	SeverityError Severity = "error"
	// SeverityWarning: the file loads, but probably not as meant.
	SeverityWarning Severity = "warning"
)

// Problem is one finding about a configuration file: where it is (Line and
// Col count from 1, Col in bytes; both 0 when the problem concerns the whole
// file), which field it is about, in the file's own terms
// ("agents.payer.model", "mcpServers.fs.timeout"; "" when none), and what is
// wrong, with what to write instead when that is known ("unknown key
// \"modle\"; did you mean \"model\"?").
type Problem struct {
	File     string   `json:"file"`
	Line     int      `json:"line"`
	Col      int      `json:"col"`
	Severity Severity `json:"severity,omitempty"`
	Field    string   `json:"field,omitempty"`
	Message  string   `json:"message"`
}

// Error renders p as "FILE:LINE:COL: SEVERITY: FIELD: MESSAGE", leaving out
// the parts that are unknown or empty.
func (p Problem) Error() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", p.Line, p.Col)
	}
	for _, s := range []string{string(p.Severity), p.Field} {
		if s == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(": ")
		}
		b.WriteString(s)
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// As lets errors.As find a problem with a Problem target as well as a
// *Problem one: it copies p into target when target is a *Problem.
func (p *Problem) As(target any) bool {
	t, ok := target.(*Problem)
	if ok {
		*t = *p
	}
	return ok
}

// Error is a configuration file refused for its problems: Problems lists
// every error found, in the order of the file.
type Error struct {
	Problems []Problem
}

// Error lists the problems, one a line.
func (e *Error) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the problems, each a *Problem, as errors.Join's errors
// are: a program that prints one error a line, or finds the first
// [*Problem] with errors.As, can do so without parsing Error.
func (e *Error) Unwrap() []error {
	errs := make([]error, len(e.Problems))
	for i := range e.Problems {
		errs[i] = &e.Problems[i]
	}
	return errs
}
