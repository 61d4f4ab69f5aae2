// Command benchcmp measures tollgate against the bare-HTTP floor, for the
// OpenAI and the Anthropic provider, interleaved in one process, the way the
// side-by-side benchmark harness measures the OpenAI provider alone.
//
//	go run ./internal/cmd/benchcmp -provider both
//
// It starts the benchmark mock (internal/benchwork: the Chat Completions and
// Messages APIs, JSON and SSE; turn 1 two parallel tool calls, get_weather
// {"city":"Paris"} and add {"a":2,"b":2}, turn 2 the answer, or MISMATCH
// when the tool results are wrong) in a child process on loopback, then runs
// every driver of each provider -n times per repetition, each round in a
// random order, -reps times:
//
//	floor              net/http + encoding/json, JSON
//	floor-sse          the same over SSE
//	tollgate           agent.Run
//	tollgate-generate  agent.Run with the model's Stream hidden
//	tollgate-stream    agent.Stream, reading every event
//	tollgate-governed  agent.Run, 5 hooks of each stage and a 5-rule policy
//	model-generate     the provider's Generate alone, no agent
//	model-stream       the provider's Stream alone, no agent
//
// Per driver it reports latency median and p90, allocations and bytes per
// run (runtime.MemStats deltas), process CPU per run (getrusage deltas, all
// threads), ratios to the same-wire floor, and the runtime's targets with
// their median and min–max ratio across the repetitions, as markdown on
// stdout; progress goes to stderr. Every run's final answer is checked: a
// driver with a failed run or a wrong answer, or a mock that saw wrong tool
// results, makes it exit 1 after the report. A missed target does not.
//
// docs/benchmarks.md says how to read it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/tollgate-dev/tollgate/internal/benchwork"
)

// config is what the flags set.
type config struct {
	providers  []string // "openai", "anthropic"
	drivers    []string // of each provider
	n, reps    int
	warmup     int
	seed       uint64
	timeout    time.Duration // of one run
	wireRuns   int           // runs of each driver alone for the wire check
	cpuProfile string        // file, or empty
	memProfile string        // file, or empty
}

// Flag bounds: a run is ~0.2–1 ms, so the largest suite is hours, not days.
const (
	maxN      = 100_000
	maxReps   = 100
	maxWarmup = 10_000
)

func parseFlags(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("benchcmp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	provider := fs.String("provider", "both", "openai, anthropic or both")
	drivers := fs.String("drivers", "all", "comma-separated drivers of each provider ("+strings.Join(driverNames, ", ")+")")
	cfg := config{}
	fs.IntVar(&cfg.n, "n", 300, "runs of each driver per repetition")
	fs.IntVar(&cfg.reps, "reps", 3, "repetitions of the whole interleaved suite")
	fs.IntVar(&cfg.warmup, "warmup", 50, "unmeasured runs of each driver first")
	fs.Uint64Var(&cfg.seed, "seed", 1, "seed of the rounds' random orders")
	fs.DurationVar(&cfg.timeout, "timeout", 30*time.Second, "limit of one run")
	fs.StringVar(&cfg.cpuProfile, "cpuprofile", "", "write a CPU profile of the measured repetitions to this file")
	fs.StringVar(&cfg.memProfile, "memprofile", "", "write an allocation profile (go tool pprof -sample_index=alloc_space) to this file at the end")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	switch *provider {
	case "both":
		cfg.providers = providers
	case "openai", "anthropic":
		cfg.providers = []string{*provider}
	default:
		return cfg, fmt.Errorf("-provider %q: want openai, anthropic or both", *provider)
	}
	if *drivers == "all" || *drivers == "" {
		cfg.drivers = driverNames
	} else {
		for _, n := range strings.Split(*drivers, ",") {
			n = strings.TrimSpace(n)
			if !slices.Contains(driverNames, n) {
				return cfg, fmt.Errorf("-drivers: no driver %q (have %s)", n, strings.Join(driverNames, ", "))
			}
			if !slices.Contains(cfg.drivers, n) {
				cfg.drivers = append(cfg.drivers, n)
			}
		}
	}
	switch {
	case cfg.n < 1 || cfg.n > maxN:
		return cfg, fmt.Errorf("-n %d: want 1 to %d", cfg.n, maxN)
	case cfg.reps < 1 || cfg.reps > maxReps:
		return cfg, fmt.Errorf("-reps %d: want 1 to %d", cfg.reps, maxReps)
	case cfg.warmup < 0 || cfg.warmup > maxWarmup:
		return cfg, fmt.Errorf("-warmup %d: want 0 to %d", cfg.warmup, maxWarmup)
	case cfg.timeout <= 0:
		return cfg, fmt.Errorf("-timeout %s: want a positive duration", cfg.timeout)
	}
	cfg.wireRuns = min(20, cfg.n)
	return cfg, nil
}

func main() {
	benchwork.ServeChild() // first: the mock is this program run again
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchcmp:", err)
		os.Exit(2)
	}
	if err := run(context.Background(), cfg, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "benchcmp:", err)
		os.Exit(1)
	}
}

