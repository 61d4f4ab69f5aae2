package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/tollgate-dev/tollgate/configfile"
	"github.com/tollgate-dev/tollgate/internal/runbuild"
	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/mcptool"
	"github.com/tollgate-dev/tollgate/policy"
	"github.com/tollgate-dev/tollgate/runs"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/tollgate-dev/tollgate/approval"
	"github.com/tollgate-dev/tollgate/approval/inbox"
	"github.com/tollgate-dev/tollgate/builtin"
	"github.com/tollgate-dev/tollgate/internal/glob"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/sqlite"
	"github.com/tollgate-dev/tollgate/tool"
)

// Approve modes of `tollgate run --approve`.
const (
	approvePrompt = "prompt"
	approveYes    = "yes"
	approveNo     = "no"
	approveWait   = "wait"
)

// approvalRunExtension adds the policy and approval flags to `tollgate run`:
// --policy and --autonomy add an policy.Policy authorizer; --approve says
// who answers pending requests (prompt: the person at the terminal, or, when
// stdin is not a terminal, nobody now: the run is stored and exits 3; wait:
// the run is stored, then this process waits for answers and goes on;
// yes/no: every request is approved/declined without asking); --records
// appends one JSON line per tool call.
func approvalRunExtension() runExtension {
	return runExtension{
		flags: func(fs *pflag.FlagSet, f *runFlags) {
			fs.StringVar(&f.policy, "policy", "", "authorization policy file (YAML, see 'tollgate policy check')")
			fs.StringVar(&f.autonomy, "autonomy", "", "autonomy level: full_auto, supervised, cautious or manual (overrides the policy file's)")
			fs.StringVar(&f.approve, "approve", approvePrompt, "who answers approval requests: prompt (the terminal; without one, store the run and exit 3), wait (store the run, wait for answers given with 'tollgate approvals', then go on), yes or no")
			fs.StringVar(&f.records, "records", "", "append one JSON line per tool call decision to this file")
			fs.DurationVar(&f.approvalTTL, "approval-ttl", 0, "approval requests expire this long after they are made, e.g. 1h (0: never); an expired request is refused")
		},
		// Policy, autonomy, records and approval-ttl are applied by
		// package internal/runbuild; who answers is this process's.
		setup: func(ctx context.Context, cb *cliBuilder, cfg runs.RunConfig, built *runs.Built) error {
			switch cfg.Answer {
			case approveYes, approveNo:
				ok := cfg.Answer == approveYes
				by := tool.Principal{Kind: tool.PrincipalFlag, Name: "--approve=" + cfg.Answer}
				built.Options.WaitFor = func(ctx context.Context, req tool.Request) (tool.Answer, error) {
					ans := tool.Answer{ID: req.ID, OK: ok, Principal: by}
					if !ok {
						ans.Reason = "every request is declined without asking"
					}
					return ans, nil
				}
			case approvePrompt:
				if isTerminal(cb.env.stdin) {
					tw := terminalWait(cb.env.stdin, cb.env.stderr, cb.env.termHold())
					built.Options.WaitFor = tw
					cb.elicit.Store(&tw) // the MCP servers' elicitations, asked the same way
				}
			case approveWait, "":
				// No WaitFor: the run halts and is stored first, so a crash
				// while waiting loses nothing; then this process waits. A
				// configuration of a server says nothing: its runs halt.
			default:
				return usageErr("run: --approve %q: want prompt, wait, yes or no", cfg.Answer)
			}
			return nil
		},
	}
}

// loadPolicy loads file (if any), prints its problems to w, and applies the
// autonomy override (runbuild.LoadPolicy), its errors named by the flags.
func loadPolicy(w io.Writer, file, autonomy string) (*policy.Policy, error) {
	pol, err := runbuild.LoadPolicy(file, autonomy, func(line string) { fmt.Fprintln(w, "tollgate: "+oneLine(line, 2000)) })
	if err != nil {
		return nil, flagError(err)
	}
	return pol, nil
}

