// Package records writes the decision record of every tool call (the audit trail,
// docs/architecture.md pipeline step 9) as JSON lines and to slog. A [Writer]'s
// Record method has the shape of agent.Options.OnRecord.
//
// A line holds the call ID, the tool, the digests of the model's and of the
// executed arguments, the outcome, who decided and why, every vote, and the
// timings; never argument values or outputs, which may hold secrets (the
// agent's transcript and state keep those), except the paths of the files
// a builtin file tool used: the path as the call named it and the real
// path of the file it reached (see [FileRecord]).
package records

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/tollgate-dev/tollgate/gate"
	"github.com/tollgate-dev/tollgate/internal/bounded"
	"github.com/tollgate-dev/tollgate/internal/nofollow"
	"github.com/tollgate-dev/tollgate/tool"
)

// Line is one JSON line: the decision record of one tool call.
type Line struct {
	// Time is when the line was written (RFC 3339 in JSON).
	Time time.Time `json:"time"`
	// Run is the run's ID: the writer's (Options.Run, WithRun) or else the record's.
	Run             string       `json:"run,omitempty"`
	Call            string       `json:"call"`
	Tool            string       `json:"tool"`
	Turn            int          `json:"turn"`
	RequestedDigest string       `json:"requestedDigest"`
	ArgsDigest      string       `json:"argsDigest"`
	Outcome         gate.Outcome `json:"outcome"`
	// By is who decided, as an object {"kind": "rule", "name": "no-rm"}
	// (kinds: hook, rule, autonomy, person, runtime, flag); so is each
	// vote's source.
	By tool.Principal `json:"by"`
	// Actor, present only when someone decided on By's behalf (an
	// administrator answering for a person), is who did; a vote of such an
	// answer names its actor too.
	Actor   tool.Principal `json:"actor,omitzero"`
	Reason  string         `json:"reason,omitempty"`
	Votes   []tool.Vote    `json:"votes,omitempty"`
	Ran     bool           `json:"ran"`
	IsError bool           `json:"isError,omitempty"`
	Started time.Time      `json:"started"`
	// Duration is the whole pipeline's duration; in JSON, nanoseconds (as in
	// gate.Record).
	Duration time.Duration `json:"duration"`
	// Files are the files the call's tool used, when its result says
	// (builtin file tools: metadata "path" and "realPath", or apply_patch's
	// "files"); at most maxFiles, each path cut at maxPathBytes.
	Files []FileRecord `json:"files,omitempty"`
	// Elicitations are the requests for a person's input an MCP server made
	// during the call (its result's metadata "mcpElicitations"): what the
	// server was told, and the policy rule that declined one; never the
	// person's answer. At most maxElicitations.
	Elicitations []Elicitation `json:"elicitations,omitempty"`
}

