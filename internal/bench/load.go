package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/config"
	"github.com/wayfinder/wayfinder/internal/llm"
	"github.com/wayfinder/wayfinder/internal/pool"
	"github.com/wayfinder/wayfinder/internal/server"
	"github.com/wayfinder/wayfinder/internal/store/localpg"
)

// loadProvider is the model provider the load measurements register on
// their servers: the engine section's zero-latency scripted controller.
const loadProvider = "wfbench-scripted"

// LoadConfig configures RunLoad. Zero fields take their defaults.
type LoadConfig struct {
	// Concurrency lists the browser capacities measured, one server each.
	// Default 1, 2, 4.
	Concurrency []int
	// RunsPerSlot is the number of runs queued at once per unit of
	// capacity at each level. Default 4.
	RunsPerSlot int
	// Actions is the browser actions of each run, before complete_task.
	// Default 4 (5 steps).
	Actions int
	// APIDuration is how long the open-loop API load lasts. Default 20s.
	APIDuration time.Duration
	// CreateRate and GetRate are the CreateRun and GetRun requests per
	// second, each over gRPC and over REST. Default 1 and 25.
	CreateRate, GetRate float64
	// APICapacity is the browser capacity of the server under API load.
	// Default 2.
	APICapacity int
	// ReplicaRuns is the number of runs queued for one replica, then for
	// two. Default 12 (negative skips the replicas).
	ReplicaRuns int
	// ReplicaCapacity is each replica's browser capacity. Default 2.
	ReplicaCapacity int
	// Chromium is the browser binary. Default: pool.FindChromium.
	Chromium string
	// WorkDir holds Postgres and the servers' data dirs. Required.
	WorkDir string
	// Command is the command line that produced the figures, for the
	// report.
	Command string
	// Log receives progress and the servers' warnings. Default: discarded.
	Log io.Writer
}

func (c *LoadConfig) setDefaults() error {
	if len(c.Concurrency) == 0 {
		c.Concurrency = []int{1, 2, 4}
	}
	for _, n := range c.Concurrency {
		if n < 1 {
			return fmt.Errorf("bench: load concurrency %d: must be at least 1", n)
		}
	}
	if c.RunsPerSlot <= 0 {
		c.RunsPerSlot = 4
	}
	if c.Actions <= 0 {
		c.Actions = 4
	}
	if c.APIDuration <= 0 {
		c.APIDuration = 20 * time.Second
	}
	if c.CreateRate <= 0 {
		c.CreateRate = 1
	}
	if c.GetRate <= 0 {
		c.GetRate = 25
	}
	if c.APICapacity <= 0 {
		c.APICapacity = 2
	}
	if c.ReplicaRuns == 0 {
		c.ReplicaRuns = 12
	}
	if c.ReplicaCapacity <= 0 {
		c.ReplicaCapacity = 2
	}
	if c.WorkDir == "" {
		return errors.New("bench: LoadConfig.WorkDir is required")
	}
	bin, err := pool.FindChromium(c.Chromium)
	if err != nil {
		return err
	}
	c.Chromium = bin
	if c.Log == nil {
		c.Log = io.Discard
	}
	return nil
}

// LoadResult is the service measured under load: throughput and step
// latency by browser capacity, API and event latency under an open-loop
// request rate, two replicas sharing one database, and the inputs of the
// capacity model.
type LoadResult struct {
	// Command produced the figures.
	Command string
	// Date is when the measurements began; Duration how long they took.
	Date     time.Time
	Duration time.Duration
	// Load is the load average as they began ("1m, 5m, 15m").
	Load string
	// Actions is the browser actions per run (then complete_task);
	// RunsPerSlot the runs queued per unit of capacity.
	Actions, RunsPerSlot int
	// Levels are the throughput measurements, by capacity.
	Levels []LoadLevel
	// API is request and event latency under load.
	API APILoad
	// Replicas is one replica beside two on one database.
	Replicas ReplicaResult
	// Capacity holds the measured inputs of the capacity model.
	Capacity CapacityInputs
	// Errors lists the measurements that failed.
	Errors []string
}

// Dist is a latency distribution in milliseconds (or any quantity).
type Dist struct {
	N             int
	P50, P99, Max float64
}

// distOf summarizes ds in milliseconds; the zero Dist when empty.
func distOf(ds []time.Duration) Dist {
	xs := make([]float64, len(ds))
	for i, d := range ds {
		xs[i] = float64(d) / float64(time.Millisecond)
	}
	return distOfFloats(xs)
}

