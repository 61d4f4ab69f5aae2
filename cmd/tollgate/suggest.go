package main

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tollgate-dev/tollgate/internal/configread"
)

// unknownCommand is the usage error for an unknown subcommand name of c,
// with the names it may have meant (cobra's suggestions: a prefix, or at
// most two edits away).
func unknownCommand(c *cobra.Command, name string) error {
	msg := fmt.Sprintf("unknown command %q for %q", name, c.CommandPath())
	if c.SuggestionsMinimumDistance <= 0 {
		c.SuggestionsMinimumDistance = 2
	}
	if s := c.SuggestionsFor(name); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return usageErr("%s", msg) // Main adds the hint to read --help
}

var (
	unknownFlagRE = regexp.MustCompile(`^unknown flag: --(\S+)$`)
	badValueRE    = regexp.MustCompile(`^invalid argument "(.*)" for "(?:-\w, )?(--[\w-]+)" flag: (.*)$`)
)

// flagUsageError restates a flag error of c in the user's terms: an unknown
// flag with the flags it may have meant, a value that does not parse with
// the kind of value wanted instead of the parser's error.
func flagUsageError(c *cobra.Command, err error) error {
	msg := err.Error()
	if m := unknownFlagRE.FindStringSubmatch(msg); m != nil {
		if s := similarFlags(c, m[1]); len(s) > 0 {
			msg += "; did you mean --" + strings.Join(s, " or --") + "?"
		}
	} else if m := badValueRE.FindStringSubmatch(msg); m != nil {
		msg = fmt.Sprintf("%s %q: %s", m[2], m[1], wantedValue(c.Flags().Lookup(strings.TrimPrefix(m[2], "--")), m[3]))
	}
	return usageErr("%s%s", commandPrefix(c), msg)
}

// wantedValue says what value flag f takes, from its type; reason is the
// parser's error, kept when the type says nothing more.
func wantedValue(f *pflag.Flag, reason string) string {
	if f == nil {
		return reason
	}
	switch f.Value.Type() {
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64", "uintSlice", "intSlice":
		if strings.Contains(reason, "out of range") {
			return "the number is out of range"
		}
		return "want a whole number, such as 10"
	case "float32", "float64":
		return "want a number, such as 0.5"
	case "bool":
		return "want true or false"
	case "duration":
		return "want a duration, such as 90s, 5m or 1h30m"
	}
	return reason
}

// similarFlags returns the names of c's flags (its own and inherited) that
// name may have meant: at most two edits away, or one it begins.
func similarFlags(c *cobra.Command, name string) []string {
	var out []string
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		if configread.EditDistance(name, f.Name) <= 2 || (len(name) >= 3 && strings.HasPrefix(f.Name, name)) {
			out = append(out, f.Name)
		}
	})
	return out
}
