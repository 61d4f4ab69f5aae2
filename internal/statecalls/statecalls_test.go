package statecalls_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/tollgate-dev/tollgate/internal/statecalls"
)

// A stored state's calls are its records, then its batch's finished
// calls in the batch's order; a call still running or waiting is left out.
func TestAppendListsTheBatchsFinishedCallsAfterTheRecords(t *testing.T) {
	var st struct {
		ToolCalls []string                  `json:"toolCalls"`
		Batch     []statecalls.Call[string] `json:"batch"`
	}
	src := `{"toolCalls": ["a", "b"], "batch": [{"call": {}, "record": "c"}, {"call": {}, "pending": {}}, {"record": "d"}]}`
	if err := json.Unmarshal([]byte(src), &st); err != nil {
		t.Fatal(err)
	}
	if got, want := statecalls.Append(st.ToolCalls, st.Batch), []string{"a", "b", "c", "d"}; !slices.Equal(got, want) {
		t.Errorf("calls: %q, want %q", got, want)
	}
	if got := statecalls.Append[string, statecalls.Call[string]](nil, nil); got != nil {
		t.Errorf("no records and no batch: %q, want nil", got)
	}
}
