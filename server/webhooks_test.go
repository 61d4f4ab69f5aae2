package server_test

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/tollgate-dev/tollgate/internal/serverapi"
	"github.com/tollgate-dev/tollgate/server"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/memory"
)

// A webhook gets its tenant's events of the types it asks for, signed per
// Standard Webhooks; a failed delivery is retried with the same webhook-id;
// another tenant's events never reach it.
func TestWebhooks(t *testing.T) {
	secret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("a-signing-key-of-32-bytes-length"))
	verifier, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []string
	ids := map[string]int{}
	finished := make(chan struct{})
	failedOnce := false
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := verifier.Verify(body, r.Header); err != nil {
			t.Errorf("signature: %v", err)
			w.WriteHeader(400)
			return
		}
		var msg struct {
			Type string                `json:"type"`
			Data serverapi.StreamEvent `json:"data"`
		}
		_ = json.Unmarshal(body, &msg)
		mu.Lock()
		defer mu.Unlock()
		ids[r.Header.Get("webhook-id")]++
		if !failedOnce {
			failedOnce = true
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		got = append(got, msg.Type)
		if msg.Type == "run.finished" {
			close(finished)
		}
	}))
	defer recv.Close()
	// The URL holds credentials (user information, a query token): the
	// failed delivery's log line must show neither.
	hookURL := strings.Replace(recv.URL, "http://", "http://hookuser:PASSWORD-IN-URL@", 1) + "/in?token=TOKEN-IN-URL"
	var logs syncLog
	f := newFixture(t, nil, nil, &server.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Webhooks: []server.Webhook{{URL: hookURL, Secret: secret, Tenant: "acme", Types: []string{"approval.*", "run.finished"}}}})
	var other serverapi.RunView
	f.do("POST", "/v1/runs", bobToken, serverapi.StartRunRequest{Agent: "payer", Prompt: "pay"}, &other)
	f.waitRun(other.ID, store.RunPending)
	id := f.startRun()
	a := f.pending(id)
	f.do("POST", "/v1/approvals/"+a.ID+"/decision", aliceToken, serverapi.DecisionRequest{Decision: "approve", ArgsDigest: a.ArgsDigest}, nil)
	select {
	case <-finished:
	case <-time.After(20 * time.Second):
		t.Fatal("no run.finished delivered")
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"approval.requested", "approval.decided", "run.finished"}; !slices.Equal(got, want) {
		t.Fatalf("delivered %v, want %v (the other tenant's approval.requested must not be among them)", got, want)
	}
	retried := 0
	for _, n := range ids {
		if n == 2 {
			retried++
		}
	}
	if retried != 1 || len(ids) != 3 {
		t.Fatalf("deliveries by webhook-id %v: want the first retried once under the same id", ids)
	}
	if l := logs.String(); !strings.Contains(l, "webhook delivery failed") || strings.Contains(l, "PASSWORD-IN-URL") || strings.Contains(l, "TOKEN-IN-URL") {
		t.Fatalf("the failed delivery's log shows the URL's credentials, or nothing:\n%s", l)
	}
	if _, err := server.New(memory.New(nil), f.builder, &server.Options{Webhooks: []server.Webhook{{URL: "ftp://x", Secret: secret}}}); err == nil {
		t.Fatal("a webhook URL that is not http(s) was accepted")
	}
}

// syncLog is a log destination safe for concurrent use.
type syncLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
