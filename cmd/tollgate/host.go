package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/spf13/pflag"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/internal/layerstore"
	"github.com/tollgate-dev/tollgate/internal/nofollow"
	"github.com/tollgate-dev/tollgate/internal/realpath"
	"github.com/tollgate-dev/tollgate/internal/runcore"
	"github.com/tollgate-dev/tollgate/internal/storeimpl"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/store"
	"github.com/tollgate-dev/tollgate/store/postgres"
	"github.com/tollgate-dev/tollgate/store/sqlite"
	"github.com/tollgate-dev/tollgate/tool"
)

// Environment variables of the state directory and of the lease.
const (
	// envStateDir overrides the default state directory.
	envStateDir = "TOLLGATE_STATE_DIR"
	// envStoreURL selects a PostgreSQL store instead of the SQLite file of
	// the state directory (see stateFlags.storeURL).
	envStoreURL = "TOLLGATE_STORE_URL"
	// envLeaseTTL sets how long a run's lease lasts without a heartbeat (a
	// Go duration, default runcore.DefaultLeaseTTL): a run whose process died is
	// taken over by the next 'tollgate resume' once it expired.
	envLeaseTTL = "TOLLGATE_LEASE_TTL"
)

// maxPromptBytes bounds a prompt read from stdin or --prompt-file (4 MiB).
const maxPromptBytes = 4 << 20

// stateFlags is the --state-dir and --store flags of the commands that use
// the store.
type stateFlags struct {
	dir, store string
	// key is the file of the store's decision key, "" for decision.key in
	// the state directory.
	key string
	env *cliEnv // the command's environment and working directory
}

func (s *stateFlags) add(f *pflag.FlagSet, env *cliEnv) {
	s.env = env
	f.StringVar(&s.dir, "state-dir", "", "directory of the store of runs and approvals (default: $"+envStateDir+", else $XDG_STATE_HOME/tollgate, else ~/.local/state/tollgate)")
	f.StringVar(&s.key, "store-key-file", "", "file of the key that seals the store's decisions, mode 0600, made when missing (default: "+decisionKeyFile+" in the state directory); every process of one store needs the same")
	f.StringVar(&s.store, "store", "", "PostgreSQL URL of a store shared by many processes, postgres://USER@HOST:PORT/DB (default: $"+envStoreURL+"; else the SQLite file of the state directory). No password here: a command line is visible to every process; use $"+envStoreURL+", $PGPASSWORD or ~/.pgpass")
}

// storeURL returns the PostgreSQL URL of the store, from --store or
// $TOLLGATE_STORE_URL, or "" for the SQLite store of the state directory.
// Only postgres:// and postgresql:// URLs are accepted, and a password only
// from the variable (a command line is visible to every process of the
// machine, the agent's commands included; the variable is not passed to
// them).
func (s *stateFlags) storeURL() (string, error) {
	raw, from := s.store, "--store"
	if raw == "" {
		raw, from = s.env.env(envStoreURL), "$"+envStoreURL
	}
	if raw == "" {
		return "", nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		if from == "--store" {
			return "", usageErr("%s: want a PostgreSQL URL, postgres://USER@HOST:PORT/DATABASE", from)
		}
		return "", configErr("%s: want a PostgreSQL URL, postgres://USER@HOST:PORT/DATABASE", from)
	}
	if _, has := u.User.Password(); has && from == "--store" {
		return "", usageErr("--store: the URL holds a password, which every process could read on the command line; give it in $%s, $PGPASSWORD or ~/.pgpass", envStoreURL)
	}
	return raw, nil
}

// storeShown is the --store flag to repeat in the commands printed for the
// user (never with a password: storeURL refuses one there), or "".
func (s *stateFlags) storeShown() string {
	if s.store == "" {
		return ""
	}
	return "--store " + s.store
}

// repeatFlags is the store flags to repeat in a printed command: " --state-dir
// D --store U" with whichever were given, or "".
func (s *stateFlags) repeatFlags() string {
	out := ""
	if s.dir != "" {
		out += " --state-dir " + s.dir
	}
	if sh := s.storeShown(); sh != "" {
		out += " " + sh
	}
	return out
}

