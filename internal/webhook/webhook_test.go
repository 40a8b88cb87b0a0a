package webhook_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/events"
	"github.com/wayfinder/wayfinder/internal/queue"
	"github.com/wayfinder/wayfinder/internal/secrets"
	"github.com/wayfinder/wayfinder/internal/store"
	"github.com/wayfinder/wayfinder/internal/store/storetest"
	"github.com/wayfinder/wayfinder/internal/webhook"
)

func TestMain(m *testing.M) { storetest.Main(m) }

const testSecret = "whsec-test-0123456789abcdef"

// received is one request a receiver got.
type received struct {
	header http.Header
	body   []byte
}

// receiver answers with the statuses of answers in turn, then 204; with
// retryAfter set, a 429 or 503 carries it as Retry-After.
type receiver struct {
	*httptest.Server
	mu         sync.Mutex
	answers    []int
	retryAfter string
	got        []received
	arrived    chan struct{}
}

func newReceiver(t *testing.T, answers ...int) *receiver {
	r := &receiver{answers: answers, arrived: make(chan struct{}, 100)}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, received{req.Header.Clone(), body})
		status := http.StatusNoContent
		if len(r.answers) > 0 {
			status, r.answers = r.answers[0], r.answers[1:]
		}
		if r.retryAfter != "" && (status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable) {
			w.Header().Set("Retry-After", r.retryAfter)
		}
		r.mu.Unlock()
		w.WriteHeader(status)
		r.arrived <- struct{}{}
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) wait(t *testing.T, n int) []received {
	t.Helper()
	for {
		r.mu.Lock()
		got := append([]received(nil), r.got...)
		r.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-r.arrived:
		case <-time.After(30 * time.Second):
			t.Fatalf("the receiver got %d requests, want %d", len(got), n)
		}
	}
}

type bundle struct {
	pool    *pgxpool.Pool
	store   *store.Store
	keyring *secrets.Keyring
	queue   *queue.Queue
	hub     *events.Hub
}

// setup starts a River queue that works webhook deliveries with fast
// retries, an events hub and a dispatcher, on a test database.
func setup(t *testing.T) bundle {
	t.Helper()
	pool := storetest.NewPool(t)
	st := store.New(pool)
	kr, err := secrets.Parse("k1:000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f")
	require.NoError(t, err)
	logger := slog.New(slog.DiscardHandler)
	workers := river.NewWorkers()
	river.AddWorker(workers, webhook.NewWorker(webhook.WorkerConfig{
		Store: st, Keyring: kr, Client: http.DefaultClient, Logger: logger,
		RetryDelay: func(int) time.Duration { return 10 * time.Millisecond },
	}))
	// The run jobs these tests enqueue are never worked.
	river.AddWorker(workers, river.WorkFunc(func(context.Context, *river.Job[queue.RunArgs]) error { return nil }))
	q, err := queue.New(pool, queue.Config{Workers: workers, Logger: logger})
	require.NoError(t, err)
	require.NoError(t, q.ServeWebhooks(2))
	ctx, cancel := context.WithCancel(context.Background())
	hub := events.NewHub(pool, store.NotifyChannel, logger)
	var wg sync.WaitGroup
	wg.Go(func() { _ = hub.Run(ctx) })
	require.NoError(t, q.Start(ctx))
	d := webhook.NewDispatcher(webhook.DispatcherConfig{Store: st, Queue: q, Hub: hub, Logger: logger})
	wg.Go(func() { d.Run(ctx) })
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		stopCtx, stop := context.WithTimeout(context.Background(), 10*time.Second)
		defer stop()
		_ = q.Stop(stopCtx)
	})
	return bundle{pool: pool, store: st, keyring: kr, queue: q, hub: hub}
}

// createRun stores a run whose params name a webhook to url, sealed like
// the API seals them.
func (b bundle) createRun(t *testing.T, url string, onApproval bool) *wfv1.Run {
	t.Helper()
	p := &wfv1.RunParams{Goal: "g", StartUrl: "https://example.com/",
		Webhook: &wfv1.RunWebhook{Url: url, OnApproval: onApproval, Secret: testSecret}}
	raw, err := protojson.Marshal(p)
	require.NoError(t, err)
	redacted := &wfv1.RunParams{Goal: "g", StartUrl: "https://example.com/",
		Webhook: &wfv1.RunWebhook{Url: url, OnApproval: onApproval, Secret: "[redacted]"}}
	run, _, err := b.store.CreateRun(t.Context(), store.NewRun{Params: redacted,
		Seal: func(id string) ([]byte, error) { return b.keyring.Seal(raw, secrets.RunParamsAAD(id)), nil },
	}, func(ctx context.Context, tx pgx.Tx, id string) (int64, error) {
		return b.queue.EnqueueRunTx(ctx, tx, id, time.Minute)
	})
	require.NoError(t, err)
	return run
}