// Elicitation is one MCP server's request for a person's input during a
// call (the metadata "mcpElicitations" of package mcptool).
type Elicitation struct {
	Server  string `json:"server"`
	Mode    string `json:"mode"`
	Outcome string `json:"outcome"`
	By      string `json:"by,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// maxElicitations bounds Line.Elicitations.
const maxElicitations = 32

// elicitationsOf reads the elicitations a result's metadata lists, in
// whatever form the metadata holds them (the tool's type, or JSON decoded).
func elicitationsOf(meta map[string]any) []Elicitation {
	v, ok := meta["mcpElicitations"]
	if !ok {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out []Elicitation
	if json.Unmarshal(b, &out) != nil {
		return nil
	}
	if len(out) > maxElicitations {
		out = out[:maxElicitations]
	}
	for i := range out {
		e := &out[i]
		e.Server, e.Mode, e.Outcome = bounded.Cut(e.Server, 256), bounded.Cut(e.Mode, 16), bounded.Cut(e.Outcome, 16)
		e.By, e.Reason = bounded.Cut(e.By, 256), bounded.Cut(e.Reason, 1024)
	}
	return out
}

// FileRecord is a file a tool call used: the path as the call named it and
// the real path of the file the tool opened (symbolic links resolved by
// the kernel), which differ when a link led elsewhere.
type FileRecord struct {
	Path     string `json:"path"`
	RealPath string `json:"realPath,omitempty"`
	// To and RealTo are where apply_patch moved the file.
	To     string `json:"to,omitempty"`
	RealTo string `json:"realTo,omitempty"`
}

// Bounds of Line.Files: a model may name a path of any length.
const (
	maxFiles     = 64
	maxPathBytes = 4096
)

// filesOf reads the files a result's metadata names.
func filesOf(meta map[string]any) []FileRecord {
	str := func(m map[string]any, k string) string {
		s, _ := m[k].(string)
		return bounded.Cut(s, maxPathBytes)
	}
	one := func(m map[string]any) (FileRecord, bool) {
		f := FileRecord{Path: str(m, "path"), RealPath: str(m, "realPath"), To: str(m, "to"), RealTo: str(m, "realTo")}
		return f, f.RealPath != ""
	}
	if f, ok := one(meta); ok {
		return []FileRecord{f}
	}
	var out []FileRecord
	add := func(m map[string]any) {
		if f, ok := one(m); ok && len(out) < maxFiles {
			out = append(out, f)
		}
	}
	switch fs := meta["files"].(type) {
	case []map[string]any:
		for _, m := range fs {
			add(m)
		}
	case []any: // after a JSON round trip
		for _, v := range fs {
			if m, ok := v.(map[string]any); ok {
				add(m)
			}
		}
	}
	return out
}

// lineOf returns the line for rec.
func lineOf(run string, rec gate.Record, now time.Time) Line {
	d := rec.Decision
	return Line{
		Time: now, Run: run, Call: rec.ID, Tool: rec.Name, Turn: rec.Turn,
		RequestedDigest: rec.RequestedDigest, ArgsDigest: rec.ArgsDigest,
		Outcome: d.Outcome, By: d.By, Actor: d.Actor, Reason: d.Reason, Votes: d.Votes,
		Ran: rec.Ran, IsError: rec.IsError, Started: rec.Started, Duration: rec.Duration,
		Files: filesOf(rec.Metadata), Elicitations: elicitationsOf(rec.Metadata),
	}
}

// Options configures a [Writer]; nil means defaults.
type Options struct {
	// Run, if set, is written as each line's run ID.
	Run string
	// Logger, if set, also receives each record at INFO as "tool call
	// decision" (digests only, like the lines).
	Logger *slog.Logger
	// Now returns the current time (default time.Now).
	Now func() time.Time
	// Workspace, if set, is the agent's workspace: [OpenFile] refuses a
	// path that goes through a symbolic link inside it (a tool could have
	// planted one in place of a directory).
	Workspace string
}

// Writer writes one JSON line per record to an io.Writer. It is safe for
// concurrent use (the agent calls OnRecord from each call's goroutine): each
// line is written with a single Write call under a lock, so lines never
// interleave.
type Writer struct {
	mu  sync.Mutex
	w   io.Writer
	c   io.Closer
	err error
	run string
	log *slog.Logger
	now func() time.Time
}

// NewWriter returns a writer of lines to w (which it does not close).
func NewWriter(w io.Writer, opts *Options) *Writer {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Writer{w: w, run: o.Run, log: o.Logger, now: o.Now}
}

// OpenFile opens path for appending (creating it with mode 0600) and returns
// a writer to it; Close closes the file. A path that exists and is not a
// regular file (a FIFO, a device: opening one could block the run forever)
// is an error, and so is a symbolic link, at the end of path or, with
// opts.Workspace, anywhere in its part inside the workspace.
func OpenFile(path string, opts *Options) (*Writer, error) {
	var ws string
	if opts != nil {
		ws = opts.Workspace
	}
	f, err := nofollow.OpenFileIn(ws, path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("records: %w", err)
	}
	w := NewWriter(f, opts)
	w.c = f
	return w, nil
}

// WithRun returns a Record function (the shape of agent.Options.OnRecord)
// that writes to w's destination, under w's lock, lines carrying run ID
// run: for a host that learns the run's ID on resume, or after the run
// halts.
func (w *Writer) WithRun(run string) func(context.Context, gate.Record) {
	return func(ctx context.Context, rec gate.Record) { w.record(ctx, run, rec) }
}

// Record writes rec's line and logs it; it has the signature of
// agent.Options.OnRecord. The first write error is kept (see [Writer.Close])
// and later records are still attempted.
func (w *Writer) Record(ctx context.Context, rec gate.Record) { w.record(ctx, w.run, rec) }

func (w *Writer) record(ctx context.Context, run string, rec gate.Record) {
	if run == "" {
		run = rec.RunID
	}
	line := lineOf(run, rec, w.now())
	b, err := json.Marshal(line)
	if err == nil {
		b = append(b, '\n')
		w.mu.Lock()
		_, err = w.w.Write(b)
		if err != nil && w.err == nil {
			w.err = err
		}
		w.mu.Unlock()
	}
	la := []slog.Attr{
		slog.String("run", run), slog.String("call", rec.ID), slog.String("tool", rec.Name),
		slog.String("outcome", string(rec.Decision.Outcome)), slog.String("by", rec.Decision.By.String()),
		slog.String("requestedDigest", rec.RequestedDigest), slog.String("argsDigest", rec.ArgsDigest),
		slog.Bool("ran", rec.Ran), slog.Bool("isError", rec.IsError), slog.Duration("duration", rec.Duration),
	}
	if !rec.Decision.Actor.IsZero() {
		la = append(la, slog.String("actor", rec.Decision.Actor.String()))
	}
	w.log.LogAttrs(ctx, slog.LevelInfo, "tool call decision", la...)
	if err != nil {
		w.log.LogAttrs(ctx, slog.LevelError, "writing decision record failed", slog.String("call", rec.ID), slog.String("error", err.Error()))
	}
}

// Login is the line of an OAuth login to an MCP server made during a run (a
// login the person was offered when the server asked for one): its
// "event" is "mcp.login", with the run, the server, who logged in and
// when. Never a token.
type Login struct {
	Time   time.Time      `json:"time"`
	Run    string         `json:"run,omitempty"`
	Event  string         `json:"event"`
	Server string         `json:"server"`
	By     tool.Principal `json:"by,omitzero"`
}

// Login writes the line of a login to server by who, done at the time at,
// for run (the writer's run when it has one), and logs it. A write error
// is kept as [Writer.Record]'s are.
func (w *Writer) Login(ctx context.Context, run, server string, by tool.Principal, at time.Time) {
	if w.run != "" {
		run = w.run
	}
	b, err := json.Marshal(Login{Time: at.UTC(), Run: run, Event: "mcp.login", Server: server, By: by})
	if err == nil {
		b = append(b, '\n')
		w.mu.Lock()
		_, err = w.w.Write(b)
		if err != nil && w.err == nil {
			w.err = err
		}
		w.mu.Unlock()
	}
	w.log.LogAttrs(ctx, slog.LevelInfo, "mcp login", slog.String("run", run), slog.String("server", server), slog.String("by", by.String()))
	if err != nil {
		w.log.LogAttrs(ctx, slog.LevelError, "writing login record failed", slog.String("server", server), slog.String("error", err.Error()))
	}
}

// firstErr returns the first error met writing a line, or nil.
func (w *Writer) firstErr() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Close closes the file opened by [OpenFile] (nothing for [NewWriter]) and
// returns the first error met writing a line, else the close error. A
// writer from NewWriter may be asked again and again.
func (w *Writer) Close() error {
	var cerr error
	if w.c != nil {
		cerr = w.c.Close()
	}
	if err := w.firstErr(); err != nil {
		return err
	}
	return cerr
}