// storeWhere names the store used for messages: the PostgreSQL store of
// storeURL, else the state directory.
func storeWhere(storeURL, stateDir string) string {
	if storeURL != "" {
		return describeStore(storeURL)
	}
	return stateDir
}

// describeStore names the PostgreSQL store of url for messages: host, port
// and database, never the user or password.
func describeStore(raw string) string {
	cfg, err := pgconn.ParseConfig(raw)
	if err != nil {
		return "PostgreSQL"
	}
	return fmt.Sprintf("PostgreSQL %s:%d/%s", cfg.Host, cfg.Port, cfg.Database)
}

// defaultStateDir is the user's state directory for tollgate:
// $TOLLGATE_STATE_DIR, else $XDG_STATE_HOME/tollgate (XDG Base Directory
// Specification), else ~/.local/state/tollgate.
func defaultStateDir(env *cliEnv) (string, error) {
	if d := env.env(envStateDir); d != "" {
		return d, nil
	}
	if d := env.env("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "tollgate"), nil
	}
	home := env.env("HOME")
	if home == "" {
		return "", withCode(exitError, fmt.Errorf("no state directory: set $%s or --state-dir ($HOME is not defined)", envStateDir))
	}
	return filepath.Join(home, ".local", "state", "tollgate"), nil
}

// resolve returns the state directory, absolute. With a workspace, a state
// directory inside it is refused: the agent's own tools could rewrite the
// store of pending runs and approvals.
func (s *stateFlags) resolve(workspace string) (string, error) {
	dir := s.dir
	if dir == "" {
		d, err := defaultStateDir(s.env)
		if err != nil {
			return "", err
		}
		dir = d
	}
	abs, err := s.env.abs(dir)
	if err != nil {
		return "", withCode(exitError, err)
	}
	if workspace != "" && insideWorkspace(abs, workspace) {
		return "", usageErr("state directory %s is inside the workspace %s, where the agent's tools could change it; choose another with --state-dir or $%s", abs, workspace, envStateDir)
	}
	return abs, nil
}

// insideWorkspace reports whether the path p is the workspace ws or lies
// under it, by name (a path through a link that a tool could have planted
// in the workspace included) or once links are resolved.
func insideWorkspace(p, ws string) bool {
	return nofollow.Within(ws, p) || within(realpath.Resolve(p), realpath.Resolve(ws))
}

