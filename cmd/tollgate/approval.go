package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/approval/records"
	"github.com/tollgate-dev/tollgate/approval/store"
	"github.com/tollgate-dev/tollgate/approval/store/sqlite"
	"github.com/tollgate-dev/tollgate/builtin"
	"github.com/tollgate-dev/tollgate/internal/bounded"
	"github.com/tollgate-dev/tollgate/internal/glob"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/tool"
)

// Approve modes of `tollgate run --approve`.
const (
	approvePrompt = "prompt"
	approveYes    = "yes"
	approveNo     = "no"
	approveWait   = "wait"
)

// storedConfig is the run configuration kept with a halted run, so that
// `tollgate resume` rebuilds the same agent.
type storedConfig struct {
	// Args are the flags `tollgate run` was given (without the prompt).
	Args []string `json:"args"`
	// Dir is the working directory the run was started in.
	Dir string `json:"dir"`
}

// approvalRunExtension adds the policy and approval flags to `tollgate run`:
// --policy and --autonomy add an approval.Policy authorizer; --approve says
// who answers pending requests (prompt: the person at the terminal, or, when
// stdin is not a terminal, nobody now: the run is stored and exits 3; yes/no:
// every request is approved/declined without asking); --state-dir holds the
// store of halted runs; --records appends one JSON line per tool call.
func approvalRunExtension() runExtension {
	var policyFile, autonomy, approve, stateDir, recordsFile string
	var ttl time.Duration
	return runExtension{
		flags: func(fs *pflag.FlagSet) {
			fs.StringVar(&policyFile, "policy", "", "authorization policy file (YAML, see 'tollgate policy check')")
			fs.StringVar(&autonomy, "autonomy", "", "autonomy level: full_auto, supervised, cautious or manual (overrides the policy file's)")
			fs.StringVar(&approve, "approve", approvePrompt, "who answers approval requests: prompt (the terminal; without one, store the run and exit 3), wait (store the run, wait for answers given with 'tollgate approvals', then go on), yes or no")
			fs.StringVar(&stateDir, "state-dir", sqlite.DefaultDir, "directory of the store of halted runs and approvals")
			fs.StringVar(&recordsFile, "records", "", "append one JSON line per tool call decision to this file")
			fs.DurationVar(&ttl, "approval-ttl", 0, "approval requests expire this long after they are made, e.g. 1h (0: never); an expired request is refused")
		},
		setup: func(ctx context.Context, rs *runSetup) error {
			if ttl < 0 {
				return usageErr("run: --approval-ttl must not be negative, got %s", ttl)
			}
			rs.opts.ApprovalTTL = ttl
			if policyFile != "" || autonomy != "" {
				pol, err := loadPolicy(rs.env.stderr, policyFile, autonomy)
				if err != nil {
					return err
				}
				// Paths in the policy mean what the builtin tools make of them.
				// The tools accept the workspace as given and with its links
				// resolved; the policy must see both spellings as the same place.
				if abs, err := filepath.Abs(rs.cfg.workdir); err == nil {
					real, err := filepath.EvalSymlinks(abs)
					if err != nil {
						real = abs
					}
					if pol, err = pol.WithWorkdir(real, abs); err != nil {
						return err
					}
				}
				rs.opts.Authorizers = append(rs.opts.Authorizers, pol)
			}
			if recordsFile != "" {
				w, err := records.OpenFile(recordsFile, &records.Options{Logger: rs.logger})
				if err != nil {
					return usageErr("run: --records: %v", err)
				}
				rs.closers = append(rs.closers, w.Close)
				prev := rs.opts.OnRecord
				rs.opts.OnRecord = func(ctx context.Context, rec agent.ToolCallRecord) {
					if prev != nil {
						prev(ctx, rec)
					}
					w.Record(ctx, rec)
				}
			}
			switch approve {
			case approveYes, approveNo:
				ok := approve == approveYes
				rs.opts.WaitFor = func(ctx context.Context, req tool.Request) (tool.Answer, error) {
					ans := tool.Answer{ID: req.ID, OK: ok, By: "--approve=" + approve}
					if !ok {
						ans.Reason = "declined by --approve=no"
					}
					return ans, nil
				}
			case approvePrompt:
				if isTerminal(rs.env.stdin) {
					rs.opts.WaitFor = terminalWait(rs.env.stdin, rs.env.stderr)
				}
			case approveWait:
				// No WaitFor: the run halts and is stored first, so a crash
				// while waiting loses nothing; then this process waits.
			default:
				return usageErr("run: --approve %q: want prompt, wait, yes or no", approve)
			}
			// A halted run must be storable: find out before any call runs.
			if err := checkStateDir(ctx, stateDir); err != nil {
				return usageErr("run: --state-dir %s: %v", stateDir, err)
			}
			// No sandboxed command may write the store, the policy or the
			// records. The store's directory must exist to be protected
			// (else a command could make it and plant a store in it).
			if rs.sandbox != nil && rs.sandbox.sb != nil {
				if err := os.MkdirAll(stateDir, 0o700); err != nil {
					return usageErr("run: --state-dir %s: %v", stateDir, err)
				}
			}
			rs.addProtected(stateDir)
			if policyFile != "" {
				rs.addProtected(policyFile)
			}
			if recordsFile != "" {
				rs.addProtected(recordsFile)
			}
			rs.onHalt = func(ctx context.Context, res *agent.Result) error {
				if err := storeHalted(ctx, rs, stateDir, res); err != nil {
					return err
				}
				if approve != approveWait {
					return nil
				}
				return waitAndResume(ctx, rs.env, stateDir, res.RunID)
			}
			return nil
		},
	}
}

