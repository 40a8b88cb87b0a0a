package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/store"
)

func webhookRun(t *testing.T, s *store.Store, q *fakeQueue, onApproval bool) *wfv1.Run {
	t.Helper()
	p := testParams(nil)
	p.Webhook = &wfv1.RunWebhook{Url: "https://hooks.example.com/wayfinder", OnApproval: onApproval, Secret: "[redacted]"}
	run, _, err := s.CreateRun(t.Context(), store.NewRun{Params: p}, q.enqueue)
	require.NoError(t, err)
	return run
}

// TestWebhookSources: FINISHED events of webhook runs, APPROVAL_REQUESTED
// ones only with on_approval, nothing of runs without a webhook, and
// nothing that already has its delivery.
func TestWebhookSources(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := t.Context()
	q := &fakeQueue{jobID: 1}
	since := time.Now().Add(-time.Minute)
	plain := createRun(t, s, q, nil)
	finished := webhookRun(t, s, q, false)
	approvals := webhookRun(t, s, q, true)
	noApprovals := webhookRun(t, s, q, false)
	for _, r := range []*wfv1.Run{plain, finished} {
		_, err := s.FinishRun(ctx, r.Id, store.Outcome{Status: wfv1.RunStatus_RUN_STATUS_COMPLETED})
		require.NoError(t, err)
	}
	for _, r := range []*wfv1.Run{approvals, noApprovals} {
		startRun(t, s, r.Id)
		_, err := s.AppendEvent(ctx, r.Id, &wfv1.RunEvent{Type: wfv1.RunEventType_RUN_EVENT_TYPE_APPROVAL_REQUESTED,
			Payload: &wfv1.RunEvent_Approval{Approval: &wfv1.ApprovalRequest{Id: uuid.NewString(), Action: "pay"}}})
		require.NoError(t, err)
	}

	srcs, now, err := s.WebhookSources(ctx, since, 100)
	require.NoError(t, err)
	require.WithinDuration(t, time.Now(), now, time.Minute)
	got := map[string]wfv1.RunEventType{}
	for _, src := range srcs {
		got[src.Event.RunId] = src.Event.Type
		require.Equal(t, "https://hooks.example.com/wayfinder", src.Webhook.Url)
	}
	require.Equal(t, map[string]wfv1.RunEventType{
		finished.Id:  wfv1.RunEventType_RUN_EVENT_TYPE_FINISHED,
		approvals.Id: wfv1.RunEventType_RUN_EVENT_TYPE_APPROVAL_REQUESTED,
	}, got)

	// Once delivered (or being delivered), an event is no longer a source.
	var enqueued []string
	enqueue := func(_ context.Context, _ pgx.Tx, id string) error { enqueued = append(enqueued, id); return nil }
	for _, src := range srcs {
		created, err := s.CreateWebhookDelivery(ctx, store.NewWebhookDelivery{ID: uuid.NewString(), RunID: src.Event.RunId,
			EventSeq: src.Event.Sequence, Event: "run.finished", URL: src.Webhook.Url, Body: []byte(`{}`)}, enqueue)
		require.NoError(t, err)
		require.True(t, created)
	}
	require.Len(t, enqueued, 2)
	srcs, _, err = s.WebhookSources(ctx, since, 100)
	require.NoError(t, err)
	require.Empty(t, srcs)
	srcs, _, err = s.WebhookSources(ctx, now, 100)
	require.NoError(t, err)
	require.Empty(t, srcs, "events before since are not sources")
}

