// Package configread reads tollgate's configuration files one way: bounded
// before they are parsed (package internal/bounded: size, depth, aliases),
// decoded with positions (goccy/go-yaml's syntax tree for YAML, and for
// JSON a decoder that keeps every value's offset), unknown keys refused
// with the key that was probably meant, and every problem reported as one
// [configfile.Problem]: FILE:LINE:COL: field: message.
//
// Its users are server.yaml and the tokens file (package server), `tollgate
// worker`'s file (internal/dbosengine), policies (policy), seed 000's hooks YAML
// (hooks/declarative), Claude Code's settings.json (hooks/claudecode),
// mcp.json (mcptool) and scripts (model/scripted).
package configread