// deliveries waits until the run has n deliveries all in a final state
// and returns them.
func (b bundle) deliveries(t *testing.T, runID string, n int) []*wfv1.WebhookDelivery {
	t.Helper()
	var out []*wfv1.WebhookDelivery
	require.Eventually(t, func() bool {
		var err error
		out, err = b.store.ListWebhookDeliveries(t.Context(), runID)
		require.NoError(t, err)
		if len(out) != n {
			return false
		}
		for _, d := range out {
			if d.State == store.WebhookPending {
				return false
			}
		}
		return true
	}, 30*time.Second, 20*time.Millisecond)
	return out
}

// TestDeliveryRetriedUntilDelivered: a finished run's webhook is POSTed
// signed, retried after a 500 and recorded delivered; the body is the
// finished run; the secret is nowhere in the record.
func TestDeliveryRetriedUntilDelivered(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rcv := newReceiver(t, http.StatusInternalServerError)
	run := b.createRun(t, rcv.URL+"/hook?tenant=acme", false)
	final, err := b.store.FinishRun(t.Context(), run.Id, store.Outcome{Status: wfv1.RunStatus_RUN_STATUS_COMPLETED, Summary: "done"})
	require.NoError(t, err)

	got := rcv.wait(t, 2)
	ds := b.deliveries(t, run.Id, 1)
	d := ds[0]
	require.Equal(t, store.WebhookDelivered, d.State)
	require.Equal(t, int32(2), d.Attempts)
	require.Equal(t, int32(http.StatusNoContent), d.LastStatus)
	require.Empty(t, d.LastError)
	require.Equal(t, webhook.EventRunFinished, d.Event)
	require.Equal(t, rcv.URL+"/hook?tenant=acme", d.Url)

	for _, r := range got {
		require.NoError(t, webhook.Verify(testSecret, r.header, r.body, time.Now()))
		require.Equal(t, d.Id, r.header.Get(webhook.HeaderID))
		require.Equal(t, "application/json", r.header.Get("Content-Type"))
		require.Equal(t, string(got[0].body), string(r.body), "a retry sends the same body")
		require.NotContains(t, string(r.body), testSecret)
	}
	var body struct {
		Event      string          `json:"event"`
		Run        json.RawMessage `json:"run"`
		DeliveryID string          `json:"delivery_id"`
		Time       time.Time       `json:"time"`
	}
	require.NoError(t, json.Unmarshal(got[0].body, &body))
	require.Equal(t, webhook.EventRunFinished, body.Event)
	require.Equal(t, d.Id, body.DeliveryID)
	require.WithinDuration(t, final.EndTime.AsTime(), body.Time, time.Second)
	bodyRun := &wfv1.Run{}
	require.NoError(t, protojson.Unmarshal(body.Run, bodyRun))
	require.Equal(t, run.Id, bodyRun.Id)
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_COMPLETED, bodyRun.Status)
	require.Equal(t, "done", bodyRun.Summary)
	require.Contains(t, string(body.Run), `"last_event_sequence"`, "proto field names, like the REST API")

	stored, err := b.store.GetWebhookDelivery(t.Context(), d.Id)
	require.NoError(t, err)
	require.Equal(t, string(got[0].body), string(stored.Body))
	require.NotContains(t, string(stored.Body), testSecret)
}

// TestDeliveryHonoursRetryAfter: a receiver that answers 429 with
// Retry-After gets its next attempt no sooner than it asked (the test's
// retry schedule is 10 ms).
func TestDeliveryHonoursRetryAfter(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rcv := newReceiver(t, http.StatusTooManyRequests)
	rcv.retryAfter = "3600"
	run := b.createRun(t, rcv.URL, false)
	_, err := b.store.FinishRun(t.Context(), run.Id, store.Outcome{Status: wfv1.RunStatus_RUN_STATUS_COMPLETED})
	require.NoError(t, err)
	rcv.wait(t, 1)
	var scheduled time.Time
	var state string
	require.Eventually(t, func() bool {
		err := b.pool.QueryRow(t.Context(), `
			SELECT j.state::text, j.scheduled_at FROM river_job j
			JOIN webhook_deliveries d ON j.args->>'delivery_id' = d.id::text
			WHERE d.run_id = $1`, run.Id).Scan(&state, &scheduled)
		return err == nil && state == "retryable"
	}, 30*time.Second, 20*time.Millisecond)
	require.Greater(t, time.Until(scheduled), 50*time.Minute, "the next attempt waits for the receiver's Retry-After")
	ds, err := b.store.ListWebhookDeliveries(t.Context(), run.Id)
	require.NoError(t, err)
	require.Equal(t, store.WebhookPending, ds[0].State)
	require.Equal(t, int32(http.StatusTooManyRequests), ds[0].LastStatus)
}