// TestWebhookDeliveryLifecycle: one original delivery per event even when
// dispatchers race; redeliveries; attempts recorded until a final state;
// an enqueue error writes nothing.
func TestWebhookDeliveryLifecycle(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := t.Context()
	q := &fakeQueue{jobID: 1}
	run := webhookRun(t, s, q, false)
	final, err := s.FinishRun(ctx, run.Id, store.Outcome{Status: wfv1.RunStatus_RUN_STATUS_COMPLETED})
	require.NoError(t, err)
	seq := final.LastEventSequence

	var (
		mu       sync.Mutex
		enqueued []string
		wg       sync.WaitGroup
	)
	enqueue := func(_ context.Context, _ pgx.Tx, id string) error {
		mu.Lock()
		defer mu.Unlock()
		enqueued = append(enqueued, id)
		return nil
	}
	for range 4 {
		wg.Go(func() {
			_, err := s.CreateWebhookDelivery(ctx, store.NewWebhookDelivery{ID: uuid.NewString(), RunID: run.Id, EventSeq: seq,
				Event: "run.finished", URL: "https://hooks.example.com/wayfinder", Body: []byte(`{"event":"run.finished"}`)}, enqueue)
			require.NoError(t, err)
		})
	}
	wg.Wait()
	require.Len(t, enqueued, 1, "racing dispatchers made more than one delivery")
	original := enqueued[0]

	_, err = s.CreateWebhookDelivery(ctx, store.NewWebhookDelivery{ID: uuid.NewString(), RunID: run.Id, EventSeq: seq + 1,
		Event: "run.finished", URL: "u", Body: []byte(`{}`)}, func(context.Context, pgx.Tx, string) error { return errors.New("queue down") })
	require.ErrorContains(t, err, "queue down")
	list, err := s.ListWebhookDeliveries(ctx, run.Id)
	require.NoError(t, err)
	require.Len(t, list, 1, "a failed enqueue left a delivery behind")

	d, err := s.GetWebhookDelivery(ctx, original)
	require.NoError(t, err)
	require.Equal(t, store.WebhookPending, d.State)
	require.Equal(t, `{"event":"run.finished"}`, string(d.Body))
	require.Equal(t, seq, d.EventSeq)
	require.Empty(t, d.RedeliveryOf)

	require.NoError(t, s.RecordWebhookAttempt(ctx, original, store.WebhookAttempt{Attempt: 1, Status: 500, Err: "HTTP 500", State: store.WebhookPending}))
	require.NoError(t, s.RecordWebhookAttempt(ctx, original, store.WebhookAttempt{Attempt: 2, Status: 204, State: store.WebhookDelivered}))
	err = s.RecordWebhookAttempt(ctx, original, store.WebhookAttempt{Attempt: 3, Status: 204, State: store.WebhookDelivered})
	require.ErrorIs(t, err, store.ErrWebhookDone)
	d, err = s.GetWebhookDelivery(ctx, original)
	require.NoError(t, err)
	require.Equal(t, store.WebhookDelivered, d.State)
	require.Equal(t, int32(2), d.Attempts)
	require.Equal(t, int32(204), d.LastStatus)
	require.Empty(t, d.LastError)
	require.NotNil(t, d.DeliveredTime)

	again := uuid.NewString()
	created, err := s.CreateWebhookDelivery(ctx, store.NewWebhookDelivery{ID: again, RunID: run.Id, EventSeq: seq,
		Event: d.Event, URL: d.Url, Body: d.Body, RedeliveryOf: original}, enqueue)
	require.NoError(t, err)
	require.True(t, created, "a redelivery is a new delivery")
	require.NoError(t, s.RecordWebhookAttempt(ctx, again, store.WebhookAttempt{Attempt: 8, Status: 0, Err: "connection refused", State: store.WebhookFailed}))
	list, err = s.ListWebhookDeliveries(ctx, run.Id)
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.Equal(t, again, list[0].Id, "newest first")
	require.Equal(t, store.WebhookFailed, list[0].State)
	require.Equal(t, int32(8), list[0].Attempts)
	require.Equal(t, "connection refused", list[0].LastError)
	require.Nil(t, list[0].DeliveredTime)

	_, err = s.GetWebhookDelivery(ctx, uuid.NewString())
	require.ErrorIs(t, err, fault.ErrNotFound)
	_, err = s.GetWebhookDelivery(ctx, "not-a-uuid")
	require.ErrorIs(t, err, fault.ErrNotFound)
	require.Error(t, s.RecordWebhookAttempt(ctx, again, store.WebhookAttempt{State: "lost"}))
}

// TestSaveMedia: media are stored once per content.
func TestSaveMedia(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := t.Context()
	run := createRun(t, s, &fakeQueue{jobID: 1}, nil)
	id, err := s.SaveMedia(ctx, run.Id, 3, &store.Media{ContentType: "image/jpeg", Data: []byte("jpeg bytes")})
	require.NoError(t, err)
	same, err := s.SaveMedia(ctx, run.Id, 3, &store.Media{ContentType: "image/jpeg", Data: []byte("jpeg bytes")})
	require.NoError(t, err)
	require.Equal(t, id, same)
	m, err := s.GetMedia(ctx, id)
	require.NoError(t, err)
	require.Equal(t, "image/jpeg", m.ContentType)
	require.Equal(t, int32(3), m.StepNumber)
	require.Equal(t, run.Id, m.RunID)
}
