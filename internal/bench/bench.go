// Package bench measures Wayfinder's page layer (snapshot, actions,
// screenshots, the browser pool) beside Microsoft's Playwright MCP server on
// the same local pages in the same run, and the agent engine's own cost
// (overhead and input tokens per step of the runner loop with a
// zero-latency scripted model), replayed steps beside model-driven ones
// and what a replay saves, and renders it all as Markdown
// (docs/benchmarks.md, written by cmd/wfbench).
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/wayfinder/wayfinder/internal/browser"
	"github.com/wayfinder/wayfinder/internal/pool"
)

// Config configures Run.
type Config struct {
	// Iterations is the number of recorded steps per page and side.
	// Default 15.
	Iterations int
	// Warmup is the number of unrecorded steps before them. Default 2.
	Warmup int
	// LeaseIterations is the number of pool leases timed. Default 30.
	LeaseIterations int
	// Contexts is the number of extra contexts opened to measure the
	// memory of one. Default 4.
	Contexts int
	// Pages is the page set. Default Pages().
	Pages []Page
	// Chromium is the browser both sides use. Default: pool.FindChromium.
	Chromium string
	// Playwright starts the peer; its CLI is required, its Chromium and
	// WorkDir are filled in from this Config.
	Playwright PlaywrightConfig
	// WorkDir holds both sides' browser profiles and outputs. Required.
	WorkDir string
	// Encoding is the tokenizer's encoding. Default DefaultEncoding.
	Encoding string
	// OurTools returns the tool definitions Wayfinder offers a model, as a
	// model API receives them (JSON), and their number. Nil means none
	// exist yet.
	OurTools func() (defs string, count int, err error)
	// EngineRuns is the number of recorded agent runs per page measuring
	// the engine's overhead and tokens per step; negative skips them.
	// Default 3.
	EngineRuns int
	// EngineActions is the number of browser actions of each agent run,
	// before complete_task. Default 8.
	EngineActions int
	// ReplayRuns is the number of strict replays of a recorded run, and of
	// model-driven runs beside them, per page, measuring record and
	// replay (issue 8); negative skips them. Default 3.
	ReplayRuns int
	// Revision names the Wayfinder code measured (a commit). Default:
	// none given.
	Revision string
	// Log receives progress. Default: discarded.
	Log io.Writer
}

// Report is the outcome of Run.
type Report struct {
	// Date is when the run started.
	Date time.Time
	// Duration is how long it took.
	Duration time.Duration
	// Machine describes where it ran.
	Machine Machine
	// Revision names the Wayfinder code measured.
	Revision string
	// Settle is how each side waits after a click: Wayfinder's default
	// quiet period (no network, navigation or DOM change) and Playwright
	// MCP's default settle timeout.
	OursSettle, TheirsSettle time.Duration
	// Tokenizer names the encoding both sides are counted with.
	Tokenizer string
	// Iterations and Warmup are per page and side.
	Iterations, Warmup int
	// Pages holds the per-page comparison, in page order.
	Pages []PageResult
	// Tools compares the tool definitions offered to the model.
	Tools ToolsResult
	// Pool is Wayfinder's lease latency.
	Pool PoolResult
	// Memory compares what an open context costs.
	Memory MemoryResult
	// Startup holds the cold start of each side (one sample each).
	Startup StartupResult
	// Engine is the agent loop's overhead and tokens per step; zero when
	// skipped.
	Engine EngineResult
	// Replay is replayed steps beside model-driven ones, and what a replay
	// saves; zero when skipped.
	Replay ReplayResult
	// Load is the service under load (RunLoad); nil when not measured.
	Load *LoadResult
	// Resilience is the chaos tests' figures (ReadResilience); nil when
	// they have not been written.
	Resilience *Resilience
	// Errors lists failures outside the pages (pool, memory, tools).
	Errors []string
}

// ToolsResult compares tool definitions.
type ToolsResult struct {
	// TheirsCount, TheirsTokens and TheirsChars describe Playwright MCP's
	// tools/list.
	TheirsCount, TheirsTokens, TheirsChars int
	// OursCount and OursTokens describe Wayfinder's; OursNote replaces
	// them when there are none.
	OursCount, OursTokens int
	OursNote              string
}

