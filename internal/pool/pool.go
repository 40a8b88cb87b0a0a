// Package pool owns Wayfinder's Chromium processes: it launches the system
// Chromium (never a downloaded one), keeps warm processes ready, hands out
// isolated incognito browser contexts one per run, watches every process's
// health, fails the leases of a browser that crashed or hung, replaces it,
// and recycles processes after a number of runs or above a memory ceiling.
//
// A process is in its own process group with its own user-data dir and
// TMPDIR; killing it kills the group and removes both, and a start sweeps
// what a killed server left behind. Every CDP wait the pool makes has a
// deadline, and a context is closed in the background, so a hung browser
// never blocks a lease.
package pool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/proto"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/wayfinder/wayfinder/internal/browser"
)

// Errors callers branch on.
var (
	// ErrClosed is returned by Lease after Close.
	ErrClosed = errors.New("browser pool closed")
	// ErrReleased is a lease's Err after Release.
	ErrReleased = errors.New("browser lease released")
)

// Restart reasons, the values of the reason label of
// wayfinder_pool_browser_restarts_total.
const (
	reasonCrash         = "crash"
	reasonHang          = "hang"
	reasonRecycleRuns   = "recycle_runs"
	reasonRecycleMemory = "recycle_memory"
)

// Config configures a Pool.
type Config struct {
	// Chromium is the browser binary. Default: found by FindChromium.
	Chromium string
	// Capacity is the number of runs (browser contexts) served at once.
	// Default 2.
	Capacity int
	// ContextsPerProcess is how many contexts one Chromium process hosts at
	// most; the pool keeps ceil(Capacity/ContextsPerProcess) processes warm.
	// Default 4: an idle process holds 170-290 MB (PSS) and a context with a
	// typical page 65-75 MB more, so on a small machine sharing a process
	// beats isolating runs in processes; a crash then fails up to four runs,
	// which the runner recovers from (ProcessPerRun buys isolation).
	ContextsPerProcess int
	// ProcessPerRun gives every lease a fresh process of its own, killed
	// when the lease is released (ContextsPerProcess and RecycleAfter are
	// then 1). Default false.
	ProcessPerRun bool
	// RecycleAfter is how many leases a process serves before it is drained
	// and replaced. Default 100; negative: never.
	RecycleAfter int
	// MemoryLimit drains and replaces a process whose process group holds
	// more than this many bytes (PSS, or RSS where the kernel has no PSS),
	// checked after each release and health check. Default 2 GiB; negative:
	// no limit.
	MemoryLimit int64
	// WorkDir holds the per-process user-data dirs. Default: os.TempDir().
	WorkDir string
	// HealthInterval is how often Run pings every browser. Default 10s.
	HealthInterval time.Duration
	// PingTimeout is how long a browser may take to answer a ping before it
	// is declared hung. Default 5s.
	PingTimeout time.Duration
	// CreateTimeout is how long creating a context may take before the
	// browser is pinged (and, when it does not answer, killed and the lease
	// retried on another). Default 10s.
	CreateTimeout time.Duration
	// CloseTimeout is how long closing a released context may take before
	// the browser is pinged (and killed when it does not answer). Default 5s.
	CloseTimeout time.Duration
	// LaunchTimeout bounds a Chromium start. Default 30s.
	LaunchTimeout time.Duration
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Registerer receives the pool metrics; nil registers none.
	Registerer prometheus.Registerer
}

// Pool leases isolated browser contexts of warm Chromium processes.
type Pool struct {
	cfg Config
	// perProcess and recycleAfter are the effective ContextsPerProcess and
	// RecycleAfter; target is the number of processes kept taking leases.
	perProcess, recycleAfter, target int
	slots                            chan struct{}
	metrics                          *metrics
	hook                             atomic.Pointer[callHook]

	// ctx ends with Close: launches, rod clients and background closes.
	ctx     context.Context
	cancel  context.CancelFunc
	closing chan struct{}
	wg      sync.WaitGroup

	mu       sync.Mutex
	procs    []*process // ready or draining
	starting int        // launches in flight
	// changed is closed (and replaced) whenever a process becomes ready,
	// gets room or dies, or a launch fails: it wakes waiting leases.
	changed        chan struct{}
	launchFailures int
	lastLaunchErr  error
	closed         bool
}

