package suiterun

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/events"
	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/llm"
	"github.com/wayfinder/wayfinder/internal/queue"
	"github.com/wayfinder/wayfinder/internal/store"
	"github.com/wayfinder/wayfinder/internal/store/storetest"
	"github.com/wayfinder/wayfinder/internal/suite"
	"github.com/wayfinder/wayfinder/internal/tenant"
)

func TestMain(m *testing.M) { storetest.Main(m) }

const testTenant = "acme"

// outcome is how the test engine ends an attempt's run.
type outcome int

const (
	// pass: COMPLETED on the expected page, every report indicator matched.
	pass outcome = iota
	// wrongPage: COMPLETED on another page, no report indicator matched.
	wrongPage
	// fail: FAILED, the judge gave up.
	fail
	// timeout: ERROR RUN_TIMEOUT.
	timeout
	// hang: runs until it is cancelled, then ends CANCELLED.
	hang
	// hold: stays RUNNING until the engine is released.
	hold
)

// engine stands in for the run workers: the executor's CreateRun creates
// real runs in the store, and the engine ends them as scripted (per test
// name, per attempt; pass when the script says nothing).
type engine struct {
	t     *testing.T
	store *store.Store

	mu          sync.Mutex
	script      map[string][]outcome
	refuse      map[string]error // test name → CreateRun's error
	transient   map[string]bool  // test name → create the run, then fail once
	created     map[string]bool  // run IDs
	calls       int              // CreateRun calls
	inFlight    int              // runs created and not yet ended by the engine
	maxInFlight int
	tenants     map[string]bool // tenants CreateRun was called with
	cancels     []string        // runs CancelRun was called for
	started     chan string     // runs the engine started (hang and hold)
	release     chan struct{}   // closed: held runs end as passed
	// gate, when set, holds the engine back until it returns true for the
	// runs waiting to be ended and the runs created so far.
	gate func(waiting, created int) bool

	arrivals chan *wfv1.Run
}

func newEngine(t *testing.T, st *store.Store) *engine {
	return &engine{t: t, store: st, script: map[string][]outcome{}, refuse: map[string]error{},
		transient: map[string]bool{}, created: map[string]bool{}, tenants: map[string]bool{},
		started: make(chan string, 64), release: make(chan struct{}), arrivals: make(chan *wfv1.Run, 64)}
}

// createRun is Config.CreateRun: store.CreateRun without a queue.
func (e *engine) createRun(ctx context.Context, params *wfv1.RunParams, requestID string) (*wfv1.Run, error) {
	name := params.GetLabels()[suite.LabelTest]
	e.mu.Lock()
	e.calls++
	e.tenants[tenant.ID(ctx)] = true
	refusal := e.refuse[name]
	transient := e.transient[name]
	delete(e.transient, name)
	e.mu.Unlock()
	if refusal != nil {
		return nil, refusal
	}
	run, created, err := e.store.CreateRun(ctx, store.NewRun{Tenant: tenant.ID(ctx), RequestID: requestID, Params: params},
		func(context.Context, pgx.Tx, string) (int64, error) { return 0, nil })
	if err != nil {
		return nil, err
	}
	if created {
		e.mu.Lock()
		e.created[run.Id] = true
		e.inFlight++
		e.maxInFlight = max(e.maxInFlight, e.inFlight)
		e.mu.Unlock()
		e.arrivals <- run
	}
	if transient {
		return nil, errors.New("connection reset by peer")
	}
	return run, nil
}

// cancelRun is Config.CancelRun.
func (e *engine) cancelRun(ctx context.Context, runID, reason string) error {
	e.mu.Lock()
	e.cancels = append(e.cancels, runID)
	e.mu.Unlock()
	run, err := e.store.GetRun(ctx, runID)
	if err != nil {
		return err
	}
	if run.TenantId != tenant.ID(ctx) {
		return fault.ErrNotFound
	}
	_, err = e.store.CancelRun(ctx, runID, reason, func(context.Context, pgx.Tx, int64) error { return nil })
	return err
}