// PoolResult is Wayfinder's pool lease latency with a warm browser.
type PoolResult struct {
	// Lease is Pool.Lease (a new incognito context) in milliseconds.
	// Release is not timed: the pool closes contexts in the background.
	Lease Summary
}

// MemoryResult compares memory, as proportional set size (PSS) in bytes.
type MemoryResult struct {
	// OursBrowser is Wayfinder's whole browser (every process of it) with
	// the benchmark's one context open on the form page.
	OursBrowser int64
	// OursPerContext is what each of Contexts more contexts, each with a
	// page on the form page, adds to it.
	OursPerContext int64
	Contexts       int
	// TheirsSession is one Playwright MCP session on the form page: the
	// Node.js server and the browser it launched (each session has its own).
	TheirsSession int64
}

// StartupResult is the cold start of each side, one sample each.
type StartupResult struct {
	// OursLaunch is pool.Start (launching Chromium); OursFirstLease the
	// first lease and page after it.
	OursLaunch, OursFirstLease time.Duration
	// TheirsConnect is starting the server and MCP initialize;
	// TheirsFirstNavigate the first navigation, which launches its browser.
	TheirsConnect, TheirsFirstNavigate time.Duration
}

// Failures lists every failure of the run: a side that could not finish a
// page, and errors outside the pages. Pending measurements are not
// failures.
func (r *Report) Failures() []string {
	var out []string
	for _, p := range r.Pages {
		if p.Ours.Err != "" {
			out = append(out, fmt.Sprintf("%s: wayfinder: %s", p.Page.Name, p.Ours.Err))
		}
		if p.Theirs.Err != "" {
			out = append(out, fmt.Sprintf("%s: playwright mcp: %s", p.Page.Name, p.Theirs.Err))
		}
	}
	for _, p := range r.Engine.Pages {
		if p.Err != "" {
			out = append(out, fmt.Sprintf("%s: engine: %s", p.Page.Name, p.Err))
		}
	}
	for _, p := range r.Replay.Pages {
		if p.Err != "" {
			out = append(out, fmt.Sprintf("%s: replay: %s", p.Page.Name, p.Err))
		}
	}
	if r.Load != nil {
		out = append(out, r.Load.Errors...)
	}
	return append(out, r.Errors...)
}

