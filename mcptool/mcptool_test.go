package mcptool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tollgate-dev/tollgate/internal/argcheck"
	"github.com/tollgate-dev/tollgate/tool"
)

func ptr[T any](v T) *T { return &v }

var objectSchema = map[string]any{"type": "object"}

// serve runs srv on one end of an in-memory pipe and returns the other end.
func serve(t *testing.T, srv *mcp.Server) mcp.Transport {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	return ct
}

func newServer(opts *mcp.ServerOptions) *mcp.Server {
	return mcp.NewServer(&mcp.Implementation{Name: "test-server", Version: "1.2.3"}, opts)
}

// addTool adds a tool whose handler returns res.
func addTool(srv *mcp.Server, name string, ann *mcp.ToolAnnotations, res *mcp.CallToolResult) {
	srv.AddTool(&mcp.Tool{Name: name, Description: "the " + name + " tool", InputSchema: objectSchema, Annotations: ann},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return res, nil })
}

func open(t *testing.T, cfg *Config, opts *Options) *Set {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Open(ctx, cfg, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func toolsByName(s *Set) map[string]*Tool {
	m := map[string]*Tool{}
	for _, t := range s.Tools() {
		m[t.Spec().Name] = t.(*Tool)
	}
	return m
}

func status(t *testing.T, s *Set, name string) ServerStatus {
	t.Helper()
	for _, st := range s.Servers() {
		if st.Name == name {
			return st
		}
	}
	t.Fatalf("no status for server %q", name)
	return ServerStatus{}
}

func TestHintsFor(t *testing.T) {
	full := &mcp.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: ptr(false), IdempotentHint: true, OpenWorldHint: ptr(false)}
	for _, tc := range []struct {
		name    string
		ann     *mcp.ToolAnnotations
		trusted bool
		want    tool.Hints
	}{
		{"no annotations, trusted: MCP defaults", nil, true, tool.Hints{ReadOnly: false, Destructive: true, Idempotent: false, OpenWorld: true}},
		{"no annotations, untrusted", nil, false, strictHints()},
		{"empty annotations, trusted: defaults", &mcp.ToolAnnotations{}, true, strictHints()},
		{"only destructive false, trusted", &mcp.ToolAnnotations{DestructiveHint: ptr(false)}, true, tool.Hints{Destructive: false, OpenWorld: true}},
		{"only open world false, trusted", &mcp.ToolAnnotations{OpenWorldHint: ptr(false)}, true, tool.Hints{Destructive: true, OpenWorld: false}},
		{"only read-only, trusted", &mcp.ToolAnnotations{ReadOnlyHint: true}, true, tool.Hints{ReadOnly: true, Destructive: true, OpenWorld: true}},
		{"all loosening claims, trusted", full, true, tool.Hints{ReadOnly: true, Destructive: false, Idempotent: true, OpenWorld: false}},
		{"all loosening claims, untrusted: not believed", full, false, strictHints()},
		{"read-only claim, untrusted: not believed", &mcp.ToolAnnotations{ReadOnlyHint: true}, false, strictHints()},
		{"strict claims, untrusted", &mcp.ToolAnnotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(true)}, false, strictHints()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, HintsFor(tc.ann, tc.trusted)); diff != "" {
				t.Errorf("HintsFor (-want +got):\n%s", diff)
			}
		})
	}
	if diff := cmp.Diff(tool.Hints{ReadOnly: true, Idempotent: true}, claimedHints(full)); diff != "" {
		t.Errorf("ClaimedHints (-want +got):\n%s", diff)
	}
	if (strictHints() != tool.Hints{Destructive: true, OpenWorld: true}) {
		t.Errorf("strictHints() = %+v, want only destructive and open world", strictHints())
	}
}

