package server

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/model"
	"github.com/tollgate-dev/tollgate/store"
)

// metrics are the server's OpenTelemetry instruments, which GET /metrics
// serves in the Prometheus text format through the OpenTelemetry
// Prometheus exporter (a counter's name gains _total, a histogram's in
// seconds _seconds). Runs by status and pending approvals are observable
// gauges read from the store at a scrape (every tenant, no tenant label);
// the rest count what this process did.
type metrics struct {
	decisionLatency metric.Float64Histogram
	toolCalls       metric.Int64Counter
	modelLatency    metric.Float64Histogram
	// handler serves the metrics (GET /metrics).
	handler http.Handler
}

// meterName is the instrumentation scope of the server's instruments.
const meterName = "github.com/tollgate-dev/tollgate/server"

func newMetrics(s *Server) (*metrics, error) {
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo())
	if err != nil {
		return nil, err
	}
	meter := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp)).Meter(meterName)
	m := &metrics{handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{})}
	if m.decisionLatency, err = meter.Float64Histogram("tollgate_approval_decision", metric.WithUnit("s"),
		metric.WithDescription("Time from an approval request to its decision through this server."),
		metric.WithExplicitBucketBoundaries(1, 5, 15, 30, 60, 300, 900, 3600, 4*3600, 24*3600)); err != nil {
		return nil, err
	}
	if m.toolCalls, err = meter.Int64Counter("tollgate_tool_calls",
		metric.WithDescription("Tool calls decided in runs this server drove, by decision outcome.")); err != nil {
		return nil, err
	}
	turnBuckets := make([]float64, 12) // 0.05 s doubling: 0.05, 0.1, ... 102.4
	for i, b := 0, 0.05; i < len(turnBuckets); i, b = i+1, b*2 {
		turnBuckets[i] = b
	}
	if m.modelLatency, err = meter.Float64Histogram("tollgate_model_turn", metric.WithUnit("s"),
		metric.WithDescription("Latency of model turns in runs this server drove."),
		metric.WithExplicitBucketBoundaries(turnBuckets...)); err != nil {
		return nil, err
	}
	counts := &storeCounts{s: s}
	runsGauge, err := meter.Int64ObservableGauge("tollgate_runs", metric.WithDescription("Stored runs by status."))
	if err != nil {
		return nil, err
	}
	pendingGauge, err := meter.Int64ObservableGauge("tollgate_approvals_pending", metric.WithDescription("Approvals waiting for a decision."))
	if err != nil {
		return nil, err
	}
	if _, err := meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		byStatus, pending := counts.get()
		for _, st := range runStatuses {
			o.ObserveInt64(runsGauge, int64(byStatus[st]), metric.WithAttributes(attribute.String("status", string(st))))
		}
		o.ObserveInt64(pendingGauge, int64(pending))
		return nil
	}, runsGauge, pendingGauge); err != nil {
		return nil, err
	}
	return m, nil
}

// onEvent counts the agent's decisions.
func (m *metrics) onEvent(ev agent.Event) {
	if ev.Kind == agent.EventDecision && ev.Decision != nil {
		m.toolCalls.Add(context.Background(), 1, metric.WithAttributes(attribute.String("decision", string(ev.Decision.Outcome))))
	}
}

// decided records how long an approval request waited for its decision.
func (m *metrics) decided(wait time.Duration) {
	m.decisionLatency.Record(context.Background(), wait.Seconds())
}

// middleware times model turns.
func (m *metrics) middleware() agent.Middleware {
	return agent.Middleware{Turn: func(next agent.TurnHandler) agent.TurnHandler {
		return func(ctx context.Context, ti *agent.TurnInfo) (*model.Response, error) {
			start := time.Now()
			resp, err := next(ctx, ti)
			m.modelLatency.Record(ctx, time.Since(start).Seconds())
			return resp, err
		}
	}}
}

// storeCountsTTL is how long the store's counts serve scrapes before they
// are read again: /metrics needs no token, and each reading walks every
// run and pending approval, so scrapes must not be able to drive store load.
const storeCountsTTL = 10 * time.Second

// storeCounts reads runs by status and pending approvals, at most once
// per storeCountsTTL (concurrent scrapes share one reading).
type storeCounts struct {
	s *Server

	mu      sync.Mutex
	readAt  time.Time
	runs    map[store.RunStatus]int
	pending int
}

var runStatuses = []store.RunStatus{store.RunRunning, store.RunPending, store.RunResuming, store.RunDone, store.RunIncomplete, store.RunError, store.RunCancelled}

// get returns the counts, read again when they are older than
// storeCountsTTL.
func (c *storeCounts) get() (map[store.RunStatus]int, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if now := c.s.now(); c.runs == nil || now.Sub(c.readAt) >= storeCountsTTL {
		c.read()
		c.readAt = now
	}
	return c.runs, c.pending
}

// read counts the store's runs by status and its pending approvals.
func (c *storeCounts) read() {
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
