// Package worker executes queued runs: it is the River worker that leases a
// browser context from the pool, hands the run to the runner, and persists
// what the runner reports (steps, screenshots, events, the final status)
// through the store. It is where the engine meets the service: metrics,
// traces and logs of a run are recorded here.
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/browser"
	"github.com/wayfinder/wayfinder/internal/guard"
	"github.com/wayfinder/wayfinder/internal/netguard"
	"github.com/wayfinder/wayfinder/internal/pool"
	"github.com/wayfinder/wayfinder/internal/queue"
	"github.com/wayfinder/wayfinder/internal/runner"
	"github.com/wayfinder/wayfinder/internal/store"
)

// Config configures a Worker.
type Config struct {
	Store  *store.Store
	Pool   *pool.Pool
	Runner *runner.Runner
	// AllowPrivateNetworks lets every run reach private and loopback
	// addresses (WAYFINDER_ALLOW_PRIVATE_NETWORKS).
	AllowPrivateNetworks bool
	Logger               *slog.Logger
	Tracer               trace.Tracer
	Metrics              *Metrics
	// NetMetrics counts the requests the network guard refuses; nil counts
	// none.
	NetMetrics *netguard.Metrics
}

// Worker is the River worker of queue.RunArgs jobs.
type Worker struct {
	river.WorkerDefaults[queue.RunArgs]
	cfg Config
}

// New returns a Worker.
func New(cfg Config) *Worker {
	return &Worker{cfg: cfg}
}

// Timeout is the run's own wall-clock limit.
func (w *Worker) Timeout(job *river.Job[queue.RunArgs]) time.Duration {
	return job.Args.Timeout
}

// Work executes (or resumes) one run. It returns an error only when the
// run's record could not be written, so that River retries the job; every
// outcome of the run itself is recorded as the run's status.
func (w *Worker) Work(ctx context.Context, job *river.Job[queue.RunArgs]) error {
	runID := job.Args.RunID
	log := w.cfg.Logger.With("run_id", runID, "job_id", job.ID, "attempt", job.Attempt)
	bg := context.WithoutCancel(ctx)

	carrier, err := w.cfg.Store.RunTraceContext(bg, runID)
	if err != nil {
		return err
	}
	ctx = propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier(carrier))
	ctx, span := w.cfg.Tracer.Start(ctx, "run", trace.WithAttributes(
		attribute.String("wayfinder.run_id", runID), attribute.Int("wayfinder.attempt", job.Attempt)))
	defer span.End()

	run, execute, err := w.cfg.Store.StartRun(bg, runID)
	if err != nil {
		return w.failAttempt(bg, job, log, fmt.Errorf("start run: %w", err))
	}
	if !execute {
		log.InfoContext(ctx, "run already finished; nothing to do", "status", run.Status.String())
		return nil
	}
	log.InfoContext(ctx, "run started", "start_url", run.Params.GetStartUrl())
	w.cfg.Metrics.started.Inc()
	begin := time.Now()

	final, err := w.execute(ctx, run, log)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		return w.failAttempt(bg, job, log, err)
	}
	if final == nil { // handed back to the queue
		return river.JobSnooze(time.Second)
	}
	span.SetAttributes(attribute.String("wayfinder.status", final.Status.String()))
	if final.Status != wfv1.RunStatus_RUN_STATUS_COMPLETED && final.Error != nil {
		span.SetStatus(codes.Error, final.Error.Message)
	}
	w.cfg.Metrics.observeFinish(final.Status, time.Since(begin))
	log.InfoContext(ctx, "run finished", "status", final.Status.String(), "steps", final.StepCount,
		"duration", time.Since(begin))
	return nil
}

