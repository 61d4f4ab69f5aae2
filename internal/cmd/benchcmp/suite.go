package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"runtime/pprof"
	"slices"
	"time"

	"github.com/tollgate-dev/tollgate/internal/benchwork"
)

// sample is one driver's measurements in one repetition.
type sample struct {
	lat     []float64 // per run, in ms
	cpu     float64   // process CPU time over the driver's runs, in ms
	mallocs uint64    // heap allocations over the driver's runs
	bytes   uint64    // heap bytes allocated over the driver's runs
	errors  int
	first   error // the first failed run's error
}

func (s *sample) runs() float64 { return float64(len(s.lat)) }

// call does one checked run of d with its own timeout.
func call(d *driver, timeout time.Duration) error {
	return callCtx(context.Background(), d, timeout)
}

func callCtx(parent context.Context, d *driver, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	text, err := d.run(ctx)
	if err != nil {
		return err
	}
	if text != benchwork.Answer {
		return fmt.Errorf("final answer %q, want %q", text, benchwork.Answer)
	}
	return nil
}

// interleave runs every driver n times per repetition, round by round, each
// round in a fresh random order (so that no driver always follows the same
// one, whose garbage it would collect), and reads runtime.MemStats and the
// process's CPU time (getrusage) around every run. Wall time and CPU time
// exclude the MemStats reads. It returns [rep][driver] samples.
func interleave(ds []*driver, cfg config, log io.Writer) [][]sample {
	out := make([][]sample, cfg.reps)
	rng := rand.New(rand.NewPCG(cfg.seed, cfg.seed^0x9e3779b97f4a7c15))
	var m0, m1 runtime.MemStats
	// With a CPU profile, each run's samples carry the label
	// driver=PROVIDER/NAME (go tool pprof -tagfocus), and so do the
	// goroutines it starts; those it hands work to (the agent's workers,
	// a connection's reader) keep the label of the run that started them.
	var labels []pprof.LabelSet
	if cfg.cpuProfile != "" {
		for _, d := range ds {
			labels = append(labels, pprof.Labels("driver", d.provider+"/"+d.name))
		}
	}
	for r := range cfg.reps {
		out[r] = make([]sample, len(ds))
		for i := range ds {
			out[r][i].lat = make([]float64, 0, cfg.n)
		}
		start := time.Now()
		for range cfg.n {
			for _, i := range rng.Perm(len(ds)) {
				runtime.ReadMemStats(&m0)
				c0 := processCPU()
				t0 := time.Now()
				var err error
				if labels != nil {
					pprof.Do(context.Background(), labels[i], func(ctx context.Context) { err = callCtx(ctx, ds[i], cfg.timeout) })
				} else {
					err = call(ds[i], cfg.timeout)
				}
				dt := time.Since(t0)
				c1 := processCPU()
				runtime.ReadMemStats(&m1)
				s := &out[r][i]
				s.lat = append(s.lat, float64(dt.Nanoseconds())/1e6)
				s.cpu += float64((c1 - c0).Nanoseconds()) / 1e6
				s.mallocs += m1.Mallocs - m0.Mallocs
				s.bytes += m1.TotalAlloc - m0.TotalAlloc
				if err != nil {
					if s.errors == 0 {
						s.first = err
						fmt.Fprintf(log, "  %s/%s: error: %v\n", ds[i].provider, ds[i].name, err)
					}
					s.errors++
				}
			}
		}
		fmt.Fprintf(log, "  rep %d/%d: %d runs x %d drivers in %.1fs (load %s)\n", r+1, cfg.reps, cfg.n, len(ds), time.Since(start).Seconds(), loadavg())
	}
	return out
}

// wireStats are what the mock saw of one driver's runs, alone.
type wireStats struct {
	requests, streamed, conns float64 // per run
}

// wireCheck runs each driver k times alone and reads the mock's counters
// around them: model requests, streamed requests and new connections per run.
func wireCheck(ctx context.Context, base string, ds []*driver, k int, timeout time.Duration) ([]wireStats, error) {
	out := make([]wireStats, len(ds))
	for i, d := range ds {
		s0, err := benchwork.FetchStats(ctx, base)
		if err != nil {
			return nil, err
		}
		for range k {
			if err := call(d, timeout); err != nil {
				return nil, fmt.Errorf("%s/%s: %w", d.provider, d.name, err)
			}
		}
		s1, err := benchwork.FetchStats(ctx, base)
		if err != nil {
			return nil, err
		}
		out[i] = wireStats{
			requests: float64(s1.Requests-s0.Requests) / float64(k),
			streamed: float64(s1.Streamed-s0.Streamed) / float64(k),
			conns:    float64(s1.Conns-s0.Conns) / float64(k),
		}
	}
	return out, nil
}

