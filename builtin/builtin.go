package builtin

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/tollgate-dev/tollgate/tool"
)

// The names of the builtin tools, as the model calls them (see [Names]).
const (
	toolBash       = "bash"
	toolRead       = "read"
	toolWrite      = "write"
	toolEdit       = "edit"
	toolGrep       = "grep"
	toolGlob       = "glob"
	toolWebFetch   = "webfetch"
	toolQuestion   = "question"
	toolApplyPatch = "apply_patch"
	toolTodoWrite  = "todowrite"
)

// source is the [tool.Spec] Source of every builtin tool.
const source = "builtin"

// Defaults used when the corresponding [Options] field is zero.
const (
	defaultBashTimeout    = 60 * time.Second // bash's timeout when a call gives none
	defaultMaxBashTimeout = 10 * time.Minute // the longest timeout a call may ask for
	defaultMaxOutputBytes = 64 << 10         // bytes of bash output kept (64 KiB)
	defaultReadLimit      = 2000             // lines read returns when a call gives no limit
	defaultMaxLineBytes   = 2000             // bytes shown of one line by read and grep
	defaultMaxGrepMatches = 100              // matching lines grep reports
	defaultMaxGlobResults = 1000             // paths glob reports
)

// maxEditBytes is the largest file edit and apply_patch change (16 MiB): they
// hold the file and its new text in memory, and a larger file (a log, a data
// dump a tool made) would let one call exhaust the process's memory.
const maxEditBytes = 16 << 20

var names = []string{toolBash, toolRead, toolWrite, toolEdit, toolGrep, toolGlob, toolWebFetch, toolQuestion, toolApplyPatch, toolTodoWrite}

// Names returns the names of the builtin tools in the fixed order in which
// [New] returns them: bash, read, write, edit, grep, glob, webfetch,
// question, apply_patch, todowrite. The slice is a copy.
func Names() []string { return slices.Clone(names) }

// Options configures [New]. A nil *Options, and every zero field, means the
// default; negative values are an error.
type Options struct {
	// BashTimeout is bash's timeout when a call gives none (default 60 s).
	BashTimeout time.Duration
	// MaxBashTimeout is the longest timeout a call may ask for (default 10 min);
	// the bash input schema's "timeout" maximum is derived from it.
	MaxBashTimeout time.Duration
	// MaxOutputBytes caps bash's captured stdout+stderr (default 64 KiB).
	MaxOutputBytes int
	// ReadLimit is how many lines read returns when a call gives no limit
	// (default 2000).
	ReadLimit int
	// MaxLineBytes cuts longer lines in read and grep output (default 2000).
	MaxLineBytes int
	// MaxGrepMatches is how many matching lines grep reports (default 100).
	MaxGrepMatches int
	// MaxGlobResults is how many paths glob reports (default 1000).
	MaxGlobResults int
	// WebFetch configures webfetch: the allow and deny lists of hosts, the
	// address ranges let through the private-address guard, limits; nil
	// means the defaults of [WebFetchOptions].
	WebFetch *WebFetchOptions
	// Env is bash's environment, as in [os/exec.Cmd.Env], taken as it is.
	// Nil means the process's environment scrubbed to an allowlist (PATH,
	// HOME, LANG, LC_*, TERM, TMPDIR, ...; see internal/proc.DefaultEnvAllow)
	// plus the variables PassEnv names: provider keys such as
	// OPENAI_API_KEY and tollgate's TOLLGATE_* variables never reach the
	// command unless named there.
	Env []string
	// PassEnv names variables (exact names, or prefixes ending in '*') passed
	// to bash on top of the allowlist when Env is nil.
	PassEnv []string
	// Protect lists files and directories (absolute, or relative to the
	// workspace root) that write, edit and apply_patch never change or
	// create, whatever path spelling or symbolic link reaches them: the
	// host's own files when they sit in the workspace (the policy, hook and
	// settings files, the state directory, the records file), which a tool
	// that could rewrite them would turn against its own gates.
	Protect []string
	// CheckFile, if set, is asked about every file read, write, edit, grep,
	// glob and apply_patch use, after the file (or, for a file to be
	// created or replaced, its directory) is open and before it is read or
	// written: a non-nil error refuses the use, and the model sees "refused:
	// PATH leads to FILE: " and the error's text (grep skips such a file
	// under the directory it searches, and says how many it skipped). The
	// [FileUse] it gets names the file actually opened, so that a symbolic
	// link changed between the call's authorization and its execution
	// cannot lead the tool to a file the authorization would have refused:
	// what is checked is what is used. The tollgate command judges the use
	// again with the run's policy (approval.CheckFile). CheckFile must be
	// safe for concurrent use.
	CheckFile func(ctx context.Context, use FileUse) error
	// Sandbox, if set, is called with every command bash is about to start,
	// after its environment, directory and process group are set; it may
	// rewrite the command to run confined (sandbox.Sandbox.Wrap bound to a
	// policy). It reports whether killing the started process kills every
	// process the command starts (a PID namespace); an error refuses the call
	// with an error result. Nil runs the shell unconfined.
	Sandbox func(cmd *exec.Cmd) (wholeTree bool, err error)
}

