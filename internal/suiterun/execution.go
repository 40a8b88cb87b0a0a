package suiterun

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/riverqueue/river"
	"google.golang.org/protobuf/types/known/timestamppb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/store"
	"github.com/wayfinder/wayfinder/internal/suite"
	"github.com/wayfinder/wayfinder/internal/tenant"
)

const (
	// defaultConcurrency is a suite's concurrency when it sets none.
	defaultConcurrency = 4
	// maxConcurrency bounds a suite's concurrency whatever it says.
	maxConcurrency = 64
)

// execution is one slice of a suite run's execution. Its state is what the
// database holds (the results, read when the slice begins) plus the wake-up
// subscriptions; the execution is the only writer of the results while the
// suite run is RUNNING.
type execution struct {
	w       *Worker
	id      string
	spec    *store.SuiteRunSpec
	results []*wfv1.TestResult
	limit   int
	// running maps the position of each test with an attempt in flight
	// to that attempt's run ID.
	running    map[int]string
	cancelling bool
	wake       *waker
	log        *slog.Logger
}

// load reads the suite run's snapshot and results. It returns nil (and
// nil) when the suite run cannot be executed and was ended ERROR.
func (w *Worker) load(ctx context.Context, id string, log *slog.Logger) (*execution, error) {
	spec, err := w.cfg.Store.SuiteRunSpec(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("read suite run snapshot: %w", err)
	}
	sr, err := w.cfg.Store.GetSuiteRun(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("read suite run: %w", err)
	}
	if len(sr.GetResults()) != len(spec.Tests) {
		// Written together by CreateSuiteRun; never expected.
		msg := fmt.Sprintf("the suite run has %d results for %d tests", len(sr.GetResults()), len(spec.Tests))
		log.ErrorContext(ctx, "suite run is inconsistent", "error", msg)
		final, err := w.cfg.Store.FinishSuiteRun(context.WithoutCancel(ctx), id, wfv1.SuiteRunStatus_SUITE_RUN_STATUS_ERROR, msg)
		if err != nil {
			return nil, fmt.Errorf("finish suite run: %w", err)
		}
		w.cfg.Metrics.observeSuiteRun(final.GetStatus())
		return nil, nil
	}
	limit := int(spec.Suite.GetConcurrency())
	if limit <= 0 {
		limit = defaultConcurrency
	}
	e := &execution{
		w: w, id: id, spec: spec, results: sr.GetResults(), limit: min(limit, maxConcurrency),
		running: map[int]string{}, wake: newWaker(w.cfg.Hub), log: log,
	}
	e.wake.watch(store.SuiteRunKey(id))
	for pos, r := range e.results {
		if a := lastAttempt(r); a != nil && !decided(r) && a.EndTime == nil {
			e.running[pos] = a.RunId
			e.wake.watch(a.RunId)
		}
	}
	log.InfoContext(ctx, "suite run execution started", "tests", len(e.results), "in_flight", len(e.running))
	return e, nil
}

// run works the suite run until it is final or the slice ends.
func (e *execution) run(ctx context.Context) error {
	cfg := &e.w.cfg
	deadline := time.Now().Add(cfg.Slice)
	sliceEnd := time.NewTimer(cfg.Slice)
	defer sliceEnd.Stop()
	poll := time.NewTicker(cfg.PollInterval)
	defer poll.Stop()
	all := true // read everything: the first pass, and each poll
	for {
		if ctx.Err() != nil {
			e.log.InfoContext(ctx, "suite run execution stopped; it goes on in a new execution")
			return river.JobSnooze(0)
		}
		dirty := e.wake.take()
		if all || dirty[store.SuiteRunKey(e.id)] {
			sr, err := cfg.Store.GetSuiteRun(ctx, e.id)
			if err != nil {
				return fmt.Errorf("read suite run: %w", err)
			}
			if store.SuiteRunFinal(sr.GetStatus()) {
				return nil
			}
			if sr.GetCancelRequested() && !e.cancelling {
				if err := e.cancel(ctx); err != nil {
					return err
				}
			}
		}
		if err := e.settle(ctx, dirty, all); err != nil {
			return err
		}
		if err := e.fill(ctx); err != nil {
			return err
		}
		if len(e.running) == 0 && !slices.ContainsFunc(e.results, func(r *wfv1.TestResult) bool { return !decided(r) }) {
			return e.end(ctx)
		}
		if !time.Now().Before(deadline) {
			e.log.InfoContext(ctx, "suite run slice ended; it goes on in a new execution", "in_flight", len(e.running))
			return river.JobSnooze(0)
		}
		all = false
		select {
		case <-ctx.Done():
		case <-sliceEnd.C:
		case <-poll.C:
			all = true
		case <-e.wake.signal:
		}
	}
}

