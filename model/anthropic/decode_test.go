package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tollgate-dev/tollgate/internal/provider"
	"github.com/tollgate-dev/tollgate/model"
)

// lenient is what the provider made of json.Unmarshal's error: a value of
// another type than its field's is forgiven.
func lenient(err error) error {
	if _, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		return nil
	}
	return err
}

var wireOpts = cmp.Options{cmp.AllowUnexported(modelName{}, wireEvent{})}

// checkDecodeMessage decodes data with decoder.message and with
// json.Unmarshal into the same structs, from the same start (nil content,
// and content with room, as response gives it), and requires the same
// verdict, the same error text and the same values.
func checkDecodeMessage(t testing.TB, data []byte) {
	t.Helper()
	for _, room := range []int{-1, 2} {
		var want, got wireResponse
		if room >= 0 {
			want.Content, got.Content = make([]wireBlockOut, 0, room), make([]wireBlockOut, 0, room)
		}
		werr := lenient(json.Unmarshal(data, &want))
		var d decoder
		gerr := d.message(data, &got)
		if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
			t.Fatalf("%q: decoder.message: %v; json.Unmarshal: %v", data, gerr, werr)
		}
		if werr != nil {
			return
		}
		if reflect.DeepEqual(want, got) {
			continue
		}
		if diff := cmp.Diff(want, got, wireOpts); diff != "" {
			t.Fatalf("%q: decoder.message differs from json.Unmarshal (-json +decoder):\n%s", data, diff)
		}
	}
}

// checkDecodeEvent is checkDecodeMessage for decoder.event, with a decoder
// that decoded another event before.
func checkDecodeEvent(t testing.TB, data []byte) {
	t.Helper()
	var want, got wireEvent
	werr := lenient(json.Unmarshal(data, &want))
	var d decoder
	var prev wireEvent
	if err := d.event([]byte(`{"message":{"id":"old"},"content_block":{"type":"x","text":"old"},"error":{"type":"old"}}`), &prev); err != nil {
		t.Fatal(err)
	}
	got = prev
	gerr := d.event(data, &got)
	if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
		t.Fatalf("%q: decoder.event: %v; json.Unmarshal: %v", data, gerr, werr)
	}
	if werr != nil {
		return
	}
	if reflect.DeepEqual(want, got) {
		return
	}
	if diff := cmp.Diff(want, got, wireOpts); diff != "" {
		t.Fatalf("%q: decoder.event differs from json.Unmarshal (-json +decoder):\n%s", data, diff)
	}
}

