package records_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/internal/testkit"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/records"
	"github.com/tollgate-dev/tollgate/tool"
)

var at = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func rec(i int) gate.Record {
	return gate.Record{
		ID: fmt.Sprintf("c%d", i), Name: "transfer_funds", Turn: 1,
		RequestedArgs: json.RawMessage(`{"secret":"hunter2"}`), Args: json.RawMessage(`{"secret":"hunter2"}`),
		RequestedDigest: "sha256:aa", ArgsDigest: "sha256:bb", Output: "token=hunter2", Ran: true,
		Decision: gate.Decision{Outcome: gate.OutcomeApproved, By: tool.Principal{Kind: "person", Name: "alice"}, Reason: "ok", Votes: []tool.Vote{{Source: tool.Principal{Kind: "rule", Name: "ask"}, Decision: "ask"}}},
		Started:  at, Duration: 1500 * time.Millisecond,
	}
}

func TestLineContent(t *testing.T) {
	var buf, logs bytes.Buffer
	w := records.NewWriter(&buf, &records.Options{Run: "run_1", Now: func() time.Time { return at }, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	w.Record(context.Background(), rec(1))
	want := `{"time":"2030-01-01T00:00:00Z","run":"run_1","call":"c1","tool":"transfer_funds","turn":1,"requestedDigest":"sha256:aa","argsDigest":"sha256:bb","outcome":"approved","by":{"kind":"person","name":"alice"},"reason":"ok","votes":[{"source":{"kind":"rule","name":"ask"},"decision":"ask"}],"ran":true,"started":"2030-01-01T00:00:00Z","duration":1500000000}` + "\n"
	if d := cmp.Diff(want, buf.String()); d != "" {
		t.Errorf("line (-want +got):\n%s", d)
	}
	if strings.Contains(buf.String()+logs.String(), "hunter2") {
		t.Errorf("an argument or output value leaked:\n%s\n%s", buf.String(), logs.String())
	}
	if !strings.Contains(logs.String(), `"argsDigest":"sha256:bb"`) || !strings.Contains(logs.String(), `"by":"person:alice"`) {
		t.Errorf("log = %s", logs.String())
	}
	if strings.Contains(buf.String()+logs.String(), `actor`) {
		t.Errorf("an actor where nobody acted for alice:\n%s\n%s", buf.String(), logs.String())
	}
	// An administrator's answer for alice: the line and the log name both.
	buf.Reset()
	logs.Reset()
	admin := rec(3)
	admin.Decision.Actor = tool.Principal{Kind: tool.PrincipalPerson, Name: "root"}
	w.Record(context.Background(), admin)
	if !strings.Contains(buf.String(), `"by":{"kind":"person","name":"alice"},"actor":{"kind":"person","name":"root"}`) || !strings.Contains(logs.String(), `"actor":"person:root"`) {
		t.Errorf("line %s\nlog %s", buf.String(), logs.String())
	}
	var r bytes.Buffer
	records.NewWriter(&r, nil).WithRun("run_9")(context.Background(), rec(2))
	if !strings.Contains(r.String(), `"run":"run_9"`) {
		t.Errorf("WithRun line = %s", r.String())
	}
}

// Concurrent records (as the agent's parallel calls make them) give one whole
// line each, through a real agent run as Options.OnRecord.
func TestConcurrentThroughAgent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "records.jsonl")
	w, err := records.OpenFile(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	const n = 40
	var calls []model.FuncCall
	for i := 0; i < n; i++ {
		calls = append(calls, model.FuncCall{ID: fmt.Sprintf("c%d", i), Name: "echo", Arguments: map[string]any{"v": strings.Repeat("x", 2000)}})
	}
	m := testkit.Script(calls)
	echo := tool.Must("echo", "", func(ctx context.Context, in struct {
		V string `json:"v"`
	}) (string, error) {
		return in.V, nil
	}, nil)
	a, err := agent.New(&agent.Options{Model: m, Tools: agent.ToolList{echo}, OnRecord: w.Record, MaxParallel: 16})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(context.Background(), "go"); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l records.Line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		if l.Outcome != gate.OutcomeAllowed || !l.Ran || l.ArgsDigest == "" {
			t.Errorf("line %+v", l)
		}
		seen[l.Call] = true
	}
	if len(seen) != n {
		t.Fatalf("%d distinct calls recorded, want %d", len(seen), n)
	}
}

type failing struct{}

func (failing) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteErrorKept(t *testing.T) {
	w := records.NewWriter(failing{}, nil)
	w.Record(context.Background(), rec(1))
	w.Record(context.Background(), rec(2))
	if err := w.Close(); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("Close = %v, want the write error", err)
	}
}

// A records path that is a FIFO (planted by a tool in an earlier run) is
// refused at once instead of blocking the run.
func TestOpenFileRefusesFIFO(t *testing.T) {
	p := filepath.Join(t.TempDir(), "recs.jsonl")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := records.OpenFile(p, nil); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("err %v", err)
	}
}
