package configread

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/tollgate-dev/tollgate/configfile"
)

// Pos is a position in a file: Line and Col count from 1 (Col in bytes);
// the zero Pos is "the whole file".
type Pos struct{ Line, Col int }

// Problems collects the problems of one file.
type Problems struct {
	// File names the file in every problem.
	File string
	list []configfile.Problem
}

// Add records an error about field at pos.
func (ps *Problems) Add(pos Pos, field, format string, args ...any) {
	ps.add(pos, "", field, format, args...)
}

// Warn records a warning about field at pos: the file still loads.
func (ps *Problems) Warn(pos Pos, field, format string, args ...any) {
	ps.add(pos, configfile.SeverityWarning, field, format, args...)
}

func (ps *Problems) add(pos Pos, sev configfile.Severity, field, format string, args ...any) {
	ps.list = append(ps.list, configfile.Problem{File: ps.File, Line: pos.Line, Col: pos.Col,
		Severity: sev, Field: field, Message: fmt.Sprintf(format, args...)})
}

// Append records problems found elsewhere (by [CheckKeys], say).
func (ps *Problems) Append(p ...configfile.Problem) { ps.list = append(ps.list, p...) }

// List returns every problem recorded, errors and warnings.
func (ps *Problems) List() []configfile.Problem { return ps.list }

// Failed reports whether an error (not a warning) was recorded.
func (ps *Problems) Failed() bool {
	return slices.ContainsFunc(ps.list, isError)
}

func isError(p configfile.Problem) bool { return p.Severity != configfile.SeverityWarning }

// Sort orders the problems by position, keeping the order of those at one
// position (stable).
func (ps *Problems) Sort() {
	slices.SortStableFunc(ps.list, func(a, b configfile.Problem) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Col, b.Col))
	})
}

// Err returns nil when no error was recorded, else a *configfile.Error
// listing the errors (warnings left out), in the order recorded.
func (ps *Problems) Err() error {
	var errs []configfile.Problem
	for _, p := range ps.list {
		if isError(p) {
			errs = append(errs, p)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return &configfile.Error{Problems: errs}
}

// Errorf returns a *configfile.Error of one problem.
func Errorf(file string, pos Pos, field, format string, args ...any) error {
	ps := &Problems{File: file}
	ps.Add(pos, field, format, args...)
	return ps.Err()
}
