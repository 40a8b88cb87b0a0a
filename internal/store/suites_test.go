package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/store"
)

// suiteBundle is a store with tenants "acme" and "other".
type suiteBundle struct {
	s    *store.Store
	pool *pgxpool.Pool
	q    *fakeQueue
}

func setupSuites(t *testing.T) suiteBundle {
	t.Helper()
	s, pool := newStore(t)
	for _, id := range []string{"acme", "other"} {
		_, err := s.CreateTenant(t.Context(), &wfv1.Tenant{Id: id})
		require.NoError(t, err)
	}
	return suiteBundle{s: s, pool: pool, q: &fakeQueue{jobID: 100}}
}

func newTest(name string, tags ...string) *wfv1.Test {
	return &wfv1.Test{
		Name: name, Description: "checks " + name, Params: testParams(nil), Tags: tags, Retries: 1,
		PassThreshold: proto.Float64(0.5), Timeout: durationpb.New(90 * time.Second),
		Oracles: []*wfv1.Oracle{
			{Check: &wfv1.Oracle_Goal{Goal: &wfv1.GoalOracle{MinConfidence: 0.5}}},
			{Name: "home", Weight: proto.Float64(2), Required: true, Check: &wfv1.Oracle_UrlPattern{UrlPattern: "/home$"}},
		},
	}
}

func (b suiteBundle) createTests(t *testing.T, tenant string, names ...string) []*wfv1.Test {
	t.Helper()
	var out []*wfv1.Test
	for _, n := range names {
		got, err := b.s.CreateTest(t.Context(), tenant, newTest(n))
		require.NoError(t, err)
		out = append(out, got)
	}
	return out
}

func TestTestsCRUD(t *testing.T) {
	t.Parallel()
	b := setupSuites(t)
	ctx := t.Context()

	in := newTest("login", "auth", "smoke")
	in.CreateTime = timestamppb.New(time.Unix(1, 0)) // output only: ignored
	created, err := b.s.CreateTest(ctx, "acme", in)
	require.NoError(t, err)
	require.NotNil(t, created.CreateTime)
	require.NotEqual(t, int64(1), created.CreateTime.Seconds)
	got, err := b.s.GetTest(ctx, "acme", "login")
	require.NoError(t, err)
	require.True(t, proto.Equal(created, got), "got %v", got)
	in.CreateTime = nil
	got.CreateTime, got.UpdateTime = nil, nil
	require.True(t, proto.Equal(in, got), "stored %v, got %v", in, got)

	_, err = b.s.CreateTest(ctx, "acme", newTest("login"))
	require.ErrorIs(t, err, fault.ErrAlreadyExists)
	_, err = b.s.CreateTest(ctx, "nobody", newTest("login"))
	require.ErrorIs(t, err, fault.ErrNotFound)

	changed := newTest("login", "auth")
	changed.Description = "changed"
	updated, err := b.s.UpdateTest(ctx, "acme", changed, false)
	require.NoError(t, err)
	require.Equal(t, "changed", updated.Description)
	require.True(t, proto.Equal(created.CreateTime, updated.CreateTime), "an update keeps the create time")
	require.False(t, updated.UpdateTime.AsTime().Before(created.UpdateTime.AsTime()))

	_, err = b.s.UpdateTest(ctx, "acme", newTest("signup"), false)
	require.ErrorIs(t, err, fault.ErrNotFound)
	_, err = b.s.UpdateTest(ctx, "acme", newTest("signup"), true)
	require.NoError(t, err)

	require.NoError(t, b.s.DeleteTest(ctx, "acme", "signup"))
	require.ErrorIs(t, b.s.DeleteTest(ctx, "acme", "signup"), fault.ErrNotFound)
	_, err = b.s.GetTest(ctx, "acme", "signup")
	require.ErrorIs(t, err, fault.ErrNotFound)
}