// New returns a pool; Start launches its browsers.
func New(cfg Config) (*Pool, error) {
	bin, err := FindChromium(cfg.Chromium)
	if err != nil {
		return nil, err
	}
	cfg.Chromium = bin
	if cfg.Capacity < 1 {
		cfg.Capacity = 2
	}
	if cfg.ContextsPerProcess < 1 {
		cfg.ContextsPerProcess = 4
	}
	if cfg.RecycleAfter == 0 {
		cfg.RecycleAfter = 100
	}
	if cfg.MemoryLimit == 0 {
		cfg.MemoryLimit = 2 << 30
	}
	if cfg.WorkDir == "" {
		cfg.WorkDir = os.TempDir()
	}
	defaultDuration(&cfg.HealthInterval, 10*time.Second)
	defaultDuration(&cfg.PingTimeout, 5*time.Second)
	defaultDuration(&cfg.CreateTimeout, 10*time.Second)
	defaultDuration(&cfg.CloseTimeout, 5*time.Second)
	defaultDuration(&cfg.LaunchTimeout, 30*time.Second)
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	p := &Pool{
		cfg:          cfg,
		perProcess:   min(cfg.ContextsPerProcess, cfg.Capacity),
		recycleAfter: cfg.RecycleAfter,
		slots:        make(chan struct{}, cfg.Capacity),
		metrics:      newMetrics(cfg.Registerer),
		closing:      make(chan struct{}),
		changed:      make(chan struct{}),
	}
	if cfg.ProcessPerRun {
		p.perProcess, p.recycleAfter = 1, 1
	}
	p.target = (cfg.Capacity + p.perProcess - 1) / p.perProcess
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.metrics.capacity.Set(float64(cfg.Capacity))
	return p, nil
}

func defaultDuration(d *time.Duration, def time.Duration) {
	if *d <= 0 {
		*d = def
	}
}

// Capacity is the number of contexts the pool serves at once.
func (p *Pool) Capacity() int { return p.cfg.Capacity }

// Start sweeps browser directories and processes left by a killed server and
// launches the warm processes, returning when they are ready.
func (p *Pool) Start(ctx context.Context) error {
	if err := os.MkdirAll(p.cfg.WorkDir, 0o700); err != nil {
		return fmt.Errorf("browser work dir: %w", err)
	}
	if err := sweepStale(p.cfg.WorkDir); err != nil {
		return err
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return ErrClosed
	}
	n := max(p.target-p.starting-len(p.procs), 0)
	p.starting += n
	errs := make(chan error, n)
	for range n {
		// Counted in p.wg under p.mu like every launch, so Close waits
		// for it.
		p.wg.Go(func() { errs <- p.launchOne(ctx) })
	}
	p.mu.Unlock()
	var all []error
	for range n {
		all = append(all, <-errs)
	}
	return errors.Join(all...)
}

// Ready reports whether the pool can serve leases: a browser is ready, or
// one is being launched and the last launch did not fail.
func (p *Pool) Ready() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	for _, proc := range p.procs {
		if proc.state == stateReady {
			return true
		}
	}
	return p.starting > 0 && p.lastLaunchErr == nil
}

// launchOne starts a process and adds it to the pool; the caller has
// counted it in p.starting.
func (p *Pool) launchOne(ctx context.Context) error {
	lctx, cancel := context.WithTimeout(ctx, p.cfg.LaunchTimeout)
	defer cancel()
	stop := context.AfterFunc(p.ctx, cancel) // Close ends a launch in flight
	defer stop()
	proc, err := p.startProcess(lctx)

	p.mu.Lock()
	defer p.mu.Unlock()
	p.starting--
	if err != nil {
		p.launchFailures++
		p.lastLaunchErr = err
		p.notifyLocked()
		if !p.closed {
			p.cfg.Logger.Error("chromium launch failed", "error", err)
		}
		return err
	}
	if p.closed {
		p.wg.Go(proc.kill)
		return ErrClosed
	}
	p.lastLaunchErr = nil
	p.procs = append(p.procs, proc)
	p.metrics.processes.Set(float64(len(p.procs)))
	p.notifyLocked()
	p.wg.Go(func() { p.watch(proc) })
	p.cfg.Logger.Info("browser started", "pid", proc.pid(), "binary", p.cfg.Chromium)
	return nil
}

