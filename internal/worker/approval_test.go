package worker

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/durationpb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/events"
	"github.com/wayfinder/wayfinder/internal/runner"
	"github.com/wayfinder/wayfinder/internal/store"
	"github.com/wayfinder/wayfinder/internal/store/storetest"
)

// approvalBundle is a started run and its approvals, woken by a real hub
// and never by polling (poll is an hour): an answer that arrives proves the
// notification path.
type approvalBundle struct {
	store *store.Store
	run   *wfv1.Run
	hub   *events.Hub
	ap    *approvals
}

func newApprovalBundle(t *testing.T, settings *wfv1.ApprovalSettings) *approvalBundle {
	t.Helper()
	ctx := t.Context()
	pool := storetest.NewPool(t)
	st := store.New(pool)
	run, _, err := st.CreateRun(ctx, store.NewRun{Params: &wfv1.RunParams{Goal: "g", StartUrl: "https://example.com", Approval: settings}},
		func(context.Context, pgx.Tx, string) (int64, error) { return 1, nil })
	require.NoError(t, err)
	_, _, err = st.StartRun(ctx, run.Id)
	require.NoError(t, err)
	hub := events.NewHub(pool, store.NotifyChannel, slog.New(slog.DiscardHandler))
	hubCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = hub.Run(hubCtx); close(done) }()
	t.Cleanup(func() { stop(); <-done })
	return &approvalBundle{store: st, run: run, hub: hub,
		ap: &approvals{store: st, hub: hub, runID: run.Id, log: slog.New(slog.DiscardHandler), poll: time.Hour}}
}

// waitPending waits until the run awaits approval and returns the request.
func (b *approvalBundle) waitPending(t *testing.T) *wfv1.ApprovalRequest {
	t.Helper()
	wake, unsubscribe := b.hub.Subscribe(b.run.Id)
	defer unsubscribe()
	for {
		run, err := b.store.GetRun(t.Context(), b.run.Id)
		require.NoError(t, err)
		if run.Status == wfv1.RunStatus_RUN_STATUS_AWAITING_APPROVAL {
			require.NotNil(t, run.PendingApproval)
			return run.PendingApproval
		}
		select {
		case <-wake:
		case <-time.After(100 * time.Millisecond): // before the hub listens
		case <-t.Context().Done():
			t.Fatal("the run never awaited approval")
		}
	}
}

type waitResult struct {
	ans runner.ApprovalAnswer
	err error
}

func (b *approvalBundle) request(ctx context.Context, req runner.ApprovalRequest) <-chan waitResult {
	out := make(chan waitResult, 1)
	go func() {
		ans, err := b.ap.RequestApproval(ctx, req)
		out <- waitResult{ans, err}
	}()
	return out
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func TestApprovalAnsweredWakesWait(t *testing.T) {
	t.Parallel()
	for _, approved := range []bool{true, false} {
		t.Run(map[bool]string{true: "approved", false: "rejected"}[approved], func(t *testing.T) {
			t.Parallel()
			b := newApprovalBundle(t, nil)
			res := b.request(testCtx(t), runner.ApprovalRequest{Source: runner.SourceCheckpoint, Action: "payment",
				Reason: "checkpoint", Step: 3, URL: "https://example.com/pay", Screenshot: []byte("png")})
			pending := b.waitPending(t)
			require.Equal(t, "payment", pending.Action)
			require.EqualValues(t, 3, pending.StepNumber)
			require.NotEmpty(t, pending.ScreenshotMediaId)

			run, _, err := b.store.AnswerApproval(t.Context(), b.run.Id, store.Answer{ApprovalID: pending.Id, Approved: approved,
				Message: "ok by me", By: store.AnsweredByHuman})
			require.NoError(t, err)
			require.Equal(t, wfv1.RunStatus_RUN_STATUS_RUNNING, run.Status)
			got := <-res
			require.NoError(t, got.err)
			require.Equal(t, runner.ApprovalAnswer{Approved: approved, Message: "ok by me"}, got.ans)
		})
	}
}

func TestApprovalTimeoutPolicies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		policy wfv1.ApprovalTimeoutPolicy
		end    runner.Status
		msg    string
	}{
		{wfv1.ApprovalTimeoutPolicy_APPROVAL_TIMEOUT_POLICY_UNSPECIFIED, 0, "no answer within 1s; treated as a rejection"},
		{wfv1.ApprovalTimeoutPolicy_APPROVAL_TIMEOUT_POLICY_REJECT, 0, "no answer within 1s; treated as a rejection"},
		{wfv1.ApprovalTimeoutPolicy_APPROVAL_TIMEOUT_POLICY_FAIL, runner.StatusFailed, "no answer within 1s; the run's approval timeout policy fails the run"},
		{wfv1.ApprovalTimeoutPolicy_APPROVAL_TIMEOUT_POLICY_CANCEL, runner.StatusCancelled, "no answer within 1s; the run's approval timeout policy cancels the run"},
	}
	for _, tc := range tests {
		t.Run(tc.policy.String(), func(t *testing.T) {
			t.Parallel()
			b := newApprovalBundle(t, &wfv1.ApprovalSettings{Timeout: durationpb.New(time.Second), OnTimeout: tc.policy})
			got := <-b.request(testCtx(t), runner.ApprovalRequest{Source: runner.SourceModel, Action: "pay"})
			require.NoError(t, got.err)
			require.Equal(t, runner.ApprovalAnswer{TimedOut: true, End: tc.end, Message: tc.msg}, got.ans)
			run, err := b.store.GetRun(t.Context(), b.run.Id)
			require.NoError(t, err)
			require.Equal(t, wfv1.RunStatus_RUN_STATUS_RUNNING, run.Status)
			evs, err := b.store.ListEvents(t.Context(), b.run.Id, 0, 100)
			require.NoError(t, err)
			last := evs[len(evs)-1]
			require.Equal(t, wfv1.RunEventType_RUN_EVENT_TYPE_APPROVAL_ANSWERED, last.Type)
			require.Equal(t, store.AnsweredByTimeout, last.GetApproval().GetAnsweredBy())
		})
	}
}