func TestTestsTenantIsolation(t *testing.T) {
	t.Parallel()
	b := setupSuites(t)
	ctx := t.Context()
	b.createTests(t, "acme", "login")
	_, err := b.s.CreateSuite(ctx, "acme", &wfv1.Suite{Name: "smoke", Tests: []string{"login"}})
	require.NoError(t, err)

	_, err = b.s.GetTest(ctx, "other", "login")
	require.ErrorIs(t, err, fault.ErrNotFound)
	_, err = b.s.UpdateTest(ctx, "other", newTest("login"), false)
	require.ErrorIs(t, err, fault.ErrNotFound)
	require.ErrorIs(t, b.s.DeleteTest(ctx, "other", "login"), fault.ErrNotFound)
	list, _, err := b.s.ListTests(ctx, "other", "", 10, "")
	require.NoError(t, err)
	require.Empty(t, list)
	_, err = b.s.GetSuite(ctx, "other", "smoke")
	require.ErrorIs(t, err, fault.ErrNotFound)
	require.ErrorIs(t, b.s.DeleteSuite(ctx, "other", "smoke"), fault.ErrNotFound)
	suites, _, err := b.s.ListSuites(ctx, "other", 10, "")
	require.NoError(t, err)
	require.Empty(t, suites)
	// Another tenant's suite cannot list acme's tests.
	_, err = b.s.CreateSuite(ctx, "other", &wfv1.Suite{Name: "smoke", Tests: []string{"login"}})
	require.ErrorIs(t, err, fault.ErrInvalidArgument)
	// The same names are free in another tenant.
	b.createTests(t, "other", "login")
	_, err = b.s.CreateSuite(ctx, "other", &wfv1.Suite{Name: "smoke", Tests: []string{"login"}})
	require.NoError(t, err)
}

func TestListTestsPages(t *testing.T) {
	t.Parallel()
	b := setupSuites(t)
	ctx := t.Context()
	for i := range 5 {
		tags := []string{"all"}
		if i%2 == 0 {
			tags = append(tags, "even")
		}
		_, err := b.s.CreateTest(ctx, "acme", newTest(fmt.Sprintf("t%d", i), tags...))
		require.NoError(t, err)
	}
	var names []string
	token := ""
	for range 5 {
		page, next, err := b.s.ListTests(ctx, "acme", "", 2, token)
		require.NoError(t, err)
		require.LessOrEqual(t, len(page), 2)
		for _, p := range page {
			names = append(names, p.Name)
		}
		if token = next; token == "" {
			break
		}
	}
	require.Equal(t, []string{"t0", "t1", "t2", "t3", "t4"}, names)

	even, next, err := b.s.ListTests(ctx, "acme", "even", 10, "")
	require.NoError(t, err)
	require.Empty(t, next)
	require.Len(t, even, 3)
	for _, e := range even {
		require.Contains(t, e.Tags, "even")
	}
	_, _, err = b.s.ListTests(ctx, "acme", "", 10, "garbage!")
	require.ErrorIs(t, err, fault.ErrInvalidArgument)
	// A suite list's token is not a test list's.
	for _, n := range []string{"a", "b"} {
		_, err := b.s.CreateSuite(ctx, "acme", &wfv1.Suite{Name: n, Tests: []string{"t0"}})
		require.NoError(t, err)
	}
	suites, suiteToken, err := b.s.ListSuites(ctx, "acme", 1, "")
	require.NoError(t, err)
	require.Len(t, suites, 1)
	require.NotEmpty(t, suiteToken)
	_, _, err = b.s.ListTests(ctx, "acme", "", 10, suiteToken)
	require.ErrorIs(t, err, fault.ErrInvalidArgument)
	suites, suiteToken, err = b.s.ListSuites(ctx, "acme", 1, suiteToken)
	require.NoError(t, err)
	require.Equal(t, "b", suites[0].Name)
	require.Empty(t, suiteToken)
}