func (c *Config) setDefaults() error {
	if c.Iterations <= 0 {
		c.Iterations = 15
	}
	if c.Warmup < 0 {
		c.Warmup = 0
	} else if c.Warmup == 0 {
		c.Warmup = 2
	}
	if c.LeaseIterations <= 0 {
		c.LeaseIterations = 30
	}
	if c.Contexts <= 0 {
		c.Contexts = 4
	}
	if c.EngineRuns == 0 {
		c.EngineRuns = 3
	}
	if c.ReplayRuns == 0 {
		c.ReplayRuns = 3
	}
	if c.EngineActions <= 0 {
		c.EngineActions = 8
	}
	if c.Pages == nil {
		c.Pages = Pages()
	}
	if c.WorkDir == "" {
		return errors.New("bench: WorkDir is required")
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

// Run measures both sides and returns the report. The error is for a run
// that could not happen at all (no browser, no peer); failures during the
// run are in Report.Failures.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	logf := func(format string, args ...any) { fmt.Fprintf(cfg.Log, "wfbench: "+format+"\n", args...) }
	tok, err := NewTokenizer(cfg.Encoding)
	if err != nil {
		return nil, err
	}
	r := &Report{
		Date: time.Now(), Revision: cfg.Revision, Tokenizer: tok.Name(), Iterations: cfg.Iterations, Warmup: cfg.Warmup,
		OursSettle: browser.DefaultSettleQuiet, TheirsSettle: playwrightSettle,
	}
	defer func() { r.Duration = time.Since(r.Date) }()

	site, err := StartSite()
	if err != nil {
		return nil, err
	}
	defer site.Close()

	// Ours: a pool with room for the benchmark's context, the timed leases
	// and the contexts of the memory measurement.
	logf("starting Wayfinder's pool (%s)", cfg.Chromium)
	start := time.Now()
	// One process hosts them all, and none is recycled during the run, so
	// the memory measurement sees contexts added to one browser.
	capacity := cfg.Contexts + 2
	p, err := pool.New(pool.Config{
		Chromium:           cfg.Chromium,
		Capacity:           capacity,
		ContextsPerProcess: capacity,
		RecycleAfter:       -1,
		MemoryLimit:        -1,
		WorkDir:            filepath.Join(cfg.WorkDir, "pool"),
		HealthInterval:     time.Hour,
		Logger:             slog.New(slog.DiscardHandler),
	})
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(cfg.WorkDir, "pool"), 0o755); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	if err := p.Start(ctx); err != nil {
		return nil, fmt.Errorf("start pool: %w", err)
	}
	defer p.Close()
	r.Startup.OursLaunch = time.Since(start)
	start = time.Now()
	lease, err := p.Lease(ctx, browser.SessionOptions{})
	if err != nil {
		return nil, err
	}
	defer lease.Release()
	page, err := lease.Session().NewPage(ctx, browser.PageOptions{})
	if err != nil {
		return nil, fmt.Errorf("open page: %w", err)
	}
	r.Startup.OursFirstLease = time.Since(start)
	ours := &wayfinderDriver{page: page}

	// Theirs.
	logf("starting Playwright MCP (%s)", cfg.Playwright.CLI)
	pw := cfg.Playwright
	pw.Chromium = cfg.Chromium
	pw.WorkDir = filepath.Join(cfg.WorkDir, "playwright-mcp")
	if err := os.MkdirAll(pw.WorkDir, 0o755); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	start = time.Now()
	peer, err := StartPlaywrightMCP(ctx, pw)
	if err != nil {
		return nil, err
	}
	defer peer.Close()
	r.Startup.TheirsConnect = time.Since(start)
	version := PackageVersion(cfg.Playwright.CLI)
	if v := peer.ServerVersion(); v != "" {
		version += " (server reports Playwright " + v + ")"
	}
	r.Machine = DescribeMachine(ctx, cfg.Chromium, cfg.Playwright.Node, version)
	start = time.Now()
	if _, err := peer.Navigate(ctx, site.URL+"/form.html"); err != nil {
		return nil, fmt.Errorf("first navigation: %w", err)
	}
	r.Startup.TheirsFirstNavigate = time.Since(start)
	theirs := &playwrightDriver{mcp: peer}

	if err := measureTools(ctx, r, peer, tok, cfg.OurTools); err != nil {
		r.Errors = append(r.Errors, err.Error())
	}

	for _, pg := range cfg.Pages {
		logf("page %s: %d warmup + %d measured steps per side", pg.Name, cfg.Warmup, cfg.Iterations)
		res := runPage(ctx, pg, site.URL+pg.Path, ours, theirs, tok, cfg.Warmup, cfg.Iterations)
		r.Pages = append(r.Pages, res)
		for _, side := range []struct {
			name string
			res  SideResult
		}{{"wayfinder", res.Ours}, {"playwright mcp", res.Theirs}} {
			if side.res.Err != "" {
				logf("page %s: %s failed: %s", pg.Name, side.name, side.res.Err)
			}
		}
		if err := ctx.Err(); err != nil {
			return r, nil
		}
	}

	// Memory first: released contexts close in the background, and the
	// leases' would still be closing.
	logf("memory: %d more contexts", cfg.Contexts)
	if err := measureMemory(ctx, r, p, ours, theirs, peer.Pid(), site.URL+"/form.html", cfg.Contexts); err != nil {
		r.Errors = append(r.Errors, err.Error())
	}
	logf("pool: %d leases", cfg.LeaseIterations)
	if err := measureLeases(ctx, r, p, cfg.LeaseIterations); err != nil {
		r.Errors = append(r.Errors, err.Error())
	}
	// The engine last: its runs' contexts would otherwise still be
	// closing during the memory measurement.
	if cfg.EngineRuns > 0 && ctx.Err() == nil {
		r.Engine = measureEngine(ctx, p, site, cfg.Pages, tok, cfg.EngineRuns, cfg.EngineActions, logf)
	}
	if cfg.ReplayRuns > 0 && ctx.Err() == nil {
		r.Replay = measureReplay(ctx, p, site, cfg.Pages, tok, cfg.ReplayRuns, cfg.EngineActions, logf)
	}
	return r, nil
}