// waitAndResume is --approve wait after the run was stored: it waits until
// every pending request of the run is answered (through 'tollgate approvals'
// in any process), resumes, and does so again each time the run halts anew.
// If this process dies while it waits, the stored run is intact and
// 'tollgate resume' continues it. The returned error carries the exit code.
func waitAndResume(ctx context.Context, env *cliEnv, stateDir, runID string) error {
	for {
		fmt.Fprintf(env.stderr, "tollgate: waiting for answers to run %s (Ctrl-C stops waiting; the run stays stored)\n", runID)
		err := resumeRun(ctx, env, stateDir, runID, true, 250*time.Millisecond)
		var ce *exitCodeError
		if err == nil {
			return withCode(exitDone, nil)
		}
		if !errors.As(err, &ce) || ce.code != exitPending || ctx.Err() != nil {
			return err
		}
	}
}

// loadPolicy loads file (if any), prints its problems to w, and applies the
// autonomy override.
func loadPolicy(w io.Writer, file, autonomy string) (*approval.Policy, error) {
	var pol *approval.Policy
	if file != "" {
		p, problems, err := approval.LoadPolicy(file)
		for _, pr := range problems {
			if pr.Severity == approval.SeverityWarning {
				fmt.Fprintln(w, "tollgate: policy:", pr)
			}
		}
		if err != nil {
			return nil, usageErr("--policy: %v", err)
		}
		pol = p
	} else {
		p, err := approval.NewPolicy(approval.PolicySpec{Name: "--autonomy"})
		if err != nil {
			return nil, err
		}
		pol = p
	}
	if autonomy != "" {
		a, err := approval.ParseAutonomy(autonomy)
		if err != nil {
			return nil, usageErr("--autonomy: %v", err)
		}
		if pol, err = pol.WithAutonomy(a); err != nil {
			return nil, usageErr("--autonomy: %v", err)
		}
	}
	return pol, nil
}

// Limits of a stored run's state read back by resume: 256 MiB, and JSON
// nested at most 1000 deep (the model's own arguments may nest deeply).
const (
	maxStoredState = 256 << 20
	maxStoredDepth = 1000
)

