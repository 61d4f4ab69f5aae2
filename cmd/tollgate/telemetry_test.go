package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	collmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	colltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is an OTLP/HTTP receiver that keeps what it is sent.
type otlpReceiver struct {
	mu      sync.Mutex
	spans   []string // span names
	metrics []string // metric names
	other   []string // requests to other paths
	srv     *httptest.Server
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	r := &otlpReceiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(io.LimitReader(req.Body, 4<<20))
		r.mu.Lock()
		defer r.mu.Unlock()
		switch {
		case err != nil:
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		case req.URL.Path == "/v1/traces":
			var m colltrace.ExportTraceServiceRequest
			if err := proto.Unmarshal(body, &m); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			for _, rs := range m.ResourceSpans {
				for _, ss := range rs.ScopeSpans {
					for _, s := range ss.Spans {
						r.spans = append(r.spans, s.Name)
					}
				}
			}
		case req.URL.Path == "/v1/metrics":
			var m collmetrics.ExportMetricsServiceRequest
			if err := proto.Unmarshal(body, &m); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			for _, rm := range m.ResourceMetrics {
				for _, sm := range rm.ScopeMetrics {
					for _, mt := range sm.Metrics {
						r.metrics = append(r.metrics, mt.Name)
					}
				}
			}
		default:
			r.other = append(r.other, req.URL.Path)
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *otlpReceiver) got() (spans, metrics, other []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(slices.Values(r.spans)), slices.Sorted(slices.Values(r.metrics)), slices.Clone(r.other)
}

// telemetryScript is a run with one allowed call and one denied by --deny.
func telemetryScript(t *testing.T) (script, dir string) {
	dir = t.TempDir()
	script = filepath.Join(t.TempDir(), "s.yaml")
	src := "turns:\n  - toolCalls: [{name: glob, args: {pattern: '*'}}, {name: write, args: {path: a.txt, content: x}}]\n  - text: done\n"
	if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return script, dir
}

func clearOTelEnv(t *testing.T) {
	for _, n := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "OTEL_SDK_DISABLED"} {
		t.Setenv(n, "")
	}
}

func TestRunExportsOverOTLPWhenTheEndpointIsSet(t *testing.T) {
	clearOTelEnv(t)
	recv := newOTLPReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.srv.URL)
	script, dir := telemetryScript(t)
	code, out, errOut := runMain(t, "run", "--model", "script:"+script, "--workdir", dir, "--deny", "write", "hi")
	if code != exitDone {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	spans, metrics, other := recv.got()
	want := []string{"chat " + script, "chat " + script, "execute_tool glob", "execute_tool write", "invoke_agent agent"}
	if !slices.Equal(spans, want) {
		t.Errorf("spans %q, want %q", spans, want)
	}
	for _, m := range []string{"gen_ai.client.operation.duration", "gen_ai.client.token.usage", "tollgate.tool.decisions"} {
		if !slices.Contains(metrics, m) {
			t.Errorf("metrics %q lack %s", metrics, m)
		}
	}
	if len(other) > 0 {
		t.Errorf("requests to %q", other)
	}
	if strings.Contains(out+errOut, "telemetry") {
		t.Errorf("telemetry talk in the output:\n%s\n%s", out, errOut)
	}
}

func TestRunExportsNothingWithoutTheEndpoint(t *testing.T) {
	recv := newOTLPReceiver(t)
	script, dir := telemetryScript(t)
	for name, env := range map[string]map[string]string{
		"unset": {},
		// The variables the exporter would also read are not enough.
		"only headers": {"OTEL_EXPORTER_OTLP_HEADERS": "x=y", "OTEL_SERVICE_NAME": "svc"},
		"disabled":     {"OTEL_EXPORTER_OTLP_ENDPOINT": recv.srv.URL, "OTEL_SDK_DISABLED": "true"},
	} {
		t.Run(name, func(t *testing.T) {
			clearOTelEnv(t)
			for k, v := range env {
				t.Setenv(k, v)
			}
			env := &cliEnv{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard}
			rc := newRunCommand(env)
			if err := rc.cmd.ParseFlags([]string{"--model", "script:" + script, "--workdir", dir}); err != nil {
				t.Fatal(err)
			}
			cfg, err := rc.flags.config(dir)
			if err != nil {
				t.Fatal(err)
			}
			built, err := (&cliBuilder{env: env, exts: runExtensions()}).Build(t.Context(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(built.Options.Middleware); n != 0 {
				t.Errorf("%d middleware, want none", n)
			}
			if err := built.Close(); err != nil {
				t.Error(err)
			}
			if code, out, errOut := runMain(t, "run", "--model", "script:"+script, "--workdir", dir, "hi"); code != exitDone {
				t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
			}
			if spans, metrics, other := recv.got(); len(spans)+len(metrics)+len(other) > 0 {
				t.Errorf("sent spans %q, metrics %q, other %q", spans, metrics, other)
			}
		})
	}
}

// `tollgate gateway` exports a span per tools/call, and the decisions
// metric, when the endpoint is set.
func TestGatewayExportsOverOTLP(t *testing.T) {
	clearOTelEnv(t)
	recv := newOTLPReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.srv.URL)
	dir := t.TempDir()
	cs, stop := gatewayOverStdio(t, "--mcp", gatewayMCPFile(t, dir))
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "good", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	if code, stderr := stop(); code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	spans, metrics, _ := recv.got()
	if !slices.Equal(spans, []string{"execute_tool mcp__app__good"}) || !slices.Contains(metrics, "tollgate.tool.decisions") {
		t.Errorf("spans %q, metrics %q; want the call's span and the decisions metric", spans, metrics)
	}
}