func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// terminalWait asks the person at the terminal: approve, deny with a reason,
// or edit the JSON arguments. Questions go to w.
func terminalWait(in io.Reader, w io.Writer, hold *termHold) tool.WaitFunc {
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
		if hold != nil {
			defer hold.ask()()
		}
		if req.Kind == tool.KindQuestion {
			return askQuestions(ctx, w, readLine, req)
		}
		if d, err := mcptool.ParseElicitData(req); err == nil {
			return askElicitation(ctx, w, readLine, req, d)
		}
		printPrompt(w, req.Prompt)
		if d, err := approval.ParseRequestData(req); err == nil {
			fmt.Fprintf(w, "  tool: %s  call: %s\n  args: %s\n", field(d.Tool), field(d.CallID), argsLine(d.Args))
		}
		for {
			fmt.Fprint(w, "[a]pprove, [d]eny, [e]dit arguments? ")
			s, err := readLine(ctx)
			if err != nil {
				return tool.Answer{}, err
			}
			switch strings.ToLower(s) {
			case "a", "approve", "y", "yes":
				return tool.Answer{ID: req.ID, OK: true, Principal: osPerson()}, nil
			case "d", "deny", "n", "no":
				fmt.Fprint(w, "reason (the model sees it): ")
				reason, err := readLine(ctx)
				if err != nil {
					return tool.Answer{}, err
				}
				return tool.Answer{ID: req.ID, OK: false, Reason: reason, Principal: osPerson()}, nil
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
				if err := inbox.CheckData(req, json.RawMessage(s)); err != nil {
					fmt.Fprintf(w, "%s\n", safeText(err.Error()))
					continue
				}
				return tool.Answer{ID: req.ID, OK: true, Data: json.RawMessage(s), Principal: osPerson(), Reason: "edited the arguments"}, nil
			}
		}
	}
}

// nextStep says what comes after an answer to a request of run runID: a
// run started with --approve wait is taken up by the process that waits
// for it; any other by 'tollgate resume' (with the store flags given as
// repeat, from stateFlags.repeatFlags).
func nextStep(ctx context.Context, s store.Store, runID, repeat string) string {
	resume := "tollgate resume " + strings.TrimPrefix(repeat+" ", " ") + field(runID)
	if r, err := s.GetRun(ctx, runID); err == nil {
		var cfg runs.RunConfig
		if json.Unmarshal(r.Config, &cfg) == nil && cfg.Answer == approveWait {
			return "the 'tollgate run --approve wait' that waits for it goes on by itself once every request is answered (if it was stopped: " + resume + ")"
		}
	}
	return "continue with: " + resume
}

// printPrompt shows an approval request's prompt, which holds text from
// outside the command (a hook's or a policy's reason, the model's
// arguments): its first line as it is, every further line after "  | ", so
// that no line of it can pass for one of the lines the approver prints
// itself (the call's tool and arguments, the question to answer). Carriage
// returns and other control characters are escaped by safeText.
func printPrompt(w io.Writer, prompt string) {
	first, rest, more := strings.Cut(prompt, "\n")
	fmt.Fprintf(w, "\n%s\n", safeText(first))
	for more {
		var line string
		line, rest, more = strings.Cut(rest, "\n")
		fmt.Fprintf(w, "  | %s\n", safeText(line))
	}
}

// argsLine shows a call's arguments on one line: compacted JSON (the
// whitespace between its tokens, newlines included, left out), or, for
// arguments that are not JSON, their text with newlines escaped.
func argsLine(args json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, args) == nil {
		return safeText(string(jsonSafe(b.Bytes())))
	}
	return oneLineSafe(string(args))
}

// currentUser names the OS user running this process, from its real user ID
// (not $USER, which any process can set): the login name, else "uid:N".
// It is the principal of every answer given through the command line.
// osPerson is the OS user running this command, as the person who answers.
func osPerson() tool.Principal {
	return tool.Principal{Kind: tool.PrincipalPerson, Name: currentUser()}
}

// deciders is who a decision made at this command line is recorded as. It is
// the OS user running the command, so that a tool that reaches this command
// cannot claim to be someone else; with --by NAME (a person: NAME or
// person:NAME), which needs --admin, it is the person NAME, and the OS user
// is kept as the actor who answered on NAME's behalf.
func deciders(cmdPath, by string, admin bool) (decider, actor tool.Principal, err error) {
	if by != "" && !admin {
		return decider, actor, usageErr("%s: --by records a principal other than the OS user (%s); it needs --admin", cmdPath, currentUser())
	}
	decider, actor, err = inbox.OnBehalf(osPerson(), by)
	if err != nil {
		return decider, actor, usageErr("%s: --by %s: %s", cmdPath, field(by), strings.TrimPrefix(err.Error(), "inbox: "))
	}
	return decider, actor, nil
}

// decidedBy is the text that names who decided a: "person:alice", and for an
// administrator's answer on someone's behalf "person:alice; recorded by
// person:root with --admin".
func decidedBy(a store.Approval) string {
	if a.Actor.IsZero() {
		return a.DecidedBy.String()
	}
	return a.DecidedBy.String() + "; recorded by " + a.Actor.String() + " with --admin"
}

func currentUser() string {
	uid := os.Getuid()
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil && u.Username != "" {
		return u.Username
	}
	return "uid:" + strconv.Itoa(uid)
}

