package server

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tollgate-dev/tollgate/store"
)

// A tool name longer than maxToolName is neither tracked nor kept by a
// session log's index: records naming such tools cost it no memory, and
// an ask about such a tool reads the latest records instead.
func TestSessionLogKeepsNoLongToolName(t *testing.T) {
	var sl sessionLog
	for i := range 40 {
		data, _ := json.Marshal(map[string]any{"record": map[string]any{"name": strings.Repeat("x", 1000) + string(rune('a'+i%26))}})
		sl.index(store.Event{Seq: int64(i + 1), Data: data})
	}
	if len(sl.untracked) != 0 || len(sl.byTool) != 0 {
		t.Errorf("long names kept: %d untracked, %d tracked", len(sl.untracked), len(sl.byTool))
	}
	data, _ := json.Marshal(map[string]any{"record": map[string]any{"name": "Bash"}})
	sl.index(store.Event{Seq: 41, Data: data})
	if got := sl.byTool["Bash"]; len(got) != 1 || got[0] != 41 {
		t.Errorf("Bash's calls = %v, want [41]", got)
	}
}