func distOfFloats(xs []float64) Dist {
	if len(xs) == 0 {
		return Dist{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return Dist{N: len(s), P50: quantile(s, 0.5), P99: quantile(s, 0.99), Max: s[len(s)-1]}
}

// LoadLevel is one server with one browser capacity draining a batch of
// runs queued at once.
type LoadLevel struct {
	// Capacity is the server's browser capacity (runs at once).
	Capacity int
	// Runs were queued; Completed ended COMPLETED; Steps were recorded.
	Runs, Completed, Steps int
	// Wall is from the first CreateRun to the last run's end.
	Wall time.Duration
	// RunsPerMinute is Runs over Wall.
	RunsPerMinute float64
	// RunTime is a run's start to end; QueueWait its create to start.
	RunTime, QueueWait Dist
	// StepWall is a step record's end minus start; StepOverhead the same
	// without the model call (Timings.Model): the service's work per step.
	StepWall, StepOverhead Dist
	// IdlePSS is the whole service (this process, its Chromium and
	// Postgres) before the runs; SteadyPSS the median while Capacity runs
	// were running at once (SteadySamples samples), split into
	// ServerPSS, ChromiumPSS and PostgresPSS. Bytes.
	IdlePSS, SteadyPSS, ServerPSS, ChromiumPSS, PostgresPSS int64
	SteadySamples                                           int
	// Connections is the most database connections the server held
	// (pg_stat_activity client backends, the benchmark's own excluded).
	Connections int
	// TreeCores is the CPU time of the service's processes over Wall, in
	// cores; MachineBusy the share of all the machine's cores busy (any
	// process) over Wall.
	TreeCores, MachineBusy float64
	// Err is the failure that cut the level short.
	Err string
}

// ReplicaResult is one batch of runs drained by one replica, and the
// same batch by two replicas on the same database.
type ReplicaResult struct {
	// Runs per batch and CapacityEach of each replica.
	Runs, CapacityEach int
	// One and Two are the drain times (first CreateRun to last end).
	One, Two time.Duration
	// Shares are the runs each replica ran in the two-replica batch (the
	// last River client in the job's attempted_by).
	Shares []int
	// Completed counts COMPLETED runs in the two batches.
	CompletedOne, CompletedTwo int
	// Err is the failure that cut it short.
	Err string
}

// CapacityInputs are the measured inputs of the capacity model, over the
// throughput levels' runs.
type CapacityInputs struct {
	// Steps and Runs measured.
	Steps, Runs int
	// WALBytesPerStep is pg_current_wal_lsn()'s advance per step (run,
	// events, steps, media, River's job rows: everything, amortized).
	WALBytesPerStep float64
	// RowsPerStep is pg_stat_database.tup_inserted per step.
	RowsPerStep float64
	// MediaBytesPerStep and MediaPerStep are media rows (screenshots,
	// thumbnails) per step, by size_bytes.
	MediaBytesPerStep, MediaPerStep float64
	// RunsPerHour is the best level's runs per minute × 60, and
	// BestCapacity that level's capacity.
	RunsPerHour  float64
	BestCapacity int
	// MeanRunSeconds is the best level's median run time.
	MeanRunSeconds float64
}

// loadEnv is what every measurement shares: one Postgres, one site, one
// keyring, the benchmark's own database connection.
type loadEnv struct {
	cfg  LoadConfig
	pg   *localpg.Server
	url  string
	db   *pgxpool.Pool
	site *Site
	keys string
	seq  int
	logf func(string, ...any)
}

// RunLoad measures the service under load: in-process servers
// (server.Run) on one managed Postgres, real Chromium, the benchmark pages
// on 127.0.0.1, runs driven by a zero-latency scripted model. Failures of
// one measurement are in LoadResult.Errors; the error is for a run that
// could not start at all (no Postgres, no browser).
func RunLoad(ctx context.Context, cfg LoadConfig) (*LoadResult, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	logf := func(format string, args ...any) { fmt.Fprintf(cfg.Log, "wfbench: load: "+format+"\n", args...) }
	res := &LoadResult{Command: cfg.Command, Date: time.Now(), Load: loadAverage(), Actions: cfg.Actions, RunsPerSlot: cfg.RunsPerSlot}
	defer func() { res.Duration = time.Since(res.Date) }()

	// The managed Postgres may run as another user (as root): it must
	// reach its data dir, so it gets a directory of its own in the
	// system's temporary directory (short: its socket is in it).
	pgDir, err := os.MkdirTemp("", "wfbench-pg-")
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	defer os.RemoveAll(pgDir)
	if err := os.Chmod(pgDir, 0o755); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	// What ran before (the page layer's browsers, Playwright MCP) is
	// closing: wait for it, so the memory figures count this service only.
	waitNoChildren(ctx, 30*time.Second)
	logf("starting Postgres")
	pg, err := localpg.Start(ctx, localpg.Options{DataDir: filepath.Join(pgDir, "pg"), Database: "wayfinder"})
	if err != nil {
		return nil, fmt.Errorf("bench: load: %w", err)
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		_ = pg.Stop(stopCtx)
	}()
	site, err := StartSite()
	if err != nil {
		return nil, err
	}
	defer site.Close()
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	env := &loadEnv{cfg: cfg, pg: pg, url: pg.URL(), site: site, keys: "bench1:" + hex.EncodeToString(key), logf: logf}

	// The first server migrates the database; the benchmark connects after.
	for _, c := range cfg.Concurrency {
		if ctx.Err() != nil {
			break
		}
		logf("capacity %d: %d runs of %d steps", c, c*cfg.RunsPerSlot, cfg.Actions+1)
		lvl, err := env.measureLevel(ctx, c, res)
		if err != nil {
			lvl.Err = err.Error()
			res.Errors = append(res.Errors, fmt.Sprintf("load: capacity %d: %v", c, err))
			logf("capacity %d: %v", c, err)
		}
		res.Levels = append(res.Levels, lvl)
	}
	if env.db != nil {
		defer env.db.Close()
	}
	if ctx.Err() == nil {
		logf("API: %s of CreateRun %.3g/s and GetRun %.3g/s, each over gRPC and REST", cfg.APIDuration, cfg.CreateRate, cfg.GetRate)
		res.API = env.measureAPI(ctx)
		if res.API.Err != "" {
			res.Errors = append(res.Errors, "load: API: "+res.API.Err)
		}
	}
	if cfg.ReplicaRuns > 0 && ctx.Err() == nil {
		logf("replicas: %d runs on one replica, then on two", cfg.ReplicaRuns)
		res.Replicas = env.measureReplicas(ctx)
		if res.Replicas.Err != "" {
			res.Errors = append(res.Errors, "load: replicas: "+res.Replicas.Err)
		}
	}
	res.finish()
	return res, nil
}

// connect opens the benchmark's own database connection once the schema
// exists.
func (e *loadEnv) connect(ctx context.Context) error {
	if e.db != nil {
		return nil
	}
	pc, err := pgxpool.ParseConfig(e.url)
	if err != nil {
		return fmt.Errorf("connect to postgres: %w", err)
	}
	// Named, so the connection count leaves the benchmark's out.
	pc.ConnConfig.RuntimeParams["application_name"] = benchApp
	pc.MaxConns = 4
	db, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return fmt.Errorf("connect to postgres: %w", err)
	}
	e.db = db
	return nil
}

// loadServer is an in-process Wayfinder.
type loadServer struct {
	addrs  server.Addrs
	conn   *grpc.ClientConn
	client wfv1.RunServiceClient
	cancel context.CancelFunc
	done   chan error
}

// startServer starts a server with capacity runs at once on the shared
// Postgres, with a data dir of its own, and waits until it is ready.
func (e *loadEnv) startServer(ctx context.Context, capacity int) (*loadServer, error) {
	e.seq++
	cfg, err := config.Load("wfbench", nil, func(string) string { return "" })
	if err != nil {
		return nil, err
	}
	cfg.GRPCAddr, cfg.HTTPAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.DatabaseURL, cfg.DataDir = e.url, filepath.Join(e.cfg.WorkDir, fmt.Sprintf("server%d", e.seq))
	cfg.Chromium = e.cfg.Chromium
	cfg.BrowserCapacity = capacity
	cfg.RunTimeout, cfg.ShutdownTimeout = 5*time.Minute, 10*time.Second
	cfg.AllowPrivateNetworks = true
	cfg.EncryptionKeys = e.keys
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	actions, click := e.cfg.Actions, loadPage().Click
	logger := slog.New(slog.NewTextHandler(e.cfg.Log, &slog.HandlerOptions{Level: slog.LevelError}))
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s := &loadServer{cancel: cancel, done: make(chan error, 1)}
	ready := make(chan server.Addrs, 1)
	go func() {
		s.done <- server.Run(sctx, cfg, server.Options{
			Logger: logger,
			Ready:  func(a server.Addrs) { ready <- a },
			Models: map[string]func(llm.Settings) (llm.Model, error){
				loadProvider: func(llm.Settings) (llm.Model, error) { return scriptedController(click, actions), nil },
			},
		})
	}()
	select {
	case s.addrs = <-ready:
	case err := <-s.done:
		cancel()
		return nil, fmt.Errorf("server did not start: %w", err)
	case <-ctx.Done():
		cancel()
		<-s.done
		return nil, ctx.Err()
	case <-time.After(2 * time.Minute):
		cancel()
		<-s.done
		return nil, errors.New("server did not start in 2 minutes")
	}
	conn, err := grpc.NewClient(s.addrs.GRPC, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		s.stop()
		return nil, err
	}
	s.conn, s.client = conn, wfv1.NewRunServiceClient(conn)
	if err := e.connect(ctx); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

// stop shuts the server down and waits for it.
func (s *loadServer) stop() {
	if s.conn != nil {
		s.conn.Close()
	}
	s.cancel()
	<-s.done
}

// loadPage is the page every load run works on.
func loadPage() Page { return Pages()[0] }

// runParams are the parameters of a load run: actions browser actions on
// the form page by the scripted controller, then complete_task, judged by
// heuristics.
func (e *loadEnv) runParams() *wfv1.RunParams {
	pg := loadPage()
	return &wfv1.RunParams{
		Goal: fmt.Sprintf("Benchmark: on this page, alternately click %s and fill the first text field, %d actions in all, then complete the task.",
			pg.Click, e.cfg.Actions),
		StartUrl:       e.site.URL + pg.Path,
		AllowedDomains: []string{"127.0.0.1"},
		MaxSteps:       int32(e.cfg.Actions + 1),
		Controller:     &wfv1.ModelSettings{Provider: loadProvider},
		Judge:          &wfv1.JudgeSettings{Strategy: wfv1.JudgeStrategy_JUDGE_STRATEGY_HEURISTIC},
	}
}

// createRuns queues n runs through s's gRPC API.
func (e *loadEnv) createRuns(ctx context.Context, s *loadServer, n int) ([]string, error) {
	ids := make([]string, 0, n)
	for range n {
		run, err := s.client.CreateRun(ctx, &wfv1.CreateRunRequest{Params: e.runParams()})
		if err != nil {
			return ids, fmt.Errorf("create run: %w", err)
		}
		ids = append(ids, run.Id)
	}
	return ids, nil
}

// runCounts returns how many of ids are running and how many still
// queued.
func (e *loadEnv) runCounts(ctx context.Context, ids []string) (running, queued int, err error) {
	err = e.db.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status = 'running'), count(*) FILTER (WHERE status = 'queued')
		FROM runs WHERE id = ANY($1::uuid[])`, ids).Scan(&running, &queued)
	return running, queued, err
}

// waitDone waits until none of ids is queued or running, up to limit.
func (e *loadEnv) waitDone(ctx context.Context, ids []string, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for {
		running, queued, err := e.runCounts(ctx, ids)
		if err == nil && running+queued == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			if err != nil {
				return fmt.Errorf("waiting for runs: %w", err)
			}
			return fmt.Errorf("waiting for runs: %d running and %d queued after %s: %w", running, queued, limit, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// benchApp is the application_name of the benchmark's own connections.
const benchApp = "wfbench"

// connections counts the client backends of the database but the
// benchmark's own.
func (e *loadEnv) connections(ctx context.Context) (int, error) {
	var n int
	err := e.db.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
		WHERE backend_type = 'client backend' AND datname = current_database() AND application_name <> $1`, benchApp).Scan(&n)
	return n, err
}