func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// terminalWait asks the person at the terminal: approve, deny with a reason,
// or edit the JSON arguments. Questions go to w.
func terminalWait(in io.Reader, w io.Writer) tool.WaitFunc {
	var asking sync.Mutex
	// One reader owns stdin for the whole run: a question given up on (its
	// context ended) leaves no second reader racing for the next line.
	type line struct {
		s   string
		err error
	}
	var once sync.Once
	lines := make(chan line)
	readLine := func(ctx context.Context) (string, error) {
		once.Do(func() {
			go func() {
				br := bufio.NewReader(in)
				for {
					s, err := br.ReadString('\n')
					lines <- line{strings.TrimSpace(s), err}
					if err != nil {
						close(lines)
						return
					}
				}
			}()
		})
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case l, ok := <-lines:
			if !ok {
				return "", io.EOF
			}
			if l.err != nil && l.s == "" {
				return "", l.err
			}
			return l.s, nil
		}
	}
	return func(ctx context.Context, req tool.Request) (tool.Answer, error) {
		// One question at a time: the calls of a turn run concurrently.
		asking.Lock()
		defer asking.Unlock()
		if req.Kind == tool.KindQuestion {
			return askQuestions(ctx, w, readLine, req)
		}
		fmt.Fprintf(w, "\n%s\n", safeText(req.Prompt))
		if d, err := approval.ParseRequestData(req); err == nil {
			fmt.Fprintf(w, "  tool: %s  call: %s\n  args: %s\n", field(d.Tool), field(d.CallID), safeText(string(d.Args)))
		}
		for {
			fmt.Fprint(w, "[a]pprove, [d]eny, [e]dit arguments? ")
			s, err := readLine(ctx)
			if err != nil {
				return tool.Answer{}, err
			}
			switch strings.ToLower(s) {
			case "a", "approve", "y", "yes":
				return tool.Answer{ID: req.ID, OK: true, By: currentUser()}, nil
			case "d", "deny", "n", "no":
				fmt.Fprint(w, "reason (the model sees it): ")
				reason, err := readLine(ctx)
				if err != nil {
					return tool.Answer{}, err
				}
				return tool.Answer{ID: req.ID, OK: false, Reason: reason, By: currentUser()}, nil
			case "e", "edit":
				fmt.Fprint(w, "new arguments (one line of JSON): ")
				s, err := readLine(ctx)
				if err != nil {
					return tool.Answer{}, err
				}
				var obj map[string]any
				if err := json.Unmarshal([]byte(s), &obj); err != nil {
					fmt.Fprintf(w, "not a JSON object: %v\n", err)
					continue
				}
				return tool.Answer{ID: req.ID, OK: true, Data: json.RawMessage(s), By: currentUser(), Reason: "edited the arguments"}, nil
			}
		}
	}
}

// currentUser names the OS user running this process, from its real user ID
// (not $USER, which any process can set): the login name, else "uid:N".
// It is the principal of every answer given through the command line.
func currentUser() string {
	uid := os.Getuid()
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil && u.Username != "" {
		return u.Username
	}
	return "uid:" + strconv.Itoa(uid)
}