// startProcess launches Chromium and connects to it.
func (p *Pool) startProcess(ctx context.Context) (*process, error) {
	proc, err := launch(ctx, p.cfg.Chromium, p.cfg.WorkDir)
	if err != nil {
		return nil, err
	}
	client, err := dial(ctx, proc.wsURL, func() callHook {
		if h := p.hook.Load(); h != nil {
			return *h
		}
		return nil
	})
	if err != nil {
		proc.kill()
		return nil, err
	}
	proc.client = client
	bctx, stop := context.WithCancel(p.ctx)
	proc.stopBrowser = stop
	// rod ties its event loop to the context it connects with, and its
	// calls to the context they are made with (callers set it per call).
	b := rod.New().Context(bctx).Client(client).NoDefaultDevice()
	connected := make(chan error, 1)
	go func() { connected <- b.Connect() }()
	select {
	case err = <-connected:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		proc.kill()
		return nil, fmt.Errorf("connect to chromium: %w", err)
	}
	proc.browser = b
	proc.leases = map[*Lease]struct{}{}
	return proc, nil
}

// watch fails proc's leases as soon as the process exits or its DevTools
// connection drops.
func (p *Pool) watch(proc *process) {
	select {
	case <-proc.exited:
		p.fail(proc, reasonCrash, fmt.Errorf("%w: chromium (pid %d) exited: %v", browser.ErrBrowserGone, proc.pid(), proc.exitErr))
	case <-proc.client.disconnected:
		p.fail(proc, reasonCrash, fmt.Errorf("%w: chromium (pid %d) closed its DevTools connection", browser.ErrBrowserGone, proc.pid()))
	}
}

// fail kills a process that crashed or hung, fails its leases with cause
// and launches a replacement. It does nothing for a process already dead
// (killed on purpose, or failed before).
func (p *Pool) fail(proc *process, reason string, cause error) {
	p.mu.Lock()
	if proc.state == stateDead {
		p.mu.Unlock()
		return
	}
	leases := make([]*Lease, 0, len(proc.leases))
	for l := range proc.leases {
		leases = append(leases, l)
	}
	p.removeLocked(proc)
	p.metrics.restarts.WithLabelValues(reason).Inc()
	p.ensureLocked()
	p.mu.Unlock()
	p.cfg.Logger.Warn("browser failed; replacing it", "pid", proc.pid(), "reason", reason, "leases", len(leases), "error", cause)
	for _, l := range leases {
		l.fail(cause)
	}
}

// drain stops new leases on a process (it is killed when its last lease is
// released) and launches its replacement.
func (p *Pool) drain(proc *process, reason string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.drainLocked(proc, reason)
}

func (p *Pool) drainLocked(proc *process, reason string) {
	if proc.state != stateReady {
		return
	}
	proc.state = stateDraining
	p.metrics.restarts.WithLabelValues(reason).Inc()
	p.cfg.Logger.Info("recycling browser", "pid", proc.pid(), "reason", reason, "runs", proc.runs,
		"open_leases", proc.active, "pss_bytes", proc.memory.PSS)
	if proc.active == 0 {
		p.removeLocked(proc)
	}
	p.ensureLocked()
}

// removeLocked marks proc dead, takes it out of the pool and kills it in
// the background. p.mu must be held.
func (p *Pool) removeLocked(proc *process) {
	proc.state = stateDead
	for i, q := range p.procs {
		if q == proc {
			p.procs = append(p.procs[:i], p.procs[i+1:]...)
			break
		}
	}
	p.metrics.processes.Set(float64(len(p.procs)))
	p.updateMemoryLocked()
	p.notifyLocked()
	p.wg.Go(proc.kill)
}

// ensureLocked launches processes until target of them take leases (or are
// starting). p.mu must be held.
func (p *Pool) ensureLocked() {
	if p.closed {
		return
	}
	serving := p.starting
	for _, proc := range p.procs {
		if proc.state == stateReady {
			serving++
		}
	}
	for ; serving < p.target; serving++ {
		p.starting++
		p.wg.Go(func() { _ = p.launchOne(p.ctx) })
	}
}

