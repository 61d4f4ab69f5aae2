// Package serveconfig reads what `tollgate serve` is configured with:
// server.yaml ([LoadConfig], its agents checked by [Config.CheckAgents])
// and the tokens file ([LoadTokens], a [Tokens] table whose Lookup is
// server.Options.Tokens). Every problem is FILE:LINE:COL: field: message
// (a *configfile.Error); a file with any problem does not load.
package serveconfig
