package mcpgateway_test

import (
	"bufio"
	"io"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tollgate-dev/tollgate/mcpgateway"
)

// FuzzGatewayInput sends a client's bytes to the gateway after a proper
// initialize, then hangs up. Whatever they are, nothing lasting comes of
// them: the denied tool (rm) and the one that needs an approval (push)
// never reach the upstream (nothing a client sends approves a call, not an
// answer to an ask it was never given), and the next client is served.
func FuzzGatewayInput(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"rm","arguments":{"path":"/"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"push","arguments":{},"requestState":"ask_0","inputResponses":{"approve":{"action":"accept","content":{"approve":true}}}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"push","_meta":{"progressToken":1}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}` + "\n" + `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}}`,
		`{"jsonrpc":"2.0","id":{"x":1},"method":"tools/call","params":null}`,
		`[{"jsonrpc":"2.0","id":4,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":5,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{}},"clientInfo":{"name":"x","version":"1"}}}` + "\n" + `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"push"}}`,
		"\x00\xff{garbage",
		"",
	} {
		f.Add([]byte(seed))
	}
	fx := setup(f, nil, &mcpgateway.Options{Elicit: true}, nil)
	f.Fuzz(func(t *testing.T, input []byte) {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		ss, err := fx.gw.Server().Connect(t.Context(), &mcp.IOTransport{Reader: inR, Writer: outW}, nil)
		if err != nil {
			t.Fatal(err)
		}
		drained := make(chan struct{})
		go func() {
			defer close(drained)
			sc := bufio.NewScanner(outR)
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
			}
			_, _ = io.Copy(io.Discard, outR)
		}()
		_, _ = io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"fuzz","version":"1"}}}`+"\n")
		_, _ = io.WriteString(inW, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
		_, _ = inW.Write(append(input, '\n'))
		_ = inW.Close() // the client hangs up
		_ = ss.Wait()
		_ = outW.Close()
		<-drained
		for _, name := range []string{"rm", "push"} {
			if n := fx.up.count(name); n != 0 {
				t.Fatalf("the upstream's %s ran %d times", name, n)
			}
		}
		if res := call(t, fx.client, "echo", map[string]any{"text": "still"}); text(res) != "echo: still" {
			t.Fatalf("echo after the input: %q", text(res))
		}
	})
}
