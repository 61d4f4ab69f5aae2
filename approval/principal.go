package approval

import "github.com/tollgate-dev/tollgate/tool"

// Principals the runtime itself decides as.
var (
	// Runtime is the runtime deciding on its own (an unknown tool, invalid
	// arguments, an expiry, a used approval).
	Runtime = tool.Principal{Kind: tool.PrincipalRuntime}
	// Default is who allows a call when no source objected ("runtime:default").
	Default = tool.Principal{Kind: tool.PrincipalRuntime, Name: "default"}
)