// within reports whether p is dir or under it.
func within(p, dir string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// keyFile returns the file of the store's decision key: --store-key-file,
// else decision.key in stateDir; absolute. With a workspace, a file inside
// it is refused: the agent's tools could read the key, or replace it.
func (s *stateFlags) keyFile(stateDir, workspace string) (string, error) {
	if s.key == "" {
		return filepath.Join(stateDir, decisionKeyFile), nil
	}
	abs, err := s.env.abs(s.key)
	if err != nil {
		return "", withCode(exitError, err)
	}
	if workspace != "" && insideWorkspace(abs, workspace) {
		return "", configErr("--store-key-file %s is inside the workspace %s, where the agent's tools could read it; keep it outside", s.key, workspace)
	}
	return abs, nil
}

// decisionKey loads (making it when missing) the store's decision key from
// the file keyFile; an unreadable or unsafe file is a configuration error.
func decisionKey(keyFile string) (*store.Options, error) {
	key, err := storeimpl.LoadDecisionKey(keyFile)
	if err != nil {
		return nil, configErr("%v", err)
	}
	return &store.Options{DecisionKey: key}, nil
}

// open opens the store: the PostgreSQL one of storeURL, else the existing
// SQLite store of the state directory (never creating one).
func (s *stateFlags) open(ctx context.Context) (store.Store, error) {
	u, err := s.storeURL()
	if err != nil {
		return nil, err
	}
	dir, err := s.resolve("")
	if err != nil {
		return nil, err
	}
	keyFile, err := s.keyFile(dir, "")
	if err != nil {
		return nil, err
	}
	if u != "" {
		return openPostgres(ctx, u, keyFile)
	}
	return openExistingStore(ctx, dir, keyFile)
}

// openStoreAt opens the store of a command, as every command does: the
// PostgreSQL store at storeURL when it is set, else the SQLite store of
// stateDir, made with its directory (mode 0700) when create is set, else
// only one that exists already (openExistingStore). A state directory that
// cannot be made or opened is a configuration error naming it; a store
// that does not answer is an error (exit 1).
func openStoreAt(ctx context.Context, storeURL, stateDir, keyFile string, create bool) (store.Store, error) {
	switch {
	case storeURL != "":
		return openPostgres(ctx, storeURL, keyFile)
	case !create:
		s, err := openExistingStore(ctx, stateDir, keyFile)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return nil, configErr("state directory %s: %v", stateDir, err)
	}
	opts, err := decisionKey(keyFile)
	if err != nil {
		return nil, err
	}
	s, err := sqlite.Open(ctx, filepath.Join(stateDir, storeFile), opts)
	if err != nil {
		return nil, configErr("state directory %s: %v", stateDir, err)
	}
	return s, nil
}

// openPostgres opens the PostgreSQL store at url (migrating its schema),
// with the decision key of keyFile.
func openPostgres(ctx context.Context, url, keyFile string) (store.Store, error) {
	opts, err := decisionKey(keyFile)
	if err != nil {
		return nil, err
	}
	s, err := postgres.Open(ctx, url, opts)
	if err != nil {
		return nil, withCode(exitError, err)
	}
	return s, nil
}

// openExistingStore opens the store in dir for a command that only reads or
// answers: it never creates one, and a missing one is an error naming dir.
func openExistingStore(ctx context.Context, dir, keyFile string) (store.Store, error) {
	db := filepath.Join(dir, storeFile)
	if _, err := os.Stat(db); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, withCode(exitError, fmt.Errorf("no store in %s (no run was stored there; see --state-dir and $%s)", dir, envStateDir))
		}
		return nil, withCode(exitError, err)
	}
	return openStore(ctx, dir, keyFile)
}

// leaseTTL reads $TOLLGATE_LEASE_TTL of env (0: the default).
func leaseTTL(env *cliEnv) (time.Duration, error) {
	v := env.env(envLeaseTTL)
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, configErr("$%s=%q: want a positive duration such as 30s", envLeaseTTL, v)
	}
	return d, nil
}

// openHost opens the store ([openStoreAt]) and a runs.Host over it that
// builds agents with b.
func openHost(ctx context.Context, env *cliEnv, storeURL, stateDir, keyFile string, b runs.Builder, create bool) (*runs.Host, store.Store, func(), error) {
	ttl, err := leaseTTL(env)
	if err != nil {
		return nil, nil, nil, err
	}
	s, err := openStoreAt(ctx, storeURL, stateDir, keyFile, create)
	if err != nil {
		return nil, nil, nil, err
	}
	if ls, ok := s.(layerstore.Layers); ok {
		b = runcore.WithLayer(b, ls) // the store's rule layer decides too
	}
	h, err := runs.New(s, b, &runs.Options{LeaseTTL: ttl})
	if err != nil {
		_ = s.Close()
		return nil, nil, nil, withCode(exitError, err)
	}
	return h, s, func() { _ = s.Close() }, nil
}

