package claudecode

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"

	"github.com/tollgate-dev/tollgate/configfile"
	"github.com/tollgate-dev/tollgate/internal/bounded"
	"github.com/tollgate-dev/tollgate/internal/claudenames"
	"github.com/tollgate-dev/tollgate/internal/configread"
)

// Limits on what a settings file may hold.
const (
	// maxSettingsSize is the largest settings file read, in bytes.
	maxSettingsSize = 1 << 20
	// maxDepth is the deepest nesting of objects and arrays read.
	maxDepth = 32
	// maxHandlers is the most handlers one file may hold; the rest are skipped.
	maxHandlers = 1000
	// maxTimeout is the longest handler timeout accepted (one hour).
	maxTimeout = time.Hour
)

// Event is the name of a Claude Code hook event, spelled as in settings.json,
// which keys [Options].FailModes. The events tollgate fires, and where (the
// package documentation has the details): "PreToolUse", a BeforeTool hook,
// before authorization; "PermissionRequest", when authorization asks, before
// a person is asked; "PostToolUse", an AfterTool hook, for a tool that
// succeeded; "PostToolUseFailure", an AfterTool hook, for a tool that
// returned an error; "UserPromptSubmit", at the start of a run, before any
// model call; "Stop", when the model gives its final answer;
// "SubagentStop", when a sub-agent that a tool of this agent started gives
// its final answer (agent.Agent.AsTool); "SessionStart", at the start of a
// run and of a resume; "SessionEnd", when a run (or resume) ends, whatever
// its status; "Notification", when a request goes pending (a person is
// asked).
type Event string

// fired lists the events tollgate fires.
var fired = map[Event]bool{
	claudenames.PreToolUse: true, claudenames.PermissionRequest: true, claudenames.PostToolUse: true, claudenames.PostToolUseFailure: true,
	claudenames.UserPromptSubmit: true, claudenames.Stop: true, claudenames.SubagentStop: true, claudenames.SessionStart: true, claudenames.SessionEnd: true,
	claudenames.Notification: true,
}

// notFired lists Claude Code events that tollgate accepts and never fires.
var notFired = map[string]string{
	"PreCompact":         "tollgate does not compact transcripts",
	"PostCompact":        "tollgate does not compact transcripts",
	"SubagentStart":      "tollgate has no sub-agent start event",
	"TeammateIdle":       "tollgate has no teammates",
	"TaskCompleted":      "tollgate has no task list",
	"ConfigChange":       "tollgate reads settings once, at start",
	"InstructionsLoaded": "tollgate loads no instruction files",
	"WorktreeCreate":     "tollgate creates no worktrees",
	"WorktreeRemove":     "tollgate creates no worktrees",
	"Setup":              "tollgate has no setup phase",
}

// Diagnostic is one problem found in a settings file: a skipped entry
// (Skipped) or a warning about an entry kept (Severity
// configfile.SeverityWarning), or a file that was not read at all
// (configfile.SeverityError). It is the [configfile.Problem] every
// configuration file reports (Line and Col from 1, 0 when unknown), with
// what the loader did about it. Its Error text is FILE:LINE:COL: warning:
// MESSAGE, the form of `tollgate hooks check`.
type Diagnostic struct {
	configfile.Problem
	Skipped bool
	// Event is the hook event the entry belongs to, when the entry is inside
	// one ("" for file-level problems): a host that fails closed refuses to
	// run when a gate of PreToolUse or PermissionRequest was skipped.
	Event Event
}

// diag returns a diagnostic at pos of file.
func diag(file string, line, col int, sev configfile.Severity, skipped bool, ev Event, msg string) Diagnostic {
	return Diagnostic{Problem: configfile.Problem{File: file, Line: line, Col: col, Severity: sev, Message: msg}, Skipped: skipped, Event: ev}
}

// handlerType is a handler's "type".
type handlerType string

// The handler types tollgate runs. Claude Code's "prompt" and "agent"
// handlers are skipped with a diagnostic.
const (
	// typeCommand runs `sh -c COMMAND`, or COMMAND with Args and no shell.
	typeCommand handlerType = "command"
	// typeHTTP POSTs the same JSON to URL and reads the answer from the body.
	typeHTTP handlerType = "http"
)

