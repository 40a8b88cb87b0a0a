// Package server assembles Wayfinder's parts into one process: the database
// (external or a managed local Postgres), the queue, the browser pool and
// run workers, the gRPC API with its REST gateway, health, metrics and the
// OpenAPI document. Start-up and shutdown order live in Run, in one place.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	grpcprom "github.com/grpc-ecosystem/go-grpc-middleware/providers/prometheus"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/recovery"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/riverqueue/river"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/api"
	"github.com/wayfinder/wayfinder/internal/config"
	"github.com/wayfinder/wayfinder/internal/events"
	"github.com/wayfinder/wayfinder/internal/governance"
	"github.com/wayfinder/wayfinder/internal/live"
	"github.com/wayfinder/wayfinder/internal/llm"
	"github.com/wayfinder/wayfinder/internal/mcpserver"
	"github.com/wayfinder/wayfinder/internal/netguard"
	"github.com/wayfinder/wayfinder/internal/pool"
	"github.com/wayfinder/wayfinder/internal/queue"
	"github.com/wayfinder/wayfinder/internal/runner"
	"github.com/wayfinder/wayfinder/internal/secrets"
	"github.com/wayfinder/wayfinder/internal/store"
	"github.com/wayfinder/wayfinder/internal/store/localpg"
	"github.com/wayfinder/wayfinder/internal/suiterun"
	"github.com/wayfinder/wayfinder/internal/version"
	"github.com/wayfinder/wayfinder/internal/webhook"
	"github.com/wayfinder/wayfinder/internal/worker"
)

// Options are the parts of a server that are not configuration: the logger,
// the tracer provider and a callback told the bound addresses.
type Options struct {
	Logger         *slog.Logger
	TracerProvider trace.TracerProvider
	// Ready, when set, is called once the server accepts requests.
	Ready func(Addrs)
	// ReapInterval is how often lost runs are looked for. Default 30s.
	ReapInterval time.Duration
	// Models adds model providers by name (tests register a scripted one).
	Models map[string]func(llm.Settings) (llm.Model, error)
}

// Addrs are the addresses the server listens on.
type Addrs struct {
	GRPC, HTTP  string
	DatabaseURL string
}

// OpenDatabase connects to cfg.DatabaseURL, or starts the managed local
// Postgres when it is empty, and applies migrations. The returned function
// closes the pool and stops the managed Postgres.
func OpenDatabase(ctx context.Context, cfg config.Config, logger *slog.Logger) (*pgxpool.Pool, string, func(), error) {
	url := cfg.DatabaseURL
	stop := func() {}
	if url == "" {
		pg, err := localpg.Start(ctx, localpg.Options{
			DataDir: filepath.Join(cfg.DataDir, "postgres"),
			BinDir:  cfg.PGBin,
			User:    cfg.PGUser,
			Logger:  logger,
		})
		if err != nil {
			return nil, "", nil, fmt.Errorf("managed postgres: %w", err)
		}
		url = pg.URL()
		logger.InfoContext(ctx, "managed postgres started", "data_dir", filepath.Join(cfg.DataDir, "postgres"))
		stop = func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := pg.Stop(ctx); err != nil {
				logger.Error("stopping managed postgres", "error", err)
			}
		}
	}
	dbpool, err := store.Connect(ctx, url)
	if err != nil {
		stop()
		return nil, "", nil, err
	}
	if err := store.Migrate(ctx, dbpool, logger); err != nil {
		dbpool.Close()
		stop()
		return nil, "", nil, err
	}
	return dbpool, url, func() { dbpool.Close(); stop() }, nil
}

