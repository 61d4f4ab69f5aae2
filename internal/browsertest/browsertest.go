// Package browsertest runs the tests of the approvals page in a real
// browser: one headless Chromium per test package ([Chrome]), a tab per test,
// driven with github.com/chromedp/chromedp. It is for tests only; no library
// package or command may import it.
//
// Chromium is Debian's (apt-get install chromium; scripts/test.sh installs
// it), found on PATH or at $TOLLGATE_CHROMIUM. It runs as root on a bare CI
// machine whose only network is the loopback, so it starts headless, without
// its sandbox, GPU, QUIC, first-run screens, background networking,
// component updates or sync, in a fresh user data directory.
//
// A test that needs the browser fails, rather than skips, when Chromium is
// missing: a missing browser must not pass silently. Setting
// TOLLGATE_TEST_BROWSER=skip skips those tests on purpose, and says so.
package browsertest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// EnvSkip names the variable that, set to "skip", skips the browser tests
// knowingly instead of failing them when no Chromium is installed.
const EnvSkip = "TOLLGATE_TEST_BROWSER"

// Need skips t when EnvSkip is "skip"; a test that starts servers before
// its first [Chrome.Tab] calls it first, so that a skip costs nothing.
func Need(t testing.TB) {
	t.Helper()
	if os.Getenv(EnvSkip) == "skip" {
		t.Skipf("browser tests skipped on purpose (%s=skip)", EnvSkip)
	}
}

// TabTimeout bounds everything one test does in its tab.
const TabTimeout = 90 * time.Second

// Path returns the Chromium to run: $TOLLGATE_CHROMIUM, else the first of
// chromium, chromium-browser, google-chrome on PATH. The error says how to
// install one.
func Path() (string, error) {
	if p := os.Getenv("TOLLGATE_CHROMIUM"); p != "" {
		return p, nil
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("this test needs Chromium and there is none on PATH: install Debian's chromium (apt-get install -y chromium; scripts/test.sh does) or set TOLLGATE_CHROMIUM (" + EnvSkip + "=skip skips such tests)")
}

// Chrome is one Chromium shared by a test package: the first [Chrome.Tab]
// starts it, [Chrome.Close] (from TestMain, after m.Run) stops it. The zero
// value is ready to use.
type Chrome struct {
	once sync.Once
	ctx  context.Context
	stop func()
	err  error
	dir  string
}

func (c *Chrome) start() {
	path, err := Path()
	if err != nil {
		c.err = err
		return
	}
	if c.dir, err = os.MkdirTemp("", "tollgate-chromium-"); err != nil {
		c.err = err
		return
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(c.dir),
		chromedp.WindowSize(1280, 1000),
	)
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, bcancel := chromedp.NewContext(actx)
	// Do with no actions starts the browser, bound to bctx (no timeout).
	if err := chromedp.Do(bctx); err != nil {
		bcancel()
		acancel()
		c.err = fmt.Errorf("starting %s: %w", path, err)
		return
	}
	c.ctx = bctx
	c.stop = func() { bcancel(); acancel() }
}

// Tab opens a new tab for the test (its own sessionStorage for each
// origin) and returns its context, which ends after [TabTimeout]; the tab
// closes when the test's cleanups run, before those registered earlier (a
// server the page talks to stops after the tab). It fails the test when
// Chromium is missing or does not start, and skips it as [Need] does.
func (c *Chrome) Tab(t testing.TB) context.Context {
	t.Helper()
	Need(t)
	c.once.Do(c.start)
	if c.err != nil {
		t.Fatal(c.err)
	}
	ctx, cancel := chromedp.NewContext(c.ctx)
	ctx, tcancel := context.WithTimeout(ctx, TabTimeout)
	t.Cleanup(func() { tcancel(); cancel() })
	return ctx
}

// Close stops the browser and removes its user data directory.
func (c *Chrome) Close() {
	if c.stop != nil {
		c.stop()
	}
	if c.dir != "" {
		_ = os.RemoveAll(c.dir)
	}
}

// Screenshot keeps a PNG of the whole page as name in the test's artifact
// directory (see go test -artifacts) and, when $TOLLGATE_ARTIFACTS is set,
// there too.
func Screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{t.ArtifactDir(), os.Getenv("TOLLGATE_ARTIFACTS")} {
		if dir == "" {
			continue
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", p)
	}
}

// Do runs actions in the tab, failing the test on an error.
func Do(t testing.TB, ctx context.Context, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatal(err)
	}
}

// Value runs an action that returns a value, failing the test on an error.
func Value[T any](t testing.TB, ctx context.Context, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Discard drops an action's value.
func Discard[T any](a chromedp.Action[T]) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		_, err := a(ctx, tg)
		return chromedp.Void{}, err
	}
}

// WaitText waits until the text of the first element the CSS selector sel
// selects contains want; on a timeout it fails the test with what the
// element shows.
func WaitText(t testing.TB, ctx context.Context, sel, want string) {
	t.Helper()
	js := fmt.Sprintf(`(() => { const e = document.querySelector(%q); return !!e && e.textContent.includes(%q); })()`, sel, want)
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
		got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector(%q)||{}).textContent||''`, sel)))
		t.Fatalf("waiting for %q in %s: %v (it shows %q)", want, sel, err, got)
	}
}

// SignIn opens the approvals page at baseURL, signs in with token and
// waits until its event stream is live, then marks the window, so that
// [SameDocument] tells whether the page was reloaded since.
func SignIn(t testing.TB, ctx context.Context, baseURL, token string) {
	t.Helper()
	Do(t, ctx,
		chromedp.Navigate(baseURL+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#token`)),
		chromedp.SendKeys(chromedp.CSS(`#token`), token),
		chromedp.SendKeys(chromedp.CSS(`#token`), "\r"),
		chromedp.WaitVisible(chromedp.CSS(`#stream-status.live`)),
		Discard(chromedp.Evaluate[bool](`window.__sameDocument = true`)),
	)
}

// SameDocument fails the test if the page was reloaded since [SignIn]: the
// page must have updated from its event stream.
func SameDocument(t testing.TB, ctx context.Context) {
	t.Helper()
	if !Value(t, ctx, chromedp.Evaluate[bool](`window.__sameDocument === true`)) {
		t.Fatal("the page was reloaded; it must update from the event stream")
	}
}