// hookHandler is one entry of a matcher group's "hooks" list.
type hookHandler struct {
	Type handlerType
	// Command is run with `sh -c` (CLAUDE_PROJECT_DIR is in its environment).
	// With Args, Command is the program and Args its arguments, run without a
	// shell; $CLAUDE_PROJECT_DIR and ${CLAUDE_PROJECT_DIR} in either are
	// replaced by the project directory.
	Command string
	Args    []string
	// URL and Headers are for typeHTTP.
	URL     string
	Headers map[string]string
	// Timeout is the handler's "timeout" (seconds in the file); 0 means the
	// default (Options.DefaultTimeout, 60 s).
	Timeout time.Duration
	// If is the handler's "if" condition: "Tool" or "Tool(glob)" (see the
	// package documentation); empty means always.
	If string
	// Source is where the handler is written: FILE:LINE:COL.
	Source string
}

// key identifies identical handlers, which run once per event.
func (h hookHandler) key() string {
	return fmt.Sprintf("%s\x00%s\x00%q\x00%s\x00%v\x00%s\x00%s", h.Type, h.Command, h.Args, h.URL, h.Headers, h.Timeout, h.If)
}

// String names the handler for logs and decision reasons: its source and
// what it runs.
func (h hookHandler) String() string {
	what := h.Command
	if h.Type == typeHTTP {
		what = h.URL
	} else if len(h.Args) > 0 {
		what += " " + strings.Join(h.Args, " ")
	}
	if len(what) > 80 {
		what = what[:80] + "…"
	}
	return h.Source + " (" + what + ")"
}

// hookGroup is one matcher group: its handlers run for the event when the
// matcher matches.
type hookGroup struct {
	Event    Event
	matcher  string
	Handlers []hookHandler
	Source   string
	m        *nameMatcher
}

// Settings is the hooks of one or more settings files, in file order. Use
// [Parse] or [LoadFiles], which adds up several files (identical handlers
// still run once per event).
type Settings struct {
	groups []hookGroup
	// Permissions are the rules of the permissions object's allow, ask and
	// deny lists, in file order (read even when the file has no hooks).
	Permissions []Permission
	Diagnostics []Diagnostic
}

// Permission is one rule of a settings file's permissions object: List is
// "allow", "ask" or "deny", Rule the rule as written ("Bash(rm:*)"), and
// Source its FILE:LINE:COL.
type Permission struct {
	List   string
	Rule   string
	Source string
}

// add appends o's groups and diagnostics to s and returns s.
func (s *Settings) add(o *Settings) *Settings {
	if o != nil {
		s.groups = append(s.groups, o.groups...)
		s.Permissions = append(s.Permissions, o.Permissions...)
		s.Diagnostics = append(s.Diagnostics, o.Diagnostics...)
	}
	return s
}

// Handlers describes each handler of s, in file order, one line each:
// "EVENT MATCHER: FILE:LINE:COL (what it runs)", the matcher "*" when the
// group has none (`PreToolUse Bash: settings.json:5:13 (./check.sh)`). Its
// length is the number of handlers.
func (s *Settings) Handlers() []string {
	var out []string
	for _, g := range s.groups {
		m := cmp.Or(g.matcher, "*")
		for _, h := range g.Handlers {
			out = append(out, fmt.Sprintf("%s %s: %s", g.Event, m, h))
		}
	}
	return out
}

// LoadFiles reads the hooks object of each settings file with [Parse] and
// adds them up, in order. A file named twice is read once. The error is for a
// file that cannot be read (it wraps the os error, e.g. fs.ErrNotExist);
// problems inside a file never fail, they are diagnostics.
func LoadFiles(paths ...string) (*Settings, error) {
	out := &Settings{}
	seen := map[string]bool{}
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, fmt.Errorf("claudecode: %w", err)
		}
		if seen[abs] {
			continue
		}
		seen[abs] = true
		f, err := os.Open(p)
		if err != nil {
			return nil, fmt.Errorf("claudecode: %w", err)
		}
		src, err := io.ReadAll(io.LimitReader(f, maxSettingsSize+1))
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("claudecode: reading %s: %w", p, err)
		}
		out.add(Parse(src, p))
	}
	return out, nil
}

