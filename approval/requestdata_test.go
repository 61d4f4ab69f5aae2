package approval_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/tool"
)

// The request's digest is written as argsDigest, the API's name, and read
// under that name or under "digest", the name of data stored before.
func TestRequestDataDigestName(t *testing.T) {
	args := json.RawMessage(`{"command":"ls"}`)
	want := approval.Digest(args)
	b, err := json.Marshal(approval.RequestData{Tool: "bash", CallID: "c1", Args: args, Digest: want})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"argsDigest":"`+want+`"`) || strings.Contains(string(b), `"digest"`) {
		t.Errorf("written as %s", b)
	}
	for _, data := range []string{
		string(b),
		`{"tool":"bash","callId":"c1","args":{"command":"ls"},"digest":"` + want + `","by":"policy"}`,
		`{"tool":"bash","callId":"c1","args":{"command":"ls"},"digest":"sha256:old","argsDigest":"` + want + `"}`,
	} {
		d, err := approval.ParseRequestData(tool.Request{ID: "req_1", Data: json.RawMessage(data)})
		if err != nil || d.Digest != want || d.Tool != "bash" || d.CallID != "c1" || string(d.Args) != string(args) {
			t.Errorf("%s: read %+v, %v", data, d, err)
		}
	}
	if _, err := approval.ParseRequestData(tool.Request{ID: "req_1", Data: json.RawMessage(`{"tool": 1}`)}); err == nil {
		t.Error("a tool that is not a string is read")
	}
}