// Run serves until ctx is done, then shuts down in order: readiness goes
// false, workers stop taking runs and running ones get cfg.ShutdownTimeout
// to finish before they are handed back to the queue, then the API stops,
// then the browser and the database.
func Run(ctx context.Context, cfg config.Config, opts Options) error {
	logger := opts.Logger
	if opts.TracerProvider == nil {
		opts.TracerProvider = noop.NewTracerProvider()
	}
	if opts.ReapInterval <= 0 {
		opts.ReapInterval = 30 * time.Second
	}
	dbpool, dbURL, closeDB, err := OpenDatabase(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer closeDB()
	st := store.New(dbpool)
	keyring, err := loadKeyring(cfg, logger)
	if err != nil {
		return err
	}
	local, err := setupAccess(ctx, &cfg, st, logger)
	if err != nil {
		return err
	}
	siteProfiles, err := governance.LoadProfiles(cfg.SiteProfilesDir)
	if err != nil {
		return fmt.Errorf("site profiles: %w", err)
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		store.NewCollector(st), version.NewCollector())
	if err := st.UseMediaStore(ctx, cfg, reg, logger); err != nil { // screenshots in Postgres or an S3 bucket
		return err
	}
	tracer := opts.TracerProvider.Tracer("github.com/wayfinder/wayfinder")

	prices, err := llm.LoadPrices(cfg.PricesFile)
	if err != nil {
		return err
	}
	// MCP sessions: runs whose controller is the MCP client (provider
	// mcpserver.Provider), pinned to this process.
	sessions := mcpserver.NewSessions(0)
	extra := map[string]func(llm.Settings) (llm.Model, error){mcpserver.Provider: sessions.Model}
	maps.Copy(extra, opts.Models)
	models := &worker.Models{
		DefaultProvider: cfg.ModelProvider, DefaultModel: cfg.Model, JudgeModel: cfg.JudgeModel,
		APIKeys: cfg.APIKeys, BaseURLs: cfg.BaseURLs, Extra: extra,
		HTTPClient: worker.Egress(cfg.AllowPrivateNetworks),
	}
	logger.Info("models", "default_provider", models.Provider(nil), "keys_for", slices.Sorted(maps.Keys(cfg.APIKeys)))

	works := cfg.Role == config.RoleAll || cfg.Role == config.RoleWorker
	serves := cfg.Role == config.RoleAll || cfg.Role == config.RoleAPI

	hub := events.NewHub(dbpool, store.NotifyChannel, logger)
	// The live views of the runs this process executes, for its own
	// viewers; other replicas reach them through the database.
	liveViews := live.NewRegistry()
	qcfg := queue.Config{MaxRunTimeout: cfg.RunTimeout, Logger: logger}
	var browsers *pool.Pool
	var suiteRuns *api.RunService
	if works {
		browsers, err = pool.New(pool.Config{
			Chromium: cfg.Chromium, Capacity: cfg.BrowserCapacity,
			ContextsPerProcess: cfg.BrowserContextsPerProcess, ProcessPerRun: cfg.BrowserProcessPerRun,
			RecycleAfter: cfg.BrowserRecycleAfter, MemoryLimit: cfg.BrowserMemoryLimit,
			WorkDir: filepath.Join(cfg.DataDir, "browsers"), Logger: logger, Registerer: reg,
		})
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(cfg.DataDir, "browsers"), 0o700); err != nil {
			return fmt.Errorf("browser work dir: %w", err)
		}
		if err := browsers.Start(ctx); err != nil {
			return fmt.Errorf("start browser pool: %w", err)
		}
		defer browsers.Close()
		workers := river.NewWorkers()
		river.AddWorker(workers, worker.New(worker.Config{
			Store: st, Pool: browsers, Runner: &runner.Runner{},
			AllowPrivateNetworks: cfg.AllowPrivateNetworks,
			Logger:               logger, Tracer: tracer, Metrics: worker.NewMetrics(reg),
			NetMetrics: netguard.NewMetrics(reg), Models: models, Prices: prices, Keyring: keyring,
			CallbackHost: cfg.CallbackHost,
			Governance:   governance.New(governance.Config{Profiles: siteProfiles, DefaultRate: cfg.DomainRateLimit}),
			Hub:          hub,
			Live:         liveViews, TakeoverIdle: cfg.TakeoverIdle,
		}))
		river.AddWorker(workers, webhook.NewWorker(webhook.WorkerConfig{Store: st, Keyring: keyring,
			Client: worker.Egress(cfg.AllowPrivateNetworks), Logger: logger}))
		// A suite run's attempts are created like any run (validated,
		// sealed, queued) by a RunService of this process, made once the
		// queue exists.
		river.AddWorker(workers, suiterun.New(suiterun.Config{
			Store: st, Hub: hub, Logger: logger, Tracer: tracer, Metrics: suiterun.NewMetrics(reg),
			Models: graders(st, keyring, models, logger),
			CreateRun: func(ctx context.Context, p *wfv1.RunParams, requestID string) (*wfv1.Run, error) {
				return suiteRuns.CreateRun(ctx, &wfv1.CreateRunRequest{Params: p, RequestId: requestID})
			},
			CancelRun: func(ctx context.Context, id, reason string) error {
				_, err := suiteRuns.CancelRun(ctx, &wfv1.CancelRunRequest{RunId: id, Reason: reason})
				return err
			},
		}))
		qcfg.Workers, qcfg.Concurrency = workers, browsers.Capacity()
	}
	q, err := queue.New(dbpool, qcfg)
	if err != nil {
		return err
	}
	suiteRuns = api.NewRunService(api.Config{
		Store: st, Queue: q, Hub: hub, MaxRunTimeout: cfg.RunTimeout, Logger: logger, Models: models, Keyring: keyring,
	})

	var wg sync.WaitGroup
	bgCtx, stopBackground := context.WithCancel(context.WithoutCancel(ctx))
	defer func() { stopBackground(); wg.Wait() }()
	goBackground(&wg, func() { _ = hub.Run(bgCtx) })
	if works {
		goBackground(&wg, func() { _ = browsers.Run(bgCtx) })
		goBackground(&wg, func() { reapLoop(bgCtx, st, opts.ReapInterval, logger) })
		if err := q.ServeWebhooks(4); err != nil {
			return err
		}
		// Suite runs mostly wait for their tests' runs: many fit beside
		// the browser capacity.
		if err := q.ServeSuites(16); err != nil {
			return err
		}
		dispatcher := webhook.NewDispatcher(webhook.DispatcherConfig{Store: st, Queue: q, Hub: hub, Logger: logger})
		goBackground(&wg, func() { dispatcher.Run(bgCtx) })
		if err := q.Start(ctx); err != nil {
			return fmt.Errorf("start queue: %w", err)
		}
	}

	var ready atomic.Bool
	var grpcSrv *grpc.Server
	var httpSrv *http.Server
	var addrs Addrs
	addrs.DatabaseURL = dbURL
	serveErr := make(chan error, 2)
	isReady := func() bool { return ready.Load() && st.Ping(ctx) == nil && (browsers == nil || browsers.Ready()) }
	if serves {
		grpcSrv, httpSrv, addrs, err = startAPI(ctx, cfg, apiDeps{
			store: st, queue: q, hub: hub, logger: logger, reg: reg, tp: opts.TracerProvider, models: models,
			keyring: keyring, local: local, siteProfiles: siteProfiles, live: liveViews, sessions: sessions,
			ready: isReady,
		}, serveErr)
		if err != nil {
			_ = q.Stop(ctx)
			return err
		}
		addrs.DatabaseURL = dbURL
	} else {
		// A worker-only process serves no API, but its probes and
		// Prometheus still need /healthz, /readyz and /metrics.
		httpSrv, addrs.HTTP, err = startOps(cfg.HTTPAddr, isReady, reg, serveErr)
		if err != nil {
			_ = q.Stop(ctx)
			return err
		}
	}
	ready.Store(true)
	logger.InfoContext(ctx, "wayfinder ready", "grpc", addrs.GRPC, "http", addrs.HTTP, "role", string(cfg.Role),
		"browser_capacity", cfg.BrowserCapacity)
	if opts.Ready != nil {
		opts.Ready(addrs)
	}

	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-serveErr:
		logger.Error("server failed; shutting down", "error", runErr)
	}
	ready.Store(false)
	logger.Info("shutting down", "shutdown_timeout", cfg.ShutdownTimeout)
	drainCtx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	if err := q.Stop(drainCtx); err != nil {
		logger.Warn("stopping workers", "error", err)
	}
	if serves {
		stopAPI(grpcSrv, httpSrv)
	} else {
		// Last, so liveness holds while the runs drain.
		stopOps(httpSrv)
	}
	return runErr
}