// TestToolsOverInMemoryServers covers names, sources, descriptions, schemas and
// hints (C37) of tools from a trusted and an untrusted server.
func TestToolsOverInMemoryServers(t *testing.T) {
	mk := func() *mcp.Server {
		srv := newServer(nil)
		addTool(srv, "read.thing", &mcp.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: ptr(false), IdempotentHint: true, OpenWorldHint: ptr(false)}, &mcp.CallToolResult{})
		addTool(srv, "bare", nil, &mcp.CallToolResult{})
		addTool(srv, "partial", &mcp.ToolAnnotations{DestructiveHint: ptr(false)}, &mcp.CallToolResult{})
		return srv
	}
	s := open(t, &Config{Servers: map[string]*ServerConfig{
		"good":  {Transport: serve(t, mk()), Trusted: true},
		"other": {Transport: serve(t, mk())},
	}}, nil)

	var names []string
	for _, tl := range s.Tools() {
		names = append(names, tl.Spec().Name)
	}
	// Servers in name order; each server's tools as it lists them (the go-sdk
	// server lists them sorted).
	wantNames := []string{"mcp__good__bare", "mcp__good__partial", "mcp__good__read_thing", "mcp__other__bare", "mcp__other__partial", "mcp__other__read_thing"}
	if diff := cmp.Diff(wantNames, names); diff != "" {
		t.Errorf("tool names (-want +got):\n%s", diff)
	}
	tools := toolsByName(s)
	for _, tc := range []struct {
		name      string
		effective tool.Hints
		claimed   tool.Hints
	}{
		{"mcp__good__read_thing", tool.Hints{ReadOnly: true, Idempotent: true}, tool.Hints{ReadOnly: true, Idempotent: true}},
		{"mcp__good__bare", strictHints(), strictHints()},
		{"mcp__good__partial", tool.Hints{OpenWorld: true}, tool.Hints{OpenWorld: true}},
		{"mcp__other__read_thing", strictHints(), tool.Hints{ReadOnly: true, Idempotent: true}},
		{"mcp__other__bare", strictHints(), strictHints()},
		{"mcp__other__partial", strictHints(), tool.Hints{OpenWorld: true}},
	} {
		tl := tools[tc.name]
		if tl == nil {
			t.Fatalf("no tool %s", tc.name)
		}
		spec := tl.Spec()
		if spec.Hints == nil {
			t.Fatalf("%s: nil hints", tc.name)
		}
		if diff := cmp.Diff(tc.effective, *spec.Hints); diff != "" {
			t.Errorf("%s: effective hints (-want +got):\n%s", tc.name, diff)
		}
		if diff := cmp.Diff(tc.claimed, HintsFor(tl.Listed().Annotations, true)); diff != "" {
			t.Errorf("%s: claimed hints (-want +got):\n%s", tc.name, diff)
		}
		if want := "mcp:" + tl.Server(); spec.Source != want {
			t.Errorf("%s: Source = %q, want %q", tc.name, spec.Source, want)
		}
		if !strings.HasPrefix(spec.Description, "the ") || spec.InputSchema == nil || spec.InputSchema.Type != "object" {
			t.Errorf("%s: description %q, schema %+v", tc.name, spec.Description, spec.InputSchema)
		}
		if _, err := argcheck.New(spec.InputSchema); err != nil {
			t.Errorf("%s: schema does not resolve: %v", tc.name, err)
		}
	}
	if tools["mcp__other__read_thing"].Listed().Name != "read.thing" || tools["mcp__other__read_thing"].trusted {
		t.Errorf("remote name / trust wrong")
	}
	if tools["mcp__other__bare"].Listed().Annotations != nil {
		t.Errorf("bare tool has annotations %+v", tools["mcp__other__bare"].Listed().Annotations)
	}
	if a := tools["mcp__other__partial"].Listed().Annotations; a == nil || a.DestructiveHint == nil || *a.DestructiveHint {
		t.Errorf("partial annotations = %+v", a)
	}
	// Hints returned by Spec are copies.
	tools["mcp__good__bare"].Spec().Hints.Destructive = false
	if !tools["mcp__good__bare"].Spec().Hints.Destructive {
		t.Error("Spec().Hints is shared")
	}
	st := status(t, s, "good")
	if st.State != StateReady || st.Tools != 3 || st.Err != nil || !st.Trusted || st.Transport != "custom" ||
		st.ServerInfo == nil || st.ServerInfo.Name != "test-server" {
		t.Errorf("status = %+v", st)
	}
}

