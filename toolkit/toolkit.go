package toolkit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/tollgate-dev/tollgate/builtin"
	"github.com/tollgate-dev/tollgate/internal/argcheck"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/tool"
)

// Errors returned by [New] and [Toolkit.Validate], wrapped with details; test
// with errors.Is.
var (
	// ErrDuplicateTool: two tools other than a builtin and the extra tool
	// shadowing it share a name. Rename one, or drop it.
	ErrDuplicateTool = errors.New("duplicate tool name")
	// ErrInvalidTool: a nil tool, a name that is not [tool.ValidName], or an
	// input schema that does not resolve. Fix the tool's Spec.
	ErrInvalidTool = errors.New("invalid tool")
	// ErrUnknownTool: a name that is not in the toolkit (for Disable: not a
	// builtin). Check the spelling against [Toolkit.Tools] or builtin.Names.
	ErrUnknownTool = errors.New("unknown tool")
	// ErrUnconfined: the builtin bash is on and nothing confines it
	// (Builtin.Sandbox is nil) although Unconfined was not set. Set
	// Builtin.Sandbox (package sandbox: Sandbox.Wrap), set Unconfined
	// to run commands as the host's own user, or Disable bash.
	ErrUnconfined = errors.New("bash would run commands unconfined")
)

// Options configures [New]. A nil *Options means all defaults: every builtin
// on, rooted at the process's working directory, and no extra tools.
type Options struct {
	// Workdir is the workspace root of the builtins (see package builtin); empty
	// means the process's working directory at the time of New. Unused when
	// NoBuiltins is set.
	Workdir string
	// NoBuiltins switches every builtin off (seed 002's BuiltinsConfig::off()).
	NoBuiltins bool
	// Disable switches single builtins off by name ("bash", ...). A name that is
	// not a builtin is an error wrapping [ErrUnknownTool]. An extra tool is
	// never disabled by it.
	Disable []string
	// Extra are the caller's own tools (seed 002's extra_tools). One whose name
	// is a builtin's shadows that builtin.
	Extra []tool.Tool
	// Builtin configures the builtins (timeouts, output caps, and in
	// Builtin.WebFetch webfetch's allow and deny lists of hosts and the
	// address ranges its private-address guard lets through); nil means
	// builtin's defaults.
	//
	// With an policy.Policy whose rules name paths, set Builtin.CheckFile
	// to ask the run's authorizers again when a file tool opens a file
	// (approval.CheckFile), and give the policy the workspace
	// (policy.Policy.WithWorkdir): otherwise a rule on "secret/" does not
	// stop "./secret/key.txt", the absolute path, or a link to the file.
	// The command's builder does both (internal/runbuild); docs/library.md
	// ("Path rules by hand") shows the wiring by hand.
	Builtin *builtin.Options
	// Unconfined lets the builtin bash run commands with the host's own
	// rights, with no Builtin.Sandbox: [New] refuses that unless it is set
	// ([ErrUnconfined]), so that a model's commands never run unconfined by
	// omission.
	Unconfined bool
}

// Toolkit is an immutable set of tools, resolved by name. It is safe for
// concurrent use.
type Toolkit struct {
	tools  []tool.Tool
	byName map[string]*entry
	defs   []model.ToolDef
}

type entry struct {
	tool      tool.Tool
	validator *argcheck.Validator
}

// New assembles a toolkit as the package documentation describes.
//
// It returns an error when the builtins cannot be created (Workdir missing or
// not a directory, invalid Builtin options), when Disable names a non-builtin
// ([ErrUnknownTool]), when the builtin bash is on with nothing to confine
// it and Unconfined is not set ([ErrUnconfined]), when an extra tool is nil, has an invalid name or an
// input schema that does not resolve ([ErrInvalidTool]), or when two tools
// share a name other than by shadowing a builtin ([ErrDuplicateTool], naming
// both tools by position and source).
func New(opts *Options) (*Toolkit, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	for i, name := range o.Disable {
		if !slices.Contains(builtin.Names(), name) {
			return nil, fmt.Errorf("toolkit: Disable[%d] %q: %w (builtins: %s)", i, name, ErrUnknownTool, strings.Join(builtin.Names(), ", "))
		}
	}

	// Extras first, to know which builtins they shadow.
	extraAt := map[string]int{}
	for i, t := range o.Extra {
		if t == nil {
			return nil, fmt.Errorf("toolkit: Extra[%d]: %w: nil tool", i, ErrInvalidTool)
		}
		s := t.Spec()
		if !tool.ValidName(s.Name) {
			return nil, fmt.Errorf("toolkit: Extra[%d] (source %q): %w: name %q must match [A-Za-z0-9_-]{1,%d} (see tool.SanitizeName)",
				i, s.Source, ErrInvalidTool, s.Name, tool.MaxNameLen)
		}
		if j, dup := extraAt[s.Name]; dup {
			return nil, fmt.Errorf("toolkit: %w %q: Extra[%d] (source %q) and Extra[%d] (source %q)",
				ErrDuplicateTool, s.Name, j, o.Extra[j].Spec().Source, i, s.Source)
		}
		extraAt[s.Name] = i
	}

	_, bashShadowed := extraAt["bash"]
	bashOn := !o.NoBuiltins && !bashShadowed && !slices.Contains(o.Disable, "bash")
	if bashOn && (o.Builtin == nil || o.Builtin.Sandbox == nil) && !o.Unconfined {
		return nil, fmt.Errorf("toolkit: %w: set Builtin.Sandbox (sandbox.New, then Sandbox.Wrapper), Unconfined to say so, or Disable bash", ErrUnconfined)
	}

	var tools []tool.Tool
	if !o.NoBuiltins {
		root := o.Workdir
		if root == "" {
			wd, err := os.Getwd()
			if err != nil {
				return nil, fmt.Errorf("toolkit: working directory for the builtins: %w", err)
			}
			root = wd
		}
		bs, err := builtin.New(root, o.Builtin)
		if err != nil {
			return nil, fmt.Errorf("toolkit: %w", err)
		}
		for _, t := range bs {
			name := t.Spec().Name
			if _, shadowed := extraAt[name]; shadowed || slices.Contains(o.Disable, name) {
				continue
			}
			tools = append(tools, t)
		}
	}
	tools = append(tools, o.Extra...)

	k := &Toolkit{tools: tools, byName: make(map[string]*entry, len(tools))}
	for _, t := range tools {
		s := t.Spec()
		v, err := argcheck.New(s.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("toolkit: tool %q (source %q): %w: %v", s.Name, s.Source, ErrInvalidTool, err)
		}
		def, err := toolDef(s)
		if err != nil {
			return nil, fmt.Errorf("toolkit: tool %q (source %q): %w: %v", s.Name, s.Source, ErrInvalidTool, err)
		}
		k.byName[s.Name] = &entry{tool: t, validator: v}
		k.defs = append(k.defs, def)
	}
	return k, nil
}

