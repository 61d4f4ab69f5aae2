package server

import (
	"sync/atomic"

	"github.com/tollgate-dev/tollgate/mcptool"
)

// CountMCPLoads counts the MCP servers files GET /v1/mcp/logins parses
// until restore is called; the test calling it must not be parallel.
func CountMCPLoads() (count func() int64, restore func()) {
	var n atomic.Int64
	old := loadMCP
	loadMCP = func(path string) (*mcptool.Config, error) {
		n.Add(1)
		return old(path)
	}
	return n.Load, func() { loadMCP = old }
}
