package server

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protojson"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/api/openapi"
	"github.com/wayfinder/wayfinder/internal/api"
	"github.com/wayfinder/wayfinder/internal/mcpserver"
)

// httpHandler serves the REST gateway (proxying to the gRPC server at
// grpcAddr, so REST and gRPC share validation, interceptors and metrics),
// health, metrics and the OpenAPI document.
func httpHandler(ctx context.Context, grpcAddr string, d apiDeps) (http.Handler, *grpc.ClientConn, error) {
	gw := runtime.NewServeMux(
		runtime.WithMarshalerOption(runtime.MIMEWildcard, &runtime.HTTPBodyMarshaler{
			Marshaler: &runtime.JSONPb{
				MarshalOptions:   protojson.MarshalOptions{EmitUnpopulated: false, UseProtoNames: true},
				UnmarshalOptions: protojson.UnmarshalOptions{DiscardUnknown: false},
			},
		}),
	)
	conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, nil, fmt.Errorf("gateway connection: %w", err)
	}
	for _, register := range []func(context.Context, *runtime.ServeMux, *grpc.ClientConn) error{
		wfv1.RegisterRunServiceHandler, wfv1.RegisterAccessServiceHandler, wfv1.RegisterCredentialServiceHandler,
		wfv1.RegisterSiteProfileServiceHandler, wfv1.RegisterLiveServiceHandler, wfv1.RegisterPromptServiceHandler,
		wfv1.RegisterToolServiceHandler, wfv1.RegisterTestServiceHandler, wfv1.RegisterTraceServiceHandler,
	} {
		if err := register(ctx, gw, conn); err != nil {
			conn.Close()
			return nil, nil, fmt.Errorf("register gateway: %w", err)
		}
	}
	mux := http.NewServeMux()
	mux.Handle("/v1/", stallLimited(gw, api.SendStall))
	sse := newSSE(ctx, d)
	mux.HandleFunc("GET /v1/runs/{run_id}/events:sse", sse.runEvents)
	mux.HandleFunc("GET /v1/events:sse", sse.tenantEvents)
	newLiveSSE(sse, d.liveService()).register(mux)
	mux.Handle("/mcp", mcpserver.New(ctx, mcpserver.Config{Runs: d.runs,
		Authn: &api.Authenticator{Store: d.store, Local: d.local}, Sessions: d.sessions, Logger: d.logger}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !d.ready() {
			http.Error(w, "not ready\n", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ready\n"))
	})
	mountDashboard(mux)
	mux.Handle("GET /metrics", promhttp.HandlerFor(d.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /openapi.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(openapi.Document)
	})
	return mux, conn, nil
}

// stallLimited gives every write of h's responses stall to complete. A REST
// stream (newline-delimited JSON) whose client stopped reading then fails
// its next write and ends, instead of holding the gateway's handler, and
// the gRPC stream behind it, for as long as the connection lives.
func stallLimited(h http.Handler, stall time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(&deadlineWriter{ResponseWriter: w, rc: http.NewResponseController(w), stall: stall}, r)
	})
}

// deadlineWriter sets a write deadline before each write and flush.
type deadlineWriter struct {
	http.ResponseWriter
	rc    *http.ResponseController
	stall time.Duration
}

func (w *deadlineWriter) Write(b []byte) (int, error) {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.stall))
	return w.ResponseWriter.Write(b)
}

// Flush implements http.Flusher, which the gateway's streams look for.
func (w *deadlineWriter) Flush() {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.stall))
	_ = w.rc.Flush()
}

// Unwrap lets http.ResponseController reach the connection.
func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
