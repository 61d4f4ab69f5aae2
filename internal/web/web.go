// Package web is the approvals page of package server: the page a person
// opens in a browser to see the approvals that wait for them, decide them
// (Approve, Deny with a reason, Edit the arguments and approve), and follow
// runs live. [Handler] is server.ApprovalsPage, which goes into
// server.Options.Page, served at GET / and GET /assets/...; `tollgate serve`
// sets it.
//
// The page is one html/template shell with a script and a style sheet
// embedded in the binary: no build step, no framework. Everything it knows
// it reads from the JSON API of package server with the token the person
// types in, which it keeps in the tab's sessionStorage (no cookie, so no
// cross-site request can use it) and sends as Authorization: Bearer. It
// follows GET /v1/events with an EventSource authenticated by a ticket of
// POST /v1/events/ticket, and refreshes what an event changes.
//
// What the model, a tool, an MCP server or a hook wrote (arguments, outputs,
// reasons, prompts) is shown as text only (textContent, never innerHTML),
// with invisible and bidirectional control characters made visible, and the
// page's Content-Security-Policy allows only the page's own script: see
// [ContentSecurityPolicy].
package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"html/template"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"
)

//go:embed assets templates
var files embed.FS

// ContentSecurityPolicy is the Content-Security-Policy header of every
// response of [Handler] (W3C CSP Level 3): scripts, styles and connections
// from the page's own origin only, no inline script or style, no plugins,
// no framing, no base URL or form target elsewhere.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; " +
	"connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// asset is an embedded file with its content type and digest.
type asset struct {
	body  []byte
	ctype string
	etag  string
}

type page struct {
	index  []byte
	assets map[string]asset
}

// Handler returns the approvals page: GET / (and HEAD) is the page, GET
// /assets/NAME its script and style sheet (with an ETag; a changed file
// gets a new ?v= in the page, so browsers never mix versions). Any other
// path is 404. The page names its assets and the API (v1/...) by URLs
// relative to its own, so that a server mounted under a path prefix
// (http.StripPrefix("/tg", srv) at "/tg/") works as at the root. Every response carries [ContentSecurityPolicy],
// X-Content-Type-Options: nosniff, Referrer-Policy: no-referrer and
// X-Frame-Options: DENY; the page itself is not cached (Cache-Control:
// no-store).
func Handler() http.Handler {
	p, err := load()
	if err != nil {
		// The files are embedded at build time: a failure here is a bug
		// of the build, caught by the package's tests.
		panic("web: " + err.Error())
	}
	return p
}

func load() (*page, error) {
	p := &page{assets: map[string]asset{}}
	err := fs.WalkDir(files, "assets", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := files.ReadFile(name)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		ctype := mime.TypeByExtension(path.Ext(name))
		if ctype == "" {
			ctype = "application/octet-stream"
		}
		p.assets[strings.TrimPrefix(name, "assets/")] = asset{body: b, ctype: ctype, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		return nil
	})
	if err != nil {
		return nil, err
	}
	tmpl, err := template.ParseFS(files, "templates/index.html")
	if err != nil {
		return nil, err
	}
	version := func(name string) string {
		a, ok := p.assets[name]
		if !ok {
			return "assets/" + name
		}
		return "assets/" + name + "?v=" + strings.Trim(a.etag, `"`)
	}
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, map[string]string{"Script": version("app.js"), "Style": version("app.css")}); err != nil {
		return nil, err
	}
	p.index = buf.Bytes()
	return p, nil
}

func (p *page) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if r.URL.Path == "/" {
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Cache-Control", "no-store")
		http.ServeContent(w, r, "index.html", time.Time{}, bytes.NewReader(p.index))
		return
	}
	name, ok := strings.CutPrefix(r.URL.Path, "/assets/")
	a, found := p.assets[name]
	if !ok || !found {
		http.NotFound(w, r)
		return
	}
	h.Set("Content-Type", a.ctype)
	h.Set("ETag", a.etag)
	h.Set("Cache-Control", "no-cache")
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(a.body))
}