// run ends the runs as they arrive, in order, until ctx is done.
func (e *engine) run(ctx context.Context) {
	var waiting []*wfv1.Run
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case <-ctx.Done():
			return
		case r := <-e.arrivals:
			waiting = append(waiting, r)
		}
		for len(waiting) > 0 {
			e.mu.Lock()
			ready := e.gate == nil || e.gate(len(waiting), len(e.created))
			e.mu.Unlock()
			if !ready {
				break
			}
			r := waiting[0]
			waiting = waiting[1:]
			wg.Go(func() { e.end(ctx, r) })
		}
	}
}

func (e *engine) outcomeOf(r *wfv1.Run) outcome {
	parts := strings.Split(r.RequestId, ":")
	n, err := strconv.Atoi(parts[len(parts)-1])
	require.NoError(e.t, err)
	e.mu.Lock()
	defer e.mu.Unlock()
	if s := e.script[r.Params.Labels[suite.LabelTest]]; n <= len(s) {
		return s[n-1]
	}
	return pass
}

// end starts the run and ends it as scripted.
func (e *engine) end(ctx context.Context, r *wfv1.Run) {
	defer func() {
		e.mu.Lock()
		e.inFlight--
		e.mu.Unlock()
	}()
	if _, _, err := e.store.StartRun(ctx, r.Id); err != nil {
		return // the test is over
	}
	o := e.outcomeOf(r)
	var reports []*wfv1.IndicatorResult
	for _, ind := range r.Params.GetCompletion().GetReport() {
		reports = append(reports, &wfv1.IndicatorResult{Indicator: ind, Kind: "report", Matched: o == pass, StepNumber: 1})
	}
	finish := store.Outcome{Status: wfv1.RunStatus_RUN_STATUS_COMPLETED, FinalURL: "https://shop.test/done",
		Verdict: &wfv1.JudgeVerdict{Done: true, Confidence: 0.9, Source: "heuristic"}, Summary: "done"}
	switch o {
	case wrongPage:
		finish.FinalURL = "https://shop.test/other"
	case fail:
		finish = store.Outcome{Status: wfv1.RunStatus_RUN_STATUS_FAILED, FinalURL: "https://shop.test/cart",
			Verdict: &wfv1.JudgeVerdict{Failed: true, Reason: "the cart is empty"}, Summary: "the cart is empty"}
	case timeout:
		finish = store.Outcome{Status: wfv1.RunStatus_RUN_STATUS_ERROR, FinalURL: "https://shop.test/slow",
			Error: &wfv1.RunError{Category: wfv1.ErrorCategory_ERROR_CATEGORY_RUN_TIMEOUT, Message: "the run reached its time limit"}}
	case hang:
		e.started <- r.Id
		for {
			cur, err := e.store.GetRun(ctx, r.Id)
			if err != nil {
				return
			}
			if cur.CancelRequested {
				break
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
		finish = store.Outcome{Status: wfv1.RunStatus_RUN_STATUS_CANCELLED,
			Error: &wfv1.RunError{Category: wfv1.ErrorCategory_ERROR_CATEGORY_CANCELLED, Message: "cancelled"}}
	case hold:
		e.started <- r.Id
		select {
		case <-ctx.Done():
			return
		case <-e.release:
		}
	}
	if reports != nil {
		if err := e.store.SetRunCriteria(ctx, r.Id, reports); err != nil {
			return
		}
	}
	_, _ = e.store.FinishRun(ctx, r.Id, finish)
}

type testBundle struct {
	store   *store.Store
	engine  *engine
	worker  *Worker
	metrics *prometheus.Registry
	logs    *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func setup(t *testing.T, mutate func(*Config)) *testBundle {
	t.Helper()
	ctx := t.Context()
	pool := storetest.NewPool(t)
	st := store.New(pool)
	_, err := st.CreateTenant(ctx, &wfv1.Tenant{Id: testTenant})
	require.NoError(t, err)

	logs := &syncBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	hub := events.NewHub(pool, store.NotifyChannel, logger)
	bg, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = hub.Run(bg) })
	eng := newEngine(t, st)
	wg.Go(func() { eng.run(bg) })
	t.Cleanup(func() { stop(); wg.Wait() })

	reg := prometheus.NewRegistry()
	cfg := Config{Store: st, Hub: hub, Logger: logger, Metrics: NewMetrics(reg),
		CreateRun: eng.createRun, CancelRun: eng.cancelRun, PollInterval: 200 * time.Millisecond}
	if mutate != nil {
		mutate(&cfg)
	}
	return &testBundle{store: st, engine: eng, worker: New(cfg), metrics: reg, logs: logs}
}

// test is a test with a goal, retries and oracles.
func test(name string, retries int32, oracles ...*wfv1.Oracle) *wfv1.Test {
	return &wfv1.Test{Name: name, Retries: retries, Oracles: oracles,
		Params: &wfv1.RunParams{Goal: "Buy the blue mug (" + name + ")", StartUrl: "https://shop.test/",
			Labels: map[string]string{"team": "checkout"}}}
}

// startSuiteRun creates a suite run of tests, as StartSuiteRun does.
func (b *testBundle) startSuiteRun(t *testing.T, concurrency int32, tests ...*wfv1.Test) string {
	t.Helper()
	su := &wfv1.Suite{Name: "checkout", Concurrency: concurrency, DefaultTimeout: durationpb.New(3 * time.Minute)}
	for _, tt := range tests {
		su.Tests = append(su.Tests, tt.Name)
	}
	sr, created, err := b.store.CreateSuiteRun(t.Context(), store.NewSuiteRun{Tenant: testTenant, Suite: su, Tests: tests},
		func(context.Context, pgx.Tx, string) (int64, error) { return 7, nil })
	require.NoError(t, err)
	require.True(t, created)
	return sr.Id
}

func job(id string, attempt int) *river.Job[queue.SuiteRunArgs] {
	return &river.Job[queue.SuiteRunArgs]{JobRow: &rivertype.JobRow{ID: 7, Attempt: attempt, MaxAttempts: 25},
		Args: queue.SuiteRunArgs{SuiteRunID: id}}
}

func (b *testBundle) get(t *testing.T, id string) (*wfv1.SuiteRun, map[string]*wfv1.TestResult) {
	t.Helper()
	sr, err := b.store.GetSuiteRun(t.Context(), id)
	require.NoError(t, err)
	byName := map[string]*wfv1.TestResult{}
	for _, r := range sr.Results {
		byName[r.Test] = r
	}
	return sr, byName
}

// runsOf lists the runs labelled with suite run id.
func (b *testBundle) runsOf(t *testing.T, id string) []*wfv1.Run {
	t.Helper()
	runs, _, err := b.store.ListRuns(t.Context(), store.ListRunsFilter{Tenant: testTenant,
		Labels: map[string]string{suite.LabelSuiteRun: id}, PageSize: 200})
	require.NoError(t, err)
	return runs
}

func counter(t *testing.T, reg *prometheus.Registry, name, label, value string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// TestConcurrency: never more runs in flight than the suite's concurrency,
// and the cap is used; every run carries the suite run's labels and
// tenant.
func TestConcurrency(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	var tests []*wfv1.Test
	for i := range 7 {
		tests = append(tests, test("t"+strconv.Itoa(i), 0))
	}
	id := b.startSuiteRun(t, 3, tests...)
	// The engine ends a run only once three wait (or all were created):
	// an executor that started a fourth would be caught.
	b.engine.gate = func(waiting, created int) bool { return waiting >= 3 || created == len(tests) }

	require.NoError(t, b.worker.Work(t.Context(), job(id, 1)))

	sr, results := b.get(t, id)
	require.Equal(t, wfv1.SuiteRunStatus_SUITE_RUN_STATUS_PASSED, sr.Status)
	require.Equal(t, 3, b.engine.maxInFlight, "the cap is reached and never passed")
	for _, tt := range tests {
		r := results[tt.Name]
		require.Equal(t, wfv1.TestOutcome_TEST_OUTCOME_PASSED, r.Outcome, r.Message)
		require.Len(t, r.Attempts, 1)
		a := r.Attempts[0]
		require.True(t, a.Passed)
		require.Equal(t, wfv1.RunStatus_RUN_STATUS_COMPLETED, a.RunStatus)
		require.Equal(t, "https://shop.test/done", a.FinalUrl)
		require.NotNil(t, a.StartTime)
		require.NotNil(t, a.EndTime)
		require.InDelta(t, 1, r.Score, 1e-9)
	}
	runs := b.runsOf(t, id)
	require.Len(t, runs, len(tests))
	for _, run := range runs {
		require.Equal(t, testTenant, run.TenantId)
		require.Equal(t, id, run.Params.Labels[suite.LabelSuiteRun])
		require.Contains(t, results, run.Params.Labels[suite.LabelTest])
		require.Equal(t, "checkout", run.Params.Labels["team"], "the test's own labels stay")
		require.Equal(t, 3*time.Minute, run.Params.GetBrowser().GetRunTimeout().AsDuration(), "the suite's default timeout")
	}
	require.Equal(t, map[string]bool{testTenant: true}, b.engine.tenants)
	require.InDelta(t, 1, counter(t, b.metrics, "wayfinder_suite_runs_finished_total", "status", "passed"), 0)
	require.InDelta(t, 7, counter(t, b.metrics, "wayfinder_suite_tests_total", "outcome", "passed"), 0)
	logs := b.logs.String()
	require.Contains(t, logs, "suite_run_id="+id)
	require.NotContains(t, logs, "Buy the blue mug", "params are never logged")
}

// TestOutcomes: retries make a test FLAKY, failing oracles FAILED with
// their reasons, a timeout is marked, and a refused run is ERROR without
// retry.
func TestOutcomes(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	greeting := &wfv1.Oracle{Check: &wfv1.Oracle_TextPresent{TextPresent: "Thanks for your order"}}
	tests := []*wfv1.Test{
		test("steady", 2),
		test("flaky", 2),
		test("broken", 1,
			&wfv1.Oracle{Name: "on the receipt", Check: &wfv1.Oracle_UrlPattern{UrlPattern: "/done$"}},
			greeting),
		test("gave-up", 0),
		test("slow", 0),
		test("refused", 2),
		test("refused-status", 2),
	}
	tests[4].Timeout = durationpb.New(90 * time.Second)
	b.engine.script = map[string][]outcome{
		"flaky":   {fail, pass},
		"broken":  {wrongPage, wrongPage},
		"gave-up": {fail},
		"slow":    {timeout},
	}
	b.engine.refuse = map[string]error{
		"refused":        &fault.RequestError{Kind: fault.ErrFailedPrecondition, Violations: []fault.FieldViolation{{Field: "params.auth", Description: `credential "demo" does not exist`}}},
		"refused-status": status.Error(codes.InvalidArgument, "params.start_url: must be an http or https URL"),
	}
	id := b.startSuiteRun(t, 0, tests...)

	require.NoError(t, b.worker.Work(t.Context(), job(id, 1)))

	sr, results := b.get(t, id)
	require.Equal(t, wfv1.SuiteRunStatus_SUITE_RUN_STATUS_FAILED, sr.Status)
	require.Equal(t, &wfv1.SuiteRunSummary{Total: 7, Passed: 1, Failed: 3, Flaky: 1, Errored: 2}, sr.Summary)

	r := results["steady"]
	require.Equal(t, wfv1.TestOutcome_TEST_OUTCOME_PASSED, r.Outcome, r.Message)
	require.Len(t, r.Attempts, 1, "a passing test is not retried")

	r = results["flaky"]
	require.Equal(t, wfv1.TestOutcome_TEST_OUTCOME_FLAKY, r.Outcome, r.Message)
	require.Len(t, r.Attempts, 2)
	require.False(t, r.Attempts[0].Passed)
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_FAILED, r.Attempts[0].RunStatus)
	require.NotEmpty(t, r.Attempts[0].Message)
	require.True(t, r.Attempts[1].Passed)
	require.Empty(t, r.Attempts[1].Message)
	require.Equal(t, []int32{1, 2}, []int32{r.Attempts[0].Number, r.Attempts[1].Number})
	require.NotEqual(t, r.Attempts[0].RunId, r.Attempts[1].RunId)
	require.Empty(t, r.Message)

	r = results["broken"]
	require.Equal(t, wfv1.TestOutcome_TEST_OUTCOME_FAILED, r.Outcome)
	require.Len(t, r.Attempts, 2, "one retry")
	for _, a := range r.Attempts {
		require.False(t, a.Passed)
		require.Equal(t, "https://shop.test/other", a.FinalUrl)
		require.Len(t, a.Oracles, 2)
		for _, o := range a.Oracles {
			require.False(t, o.Passed, o.Name)
			require.NotEmpty(t, o.Detail, o.Name)
		}
		require.InDelta(t, 0, a.Score, 1e-9)
	}
	require.Equal(t, "on the receipt", r.Attempts[1].Oracles[0].Name)
	require.Contains(t, r.Attempts[1].Oracles[0].Detail, "https://shop.test/other")
	require.NotEmpty(t, r.Message)
	require.Equal(t, r.Attempts[1].Message, r.Message, "the deciding attempt says why")
	require.Contains(t, r.Message, "https://shop.test/other", "the failing oracles say why")
	require.Contains(t, r.Message, "Thanks for your order")
	require.InDelta(t, 1, r.PassThreshold, 1e-9)

	r = results["gave-up"]
	require.Equal(t, wfv1.TestOutcome_TEST_OUTCOME_FAILED, r.Outcome)
	require.Len(t, r.Attempts, 1)
	require.Equal(t, "goal", r.Attempts[0].Oracles[0].Kind)

	r = results["slow"]
	require.Equal(t, wfv1.TestOutcome_TEST_OUTCOME_FAILED, r.Outcome)
	require.Len(t, r.Attempts, 1)
	require.True(t, r.Attempts[0].TimedOut)
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_ERROR, r.Attempts[0].RunStatus)
	require.Contains(t, r.Message, "timed out after 1m30s")
	require.False(t, results["gave-up"].Attempts[0].TimedOut)
	require.Contains(t, results["gave-up"].Message, "the cart is empty", "the run's error")

	for name, want := range map[string]string{"refused": `credential "demo" does not exist`, "refused-status": "must be an http or https URL"} {
		r = results[name]
		require.Equal(t, wfv1.TestOutcome_TEST_OUTCOME_ERROR, r.Outcome, name)
		require.Empty(t, r.Attempts, name)
		require.Contains(t, r.Message, want, name)
		require.NotContains(t, r.Message, "rpc error", name)
	}
	// steady 1, flaky 2, broken 2, gave-up 1, slow 1, and one call for
	// each refused test: no retry of a refusal.
	require.Equal(t, 9, b.engine.calls)
	require.Len(t, b.runsOf(t, id), 7)
	require.InDelta(t, 1, counter(t, b.metrics, "wayfinder_suite_runs_finished_total", "status", "failed"), 0)
	require.InDelta(t, 3, counter(t, b.metrics, "wayfinder_suite_tests_total", "outcome", "failed"), 0)
	require.InDelta(t, 1, counter(t, b.metrics, "wayfinder_suite_tests_total", "outcome", "flaky"), 0)
	require.InDelta(t, 2, counter(t, b.metrics, "wayfinder_suite_tests_total", "outcome", "error"), 0)
}

