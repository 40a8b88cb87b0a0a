package suiterun

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/riverqueue/river"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
	grpccodes "google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/events"
	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/queue"
	"github.com/wayfinder/wayfinder/internal/store"
	"github.com/wayfinder/wayfinder/internal/suite"
	"github.com/wayfinder/wayfinder/internal/tenant"
)

// Config configures a Worker.
type Config struct {
	// Store holds the suite runs, their results and the attempts' runs.
	Store *store.Store
	// Hub wakes an execution when its runs have new events and when its
	// suite run changes (key "suite:<id>": a cancellation). Nil: it polls.
	Hub *events.Hub
	// Logger is the worker's log. Default: none.
	Logger *slog.Logger
	// Tracer traces executions. Default: none.
	Tracer trace.Tracer
	// Metrics counts finished suite runs and decided tests. Nil: none.
	Metrics *Metrics
	// CreateRun creates an attempt's run as the run API does (validation,
	// secrets sealed, the run's job enqueued); ctx carries the suite run's
	// tenant (tenant.From). It must be idempotent by requestID, and refuse
	// params it does not accept with an error of kind
	// fault.ErrInvalidArgument, fault.ErrFailedPrecondition,
	// fault.ErrNotFound or fault.ErrUnimplemented (or the gRPC status of
	// those codes): such a test ends ERROR. Any other error is taken as
	// transient: the execution fails and River retries it. Required.
	CreateRun func(ctx context.Context, params *wfv1.RunParams, requestID string) (*wfv1.Run, error)
	// CancelRun cancels a run of the tenant in ctx, as the run API does.
	// Required.
	CancelRun func(ctx context.Context, runID, reason string) error
	// Models builds the rubric oracles' grading models.
	Models suite.ModelFor
	// Slice is how long one execution works before it snoozes its job to
	// go on in a fresh one. Default 2 minutes. Keep it below the queue's
	// job timeout (queue.Config.MaxRunTimeout): a slice the job timeout
	// cuts short is harmless (it snoozes like a shutdown) but wasteful.
	Slice time.Duration
	// PollInterval is the safety net of the hub's wake-ups: an execution
	// reads its suite run and runs at least this often. Default 1 second.
	PollInterval time.Duration
}

// Worker is the River worker of queue.SuiteRunArgs jobs.
type Worker struct {
	river.WorkerDefaults[queue.SuiteRunArgs]
	cfg Config
}

// New returns a Worker.
func New(cfg Config) *Worker {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Tracer == nil {
		cfg.Tracer = noop.NewTracerProvider().Tracer("")
	}
	if cfg.Slice <= 0 {
		cfg.Slice = 2 * time.Minute
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = time.Second
	}
	return &Worker{cfg: cfg}
}

// cancelledReason is the reason given to the runs a cancelled suite run
// stops, and the message of the tests it skips.
const cancelledReason = "suite run cancelled"

// Work works a suite run for one slice. It returns nil once the suite run
// is final, a snooze (river.JobSnooze(0): not an attempt, so a suite of any
// length never exhausts the job's attempts) when the slice ended or the
// execution was stopped (shutdown) with the suite run still going, and an
// error only when the suite run's records could not be read or written,
// so that River retries the job.
func (w *Worker) Work(ctx context.Context, job *river.Job[queue.SuiteRunArgs]) error {
	id := job.Args.SuiteRunID
	log := w.cfg.Logger.With("suite_run_id", id, "job_id", job.ID)
	ctx, span := w.cfg.Tracer.Start(ctx, "suite_run", trace.WithAttributes(
		attribute.String("wayfinder.suite_run_id", id), attribute.Int("wayfinder.attempt", job.Attempt)))
	defer span.End()

	err := w.work(ctx, id, log)
	var snooze *river.JobSnoozeError
	switch {
	case err == nil, errors.As(err, &snooze):
		return err
	case ctx.Err() != nil:
		// Stopped mid-write (shutdown): what was written stays written,
		// and the next execution goes on from it.
		log.InfoContext(ctx, "suite run execution stopped; it goes on in a new execution", "error", err)
		return river.JobSnooze(0)
	}
	span.RecordError(err)
	span.SetStatus(codes.Error, err.Error())
	return w.failAttempt(context.WithoutCancel(ctx), job, log, err)
}

func (w *Worker) work(ctx context.Context, id string, log *slog.Logger) error {
	bg := context.WithoutCancel(ctx)
	sr, execute, err := w.cfg.Store.StartSuiteRun(bg, id)
	if errors.Is(err, fault.ErrNotFound) {
		log.WarnContext(ctx, "suite run not found; nothing to do")
		return nil
	}
	if err != nil {
		return fmt.Errorf("start suite run: %w", err)
	}
	if !execute {
		log.InfoContext(ctx, "suite run already finished; nothing to do", "status", sr.GetStatus().String())
		return nil
	}
	e, err := w.load(ctx, id, log)
	if err != nil || e == nil {
		return err
	}
	defer e.wake.close()
	return e.run(ctx)
}

// failAttempt logs a failed execution and, when it was the job's last
// attempt, ends the suite run ERROR and stops its runs in flight, so that
// it is not left RUNNING forever.
func (w *Worker) failAttempt(ctx context.Context, job *river.Job[queue.SuiteRunArgs], log *slog.Logger, err error) error {
	log.ErrorContext(ctx, "suite run execution failed", "error", err, "attempt", job.Attempt)
	if job.Attempt < job.MaxAttempts {
		return err
	}
	id := job.Args.SuiteRunID
	if sr, gerr := w.cfg.Store.GetSuiteRun(ctx, id); gerr == nil {
		tctx := tenant.With(ctx, tenant.Caller{Tenant: sr.GetTenantId()})
		for _, r := range sr.GetResults() {
			if a := lastAttempt(r); a != nil && a.EndTime == nil {
				if cerr := w.cfg.CancelRun(tctx, a.RunId, cancelledReason); cerr != nil {
					log.ErrorContext(ctx, "cancelling a run of a failed suite run", "run_id", a.RunId, "error", cerr)
				}
			}
		}
	}
	final, ferr := w.cfg.Store.FinishSuiteRun(ctx, id, wfv1.SuiteRunStatus_SUITE_RUN_STATUS_ERROR,
		"the suite run could not be recorded")
	if ferr != nil {
		log.ErrorContext(ctx, "ending suite run after its last attempt failed", "error", ferr)
	} else if final.GetStatus() == wfv1.SuiteRunStatus_SUITE_RUN_STATUS_ERROR {
		w.cfg.Metrics.observeSuiteRun(final.GetStatus())
	}
	return err
}

// refused reports whether CreateRun's error is a refusal of the params,
// which no retry would change.
func refused(err error) bool {
	for _, kind := range []error{fault.ErrInvalidArgument, fault.ErrFailedPrecondition, fault.ErrNotFound, fault.ErrUnimplemented} {
		if errors.Is(err, kind) {
			return true
		}
	}
	if st, ok := status.FromError(err); ok {
		switch st.Code() {
		case grpccodes.InvalidArgument, grpccodes.FailedPrecondition, grpccodes.NotFound, grpccodes.Unimplemented:
			return true
		}
	}
	return false
}

// isNotFound reports whether err says a run does not exist (gone with
// its tenant).
func isNotFound(err error) bool {
	return errors.Is(err, fault.ErrNotFound) || status.Code(err) == grpccodes.NotFound
}

// refusalMessage is the text of CreateRun's refusal: a status's message
// without its code.
func refusalMessage(err error) string {
	if st, ok := status.FromError(err); ok {
		return st.Message()
	}
	return err.Error()
}
