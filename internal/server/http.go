package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
	"unicode/utf8"

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
		runtime.WithRoutingErrorHandler(routingError),
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
	mux.Handle("/v1/", bodyLimited(utf8Only(stallLimited(gw, api.SendStall)), maxRESTBody))
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

// routingError answers a known path called with a method it does not have
// with 405, where the gateway answers 501 (UNIMPLEMENTED): 501 is kept for
// fields of later releases, and a wrong method is the client's error.
func routingError(ctx context.Context, mux *runtime.ServeMux, m runtime.Marshaler, w http.ResponseWriter, r *http.Request, httpStatus int) {
	if httpStatus != http.StatusMethodNotAllowed {
		runtime.DefaultRoutingErrorHandler(ctx, mux, m, w, r, httpStatus)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusMethodNotAllowed)
	fmt.Fprintf(w, `{"code":12,"message":"method %s is not allowed on this path"}`+"\n", r.Method)
}

// maxRESTBody is the largest REST request body: the gRPC server's own
// receive limit (grpc-go's default, 4 MiB), which a larger body could
// never pass once the gateway had read it whole into memory.
const maxRESTBody = 4 << 20

// bodyLimited refuses a request body over limit bytes with 413 Request
// Entity Too Large before h (the gateway, which reads a body whole) sees
// it: at once when Content-Length says so, else once limit+1 bytes of a
// chunked body have been read.
func bodyLimited(h http.Handler, limit int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.ContentLength > limit:
			bodyTooLarge(w, limit)
			return
		case r.ContentLength < 0 && r.Body != nil && r.Body != http.NoBody:
			b, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
			if err != nil {
				http.Error(w, `{"code":3,"message":"reading the request body failed"}`, http.StatusBadRequest)
				return
			}
			if int64(len(b)) > limit {
				bodyTooLarge(w, limit)
				return
			}
			r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
		default:
			r.Body = http.MaxBytesReader(w, r.Body, limit)
		}
		h.ServeHTTP(w, r)
	})
}

// utf8Only refuses, with 400, a request whose path or query (once
// unescaped) is not valid UTF-8. The gateway would copy such a path
// parameter into a protobuf string, which then fails to marshal: a 500.
func utf8Only(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		query, err := url.QueryUnescape(r.URL.RawQuery)
		if !utf8.ValidString(r.URL.Path) || err == nil && !utf8.ValidString(query) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"code":3,"message":"the request path and query must be valid UTF-8"}`+"\n")
			return
		}
		h.ServeHTTP(w, r)
	})
}

// bodyTooLarge answers 413 in the gateway's error shape (code 3,
// INVALID_ARGUMENT) and closes the connection, so the rest of the body is
// not read.
func bodyTooLarge(w http.ResponseWriter, limit int64) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Connection", "close")
	w.WriteHeader(http.StatusRequestEntityTooLarge)
	fmt.Fprintf(w, `{"code":3,"message":"request body too large: at most %d bytes"}`+"\n", limit)
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