// summary is one driver over the repetitions: one value per repetition.
type summary struct {
	d                    *driver
	med, p90             []float64 // ms
	cpu, allocs, kib     []float64 // per run
	errors               int
	first                error
	wire                 wireStats
	xWall, xCPU, xAllocs []float64 // to the same-wire floor
	hasFloor             bool
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// pct is the p-th percentile of xs (nearest rank).
func pct(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	k := int(p/100*float64(len(s))+0.999999) - 1
	return s[max(0, min(k, len(s)-1))]
}

// summarize turns [rep][driver] samples into one summary per driver, with
// ratios to the same provider's same-wire floor when it ran.
func summarize(ds []*driver, samples [][]sample) []summary {
	idx := map[[2]string]int{}
	for i, d := range ds {
		idx[[2]string{d.provider, d.name}] = i
	}
	out := make([]summary, len(ds))
	for i, d := range ds {
		s := summary{d: d}
		f, hasFloor := idx[[2]string{d.provider, sameWireFloor(d.wire)}]
		s.hasFloor = hasFloor && f != i
		for _, rep := range samples {
			x := &rep[i]
			s.med = append(s.med, median(x.lat))
			s.p90 = append(s.p90, pct(x.lat, 90))
			s.cpu = append(s.cpu, x.cpu/x.runs())
			s.allocs = append(s.allocs, float64(x.mallocs)/x.runs())
			s.kib = append(s.kib, float64(x.bytes)/x.runs()/1024)
			s.errors += x.errors
			if s.first == nil {
				s.first = x.first
			}
			if s.hasFloor {
				y := &rep[f]
				s.xWall = append(s.xWall, median(x.lat)/median(y.lat))
				s.xCPU = append(s.xCPU, (x.cpu/x.runs())/(y.cpu/y.runs()))
				s.xAllocs = append(s.xAllocs, float64(x.mallocs)/float64(y.mallocs))
			}
		}
		out[i] = s
	}
	return out
}

// target is one of the performance targets: a driver's ratio to a reference
// driver of the same provider, in wall time, CPU or allocations.
type target struct {
	driver, ref, what string
	limit             float64
	label             string
}

// targets are the runtime's performance targets for each provider.
var targets = []target{
	{"tollgate", "floor", "wall", 1.3, "agent.Run, wall time × floor"},
	{"tollgate", "floor", "cpu", 1.6, "agent.Run, CPU × floor"},
	{"tollgate", "floor", "allocs", 1.6, "agent.Run, allocations × floor"},
	{"tollgate-stream", "floor-sse", "wall", 1.3, "agent.Stream, wall time × SSE floor"},
	{"tollgate-governed", "tollgate", "wall", 1.1, "governed agent.Run, wall time × ungoverned"},
}

// targetResult is a target's ratio in each repetition.
type targetResult struct {
	target
	provider string
	ratios   []float64
}

// met says whether the median ratio over the repetitions is within the
// limit.
func (t targetResult) met() bool { return median(t.ratios) <= t.limit }

// control is not a target: tollgate-generate runs the same code as
// tollgate (agent.Run calls Generate either way), so its wall ratio to it
// shows how far the run's noise moves a ratio.
var control = target{"tollgate-generate", "tollgate", "wall", 0, "tollgate-generate, wall time × tollgate (the same code: noise)"}

func evalTargets(ds []*driver, samples [][]sample) []targetResult {
	return evalRatios(ds, samples, targets)
}

// evalRatios computes ts for each provider whose two drivers both ran.
func evalRatios(ds []*driver, samples [][]sample, ts []target) []targetResult {
	idx := map[[2]string]int{}
	for i, d := range ds {
		idx[[2]string{d.provider, d.name}] = i
	}
	var out []targetResult
	for _, p := range providers {
		for _, t := range ts {
			i, ok1 := idx[[2]string{p, t.driver}]
			j, ok2 := idx[[2]string{p, t.ref}]
			if !ok1 || !ok2 {
				continue
			}
			r := targetResult{target: t, provider: p}
			for _, rep := range samples {
				x, y := &rep[i], &rep[j]
				var v float64
				switch t.what {
				case "wall":
					v = median(x.lat) / median(y.lat)
				case "cpu":
					v = (x.cpu / x.runs()) / (y.cpu / y.runs())
				case "allocs":
					v = float64(x.mallocs) / x.runs() / (float64(y.mallocs) / y.runs())
				}
				r.ratios = append(r.ratios, v)
			}
			out = append(out, r)
		}
	}
	return out
}
