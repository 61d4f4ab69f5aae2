package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/hooks/claudecode"
	"github.com/tollgate-dev/tollgate/internal/claudenames"
)

// codexEvents are the events `tollgate codex settings` hooks, in the
// order printed; the tool events match every tool.
var codexEvents = []claudecode.Event{
	claudenames.PreToolUse, claudenames.PermissionRequest, claudenames.PostToolUse,
	claudenames.SessionStart, claudenames.UserPromptSubmit, claudenames.Stop,
}

func newCodexSettingsCmd(env *cliEnv) *cobra.Command {
	f := claudeHookFlags{source: gate.SourceCodex}
	var trust string
	cmd := &cobra.Command{
		Use:   "settings",
		Short: "Print the hooks.json that has tollgate govern Codex, and its trust entry",
		Long: `Print a Codex hooks.json ($CODEX_HOME/hooks.json, by default ~/.codex/hooks.json)
that runs 'tollgate codex hook' with these flags for every tool call and
session event. File paths are made absolute. The timeout of the tool events is
above --wait, so that no answer is a deny tollgate gives, not a timeout Codex
lets through.

Codex skips a hook it does not trust, silently: trust is a hash of the hook's
definition in the user's config.toml. With --trust FILE, the command prints
instead the config.toml entries that trust the same hooks kept in the
hooks.json at FILE; append them to config.toml (and replace them whenever the
flags change, which changes the hash).`,
		Example: `  tollgate codex settings --policy policy.yaml > ~/.codex/hooks.json
  tollgate codex settings --policy policy.yaml --trust ~/.codex/hooks.json >> ~/.codex/config.toml`,
		Args: argsUsage(cobra.NoArgs),
		RunE: func(c *cobra.Command, _ []string) error {
			hooks, err := codexHooks(&f)
			if err != nil {
				return orCode(exitError, err)
			}
			if trust != "" {
				abs, err := filepath.Abs(trust)
				if err != nil {
					return withCode(exitError, err)
				}
				fmt.Fprint(env.stdout, codexTrust(abs, hooks))
				return nil
			}
			b, err := json.MarshalIndent(map[string]any{"hooks": hooks}, "", "  ")
			if err != nil {
				return withCode(exitError, err)
			}
			fmt.Fprintf(env.stdout, "%s\n", b)
			return nil
		},
	}
	fs := cmd.Flags()
	addSettingsFlags(fs, &f)
	fs.StringVar(&trust, "trust", "", "print the config.toml entries that trust these hooks kept in the hooks.json at this path")
	return cmd
}

// codexGroup is one matcher group of hooks.json: the handlers of the
// calls that match.
type codexGroup struct {
	Matcher string         `json:"matcher,omitempty"`
	Hooks   []codexHandler `json:"hooks"`
}

// codexHandler is one command handler of hooks.json.
type codexHandler struct {
	Type    string `json:"type"`
	Command string `json:"command"`
	Timeout int    `json:"timeout"`
}

// codexHooks returns the hooks of hooks.json, by event: one group each,
// matching every tool for the tool events, running the hook command.
func codexHooks(f *claudeHookFlags) (map[claudecode.Event][]codexGroup, error) {
	args, toolTimeout, err := hookCommand(f, "codex")
	if err != nil {
		return nil, err
	}
	hooks := map[claudecode.Event][]codexGroup{}
	for _, ev := range codexEvents {
		g := codexGroup{Hooks: []codexHandler{{Type: "command", Command: shellQuote(args), Timeout: 30}}}
		switch ev {
		case claudenames.PreToolUse, claudenames.PermissionRequest, claudenames.PostToolUse:
			g.Matcher = "*"
		}
		if ev == claudenames.PreToolUse || ev == claudenames.PermissionRequest {
			g.Hooks[0].Timeout = toolTimeout
		}
		hooks[ev] = []codexGroup{g}
	}
	return hooks, nil
}

// codexTrust returns the config.toml entries that trust hooks kept in
// the hooks.json at file: for each handler,
// [hooks.state."FILE:EVENT:GROUP:HANDLER"] with trusted_hash, the SHA-256
// of the canonical JSON of its definition (event_name, matcher, and the
// handler's type, command, timeout and async; keys sorted, no spaces), as
// Codex 0.169.0 computes it.
func codexTrust(file string, hooks map[claudecode.Event][]codexGroup) string {
	var sb strings.Builder
	for _, ev := range codexEvents {
		for gi, g := range hooks[ev] {
			for hi, h := range g.Hooks {
				def := map[string]any{
					"event_name": snakeCase(string(ev)),
					"matcher":    nilIfEmpty(g.Matcher),
					"hooks":      []any{map[string]any{"type": h.Type, "command": h.Command, "timeout": h.Timeout, "async": false}},
				}
				b, _ := json.Marshal(def) // maps marshal with sorted keys
				sum := sha256.Sum256(b)
				key := fmt.Sprintf("%s:%s:%d:%d", file, snakeCase(string(ev)), gi, hi)
				fmt.Fprintf(&sb, "[hooks.state.%s]\ntrusted_hash = \"sha256:%s\"\n\n", strconv.Quote(key), hex.EncodeToString(sum[:]))
			}
		}
	}
	return sb.String()
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// snakeCase is an event's name as Codex's config keys spell it:
// PreToolUse is pre_tool_use.
func snakeCase(s string) string {
	var sb strings.Builder
	for i, r := range s {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				sb.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		sb.WriteRune(r)
	}
	return sb.String()
}
