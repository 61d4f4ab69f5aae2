package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-dev/tollgate/internal/benchwork"
)

func TestMain(m *testing.M) {
	benchwork.ServeChild()
	os.Exit(m.Run())
}

func testConfig(t *testing.T, args ...string) config {
	t.Helper()
	cfg, err := parseFlags(append([]string{"-n", "2", "-reps", "1", "-warmup", "0"}, args...), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// rowRE is a driver's row: name, wire, six figures, three ratios, two wire
// figures, failed runs.
var rowRE = regexp.MustCompile(`^\| ([a-z-]+) \| (json|sse) \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9]+ \| [0-9.]+ \| ([0-9.]+|–) \| ([0-9.]+|–) \| ([0-9.]+|–) \| 2\.00 \| [0-9.]+ \| 0 \|$`)

// Every driver of both providers gets the right answer (run fails
// otherwise), and the report has a row per driver and provider, with ratios
// for all but the floors, and the ten targets.
func TestRunBothProviders(t *testing.T) {
	var out, log bytes.Buffer
	if err := run(context.Background(), testConfig(t, "-provider", "both"), &out, &log); err != nil {
		t.Fatalf("run: %v\n%s\n%s", err, log.String(), out.String())
	}
	report := out.String()
	sections := strings.Split(report, "\n## ")
	var names []string
	for _, s := range sections[1:] {
		names = append(names, strings.SplitN(s, "\n", 2)[0])
	}
	if want := []string{"openai", "anthropic", "Targets", "Drivers"}; !equal(names, want) {
		t.Fatalf("sections %q, want %q\n%s", names, want, report)
	}
	wantWire := map[string]string{
		"floor": "json", "floor-sse": "sse", "tollgate": "json", "tollgate-generate": "json",
		"tollgate-stream": "sse", "tollgate-governed": "json", "model-generate": "json", "model-stream": "sse",
	}
	for _, sec := range sections[1:3] {
		var got []string
		for _, line := range strings.Split(sec, "\n") {
			if !strings.HasPrefix(line, "| ") || strings.HasPrefix(line, "| driver") {
				continue
			}
			m := rowRE.FindStringSubmatch(line)
			if m == nil {
				t.Errorf("row %q has not the report's shape", line)
				continue
			}
			got = append(got, m[1])
			if m[2] != wantWire[m[1]] {
				t.Errorf("%s: wire %s, want %s", m[1], m[2], wantWire[m[1]])
			}
			isFloor := m[1] == "floor" || m[1] == "floor-sse"
			if (m[3] == "–") != isFloor || (m[4] == "–") != isFloor || (m[5] == "–") != isFloor {
				t.Errorf("row %q: ratios for every driver but the floors", line)
			}
		}
		if !equal(got, driverNames) {
			t.Errorf("rows %q, want %q", got, driverNames)
		}
	}
	if n := strings.Count(sections[3], "\n| openai |") + strings.Count(sections[3], "\n| anthropic |"); n != 2*(len(targets)+1) {
		t.Errorf("%d target and noise rows, want %d\n%s", n, 2*(len(targets)+1), sections[3])
	}
	for _, p := range providers {
		if !regexp.MustCompile(`\n\| ` + p + ` \| tollgate-generate, wall time × tollgate \(the same code: noise\) \| [0-9.]+ \| – \| – \|\n`).MatchString(sections[3]) {
			t.Errorf("no noise row for %s:\n%s", p, sections[3])
		}
	}
	if strings.Contains(report, "## Failures") {
		t.Errorf("a failure reported:\n%s", report)
	}
}

func equal(a, b []string) bool { return strings.Join(a, ",") == strings.Join(b, ",") }

// brokenRun measures the floor and one driver of the test's making.
func brokenRun(t *testing.T, bad func(base string) func(context.Context) (string, error)) (string, error) {
	t.Helper()
	mock, err := benchwork.StartChild()
	if err != nil {
		t.Fatal(err)
	}
	defer mock.Close()
	cfg := testConfig(t, "-provider", "openai", "-drivers", "floor")
	cfg.n = 3
	ds, err := newDrivers("openai", mock.URL, cfg.drivers)
	if err != nil {
		t.Fatal(err)
	}
	ds = append(ds, &driver{provider: "openai", name: "tollgate", wire: "json", desc: "broken", run: bad(mock.URL)})
	var out bytes.Buffer
	err = measure(context.Background(), cfg, mock, ds, &out, io.Discard)
	return out.String(), err
}

// A driver that fails on its first run fails the program before anything
// is measured.
func TestBrokenDriverFailsFirst(t *testing.T) {
	out, err := brokenRun(t, func(string) func(context.Context) (string, error) {
		return func(context.Context) (string, error) { return benchwork.Mismatch + ": tool results []", nil }
	})
	if err == nil || !strings.Contains(err.Error(), "openai/tollgate: first run: final answer") || out != "" {
		t.Fatalf("err %v, report %q", err, out)
	}
}

// A driver that goes wrong while measured is reported, and fails the
// program after the report.
func TestDriverFailingLaterFailsTheProgram(t *testing.T) {
	calls := 0
	out, err := brokenRun(t, func(base string) func(context.Context) (string, error) {
		return func(ctx context.Context) (string, error) {
			calls++
			if calls == 3 {
				return "", errors.New("connection reset\x1b[2J")
			}
			return benchwork.FloorOpenAI(ctx, base, false)
		}
	})
	if !errors.Is(err, errFailed) {
		t.Fatalf("err %v, want errFailed", err)
	}
	want := "- openai/tollgate: 1 of 3 runs failed; the first: connection reset?[2J"
	if !strings.Contains(out, "## Failures\n\n"+want+"\n") {
		t.Fatalf("report lacks %q:\n%s", want, out)
	}
}

// A driver that sends the mock wrong tool results but claims the right
// answer is caught by the mock's count.
func TestMockMismatchFailsTheProgram(t *testing.T) {
	calls := 0
	out, err := brokenRun(t, func(base string) func(context.Context) (string, error) {
		return func(ctx context.Context) (string, error) {
			calls++
			if calls == 2 {
				body := `{"messages":[{"role":"tool","content":"cloudy"},{"role":"tool","content":"5"}]}`
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/chat/completions", strings.NewReader(body))
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					return "", err
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			return benchwork.Answer, nil
		}
	})
	if !errors.Is(err, errFailed) || !strings.Contains(out, "- the mock answered MISMATCH 1 times") {
		t.Fatalf("err %v, report:\n%s", err, out)
	}
}

func TestFlags(t *testing.T) {
	for _, c := range []struct{ args, err string }{
		{"-provider gemini", `-provider "gemini": want openai, anthropic or both`},
		{"-n 0", "-n 0: want 1 to 100000"},
		{"-reps 101", "-reps 101: want 1 to 100"},
		{"-warmup -1", "-warmup -1: want 0 to 10000"},
		{"-drivers floor,eino", `-drivers: no driver "eino"`},
		{"-timeout 0s", "-timeout 0s: want a positive duration"},
		{"extra", `unexpected argument "extra"`},
	} {
		_, err := parseFlags(strings.Fields(c.args), io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: %v, want %q", c.args, err, c.err)
		}
	}
	cfg, err := parseFlags([]string{"-provider", "anthropic", "-drivers", "tollgate, floor,tollgate"}, io.Discard)
	if err != nil || !equal(cfg.providers, []string{"anthropic"}) || !equal(cfg.drivers, []string{"tollgate", "floor"}) ||
		cfg.n != 300 || cfg.reps != 3 || cfg.timeout != 30*time.Second {
		t.Errorf("%+v, %v", cfg, err)
	}
}