// TestDeliveryGivesUp: a receiver that always fails gets every attempt,
// then the delivery is failed with the last status and error.
func TestDeliveryGivesUp(t *testing.T) {
	t.Parallel()
	b := setup(t)
	answers := make([]int, queue.WebhookMaxAttempts+5)
	for i := range answers {
		answers[i] = http.StatusServiceUnavailable
	}
	rcv := newReceiver(t, answers...)
	run := b.createRun(t, rcv.URL, false)
	_, err := b.store.FinishRun(t.Context(), run.Id, store.Outcome{Status: wfv1.RunStatus_RUN_STATUS_FAILED})
	require.NoError(t, err)
	d := b.deliveries(t, run.Id, 1)[0]
	require.Equal(t, store.WebhookFailed, d.State)
	require.Equal(t, int32(queue.WebhookMaxAttempts), d.Attempts)
	require.Equal(t, int32(http.StatusServiceUnavailable), d.LastStatus)
	require.Equal(t, "HTTP 503 Service Unavailable", d.LastError)
	require.Len(t, rcv.wait(t, queue.WebhookMaxAttempts), queue.WebhookMaxAttempts)
}

// TestApprovalRequestsDelivered: with on_approval an approval request is
// POSTed with the run awaiting approval; without it, only the finish.
func TestApprovalRequestsDelivered(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rcv := newReceiver(t)
	ctx := t.Context()
	with, without := b.createRun(t, rcv.URL+"/with", true), b.createRun(t, rcv.URL+"/without", false)
	for _, r := range []*wfv1.Run{with, without} {
		_, _, err := b.store.StartRun(ctx, r.Id)
		require.NoError(t, err)
		_, err = b.store.AppendEvent(ctx, r.Id, &wfv1.RunEvent{Type: wfv1.RunEventType_RUN_EVENT_TYPE_APPROVAL_REQUESTED,
			Status:  wfv1.RunStatus_RUN_STATUS_AWAITING_APPROVAL,
			Payload: &wfv1.RunEvent_Approval{Approval: &wfv1.ApprovalRequest{Id: "a1", Action: "pay the invoice"}}})
		require.NoError(t, err)
	}
	d := b.deliveries(t, with.Id, 1)[0]
	require.Equal(t, webhook.EventApprovalRequested, d.Event)
	got := rcv.wait(t, 1)
	var body struct {
		Event string          `json:"event"`
		Run   json.RawMessage `json:"run"`
	}
	require.NoError(t, json.Unmarshal(got[0].body, &body))
	require.Equal(t, webhook.EventApprovalRequested, body.Event)
	bodyRun := &wfv1.Run{}
	require.NoError(t, protojson.Unmarshal(body.Run, bodyRun))
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_AWAITING_APPROVAL, bodyRun.Status)
	require.Equal(t, "pay the invoice", bodyRun.GetPendingApproval().GetAction())

	for _, r := range []*wfv1.Run{with, without} {
		_, err := b.store.FinishRun(ctx, r.Id, store.Outcome{Status: wfv1.RunStatus_RUN_STATUS_CANCELLED})
		require.NoError(t, err)
	}
	require.Len(t, b.deliveries(t, with.Id, 2), 2)
	ds := b.deliveries(t, without.Id, 1)
	require.Equal(t, webhook.EventRunFinished, ds[0].Event)
}

// TestDeliveryWithoutSecretFails: a delivery whose secret cannot be opened
// fails at once instead of retrying for an hour.
func TestDeliveryWithoutSecretFails(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rcv := newReceiver(t)
	p := &wfv1.RunParams{Goal: "g", StartUrl: "https://example.com/", Webhook: &wfv1.RunWebhook{Url: rcv.URL, Secret: "[redacted]"}}
	run, _, err := b.store.CreateRun(t.Context(), store.NewRun{Params: p},
		func(ctx context.Context, tx pgx.Tx, id string) (int64, error) {
			return b.queue.EnqueueRunTx(ctx, tx, id, time.Minute)
		})
	require.NoError(t, err)
	_, err = b.store.FinishRun(t.Context(), run.Id, store.Outcome{Status: wfv1.RunStatus_RUN_STATUS_COMPLETED})
	require.NoError(t, err)
	d := b.deliveries(t, run.Id, 1)[0]
	require.Equal(t, store.WebhookFailed, d.State)
	require.Equal(t, int32(1), d.Attempts)
	require.Contains(t, d.LastError, "secret")
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	require.Empty(t, rcv.got, "an unsigned delivery was sent")
}