// SettingsFiles returns the settings files Claude Code reads for a project,
// in its order, that exist: the user's ~/.claude/settings.json (home "" skips
// it), then projectDir's .claude/settings.json and .claude/settings.local.json.
func SettingsFiles(projectDir, home string) []string {
	var cands []string
	if home != "" {
		cands = append(cands, filepath.Join(home, ".claude", "settings.json"))
	}
	cands = append(cands, filepath.Join(projectDir, ".claude", "settings.json"), filepath.Join(projectDir, ".claude", "settings.local.json"))
	var out []string
	for _, c := range cands {
		if st, err := os.Stat(c); err == nil && st.Mode().IsRegular() {
			out = append(out, c)
		}
	}
	return out
}

// Parse reads the "hooks" object of a settings document (JSON; the other keys
// of settings.json are not tollgate's and are ignored). It never fails: a bad
// event, matcher group or handler is skipped on its own with a diagnostic
// giving FILE:LINE:COL, and the rest is kept; a document that is not a JSON
// object, is larger than 1 MiB or nests deeper than 32 objects and arrays
// gives no hooks and an error diagnostic; past 1,000 handlers in one file,
// the rest are skipped with a diagnostic. Events tollgate does not fire are
// accepted with a diagnostic. "disableAllHooks": true gives no hooks from
// this file, with a diagnostic.
func Parse(src []byte, file string) (s *Settings) {
	l := &loader{file: file}
	s = &Settings{}
	defer func() {
		if p := recover(); p != nil { // the parser is third-party code
			s = &Settings{Diagnostics: append(l.diags, diag(file, 0, 0, configfile.SeverityError, false, "", fmt.Sprintf("the parser failed on this file (%v); no hooks loaded", p)))}
		}
	}()
	if len(src) > maxSettingsSize {
		l.fatal(nil, "the file is larger than %d bytes; no hooks loaded", maxSettingsSize)
		return &Settings{Diagnostics: l.diags}
	}
	if len(strings.TrimSpace(string(src))) == 0 {
		l.add(nil, false, "the file is empty: no hooks")
		return &Settings{Diagnostics: l.diags}
	}
	// Tabs are JSON whitespace but not YAML indentation: read them as spaces,
	// which keeps every line and column.
	src = []byte(strings.ReplaceAll(string(src), "\t", " "))
	lim := bounded.Limits{MaxBytes: maxSettingsSize, MaxDepth: maxDepth}
	if be, ok := errors.AsType[*bounded.Error](bounded.CheckYAML(file, src, lim)); ok {
		msg := be.Message
		if strings.HasPrefix(msg, "nested deeper") {
			msg = fmt.Sprintf("the file nests deeper than %d levels", maxDepth)
		}
		return &Settings{Diagnostics: []Diagnostic{diag(file, be.Line, be.Col, configfile.SeverityError, false, "", msg+"; no hooks loaded")}}
	}
	f, err := configread.ParseYAML(file, src, 0)
	if err != nil {
		d := diag(file, 0, 0, configfile.SeverityError, false, "", "the file does not parse as JSON: "+err.Error()+"; no hooks loaded")
		if p, ok := errors.AsType[*configfile.Problem](err); ok {
			d.Line, d.Col = p.Line, p.Col
			d.Message = "the file does not parse as JSON: " + p.Message + "; no hooks loaded"
		}
		return &Settings{Diagnostics: []Diagnostic{d}}
	}
	if len(f.Docs) == 0 || f.Docs[0].Body == nil {
		l.add(nil, false, "the file is empty: no hooks")
		return &Settings{Diagnostics: l.diags}
	}
	body := f.Docs[0].Body
	top, ok := body.(*ast.MappingNode)
	if !ok {
		l.fatal(body, "a settings file must be a JSON object, not %s; no hooks loaded", kind(body))
		return &Settings{Diagnostics: l.diags}
	}
	var hooksNode *ast.MappingValueNode
	for _, mv := range top.Values {
		if keyString(mv) == "permissions" {
			s.Permissions = l.permissions(mv)
		}
	}
	perms := s.Permissions
	for _, mv := range top.Values {
		switch keyString(mv) {
		case "hooks":
			hooksNode = mv
		case "disableAllHooks":
			if b, ok := mv.Value.(*ast.BoolNode); ok && b.Value {
				l.add(mv, false, "disableAllHooks is true: no hooks from this file")
				return &Settings{Permissions: perms, Diagnostics: l.diags}
			}
		}
	}
	if hooksNode == nil {
		if len(perms) == 0 {
			l.add(body, false, "no hooks object: no hooks")
		}
		return &Settings{Permissions: perms, Diagnostics: l.diags}
	}
	if isNull(hooksNode.Value) {
		l.add(hooksNode, false, "hooks is null: no hooks")
		return &Settings{Permissions: perms, Diagnostics: l.diags}
	}
	events, ok := hooksNode.Value.(*ast.MappingNode)
	if !ok {
		l.fatal(hooksNode.Value, "hooks must be an object of event names, not %s; no hooks loaded", kind(hooksNode.Value))
		return &Settings{Permissions: perms, Diagnostics: l.diags}
	}
	count := 0
	seenEvent := map[string]bool{}
	for _, ev := range events.Values {
		name := keyString(ev)
		l.event = Event(name)
		if seenEvent[name] {
			l.add(ev, true, "hooks.%s appears twice; the second is skipped", name)
			continue
		}
		seenEvent[name] = true
		if why, ok := notFired[name]; ok {
			l.add(ev, false, "hooks.%s is accepted but never fires: %s", name, why)
			continue
		}
		if !fired[Event(name)] {
			l.add(ev, true, "skipped hooks.%s: unknown event%s", name, meant(name, " (want one of PreToolUse, PermissionRequest, PostToolUse, PostToolUseFailure, UserPromptSubmit, Stop, SubagentStop, SessionStart, SessionEnd, Notification)", eventNames...))
			continue
		}
		groups, ok := ev.Value.(*ast.SequenceNode)
		if !ok {
			l.add(ev.Value, true, "skipped hooks.%s: it must be an array of matcher groups, not %s", name, kind(ev.Value))
			continue
		}
		for gi, gn := range groups.Values {
			g, ok := l.group(Event(name), gi, gn, &count)
			if ok {
				s.groups = append(s.groups, g)
			}
		}
	}
	l.event = ""
	s.Diagnostics = l.diags
	return s
}

