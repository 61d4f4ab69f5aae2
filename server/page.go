package server

import (
	"net/http"

	"github.com/tollgate-dev/tollgate/internal/web"
)

// ApprovalsPage returns tollgate's approvals page, for [Options.Page]: the
// page a person opens in a browser to see the approvals that wait for
// them, decide them and follow runs live, reading the server's JSON API
// with the token they type in. It names its assets and the API by URLs
// relative to its own, so it works under a path prefix too. Every response
// carries a Content-Security-Policy that allows the page's own script,
// style and connections only ("default-src 'none'; script-src 'self';
// style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none';
// form-action 'none'; frame-ancestors 'none'"), with
// X-Content-Type-Options: nosniff, Referrer-Policy: no-referrer and
// X-Frame-Options: DENY. `tollgate serve` sets it.
func ApprovalsPage() http.Handler { return web.Handler() }
