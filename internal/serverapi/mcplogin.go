package serverapi

import "time"

// MCPLoginRequest is the body of POST /v1/mcp/logins: the server of one
// of the tenant's agents' mcp.json files to log the tenant in to.
type MCPLoginRequest struct {
	Agent  string `json:"agent"`
	Server string `json:"server"`
}

// MCPLoginStarted is the answer of POST /v1/mcp/logins: the URL the person
// opens to authorize; the authorization server sends the browser back to
// GET /v1/mcp/oauth/callback, which lands the token in the tenant's logins.
type MCPLoginStarted struct {
	Agent            string    `json:"agent"`
	Server           string    `json:"server"`
	AuthorizationURL string    `json:"authorizationUrl"`
	ExpiresAt        time.Time `json:"expiresAt"`
}

// MCPLoginView is one OAuth-capable MCP server of an agent of the tenant
// (GET /v1/mcp/logins): a streamable-HTTP server of the agent's mcp.json
// files, and whether the tenant is logged in to it.
type MCPLoginView struct {
	Agent    string `json:"agent"`
	Server   string `json:"server"`
	URL      string `json:"url"`
	LoggedIn bool   `json:"loggedIn"`
}
