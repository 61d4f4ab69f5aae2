package declarative

import (
	"fmt"
	"strings"
)

// Event is one of the five events of seed 000 ("Events"). The zero Event is
// not an event; loading never returns it.
type Event uint8

// The events. PreToolUse, PostToolUse and OnError are fired by the agent
// through the registry's listener ([Registry.Listener]); OnStart by
// [Registry.ApplyTo]; OnStop only by the caller through [Registry.FireEvent].
const (
	// PreToolUse fires just before a tool runs; the tool waits for its hooks.
	PreToolUse Event = iota + 1
	// PostToolUse fires just after a tool ran, whether or not it succeeded.
	PostToolUse
	// OnStart fires once per [Registry.ApplyTo] call.
	OnStart
	// OnStop is never fired by the registry; the caller fires it.
	OnStop
	// OnError fires after PostToolUse when the tool failed (an error result,
	// an error or a panic).
	OnError

	numEvents = int(OnError) + 1
)

// names returns the UPPER_SNAKE and camelCase names of a valid event.
func (e Event) names() (upper, camel string) {
	switch e {
	case PreToolUse:
		return "PRE_TOOL_USE", "preToolUse"
	case PostToolUse:
		return "POST_TOOL_USE", "postToolUse"
	case OnStart:
		return "ON_START", "onStart"
	case OnStop:
		return "ON_STOP", "onStop"
	case OnError:
		return "ON_ERROR", "onError"
	}
	return "", ""
}

// String returns the upper snake case name (PRE_TOOL_USE), or "Event(n)" for a
// value that is not an event.
func (e Event) String() string {
	if !e.valid() {
		return fmt.Sprintf("Event(%d)", uint8(e))
	}
	upper, _ := e.names()
	return upper
}

// camelName returns the camelCase name (preToolUse), the spelling used in YAML
// examples, or "" for a value that is not an event.
func (e Event) camelName() string {
	_, camel := e.names()
	return camel
}

func (e Event) valid() bool { return e >= PreToolUse && e <= OnError }

// usesMatcher reports whether matchers apply to e (seed 000: "Matchers apply to
// PRE_TOOL_USE and POST_TOOL_USE").
func (e Event) usesMatcher() bool { return e == PreToolUse || e == PostToolUse }

// allEvents returns the five events in declaration order.
func allEvents() []Event { return []Event{PreToolUse, PostToolUse, OnStart, OnStop, OnError} }

// parseEvent accepts an event name in camelCase (preToolUse) or upper snake
// case (PRE_TOOL_USE), exactly as seed 000 allows, and nothing else. The error
// names the accepted spellings and, for a near miss in letter case or
// underscores, the one that was probably meant.
func parseEvent(name string) (Event, error) {
	for _, e := range allEvents() {
		if upper, camel := e.names(); name == upper || name == camel {
			return e, nil
		}
	}
	squash := func(s string) string { return strings.ToLower(strings.ReplaceAll(s, "_", "")) }
	for _, e := range allEvents() {
		if upper, camel := e.names(); squash(name) == squash(camel) {
			return 0, fmt.Errorf("unknown event %q (did you mean %s or %s?)", name, camel, upper)
		}
	}
	return 0, fmt.Errorf("unknown event %q (want one of preToolUse, postToolUse, onStart, onStop, onError, or the same in UPPER_SNAKE case)", name)
}