// TestCancel: a cancelled suite run cancels its runs in flight, skips the
// tests not started, and ends CANCELLED.
func TestCancel(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	tests := []*wfv1.Test{test("a", 2), test("b", 0), test("c", 0), test("d", 0)}
	b.engine.script = map[string][]outcome{"a": {hang}, "b": {hang}}
	id := b.startSuiteRun(t, 2, tests...)

	done := make(chan error, 1)
	go func() { done <- b.worker.Work(t.Context(), job(id, 1)) }()
	inFlight := map[string]bool{<-b.engine.started: true, <-b.engine.started: true}
	_, err := b.store.CancelSuiteRun(t.Context(), id, func(context.Context, pgx.Tx, int64) error {
		t.Error("a running suite run's job is not cancelled")
		return nil
	})
	require.NoError(t, err)
	require.NoError(t, <-done)

	sr, results := b.get(t, id)
	require.Equal(t, wfv1.SuiteRunStatus_SUITE_RUN_STATUS_CANCELLED, sr.Status)
	cancelled := map[string]bool{}
	for _, runID := range b.engine.cancels {
		cancelled[runID] = true
	}
	require.Equal(t, inFlight, cancelled, "exactly the runs in flight were cancelled")
	for _, name := range []string{"a", "b"} {
		r := results[name]
		require.Equal(t, wfv1.TestOutcome_TEST_OUTCOME_FAILED, r.Outcome, name)
		require.Equal(t, "suite run cancelled during attempt 1", r.Message)
		require.Len(t, r.Attempts, 1, "no retry once cancelled")
		require.Empty(t, r.Attempts[0].Oracles, "an interrupted run is not judged")
		require.Equal(t, wfv1.RunStatus_RUN_STATUS_CANCELLED, r.Attempts[0].RunStatus)
		require.True(t, inFlight[r.Attempts[0].RunId])
		require.NotNil(t, r.Attempts[0].EndTime)
	}
	for _, name := range []string{"c", "d"} {
		r := results[name]
		require.Equal(t, wfv1.TestOutcome_TEST_OUTCOME_SKIPPED, r.Outcome, name)
		require.Equal(t, cancelledReason, r.Message)
		require.Empty(t, r.Attempts)
	}
	require.Len(t, b.runsOf(t, id), 2)
	require.InDelta(t, 1, counter(t, b.metrics, "wayfinder_suite_runs_finished_total", "status", "cancelled"), 0)
	require.InDelta(t, 2, counter(t, b.metrics, "wayfinder_suite_tests_total", "outcome", "skipped"), 0)
	require.InDelta(t, 2, counter(t, b.metrics, "wayfinder_suite_tests_total", "outcome", "failed"), 0)
	require.Equal(t, &wfv1.SuiteRunSummary{Total: 4, Failed: 2, Skipped: 2}, sr.Summary)
}