func TestSuitesCRUD(t *testing.T) {
	t.Parallel()
	b := setupSuites(t)
	ctx := t.Context()
	b.createTests(t, "acme", "login", "checkout")

	su := &wfv1.Suite{Name: "smoke", Description: "smoke tests", Tests: []string{"login", "checkout"},
		Tags: []string{"nightly"}, Concurrency: 2, DefaultTimeout: durationpb.New(2 * time.Minute)}
	created, err := b.s.CreateSuite(ctx, "acme", su)
	require.NoError(t, err)
	got, err := b.s.GetSuite(ctx, "acme", "smoke")
	require.NoError(t, err)
	require.True(t, proto.Equal(created, got))
	got.CreateTime, got.UpdateTime = nil, nil
	require.True(t, proto.Equal(su, got), "got %v", got)

	_, err = b.s.CreateSuite(ctx, "acme", su)
	require.ErrorIs(t, err, fault.ErrAlreadyExists)
	_, err = b.s.CreateSuite(ctx, "acme", &wfv1.Suite{Name: "bad", Tests: []string{"login", "nope"}})
	var reqErr *fault.RequestError
	require.ErrorAs(t, err, &reqErr)
	require.Equal(t, "suite.tests[1]", reqErr.Violations[0].Field)
	_, err = b.s.GetSuite(ctx, "acme", "bad")
	require.ErrorIs(t, err, fault.ErrNotFound, "nothing stored")

	// A test a suite lists cannot be deleted.
	err = b.s.DeleteTest(ctx, "acme", "login")
	require.ErrorIs(t, err, fault.ErrFailedPrecondition)
	require.Contains(t, err.Error(), "smoke")
	_, err = b.s.GetTest(ctx, "acme", "login")
	require.NoError(t, err, "the refused delete removed nothing")

	_, err = b.s.UpdateSuite(ctx, "acme", &wfv1.Suite{Name: "smoke", Tests: []string{"checkout"}}, false)
	require.NoError(t, err)
	require.NoError(t, b.s.DeleteTest(ctx, "acme", "login"), "no suite lists it any more")
	_, err = b.s.UpdateSuite(ctx, "acme", &wfv1.Suite{Name: "other", Tests: []string{"checkout"}}, false)
	require.ErrorIs(t, err, fault.ErrNotFound)
	_, err = b.s.UpdateSuite(ctx, "acme", &wfv1.Suite{Name: "other", Tests: []string{"checkout"}}, true)
	require.NoError(t, err)

	require.NoError(t, b.s.DeleteSuite(ctx, "acme", "smoke"))
	require.NoError(t, b.s.DeleteSuite(ctx, "acme", "other"))
	require.ErrorIs(t, b.s.DeleteSuite(ctx, "acme", "other"), fault.ErrNotFound)
	require.NoError(t, b.s.DeleteTest(ctx, "acme", "checkout"))
}

func TestImportSuite(t *testing.T) {
	t.Parallel()
	b := setupSuites(t)
	ctx := t.Context()
	b.createTests(t, "acme", "login")

	login := newTest("login", "v2")
	su := &wfv1.Suite{Name: "smoke", Tests: []string{"login", "search"}}
	gotSuite, gotTests, err := b.s.ImportSuite(ctx, "acme", su, []*wfv1.Test{login, newTest("search")})
	require.NoError(t, err)
	require.Equal(t, []string{"login", "search"}, gotSuite.Tests)
	require.Len(t, gotTests, 2)
	stored, err := b.s.GetTest(ctx, "acme", "login")
	require.NoError(t, err)
	require.Equal(t, []string{"v2"}, stored.Tags, "the import replaced the test")

	// A suite naming a test neither imported nor stored: nothing is written.
	_, _, err = b.s.ImportSuite(ctx, "acme", &wfv1.Suite{Name: "broken", Tests: []string{"fresh", "missing"}},
		[]*wfv1.Test{newTest("fresh")})
	require.ErrorIs(t, err, fault.ErrInvalidArgument)
	_, err = b.s.GetTest(ctx, "acme", "fresh")
	require.ErrorIs(t, err, fault.ErrNotFound)
	_, err = b.s.GetSuite(ctx, "acme", "broken")
	require.ErrorIs(t, err, fault.ErrNotFound)
}

// startSuiteRun creates a suite run of tests t0..t(n-1) for tenant acme.
func (b suiteBundle) startSuiteRun(t *testing.T, requestID string, n int) *wfv1.SuiteRun {
	t.Helper()
	var tests []*wfv1.Test
	var names []string
	for i := range n {
		tests = append(tests, newTest(fmt.Sprintf("t%d", i)))
		names = append(names, tests[i].Name)
	}
	sr, created, err := b.s.CreateSuiteRun(t.Context(), store.NewSuiteRun{
		Tenant: "acme", RequestID: requestID, Suite: &wfv1.Suite{Name: "smoke", Tests: names}, Tests: tests, Tags: []string{"smoke"},
	}, b.q.enqueue)
	require.NoError(t, err)
	require.True(t, created)
	return sr
}

