package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/tollgate-dev/tollgate/internal/browsertest"
	"github.com/tollgate-dev/tollgate/internal/web"
)

// chrome is the package's one Chromium, for the tests that drive the
// approvals page of `tollgate serve`; TestMain closes it.
var chrome browsertest.Chrome

// A run waits for an approval when `tollgate serve` is killed with SIGKILL;
// the approvals page of a new server on the same state directory shows it,
// a click on Approve resumes the run, the command runs exactly once, and the
// page shows the run's result.
func TestServePageApprovesAfterSIGKILL(t *testing.T) {
	t.Parallel()
	browsertest.Need(t)
	ws, token, run, second := haltedAcrossSIGKILL(t, "counted once")
	resp, err := http.Get(second.url + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Security-Policy") != web.ContentSecurityPolicy {
		t.Fatalf("GET / of tollgate serve: %d, CSP %q", resp.StatusCode, resp.Header.Get("Content-Security-Policy"))
	}

	ctx := chrome.Tab(t)
	browsertest.SignIn(t, ctx, second.url, token)
	card := `li.approval`
	browsertest.Do(t, ctx, chromedp.WaitVisible(chromedp.CSS(card+` button.approve`)))
	args := browsertest.Value(t, ctx, chromedp.TextContent(chromedp.CSS(card+` pre.args`)))
	facts := browsertest.Value(t, ctx, chromedp.TextContent(chromedp.CSS(card+` dl.facts`)))
	if !strings.Contains(args, "echo ran >> count.txt") || !strings.Contains(facts, "rule:review-bash") || !strings.Contains(facts, "commands are reviewed") {
		t.Fatalf("the card shows arguments %q and facts %q", args, facts)
	}
	if _, err := os.Stat(filepath.Join(ws, "count.txt")); !os.IsNotExist(err) {
		t.Fatalf("the command ran before the approval (%v)", err)
	}
	browsertest.Do(t, ctx, chromedp.Click(chromedp.CSS(card+` button.approve`)))
	browsertest.WaitText(t, ctx, card+` .outcome`, "Approved: bash")
	second.waitEvent(t, token, run.ID, "run.finished")
	b, err := os.ReadFile(filepath.Join(ws, "count.txt"))
	if err != nil || string(b) != "ran\n" {
		t.Fatalf("count.txt = %q (%v), want the command's one line", b, err)
	}
	browsertest.Do(t, ctx, chromedp.Click(chromedp.CSS(fmt.Sprintf(`#runs a[href="#run=%s"]`, run.ID))))
	browsertest.WaitText(t, ctx, `#run-result`, "counted once")
	browsertest.WaitText(t, ctx, `#run-calls .decision`, "person:alice")
	browsertest.SameDocument(t, ctx)
	browsertest.Screenshot(t, ctx, "serve-run-view.png")
}
