// Package toolkit is tollgate's tool registry: the builtin tools (package
// builtin) on by default, plus the caller's own tools, resolved by name, with
// the definitions the model sees and adapters to the OpenAI, Anthropic and
// Gemini tool formats.
//
// # Composition
//
// [New] assembles a [Toolkit] from [Options], following seed 002's
// create_toolkit (builtins on unless switched off; extra tools added):
//
//   - The builtins are on unless Options.NoBuiltins is set; Options.Disable
//     switches single builtins off by name. They are rooted at
//     Options.Workdir (default: the process's working directory).
//   - Options.Extra adds tools. An extra tool with the name of a builtin
//     shadows (replaces) that builtin. Any other duplicate name, such as two
//     extra tools with one name, is an error at construction naming both.
//   - Every name must be valid for the model providers (see tool.ValidName).
//   - The builtin bash must be confined (Options.Builtin.Sandbox, which
//     package sandbox provides) or declared unconfined (Options.Unconfined):
//     a toolkit never runs a model's commands unconfined by omission.
//
// [Toolkit.Tools] lists the builtins that remain, in the fixed order of
// builtin.Names (bash, read, write, edit, grep, glob, webfetch, question,
// apply_patch, todowrite), followed by the extra
// tools in the order given.
//
// # Execution
//
// [Toolkit.Execute] runs steps 1, 2 and 6 of the tool-call pipeline of the
// architecture (resolve, validate, execute) with no hooks or policies around
// them: an unknown name or invalid arguments give an error result naming the
// problem, and a Go error or a panic from the tool becomes an error result.
// The agent runs the full pipeline itself and uses [Toolkit.Get] and
// [Toolkit.Validate].
//
// # Provider formats
//
// [Toolkit.Defs] is what the model sees: names, descriptions and input
// schemas, never hints. [ProviderTools] turns definitions into the OpenAI,
// Anthropic or Gemini tool format, as JSON; for Gemini, which accepts only
// a subset of JSON Schema (the OpenAPI 3.0 schema object), it rewrites each
// schema into it.
//
// This package is level 1 of the architecture: it imports tool, model and
// builtin, and nothing that imports it.
package toolkit