func TestCreateSuiteRun(t *testing.T) {
	t.Parallel()
	b := setupSuites(t)
	ctx := t.Context()

	sr := b.startSuiteRun(t, "req-1", 3)
	require.Equal(t, wfv1.SuiteRunStatus_SUITE_RUN_STATUS_QUEUED, sr.Status)
	require.Equal(t, "acme", sr.TenantId)
	require.Equal(t, "smoke", sr.Suite)
	require.Equal(t, "req-1", sr.RequestId)
	require.Equal(t, []string{"smoke"}, sr.Tags)
	require.Len(t, sr.Results, 3)
	for i, r := range sr.Results {
		require.Equal(t, fmt.Sprintf("t%d", i), r.Test)
		require.Equal(t, wfv1.TestOutcome_TEST_OUTCOME_PENDING, r.Outcome)
		require.InDelta(t, 0.5, r.PassThreshold, 1e-9)
	}
	require.True(t, proto.Equal(&wfv1.SuiteRunSummary{Total: 3, Pending: 3}, sr.Summary), "summary %v", sr.Summary)
	require.Equal(t, []string{sr.Id}, b.q.Enqueued())

	// The same request ID returns the first suite run and writes nothing.
	again, created, err := b.s.CreateSuiteRun(ctx, store.NewSuiteRun{
		Tenant: "acme", RequestID: "req-1", Suite: &wfv1.Suite{Name: "smoke", Tests: []string{"x"}}, Tests: []*wfv1.Test{newTest("x")},
	}, b.q.enqueue)
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, sr.Id, again.Id)
	require.Len(t, again.Results, 3)
	require.Len(t, b.q.Enqueued(), 1)
	byReq, err := b.s.SuiteRunByRequest(ctx, "acme", "req-1")
	require.NoError(t, err)
	require.Equal(t, sr.Id, byReq.Id)
	_, err = b.s.SuiteRunByRequest(ctx, "other", "req-1")
	require.ErrorIs(t, err, fault.ErrNotFound)

	// Another tenant's request IDs are its own.
	other, created, err := b.s.CreateSuiteRun(ctx, store.NewSuiteRun{
		Tenant: "other", RequestID: "req-1", Suite: &wfv1.Suite{Name: "smoke", Tests: []string{"x"}}, Tests: []*wfv1.Test{newTest("x")},
	}, b.q.enqueue)
	require.NoError(t, err)
	require.True(t, created)
	require.NotEqual(t, sr.Id, other.Id)

	// A failed enqueue writes nothing.
	failing := &fakeQueue{err: errors.New("queue down")}
	_, _, err = b.s.CreateSuiteRun(ctx, store.NewSuiteRun{
		Tenant: "acme", RequestID: "req-2", Suite: &wfv1.Suite{Name: "smoke"}, Tests: []*wfv1.Test{newTest("x")},
	}, failing.enqueue)
	require.Error(t, err)
	_, err = b.s.SuiteRunByRequest(ctx, "acme", "req-2")
	require.ErrorIs(t, err, fault.ErrNotFound)

	spec, err := b.s.SuiteRunSpec(ctx, sr.Id)
	require.NoError(t, err)
	require.Equal(t, "acme", spec.Tenant)
	require.Equal(t, "smoke", spec.Suite.Name)
	require.Len(t, spec.Tests, 3)
	require.True(t, proto.Equal(newTest("t1"), spec.Tests[1]), "snapshot %v", spec.Tests[1])

	_, err = b.s.GetSuiteRun(ctx, "not-a-uuid")
	require.ErrorIs(t, err, fault.ErrNotFound)
	_, err = b.s.GetSuiteRun(ctx, "00000000-0000-0000-0000-000000000000")
	require.ErrorIs(t, err, fault.ErrNotFound)
	_, err = b.s.SuiteRunSpec(ctx, "00000000-0000-0000-0000-000000000000")
	require.ErrorIs(t, err, fault.ErrNotFound)
}

