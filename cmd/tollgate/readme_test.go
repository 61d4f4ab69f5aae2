package main

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/dbosengine"
)

// docSection returns the text of the page file (a path from the
// repository's root) from the heading title to the next heading of the same
// level.
func docSection(t *testing.T, file, title string) string {
	t.Helper()
	b, err := os.ReadFile("../../" + file)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "\n"+title+"\n")
	if i < 0 {
		t.Fatalf("%s has no heading %q", file, title)
	}
	s = s[i+len(title)+2:]
	level := title[:strings.Index(title, " ")+1]
	if j := strings.Index(s, "\n"+level); j >= 0 {
		s = s[:j]
	}
	return s
}

// The synopsis under "The command" of docs/cli.md names every command
// tollgate has, and every subcommand on a line of its command.
func TestCLIDocSynopsisNamesEveryCommand(t *testing.T) {
	t.Parallel()
	synopsis := docSection(t, "docs/cli.md", "## The command")
	for _, c := range newRootCmd(&cliEnv{}).Commands() {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			continue
		}
		var lines []string
		for _, l := range strings.Split(synopsis, "\n") {
			if strings.HasPrefix(l, "tollgate "+c.Name()+" ") {
				lines = append(lines, l)
			}
		}
		if len(lines) == 0 {
			t.Errorf("docs/cli.md's synopsis under \"The command\" lacks tollgate %s", c.Name())
			continue
		}
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" {
				continue
			}
			found := false
			for _, l := range lines {
				words := strings.FieldsFunc(l, func(r rune) bool { return r == ' ' || r == '|' })
				found = found || slices.Contains(words, sub.Name())
			}
			if !found {
				t.Errorf("docs/cli.md's synopsis lacks tollgate %s %s", c.Name(), sub.Name())
			}
		}
	}
}

// The application version docs/durable.md tells operators to look for is
// the one workers run under.
func TestDurableDocWorkflowVersion(t *testing.T) {
	t.Parallel()
	if s := docSection(t, "docs/durable.md", "## Many machines: durable runs and workers"); !strings.Contains(s, "`"+dbosengine.ApplicationVersion+"`") {
		t.Errorf("docs/durable.md's \"Many machines\" does not name the application version %s", dbosengine.ApplicationVersion)
	}
}