// checkStateDir reports whether a halted run could be stored under dir,
// without creating anything: an existing store must open; otherwise the
// nearest existing ancestor must be a directory the process may write in.
func checkStateDir(ctx context.Context, dir string) error {
	db := filepath.Join(dir, sqlite.DefaultFile)
	if _, err := os.Stat(db); err == nil {
		s, err := sqlite.Open(ctx, db, nil)
		if err != nil {
			return err
		}
		return s.Close()
	}
	p := dir
	for {
		fi, err := os.Stat(p)
		if err == nil {
			if !fi.IsDir() {
				return fmt.Errorf("%s is not a directory", p)
			}
			// Probe by doing: access(2) says yes to root even where nothing
			// can be created (/proc); the probe leaves nothing behind.
			probe, err := os.MkdirTemp(p, ".tollgate-probe-")
			if err != nil {
				return fmt.Errorf("%s does not take new files: %w", p, err)
			}
			return os.Remove(probe)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		parent := filepath.Dir(p)
		if parent == p {
			return err
		}
		p = parent
	}
}

func openStore(ctx context.Context, dir string) (*sqlite.Store, error) {
	s, err := sqlite.Open(ctx, filepath.Join(dir, sqlite.DefaultFile), nil)
	if err != nil {
		return nil, withCode(exitError, err)
	}
	return s, nil
}

// approvalsOf returns the store records of st's pending requests, skipping
// those in skip.
func approvalsOf(st *agent.State, skip map[string]bool) []store.Approval {
	var out []store.Approval
	for _, b := range st.Batch {
		p := b.Pending
		if p == nil || skip[p.Request.ID] {
			continue
		}
		out = append(out, store.Approval{
			ID: p.Request.ID, CallID: b.Call.ID, Tool: b.Call.Name, Digest: p.Digest,
			Kind: p.Request.Kind, Prompt: p.Request.Prompt, Request: p.Request, ExpiresAt: p.Request.ExpiresAt,
		})
	}
	return out
}

// resultJSON encodes res without its State (stored separately).
func resultJSON(res *agent.Result) json.RawMessage {
	if res == nil {
		return nil
	}
	c := *res
	c.State = nil
	b, _ := model.MarshalJSON(c)
	return b
}

// storeHalted stores a run that halted pending, with its requests, and says
// how to answer them.
func storeHalted(ctx context.Context, rs *runSetup, stateDir string, res *agent.Result) error {
	s, err := openStore(ctx, stateDir)
	if err != nil {
		return err
	}
	defer s.Close()
	dir, _ := os.Getwd()
	cfg, _ := model.MarshalJSON(storedConfig{Args: rs.args, Dir: dir})
	state, err := model.MarshalJSON(res.State)
	if err != nil {
		return err
	}
	run := store.Run{ID: res.RunID, Status: store.RunPending, State: state, Result: resultJSON(res), Config: cfg}
	if _, err := s.CreateRun(ctx, store.CreateRunRequest{Run: run, Approvals: approvalsOf(res.State, nil)}); err != nil {
		return err
	}
	printHalted(rs, stateDir, res)
	return nil
}

func printHalted(rs *runSetup, stateDir string, res *agent.Result) {
	if rs.cfg.json {
		return
	}
	sd := ""
	if stateDir != sqlite.DefaultDir {
		sd = " --state-dir " + stateDir
	}
	w := rs.env.stdout
	fmt.Fprintf(w, "stored run %s in %s; answer with:\n", res.RunID, stateDir)
	for _, r := range res.Pending {
		if r.Kind == tool.KindQuestion {
			for _, line := range strings.Split(r.Prompt, "\n") {
				fmt.Fprintf(w, "  | %s\n", safeText(line))
			}
			fmt.Fprintf(w, "  tollgate approvals answer%s %s ANSWER...   (one per question; or: approvals deny%s %s --reason ...)\n", sd, r.ID, sd, r.ID)
			continue
		}
		fmt.Fprintf(w, "  tollgate approvals approve%s %s   (or: approvals deny%s %s --reason ...)\n", sd, r.ID, sd, r.ID)
	}
	fmt.Fprintf(w, "then: tollgate resume%s %s\n", sd, res.RunID)
}

// lintPolicy returns warnings about rules of spec that cannot match what
// tollgate run offers: tool globs that match no builtin and no MCP name, and
// argument conditions on fields that no matched builtin tool has.
func lintPolicy(spec approval.PolicySpec) []string {
	tools, err := builtin.New(os.TempDir(), nil)
	if err != nil {
		return nil
	}
	props := map[string]map[string]bool{}
	for _, t := range tools {
		s := t.Spec()
		props[s.Name] = map[string]bool{}
		if s.InputSchema != nil {
			for k := range s.InputSchema.Properties {
				props[s.Name][k] = true
			}
		}
	}
	var warns []string
	for _, r := range spec.Rules {
		var matched []string // builtins the rule applies to
		mcp := len(r.Tools) == 0
		for _, g := range r.Tools {
			hit := false
			for name := range props {
				if glob.Match(g, name) {
					matched, hit = append(matched, name), true
				}
			}
			if glob.Match(g, "mcp__x__y") || strings.HasPrefix(strings.ToLower(g), "mcp__") {
				mcp, hit = true, true
			}
			if !hit {
				warns = append(warns, fmt.Sprintf("rule %q: tool %q matches no builtin tool (%s) and no MCP tool (mcp__*)", r.ID, g, strings.Join(builtin.Names(), ", ")))
			}
		}
		if len(r.Tools) == 0 {
			matched = builtin.Names()
		}
		if mcp || len(matched) == 0 {
			continue // MCP and other tools' arguments are not known here
		}
		fields := make([]string, 0, len(r.Args)+1)
		for _, a := range r.Args {
			fields = append(fields, a.Field)
		}
		if r.Command != nil {
			f := r.Command.Field
			if f == "" {
				f = approval.DefaultCommandField
			}
			fields = append(fields, f)
		}
		for _, af := range fields {
			field, _, _ := strings.Cut(af, ".")
			found := false
			for _, name := range matched {
				found = found || props[name][field]
			}
			if !found {
				slices.Sort(matched)
				warns = append(warns, fmt.Sprintf("rule %q: argument %q is not an argument of %s, so the rule never matches", r.ID, af, strings.Join(matched, ", ")))
			}
		}
	}
	return warns
}

func newPolicyCmd(env *cliEnv) *cobra.Command {
	cmd := &cobra.Command{Use: "policy", Short: "Work with authorization policy files"}
	check := &cobra.Command{
		Use:   "check FILE...",
		Short: "Check policy files and print their problems as file:line:col",
		Long: `Check policy files. Every problem is printed as file:line:col: severity: message.
It also warns about rules that can never match what 'tollgate run' offers: a tool
glob that matches no builtin tool and no MCP tool name (mcp__*), or a condition on
an argument that none of the builtin tools a rule applies to has (cmd for bash's
command, say). Tools from other sources are not known here.
Exit status 0 when every file loads (warnings allowed), 1 when one has errors.`,
		Args: argsUsage(cobra.MinimumNArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			failed := false
			for _, f := range args {
				p, problems, err := approval.LoadPolicy(f)
				for _, pr := range problems {
					fmt.Fprintln(env.stdout, pr)
				}
				if err != nil {
					failed = true
					var pe *approval.PolicyError
					if !errors.As(err, &pe) {
						fmt.Fprintln(env.stderr, "tollgate:", err)
					}
					continue
				}
				for _, w := range lintPolicy(p.Spec()) {
					fmt.Fprintf(env.stdout, "%s: warning: %s\n", f, w)
				}
				a := string(p.Autonomy())
				if a == "" {
					a = "none"
				}
				fmt.Fprintf(env.stdout, "%s: ok: %d rule(s), %d risk declaration(s), autonomy %s\n", f, len(p.Spec().Rules), len(p.Spec().Risks), a)
			}
			if failed {
				return withCode(exitError, nil)
			}
			return nil
		},
	}
	cmd.AddCommand(check, newPolicyExplainCmd(env))
	return cmd
}

func newApprovalsCmd(env *cliEnv) *cobra.Command {
	var stateDir, runID string
	cmd := &cobra.Command{Use: "approvals", Short: "List, show, approve, deny and answer the pending requests of halted runs"}
	cmd.PersistentFlags().StringVar(&stateDir, "state-dir", sqlite.DefaultDir, "directory of the store")
	cmd.PersistentFlags().StringVar(&runID, "run", "", "the run the request belongs to (needed when two runs share a request ID)")

	var status string
	list := &cobra.Command{
		Use:   "list",
		Short: "List approval requests (pending ones unless --status says otherwise)",
		Args:  argsUsage(cobra.NoArgs),
		RunE: func(c *cobra.Command, args []string) error {
			s, err := openStore(c.Context(), stateDir)
			if err != nil {
				return err
			}
			defer s.Close()
			switch store.Status(status) {
			case store.StatusPending, store.StatusApproved, store.StatusDenied, store.StatusExpired, store.StatusUsed, "all":
			default:
				return usageErr("approvals list: --status %q: want pending, approved, denied, expired, used or all", status)
			}
			f := store.ApprovalFilter{RunID: runID, Status: store.Status(status)}
			if status == "all" {
				f.Status = ""
			}
			as, err := listApprovals(c.Context(), s, f)
			if err != nil {
				return withCode(exitError, err)
			}
			tw := tabwriter.NewWriter(env.stdout, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tRUN\tSTATUS\tTOOL\tPROMPT")
			for _, a := range as {
				status := a.Status
				if status == store.StatusPending && a.Expired(time.Now()) {
					status = store.StatusExpired // no answer is taken any more
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", field(a.ID), field(a.RunID), status, field(a.Tool), oneLine(a.Prompt, 80))
			}
			return tw.Flush()
		},
	}
	list.Flags().StringVar(&status, "status", string(store.StatusPending), "pending, approved, denied, expired, used or all")

	show := &cobra.Command{
		Use:   "show ID",
		Short: "Show one approval request as JSON",
		Args:  argsUsage(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			s, err := openStore(c.Context(), stateDir)
			if err != nil {
				return err
			}
			defer s.Close()
			a, err := findApproval(c.Context(), s, runID, args[0])
			if err != nil {
				return err
			}
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false) // show "a && b > c" as written
			enc.SetIndent("", "  ")
			_ = enc.Encode(a)
			b := bytes.TrimRight(buf.Bytes(), "\n")
			fmt.Fprintf(env.stdout, "%s\n", b)
			return nil
		},
	}

	decide := func(approve bool) *cobra.Command {
		var by, reason, editArgs string
		var admin bool
		use, short := "approve ID", "Approve a request (optionally with edited arguments)"
		if !approve {
			use, short = "deny ID", "Deny a request with a reason the model sees"
		}
		c := &cobra.Command{
			Use: use, Short: short,
			Args: argsUsage(cobra.ExactArgs(1)),
			RunE: func(c *cobra.Command, args []string) error {
				// The principal is the OS user running this command: a tool
				// that reaches this command cannot claim to be someone else.
				// --by names another only with --admin, and the record keeps
				// the OS user beside it.
				principal := currentUser()
				if by != "" {
					if !admin {
						return usageErr("%s: --by records a principal other than the OS user (%s); it needs --admin", c.CommandPath(), principal)
					}
					principal = by + " (by " + principal + " with --admin)"
				}
				s, err := openStore(c.Context(), stateDir)
				if err != nil {
					return err
				}
				defer s.Close()
				a, err := findApproval(c.Context(), s, runID, args[0])
				if err != nil {
					return err
				}
				d := store.Decision{Approve: approve, By: principal, Reason: reason}
				if editArgs != "" {
					var obj map[string]any
					if err := json.Unmarshal([]byte(editArgs), &obj); err != nil {
						return usageErr("--args: not a JSON object: %v", err)
					}
					d.Data = json.RawMessage(editArgs)
				}
				a, err = s.Decide(c.Context(), a.RunID, a.ID, d)
				if err != nil {
					return withCode(exitError, err)
				}
				sd := ""
				if stateDir != sqlite.DefaultDir {
					sd = "--state-dir " + stateDir + " "
				}
				fmt.Fprintf(env.stdout, "%s %s of run %s (by %s); continue with: tollgate resume %s%s\n", a.Status, field(a.ID), field(a.RunID), field(a.DecidedBy), sd, field(a.RunID))
				return nil
			},
		}
		c.Flags().StringVar(&by, "by", "", "record this principal instead of the OS user running the command (needs --admin; the OS user is kept too)")
		c.Flags().BoolVar(&admin, "admin", false, "allow --by")
		c.Flags().StringVar(&reason, "reason", "", "why; on deny the model sees it")
		if approve {
			c.Flags().StringVar(&editArgs, "args", "", "approve with these arguments instead (a JSON object); they are authorized again")
		}
		return c
	}
	cmd.AddCommand(list, show, decide(true), decide(false), newAnswerCmd(&stateDir, &runID, env))
	return cmd
}

// listApprovals returns every approval f selects, across pages.
func listApprovals(ctx context.Context, s store.Store, f store.ApprovalFilter) ([]store.Approval, error) {
	var out []store.Approval
	for a, err := range store.AllApprovals(ctx, s, f) {
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// findApproval finds a request by ID (and run, when given).
func findApproval(ctx context.Context, s store.Store, runID, id string) (store.Approval, error) {
	as, err := listApprovals(ctx, s, store.ApprovalFilter{RunID: runID, ID: id})
	if err != nil {
		return store.Approval{}, withCode(exitError, err)
	}
	switch len(as) {
	case 0:
		return store.Approval{}, withCode(exitError, fmt.Errorf("no approval request %q (see 'tollgate approvals list')", id))
	case 1:
		return as[0], nil
	}
	return store.Approval{}, usageErr("request ID %q is in %d runs; say which with --run", id, len(as))
}

func newResumeCmd(env *cliEnv) *cobra.Command {
	var stateDir string
	var wait, reclaim bool
	var poll time.Duration
	cmd := &cobra.Command{
		Use:   "resume RUN_ID",
		Short: "Continue a halted run with the decisions made on its requests",
		Long: `Continue a halted run with the decisions made on its requests (see 'tollgate
approvals'). The agent is rebuilt from the run's stored flags. Each approved call
runs exactly once; denied and expired ones give the model an error result;
undecided ones stay pending. With --wait, resume first waits until every request
of the run is decided; it may be killed while it waits without losing anything.

A resume that is killed while it runs leaves the run "resuming". When no resume
is running any more, --reclaim takes such a run up (use it only then: it does
not check whether the other process is still alive). A call whose approval that
resume had already used may or may not have run, so it is never run again: the
model gets an error result saying so (at most once).

Exit status: as 'tollgate run'; 3 when requests are still pending.`,
		Args: argsUsage(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			return resumeRunFrom(c.Context(), env, stateDir, args[0], wait, reclaim, poll)
		},
	}
	cmd.Flags().BoolVar(&reclaim, "reclaim", false, "take up a run left 'resuming' by a resume that was killed")
	cmd.Flags().StringVar(&stateDir, "state-dir", sqlite.DefaultDir, "directory of the store")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until every pending request of the run is decided")
	cmd.Flags().DurationVar(&poll, "poll", 250*time.Millisecond, "how often --wait looks at the store")
	return cmd
}

func resumeRun(ctx context.Context, env *cliEnv, stateDir, runID string, wait bool, poll time.Duration) error {
	return resumeRunFrom(ctx, env, stateDir, runID, wait, false, poll)
}

// resumeRunFrom is resumeRun; with reclaim it takes up a run left "resuming"
// by a resume that died instead of a "pending" one.
func resumeRunFrom(ctx context.Context, env *cliEnv, stateDir, runID string, wait, reclaim bool, poll time.Duration) error {
	s, err := openStore(ctx, stateDir)
	if err != nil {
		return err
	}
	defer s.Close()
	run, err := s.GetRun(ctx, runID)
	if err != nil {
		return withCode(exitError, err)
	}
	from := store.RunPending
	switch {
	case reclaim && run.Status == store.RunResuming:
		from = store.RunResuming
		fmt.Fprintf(env.stderr, "tollgate: taking up run %s, left resuming; calls whose approval was already used are not run again\n", runID)
	case run.Status == store.RunResuming:
		return withCode(exitError, fmt.Errorf("run %s is resuming in another process; if that process was killed, take the run up with 'tollgate resume --reclaim %s'", runID, runID))
	case run.Status != store.RunPending:
		return withCode(exitError, fmt.Errorf("run %s is %s, not pending", runID, run.Status))
	}
	// The stored state is bounded before it is decoded, as every document is.
	if err := bounded.CheckJSON("run "+runID+": stored state", run.State, bounded.Limits{MaxBytes: maxStoredState, MaxDepth: maxStoredDepth}); err != nil {
		return withCode(exitError, err)
	}
	var st agent.State
	if err := json.Unmarshal(run.State, &st); err != nil {
		return withCode(exitError, fmt.Errorf("run %s: stored state: %w", runID, err))
	}
	var cfg storedConfig
	if err := json.Unmarshal(run.Config, &cfg); err != nil {
		return withCode(exitError, fmt.Errorf("run %s: stored configuration: %w", runID, err))
	}
	if dir, _ := os.Getwd(); cfg.Dir != "" && dir != cfg.Dir {
		fmt.Fprintf(env.stderr, "tollgate: run %s was started in %s; relative paths in its flags now resolve from %s\n", runID, cfg.Dir, dir)
	}
	decided := func() (int, int, error) {
		n, total := 0, 0
		for _, b := range st.Batch {
			if b.Pending == nil {
				continue
			}
			total++
			a, err := s.GetApproval(ctx, runID, b.Pending.Request.ID)
			if err != nil {
				return 0, 0, err
			}
			if a.Status != store.StatusPending || a.Expired(time.Now()) {
				n++
			}
		}
		return n, total, nil
	}
	n, total, err := decided()
	for err == nil && wait && n < total {
		select {
		case <-ctx.Done():
			return withCode(exitError, ctx.Err())
		case <-time.After(poll):
		}
		n, total, err = decided()
	}
	if err != nil {
		return withCode(exitError, err)
	}
	if n == 0 {
		return withCode(exitPending, fmt.Errorf("no request of run %s is decided yet (see 'tollgate approvals list --run %s')", runID, runID))
	}

	// Claim the run: of two resumes, one wins.
	if _, err := s.UpdateRun(ctx, runID, store.RunUpdate{From: from, Status: store.RunResuming}); err != nil {
		return withCode(exitError, err)
	}
	release := func() {
		_, _ = s.UpdateRun(context.WithoutCancel(ctx), runID, store.RunUpdate{From: store.RunResuming, Status: store.RunPending})
	}
	// Build the agent before any approval is used, so that a failure here
	// leaves every approval as it was.
	b, err := rebuildRun(ctx, env, cfg.Args)
	if err != nil {
		release()
		return err
	}
	defer b.close()
	var answers []tool.Answer
	for _, b := range st.Batch {
		p := b.Pending
		if p == nil {
			continue
		}
		a, err := s.GetApproval(ctx, runID, p.Request.ID)
		if err != nil {
			release()
			return withCode(exitError, err)
		}
		switch a.Status {
		case store.StatusPending:
			if a.Expired(time.Now()) {
				// Nobody answered in time: the call is refused, and the run goes on.
				answers = append(answers, tool.Answer{ID: a.ID, OK: false, By: "runtime",
					Reason: "the approval request expired before anyone answered it"})
			}
			continue
		case store.StatusUsed:
			// A resume that did not finish used this approval: the call may
			// have run. It is never run twice.
			answers = append(answers, tool.Answer{ID: a.ID, OK: false, By: "runtime",
				Reason: "the approval was used by a resume that did not finish; the call may or may not have run, and is not run again"})
			continue
		case store.StatusApproved:
			a, err = s.Consume(ctx, runID, a.ID, p.Digest)
			if err != nil && !errors.Is(err, store.ErrExpired) {
				release()
				return withCode(exitError, err)
			}
		}
		if ans, ok := a.Answer(); ok {
			answers = append(answers, ans)
		}
	}
	// The stored run is updated here, not stored anew.
	b.setup.onHalt = func(ctx context.Context, res *agent.Result) error {
		existing, err := listApprovals(ctx, s, store.ApprovalFilter{RunID: runID})
		if err != nil {
			return err
		}
		skip := map[string]bool{}
		for _, a := range existing {
			skip[a.ID] = true
		}
		state, _ := model.MarshalJSON(res.State)
		if _, err := s.UpdateRun(ctx, runID, store.RunUpdate{From: store.RunResuming, Status: store.RunPending, State: state, Result: resultJSON(res), Approvals: approvalsOf(res.State, skip)}); err != nil {
			return err
		}
		printHalted(b.setup, stateDir, res)
		return nil
	}
	b.setup.afterRun = append(b.setup.afterRun, func(ctx context.Context, res *agent.Result, runErr error) {
		ctx = context.WithoutCancel(ctx)
		switch {
		case res != nil && res.Status == agent.StatusPending && runErr == nil:
			// onHalt stores it.
		case res != nil && res.Status == agent.StatusPending:
			// Resume refused the answers: nothing changed.
			release()
		default:
			status := store.RunError
			if res != nil && runErr == nil {
				status = store.RunStatus(res.Status)
			}
			if _, err := s.UpdateRun(ctx, runID, store.RunUpdate{From: store.RunResuming, Status: status, State: json.RawMessage("null"), Result: resultJSON(res)}); err != nil {
				fmt.Fprintln(env.stderr, "tollgate: storing the run's end:", err)
			}
		}
	})
	rctx, cancel := b.runContext(ctx)
	defer cancel()
	return b.execute(rctx, b.agent.ResumeStream(rctx, &st, answers...))
}