func TestSuiteRunLifecycle(t *testing.T) {
	t.Parallel()
	b := setupSuites(t)
	ctx := t.Context()
	sr := b.startSuiteRun(t, "", 4)

	started, execute, err := b.s.StartSuiteRun(ctx, sr.Id)
	require.NoError(t, err)
	require.True(t, execute)
	require.Equal(t, wfv1.SuiteRunStatus_SUITE_RUN_STATUS_RUNNING, started.Status)
	require.NotNil(t, started.StartTime)
	resumed, execute, err := b.s.StartSuiteRun(ctx, sr.Id)
	require.NoError(t, err)
	require.True(t, execute, "a resumed slice goes on")
	require.True(t, proto.Equal(started.StartTime, resumed.StartTime))

	outcomes := []wfv1.TestOutcome{wfv1.TestOutcome_TEST_OUTCOME_PASSED, wfv1.TestOutcome_TEST_OUTCOME_FLAKY,
		wfv1.TestOutcome_TEST_OUTCOME_FAILED, wfv1.TestOutcome_TEST_OUTCOME_RUNNING}
	for i, o := range outcomes {
		require.NoError(t, b.s.PutTestResult(ctx, sr.Id, i, &wfv1.TestResult{Test: "ignored", Outcome: o, Score: 0.75,
			Attempts: []*wfv1.TestAttempt{{Number: 1, RunId: "r1", Passed: o == wfv1.TestOutcome_TEST_OUTCOME_PASSED}}}))
	}
	require.ErrorIs(t, b.s.PutTestResult(ctx, sr.Id, 4, &wfv1.TestResult{Outcome: wfv1.TestOutcome_TEST_OUTCOME_PASSED}), fault.ErrNotFound)
	require.ErrorIs(t, b.s.PutTestResult(ctx, sr.Id, 0, &wfv1.TestResult{}), fault.ErrInvalidArgument)

	got, err := b.s.GetSuiteRun(ctx, sr.Id)
	require.NoError(t, err)
	require.Equal(t, "t0", got.Results[0].Test, "a result keeps its test's name")
	require.InDelta(t, 0.75, got.Results[0].Score, 1e-9)
	require.Len(t, got.Results[1].Attempts, 1)
	require.True(t, proto.Equal(&wfv1.SuiteRunSummary{Total: 4, Passed: 1, Flaky: 1, Failed: 1, Running: 1}, got.Summary),
		"summary %v", got.Summary)

	list, _, err := b.s.ListSuiteRuns(ctx, store.ListSuiteRunsFilter{Tenant: "acme"})
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Empty(t, list[0].Results, "a list omits results")
	require.True(t, proto.Equal(got.Summary, list[0].Summary), "list summary %v", list[0].Summary)

	finished, err := b.s.FinishSuiteRun(ctx, sr.Id, wfv1.SuiteRunStatus_SUITE_RUN_STATUS_FAILED, "")
	require.NoError(t, err)
	require.Equal(t, wfv1.SuiteRunStatus_SUITE_RUN_STATUS_FAILED, finished.Status)
	require.NotNil(t, finished.EndTime)
	require.Equal(t, wfv1.TestOutcome_TEST_OUTCOME_SKIPPED, finished.Results[3].Outcome, "a final suite run has no running test")
	require.True(t, proto.Equal(&wfv1.SuiteRunSummary{Total: 4, Passed: 1, Flaky: 1, Failed: 1, Skipped: 1}, finished.Summary))

	// A final suite run does not change.
	again, err := b.s.FinishSuiteRun(ctx, sr.Id, wfv1.SuiteRunStatus_SUITE_RUN_STATUS_ERROR, "late")
	require.NoError(t, err)
	require.Equal(t, wfv1.SuiteRunStatus_SUITE_RUN_STATUS_FAILED, again.Status)
	require.Empty(t, again.Error)
	require.NoError(t, b.s.PutTestResult(ctx, sr.Id, 0, &wfv1.TestResult{Outcome: wfv1.TestOutcome_TEST_OUTCOME_FAILED}))
	got, err = b.s.GetSuiteRun(ctx, sr.Id)
	require.NoError(t, err)
	require.Equal(t, wfv1.TestOutcome_TEST_OUTCOME_PASSED, got.Results[0].Outcome)
	_, execute, err = b.s.StartSuiteRun(ctx, sr.Id)
	require.NoError(t, err)
	require.False(t, execute, "a final suite run is not executed again")
	cancelled, err := b.s.CancelSuiteRun(ctx, sr.Id, b.q.cancelJob)
	require.NoError(t, err)
	require.Equal(t, wfv1.SuiteRunStatus_SUITE_RUN_STATUS_FAILED, cancelled.Status)
	require.False(t, cancelled.CancelRequested)
	require.Empty(t, b.q.Cancelled())

	_, err = b.s.FinishSuiteRun(ctx, sr.Id, wfv1.SuiteRunStatus_SUITE_RUN_STATUS_RUNNING, "")
	require.ErrorIs(t, err, fault.ErrInvalidArgument)

	// ERROR keeps its message.
	sr2 := b.startSuiteRun(t, "", 1)
	errored, err := b.s.FinishSuiteRun(ctx, sr2.Id, wfv1.SuiteRunStatus_SUITE_RUN_STATUS_ERROR, "snapshot unreadable")
	require.NoError(t, err)
	require.Equal(t, "snapshot unreadable", errored.Error)
	require.Equal(t, wfv1.TestOutcome_TEST_OUTCOME_SKIPPED, errored.Results[0].Outcome)
}