func TestCallResults(t *testing.T) {
	png := []byte("\x89PNG fake image")
	srv := newServer(nil)
	for name, res := range map[string]*mcp.CallToolResult{
		"two_texts":  {Content: []mcp.Content{&mcp.TextContent{Text: "line one"}, &mcp.TextContent{Text: "line two"}}},
		"fails":      {IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no such file"}, &mcp.TextContent{Text: "try again"}}},
		"fails_mute": {IsError: true},
		"structured": {StructuredContent: map[string]any{"sum": 3, "ok": true}},
		"both":       {StructuredContent: map[string]any{"sum": 3}, Content: []mcp.Content{&mcp.TextContent{Text: `{"sum":3}`}}},
		"image":      {Content: []mcp.Content{&mcp.TextContent{Text: "here:"}, &mcp.ImageContent{MIMEType: "image/png", Data: png}}},
		"audio":      {Content: []mcp.Content{&mcp.AudioContent{MIMEType: "audio/wav", Data: make([]byte, 1000)}}},
		"link":       {Content: []mcp.Content{&mcp.ResourceLink{URI: "file:///tmp/a.txt", Name: "a.txt", MIMEType: "text/plain", Size: ptr(int64(12))}}},
		"embedded": {Content: []mcp.Content{
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///b.txt", MIMEType: "text/plain", Text: "hello b"}},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///c.gz", MIMEType: "application/gzip", Blob: make([]byte, 300)}},
		}},
		"structured_image": {StructuredContent: []any{1, 2}, Content: []mcp.Content{&mcp.ImageContent{MIMEType: "image/gif", Data: []byte("GIF")}}},
	} {
		addTool(srv, name, nil, res)
	}
	s := open(t, &Config{Servers: map[string]*ServerConfig{"x": {Transport: serve(t, srv)}}}, nil)
	tools := toolsByName(s)
	for _, tc := range []struct {
		tool    string
		want    string
		isError bool
		meta    map[string]any
	}{
		{"two_texts", "line one\nline two", false, nil},
		{"fails", "no such file\ntry again", true, nil},
		{"fails_mute", "MCP tool mcp__x__fails_mute failed without a message", true, nil},
		{"structured", `{"ok":true,"sum":3}`, false, map[string]any{metaStructuredContent: json.RawMessage(`{"ok":true,"sum":3}`)}},
		{"both", `{"sum":3}`, false, map[string]any{metaStructuredContent: json.RawMessage(`{"sum":3}`)}},
		{"image", "here:\n[image: image/png, 15 bytes]", false, map[string]any{metaContent: []contentInfo{{Type: "image", MIMEType: "image/png", Size: 15}}}},
		{"audio", "[audio: audio/wav, 1000 bytes]", false, map[string]any{metaContent: []contentInfo{{Type: "audio", MIMEType: "audio/wav", Size: 1000}}}},
		{"link", `[resource link: file:///tmp/a.txt, name "a.txt", text/plain, 12 bytes]`, false,
			map[string]any{metaContent: []contentInfo{{Type: "resource_link", MIMEType: "text/plain", Size: 12, URI: "file:///tmp/a.txt", Name: "a.txt"}}}},
		{"embedded", "[embedded resource: file:///b.txt, text/plain, 7 bytes]\nhello b\n[embedded resource: file:///c.gz, application/gzip, 300 bytes]", false,
			map[string]any{metaContent: []contentInfo{
				{Type: "resource", MIMEType: "text/plain", Size: 7, URI: "file:///b.txt"},
				{Type: "resource", MIMEType: "application/gzip", Size: 300, URI: "file:///c.gz"}}}},
		{"structured_image", "[1,2]\n[image: image/gif, 3 bytes]", false, map[string]any{
			metaStructuredContent: json.RawMessage(`[1,2]`),
			metaContent:           []contentInfo{{Type: "image", MIMEType: "image/gif", Size: 3}}}},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			tl := tools["mcp__x__"+tc.tool]
			res, err := tl.Call(context.Background(), json.RawMessage(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			want := tool.Result{Output: tc.want, IsError: tc.isError, Metadata: map[string]any{metaServer: "x", metaTool: tc.tool}}
			for k, v := range tc.meta {
				want.Metadata[k] = v
			}
			if diff := cmp.Diff(want, res); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}
}

func TestArgumentsPassThrough(t *testing.T) {
	srv := newServer(nil)
	srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: objectSchema}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(req.Params.Arguments)}}}, nil
	})
	s := open(t, &Config{Servers: map[string]*ServerConfig{"x": {Transport: serve(t, srv)}}}, nil)
	echo := s.Tools()[0]
	for _, tc := range []struct{ in, want string }{
		{`{"path":"a b","n":[1,2.5,{"k":null}],"u":"\u00e9"}`, `{"path":"a b","n":[1,2.5,{"k":null}],"u":"\u00e9"}`},
		{``, `{}`},
		{`null`, `{}`},
	} {
		res, err := echo.Call(context.Background(), json.RawMessage(tc.in))
		if err != nil {
			t.Fatal(err)
		}
		if res.Output != tc.want {
			t.Errorf("args %q arrived as %q, want %q", tc.in, res.Output, tc.want)
		}
	}
}

