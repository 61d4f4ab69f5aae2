package server

import (
	"encoding/json"
	"net/http"

	"github.com/tollgate-dev/tollgate/internal/serverapi"
)

func writeProblem(w http.ResponseWriter, r *http.Request, p serverapi.Problem) {
	if p.Type == "" {
		p.Type = "about:blank"
	}
	if p.Title == "" {
		p.Title = http.StatusText(p.Status)
	}
	if r != nil {
		p.Instance = r.URL.Path
	}
	if p.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="tollgate"`)
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(p.Status)
	_ = json.NewEncoder(w).Encode(p)
}

func problemf(w http.ResponseWriter, r *http.Request, status int, detail string) {
	writeProblem(w, r, serverapi.Problem{Status: status, Detail: detail})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	// Arguments and prompts as written ("a && b > c", not "\u0026\u0026"
	// and "\u003e"): the body is application/json with nosniff, never HTML.
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}