// TestCancelBetweenAttempts: a test cancelled after a failed attempt,
// before its retry, is FAILED (it ran; every attempt failed), not retried.
func TestCancelBetweenAttempts(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	id := b.startSuiteRun(t, 0, test("a", 2), test("b", 0))
	ctx := t.Context()
	_, _, err := b.store.StartSuiteRun(ctx, id)
	require.NoError(t, err)
	// As an execution leaves it after attempt 1 failed.
	require.NoError(t, b.store.PutTestResult(ctx, id, 0, &wfv1.TestResult{Outcome: wfv1.TestOutcome_TEST_OUTCOME_RUNNING,
		PassThreshold: 1, Message: "goal failed",
		Attempts: []*wfv1.TestAttempt{{Number: 1, RunId: "00000000-0000-0000-0000-000000000001",
			RunStatus: wfv1.RunStatus_RUN_STATUS_FAILED, Message: "goal failed", EndTime: timestamppb.Now()}}}))
	_, err = b.store.CancelSuiteRun(ctx, id, nil)
	require.NoError(t, err)

	require.NoError(t, b.worker.Work(ctx, job(id, 1)))
	sr, results := b.get(t, id)
	require.Equal(t, wfv1.SuiteRunStatus_SUITE_RUN_STATUS_CANCELLED, sr.Status)
	r := results["a"]
	require.Equal(t, wfv1.TestOutcome_TEST_OUTCOME_FAILED, r.Outcome)
	require.Equal(t, "suite run cancelled before attempt 2; goal failed", r.Message)
	require.Len(t, r.Attempts, 1)
	require.Equal(t, wfv1.TestOutcome_TEST_OUTCOME_SKIPPED, results["b"].Outcome)
	require.Zero(t, b.engine.calls, "no run is created once cancelled")
}