func TestPagination(t *testing.T) {
	srv := newServer(&mcp.ServerOptions{PageSize: 2})
	var want []string
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		addTool(srv, n, nil, &mcp.CallToolResult{})
		want = append(want, "mcp__paged__"+n)
	}
	s := open(t, &Config{Servers: map[string]*ServerConfig{"paged": {Transport: serve(t, srv)}}}, nil)
	var got []string
	for _, tl := range s.Tools() {
		got = append(got, tl.Spec().Name)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tools over 3 pages (-want +got):\n%s", diff)
	}
}

func TestNameCollisionWithinServer(t *testing.T) {
	bad := newServer(nil)
	addTool(bad, "get.file", nil, &mcp.CallToolResult{})
	addTool(bad, "get_file", nil, &mcp.CallToolResult{})
	good := newServer(nil)
	addTool(good, "ok", nil, &mcp.CallToolResult{})
	s := open(t, &Config{Servers: map[string]*ServerConfig{
		"bad":  {Transport: serve(t, bad)},
		"good": {Transport: serve(t, good)},
	}}, nil)
	st := status(t, s, "bad")
	var ce *CollisionError
	if st.State != StateFailed || !errors.As(st.Err, &ce) {
		t.Fatalf("bad server status = %+v, want failed with a CollisionError", st)
	}
	want := CollisionError{Name: "mcp__bad__get_file", First: ToolRef{"bad", "get.file"}, Second: ToolRef{"bad", "get_file"}}
	if diff := cmp.Diff(want, *ce); diff != "" {
		t.Errorf("collision (-want +got):\n%s", diff)
	}
	if !strings.Contains(st.Err.Error(), `"get.file"`) || !strings.Contains(st.Err.Error(), `"get_file"`) {
		t.Errorf("error %q does not name both tools", st.Err)
	}
	if got := len(s.Tools()); got != 1 || s.Tools()[0].Spec().Name != "mcp__good__ok" {
		t.Errorf("tools = %d, want only mcp__good__ok", got)
	}
}

func TestNameCollisionAcrossServers(t *testing.T) {
	// "fs" + "_x" and "fs_" + "x" both become mcp__fs___x.
	a := newServer(nil)
	addTool(a, "_x", nil, &mcp.CallToolResult{})
	b := newServer(nil)
	addTool(b, "x", nil, &mcp.CallToolResult{})
	s, err := Open(context.Background(), &Config{Servers: map[string]*ServerConfig{
		"fs":  {Transport: serve(t, a)},
		"fs_": {Transport: serve(t, b)},
	}}, nil)
	var ce *CollisionError
	if !errors.As(err, &ce) || s != nil {
		t.Fatalf("Open = %v, %v; want a CollisionError", s, err)
	}
	if want := `tools "_x" of server "fs" and "x" of server "fs_" both become "mcp__fs___x"`; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
}

func TestToolName(t *testing.T) {
	long := strings.Repeat("very_long_tool_name_", 5)
	for _, tc := range []struct{ server, tool, want string }{
		{"fs", "read_file", "mcp__fs__read_file"},
		{"my server", "get.item/v2", "mcp__my_server__get_item_v2"},
		{"gh", "list-issues", "mcp__gh__list-issues"},
		// 55 bytes of the name, "_", 8 hex digits: 64 bytes.
		{"gh", long + "a", "mcp__gh__very_long_tool_name_very_long_tool_name_very_l_" + sha256Hex("mcp__gh__" + long + "a")[:8]},
	} {
		got := toolName(tc.server, tc.tool)
		if got != tc.want {
			t.Errorf("toolName(%q, %q) = %q, want %q", tc.server, tc.tool, got, tc.want)
		}
		if !tool.ValidName(got) {
			t.Errorf("toolName(%q, %q) = %q is not a valid name", tc.server, tc.tool, got)
		}
	}
	if toolName("gh", long+"a") == toolName("gh", long+"b") {
		t.Error("long names that differ at the end collide")
	}
}

