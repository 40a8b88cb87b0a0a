// Package pool owns Wayfinder's Chromium processes: it launches the system
// Chromium (never a downloaded one), hands out isolated incognito browser
// contexts one per run, watches the browser's health and replaces it when it
// crashes or hangs.
package pool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/go-rod/rod"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/wayfinder/wayfinder/internal/browser"
)

// ErrClosed is returned by Lease after Close.
var ErrClosed = errors.New("browser pool closed")

// Config configures a Pool.
type Config struct {
	// Chromium is the browser binary. Default: found by FindChromium.
	Chromium string
	// Capacity is the number of runs (browser contexts) served at once.
	// Default 2.
	Capacity int
	// WorkDir holds the per-process user-data dirs. Default: os.TempDir().
	WorkDir string
	// HealthInterval is how often the browser is pinged. Default 10s.
	HealthInterval time.Duration
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Registerer receives the pool metrics; nil registers none.
	Registerer prometheus.Registerer
}

// Pool leases isolated browser contexts of a shared Chromium process.
type Pool struct {
	cfg     Config
	slots   chan struct{}
	metrics *metrics

	mu      sync.Mutex
	proc    *process
	browser *rod.Browser
	// stopBrowser ends the rod client of the current browser: rod ties its
	// event loop to the context it connected with.
	stopBrowser context.CancelFunc
	closed      bool
}

// New returns a pool; Start launches its browser.
func New(cfg Config) (*Pool, error) {
	bin, err := FindChromium(cfg.Chromium)
	if err != nil {
		return nil, err
	}
	cfg.Chromium = bin
	if cfg.Capacity < 1 {
		cfg.Capacity = 2
	}
	if cfg.WorkDir == "" {
		cfg.WorkDir = os.TempDir()
	}
	if cfg.HealthInterval <= 0 {
		cfg.HealthInterval = 10 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	p := &Pool{cfg: cfg, slots: make(chan struct{}, cfg.Capacity), metrics: newMetrics(cfg.Registerer)}
	p.metrics.capacity.Set(float64(cfg.Capacity))
	return p, nil
}

// Capacity is the number of contexts the pool serves at once.
func (p *Pool) Capacity() int { return p.cfg.Capacity }

// Start sweeps browser directories left by a killed server and launches a
// warm browser.
func (p *Pool) Start(ctx context.Context) error {
	if err := sweepStale(p.cfg.WorkDir); err != nil {
		return err
	}
	_, err := p.current(ctx)
	return err
}

// Ready reports whether a live browser is running.
func (p *Pool) Ready() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.proc != nil && p.proc.alive()
}

// current returns the live browser, launching a new one when there is none
// or the previous one died.
func (p *Pool) current(ctx context.Context) (*rod.Browser, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, ErrClosed
	}
	if p.proc != nil && p.proc.alive() {
		return p.browser, nil
	}
	if p.proc != nil {
		p.cfg.Logger.WarnContext(ctx, "browser process died; replacing it", "error", p.proc.exitErr)
		p.metrics.restarts.Inc()
		p.dropLocked()
	}
	launchCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	proc, err := launch(launchCtx, p.cfg.Chromium, p.cfg.WorkDir)
	if err != nil {
		return nil, err
	}
	bctx, stop := context.WithCancel(context.Background())
	b := rod.New().Context(bctx).ControlURL(proc.wsURL).NoDefaultDevice()
	if err := b.Connect(); err != nil {
		stop()
		proc.kill()
		return nil, fmt.Errorf("connect to chromium: %w", err)
	}
	p.proc, p.browser, p.stopBrowser = proc, b, stop
	p.cfg.Logger.InfoContext(ctx, "browser started", "pid", proc.cmd.Process.Pid, "binary", p.cfg.Chromium)
	return b, nil
}

// Lease is one run's isolated browser context. Release it when the run ends.
type Lease struct {
	pool    *Pool
	session *browser.Session
	once    sync.Once
}

// Session returns the leased browser context.
func (l *Lease) Session() *browser.Session { return l.session }

// Release closes the context (with a deadline, so a hung browser cannot
// block) and frees the slot.
func (l *Lease) Release() {
	l.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := l.session.Close(ctx); err != nil {
			l.pool.cfg.Logger.Warn("closing browser context failed", "error", err)
		}
		l.pool.metrics.inUse.Dec()
		<-l.pool.slots
	})
}

// Lease waits for a free slot (until ctx is done) and returns a new isolated
// incognito context configured by opts.
func (p *Pool) Lease(ctx context.Context, opts browser.SessionOptions) (*Lease, error) {
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("wait for a browser slot: %w", ctx.Err())
	}
	b, err := p.current(ctx)
	if err == nil {
		var s *browser.Session
		if s, err = browser.NewSession(ctx, b, opts); err == nil {
			p.metrics.inUse.Inc()
			return &Lease{pool: p, session: s}, nil
		}
	}
	<-p.slots
	return nil, fmt.Errorf("lease browser context: %w", err)
}

// Run pings the browser every HealthInterval and replaces it when it does
// not answer, until ctx is done.
func (p *Pool) Run(ctx context.Context) error {
	t := time.NewTicker(p.cfg.HealthInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		p.checkHealth(ctx)
	}
}

func (p *Pool) checkHealth(ctx context.Context) {
	p.mu.Lock()
	proc, b := p.proc, p.browser
	p.mu.Unlock()
	if proc == nil || !proc.alive() {
		if _, err := p.current(ctx); err != nil && !errors.Is(err, ErrClosed) {
			p.cfg.Logger.ErrorContext(ctx, "browser relaunch failed", "error", err)
		}
		return
	}
	pingCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := b.Context(pingCtx).Version(); err != nil && ctx.Err() == nil {
		p.cfg.Logger.WarnContext(ctx, "browser does not answer; killing it", "error", err)
		proc.kill() // the next lease or check launches a replacement
	}
}

// Close kills the browser and refuses further leases.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	p.dropLocked()
}

// dropLocked kills the current browser, if any. p.mu must be held.
func (p *Pool) dropLocked() {
	if p.proc == nil {
		return
	}
	p.stopBrowser()
	p.proc.kill()
	p.proc, p.browser, p.stopBrowser = nil, nil, nil
}

type metrics struct {
	capacity prometheus.Gauge
	inUse    prometheus.Gauge
	restarts prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		capacity: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "wayfinder_pool_capacity", Help: "Browser contexts the pool can serve at once.",
		}),
		inUse: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "wayfinder_pool_in_use", Help: "Browser contexts currently leased to runs.",
		}),
		restarts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "wayfinder_pool_browser_restarts_total", Help: "Browser processes replaced after a crash or hang.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.capacity, m.inUse, m.restarts)
	}
	return m
}