// TestResume: an execution whose slice ends snoozes the job (not an
// attempt) mid-suite, and the next one goes on from the database: the
// runs in flight are awaited, not created again.
func TestResume(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.Slice = time.Nanosecond })
	tests := []*wfv1.Test{test("a", 0), test("b", 1), test("c", 0), test("d", 0), test("e", 0)}
	b.engine.script = map[string][]outcome{"b": {fail, pass}}
	id := b.startSuiteRun(t, 2, tests...)

	slices := 0
	for {
		slices++
		err := b.worker.Work(t.Context(), job(id, 1))
		if err == nil {
			break
		}
		var snooze *river.JobSnoozeError
		require.ErrorAs(t, err, &snooze)
		require.Zero(t, snooze.Duration)
		sr, _ := b.get(t, id)
		require.Equal(t, wfv1.SuiteRunStatus_SUITE_RUN_STATUS_RUNNING, sr.Status)
	}
	require.Greater(t, slices, 2, "the suite took several slices")

	sr, results := b.get(t, id)
	require.Equal(t, wfv1.SuiteRunStatus_SUITE_RUN_STATUS_PASSED, sr.Status)
	require.Equal(t, wfv1.TestOutcome_TEST_OUTCOME_FLAKY, results["b"].Outcome)
	attempts := 0
	for _, r := range results {
		attempts += len(r.Attempts)
	}
	require.Equal(t, 6, attempts)
	require.Len(t, b.runsOf(t, id), 6, "no run was created twice")
	require.Len(t, b.engine.created, 6)
	require.LessOrEqual(t, b.engine.maxInFlight, 2)
}