// permissions reads the permissions object's allow, ask and deny lists of
// strings; anything else in it is tollgate's flags' business and is
// reported, and a non-string rule is skipped with a diagnostic.
func (l *loader) permissions(mv *ast.MappingValueNode) []Permission {
	m, ok := mv.Value.(*ast.MappingNode)
	if !ok {
		if !isNull(mv.Value) {
			l.add(mv.Value, true, "skipped permissions: it must be an object with allow, ask and deny lists, not %s", kind(mv.Value))
		}
		return nil
	}
	var out []Permission
	for _, kv := range m.Values {
		list := keyString(kv)
		if list != "allow" && list != "ask" && list != "deny" {
			l.add(kv, false, "permissions.%s is not applied by tollgate (it reads allow, ask and deny)", list)
			continue
		}
		seq, ok := kv.Value.(*ast.SequenceNode)
		if !ok {
			l.add(kv.Value, true, "skipped permissions.%s: it must be a list of rules, not %s", list, kind(kv.Value))
			continue
		}
		for i, n := range seq.Values {
			r, ok := stringValue(n)
			if !ok {
				l.add(n, true, "skipped permissions.%s[%d]: a rule must be a string, not %s", list, i, kind(n))
				continue
			}
			out = append(out, Permission{List: list, Rule: r, Source: l.source(n)})
		}
	}
	return out
}

// loader collects diagnostics for one file.
type loader struct {
	file  string
	event Event // the event whose entries are being read
	diags []Diagnostic
}

func (l *loader) add(n ast.Node, skipped bool, format string, args ...any) {
	line, col := position(n)
	l.diags = append(l.diags, diag(l.file, line, col, configfile.SeverityWarning, skipped, l.event, fmt.Sprintf(format, args...)))
}

