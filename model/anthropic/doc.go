// Package anthropic is tollgate's provider for Anthropic's Messages API. It
// speaks the wire format itself, with net/http: answers and events are
// decoded by hand into what encoding/json would decode from them (checked
// by differential tests and a fuzz target), requests are written by hand
// into the bytes encoding/json would write. The official SDK
// github.com/anthropics/anthropic-sdk-go/v2 is its test oracle: the tests
// decode the requests it sends and the answers it reads with the SDK's own
// types and compare.
//
// It only translates between tollgate's types and the Messages API
// (https://docs.anthropic.com/en/api/messages):
//
//   - system messages are hoisted out of the conversation into the request's
//     system field, wherever they stand;
//   - an assistant message becomes a text block and tool_use blocks;
//   - tool results become tool_result blocks (is_error set on failures) in a
//     user turn, consecutive results, and a user message right after them,
//     merged into one turn as the API requires;
//   - max_tokens, required by the API, defaults to 4096;
//   - stop reasons map onto [model.FinishReason]; usage counts cached input
//     tokens as input.
//
// [Model.Stream] reads the server-sent events (message_start,
// content_block_start, content_block_delta with text_delta or
// input_json_delta, message_delta with stop_reason and usage, message_stop)
// and assembles tool inputs per content block (or takes the input of
// content_block_start, where some compatible servers send it whole). An
// event without an event: line is known by the type in its data, as some
// compatible servers send them; ping events are skipped. An error event is
// a *model.ProviderError with the server's message (its data's text, on one
// line, when that is not JSON). A server that answers a streaming request
// with one JSON body (a message, or an error object) is read as Generate
// reads it.
//
// Every request it builds keeps the Messages API's rules by construction
// (the list is above messages in the source): tool_use inputs are objects,
// failed tool results have text, ids fit the API's alphabet, every tool call
// has its result, blank text is left out. What cannot be made valid is an
// error before anything is sent.
//
// The key is sent in the x-api-key header, with the anthropic-version header
// 2026-10-21 unless [Options.APIVersion] says otherwise. Failures
// are retried by internal/retry (429, 500, 502, 503, 504, Anthropic's 529
// overloaded, network errors; Retry-After in seconds honoured) and are
// reported as *model.ProviderError, whose text never contains the key. The
// package reads no environment variable; [KeyFromEnv] is the documented way
// to. A JSON answer and a whole stream are bounded to 32 MiB
// (Options.MaxResponseBytes), one event of a stream to 8 MiB; a redirect is
// followed only within the base URL's origin.
//
// The source follows the call: anthropic.go has the [Model], its options and
// the HTTP exchange; request.go translates a request and its transcript
// (with the rules above); tools.go the tool definitions; response.go reads
// a whole answer; stream.go reads the events of a stream and assembles
// them; errors.go turns failures into *model.ProviderError; wire.go and
// decode.go hold the wire types, their encoding and the hand decoder.
package anthropic