// dbCounters reads the WAL position and the rows inserted so far.
func (e *loadEnv) dbCounters(ctx context.Context) (lsn string, inserted int64, err error) {
	// Statistics reach pg_stat_database when a backend flushes them (at
	// most about a second after its transaction); each query here runs in
	// a transaction of its own, so its snapshot is fresh.
	err = e.db.QueryRow(ctx, `SELECT pg_current_wal_lsn()::text, tup_inserted FROM pg_stat_database WHERE datname = current_database()`).Scan(&lsn, &inserted)
	return lsn, inserted, err
}

// runRecords are a batch's runs and steps as the API returns them.
type runRecords struct {
	runs  []*wfv1.Run
	steps []*wfv1.Step
}

// fetchRecords reads ids' runs and steps through the API.
func fetchRecords(ctx context.Context, s *loadServer, ids []string) (runRecords, error) {
	var rec runRecords
	for _, id := range ids {
		run, err := s.client.GetRun(ctx, &wfv1.GetRunRequest{RunId: id})
		if err != nil {
			return rec, fmt.Errorf("get run: %w", err)
		}
		rec.runs = append(rec.runs, run)
		token := ""
		for {
			page, err := s.client.ListSteps(ctx, &wfv1.ListStepsRequest{RunId: id, PageSize: 100, PageToken: token})
			if err != nil {
				return rec, fmt.Errorf("list steps: %w", err)
			}
			rec.steps = append(rec.steps, page.Steps...)
			if token = page.NextPageToken; token == "" {
				break
			}
		}
	}
	return rec, nil
}