// execute runs the engine and records its outcome. It returns the finished
// run, or nil when the run was handed back to the queue.
func (w *Worker) execute(ctx context.Context, run *wfv1.Run, log *slog.Logger) (*wfv1.Run, error) {
	bg := context.WithoutCancel(ctx)
	params, policy, policyErr := runnerParams(run.Params, w.cfg.AllowPrivateNetworks)
	if policyErr != nil {
		// Validated at CreateRun; reaching here means the server's rules
		// changed since. End the run rather than retry forever.
		return w.cfg.Store.FinishRun(bg, run.Id, store.Outcome{
			Status: wfv1.RunStatus_RUN_STATUS_ERROR,
			Error:  &wfv1.RunError{Category: wfv1.ErrorCategory_ERROR_CATEGORY_DOMAIN_BLOCKED, Message: policyErr.Error()},
		})
	}

	// Every request of the run's context goes through its own proxy, which
	// enforces the domain policy on the addresses it dials.
	blocks := netguard.NewLog(netguard.DefaultMaxBlocks, w.cfg.NetMetrics)
	proxy, err := netguard.Start(netguard.Config{Policy: policy, Log: blocks, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("start network guard: %w", err)
	}
	defer proxy.Close()

	lease, err := w.cfg.Pool.Lease(ctx, browser.SessionOptions{ProxyServer: proxy.URL()})
	if err != nil {
		if ctx.Err() != nil {
			return w.interrupted(ctx, run, log)
		}
		return w.cfg.Store.FinishRun(bg, run.Id, store.Outcome{
			Status: wfv1.RunStatus_RUN_STATUS_ERROR,
			Error:  &wfv1.RunError{Category: wfv1.ErrorCategory_ERROR_CATEGORY_BROWSER_CRASH, Message: err.Error()},
		})
	}
	defer lease.Release()
	network, err := lease.Session().StartNetwork(ctx, browser.NetworkRules{
		// URLs that never reach the proxy (file:) are refused in the browser.
		OnBlock: func(b browser.BlockedRequest) {
			kind := netguard.KindSubresource
			if b.Navigation {
				kind = netguard.KindNavigation
			}
			block := netguard.Block{Kind: kind, URL: b.URL, Reason: guard.ReasonScheme}
			if b.Err != nil {
				block.Host, block.Reason, block.Message = b.Err.Host, b.Err.Reason, b.Err.Error()
			}
			blocks.Record(block)
		},
	})
	if err != nil {
		if ctx.Err() != nil {
			return w.interrupted(ctx, run, log)
		}
		return w.cfg.Store.FinishRun(bg, run.Id, store.Outcome{
			Status: wfv1.RunStatus_RUN_STATUS_ERROR,
			Error:  &wfv1.RunError{Category: wfv1.ErrorCategory_ERROR_CATEGORY_BROWSER_CRASH, Message: err.Error()},
		})
	}
	defer network.Close()

	// The run stops at once when its browser dies, not at its next call.
	runCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	go func() {
		select {
		case <-lease.Done():
			stop(lease.Err())
		case <-runCtx.Done():
		}
	}()

	sink := &sink{store: w.cfg.Store, runID: run.Id, tracer: w.cfg.Tracer, metrics: w.cfg.Metrics, blocks: blocks}
	res, err := w.cfg.Runner.Run(runCtx, lease.Session(), params, sink)
	if err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return w.interrupted(ctx, run, log)
	}
	if cause := context.Cause(runCtx); res.Status == runner.StatusInterrupted && errors.Is(cause, browser.ErrBrowserGone) {
		log.WarnContext(ctx, "browser died under the run", "error", cause)
		return w.cfg.Store.FinishRun(bg, run.Id, store.Outcome{
			Status: wfv1.RunStatus_RUN_STATUS_ERROR,
			Error:  &wfv1.RunError{Category: wfv1.ErrorCategory_ERROR_CATEGORY_BROWSER_CRASH, Message: cause.Error()},
		})
	}
	if res.Status == runner.StatusInterrupted {
		return nil, fmt.Errorf("run interrupted without a cause: %w", context.Cause(runCtx))
	}
	return w.cfg.Store.FinishRun(bg, run.Id, outcome(res))
}

