package server

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/store"
)

// metrics are the server's Prometheus metrics. Runs by status and pending
// approvals are read from the store at each scrape (every tenant, no tenant
// label); the rest count what this process did.
type metrics struct {
	decisionLatency prometheus.Histogram
	toolCalls       *prometheus.CounterVec
	modelLatency    prometheus.Histogram
}

func newMetrics(reg *prometheus.Registry, s *Server) (*metrics, error) {
	m := &metrics{
		decisionLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "tollgate_approval_decision_seconds", Help: "Time from an approval request to its decision through this server.",
			Buckets: []float64{1, 5, 15, 30, 60, 300, 900, 3600, 4 * 3600, 24 * 3600},
		}),
		toolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tollgate_tool_calls_total", Help: "Tool calls decided in runs this server drove, by decision outcome.",
		}, []string{"decision"}),
		modelLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "tollgate_model_turn_seconds", Help: "Latency of model turns in runs this server drove.",
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 12),
		}),
	}
	for _, c := range []prometheus.Collector{m.decisionLatency, m.toolCalls, m.modelLatency, &storeCollector{s: s}} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// onEvent counts the agent's decisions.
func (m *metrics) onEvent(ev agent.Event) {
	if ev.Kind == agent.EventDecision && ev.Decision != nil {
		m.toolCalls.WithLabelValues(string(ev.Decision.Outcome)).Inc()
	}
}

// middleware times model turns.
func (m *metrics) middleware() agent.Middleware {
	return agent.Middleware{Turn: func(next agent.TurnHandler) agent.TurnHandler {
		return func(ctx context.Context, ti *agent.TurnInfo) (*model.Response, error) {
			start := time.Now()
			resp, err := next(ctx, ti)
			m.modelLatency.Observe(time.Since(start).Seconds())
			return resp, err
		}
	}}
}

var (
	runsDesc    = prometheus.NewDesc("tollgate_runs", "Stored runs by status.", []string{"status"}, nil)
	pendingDesc = prometheus.NewDesc("tollgate_approvals_pending", "Approvals waiting for a decision.", nil, nil)
)

// storeCountsTTL is how long the store's counts serve scrapes before they
// are read again: /metrics needs no token, and each reading walks every
// run and pending approval, so scrapes must not be able to drive store load.
const storeCountsTTL = 10 * time.Second

// storeCollector reads runs by status and pending approvals, at most once
// per storeCountsTTL (concurrent scrapes share one reading).
type storeCollector struct {
	s *Server

	mu      sync.Mutex
	readAt  time.Time
	runs    map[store.RunStatus]int
	pending int
}

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- runsDesc
	ch <- pendingDesc
}

var runStatuses = []store.RunStatus{store.RunRunning, store.RunPending, store.RunResuming, store.RunDone, store.RunIncomplete, store.RunError, store.RunCancelled}

func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if now := c.s.now(); c.runs == nil || now.Sub(c.readAt) >= storeCountsTTL {
		c.read()
		c.readAt = now
	}
	for _, st := range runStatuses {
		ch <- prometheus.MustNewConstMetric(runsDesc, prometheus.GaugeValue, float64(c.runs[st]), string(st))
	}
	ch <- prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, float64(c.pending))
}

// read counts the store's runs by status and its pending approvals.
func (c *storeCollector) read() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c.runs = map[store.RunStatus]int{}
	for _, st := range runStatuses {
		for _, err := range store.AllRuns(ctx, c.s.store, store.RunFilter{AllTenants: true, Status: st, Limit: store.MaxLimit}) {
			if err != nil {
				break
			}
			c.runs[st]++
		}
	}
	c.pending = 0
	for _, err := range store.AllApprovals(ctx, c.s.store, store.ApprovalFilter{AllTenants: true, Status: store.StatusPending, Limit: store.MaxLimit}) {
		if err != nil {
			break
		}
		c.pending++
	}
}

func promhttpHandler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})
}