// cancel stops the runs in flight; from now on no attempt starts.
func (e *execution) cancel(ctx context.Context) error {
	e.cancelling = true
	e.log.InfoContext(ctx, "suite run cancel requested; stopping its runs", "in_flight", len(e.running))
	tctx := e.tenantCtx(ctx)
	for _, pos := range slices.Sorted(maps.Keys(e.running)) {
		runID := e.running[pos]
		err := e.w.cfg.CancelRun(tctx, runID, cancelledReason)
		if err != nil && !isNotFound(err) {
			return fmt.Errorf("cancel run %s of test %q: %w", runID, e.spec.Tests[pos].GetName(), err)
		}
	}
	return nil
}

// settle records the attempts whose runs ended: those that woke (dirty),
// or all of them.
func (e *execution) settle(ctx context.Context, dirty map[string]bool, all bool) error {
	for _, pos := range slices.Sorted(maps.Keys(e.running)) {
		runID := e.running[pos]
		if !all && !dirty[runID] {
			continue
		}
		run, err := e.w.cfg.Store.GetRun(ctx, runID)
		if errors.Is(err, fault.ErrNotFound) {
			// Gone with its tenant; nothing to judge.
			run = &wfv1.Run{Id: runID, Status: wfv1.RunStatus_RUN_STATUS_ERROR,
				Error: &wfv1.RunError{Category: wfv1.ErrorCategory_ERROR_CATEGORY_INTERNAL, Message: "the run no longer exists"}}
		} else if err != nil {
			return fmt.Errorf("read run %s: %w", runID, err)
		}
		if !store.IsTerminal(run.GetStatus()) {
			continue
		}
		if err := e.finish(ctx, pos, run); err != nil {
			return err
		}
	}
	return nil
}

// fill starts attempts, in the suite's order, while fewer than the
// suite's concurrency are in flight; once cancelling, it ends instead
// every test not decided and not in flight (cancelledOutcome).
func (e *execution) fill(ctx context.Context) error {
	for pos, r := range e.results {
		if _, inFlight := e.running[pos]; inFlight || decided(r) {
			continue
		}
		t := e.spec.Tests[pos]
		switch {
		case e.cancelling:
			outcome, msg := cancelledOutcome(r)
			if err := e.decide(ctx, pos, outcome, msg); err != nil {
				return err
			}
		case len(r.GetAttempts()) > int(t.GetRetries()):
			// Its last attempt's failure was recorded but not the outcome
			// (not written so by this package; kept for safety).
			if err := e.decide(ctx, pos, wfv1.TestOutcome_TEST_OUTCOME_FAILED, lastAttempt(r).GetMessage()); err != nil {
				return err
			}
		case len(e.running) < e.limit:
			if err := e.start(ctx, pos); err != nil {
				return err
			}
		}
	}
	return nil
}

