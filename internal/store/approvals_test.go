package store_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/store"
)

func TestApprovalLifecycle(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t)
	ctx := t.Context()
	run := createRun(t, s, &fakeQueue{jobID: 1}, nil)
	startRun(t, s, run.Id)

	_, _, err := s.AnswerApproval(ctx, run.Id, store.Answer{Approved: true, By: store.AnsweredByHuman})
	require.ErrorIs(t, err, fault.ErrFailedPrecondition, "a running run has nothing to answer")

	shot := &store.Media{ContentType: "image/png", Data: []byte("png")}
	req, err := s.OpenApproval(ctx, run.Id, &wfv1.ApprovalRequest{Source: "checkpoint", Action: "Pay", Reason: "checkpoint Pay",
		StepNumber: 2, Url: "https://example.com/pay"}, shot)
	require.NoError(t, err)
	require.NotEmpty(t, req.Id)
	require.NotNil(t, req.RequestTime)
	require.NotEmpty(t, req.ScreenshotMediaId)
	got := getRun(t, s, run.Id)
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_AWAITING_APPROVAL, got.Status)
	require.True(t, proto.Equal(req, got.PendingApproval), "%v != %v", req, got.PendingApproval)
	evs := listEvents(t, s, run.Id)
	last := evs[len(evs)-1]
	require.Equal(t, wfv1.RunEventType_RUN_EVENT_TYPE_APPROVAL_REQUESTED, last.Type)
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_AWAITING_APPROVAL, last.Status)
	require.Equal(t, req.Id, last.GetApproval().GetId())
	list, _, err := s.ListRuns(ctx, store.ListRunsFilter{})
	require.NoError(t, err)
	require.Equal(t, req.Id, list[0].GetPendingApproval().GetId(), "listed runs carry their pending approval")

	again, err := s.OpenApproval(ctx, run.Id, &wfv1.ApprovalRequest{Source: "model", Action: "other"}, nil)
	require.NoError(t, err)
	require.Equal(t, req.Id, again.Id, "a run has one open approval; asking again returns it")
	require.Len(t, listEvents(t, s, run.Id), len(evs), "re-waiting for the open approval writes nothing")

	_, _, err = s.AnswerApproval(ctx, run.Id, store.Answer{ApprovalID: uuid.NewString(), Approved: true, By: store.AnsweredByHuman})
	require.ErrorIs(t, err, fault.ErrFailedPrecondition, "an approval that is not the open one")

	answered, areq, err := s.AnswerApproval(ctx, run.Id, store.Answer{ApprovalID: req.Id, Approved: false, Message: "use the other card", By: store.AnsweredByHuman})
	require.NoError(t, err)
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_RUNNING, answered.Status)
	require.Nil(t, answered.PendingApproval)
	require.False(t, areq.Approved)
	require.Equal(t, "use the other card", areq.Message)
	require.Equal(t, store.AnsweredByHuman, areq.AnsweredBy)
	require.NotNil(t, areq.AnswerTime)
	evs = listEvents(t, s, run.Id)
	last = evs[len(evs)-1]
	require.Equal(t, wfv1.RunEventType_RUN_EVENT_TYPE_APPROVAL_ANSWERED, last.Type)
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_RUNNING, last.Status)
	require.Equal(t, "use the other card", last.GetApproval().GetMessage())

	stored, err := s.GetApproval(ctx, run.Id, req.Id)
	require.NoError(t, err)
	require.True(t, proto.Equal(areq, stored))
	open, err := s.PendingApproval(ctx, run.Id)
	require.NoError(t, err)
	require.Nil(t, open)

	_, _, err = s.AnswerApproval(ctx, run.Id, store.Answer{Approved: true, By: store.AnsweredByHuman})
	require.ErrorIs(t, err, fault.ErrFailedPrecondition, "answered twice")
	require.Equal(t, 1, count(t, pool, `SELECT count(*) FROM approvals WHERE run_id = $1`, run.Id))

	_, err = s.GetApproval(ctx, run.Id, uuid.NewString())
	require.ErrorIs(t, err, fault.ErrNotFound)
}