func (p *Pool) notifyLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// Lease waits for a free slot (until ctx is done) and returns a new isolated
// incognito context configured by opts, on the least busy ready process. A
// process that dies while the context is created is replaced and the lease
// retried on another.
func (p *Pool) Lease(ctx context.Context, opts browser.SessionOptions) (*Lease, error) {
	begin := time.Now()
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("wait for a browser slot: %w", ctx.Err())
	case <-p.closing:
		return nil, ErrClosed
	}
	for attempt := 1; ; attempt++ {
		proc, err := p.reserve(ctx)
		if err != nil {
			<-p.slots
			return nil, err
		}
		l, err := p.open(ctx, proc, opts)
		if err == nil {
			p.metrics.inUse.Inc()
			p.metrics.leaseWait.Observe(time.Since(begin).Seconds())
			return l, nil
		}
		p.unreserve(proc)
		if !errors.Is(err, browser.ErrBrowserGone) || attempt == 3 || ctx.Err() != nil {
			<-p.slots
			return nil, fmt.Errorf("lease browser context: %w", err)
		}
		p.cfg.Logger.Warn("browser died while creating a context; retrying on another", "error", err)
	}
}

// reserve waits for a ready process with room and counts a lease on it.
func (p *Pool) reserve(ctx context.Context) (*process, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	failures := p.launchFailures
	for {
		if p.closed {
			return nil, ErrClosed
		}
		if proc := p.pickLocked(); proc != nil {
			proc.active++
			proc.runs++
			if p.recycleAfter > 0 && proc.runs >= p.recycleAfter {
				p.drainLocked(proc, reasonRecycleRuns)
			}
			return proc, nil
		}
		if p.launchFailures != failures && p.starting == 0 {
			return nil, fmt.Errorf("lease browser context: %w", p.lastLaunchErr)
		}
		p.ensureLocked()
		wait := p.changed
		p.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			p.mu.Lock()
			return nil, fmt.Errorf("wait for a browser: %w", ctx.Err())
		}
		p.mu.Lock()
	}
}

// pickLocked returns the ready process with the fewest open leases, if one
// has room: runs spread over the warm processes, so a crash fails as few
// as possible.
func (p *Pool) pickLocked() *process {
	var best *process
	for _, proc := range p.procs {
		if proc.state == stateReady && proc.active < p.perProcess && (best == nil || proc.active < best.active) {
			best = proc
		}
	}
	return best
}

// unreserve undoes reserve after the context could not be created.
func (p *Pool) unreserve(proc *process) {
	p.mu.Lock()
	defer p.mu.Unlock()
	proc.active--
	if proc.state == stateDraining && proc.active == 0 {
		p.removeLocked(proc)
	}
	p.notifyLocked()
}

// open creates the lease's browser context on proc, within CreateTimeout:
// a browser that takes longer and does not answer a ping is hung.
func (p *Pool) open(ctx context.Context, proc *process, opts browser.SessionOptions) (*Lease, error) {
	var id proto.BrowserBrowserContextID
	cctx, cancel := context.WithTimeout(ctx, p.cfg.CreateTimeout)
	defer cancel()
	s, err := browser.NewSession(context.WithValue(cctx, contextIDKey{}, &id), proc.browser, opts)
	if err != nil {
		if cctx.Err() != nil && ctx.Err() == nil {
			if perr := p.ping(proc); perr != nil {
				err = fmt.Errorf("%w: chromium (pid %d) does not answer after %s creating a context: %w",
					browser.ErrBrowserGone, proc.pid(), p.cfg.CreateTimeout, perr)
				p.fail(proc, reasonHang, err)
			}
		}
		return nil, err
	}
	l := &Lease{pool: p, proc: proc, session: s, contextID: id, done: make(chan struct{})}
	p.mu.Lock()
	defer p.mu.Unlock()
	if proc.state == stateDead {
		return nil, fmt.Errorf("%w: chromium (pid %d) died while the context was created", browser.ErrBrowserGone, proc.pid())
	}
	proc.leases[l] = struct{}{}
	return l, nil
}

// release ends l's hold on its process: the context is closed in the
// background (so a hung close blocks nobody), or the process killed when it
// was draining and this was its last lease.
func (p *Pool) release(l *Lease) {
	proc := l.proc
	p.mu.Lock()
	proc.active--
	delete(proc.leases, l)
	switch {
	case proc.state == stateDead:
	case proc.state == stateDraining && proc.active == 0:
		p.removeLocked(proc)
	default:
		p.wg.Go(func() { p.closeContext(proc, l) })
		p.notifyLocked()
	}
	p.mu.Unlock()
	p.metrics.inUse.Dec()
	<-p.slots
}