// storeFile is the SQLite store's file name in a state directory (the
// default state directory is the user's, e.g. ~/.local/state/tollgate;
// never one inside an agent's workspace).
const storeFile = "tollgate.db"

// decisionKeyFile is the decision key's file name in a state directory,
// next to the store's file.
const decisionKeyFile = "decision.key"

func openStore(ctx context.Context, dir, keyFile string) (store.Store, error) {
	opts, err := decisionKey(keyFile)
	if err != nil {
		return nil, err
	}
	s, err := sqlite.Open(ctx, filepath.Join(dir, storeFile), opts)
	if err != nil {
		return nil, withCode(exitError, err)
	}
	return s, nil
}

// lintPolicy returns warnings about rules of spec that cannot match what
// tollgate run offers: tool globs that match no builtin and no MCP name, and
// argument conditions on fields that no matched builtin tool has.
//
// Each warning is a problem at the rule's line:col in its file.
func lintPolicy(spec policy.PolicySpec) []configfile.Problem {
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
	var warns []configfile.Problem
	for _, r := range spec.Rules {
		warn := func(format string, a ...any) {
			warns = append(warns, configfile.Problem{File: spec.Name, Line: r.Line, Col: r.Col, Severity: configfile.SeverityWarning, Message: fmt.Sprintf(format, a...)})
		}
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
				warn("rule %q: tool %q matches no builtin tool (%s) and no MCP tool (mcp__*)", r.ID, g, strings.Join(builtin.Names(), ", "))
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
				f = "command"
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
				warn("rule %q: argument %q is not an argument of %s, so the rule never matches", r.ID, af, strings.Join(matched, ", "))
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
				p, problems, err := policy.LoadPolicy(f)
				for _, pr := range problems {
					fmt.Fprintln(env.stdout, pr)
				}
				if err != nil {
					failed = true
					var pe *configfile.Error
					if !errors.As(err, &pe) {
						printError(env.stderr, err)
					}
					continue
				}
				for _, w := range lintPolicy(p.Spec()) {
					fmt.Fprintln(env.stdout, w)
				}
				a := string(p.Spec().Autonomy)
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
	cmd.AddCommand(check, newPolicyExplainCmd(env), newPolicyReplayCmd(env), newPolicyRulesCmd(env))
	return cmd
}

func newApprovalsCmd(env *cliEnv) *cobra.Command {
	var runID string
	state := &stateFlags{}
	cmd := &cobra.Command{Use: "approvals", Short: "List, show, approve, deny and answer the pending requests of halted runs"}
	state.add(cmd.PersistentFlags(), env)
	cmd.PersistentFlags().StringVar(&runID, "run", "", "the run the request belongs to (needed when two runs share a request ID)")

	var status string
	var jsonOut bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List approval requests (pending ones unless --status says otherwise)",
		Args:  argsUsage(cobra.NoArgs),
		RunE: func(c *cobra.Command, args []string) error {
			s, err := state.open(c.Context())
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
			as, err := inbox.New(s, nil).List(c.Context(), f) // expired ones as expired: no answer is taken any more
			if err != nil {
				return withCode(exitError, err)
			}
			if jsonOut {
				return writeJSON(env.stdout, approvalsJSON(as))
			}
			tw := tabwriter.NewWriter(env.stdout, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tRUN\tSTATUS\tTOOL\tPROMPT")
			for _, a := range as {
				status := string(a.Status)
				if a.Unverified {
					status += " (not made through tollgate: declined)"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", field(a.ID), field(a.RunID), status, field(a.Tool), oneLine(a.Prompt, 80))
			}
			return tw.Flush()
		},
	}
	list.Flags().StringVar(&status, "status", string(store.StatusPending), "pending, approved, denied, expired, used or all")
	list.Flags().BoolVar(&jsonOut, "json", false, "print a JSON array of the requests instead of a table")

	var showJSON bool
	show := &cobra.Command{
		Use:   "show ID",
		Short: "Show one approval request (--json: all of it, as JSON)",
		Args:  argsUsage(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			s, err := state.open(c.Context())
			if err != nil {
				return err
			}
			defer s.Close()
			a, err := findApproval(c.Context(), s, runID, args[0])
			if err != nil {
				return err
			}
			if showJSON {
				return writeJSON(env.stdout, approvalsJSON([]store.Approval{a})[0])
			}
			printApproval(env.stdout, a)
			return nil
		},
	}
	show.Flags().BoolVar(&showJSON, "json", false, "print the request as JSON, its arguments' digest as argsDigest")

	decide := func(approve bool) *cobra.Command {
		var reason, editArgs string
		as := &answerAs{state: state, runID: &runID}
		use, short := "approve ID", "Approve a request (optionally with edited arguments)"
		if !approve {
			use, short = "deny ID", "Deny a request with a reason the model sees"
		}
		c := &cobra.Command{
			Use: use, Short: short,
			Args: argsUsage(cobra.ExactArgs(1)),
			RunE: func(c *cobra.Command, args []string) error {
				return as.decide(c, env, args[0], "", "--args", func(a store.Approval) (inbox.Decision, error) {
					d := inbox.Decision{Approve: approve, Reason: reason}
					if err := plainDecision(a, approve, reason); err != nil {
						return d, err
					}
					if editArgs != "" {
						if a.Kind != tool.KindApproval {
							return d, usageErr("--args: request %s is a %s request; only approval requests take edited arguments (answer it with 'tollgate approvals answer')", field(a.ID), field(string(a.Kind)))
						}
						// Checked against the tool's schema by the inbox:
						// an edit that fails when the run resumes has used
						// the approval up.
						d.Data = json.RawMessage(editArgs)
					}
					return d, nil
				})
			},
		}
		as.flags(c, "decided")
		c.Flags().StringVar(&reason, "reason", "", "why; on deny the model sees it")
		if approve {
			c.Flags().StringVar(&editArgs, "args", "", "approve with these arguments instead (a JSON object); they are authorized again")
		}
		return c
	}
	cmd.AddCommand(list, show, decide(true), decide(false), newAnswerCmd(state, &runID, env))
	return cmd
}

// answerAs is what approve, deny and answer share: who answers (the OS
// user, or with --by and --admin the person named, the OS user kept as the
// actor), the request, the inbox's decision and the line that says it.
type answerAs struct {
	state *stateFlags
	runID *string
	by    string
	admin bool
}

// flags adds --by and --admin to c, whose answer is said to be "decided"
// or "answered".
func (w *answerAs) flags(c *cobra.Command, decided string) {
	c.Flags().StringVar(&w.by, "by", "", "record that this person "+decided+" instead of the OS user running the command (needs --admin; the OS user is kept as the actor)")
	c.Flags().BoolVar(&w.admin, "admin", false, "allow --by")
}

// decide finds request id, makes its decision with mk (By and Actor are
// set after) and records it through the inbox, then prints "VERB ID of run
// RUN (by WHO); NEXT", VERB the status when empty. Data that does not fit
// the request is a usage error naming what (the flag that gave it).
func (w *answerAs) decide(c *cobra.Command, env *cliEnv, id, verb, what string, mk func(store.Approval) (inbox.Decision, error)) error {
	decider, actor, err := deciders(c.CommandPath(), w.by, w.admin)
	if err != nil {
		return err
	}
	ctx := c.Context()
	s, err := w.state.open(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	a, err := findApproval(ctx, s, *w.runID, id)
	if err != nil {
		return err
	}
	d, err := mk(a)
	if err != nil {
		return err
	}
	d.By, d.Actor = decider, actor
	a, err = inbox.New(s, nil).Decide(ctx, a, d)
	if errors.As(err, new(*inbox.DataError)) {
		return usageErr("%s: %s; nothing was decided", what, field(err.Error()))
	}
	if err != nil {
		return withCode(exitError, err)
	}
	fmt.Fprintf(env.stdout, "%s %s of run %s (by %s); %s\n", cmp.Or(verb, string(a.Status)), field(a.ID), field(a.RunID), field(decidedBy(a)), nextStep(ctx, s, a.RunID, w.state.repeatFlags()))
	return nil
}

// noSuchRun says that no run has the ID when err is the store's
// [store.ErrNotFound], in the command's terms; it returns err otherwise.
func noSuchRun(err error, id string) error {
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("no run %q (see 'tollgate runs list')", id)
	}
	return err
}

// findApproval finds a request by ID (and run, when given) in the default
// tenant.
func findApproval(ctx context.Context, s store.Store, runID, id string) (store.Approval, error) {
	a, err := inbox.New(s, nil).Find(ctx, inbox.Query{RunID: runID, ID: id})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return a, withCode(exitError, fmt.Errorf("no approval request %q (see 'tollgate approvals list')", id))
	case errors.Is(err, inbox.ErrAmbiguous):
		return a, usageErr("request ID %q is in several runs; say which with --run", id)
	case errors.Is(err, inbox.ErrNoID):
		return a, usageErr("the request ID is empty (see 'tollgate approvals list')")
	case err != nil:
		return a, withCode(exitError, err)
	}
	return a, nil
}

func newResumeCmd(env *cliEnv) *cobra.Command {
	var state stateFlags
	var wait, reclaim, jsonOut bool
	var lf logFlags
	var poll time.Duration
	var apiKey string
	cmd := &cobra.Command{
		Use:   "resume RUN_ID",
		Short: "Continue a halted run with the decisions made on its requests",
		Long: `Continue a halted run with the decisions made on its requests (see 'tollgate
approvals'). The agent is rebuilt from the run's stored configuration, whose
paths were resolved when the run started: it runs in the recorded workspace
whatever the current directory. Each approved call runs exactly once; denied
and expired ones give the model an error result; undecided ones stay pending.
With --wait, resume first waits until every request of the run is decided; it
may be killed while it waits without losing anything.

A run is driven under a lease that its process renews. When a resume is
killed, the next 'tollgate resume' takes the run over once the lease expired
(` + envLeaseTTL + `, default 30s), from its latest checkpoint: a call that
finished is not run again, and a call whose approval was already used may or
may not have run, so it is not run again either (the model is told). Of two
resumes of one run, one wins; the other exits 1.

Exit status: as 'tollgate run'; 3 when requests are still pending.`,
		Args: argsUsage(cobra.ExactArgs(1)),
		RunE: func(c *cobra.Command, args []string) error {
			if reclaim {
				fmt.Fprintln(env.stderr, "tollgate: --reclaim is no longer needed: a run whose process died is taken over once its lease expires")
			}
			stateDir, err := state.resolve("")
			if err != nil {
				return err
			}
			storeURL, err := state.storeURL()
			if err != nil {
				return err
			}
			keyFile, err := state.keyFile(stateDir, "")
			if err != nil {
				return err
			}
			b := &cliBuilder{env: env, apiKey: apiKey, stateDir: stateDir, keyFile: keyFile, exts: runExtensions(), mcpLogins: true}
			h, st, closeStore, err := openHost(c.Context(), env, storeURL, stateDir, keyFile, b, false)
			if err != nil {
				return err
			}
			defer closeStore()
			ctx := c.Context()
			run, err := st.GetRun(ctx, args[0])
			if err != nil {
				return withCode(exitError, noSuchRun(err, args[0]))
			}
			cfg, err := runcore.LoadConfig(run)
			if err != nil {
				return withCode(exitError, err)
			}
			// Opened once the run's workspace is known: no link an agent
			// could have planted in it is followed.
			logs, err := lf.open(env, cfg.Workdir)
			if err != nil {
				return err
			}
			defer logs.Close()
			b.logs = logs
			// A key given with --api-key is never stored: without it again
			// the resumed run would reach the model with no key, fail after
			// the approved calls ran, and end the run for nothing.
			if cfg.Model.KeyGiven && apiKey == "" {
				return usageErr("resume: run %s was started with --api-key, which is never stored; give the key again with --api-key (or start runs with --api-key-env NAME, which is stored as a name)", field(run.ID))
			}
			if wait {
				fmt.Fprintf(env.stderr, "tollgate: waiting for answers to run %s (Ctrl-C stops waiting; the run stays stored)\n", field(run.ID))
				if err := h.WaitAnswered(ctx, run.ID); err != nil {
					return withCode(exitError, err)
				}
			}
			p := &printer{w: env.stdout, json: jsonOut, hold: env.termHold()}
			res, runErr := h.Resume(ctx, runs.ResumeRequest{RunID: run.ID, Drive: runs.Drive{OnEvent: p.event}})
			return finish(ctx, &runDriver{env: env, host: h, p: p, flags: state.repeatFlags(), where: storeWhere(storeURL, stateDir), json: jsonOut, wait: wait || cfg.Answer == approveWait}, res, runErr)
		},
	}
	cmd.Flags().StringVar(&apiKey, "api-key", "", "API key for a run started with --api-key (never stored); other runs read theirs from the stored --api-key-env or the provider's variable")
	cmd.Flags().BoolVar(&reclaim, "reclaim", false, "no longer needed (a run whose process died is taken over automatically); kept so that scripts go on working")
	_ = cmd.Flags().MarkHidden("reclaim")
	state.add(cmd.Flags(), env)
	cmd.Flags().BoolVar(&wait, "wait", false, "wait until every pending request of the run is decided, and again at every later halt, until the run ends")
	cmd.Flags().DurationVar(&poll, "poll", 250*time.Millisecond, "no longer used: waiting is woken by the store")
	_ = cmd.Flags().MarkHidden("poll")
	cmd.Flags().BoolVar(&jsonOut, "json", false, "print one JSON event per line instead of text")
	lf.add(cmd.Flags())
	return cmd
}