// drain is the time from the first run's creation to the last run's end.
func (rec runRecords) drain() time.Duration {
	var first, last time.Time
	for _, r := range rec.runs {
		if c := r.GetCreateTime().AsTime(); first.IsZero() || c.Before(first) {
			first = c
		}
		if e := r.GetEndTime().AsTime(); r.GetEndTime() != nil && e.After(last) {
			last = e
		}
	}
	if first.IsZero() || last.IsZero() {
		return 0
	}
	return last.Sub(first)
}

func (rec runRecords) completed() int {
	n := 0
	for _, r := range rec.runs {
		if r.Status == wfv1.RunStatus_RUN_STATUS_COMPLETED {
			n++
		}
	}
	return n
}

// firstFailure describes the first run that did not complete.
func (rec runRecords) firstFailure() string {
	for _, r := range rec.runs {
		if r.Status != wfv1.RunStatus_RUN_STATUS_COMPLETED {
			return fmt.Sprintf("run %s ended %s: %s %s", r.Id, r.Status, r.GetError().GetCategory(), r.GetError().GetMessage())
		}
	}
	return ""
}

// measureLevel queues RunsPerSlot×capacity runs on a fresh server of
// capacity and measures them as they drain.
func (e *loadEnv) measureLevel(ctx context.Context, capacity int, res *LoadResult) (LoadLevel, error) {
	lvl := LoadLevel{Capacity: capacity, Runs: capacity * e.cfg.RunsPerSlot}
	s, err := e.startServer(ctx, capacity)
	if err != nil {
		return lvl, err
	}
	defer s.stop()
	// Let the pool's browser settle before the idle sample.
	select {
	case <-ctx.Done():
		return lvl, ctx.Err()
	case <-time.After(2 * time.Second):
	}
	// Idle is the server as it settles: the heap of what ran before is
	// returned to the system first.
	debug.FreeOSMemory()
	idle, err := servicePSS()
	if err != nil {
		return lvl, err
	}
	lvl.IdlePSS = idle.total()
	lsn0, ins0, err := e.dbCounters(ctx)
	if err != nil {
		return lvl, fmt.Errorf("database counters: %w", err)
	}
	cpu0, busy0 := treeCPU(os.Getpid()), machineCPU()
	start := time.Now()
	ids, err := e.createRuns(ctx, s, lvl.Runs)
	if err != nil {
		return lvl, err
	}

	// Sample memory and connections while every slot is busy.
	sampleCtx, stopSampling := context.WithCancel(ctx)
	samples := make(chan []pssSample, 1)
	conns := 0
	go func() {
		var out []pssSample
		defer func() { samples <- out }()
		for {
			select {
			case <-sampleCtx.Done():
				return
			case <-time.After(500 * time.Millisecond):
			}
			running, _, err := e.runCounts(sampleCtx, ids)
			if err != nil || running < capacity {
				continue
			}
			if p, err := servicePSS(); err == nil {
				out = append(out, p)
			}
			if n, err := e.connections(sampleCtx); err == nil {
				conns = max(conns, n)
			}
		}
	}()
	limit := 2*time.Minute + time.Duration(lvl.Runs)*20*time.Second/time.Duration(capacity)
	err = e.waitDone(ctx, ids, limit)
	wall := time.Since(start)
	cpu1, busy1 := treeCPU(os.Getpid()), machineCPU()
	stopSampling()
	steady := <-samples
	lvl.Connections = conns
	if err != nil {
		return lvl, err
	}
	lvl.TreeCores = (cpu1 - cpu0).Seconds() / wall.Seconds()
	lvl.MachineBusy = busy1.busyShare(busy0)
	lvl.SteadySamples = len(steady)
	if len(steady) > 0 {
		slices.SortFunc(steady, func(a, b pssSample) int { return int(a.total() - b.total()) })
		med := steady[len(steady)/2]
		lvl.SteadyPSS, lvl.ServerPSS, lvl.ChromiumPSS, lvl.PostgresPSS = med.total(), med.server, med.chromium, med.postgres
	}

	rec, err := fetchRecords(ctx, s, ids)
	if err != nil {
		return lvl, err
	}
	lvl.Completed = rec.completed()
	lvl.Wall = rec.drain()
	if lvl.Wall > 0 {
		lvl.RunsPerMinute = float64(len(rec.runs)) / lvl.Wall.Minutes()
	}
	var runTime, wait, stepWall, overhead []time.Duration
	for _, r := range rec.runs {
		if r.GetStartTime() != nil && r.GetEndTime() != nil {
			runTime = append(runTime, r.GetEndTime().AsTime().Sub(r.GetStartTime().AsTime()))
			wait = append(wait, r.GetStartTime().AsTime().Sub(r.GetCreateTime().AsTime()))
		}
	}
	for _, st := range rec.steps {
		if st.GetStartTime() == nil || st.GetEndTime() == nil {
			continue
		}
		d := st.GetEndTime().AsTime().Sub(st.GetStartTime().AsTime())
		stepWall = append(stepWall, d)
		overhead = append(overhead, d-st.GetTimings().GetModel().AsDuration())
	}
	lvl.Steps = len(rec.steps)
	lvl.RunTime, lvl.QueueWait, lvl.StepWall, lvl.StepOverhead = distOf(runTime), distOf(wait), distOf(stepWall), distOf(overhead)

	// Database volume: let the backends flush their statistics first.
	time.Sleep(1500 * time.Millisecond)
	if err := e.addVolume(ctx, res, lsn0, ins0, ids, len(rec.steps)); err != nil {
		return lvl, fmt.Errorf("database volume: %w", err)
	}
	if lvl.Completed < lvl.Runs {
		return lvl, fmt.Errorf("%d of %d runs completed; %s", lvl.Completed, lvl.Runs, rec.firstFailure())
	}
	return lvl, nil
}

