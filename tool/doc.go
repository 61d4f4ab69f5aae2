// Package tool defines what a tool is in tollgate: a [Spec] (name, description,
// JSON-Schema input, advisory [Hints], source), a [Tool] that executes a call, and
// the [Result] the model sees.
//
// It also defines the out-of-band [Request] and [Answer] that a call returns when
// it needs a person (seed 002: "ask = a pending(...) result, which wait_for
// resolves"). A [Result] whose Pending field is set is not a result: the agent
// suspends the call until an [Answer] arrives (see package agent).
//
// Who answers a request, and who votes on a call, is a [Principal] (a kind:
// hook, rule, autonomy, person, runtime, flag; and a name); what a source
// says is a [Vote]. An [Answer] names a person who answered by name
// (Answer{By: "alice"}, never parsed) or any answerer by its Principal;
// [Answer.Who] gives the principal either way. They are defined here, at the bottom, so that answers,
// hooks, policies, the agent and the stores share one typed form; package
// approval names them Principal and Vote.
//
// [New] turns a typed Go function into a Tool: it infers the input schema from the
// argument struct (github.com/google/jsonschema-go, descriptions from `jsonschema`
// struct tags), validates every call's arguments against it before the function
// runs, and turns a returned error or a panic into an error result that the model
// sees. Neither ever aborts a run.
//
// This package is level 0 of the architecture: it imports nothing of tollgate.
package tool