// start creates the next attempt's run of the test at pos and records it.
func (e *execution) start(ctx context.Context, pos int) error {
	r, t := e.results[pos], e.spec.Tests[pos]
	n := len(r.GetAttempts()) + 1
	log := e.log.With("test", t.GetName(), "attempt", n)
	params := suite.AttemptParams(t, e.spec.Suite)
	if params.Labels == nil {
		params.Labels = map[string]string{}
	}
	params.Labels[suite.LabelSuiteRun] = e.id
	params.Labels[suite.LabelTest] = t.GetName()
	requestID := "suite:" + e.id + ":" + strconv.Itoa(pos) + ":" + strconv.Itoa(n)
	run, err := e.w.cfg.CreateRun(e.tenantCtx(ctx), params, requestID)
	if err != nil {
		if refused(err) {
			log.WarnContext(ctx, "test's run refused", "error", err)
			return e.decide(ctx, pos, wfv1.TestOutcome_TEST_OUTCOME_ERROR, "the test's run was refused: "+refusalMessage(err))
		}
		return fmt.Errorf("create run of test %q attempt %d: %w", t.GetName(), n, err)
	}
	if run.GetParams().GetLabels()[suite.LabelSuiteRun] != e.id {
		// The tenant made a run with this request ID itself.
		return e.decide(ctx, pos, wfv1.TestOutcome_TEST_OUTCOME_ERROR,
			fmt.Sprintf("request ID %q names a run not made by this suite run", requestID))
	}
	r.Attempts = append(r.Attempts, &wfv1.TestAttempt{Number: int32(n), RunId: run.GetId(), RunStatus: run.GetStatus(),
		StartTime: run.GetCreateTime()})
	r.Outcome = wfv1.TestOutcome_TEST_OUTCOME_RUNNING
	r.PassThreshold = suite.PassThreshold(t)
	if r.StartTime == nil {
		r.StartTime = run.GetCreateTime()
	}
	if err := e.put(ctx, pos); err != nil {
		return err
	}
	e.running[pos] = run.GetId()
	e.wake.watch(run.GetId())
	log.InfoContext(ctx, "test attempt started", "run_id", run.GetId())
	return nil
}

// finish records the attempt of the test at pos whose run ended, and the
// test's outcome when that attempt decides it.
func (e *execution) finish(ctx context.Context, pos int, run *wfv1.Run) error {
	r, t := e.results[pos], e.spec.Tests[pos]
	a := lastAttempt(r)
	log := e.log.With("test", t.GetName(), "attempt", a.GetNumber(), "run_id", run.GetId())
	a.RunStatus = run.GetStatus()
	a.FinalUrl = run.GetFinalUrl()
	a.StepCount = run.GetStepCount()
	a.FinalScreenshotMediaId = run.GetFinalScreenshotMediaId()
	a.TimedOut = run.GetStatus() == wfv1.RunStatus_RUN_STATUS_ERROR &&
		run.GetError().GetCategory() == wfv1.ErrorCategory_ERROR_CATEGORY_RUN_TIMEOUT
	a.EndTime = run.GetEndTime()
	if a.EndTime == nil {
		a.EndTime = timestamppb.Now()
	}
	if e.cancelling && run.GetStatus() == wfv1.RunStatus_RUN_STATUS_CANCELLED {
		// Interrupted: there is nothing to judge.
		a.Passed, a.Score, a.Oracles = false, 0, nil
		a.Message = "the run was cancelled with the suite run"
		log.InfoContext(ctx, "test attempt cancelled with the suite run")
		return e.conclude(ctx, pos, wfv1.TestOutcome_TEST_OUTCOME_FAILED,
			fmt.Sprintf("%s during attempt %d", cancelledReason, a.GetNumber()))
	}
	v, err := e.evaluate(ctx, t, run)
	if err != nil {
		return err
	}
	a.Passed, a.Score, a.Oracles, a.Message = v.Passed, v.Score, v.Oracles, v.Message
	switch {
	case a.Passed:
		a.Message = ""
	case a.TimedOut:
		a.Message = joinMessage(timedOutMessage(run), a.Message)
	}
	r.Score = a.Score
	log.InfoContext(ctx, "test attempt finished", "passed", a.Passed, "score", a.Score, "run_status", run.GetStatus().String(),
		"timed_out", a.TimedOut)
	switch {
	case a.Passed && a.Number == 1:
		return e.conclude(ctx, pos, wfv1.TestOutcome_TEST_OUTCOME_PASSED, "")
	case a.Passed:
		return e.conclude(ctx, pos, wfv1.TestOutcome_TEST_OUTCOME_FLAKY, "")
	case int(a.Number) > int(t.GetRetries()):
		return e.conclude(ctx, pos, wfv1.TestOutcome_TEST_OUTCOME_FAILED, a.Message)
	case e.cancelling:
		outcome, msg := cancelledOutcome(r)
		return e.conclude(ctx, pos, outcome, msg)
	}
	// A retry follows (fill starts it when a slot is free).
	r.Message = a.Message
	delete(e.running, pos)
	e.wake.unwatch(run.GetId())
	return e.put(ctx, pos)
}

