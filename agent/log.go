package agent

import "log/slog"

const slogInfo = slog.LevelInfo

// attrs are the log attributes of a tool call decision. Argument values and
// outputs are never logged (they may hold secrets); digests identify them.
func attrs(runID string, rec *ToolCallRecord, d Decision) []slog.Attr {
	out := make([]slog.Attr, 0, 10)
	out = append(out,
		slog.String("run", runID),
		slog.String("call", rec.ID),
		slog.String("tool", rec.Name),
		slog.Int("turn", rec.Turn),
		slog.String("outcome", string(d.Outcome)),
		slog.String("by", d.By.String()),
		slog.String("argsDigest", rec.ArgsDigest),
		slog.Bool("isError", rec.IsError),
		slog.Duration("duration", rec.Duration),
	)
	if !d.Actor.IsZero() {
		out = append(out, slog.String("actor", d.Actor.String()))
	}
	return out
}
