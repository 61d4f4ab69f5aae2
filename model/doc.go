// Package model holds tollgate's provider-neutral conversation types (typed
// messages, tool calls, tool definitions, usage) and the small [Model]
// interface every provider implements.
//
// Providers (model/openai, model/anthropic, model/scripted, or your own) only
// translate between these types and a wire format; the agent loop is one loop for
// all of them. [Func] adapts a plain Go function, the in-process generate function
// of seed 002, into a Model: it returns text or tool calls and the library fills
// in call IDs, the finish reason and the argument encoding.
//
// A model that can stream also implements [Streamer]; the agent uses it when
// present and otherwise calls Generate once and reports the whole text as a
// single delta.
//
// This package is level 0 of the architecture: it imports nothing of tollgate.
package model