// TestShutdown: an execution stopped mid-suite (its context cancelled)
// snoozes; what it wrote is consistent, and the next execution finishes
// the suite run with the same runs.
func TestShutdown(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	tests := []*wfv1.Test{test("a", 0), test("b", 0), test("c", 0)}
	b.engine.script = map[string][]outcome{"a": {hold}, "b": {hold}}
	id := b.startSuiteRun(t, 2, tests...)

	ctx, stop := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- b.worker.Work(ctx, job(id, 1)) }()
	<-b.engine.started
	<-b.engine.started
	stop()
	err := <-done
	var snooze *river.JobSnoozeError
	require.ErrorAs(t, err, &snooze)

	sr, results := b.get(t, id)
	require.Equal(t, wfv1.SuiteRunStatus_SUITE_RUN_STATUS_RUNNING, sr.Status)
	for _, name := range []string{"a", "b"} {
		require.Equal(t, wfv1.TestOutcome_TEST_OUTCOME_RUNNING, results[name].Outcome)
		require.Len(t, results[name].Attempts, 1)
		require.Nil(t, results[name].Attempts[0].EndTime)
	}
	require.Equal(t, wfv1.TestOutcome_TEST_OUTCOME_PENDING, results["c"].Outcome)

	close(b.engine.release)
	require.NoError(t, b.worker.Work(t.Context(), job(id, 1)))
	sr, _ = b.get(t, id)
	require.Equal(t, wfv1.SuiteRunStatus_SUITE_RUN_STATUS_PASSED, sr.Status)
	require.Len(t, b.runsOf(t, id), 3)
}