// startOps serves only /healthz, /readyz and /metrics on addr, as the
// API's HTTP server does, for a process that serves no API (role worker).
// Serving errors go to errc. It returns the bound address.
func startOps(addr string, ready func() bool, reg *prometheus.Registry, errc chan<- error) (*http.Server, string, error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("listen for HTTP on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !ready() {
			http.Error(w, "not ready\n", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ready\n"))
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errc <- fmt.Errorf("serve HTTP: %w", err)
		}
	}()
	return srv, lis.Addr().String(), nil
}

// stopOps stops the ops server, giving in-flight scrapes a few seconds.
func stopOps(srv *http.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(ctx)
}

func goBackground(wg *sync.WaitGroup, fn func()) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		fn()
	}()
}

func reapLoop(ctx context.Context, st *store.Store, every time.Duration, logger *slog.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		ids, err := st.ReapLostRuns(ctx)
		if err != nil && ctx.Err() == nil {
			logger.Warn("looking for lost runs", "error", err)
		}
		for _, id := range ids {
			logger.Warn("run lost with its worker; ended as error", "run_id", id)
		}
		ids, err = st.ReapLostSuiteRuns(ctx)
		if err != nil && ctx.Err() == nil {
			logger.Warn("looking for lost suite runs", "error", err)
		}
		for _, id := range ids {
			logger.Warn("suite run lost with its job; ended as error", "suite_run_id", id)
		}
	}
}