func TestCancelSuiteRun(t *testing.T) {
	t.Parallel()
	b := setupSuites(t)
	ctx := t.Context()

	t.Run("queued", func(t *testing.T) {
		sr := b.startSuiteRun(t, "", 2)
		got, err := b.s.CancelSuiteRun(ctx, sr.Id, b.q.cancelJob)
		require.NoError(t, err)
		require.Equal(t, wfv1.SuiteRunStatus_SUITE_RUN_STATUS_CANCELLED, got.Status)
		require.True(t, got.CancelRequested)
		require.NotNil(t, got.EndTime)
		for _, r := range got.Results {
			require.Equal(t, wfv1.TestOutcome_TEST_OUTCOME_SKIPPED, r.Outcome)
			require.NotEmpty(t, r.Message)
		}
		require.True(t, proto.Equal(&wfv1.SuiteRunSummary{Total: 2, Skipped: 2}, got.Summary))
		require.Contains(t, b.q.Cancelled(), int64(100+len(b.q.Enqueued())-1), "its job is cancelled")
		_, execute, err := b.s.StartSuiteRun(ctx, sr.Id)
		require.NoError(t, err)
		require.False(t, execute)
	})
	t.Run("running", func(t *testing.T) {
		sr := b.startSuiteRun(t, "", 2)
		_, _, err := b.s.StartSuiteRun(ctx, sr.Id)
		require.NoError(t, err)
		before := len(b.q.Cancelled())
		got, err := b.s.CancelSuiteRun(ctx, sr.Id, b.q.cancelJob)
		require.NoError(t, err)
		require.Equal(t, wfv1.SuiteRunStatus_SUITE_RUN_STATUS_RUNNING, got.Status, "the executor ends it")
		require.True(t, got.CancelRequested)
		require.Len(t, b.q.Cancelled(), before, "the executing job is left to stop its runs")
		_, execute, err := b.s.StartSuiteRun(ctx, sr.Id)
		require.NoError(t, err)
		require.True(t, execute, "the executor sees the request and ends it")
		done, err := b.s.FinishSuiteRun(ctx, sr.Id, wfv1.SuiteRunStatus_SUITE_RUN_STATUS_CANCELLED, "")
		require.NoError(t, err)
		require.Equal(t, wfv1.SuiteRunStatus_SUITE_RUN_STATUS_CANCELLED, done.Status)
	})
	t.Run("job cancel fails", func(t *testing.T) {
		sr := b.startSuiteRun(t, "", 1)
		failing := &fakeQueue{cancelErr: errors.New("river down")}
		_, err := b.s.CancelSuiteRun(ctx, sr.Id, failing.cancelJob)
		require.Error(t, err)
		got, err := b.s.GetSuiteRun(ctx, sr.Id)
		require.NoError(t, err)
		require.Equal(t, wfv1.SuiteRunStatus_SUITE_RUN_STATUS_QUEUED, got.Status, "nothing changed")
		require.False(t, got.CancelRequested)
	})
	_, err := b.s.CancelSuiteRun(ctx, "00000000-0000-0000-0000-000000000000", b.q.cancelJob)
	require.ErrorIs(t, err, fault.ErrNotFound)
}

