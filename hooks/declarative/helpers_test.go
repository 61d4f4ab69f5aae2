package declarative

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
)

// logRec is one record captured by recHandler.
type logRec struct {
	Level slog.Level
	Msg   string
	Attrs map[string]string
}

// recHandler is a slog.Handler that keeps every record, at every level.
type recHandler struct {
	mu    *sync.Mutex
	recs  *[]logRec
	attrs []slog.Attr
}

func newRecLogger() (*slog.Logger, *recHandler) {
	h := &recHandler{mu: &sync.Mutex{}, recs: &[]logRec{}}
	return slog.New(h), h
}

func (h *recHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *recHandler) Handle(_ context.Context, r slog.Record) error {
	rec := logRec{Level: r.Level, Msg: r.Message, Attrs: map[string]string{}}
	for _, a := range h.attrs {
		rec.Attrs[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool { rec.Attrs[a.Key] = a.Value.String(); return true })
	h.mu.Lock()
	*h.recs = append(*h.recs, rec)
	h.mu.Unlock()
	return nil
}

func (h *recHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &recHandler{mu: h.mu, recs: h.recs, attrs: append(slices.Clone(h.attrs), as...)}
}

func (h *recHandler) WithGroup(string) slog.Handler { return h }

func (h *recHandler) records() []logRec {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(*h.recs)
}

// atLeast returns the records at level or above.
func (h *recHandler) atLeast(level slog.Level) []logRec {
	var out []logRec
	for _, r := range h.records() {
		if r.Level >= level {
			out = append(out, r)
		}
	}
	return out
}

// recorder is an Executor that records "TYPE key=value ..." per call.
type recorder struct {
	mu    sync.Mutex
	calls []string
	ctxs  []map[string]any
}

func (r *recorder) Execute(ctx context.Context, a Action, hctx map[string]any) {
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range hctx {
			if !yield(k) {
				return
			}
		}
	})
	s := a.Type.String() + " " + expandOf(a, hctx)
	for _, k := range keys {
		s += fmt.Sprintf(" %s=%s", k, FormatValue(hctx[k]))
	}
	r.mu.Lock()
	r.calls = append(r.calls, s)
	r.ctxs = append(r.ctxs, hctx)
	r.mu.Unlock()
}

func expandOf(a Action, hctx map[string]any) string {
	if a.Type == ActionLog {
		return Expand(a.Message, hctx)
	}
	if a.Argv != nil {
		return fmt.Sprint(a.Argv)
	}
	return a.Command
}

func (r *recorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}