// readPrompt returns the prompt: the argument, stdin for "-", or the file of
// --prompt-file. An empty prompt is a usage error.
func readPrompt(env *cliEnv, args []string, file string) (string, error) {
	var prompt string
	switch {
	case file != "" && len(args) > 0:
		return "", usageErr("run: give the prompt as an argument or with --prompt-file, not both")
	case file != "":
		path, err := env.abs(file)
		if err != nil {
			return "", usageErr("run: --prompt-file: %v", err)
		}
		f, err := os.Open(path)
		if err != nil {
			return "", usageErr("run: --prompt-file: %v", err)
		}
		defer f.Close()
		b, err := readLimited(f)
		if err != nil {
			return "", usageErr("run: --prompt-file %s: %v", file, err)
		}
		prompt = b
	case len(args) == 1 && args[0] == "-":
		b, err := readLimited(env.stdin)
		if err != nil {
			return "", usageErr("run: reading the prompt from stdin: %v", err)
		}
		prompt = b
	case len(args) == 1:
		prompt = args[0]
	default:
		return "", usageErr("run: no prompt: give it as an argument, - for stdin, or --prompt-file")
	}
	if strings.TrimSpace(prompt) == "" {
		return "", usageErr("run: the prompt is empty")
	}
	return prompt, nil
}

func readLimited(r io.Reader) (string, error) {
	if r == nil {
		return "", nil
	}
	b, err := io.ReadAll(io.LimitReader(r, maxPromptBytes+1))
	if err != nil {
		return "", err
	}
	if len(b) > maxPromptBytes {
		return "", fmt.Errorf("longer than %d bytes", maxPromptBytes)
	}
	return string(b), nil
}

// runDriver maps the end of a run driven by a runs.Host to output and an
// exit code, and goes on waiting with --approve wait.
type runDriver struct {
	env   *cliEnv
	host  *runs.Host
	p     *printer
	flags string // the store flags as given, for the printed commands (stateFlags.repeatFlags)
	where string // the store used, for messages (storeWhere)
	json  bool
	wait  bool
}

// finish prints how the run ended and returns the error carrying its exit
// code. With wait, a halted run is waited on (Host.WaitAnswered) and resumed,
// again each time it halts anew; if this process dies while it waits, the
// stored run is intact and 'tollgate resume' continues it.
func finish(ctx context.Context, d *runDriver, res *agent.Result, runErr error) error {
	for {
		d.p.endLine()
		// Say why the context ended (a signal) rather than only that it did.
		if cause := context.Cause(ctx); runErr != nil && cause != nil && cause != ctx.Err() && errors.Is(runErr, ctx.Err()) && !strings.Contains(runErr.Error(), cause.Error()) {
			runErr = fmt.Errorf("%w (%v)", runErr, cause)
		}
		if runErr != nil {
			if res != nil && d.json {
				d.p.event(agent.Event{Kind: agent.EventDone, Result: res})
			}
			return resumeError(runErr)
		}
		if res == nil {
			return withCode(exitError, errors.New("run: no result"))
		}
		switch res.Status {
		case agent.StatusIncomplete:
			return withCode(exitIncomplete, nil)
		case agent.StatusPending:
		default:
			return nil
		}
		d.printHalted(res)
		if !d.wait {
			return withCode(exitPending, nil)
		}
		fmt.Fprintf(d.env.stderr, "tollgate: waiting for answers to run %s (Ctrl-C stops waiting; the run stays stored)\n", res.RunID)
		if err := d.host.WaitAnswered(ctx, res.RunID); err != nil {
			return withCode(exitError, err)
		}
		res, runErr = d.host.Resume(ctx, runs.ResumeRequest{RunID: res.RunID, Drive: runs.Drive{OnEvent: d.p.event}})
	}
}

// printHalted says how to answer the requests of a halted run.
func (d *runDriver) printHalted(res *agent.Result) {
	if d.json {
		return
	}
	sd := d.flags
	w := d.env.stdout
	fmt.Fprintf(w, "stored run %s in %s; answer with:\n", res.RunID, d.where)
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

// resumeError maps the host's errors on resume to exit codes.
func resumeError(err error) error {
	var ce *exitCodeError
	switch {
	case errors.As(err, &ce):
		return ce // the builder's usage errors keep their code
	case errors.Is(err, runs.ErrNothingDecided):
		return withCode(exitPending, err)
	case errors.Is(err, store.ErrLeased), errors.Is(err, store.ErrConflict):
		return withCode(exitError, fmt.Errorf("%w: another process is driving this run; when it stops, the run can be resumed", err))
	}
	return withCode(exitError, err)
}