func (l *loader) fatal(n ast.Node, format string, args ...any) {
	line, col := position(n)
	l.diags = append(l.diags, diag(l.file, line, col, configfile.SeverityError, false, "", fmt.Sprintf(format, args...)))
}

func (l *loader) source(n ast.Node) string {
	line, col := position(n)
	return fmt.Sprintf("%s:%d:%d", l.file, line, col)
}

// group reads matcher group gi of event ev.
func (l *loader) group(ev Event, gi int, n ast.Node, count *int) (hookGroup, bool) {
	where := fmt.Sprintf("hooks.%s[%d]", ev, gi)
	m, ok := n.(*ast.MappingNode)
	if !ok {
		l.add(n, true, "skipped %s: a matcher group must be an object with matcher and hooks, not %s", where, kind(n))
		return hookGroup{}, false
	}
	g := hookGroup{Event: ev, Source: l.source(n)}
	var list *ast.MappingValueNode
	for _, mv := range m.Values {
		switch k := keyString(mv); k {
		case "matcher":
			if isNull(mv.Value) {
				continue
			}
			s, ok := stringValue(mv.Value)
			if !ok {
				l.add(mv.Value, true, "skipped %s: matcher must be a string, not %s", where, kind(mv.Value))
				return hookGroup{}, false
			}
			g.matcher = s
		case "hooks":
			list = mv
		default:
			l.add(mv, false, "%s: unknown field %q is ignored%s", where, k, meant(k, " (want matcher, hooks)", "matcher", "hooks"))
		}
	}
	mt, err := compileMatcher(g.matcher)
	if err != nil {
		l.add(m, true, "skipped %s: %v; the group matches nothing", where, err)
		return hookGroup{}, false
	}
	g.m = mt
	if list == nil {
		l.add(m, true, "skipped %s: missing hooks", where)
		return hookGroup{}, false
	}
	seq, ok := list.Value.(*ast.SequenceNode)
	if !ok {
		l.add(list.Value, true, "skipped %s: hooks must be an array of handlers, not %s", where, kind(list.Value))
		return hookGroup{}, false
	}
	for hi, hn := range seq.Values {
		if *count >= maxHandlers {
			l.add(hn, true, "skipped %s.hooks[%d]: more than %d handlers in this file", where, hi, maxHandlers)
			break
		}
		if h, ok := l.handler(fmt.Sprintf("%s.hooks[%d]", where, hi), hn); ok {
			g.Handlers = append(g.Handlers, h)
			*count++
		}
	}
	if len(g.Handlers) == 0 {
		return hookGroup{}, false
	}
	return g, true
}