// errFailed is returned by run, after the report, when a run failed or got
// a wrong answer.
var errFailed = errors.New("some runs failed or got a wrong answer (see above)")

// run starts the mock in a child process, measures, and writes the report
// to out and progress to log. It fails before measuring when a driver cannot
// be made or its first run fails, and after the report when any measured run
// failed or the mock saw wrong tool results.
func run(ctx context.Context, cfg config, out, log io.Writer) error {
	mock, err := benchwork.StartChild()
	if err != nil {
		return err
	}
	defer mock.Close()

	var ds []*driver
	for _, p := range cfg.providers {
		pd, err := newDrivers(p, mock.URL, cfg.drivers)
		if err != nil {
			return err
		}
		ds = append(ds, pd...)
	}
	return measure(ctx, cfg, mock, ds, out, log)
}

// measure is run's work once the mock and the drivers are there.
func measure(ctx context.Context, cfg config, mock *benchwork.Child, ds []*driver, out, log io.Writer) error {
	for _, d := range ds { // a broken driver fails before anything is measured
		if err := call(d, cfg.timeout); err != nil {
			return fmt.Errorf("%s/%s: first run: %w", d.provider, d.name, err)
		}
	}
	for range cfg.warmup {
		for _, d := range ds {
			_ = call(d, cfg.timeout)
		}
	}

	loadBefore := loadavg()
	fmt.Fprintf(log, "benchcmp: %d drivers, n=%d reps=%d warmup=%d, mock pid %d at %s (load %s)\n",
		len(ds), cfg.n, cfg.reps, cfg.warmup, mock.PID, mock.URL, loadBefore)
	stats0, err := benchwork.FetchStats(ctx, mock.URL)
	if err != nil {
		return err
	}
	if cfg.cpuProfile != "" {
		f, err := os.Create(cfg.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
	}
	start := time.Now()
	samples := interleave(ds, cfg, log)
	elapsed := time.Since(start)
	if cfg.cpuProfile != "" {
		pprof.StopCPUProfile()
	}
	stats1, err := benchwork.FetchStats(ctx, mock.URL)
	if err != nil {
		return err
	}
	wires, err := wireCheck(ctx, mock.URL, ds, cfg.wireRuns, cfg.timeout)
	if err != nil {
		return fmt.Errorf("wire check: %w", err)
	}
	if cfg.memProfile != "" {
		if err := writeHeapProfile(cfg.memProfile); err != nil {
			return err
		}
	}

	sums := summarize(ds, samples)
	for i := range sums {
		sums[i].wire = wires[i]
	}
	h := header{
		cfg: cfg, mockPID: mock.PID, loadBefore: loadBefore, loadAfter: loadavg(), elapsed: elapsed,
		mismatches: stats1.Mismatches - stats0.Mismatches,
	}
	writeReport(out, h, sums, evalTargets(ds, samples), evalRatios(ds, samples, []target{control}))

	failed := h.mismatches != 0
	for _, s := range sums {
		failed = failed || s.errors > 0
	}
	if failed {
		return errFailed
	}
	return nil
}

func writeHeapProfile(name string) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	runtime.GC()
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// loadavg is the 1, 5 and 15 minute load averages, or "n/a".
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "n/a"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "n/a"
	}
	return strings.Join(f[:3], " ")
}