type apiDeps struct {
	store  *store.Store
	queue  *queue.Queue
	hub    *events.Hub
	logger *slog.Logger
	reg    *prometheus.Registry
	tp     trace.TracerProvider
	ready  func() bool
	models *worker.Models
	// keyring seals credentials and run secrets.
	keyring *secrets.Keyring
	// local is single-user mode: no API keys, loopback only.
	local bool
	// siteProfiles are the server's site profiles (WAYFINDER_SITE_PROFILES_DIR).
	siteProfiles *governance.Profiles
	// live holds the live views of the runs this process executes.
	live *live.Registry
	// sessions are the MCP sessions open in this process.
	sessions *mcpserver.Sessions
	// runs is the gRPC server's RunService (set by startAPI).
	runs *api.RunService
}

// recovered turns a panic in a handler into an INTERNAL error (the
// process and the other requests carry on) and logs it with its stack.
func recovered(logger *slog.Logger) recovery.RecoveryHandlerFuncContext {
	return func(ctx context.Context, p any) error {
		logger.ErrorContext(ctx, "panic in request handler", "panic", p, "stack", string(debug.Stack()))
		return errors.New("request handler panicked")
	}
}

// startAPI listens on the gRPC and HTTP addresses and serves in the
// background; serving errors go to errc.
func startAPI(ctx context.Context, cfg config.Config, d apiDeps, errc chan<- error) (*grpc.Server, *http.Server, Addrs, error) {
	var addrs Addrs
	grpcLis, err := net.Listen("tcp", cfg.GRPCAddr)
	if err != nil {
		return nil, nil, addrs, fmt.Errorf("listen for gRPC on %s: %w", cfg.GRPCAddr, err)
	}
	httpLis, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		grpcLis.Close()
		return nil, nil, addrs, fmt.Errorf("listen for HTTP on %s: %w", cfg.HTTPAddr, err)
	}
	addrs.GRPC, addrs.HTTP = grpcLis.Addr().String(), httpLis.Addr().String()

	authn := &api.Authenticator{Store: d.store, Local: d.local}
	srvMetrics := grpcprom.NewServerMetrics(grpcprom.WithServerHandlingTimeHistogram())
	prometheus.WrapRegistererWithPrefix("wayfinder_", d.reg).MustRegister(srvMetrics)
	grpcSrv := grpc.NewServer(
		grpc.StatsHandler(otelgrpc.NewServerHandler(
			otelgrpc.WithTracerProvider(d.tp), otelgrpc.WithPropagators(propagation.TraceContext{}))),
		grpc.ChainUnaryInterceptor(srvMetrics.UnaryServerInterceptor(), api.UnaryErrors(d.logger),
			recovery.UnaryServerInterceptor(recovery.WithRecoveryHandlerContext(recovered(d.logger))), authn.Unary(),
			api.UnaryNoNUL()),
		grpc.ChainStreamInterceptor(srvMetrics.StreamServerInterceptor(), api.StreamErrors(d.logger),
			recovery.StreamServerInterceptor(recovery.WithRecoveryHandlerContext(recovered(d.logger))), authn.Stream(),
			api.StreamNoNUL()),
	)
	runs := api.NewRunService(api.Config{
		Store: d.store, Queue: d.queue, Hub: d.hub, MaxRunTimeout: cfg.RunTimeout, Logger: d.logger,
		Models: d.models, Keyring: d.keyring,
	})
	wfv1.RegisterRunServiceServer(grpcSrv, runs)
	d.runs = runs
	wfv1.RegisterTestServiceServer(grpcSrv, api.NewTestService(api.TestConfig{
		Store: d.store, Queue: d.queue, Hub: d.hub, Runs: runs, MaxRunTimeout: cfg.RunTimeout, Logger: d.logger,
	}))
	wfv1.RegisterAccessServiceServer(grpcSrv, api.NewAccessService(d.store, d.logger))
	wfv1.RegisterCredentialServiceServer(grpcSrv, api.NewCredentialService(d.store, d.keyring, d.logger))
	wfv1.RegisterSiteProfileServiceServer(grpcSrv, api.NewSiteProfileService(d.store, d.siteProfiles))
	wfv1.RegisterLiveServiceServer(grpcSrv, d.liveService())
	wfv1.RegisterPromptServiceServer(grpcSrv, api.NewPromptService(d.store, d.logger))
	wfv1.RegisterToolServiceServer(grpcSrv, api.NewToolService(d.store, d.keyring, worker.Egress(cfg.AllowPrivateNetworks)))
	wfv1.RegisterTraceServiceServer(grpcSrv, api.NewTraceService(d.store))
	healthSrv := health.NewServer()
	healthpb.RegisterHealthServer(grpcSrv, healthSrv)
	reflection.Register(grpcSrv)
	srvMetrics.InitializeMetrics(grpcSrv)
	healthSrv.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	healthSrv.SetServingStatus(wfv1.RunService_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)

	go func() {
		if err := grpcSrv.Serve(grpcLis); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			errc <- fmt.Errorf("serve gRPC: %w", err)
		}
	}()

	handler, gwConn, err := httpHandler(ctx, addrs.GRPC, d)
	if err != nil {
		grpcSrv.Stop()
		httpLis.Close()
		return nil, nil, addrs, err
	}
	httpSrv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	httpSrv.RegisterOnShutdown(func() { _ = gwConn.Close() })
	go func() {
		if err := httpSrv.Serve(httpLis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errc <- fmt.Errorf("serve HTTP: %w", err)
		}
	}()
	return grpcSrv, httpSrv, addrs, nil
}

// stopAPI stops both servers, giving in-flight calls a few seconds. Event
// streams would keep a graceful stop waiting forever, so it is bounded.
func stopAPI(grpcSrv *grpc.Server, httpSrv *http.Server) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = httpSrv.Shutdown(ctx)
	done := make(chan struct{})
	go func() { grpcSrv.GracefulStop(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		grpcSrv.Stop()
		<-done
	}
}

// liveService is the LiveService of d (the gRPC server's and, in process,
// the live view's Server-Sent Events').
func (d apiDeps) liveService() *api.LiveService {
	return api.NewLiveService(api.LiveConfig{Store: d.store, Hub: d.hub, Registry: d.live, Logger: d.logger})
}