// interrupted decides what an ended job context means: the caller cancelled
// the run, the run hit its timeout, or this worker is shutting down (the run
// goes back to the queue to be resumed).
func (w *Worker) interrupted(ctx context.Context, run *wfv1.Run, log *slog.Logger) (*wfv1.Run, error) {
	bg := context.WithoutCancel(ctx)
	cause := context.Cause(ctx)
	switch {
	case errors.Is(cause, rivertype.ErrJobCancelledRemotely):
		reason, err := w.cfg.Store.CancelReason(bg, run.Id)
		if err != nil {
			return nil, err
		}
		return w.cfg.Store.FinishRun(bg, run.Id, store.Outcome{
			Status: wfv1.RunStatus_RUN_STATUS_CANCELLED,
			Error:  &wfv1.RunError{Category: wfv1.ErrorCategory_ERROR_CATEGORY_CANCELLED, Message: reason},
		})
	case errors.Is(cause, context.DeadlineExceeded):
		return w.cfg.Store.FinishRun(bg, run.Id, store.Outcome{
			Status: wfv1.RunStatus_RUN_STATUS_ERROR,
			Error: &wfv1.RunError{Category: wfv1.ErrorCategory_ERROR_CATEGORY_RUN_TIMEOUT,
				Message: "the run exceeded its run timeout"},
		})
	}
	log.InfoContext(ctx, "worker stopping; handing the run back to the queue", "cause", cause)
	if err := w.cfg.Store.RequeueRun(bg, run.Id, "worker shutting down; the run will resume on another worker"); err != nil {
		return nil, err
	}
	return nil, nil
}

// failAttempt handles an attempt that could not record its run. On the last
// attempt the run is ended as an internal error so it never stays live.
func (w *Worker) failAttempt(ctx context.Context, job *river.Job[queue.RunArgs], log *slog.Logger, err error) error {
	log.ErrorContext(ctx, "run attempt failed", "error", err)
	if job.Attempt >= job.MaxAttempts {
		if _, ferr := w.cfg.Store.FinishRun(ctx, job.Args.RunID, store.Outcome{
			Status: wfv1.RunStatus_RUN_STATUS_ERROR,
			Error:  &wfv1.RunError{Category: wfv1.ErrorCategory_ERROR_CATEGORY_INTERNAL, Message: "the run could not be recorded"},
		}); ferr != nil {
			log.ErrorContext(ctx, "ending run after its last attempt failed", "error", ferr)
		}
	}
	return err
}

// runnerParams translates validated API parameters into the engine's, and
// returns the run's domain policy.
func runnerParams(p *wfv1.RunParams, allowPrivate bool) (runner.Params, *guard.Policy, error) {
	policy, err := guard.New(p.GetAllowedDomains(), p.GetBlockedDomains(), allowPrivate)
	if err != nil {
		return runner.Params{}, nil, err
	}
	b := p.GetBrowser()
	rp := runner.Params{
		Goal:     p.GetGoal(),
		StartURL: p.GetStartUrl(),
		Policy:   policy,
	}
	rp.Page.Width, rp.Page.Height = int(b.GetViewport().GetWidth()), int(b.GetViewport().GetHeight())
	rp.Page.UserAgent, rp.Page.Locale, rp.Page.Timezone = b.GetUserAgent(), b.GetLocale(), b.GetTimezone()
	if d := b.GetNavigationTimeout(); d != nil {
		rp.NavigationTimeout = d.AsDuration()
	}
	return rp, policy, nil
}

var categories = map[runner.Category]wfv1.ErrorCategory{
	runner.CategoryBrowserCrash:      wfv1.ErrorCategory_ERROR_CATEGORY_BROWSER_CRASH,
	runner.CategoryNavigationTimeout: wfv1.ErrorCategory_ERROR_CATEGORY_NAVIGATION_TIMEOUT,
	runner.CategoryNavigationError:   wfv1.ErrorCategory_ERROR_CATEGORY_NAVIGATION_ERROR,
	runner.CategoryDomainBlocked:     wfv1.ErrorCategory_ERROR_CATEGORY_DOMAIN_BLOCKED,
	runner.CategoryInternal:          wfv1.ErrorCategory_ERROR_CATEGORY_INTERNAL,
}

func runError(e *runner.Error) *wfv1.RunError {
	if e == nil {
		return nil
	}
	c, ok := categories[e.Category]
	if !ok {
		c = wfv1.ErrorCategory_ERROR_CATEGORY_INTERNAL
	}
	return &wfv1.RunError{Category: c, Message: e.Message, StepNumber: int32(e.Step)}
}

func outcome(res runner.Result) store.Outcome {
	o := store.Outcome{Status: wfv1.RunStatus_RUN_STATUS_COMPLETED, FinalURL: res.FinalURL, Error: runError(res.Err)}
	if res.Status != runner.StatusCompleted {
		o.Status = wfv1.RunStatus_RUN_STATUS_ERROR
	}
	return o
}