// emptyObjectSchema is the input schema of a tool that declares none.
const emptyObjectSchema = `{"type":"object","properties":{}}`

func toolDef(s tool.Spec) (model.ToolDef, error) {
	schema := json.RawMessage(emptyObjectSchema)
	if s.InputSchema != nil {
		b, err := json.Marshal(s.InputSchema)
		if err != nil {
			return model.ToolDef{}, fmt.Errorf("encoding the input schema: %w", err)
		}
		schema = b
	}
	return model.ToolDef{Name: s.Name, Description: s.Description, InputSchema: schema}, nil
}

// Tools returns the tools in the toolkit's order: the remaining builtins in
// the order of builtin.Names, then the extra tools in the order given. The
// slice is a copy.
func (k *Toolkit) Tools() []tool.Tool { return slices.Clone(k.tools) }

// names returns the tools' names in the order of [Toolkit.Tools].
func (k *Toolkit) names() []string {
	names := make([]string, len(k.tools))
	for i, t := range k.tools {
		names[i] = t.Spec().Name
	}
	return names
}

// Get returns the tool called name, if there is one.
func (k *Toolkit) Get(name string) (tool.Tool, bool) {
	e, ok := k.byName[name]
	if !ok {
		return nil, false
	}
	return e.tool, true
}

// Validate checks args against the input schema of tool name (step 2 of the
// tool-call pipeline). Empty or null args count as {}. The error wraps
// [ErrUnknownTool] for a name not in the toolkit, or [tool.ErrInvalidArguments]
// listing what is wrong.
func (k *Toolkit) Validate(name string, args json.RawMessage) error {
	e, ok := k.byName[name]
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknownTool, name)
	}
	return e.validator.Validate(args)
}

// Execute resolves, validates and runs one tool call, with no hooks or
// policies around it (see the package documentation).
//
// Every failure of the call is a result the model can see: an unknown name
// ("unknown tool "x"; available tools: ..."), arguments that fail the schema
// ("invalid arguments for x: ..."), a Go error returned by the tool (its
// text), or a panic (see tool.Recovered). Empty or null args are passed to the
// tool as {}. A pending result (tool.Pending) is returned as it is. The
// returned error is non-nil only when ctx is already done before the call
// starts; it is then ctx.Err() and the tool does not run.
func (k *Toolkit) Execute(ctx context.Context, name string, args json.RawMessage) (res tool.Result, err error) {
	if err := ctx.Err(); err != nil {
		return tool.Result{}, err
	}
	e, ok := k.byName[name]
	if !ok {
		return tool.Errorf("unknown tool %q; available tools: %s", name, strings.Join(k.names(), ", ")), nil
	}
	if trimmed := bytes.TrimSpace(args); len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
		args = json.RawMessage("{}")
	}
	if err := e.validator.Validate(args); err != nil {
		msg, _ := strings.CutPrefix(err.Error(), tool.ErrInvalidArguments.Error()+": ")
		return tool.Errorf("invalid arguments for %s: %s", name, msg), nil
	}
	defer func() {
		if p := recover(); p != nil {
			res, err = tool.Recovered(name, p), nil
		}
	}()
	res, err = e.tool.Call(ctx, args)
	if err != nil {
		return tool.Error(err.Error()), nil
	}
	return res, nil
}

// Defs returns the tool definitions the model sees, in the order of
// [Toolkit.Tools]: name, description and the input schema as JSON (a tool
// without a schema gets {"type":"object","properties":{}}). Hints are never
// included. The definitions are taken once, at [New]; the slice is a copy.
func (k *Toolkit) Defs() []model.ToolDef {
	defs := make([]model.ToolDef, len(k.defs))
	for i, d := range k.defs {
		d.InputSchema = slices.Clone(d.InputSchema)
		defs[i] = d
	}
	return defs
}