// measureTools counts the tool definitions of both sides.
func measureTools(ctx context.Context, r *Report, peer *PlaywrightMCP, tok *Tokenizer, ourTools func() (string, int, error)) error {
	tools, err := peer.Tools(ctx)
	if err != nil {
		return err
	}
	defs, err := ToolDefinitions(tools)
	if err != nil {
		return err
	}
	r.Tools.TheirsCount, r.Tools.TheirsTokens, r.Tools.TheirsChars = len(tools), tok.Count(defs), len([]rune(defs))
	if ourTools == nil {
		r.Tools.OursNote = "not yet defined (issue 4)"
		return nil
	}
	ours, n, err := ourTools()
	if err != nil {
		return fmt.Errorf("wayfinder tool definitions: %w", err)
	}
	r.Tools.OursCount, r.Tools.OursTokens = n, tok.Count(ours)
	return nil
}

// measureLeases times leasing and releasing a context with a warm browser.
func measureLeases(ctx context.Context, r *Report, p *pool.Pool, n int) error {
	var lease []time.Duration
	for range n {
		start := time.Now()
		l, err := p.Lease(ctx, browser.SessionOptions{})
		if err != nil {
			return fmt.Errorf("pool lease: %w", err)
		}
		lease = append(lease, time.Since(start))
		l.Release()
	}
	r.Pool = PoolResult{Lease: SummarizeDurations(lease)}
	return nil
}

// measureMemory measures our browser with its one context, then with
// contexts more, each with a page on url; and the peer's whole session on
// url.
func measureMemory(ctx context.Context, r *Report, p *pool.Pool, ours *wayfinderDriver, theirs *playwrightDriver, peerPid int, url string, contexts int) error {
	if err := theirs.open(ctx, url); err != nil {
		return fmt.Errorf("memory: playwright mcp: %w", err)
	}
	if err := ours.open(ctx, url); err != nil {
		return fmt.Errorf("memory: wayfinder: %w", err)
	}
	theirsPSS, err := treePSS(peerPid)
	if err != nil {
		return fmt.Errorf("memory: playwright mcp: %w", err)
	}
	base, err := browserPSS(peerPid)
	if err != nil {
		return err
	}
	for range contexts {
		l, err := p.Lease(ctx, browser.SessionOptions{})
		if err != nil {
			return fmt.Errorf("memory: lease: %w", err)
		}
		defer l.Release()
		pg, err := l.Session().NewPage(ctx, browser.PageOptions{})
		if err != nil {
			return fmt.Errorf("memory: open page: %w", err)
		}
		if err := pg.Navigate(ctx, url, navigationTimeout); err != nil {
			return fmt.Errorf("memory: %w", err)
		}
	}
	after, err := browserPSS(peerPid)
	if err != nil {
		return err
	}
	r.Memory = MemoryResult{
		OursBrowser:    base,
		OursPerContext: (after - base) / int64(contexts),
		Contexts:       contexts,
		TheirsSession:  theirsPSS,
	}
	return nil
}

// browserPSS is the memory of Wayfinder's browser: every process tree this
// process started, but the peer's.
func browserPSS(peerPid int) (int64, error) {
	var total int64
	kids := childrenOf(processes(), os.Getpid())
	found := false
	for _, pid := range kids {
		if pid == peerPid {
			continue
		}
		n, err := treePSS(pid)
		if err != nil {
			continue // a short-lived child (a version probe) that exited
		}
		total += n
		found = true
	}
	if !found {
		return 0, errors.New("memory: Wayfinder's browser process not found")
	}
	return total, nil
}