// TestLostWrite: an execution that created a run but failed before it
// recorded it fails (River retries the job); the retry gets the same run
// back by its request ID instead of a second one.
func TestLostWrite(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	tests := []*wfv1.Test{test("a", 0), test("b", 0)}
	b.engine.transient = map[string]bool{"b": true}
	id := b.startSuiteRun(t, 1, tests...)

	err := b.worker.Work(t.Context(), job(id, 1))
	require.Error(t, err)
	var snooze *river.JobSnoozeError
	require.False(t, errors.As(err, &snooze), "a transient error is an attempt")
	_, results := b.get(t, id)
	require.Equal(t, wfv1.TestOutcome_TEST_OUTCOME_PASSED, results["a"].Outcome)
	require.Equal(t, wfv1.TestOutcome_TEST_OUTCOME_PENDING, results["b"].Outcome, "the run was made, not recorded")
	require.Len(t, b.runsOf(t, id), 2)

	require.NoError(t, b.worker.Work(t.Context(), job(id, 2)))
	sr, results := b.get(t, id)
	require.Equal(t, wfv1.SuiteRunStatus_SUITE_RUN_STATUS_PASSED, sr.Status)
	require.Len(t, b.runsOf(t, id), 2, "the retry found its run")
	require.Len(t, b.engine.created, 2)
	require.Len(t, results["b"].Attempts, 1)

	// A repeated delivery of a finished suite run does nothing.
	require.NoError(t, b.worker.Work(t.Context(), job(id, 1)))
	require.Len(t, b.runsOf(t, id), 2)
}

// TestLastAttempt: when the job's last attempt fails, the suite run ends
// ERROR rather than staying RUNNING with no job.
func TestLastAttempt(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	b.engine.transient = map[string]bool{"a": true}
	id := b.startSuiteRun(t, 1, test("a", 0))

	require.Error(t, b.worker.Work(t.Context(), job(id, 25)))
	sr, _ := b.get(t, id)
	require.Equal(t, wfv1.SuiteRunStatus_SUITE_RUN_STATUS_ERROR, sr.Status)
	require.NotEmpty(t, sr.Error)
	require.NotContains(t, sr.Error, "connection reset", "the store's error stays in the log")
	require.Equal(t, wfv1.TestOutcome_TEST_OUTCOME_SKIPPED, sr.Results[0].Outcome)
	require.InDelta(t, 1, counter(t, b.metrics, "wayfinder_suite_runs_finished_total", "status", "error"), 0)
}

