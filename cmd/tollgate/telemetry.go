package main

import (
	"context"
	"log/slog"
	"os"
	"strconv"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"

	"github.com/tollgate-dev/tollgate/agent"
	"github.com/tollgate-dev/tollgate/runs"
	"github.com/tollgate-dev/tollgate/telemetry"
)

// telemetryFlushTimeout bounds the export of what is left when a run ends.
const telemetryFlushTimeout = 5 * time.Second

// telemetryRunExtension exports the run's spans and metrics over OTLP/HTTP
// when the standard variables ask for it: traces when
// OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set,
// metrics when OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_METRICS_ENDPOINT
// is; nothing when none is, or when OTEL_SDK_DISABLED is true. The exporters
// read the other OTEL_EXPORTER_OTLP_* variables (headers, timeout, TLS)
// themselves; OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES name the source
// (default service.name "tollgate").
func telemetryRunExtension() runExtension {
	return runExtension{setup: func(ctx context.Context, cb *cliBuilder, cfg runs.RunConfig, built *runs.Built) error {
		opts, closers, err := otlpTelemetry(ctx, cb.logger().Info, "run")
		if err != nil || opts == nil {
			return err
		}
		if p := cfg.Model.Provider; p == "openai" || p == "anthropic" {
			opts.ProviderName = p
		}
		for _, c := range closers {
			addCloser(built, c)
		}
		// Outermost, so that its spans enclose every other middleware's work.
		built.Options.Middleware = append([]agent.Middleware{telemetry.Middleware(opts)}, built.Options.Middleware...)
		return nil
	}}
}

// otlpTelemetry returns the providers of the OTLP/HTTP exporters that the
// standard variables ask for (see telemetryRunExtension), and the
// functions that flush and stop them; nil options when none is asked for.
// A bad variable is a usage error of cmd.
func otlpTelemetry(ctx context.Context, logger *slog.Logger, cmd string) (*telemetry.Options, []func() error, error) {
	if disabled, _ := strconv.ParseBool(os.Getenv("OTEL_SDK_DISABLED")); disabled {
		return nil, nil, nil
	}
	set := func(names ...string) bool {
		for _, n := range names {
			if os.Getenv(n) != "" {
				return true
			}
		}
		return false
	}
	traces := set("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	metrics := set("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")
	if !traces && !metrics {
		return nil, nil, nil
	}
	// Export failures are logged (with -v), never printed among the run's output.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		logger.Warn("telemetry export failed", "error", err)
	}))
	res, err := resource.New(ctx, resource.WithAttributes(semconv.ServiceName("tollgate")), resource.WithFromEnv())
	if err != nil {
		return nil, nil, usageErr("%s: OTEL_RESOURCE_ATTRIBUTES: %v", cmd, err)
	}
	opts := &telemetry.Options{}
	var closers []func() error
	shutdown := func(f func(context.Context) error) func() error {
		return func() error {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), telemetryFlushTimeout)
			defer cancel()
			return f(ctx)
		}
	}
	if traces {
		exp, err := otlptracehttp.New(ctx)
		if err != nil {
			return nil, nil, usageErr("%s: OTEL_EXPORTER_OTLP_ENDPOINT: %v", cmd, err)
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
		closers = append(closers, shutdown(tp.Shutdown))
		opts.TracerProvider = tp
	}
	if metrics {
		exp, err := otlpmetrichttp.New(ctx)
		if err != nil {
			return nil, nil, usageErr("%s: OTEL_EXPORTER_OTLP_ENDPOINT: %v", cmd, err)
		}
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp)), sdkmetric.WithResource(res))
		closers = append(closers, shutdown(mp.Shutdown))
		opts.MeterProvider = mp
	}
	return opts, closers, nil
}