func TestListSuiteRunsPages(t *testing.T) {
	t.Parallel()
	b := setupSuites(t)
	ctx := t.Context()
	var ids []string
	for range 5 {
		ids = append(ids, b.startSuiteRun(t, "", 1).Id)
	}
	_, _, err := b.s.CreateSuiteRun(ctx, store.NewSuiteRun{
		Tenant: "acme", Suite: &wfv1.Suite{Name: "nightly"}, Tests: []*wfv1.Test{newTest("x")},
	}, b.q.enqueue)
	require.NoError(t, err)

	var got []string
	token := ""
	for range 5 {
		page, next, err := b.s.ListSuiteRuns(ctx, store.ListSuiteRunsFilter{Tenant: "acme", Suite: "smoke", PageSize: 2, PageToken: token})
		require.NoError(t, err)
		for _, sr := range page {
			require.Equal(t, "smoke", sr.Suite)
			require.EqualValues(t, 1, sr.Summary.GetTotal())
			got = append(got, sr.Id)
		}
		if token = next; token == "" {
			break
		}
	}
	require.Len(t, got, 5)
	for i := range got {
		require.Equal(t, ids[len(ids)-1-i], got[i], "newest first")
	}
	all, _, err := b.s.ListSuiteRuns(ctx, store.ListSuiteRunsFilter{Tenant: "acme"})
	require.NoError(t, err)
	require.Len(t, all, 6)
	none, _, err := b.s.ListSuiteRuns(ctx, store.ListSuiteRunsFilter{Tenant: "other"})
	require.NoError(t, err)
	require.Empty(t, none)
	_, _, err = b.s.ListSuiteRuns(ctx, store.ListSuiteRunsFilter{Tenant: "acme", PageToken: "garbage"})
	require.ErrorIs(t, err, fault.ErrInvalidArgument)
}

// TestSuiteRunNotifications: every change of a suite run is announced on
// the store's channel with its key.
func TestSuiteRunNotifications(t *testing.T) {
	t.Parallel()
	b := setupSuites(t)
	ctx := t.Context()
	conn, err := b.pool.Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	_, err = conn.Exec(ctx, "LISTEN "+pgx.Identifier{store.NotifyChannel}.Sanitize())
	require.NoError(t, err)
	next := func(what string) string {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		n, err := conn.Conn().WaitForNotification(wctx)
		require.NoError(t, err, what)
		return n.Payload
	}

	sr := b.startSuiteRun(t, "", 2)
	key := store.SuiteRunKey(sr.Id)
	require.Equal(t, "suite:"+sr.Id, key)
	require.Equal(t, key, next("create"))
	steps := []struct {
		name  string
		write func() error
	}{
		{"start", func() error { _, _, err := b.s.StartSuiteRun(ctx, sr.Id); return err }},
		{"result", func() error {
			return b.s.PutTestResult(ctx, sr.Id, 0, &wfv1.TestResult{Outcome: wfv1.TestOutcome_TEST_OUTCOME_RUNNING})
		}},
		{"cancel", func() error { _, err := b.s.CancelSuiteRun(ctx, sr.Id, b.q.cancelJob); return err }},
		{"finish", func() error {
			_, err := b.s.FinishSuiteRun(ctx, sr.Id, wfv1.SuiteRunStatus_SUITE_RUN_STATUS_CANCELLED, "")
			return err
		}},
	}
	for _, st := range steps {
		require.NoError(t, st.write(), st.name)
		require.Equal(t, key, next(st.name), st.name)
	}
	// A queued suite run's cancel announces its end too.
	sr2 := b.startSuiteRun(t, "", 1)
	require.Equal(t, store.SuiteRunKey(sr2.Id), next("create 2"))
	_, err = b.s.CancelSuiteRun(ctx, sr2.Id, b.q.cancelJob)
	require.NoError(t, err)
	require.Equal(t, store.SuiteRunKey(sr2.Id), next("cancel queued"))
}