// decodeCases are the inputs on which the decoders are most likely to part
// from encoding/json; they also seed FuzzDecode.
var decodeCases = []string{
	// Answers.
	`{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"hi"},{"type":"tool_use","id":"t1","name":"f","input":{"a":[1,{"b":null}]}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":4,"cache_creation_input_tokens":5,"cache_read_input_tokens":6}}`,
	` { "content" : [ ] , "usage" : { } } `,
	`{"content":null}`, `{"content":{}}`, `{"content":"x"}`, `{"content":[1,"a",null,[],{"text":"t"}]}`,
	// A repeated array decodes into the elements already there, and what a
	// shorter one left within the capacity comes back.
	`{"content":[{"type":"text","text":"a"},{"id":"b"},{"name":"c"}],"content":[{"id":"x"}],"content":[{},{},{}]}`,
	`{"content":[{"text":"a"}],"content":[],"content":[{}]}`,
	`{"content":[{},{},{},{},{},{}]}`,
	// Keys: exact, case-folded (ſ is s, K is k), escaped, unknown, repeated.
	`{"TYPE":"message","Stop_Reason":"end_turn","ſtop_reaſon":"x","\u0069d":"esc","iD":"fold"}`,
	`{"usage":{"input_toKens":1,"output_tokens":2,"OUTPUT_TOKENS":3}}`,
	`{"id":"a","id":"b","unknown":{"deep":[[[{}]]]},"model":"m","model":null}`,
	"{\"\xffid\":\"x\",\"id\xff\":\"y\"}",
	// Strings: escapes, surrogates, invalid UTF-8, control escapes.
	`{"id":"\u2028\u2029\u0000\"\\\/\b\f\n\r\t","type":"\ud83d\ude00","role":"\ud800","model":"\udc00\ud800\u0041"}`,
	`{"id":"\ud800\ud800\udc00","type":"\ud83d","role":"a\ud83d\u0041","model":"\uD83D\uDE00"}`,
	"{\"id\":\"\xff\xfe\",\"model\":\"\xed\xa0\x80\",\"type\":\"caf\xc3\xa9\",\"role\":\"\xc3\"}",
	// Wrong types leave fields as they were; numbers that are not int64.
	`{"id":1,"type":true,"role":{},"model":[],"stop_reason":null,"usage":{"input_tokens":1.5,"output_tokens":"2","cache_creation_input_tokens":1e3,"cache_read_input_tokens":-0}}`,
	`{"usage":{"input_tokens":9223372036854775807,"output_tokens":-9223372036854775808,"cache_creation_input_tokens":9223372036854775808,"cache_read_input_tokens":-9223372036854775809}}`,
	`{"usage":{"input_tokens":1,"input_tokens":null,"output_tokens":2,"output_tokens":"x"}}`,
	`{"usage":[1],"usage":"x","usage":null}`,
	// Pointers: any non-null value makes one, null clears it, an object
	// merges into it.
	`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
	`{"error":"x"}`, `{"error":[]}`, `{"error":null}`, `{"error":{"type":"a"},"error":{"message":"b"}}`,
	`{"error":{"type":"a"},"error":null,"error":{"message":"b"}}`,
	// Not an object, not JSON, trailing data, depth.
	`null`, `[]`, `"x"`, `5`, ``, ` `, `{`, `{"id":"a"} x`, `{"id":"a",}`, `{"id":'a'}`, `{"id":"\x"}`,
	"{\"id\":\"a\x01\"}", `{"id":"\u12"}`, `{"id":01}`, `{"id":-}`, `{"id":1.}`, `{"id":tru}`, `[1,]`,
	strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	`{"content":[{"input":` + strings.Repeat("[", 9998) + strings.Repeat("]", 9998) + `}]}`,
	`{"content":[{"input":` + strings.Repeat("[", 9999) + strings.Repeat("]", 9999) + `}]}`,
	// Events.
	`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":20,"output_tokens":1}}}`,
	`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"f","input":{}}}`,
	`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\": 1"}}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello\n\u00e9"}}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"t"},"delta":{"type":"signature_delta","signature":"s"}}`,
	`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":15}}`,
	`{"type":"message_stop"}`, `{"type":"ping"}`,
	`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
	`{"message":null,"content_block":null,"error":null,"usage":null,"delta":null,"index":null}`,
	`{"message":1,"content_block":"x","error":[],"usage":{"a":[1,2]},"delta":[],"index":"1"}`,
	`{"message":{"id":"a","stop_sequence":"END","usage":{"x":1}},"message":{"model":"b"},"index":1,"index":2.5}`,
	`{"Message":{"ID":"a"},"CONTENT_BLOCK":{"TYPE":"text"},"Delta":{"Partial_JSON":"p","ſignature":"s"}}`,
}

func TestDecodeAgreesWithEncodingJSON(t *testing.T) {
	for _, c := range decodeCases {
		checkDecodeMessage(t, []byte(c))
		checkDecodeEvent(t, []byte(c))
	}
	// The recorded answers and every event of the recorded streams.
	n := 0
	for _, data := range recordedInputs(t) {
		checkDecodeMessage(t, data)
		checkDecodeEvent(t, data)
		n++
	}
	if n < 40 {
		t.Errorf("only %d recorded inputs", n)
	}
}

// recordedInputs are the JSON answers of testdata and the data of every
// event of its streams.
func recordedInputs(t testing.TB) [][]byte {
	var out [][]byte
	files, _ := filepath.Glob("testdata/*.json")
	streams, _ := filepath.Glob("testdata/*.sse")
	servers, _ := filepath.Glob("testdata/servers/*.sse")
	for _, name := range append(append(files, streams...), servers...) {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, ".json") {
			out = append(out, b)
			continue
		}
		ev := provider.NewEvents(bytes.NewReader(b))
		for ev.Next() {
			out = append(out, bytes.Clone(ev.Data()))
		}
	}
	return out
}

// FuzzDecode decodes arbitrary bytes as an answer and as an event, with
// the decoders and with json.Unmarshal, and requires the same results.
func FuzzDecode(f *testing.F) {
	for _, c := range decodeCases {
		f.Add([]byte(c))
	}
	for _, data := range recordedInputs(f) {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecodeMessage(t, data)
		checkDecodeEvent(t, data)
	})
}

// TestDecodedValuesAreOwned: what a response and a stream's accumulator
// keep does not share memory with the bytes they were decoded from, nor
// with the decoder's buffer, which the next event reuses: the values stay
// the same when the input is overwritten.
func TestDecodedValuesAreOwned(t *testing.T) {
	m, err := New(&Options{Model: "claude-x"})
	if err != nil {
		t.Fatal(err)
	}
	answer := `{"id":"msg_1","type":"message","role":"assistant","model":"claude-\u0079","content":[` +
		`{"type":"text","text":"one\n"},{"type":"tool_use","id":"toolu_\u0031","name":"f","input":{"a":"\u00e9"}},` +
		`{"type":"text","text":"two"},{"type":"tool_use","id":"toolu_2","name":"g","input":[1]},{"type":"tool_use","id":"toolu_3","name":"h"}],` +
		`"stop_reason":"tool_use","usage":{"input_tokens":1,"output_tokens":2}}`
	raw := []byte(answer)
	resp, err := m.response(raw, "claude-x")
	if err != nil {
		t.Fatal(err)
	}
	want := model.Response{
		Message: model.Message{Role: model.RoleAssistant, Content: "one\ntwo", ToolCalls: []model.ToolCall{
			{ID: "toolu_1", Name: "f", Arguments: json.RawMessage(`{"a":"\u00e9"}`)},
			{ID: "toolu_2", Name: "g", Arguments: json.RawMessage(`[1]`)},
			{ID: "toolu_3", Name: "h", Arguments: json.RawMessage(`{}`)},
		}},
		Usage: usage(1, 2), FinishReason: model.FinishToolCalls, Model: "claude-y",
	}
	for i := range raw {
		raw[i] = '#'
	}
	got := *resp
	got.Raw = nil
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the response changed with its input (-want +got):\n%s", diff)
	}

	events := []string{
		`{"type":"message_start","message":{"id":"msg_\u0032","model":"claude-\u0079","stop_sequence":"END\n","usage":{"input_tokens":20,"output_tokens":1}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":"a\nb"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"c\u00e9"}}`,
		`{"type":"content_block_start","index":1,"content_block":{"type":"tool_\u0075se","id":"toolu_\u0033","name":"\u0066","input":{"x":"\n"}}}`,
		`{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_4","name":"g","input":{}}}`,
		`{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"y\":"}}`,
		`{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"2}"}}`,
		`{"type":"message_delta","delta":{"stop_reason":"odd_\u0072eason"},"usage":{"output_tokens":7}}`,
		`{"type":"message_stop"}`,
	}
	var d decoder
	acc := accumulator{model: "claude-x"}
	var deltas []string
	buf := make([]byte, 0, 512)
	for _, e := range events {
		buf = append(buf[:0], e...)
		var ev wireEvent
		if err := d.decodeEvent(nil, buf, &ev); err != nil {
			t.Fatal(err)
		}
		if s := acc.add(&ev); s != "" {
			deltas = append(deltas, s)
		}
		for i := range buf[:cap(buf)] {
			buf[:cap(buf)][i] = '#'
		}
	}
	r := acc.response()
	wantStream := model.Response{
		Message: model.Message{Role: model.RoleAssistant, Content: "a\nbcé", ToolCalls: []model.ToolCall{
			{ID: "toolu_3", Name: "f", Arguments: json.RawMessage(`{"x":"\n"}`)},
			{ID: "toolu_4", Name: "g", Arguments: json.RawMessage(`{"y":2}`)},
		}},
		Usage: usage(20, 7), FinishReason: model.FinishOther, Model: "claude-y",
	}
	gotStream := *r
	gotStream.Raw = nil
	if diff := cmp.Diff(wantStream, gotStream); diff != "" {
		t.Errorf("the stream's response changed with its input (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"a\nb", "cé"}, deltas); diff != "" {
		t.Errorf("deltas (-want +got):\n%s", diff)
	}
	if acc.stop != "odd_reason" || string(acc.start.StopSequence) != `"END\n"` || acc.start.ID != "msg_2" {
		t.Errorf("stop %q, stop sequence %s, id %q", acc.stop, acc.start.StopSequence, acc.start.ID)
	}
	if !json.Valid(r.Raw) || !strings.Contains(string(r.Raw), `"output_tokens":7`) {
		t.Errorf("raw %s", r.Raw)
	}
}

// TestDeltasByIndex: a delta goes to the block last started with its
// index, whether or not that block is the last one started.
func TestDeltasByIndex(t *testing.T) {
	events := []string{
		`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"a","name":"f","input":{}}}`,
		`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"b","name":"f","input":{}}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"x\":"}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"y\":2}"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"1}"}}`,
		`{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"c","name":"f","input":{}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"d","name":"f","input":{}}}`,
		`{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"z\":3}"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"w\":4}"}}`,
		`{"type":"content_block_delta","index":7,"delta":{"type":"input_json_delta","partial_json":"lost"}}`,
	}
	var d decoder
	var acc accumulator
	for _, e := range events {
		var ev wireEvent
		if err := d.decodeEvent(nil, []byte(e), &ev); err != nil {
			t.Fatal(err)
		}
		acc.add(&ev)
	}
	var got []string
	for _, c := range acc.response().Message.ToolCalls {
		got = append(got, c.ID+" "+string(c.Arguments))
	}
	want := []string{`a {"x":1}`, `b {"y":2}`, `c {"z":3}`, `d {"w":4}`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

// TestFieldNamesAreTheTags: the decoders' field names are the json tags of
// the structs they fill, every one of them.
func TestFieldNamesAreTheTags(t *testing.T) {
	for _, c := range []struct {
		v     any
		names []string
	}{
		{wireResponse{}, responseFields}, {wireBlockOut{}, blockFields}, {wireUsage{}, usageFields},
		{wireError{}, errorFields}, {wireEvent{}, eventFields}, {wireStart{}, startFields}, {wireDelta{}, deltaFields},
	} {
		typ := reflect.TypeOf(c.v)
		var tags []string
		for f := range typ.Fields() {
			if tag := f.Tag.Get("json"); tag != "" {
				tags = append(tags, strings.Split(tag, ",")[0])
			}
		}
		if diff := cmp.Diff(tags, c.names); diff != "" {
			t.Errorf("%s: fields (-tags +decoder):\n%s", typ, diff)
		}
	}
}