// TestNoHub: without the events hub, the executor polls.
func TestNoHub(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *Config) { c.Hub = nil; c.PollInterval = 20 * time.Millisecond })
	b.engine.script = map[string][]outcome{"a": {fail, pass}}
	id := b.startSuiteRun(t, 0, test("a", 1), test("b", 0))
	require.NoError(t, b.worker.Work(t.Context(), job(id, 1)))
	sr, results := b.get(t, id)
	require.Equal(t, wfv1.SuiteRunStatus_SUITE_RUN_STATUS_PASSED, sr.Status)
	require.Equal(t, wfv1.TestOutcome_TEST_OUTCOME_FLAKY, results["a"].Outcome)
}

// TestGraderTenant: a rubric oracle's grading model is built as the suite
// run's tenant (its api_key_credential is that tenant's credential), not
// as the default tenant of a context without a caller.
func TestGraderTenant(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	seen := map[string]bool{}
	b := setup(t, func(c *Config) {
		c.Models = func(ctx context.Context, _ *wfv1.Test, _ *wfv1.RubricOracle) (llm.Model, error) {
			mu.Lock()
			seen[tenant.ID(ctx)] = true
			mu.Unlock()
			return nil, errors.New("no grader in this test")
		}
	})
	rubric := &wfv1.Oracle{Check: &wfv1.Oracle_Rubric{Rubric: &wfv1.RubricOracle{Rubric: "The mug is in the cart"}}}
	id := b.startSuiteRun(t, 1, test("graded", 0, rubric))
	require.NoError(t, b.worker.Work(t.Context(), job(id, 1)))
	_, results := b.get(t, id)
	require.Equal(t, wfv1.TestOutcome_TEST_OUTCOME_FAILED, results["graded"].Outcome)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, map[string]bool{testTenant: true}, seen)
}

// TestEvidence: an attempt's steps and screenshot are read only for a
// rubric oracle, and then only the last steps its grader is shown: a run's
// whole record is never loaded.
func TestEvidence(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	ctx := tenant.With(t.Context(), tenant.Caller{Tenant: testTenant})
	run, _, err := b.store.CreateRun(ctx, store.NewRun{Tenant: testTenant, Params: &wfv1.RunParams{Goal: "g", StartUrl: "https://shop.test/"}},
		func(context.Context, pgx.Tx, string) (int64, error) { return 0, nil })
	require.NoError(t, err)
	_, _, err = b.store.StartRun(ctx, run.Id)
	require.NoError(t, err)
	const steps = 45
	png := []byte("\x89PNG\r\n\x1a\nimage")
	for n := int32(1); n <= steps; n++ {
		var shot *store.Media
		if n == steps {
			shot = &store.Media{ContentType: "image/png", Data: png}
		}
		_, err := b.store.RecordStep(ctx, &wfv1.Step{RunId: run.Id, Number: n, Url: "https://shop.test/" + strconv.Itoa(int(n)),
			StartTime: timestamppb.Now(), EndTime: timestamppb.Now()}, shot)
		require.NoError(t, err)
	}
	run, err = b.store.FinishRun(ctx, run.Id, store.Outcome{Status: wfv1.RunStatus_RUN_STATUS_COMPLETED})
	require.NoError(t, err)
	require.EqualValues(t, steps, run.StepCount)

	e := &execution{w: b.worker}
	ev, err := e.evidence(ctx, test("plain", 0), run)
	require.NoError(t, err)
	require.Nil(t, ev.Steps, "no oracle reads the steps")
	require.Nil(t, ev.Screenshot, "no oracle reads the screenshot")

	rubric := &wfv1.Oracle{Check: &wfv1.Oracle_Rubric{Rubric: &wfv1.RubricOracle{Rubric: "The mug is in the cart"}}}
	ev, err = e.evidence(ctx, test("graded", 0, rubric), run)
	require.NoError(t, err)
	require.Len(t, ev.Steps, suite.EvidenceSteps)
	require.EqualValues(t, steps-suite.EvidenceSteps+1, ev.Steps[0].Number)
	require.EqualValues(t, steps, ev.Steps[len(ev.Steps)-1].Number)
	require.Equal(t, png, ev.Screenshot)
}