// handler reads one handler.
func (l *loader) handler(where string, n ast.Node) (hookHandler, bool) {
	m, ok := n.(*ast.MappingNode)
	if !ok {
		l.add(n, true, "skipped %s: a handler must be an object with type and command, not %s", where, kind(n))
		return hookHandler{}, false
	}
	skip := func(at ast.Node, format string, args ...any) (hookHandler, bool) {
		l.add(at, true, "skipped %s: "+format, append([]any{where}, args...)...)
		return hookHandler{}, false
	}
	h := hookHandler{Source: l.source(n)}
	var typeNode ast.Node = m
	for _, mv := range m.Values {
		k := keyString(mv)
		switch k {
		case "type":
			s, ok := stringValue(mv.Value)
			if !ok {
				return skip(mv.Value, "type must be a string, not %s", kind(mv.Value))
			}
			h.Type, typeNode = handlerType(s), mv.Value
		case "command", "url", "if":
			s, ok := stringValue(mv.Value)
			if !ok {
				return skip(mv.Value, "%s must be a string, not %s", k, kind(mv.Value))
			}
			switch k {
			case "command":
				h.Command = s
			case "url":
				h.URL = s
			case "if":
				h.If = s
			}
		case "args":
			seq, ok := mv.Value.(*ast.SequenceNode)
			if !ok {
				return skip(mv.Value, "args must be an array of strings, not %s", kind(mv.Value))
			}
			h.Args = []string{}
			for i, el := range seq.Values {
				s, ok := stringValue(el)
				if !ok {
					return skip(el, "args[%d] must be a string, not %s", i, kind(el))
				}
				h.Args = append(h.Args, s)
			}
		case "headers":
			hm, ok := mv.Value.(*ast.MappingNode)
			if !ok {
				return skip(mv.Value, "headers must be an object of strings, not %s", kind(mv.Value))
			}
			h.Headers = map[string]string{}
			for _, hv := range hm.Values {
				s, ok := stringValue(hv.Value)
				if !ok {
					return skip(hv.Value, "headers.%s must be a string, not %s", keyString(hv), kind(hv.Value))
				}
				h.Headers[keyString(hv)] = s
			}
		case "timeout":
			num, ok := mv.Value.(*ast.IntegerNode)
			var secs float64
			if ok {
				secs, _ = strconv.ParseFloat(num.GetToken().Value, 64)
			} else if fl, ok2 := mv.Value.(*ast.FloatNode); ok2 {
				secs = fl.Value
				ok = true
			}
			if !ok {
				return skip(mv.Value, "timeout must be a number of seconds, not %s", kind(mv.Value))
			}
			d := time.Duration(secs * float64(time.Second))
			if d <= 0 || d > maxTimeout {
				return skip(mv.Value, "timeout %v s is out of bounds (more than 0, at most %d)", secs, int(maxTimeout.Seconds()))
			}
			h.Timeout = d
		case "async":
			if b, ok := mv.Value.(*ast.BoolNode); ok && b.Value {
				l.add(mv, false, "%s: async is not supported; the handler runs synchronously", where)
			}
		case "statusMessage", "once", "model", "prompt", "allowedEnvVars":
			// Claude Code's display and prompt-handler fields: nothing to run.
		default:
			l.add(mv, false, "%s: unknown field %q is ignored%s", where, k, meant(k, "", handlerFields...))
		}
	}
	switch h.Type {
	case typeCommand:
		if strings.TrimSpace(h.Command) == "" {
			return skip(m, "a command handler needs a non-empty command")
		}
		if strings.ContainsRune(h.Command, 0) {
			return skip(m, "command holds a NUL byte")
		}
	case typeHTTP:
		if !strings.HasPrefix(h.URL, "http://") && !strings.HasPrefix(h.URL, "https://") {
			return skip(m, "an http handler needs an http:// or https:// url")
		}
	case "prompt", "agent":
		return skip(typeNode, "tollgate does not run %q handlers (they ask a model); use a command or http handler", h.Type)
	case "":
		return skip(m, "missing type (command or http)")
	default:
		return skip(typeNode, "unknown type %q (want command or http)", h.Type)
	}
	if h.If != "" {
		if _, err := parseIf(h.If); err != nil {
			return skip(m, "if: %v", err)
		}
	}
	return h, true
}

// eventNames are the events Claude Code knows, fired or not.
var eventNames = []string{"PreToolUse", "PermissionRequest", "PostToolUse", "PostToolUseFailure",
	"UserPromptSubmit", "Stop", "SubagentStop", "SessionStart", "SessionEnd", "Notification",
	"PreCompact", "PostCompact", "SubagentStart", "TeammateIdle", "TaskCompleted", "ConfigChange",
	"InstructionsLoaded", "WorktreeCreate", "WorktreeRemove", "Setup"}

// handlerFields are the fields of a handler that Claude Code knows.
var handlerFields = []string{"type", "command", "args", "url", "headers", "timeout", "if", "async",
	"statusMessage", "once", "model", "prompt", "allowedEnvVars"}

// meant returns "; did you mean "K"?" for the field of known that k was
// probably meant to be, else otherwise.
func meant(k, otherwise string, known ...string) string {
	if s := configread.Suggest(k, known); s != "" {
		return fmt.Sprintf("; did you mean %q?", s)
	}
	return otherwise
}

func isNull(n ast.Node) bool { return configread.IsNull(n) }

// stringValue returns the text of a string node.
func stringValue(n ast.Node) (string, bool) { return configread.Text(n) }

func keyString(mv *ast.MappingValueNode) string { return configread.Key(mv) }

// kind names a node's JSON type for messages.
func kind(n ast.Node) string { return configread.Kind(n, true) }

// position returns where a node starts: for an object, its opening brace.
func position(n ast.Node) (int, int) {
	p := configread.NodePos(n)
	return p.Line, p.Col
}