// TestFailingServersIsolated: servers that cannot start, that exit, that never
// answer initialize, or that are disabled do not keep the others from loading.
func TestFailingServersIsolated(t *testing.T) {
	good := newServer(nil)
	addTool(good, "ok", nil, &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "fine"}}})
	silent, _ := mcp.NewInMemoryTransports() // nobody on the other end
	start := time.Now()
	s := open(t, &Config{Servers: map[string]*ServerConfig{
		"good":     {Transport: serve(t, good)},
		"missing":  {Command: "/nonexistent/mcp-server"},
		"exits":    {Command: "sh", Args: []string{"-c", "echo 'fatal: no allowed directories' >&2; exit 3"}},
		"silent":   {Transport: silent, Timeout: 300 * time.Millisecond},
		"off":      {Command: "/nonexistent/other", Disabled: true},
		"nohttp":   {URL: "http://127.0.0.1:1/mcp", Timeout: 2 * time.Second},
		"unsetenv": {URL: "http://127.0.0.1:1/mcp", Headers: map[string]string{"Authorization": "Bearer ${MCPTOOL_TEST_UNSET}"}},
	}}, &Options{LookupEnv: func(string) (string, bool) { return "", false }})
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Open took %s", d)
	}
	for _, tc := range []struct {
		server string
		state  State
		errHas []string
	}{
		{"good", StateReady, nil},
		{"missing", StateFailed, []string{"start", "/nonexistent/mcp-server"}},
		{"exits", StateFailed, []string{"start and initialize", "stderr: fatal: no allowed directories"}},
		{"silent", StateFailed, []string{"start and initialize", "no answer within 300ms"}},
		{"off", StateDisabled, nil},
		{"nohttp", StateFailed, []string{"start and initialize"}},
		{"unsetenv", StateFailed, []string{"headers.Authorization", "MCPTOOL_TEST_UNSET is not set"}},
	} {
		st := status(t, s, tc.server)
		if st.State != tc.state {
			t.Errorf("%s: state %s (err %v), want %s", tc.server, st.State, st.Err, tc.state)
			continue
		}
		if (st.Err != nil) != (len(tc.errHas) > 0) {
			t.Errorf("%s: err = %v", tc.server, st.Err)
		}
		for _, sub := range tc.errHas {
			if st.Err == nil || !strings.Contains(st.Err.Error(), sub) {
				t.Errorf("%s: error %v does not contain %q", tc.server, st.Err, sub)
			}
		}
	}
	if got := len(s.Tools()); got != 1 {
		t.Fatalf("%d tools, want 1", got)
	}
	res, err := s.Tools()[0].Call(context.Background(), nil)
	if err != nil || res.Output != "fine" {
		t.Errorf("call = %+v, %v", res, err)
	}
}

// TestCancellation: cancelling the call's context cancels the request on the
// server (notifications/cancelled), and Call returns the context's error.
func TestCancellation(t *testing.T) {
	started := make(chan struct{})
	cancelled := make(chan struct{})
	srv := newServer(nil)
	srv.AddTool(&mcp.Tool{Name: "slow", InputSchema: objectSchema}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		close(started)
		select {
		case <-ctx.Done():
			close(cancelled)
			return nil, ctx.Err()
		case <-time.After(30 * time.Second):
			return &mcp.CallToolResult{}, nil
		}
	})
	s := open(t, &Config{Servers: map[string]*ServerConfig{"x": {Transport: serve(t, srv)}}}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	begin := time.Now()
	_, err := s.Tools()[0].Call(ctx, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Call error = %v, want context.Canceled", err)
	}
	if d := time.Since(begin); d > 5*time.Second {
		t.Errorf("Call returned after %s", d)
	}
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the server's handler was not cancelled")
	}
}

