package main

import (
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strings"
	"time"
	"unicode"
)

// header is what the report says about the run itself.
type header struct {
	cfg                   config
	mockPID               int
	loadBefore, loadAfter string
	elapsed               time.Duration
	mismatches            int64 // wrong tool results the mock saw while measuring
}

// ratio renders the median of xs and, with more than one, its min–max.
// A ratio that is not a number (no CPU time measured) is "–".
func ratio(xs []float64) string {
	if len(xs) == 0 || slices.ContainsFunc(xs, func(x float64) bool { return math.IsNaN(x) || math.IsInf(x, 0) }) {
		return "–"
	}
	s := fmt.Sprintf("%.2f", median(xs))
	if len(xs) > 1 {
		s += fmt.Sprintf(" (%.2f–%.2f)", slices.Min(xs), slices.Max(xs))
	}
	return s
}

// wireOf names what the mock saw of a driver alone: "json", "sse" or
// "mixed".
func wireOf(w wireStats) string {
	switch {
	case w.requests == 0:
		return "–"
	case w.streamed == 0:
		return "json"
	case w.streamed == w.requests:
		return "sse"
	}
	return "mixed"
}

// clean makes s safe to print: control characters become '?' and it is cut
// at 300 bytes.
func clean(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return '?'
		}
		return r
	}, s)
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// writeReport writes the markdown report: tr are the targets' ratios,
// noise the control's (see control), shown under them.
func writeReport(w io.Writer, h header, sums []summary, tr, noise []targetResult) {
	cfg := h.cfg
	fmt.Fprintf(w, "# tollgate against the bare-HTTP floor\n\n")
	fmt.Fprintf(w, "%s %s/%s, GOMAXPROCS %d (%d CPUs). Each driver %d times per repetition, %d repetitions, "+
		"each round in a random order (seed %d), after %d warm-up runs; the mock in a child process (pid %d) on loopback. "+
		"Load average %s before, %s after; measured in %.1f s.\n\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0), runtime.NumCPU(),
		cfg.n, cfg.reps, cfg.seed, cfg.warmup, h.mockPID, h.loadBefore, h.loadAfter, h.elapsed.Seconds())
	fmt.Fprintf(w, "Figures are medians over the repetitions. Ratios are to the same provider's floor of the same wire "+
		"(floor for JSON, floor-sse for SSE), per repetition, given as median (min–max). Wall time is a run's median "+
		"latency; CPU is the process's (all threads, getrusage) over the driver's runs; allocations and bytes are "+
		"runtime.MemStats deltas. Requests and new connections per run are from the mock, %d runs of each driver alone.\n\n", cfg.wireRuns)
	if !cpuMeasured {
		fmt.Fprintf(w, "CPU time is not measured on %s.\n\n", runtime.GOOS)
	}
	for _, p := range cfg.providers {
		fmt.Fprintf(w, "## %s\n\n", p)
		fmt.Fprintf(w, "| driver | wire | median ms | p90 ms | CPU ms/run | allocs/run | KiB/run | wall × floor | CPU × floor | allocs × floor | requests/run | new conns/run | failed runs |\n")
		fmt.Fprintf(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
		for _, s := range sums {
			if s.d.provider != p {
				continue
			}
			fmt.Fprintf(w, "| %s | %s | %.3f | %.3f | %.3f | %.0f | %.1f | %s | %s | %s | %.2f | %.2f | %d |\n",
				s.d.name, wireOf(s.wire), median(s.med), median(s.p90), median(s.cpu), median(s.allocs), median(s.kib),
				ratio(s.xWall), ratio(s.xCPU), ratio(s.xAllocs), s.wire.requests, s.wire.conns, s.errors)
		}
		fmt.Fprintln(w)
	}
	if len(tr) > 0 {
		fmt.Fprintf(w, "## Targets\n\n")
		fmt.Fprintf(w, "Met when the median ratio over the repetitions is within the limit. The last rows are no target: "+
			"tollgate-generate runs the same code as tollgate, so their ratio shows how far this run's noise moves a ratio.\n\n")
		fmt.Fprintf(w, "| provider | target | ratio | limit | met |\n|---|---|---|---|---|\n")
		for _, t := range tr {
			met := "no"
			if t.met() {
				met = "yes"
			}
			fmt.Fprintf(w, "| %s | %s | %s | ≤ %.2f | %s |\n", t.provider, t.label, ratio(t.ratios), t.limit, met)
		}
		for _, c := range noise {
			fmt.Fprintf(w, "| %s | %s | %s | – | – |\n", c.provider, c.label, ratio(c.ratios))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "## Drivers\n\n")
	seen := map[string]bool{}
	for _, s := range sums {
		if !seen[s.d.name] {
			seen[s.d.name] = true
			fmt.Fprintf(w, "- `%s`: %s\n", s.d.name, s.d.desc)
		}
	}
	fmt.Fprintln(w)
	var fails []string
	for _, s := range sums {
		if s.errors > 0 {
			fails = append(fails, fmt.Sprintf("- %s/%s: %d of %d runs failed; the first: %s",
				s.d.provider, s.d.name, s.errors, cfg.n*cfg.reps, clean(s.first.Error())))
		}
	}
	if h.mismatches != 0 {
		fails = append(fails, fmt.Sprintf("- the mock answered MISMATCH %d times: tool results did not arrive whole", h.mismatches))
	}
	if len(fails) > 0 {
		fmt.Fprintf(w, "## Failures\n\n%s\n\n", strings.Join(fails, "\n"))
	}
}