// A worker that stops while it waits leaves the approval open; the worker
// that resumes the run waits for the same request and gets its answer.
func TestApprovalResumedAfterShutdown(t *testing.T) {
	t.Parallel()
	b := newApprovalBundle(t, nil)
	ctx, shutdown := context.WithCancel(testCtx(t))
	res := b.request(ctx, runner.ApprovalRequest{Source: runner.SourceModel, Action: "delete the account", Reason: "irreversible"})
	first := b.waitPending(t)
	shutdown()
	require.ErrorIs(t, (<-res).err, context.Canceled)
	run, err := b.store.GetRun(t.Context(), b.run.Id)
	require.NoError(t, err)
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_RUNNING, run.Status, "handed back like a running run")
	require.NoError(t, b.store.RequeueRun(t.Context(), b.run.Id, "worker shutting down"))
	_, _, err = b.store.StartRun(t.Context(), b.run.Id)
	require.NoError(t, err)

	type resumed struct {
		req runner.ApprovalRequest
		ans runner.ApprovalAnswer
		ok  bool
		err error
	}
	out := make(chan resumed, 1)
	next := &approvals{store: b.store, hub: b.hub, runID: b.run.Id, log: slog.New(slog.DiscardHandler), poll: time.Hour}
	go func() {
		req, ans, ok, err := next.ResumeApproval(testCtx(t))
		out <- resumed{req, ans, ok, err}
	}()
	again := b.waitPending(t)
	require.Equal(t, first.Id, again.Id, "the same request, not a new one")
	_, _, err = b.store.AnswerApproval(t.Context(), b.run.Id, store.Answer{Approved: false, Message: "keep it", By: store.AnsweredByHuman})
	require.NoError(t, err)
	got := <-out
	require.NoError(t, got.err)
	require.True(t, got.ok)
	require.Equal(t, "delete the account", got.req.Action)
	require.Equal(t, runner.ApprovalAnswer{Message: "keep it"}, got.ans)

	none, _, ok, err := next.ResumeApproval(testCtx(t))
	require.NoError(t, err)
	require.False(t, ok, "nothing left open: %+v", none)
}

// A run cancelled while it waits closes its approval: nobody will answer it.
func TestApprovalClosedWhenCancelled(t *testing.T) {
	t.Parallel()
	b := newApprovalBundle(t, nil)
	ctx, cancel := context.WithCancelCause(testCtx(t))
	res := b.request(ctx, runner.ApprovalRequest{Source: runner.SourceModel, Action: "pay"})
	pending := b.waitPending(t)
	cancel(rivertype.ErrJobCancelledRemotely)
	require.True(t, errors.Is((<-res).err, rivertype.ErrJobCancelledRemotely))
	got, err := b.store.GetApproval(t.Context(), b.run.Id, pending.Id)
	require.NoError(t, err)
	require.Equal(t, store.AnsweredByCancel, got.AnsweredBy)
	require.False(t, got.Approved)
}

func TestLiveParams(t *testing.T) {
	t.Parallel()
	var rp runner.Params
	err := LiveParams(&rp, &wfv1.RunParams{
		Checkpoints: []*wfv1.Checkpoint{{Name: "pay", UrlPattern: "/pay$", ElementRole: "button", ElementNamePattern: "(?i)pay", Repeat: true}},
		Completion: &wfv1.CompletionCriteria{
			Success: []*wfv1.Indicator{{Name: "t", Condition: &wfv1.Indicator_TitlePattern{TitlePattern: "Done"}}},
			Failure: []*wfv1.Indicator{{Name: "js", Condition: &wfv1.Indicator_JsExpression{JsExpression: "window.err"}}},
		},
	})
	require.NoError(t, err)
	require.Len(t, rp.Checkpoints, 1)
	cp := rp.Checkpoints[0]
	require.Equal(t, "/pay$", cp.URL.String())
	require.Nil(t, cp.Title)
	require.Equal(t, "(?i)pay", cp.ElementName.String())
	require.True(t, cp.Repeat)
	require.Equal(t, runner.IndicatorTitle, rp.Criteria.Success[0].Kind)
	require.Equal(t, "Done", rp.Criteria.Success[0].Pattern.String())
	require.Equal(t, runner.Indicator{Name: "js", Kind: runner.IndicatorJS, Value: "window.err"}, rp.Criteria.Failure[0])

	back := criteriaProto([]runner.IndicatorResult{{Indicator: rp.Criteria.Success[0], Set: runner.SetSuccess, Matched: true, Step: 2}})
	require.Equal(t, "Done", back[0].GetIndicator().GetTitlePattern())
	require.Equal(t, "success", back[0].Kind)

	require.Error(t, LiveParams(&rp, &wfv1.RunParams{Checkpoints: []*wfv1.Checkpoint{{UrlPattern: "("}}}))
}