// addVolume adds a level's database volume to the capacity inputs (as
// running totals, divided by the steps so far).
func (e *loadEnv) addVolume(ctx context.Context, res *LoadResult, lsn0 string, ins0 int64, ids []string, steps int) error {
	lsn1, ins1, err := e.dbCounters(ctx)
	if err != nil {
		return err
	}
	var wal int64
	if err := e.db.QueryRow(ctx, `SELECT pg_wal_lsn_diff($1::pg_lsn, $2::pg_lsn)::bigint`, lsn1, lsn0).Scan(&wal); err != nil {
		return err
	}
	var media, mediaBytes int64
	if err := e.db.QueryRow(ctx, `SELECT count(*), coalesce(sum(size_bytes), 0) FROM media WHERE run_id = ANY($1::uuid[])`, ids).Scan(&media, &mediaBytes); err != nil {
		return err
	}
	c := &res.Capacity
	prev := float64(c.Steps)
	total := prev + float64(steps)
	if total == 0 {
		return nil
	}
	avg := func(old float64, add float64) float64 { return (old*prev + add) / total }
	c.WALBytesPerStep = avg(c.WALBytesPerStep, float64(wal))
	c.RowsPerStep = avg(c.RowsPerStep, float64(ins1-ins0))
	c.MediaBytesPerStep = avg(c.MediaBytesPerStep, float64(mediaBytes))
	c.MediaPerStep = avg(c.MediaPerStep, float64(media))
	c.Steps += steps
	c.Runs += len(ids)
	return nil
}

// finish fills the capacity inputs that come from the best level.
func (r *LoadResult) finish() {
	for _, l := range r.Levels {
		if l.Err == "" && l.RunsPerMinute*60 > r.Capacity.RunsPerHour {
			r.Capacity.RunsPerHour, r.Capacity.BestCapacity = l.RunsPerMinute*60, l.Capacity
			r.Capacity.MeanRunSeconds = l.RunTime.P50 / 1000
		}
	}
}

// ParseConcurrency parses a comma-separated list of browser capacities
// ("1,2,4").
func ParseConcurrency(list string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 64 {
			return nil, fmt.Errorf("load concurrency %q: want capacities from 1 to 64, comma-separated", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// waitNoChildren waits, up to limit, until this process has no child
// process left.
func waitNoChildren(ctx context.Context, limit time.Duration) {
	deadline := time.Now().Add(limit)
	for len(childrenOf(processes(), os.Getpid())) > 0 && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
}