// A run whose worker stops while it waits keeps its approval open; the run
// is handed back to the queue and the next worker waits for the same one.
func TestApprovalSurvivesRequeue(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := t.Context()
	run := createRun(t, s, &fakeQueue{jobID: 1}, nil)
	startRun(t, s, run.Id)
	req, err := s.OpenApproval(ctx, run.Id, &wfv1.ApprovalRequest{Source: "model", Action: "delete"}, nil)
	require.NoError(t, err)

	require.NoError(t, s.SuspendApproval(ctx, run.Id))
	require.NoError(t, s.RequeueRun(ctx, run.Id, "worker shutting down"))
	got := getRun(t, s, run.Id)
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_QUEUED, got.Status)
	require.Nil(t, got.PendingApproval, "only a run that waits shows its approval")
	_, _, err = s.AnswerApproval(ctx, run.Id, store.Answer{Approved: true, By: store.AnsweredByHuman})
	require.ErrorIs(t, err, fault.ErrFailedPrecondition, "nobody waits while it is queued")

	startRun(t, s, run.Id)
	again, err := s.OpenApproval(ctx, run.Id, &wfv1.ApprovalRequest{Source: "model", Action: "delete"}, nil)
	require.NoError(t, err)
	require.Equal(t, req.Id, again.Id)
	got = getRun(t, s, run.Id)
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_AWAITING_APPROVAL, got.Status)
	require.Equal(t, req.Id, got.GetPendingApproval().GetId())
	evs := listEvents(t, s, run.Id)
	require.Equal(t, wfv1.RunEventType_RUN_EVENT_TYPE_APPROVAL_REQUESTED, evs[len(evs)-1].Type)

	_, _, err = s.AnswerApproval(ctx, run.Id, store.Answer{ApprovalID: req.Id, By: store.AnsweredByCancel, Message: "run cancelled"})
	require.NoError(t, err)
	closed, err := s.GetApproval(ctx, run.Id, req.Id)
	require.NoError(t, err)
	require.Equal(t, store.AnsweredByCancel, closed.AnsweredBy)
	require.False(t, closed.Approved)
}

func TestOpenApprovalOfFinishedRun(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	run := createRun(t, s, &fakeQueue{jobID: 1}, nil)
	startRun(t, s, run.Id)
	_, err := s.FinishRun(t.Context(), run.Id, store.Outcome{Status: wfv1.RunStatus_RUN_STATUS_COMPLETED})
	require.NoError(t, err)
	_, err = s.OpenApproval(t.Context(), run.Id, &wfv1.ApprovalRequest{Source: "model", Action: "x"}, nil)
	require.ErrorIs(t, err, fault.ErrFailedPrecondition)
	_, err = s.OpenApproval(t.Context(), uuid.NewString(), &wfv1.ApprovalRequest{Source: "model", Action: "x"}, nil)
	require.ErrorIs(t, err, fault.ErrNotFound)
}

func TestRunCriteria(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	run := createRun(t, s, &fakeQueue{jobID: 1}, nil)
	require.Nil(t, getRun(t, s, run.Id).Criteria)
	results := []*wfv1.IndicatorResult{
		{Indicator: &wfv1.Indicator{Name: "done", Condition: &wfv1.Indicator_TitlePattern{TitlePattern: "Done"}}, Kind: "success", Matched: true, StepNumber: 3},
		{Indicator: &wfv1.Indicator{Name: "err", Condition: &wfv1.Indicator_ElementPresent{ElementPresent: "[["}}, Kind: "failure", Error: "invalid selector", StepNumber: 3},
		{Indicator: &wfv1.Indicator{Name: "greeting", Condition: &wfv1.Indicator_TextPresent{TextPresent: "Welcome back"}}, Kind: "report", Matched: true, StepNumber: 3},
	}
	require.NoError(t, s.SetRunCriteria(t.Context(), run.Id, results))
	got := getRun(t, s, run.Id).Criteria
	require.Len(t, got, 3)
	require.Equal(t, "report", got[2].Kind)
	for i := range results {
		require.True(t, proto.Equal(results[i], got[i]), "%v != %v", results[i], got[i])
	}
}
