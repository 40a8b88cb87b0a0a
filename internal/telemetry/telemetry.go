// Package telemetry sets up OpenTelemetry tracing from the standard OTEL_*
// environment variables, and the server's logger.
package telemetry

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"go.opentelemetry.io/contrib/exporters/autoexport"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// TracerProvider returns the provider configured by the environment and a
// function that flushes and stops it. Tracing is off (a no-op provider)
// unless OTEL_TRACES_EXPORTER, OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set, and always when
// OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none. Exporters, endpoints,
// headers, sampling and resource attributes follow the OpenTelemetry
// specification's variables.
func TracerProvider(ctx context.Context, getenv func(string) string) (trace.TracerProvider, func(context.Context) error, error) {
	noopShutdown := func(context.Context) error { return nil }
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") || getenv("OTEL_TRACES_EXPORTER") == "none" ||
		(getenv("OTEL_TRACES_EXPORTER") == "" && getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" &&
			getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "") {
		return noop.NewTracerProvider(), noopShutdown, nil
	}
	exp, err := autoexport.NewSpanExporter(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("trace exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName("wayfinder")),
		resource.WithFromEnv(), resource.WithProcess(), resource.WithHost())
	if err != nil {
		return nil, nil, fmt.Errorf("trace resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return tp, tp.Shutdown, nil
}

// Logger returns a slog logger writing to w in format ("json" or "text") at
// level ("debug", "info", "warn", "error").
func Logger(w io.Writer, format, level string) *slog.Logger {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		lv = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: lv}
	if format == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}