// closeContext disposes of a released context within CloseTimeout. When the
// close does not finish in time, the browser is pinged: one that does not
// answer is hung and killed; one that does is drained, since a context it
// cannot close would hold its memory.
func (p *Pool) closeContext(proc *process, l *Lease) {
	ctx, cancel := context.WithTimeout(p.ctx, p.cfg.CloseTimeout)
	defer cancel()
	err := within(ctx, l.session.Close)
	switch {
	case err == nil:
		p.checkMemory(proc)
		return
	case p.ctx.Err() != nil, errors.Is(err, browser.ErrBrowserGone):
		return // closing, or the watcher fails the process
	}
	if perr := p.ping(proc); perr != nil {
		p.fail(proc, reasonHang, fmt.Errorf("%w: chromium (pid %d) does not answer after a context close failed (%v): %v",
			browser.ErrBrowserGone, proc.pid(), err, perr))
		return
	}
	p.cfg.Logger.Warn("closing a browser context failed; recycling its browser", "pid", proc.pid(), "error", err)
	p.drain(proc, reasonHang)
}

// within runs f with ctx and returns when f does or ctx ends, whichever is
// first, so a call that ignores its context cannot hold the caller.
func within(ctx context.Context, f func(context.Context) error) error {
	done := make(chan error, 1)
	go func() { done <- f(ctx) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ping asks the browser for its version within PingTimeout.
func (p *Pool) ping(proc *process) error {
	ctx, cancel := context.WithTimeout(p.ctx, p.cfg.PingTimeout)
	defer cancel()
	return within(ctx, func(ctx context.Context) error {
		_, err := proto.BrowserGetVersion{}.Call(proc.browser.Context(ctx))
		return err
	})
}

// checkMemory measures proc's process group and drains it above the limit.
func (p *Pool) checkMemory(proc *process) {
	m := measureGroup(proc.pid())
	p.mu.Lock()
	defer p.mu.Unlock()
	if proc.state == stateDead {
		return
	}
	proc.memory = m
	p.updateMemoryLocked()
	used := m.PSS
	if used == 0 {
		used = m.RSS
	}
	if p.cfg.MemoryLimit > 0 && used > p.cfg.MemoryLimit {
		p.drainLocked(proc, reasonRecycleMemory)
	}
}

func (p *Pool) updateMemoryLocked() {
	var rss, pss int64
	for _, proc := range p.procs {
		rss += proc.memory.RSS
		pss += proc.memory.PSS
	}
	p.metrics.rss.Set(float64(rss))
	p.metrics.pss.Set(float64(pss))
}

// Run checks every process each HealthInterval until ctx is done: one that
// does not answer a ping within PingTimeout is hung, so its leases fail and
// it is replaced; one above MemoryLimit is recycled; missing processes (a
// failed launch) are launched again.
func (p *Pool) Run(ctx context.Context) error {
	t := time.NewTicker(p.cfg.HealthInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-p.closing:
			return nil
		case <-t.C:
		}
		p.checkHealth()
	}
}

func (p *Pool) checkHealth() {
	p.mu.Lock()
	procs := append([]*process(nil), p.procs...)
	p.ensureLocked()
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, proc := range procs {
		wg.Go(func() {
			if err := p.ping(proc); err != nil {
				if p.ctx.Err() == nil {
					p.fail(proc, reasonHang, fmt.Errorf("%w: chromium (pid %d) does not answer: %w", browser.ErrBrowserGone, proc.pid(), err))
				}
				return
			}
			p.checkMemory(proc)
		})
	}
	wg.Wait()
}

// Close fails every open lease, kills every process (reaping it and
// removing its directories) and refuses further leases. It returns when no
// process and no background work of the pool remains.
func (p *Pool) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.wg.Wait()
		return
	}
	p.closed = true
	close(p.closing)
	var leases []*Lease
	for _, proc := range append([]*process(nil), p.procs...) {
		for l := range proc.leases {
			leases = append(leases, l)
		}
		p.removeLocked(proc)
	}
	p.mu.Unlock()
	p.cancel()
	for _, l := range leases {
		l.fail(fmt.Errorf("%w: %w", browser.ErrBrowserGone, ErrClosed))
	}
	p.wg.Wait()
}
