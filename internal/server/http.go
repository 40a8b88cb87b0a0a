package server

import (
	"context"
	"fmt"
	"net/http"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protojson"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/api/openapi"
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
		wfv1.RegisterSiteProfileServiceHandler,
	} {
		if err := register(ctx, gw, conn); err != nil {
			conn.Close()
			return nil, nil, fmt.Errorf("register gateway: %w", err)
		}
	}
	mux := http.NewServeMux()
	mux.Handle("/v1/", gw)
	sse := newSSE(ctx, d)
	mux.HandleFunc("GET /v1/runs/{run_id}/events:sse", sse.runEvents)
	mux.HandleFunc("GET /v1/events:sse", sse.tenantEvents)
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