func (o *Options) withDefaults() (Options, error) {
	var c Options
	if o != nil {
		c = *o
		c.Env = slices.Clone(o.Env)
		if o.WebFetch != nil {
			w := *o.WebFetch
			c.WebFetch = &w
		}
		c.PassEnv = slices.Clone(o.PassEnv)
	}
	for name, v := range map[string]int64{
		"BashTimeout": int64(c.BashTimeout), "MaxBashTimeout": int64(c.MaxBashTimeout),
		"MaxOutputBytes": int64(c.MaxOutputBytes), "ReadLimit": int64(c.ReadLimit), "MaxLineBytes": int64(c.MaxLineBytes),
		"MaxGrepMatches": int64(c.MaxGrepMatches), "MaxGlobResults": int64(c.MaxGlobResults),
	} {
		if v < 0 {
			return c, fmt.Errorf("builtin: Options.%s is negative (%d); use 0 for the default", name, v)
		}
	}
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	if c.BashTimeout == 0 {
		c.BashTimeout = defaultBashTimeout
	}
	if c.MaxBashTimeout == 0 {
		c.MaxBashTimeout = defaultMaxBashTimeout
	}
	if c.BashTimeout > c.MaxBashTimeout {
		return c, fmt.Errorf("builtin: BashTimeout %v exceeds MaxBashTimeout %v", c.BashTimeout, c.MaxBashTimeout)
	}
	if c.MaxBashTimeout < time.Millisecond {
		return c, fmt.Errorf("builtin: MaxBashTimeout %v is below one millisecond", c.MaxBashTimeout)
	}
	def(&c.MaxOutputBytes, defaultMaxOutputBytes)
	def(&c.ReadLimit, defaultReadLimit)
	def(&c.MaxLineBytes, defaultMaxLineBytes)
	def(&c.MaxGrepMatches, defaultMaxGrepMatches)
	def(&c.MaxGlobResults, defaultMaxGlobResults)
	return c, nil
}

// New returns the builtin tools, in the order of [Names], all confined to the
// workspace root directory (see the package documentation). root may be
// relative to the process's working directory; it is made absolute and its
// symbolic links are resolved once, here.
//
// New returns an error when root does not exist or is not a directory, or when
// opts holds a negative value or a BashTimeout above MaxBashTimeout. The tools
// are safe for concurrent use; they open the root afresh for every call and
// hold no file descriptors between calls.
func New(root string, opts *Options) ([]tool.Tool, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	w, err := newWorkspace(root)
	if err != nil {
		return nil, err
	}
	w.setProtected(o.Protect)
	b := &builtins{ws: w, opts: o}
	ctors := []func() (tool.Tool, error){b.bashTool, b.readTool, b.writeTool, b.editTool, b.grepTool, b.globTool, b.webFetchTool, b.questionTool, b.applyPatchTool, b.todoWriteTool}
	tools := make([]tool.Tool, 0, len(ctors))
	for _, c := range ctors {
		t, err := c()
		if err != nil {
			return nil, fmt.Errorf("builtin: %w", err)
		}
		tools = append(tools, t)
	}
	return tools, nil
}

// builtins holds what every builtin tool shares.
type builtins struct {
	ws    *workspace
	opts  Options
	files pathLocks // one writer per file at a time (write, edit)
	web   *webFetcher
	// patchFault, when set (tests only), can fail step n of an apply_patch
	// commit to show that the steps before it are undone.
	patchFault func(step int) error
}

// readOnlyHints are the hints of read, grep and glob.
func readOnlyHints() *tool.Hints { return &tool.Hints{ReadOnly: true, Idempotent: true} }

func newWorkspace(root string) (*workspace, error) {
	if root == "" {
		return nil, fmt.Errorf("builtin: empty workspace root")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("builtin: workspace root %q: %w", root, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("builtin: workspace root: %w", err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return nil, fmt.Errorf("builtin: workspace root: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("builtin: workspace root %s is not a directory", root)
	}
	return &workspace{abs: abs, real: real}, nil
}