func TestCallTimeout(t *testing.T) {
	srv := newServer(nil)
	srv.AddTool(&mcp.Tool{Name: "slow", InputSchema: objectSchema}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	s := open(t, &Config{Servers: map[string]*ServerConfig{"x": {Transport: serve(t, srv), CallTimeout: 100 * time.Millisecond}}}, nil)
	res, err := s.Tools()[0].Call(context.Background(), nil)
	if err != nil || !res.IsError || res.Output != "MCP tool mcp__x__slow timed out after 100ms" {
		t.Errorf("call = %+v, %v; want an error result saying it timed out", res, err)
	}
}

// TestStreamableHTTPHeaders: headers with ${ENV} reach the server expanded, and
// neither their values nor env values reach the log.
func TestStreamableHTTPHeaders(t *testing.T) {
	const secret = "s3cr3t-token-value"
	var mu sync.Mutex
	var auth []string
	srv := newServer(nil)
	addTool(srv, "ping", nil, &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "pong"}}})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization")+"|"+r.Header.Get("X-Team"))
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	defer hs.Close()
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	env := map[string]string{"MCP_TOKEN": secret}
	s := open(t, &Config{Servers: map[string]*ServerConfig{"api": {
		URL:     hs.URL + "/mcp",
		Headers: map[string]string{"Authorization": "Bearer ${MCP_TOKEN}", "X-Team": "${TEAM:-core}"},
	}}}, &Options{Logger: logger, LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	if st := status(t, s, "api"); st.State != StateReady || st.Transport != "http" {
		t.Fatalf("status = %+v", st)
	}
	res, err := s.Tools()[0].Call(context.Background(), nil)
	if err != nil || res.Output != "pong" {
		t.Fatalf("call = %+v, %v", res, err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(auth) < 3 {
		t.Fatalf("only %d requests seen", len(auth))
	}
	for _, a := range auth {
		if a != "Bearer "+secret+"|core" {
			t.Errorf("request headers = %q, want the expanded values", a)
		}
	}
	if logs.Len() == 0 || strings.Contains(logs.String(), secret) {
		t.Errorf("log is empty or holds the secret:\n%s", logs.String())
	}
}

func TestCloseIdempotent(t *testing.T) {
	srv := newServer(nil)
	addTool(srv, "a", nil, &mcp.CallToolResult{})
	s, err := Open(context.Background(), &Config{Servers: map[string]*ServerConfig{"x": {Transport: serve(t, srv)}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Tools()[0].Call(context.Background(), nil); err == nil {
		t.Error("call after Close succeeded")
	}
}

func TestOpenCancelled(t *testing.T) {
	silent, _ := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	s, err := Open(ctx, &Config{Servers: map[string]*ServerConfig{"x": {Transport: silent}}}, nil)
	if !errors.Is(err, context.DeadlineExceeded) || s != nil {
		t.Errorf("Open = %v, %v; want context.DeadlineExceeded", s, err)
	}
}

// A server's structured result nested 985 deep (the MCP SDK reads up to
// 1,000) went into the result's metadata as it came, and with it into the
// run's records and state, where it nests past the 1,000 levels the stores
// read back: the run, and every listing of its tenant's runs, could no
// longer be read. Such a result is kept as its JSON text, a string.
func TestDeepStructuredContentIsKeptAsText(t *testing.T) {
	var deep any = map[string]any{}
	for range 985 {
		deep = []any{deep}
	}
	srv := newServer(nil)
	addTool(srv, "deep", nil, &mcp.CallToolResult{StructuredContent: deep})
	s := open(t, &Config{Servers: map[string]*ServerConfig{"x": {Transport: serve(t, srv)}}}, nil)
	res, err := toolsByName(s)["mcp__x__deep"].Call(context.Background(), json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(res.Metadata)
	if err != nil {
		t.Fatal(err)
	}
	if argcheck.TooDeep(b) {
		t.Fatalf("the result's metadata nests deeper than %d levels", argcheck.MaxDepth)
	}
	if text, ok := res.Metadata[metaStructuredContent].(string); !ok || !strings.HasPrefix(text, "[[[") {
		t.Fatalf("structured content kept as %T", res.Metadata[metaStructuredContent])
	}
}
