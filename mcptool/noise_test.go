package mcptool

import (
	"bytes"
	"io"
	"log/slog"
	"strings"
	"testing"
	"testing/iotest"
)

// filterAll runs in through a noiseFilter, reading one byte at a time so that
// every boundary is crossed, and returns what passes and how many lines were
// dropped.
func filterAll(t testing.TB, in string) (string, int) {
	t.Helper()
	f := newNoiseFilter(strings.NewReader(in), slog.New(slog.DiscardHandler), "s", defaultMaxMessageBytes)
	out, err := io.ReadAll(iotest.OneByteReader(f))
	if err != nil {
		t.Fatalf("ReadAll: %v", err)
	}
	return string(out), f.dropped
}

func TestNoiseFilter(t *testing.T) {
	msg := `{"jsonrpc":"2.0","id":1,"result":{}}` + "\n"
	long := `{"jsonrpc":"2.0","id":2,"result":{"text":"` + strings.Repeat("y", 3*noiseCheckLen) + `"}}` + "\n"
	longNoise := strings.Repeat("z", 2*noiseCheckLen+5) + "\n"
	for _, tc := range []struct {
		name, in, want string
		dropped        int
	}{
		{"clean", msg + msg, msg + msg, 0},
		{"banner", "server v1 ready\n\n" + msg, msg, 1},
		{"between", msg + "[info] handling call\n" + msg, msg + msg, 1},
		{"json log record", `{"level":"info","msg":"x"}` + "\n" + msg, msg, 1},
		{"crlf", strings.TrimSuffix(msg, "\n") + "\r\n" + "noise\r\n", strings.TrimSuffix(msg, "\n") + "\r\n", 1},
		{"long message passes whole", long + "noise\n" + msg, long + msg, 1},
		{"long noise dropped whole", longNoise + msg, msg, 1},
		{"last line without newline", msg + strings.TrimSuffix(msg, "\n"), msg + strings.TrimSuffix(msg, "\n"), 0},
		{"batch", `[{"jsonrpc":"2.0","id":1,"result":{}}]` + "\n", `[{"jsonrpc":"2.0","id":1,"result":{}}]` + "\n", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, dropped := filterAll(t, tc.in)
			if got != tc.want || dropped != tc.dropped {
				t.Errorf("got %d bytes (want %d), %d dropped (want %d)\n%.200q", len(got), len(tc.want), dropped, tc.dropped, got)
			}
		})
	}
}

// Only the first noiseLogged dropped lines are logged, each cut to
// noiseLineKeep bytes and quoted; then one line says the rest are not.
func TestNoiseFilterLogBounded(t *testing.T) {
	var logs bytes.Buffer
	in := strings.Repeat("\x1b[31m"+strings.Repeat("n", 1000)+"\n", 100)
	f := newNoiseFilter(strings.NewReader(in), slog.New(slog.NewTextHandler(&logs, nil)), "s", defaultMaxMessageBytes)
	if _, err := io.ReadAll(f); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if f.dropped != 100 || len(lines) != noiseLogged+1 {
		t.Fatalf("dropped %d, logged %d lines; want 100 and %d", f.dropped, len(lines), noiseLogged+1)
	}
	if strings.Contains(logs.String(), "\x1b") || len(lines[0]) > noiseLineKeep+300 {
		t.Errorf("a log line is raw or not cut: %q", lines[0])
	}
}

// FuzzNoiseFilter: whatever a server writes, the filter passes on exactly the
// lines that are JSON-RPC messages, whole and in order.
func FuzzNoiseFilter(f *testing.F) {
	f.Add("banner\n" + `{"jsonrpc":"2.0","id":1,"result":{}}` + "\n[info] x\n")
	f.Add("[1,2]\n{}\n\n\r\n{\"jsonrpc\":\"2.0\"}")
	f.Fuzz(func(t *testing.T, in string) {
		got, _ := filterAll(t, in)
		var want strings.Builder
		for line := range strings.SplitAfterSeq(in, "\n") {
			if isMessage([]byte(line), false) {
				want.WriteString(line)
			}
		}
		if got != want.String() {
			t.Errorf("filter(%q) = %q; want %q", in, got, want.String())
		}
	})
}