// TestReapLostSuiteRuns: an unfinished suite run whose job is gone or
// finalized ends ERROR; one whose job lives, or that already ended, is
// left alone.
func TestReapLostSuiteRuns(t *testing.T) {
	t.Parallel()
	b := setupSuites(t)
	b.q = &fakeQueue{riverRows: true}
	ctx := t.Context()
	cases := []struct {
		name     string
		start    bool   // RUNNING rather than QUEUED
		finish   bool   // PASSED first
		jobState string // river_job state; "gone" deletes the job
		want     wfv1.SuiteRunStatus
	}{
		{"running, job discarded", true, false, "discarded", wfv1.SuiteRunStatus_SUITE_RUN_STATUS_ERROR},
		{"running, job completed", true, false, "completed", wfv1.SuiteRunStatus_SUITE_RUN_STATUS_ERROR},
		{"queued, job gone", false, false, "gone", wfv1.SuiteRunStatus_SUITE_RUN_STATUS_ERROR},
		{"running, job snoozed", true, false, "scheduled", wfv1.SuiteRunStatus_SUITE_RUN_STATUS_RUNNING},
		{"running, job running", true, false, "running", wfv1.SuiteRunStatus_SUITE_RUN_STATUS_RUNNING},
		{"queued, job available", false, false, "available", wfv1.SuiteRunStatus_SUITE_RUN_STATUS_QUEUED},
		{"passed, job discarded", true, true, "discarded", wfv1.SuiteRunStatus_SUITE_RUN_STATUS_PASSED},
	}
	ids := make([]string, len(cases))
	var wantReaped []string
	for i, c := range cases {
		sr := b.startSuiteRun(t, fmt.Sprintf("reap-%d", i), 2)
		ids[i] = sr.Id
		if c.start {
			_, _, err := b.s.StartSuiteRun(ctx, sr.Id)
			require.NoError(t, err)
			require.NoError(t, b.s.PutTestResult(ctx, sr.Id, 0, &wfv1.TestResult{Outcome: wfv1.TestOutcome_TEST_OUTCOME_RUNNING,
				Attempts: []*wfv1.TestAttempt{{Number: 1, RunId: "r1"}}}))
		}
		if c.finish {
			_, err := b.s.FinishSuiteRun(ctx, sr.Id, wfv1.SuiteRunStatus_SUITE_RUN_STATUS_PASSED, "")
			require.NoError(t, err)
		}
		var jobID int64
		require.NoError(t, b.pool.QueryRow(ctx, `SELECT job_id FROM suite_runs WHERE id = $1`, sr.Id).Scan(&jobID))
		if c.jobState == "gone" {
			_, err := b.pool.Exec(ctx, `DELETE FROM river_job WHERE id = $1`, jobID)
			require.NoError(t, err)
		} else {
			setJobState(t, b.pool, jobID, c.jobState)
		}
		if c.want == wfv1.SuiteRunStatus_SUITE_RUN_STATUS_ERROR {
			wantReaped = append(wantReaped, sr.Id)
		}
	}

	reaped, err := b.s.ReapLostSuiteRuns(ctx)
	require.NoError(t, err)
	require.ElementsMatch(t, wantReaped, reaped)
	for i, c := range cases {
		sr, err := b.s.GetSuiteRun(ctx, ids[i])
		require.NoError(t, err)
		require.Equal(t, c.want, sr.Status, c.name)
		if c.want == wfv1.SuiteRunStatus_SUITE_RUN_STATUS_ERROR {
			require.Contains(t, sr.Error, "job was lost", c.name)
			for _, r := range sr.Results {
				require.Equal(t, wfv1.TestOutcome_TEST_OUTCOME_SKIPPED, r.Outcome, c.name)
			}
		}
	}
	again, err := b.s.ReapLostSuiteRuns(ctx)
	require.NoError(t, err)
	require.Empty(t, again, "a reaped suite run is final")
}
