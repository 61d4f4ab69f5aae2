package server

import (
	"sync/atomic"

	"github.com/tollgate-dev/tollgate/mcptool"
)

// CountMCPLoads counts the MCP servers files GET /v1/mcp/logins parses
// until restore is called; the test calling it must not be parallel.
func CountMCPLoads() (count func() int64, restore func()) {
	var n atomic.Int64
	old := parseMCP
	parseMCP = func(path string, data []byte) (*mcptool.Config, error) {
		n.Add(1)
		return old(path, data)
	}
	return n.Load, func() { parseMCP = old }
}

// BeforeMCPParse calls change before GET /v1/mcp/logins parses an MCP
// servers file, until restore is called (a file rewritten between its read
// and its parse); the test calling it must not be parallel.
func BeforeMCPParse(change func(path string)) (restore func()) {
	old := parseMCP
	parseMCP = func(path string, data []byte) (*mcptool.Config, error) {
		change(path)
		return old(path, data)
	}
	return func() { parseMCP = old }
}