// conclude ends the test at pos with its in-flight attempt just recorded.
func (e *execution) conclude(ctx context.Context, pos int, outcome wfv1.TestOutcome, msg string) error {
	if runID, ok := e.running[pos]; ok {
		delete(e.running, pos)
		e.wake.unwatch(runID)
	}
	return e.decide(ctx, pos, outcome, msg)
}

// decide writes the test's final outcome.
func (e *execution) decide(ctx context.Context, pos int, outcome wfv1.TestOutcome, msg string) error {
	r := e.results[pos]
	r.Outcome = outcome
	r.Message = msg
	r.EndTime = timestamppb.Now()
	if r.PassThreshold == 0 {
		r.PassThreshold = suite.PassThreshold(e.spec.Tests[pos])
	}
	if err := e.put(ctx, pos); err != nil {
		return err
	}
	e.w.cfg.Metrics.observeTest(outcome)
	e.log.InfoContext(ctx, "test decided", "test", r.GetTest(), "outcome", outcome.String(), "attempts", len(r.GetAttempts()))
	return nil
}

// put writes the test's result. The write outlives ctx: a result is
// written whole or not at all, never abandoned halfway by a shutdown.
func (e *execution) put(ctx context.Context, pos int) error {
	if err := e.w.cfg.Store.PutTestResult(context.WithoutCancel(ctx), e.id, pos, e.results[pos]); err != nil {
		return fmt.Errorf("write result of test %q: %w", e.results[pos].GetTest(), err)
	}
	return nil
}

// end finishes the suite run: CANCELLED once cancelling, else PASSED when
// every test passed (FLAKY counts), else FAILED.
func (e *execution) end(ctx context.Context) error {
	st := wfv1.SuiteRunStatus_SUITE_RUN_STATUS_PASSED
	for _, r := range e.results {
		if o := r.GetOutcome(); o != wfv1.TestOutcome_TEST_OUTCOME_PASSED && o != wfv1.TestOutcome_TEST_OUTCOME_FLAKY {
			st = wfv1.SuiteRunStatus_SUITE_RUN_STATUS_FAILED
		}
	}
	if e.cancelling {
		st = wfv1.SuiteRunStatus_SUITE_RUN_STATUS_CANCELLED
	}
	final, err := e.w.cfg.Store.FinishSuiteRun(context.WithoutCancel(ctx), e.id, st, "")
	if err != nil {
		return fmt.Errorf("finish suite run: %w", err)
	}
	e.w.cfg.Metrics.observeSuiteRun(final.GetStatus())
	e.log.InfoContext(ctx, "suite run finished", "status", final.GetStatus().String())
	return nil
}

