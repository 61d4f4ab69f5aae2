package web_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/web"
)

func get(t *testing.T, h http.Handler, path string, hdr ...string) *http.Response {
	t.Helper()
	req := httptest.NewRequest("GET", path, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

// The page and its assets carry the CSP that allows only the page's own
// script, and the page has no inline script, handler or style for it to
// allow.
func TestPageHeadersAndNoInlineScript(t *testing.T) {
	h := web.Handler()
	resp := get(t, h, "/")
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /: %d", resp.StatusCode)
	}
	for k, want := range map[string]string{
		"Content-Security-Policy": web.ContentSecurityPolicy,
		"Content-Type":            "text/html; charset=utf-8",
		"Cache-Control":           "no-store",
		"X-Content-Type-Options":  "nosniff",
		"X-Frame-Options":         "DENY",
		"Referrer-Policy":         "no-referrer",
	} {
		if got := resp.Header.Get(k); got != want {
			t.Errorf("%s: %q, want %q", k, got, want)
		}
	}
	csp := resp.Header.Get("Content-Security-Policy")
	for _, want := range []string{"script-src 'self'", "default-src 'none'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("the CSP %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
		t.Errorf("the CSP allows inline or eval'd script: %q", csp)
	}
	page := string(body)
	scripts := regexp.MustCompile(`(?is)<script([^>]*)>(.*?)</script>`).FindAllStringSubmatch(page, -1)
	if len(scripts) != 1 {
		t.Fatalf("the page has %d scripts, want 1", len(scripts))
	}
	for _, s := range scripts {
		if !strings.Contains(s[1], `src="assets/app.js?v=`) || strings.TrimSpace(s[2]) != "" {
			t.Errorf("an inline script or a foreign one: %q", s[0])
		}
	}
	if m := regexp.MustCompile(`(?i)\son[a-z]+\s*=|\sstyle\s*=|javascript:`).FindString(page); m != "" {
		t.Errorf("the page has an inline handler or style: %q", m)
	}
	for _, want := range []string{`<label for="token">`, `aria-live="polite"`, `type="password"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
}

func TestAssets(t *testing.T) {
	h := web.Handler()
	for path, ctype := range map[string]string{"/assets/app.js": "text/javascript; charset=utf-8", "/assets/app.css": "text/css; charset=utf-8"} {
		resp := get(t, h, path)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != ctype {
			t.Errorf("GET %s: %d %q, want 200 %q", path, resp.StatusCode, resp.Header.Get("Content-Type"), ctype)
		}
		if resp.Header.Get("Content-Security-Policy") != web.ContentSecurityPolicy {
			t.Errorf("GET %s: no CSP", path)
		}
		etag := resp.Header.Get("ETag")
		if etag == "" {
			t.Fatalf("GET %s: no ETag", path)
		}
		if again := get(t, h, path, "If-None-Match", etag); again.StatusCode != http.StatusNotModified {
			t.Errorf("GET %s with its ETag: %d, want 304", path, again.StatusCode)
		}
	}
	for _, path := range []string{"/assets/", "/assets/nope.js", "/assets/../templates/index.html", "/index.html", "/templates/index.html"} {
		if resp := get(t, h, path); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, resp.StatusCode)
		}
	}
	req := httptest.NewRequest("POST", "/", nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST /: %d, want 405", rec.Code)
	}
}

// The script never writes HTML from data: no innerHTML, outerHTML,
// insertAdjacentHTML, document.write or eval.
func TestScriptWritesTextOnly(t *testing.T) {
	resp := get(t, web.Handler(), "/assets/app.js")
	js, _ := io.ReadAll(resp.Body)
	if m := regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function|setTimeout\(['"]`).Find(js); m != nil {
		t.Errorf("app.js uses %s", m)
	}
}

func ExampleHandler() {
	page := web.Handler() // server.Options{Page: page} serves it at / and /assets/
	rec := httptest.NewRecorder()
	page.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	fmt.Println(rec.Code, rec.Header().Get("Content-Type"))
	fmt.Println(strings.Contains(rec.Header().Get("Content-Security-Policy"), "script-src 'self'"))
	// Output:
	// 200 text/html; charset=utf-8
	// true
}