// evaluate judges a finished run with the test's oracles. Store errors are
// returned (transient); an error of the evaluation itself fails the
// attempt with that error as its message.
func (e *execution) evaluate(ctx context.Context, t *wfv1.Test, run *wfv1.Run) (suite.Verdict, error) {
	ev, err := e.evidence(ctx, t, run)
	if err != nil {
		return suite.Verdict{}, err
	}
	// The grading model is built as the suite run's tenant: a rubric
	// oracle's api_key_credential is that tenant's credential.
	v, err := suite.Evaluate(e.tenantCtx(ctx), t, ev, e.w.cfg.Models)
	if ctx.Err() != nil {
		// Stopped (shutdown) mid-judgement: a model call cut short is no
		// verdict; the next execution judges again.
		return suite.Verdict{}, ctx.Err()
	}
	if err != nil {
		return suite.Verdict{Message: "the attempt could not be judged: " + err.Error()}, nil
	}
	return v, nil
}

// evidence reads what t's oracles judge of a finished run: the run, and
// only when a rubric oracle reads them (suite.NeedsEvidence), its last
// suite.EvidenceSteps steps and its final screenshot. A run's record can
// be large (up to 500 steps, extract rows, complete_task data): it is
// never read whole.
func (e *execution) evidence(ctx context.Context, t *wfv1.Test, run *wfv1.Run) (suite.Evidence, error) {
	ev := suite.Evidence{Run: run}
	if !suite.NeedsEvidence(t) {
		return ev, nil
	}
	if n := run.GetStepCount(); n > 0 {
		// Steps are numbered 1…step_count.
		after := max(0, n-suite.EvidenceSteps)
		steps, err := e.w.cfg.Store.ListSteps(ctx, run.GetId(), after, suite.EvidenceSteps)
		if err != nil {
			return ev, fmt.Errorf("read steps of run %s: %w", run.GetId(), err)
		}
		ev.Steps = steps
	}
	if id := run.GetFinalScreenshotMediaId(); id != "" {
		m, err := e.w.cfg.Store.GetMedia(ctx, id)
		switch {
		case err == nil:
			ev.Screenshot = m.Data
		case !errors.Is(err, fault.ErrNotFound):
			return ev, fmt.Errorf("read final screenshot of run %s: %w", run.GetId(), err)
		}
	}
	return ev, nil
}

// tenantCtx is ctx acting as the suite run's tenant.
func (e *execution) tenantCtx(ctx context.Context) context.Context {
	return tenant.With(ctx, tenant.Caller{Tenant: e.spec.Tenant})
}

// cancelledOutcome is the outcome of a test whose suite run was cancelled
// before the test was decided: SKIPPED when it never ran ("not run"),
// else FAILED, since every attempt it made failed; the message says that
// the cancellation cut its retries short.
func cancelledOutcome(r *wfv1.TestResult) (wfv1.TestOutcome, string) {
	a := lastAttempt(r)
	if a == nil {
		return wfv1.TestOutcome_TEST_OUTCOME_SKIPPED, cancelledReason
	}
	return wfv1.TestOutcome_TEST_OUTCOME_FAILED,
		joinMessage(fmt.Sprintf("%s before attempt %d", cancelledReason, a.GetNumber()+1), a.GetMessage())
}

func lastAttempt(r *wfv1.TestResult) *wfv1.TestAttempt {
	if n := len(r.GetAttempts()); n > 0 {
		return r.GetAttempts()[n-1]
	}
	return nil
}

func decided(r *wfv1.TestResult) bool {
	switch r.GetOutcome() {
	case wfv1.TestOutcome_TEST_OUTCOME_PASSED, wfv1.TestOutcome_TEST_OUTCOME_FLAKY, wfv1.TestOutcome_TEST_OUTCOME_FAILED,
		wfv1.TestOutcome_TEST_OUTCOME_ERROR, wfv1.TestOutcome_TEST_OUTCOME_SKIPPED:
		return true
	}
	return false
}

func timedOutMessage(run *wfv1.Run) string {
	if d := run.GetParams().GetBrowser().GetRunTimeout(); d != nil {
		return "timed out after " + d.AsDuration().String()
	}
	return "timed out"
}

func joinMessage(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}
