package server_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/config"
	"github.com/wayfinder/wayfinder/internal/store/storetest"
	"github.com/wayfinder/wayfinder/internal/webhook"
)

const hookSecret = "whsec-for-tests-7f3a9c2e51d84b06"

// hookRequest is one POST a receiver got, with its signature checked.
type hookRequest struct {
	header  http.Header
	body    []byte
	verify  error
	arrival time.Time
}

// hookReceiver is the caller's webhook endpoint: it checks every request
// as a receiver should (webhook.Verify) and answers the statuses it is
// given in turn, then 204.
type hookReceiver struct {
	*httptest.Server
	mu      sync.Mutex
	answers []int
	got     []hookRequest
	arrived chan struct{}
}

func newHookReceiver(t *testing.T, answers ...int) *hookReceiver {
	r := &hookReceiver{answers: answers, arrived: make(chan struct{}, 100)}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, hookRequest{req.Header.Clone(), body, webhook.Verify(hookSecret, req.Header, body, time.Now()), time.Now()})
		status := http.StatusNoContent
		if len(r.answers) > 0 {
			status, r.answers = r.answers[0], r.answers[1:]
		}
		r.mu.Unlock()
		w.WriteHeader(status)
		r.arrived <- struct{}{}
	}))
	t.Cleanup(r.Close)
	return r
}

// wait returns the first n requests once they arrived.
func (r *hookReceiver) wait(t *testing.T, n int) []hookRequest {
	t.Helper()
	deadline := time.After(2 * time.Minute)
	for {
		r.mu.Lock()
		got := append([]hookRequest(nil), r.got...)
		r.mu.Unlock()
		if len(got) >= n {
			return got[:n]
		}
		select {
		case <-r.arrived:
		case <-deadline:
			t.Fatalf("the webhook receiver got %d requests, want %d", len(got), n)
		}
	}
}

// hookBody is a delivery's body.
type hookBody struct {
	Event      string          `json:"event"`
	Run        json.RawMessage `json:"run"`
	DeliveryID string          `json:"delivery_id"`
	Time       time.Time       `json:"time"`
}

func decodeHook(t *testing.T, raw []byte) (hookBody, *wfv1.Run) {
	t.Helper()
	var b hookBody
	require.NoError(t, json.Unmarshal(raw, &b), "%s", raw)
	run := &wfv1.Run{}
	require.NoError(t, protojson.Unmarshal(b.Run, run))
	return b, run
}

// waitDelivered lists the run's deliveries until n are no longer pending.
func waitDelivered(t *testing.T, ctx context.Context, c wfv1.RunServiceClient, runID string, n int) []*wfv1.WebhookDelivery {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		l, err := c.ListWebhookDeliveries(ctx, &wfv1.ListWebhookDeliveriesRequest{RunId: runID})
		require.NoError(t, err)
		done := len(l.Deliveries) == n
		for _, d := range l.Deliveries {
			done = done && d.State != "pending"
		}
		if done {
			return l.Deliveries
		}
		require.True(t, time.Now().Before(deadline), "deliveries: %v", l.Deliveries)
		time.Sleep(100 * time.Millisecond)
	}
}

// TestWebhookSignedRetriedRedelivered: a finished run POSTs its result to
// its webhook, signed (the receiver verifies it); a 500 is retried until
// the receiver accepts; every attempt is recorded; RedeliverWebhook sends
// the same body again as a new delivery with a fresh signature; the secret
// is in no log, response, event or table (only sealed).
func TestWebhookSignedRetriedRedelivered(t *testing.T) {
	t.Parallel()
	logs := &syncBuffer{}
	dbURL := storetest.NewDB(t)
	ts := startServer(t, dbURL, serverOpts{allowPrivate: true, logs: logs})
	ctx := context.Background()
	rcv := newHookReceiver(t, http.StatusInternalServerError)
	s := newSite(t)
	p := params(s.URL + "/")
	p.Webhook = &wfv1.RunWebhook{Url: rcv.URL + "/hooks/wayfinder", Secret: hookSecret}
	run, err := ts.client.CreateRun(ctx, &wfv1.CreateRunRequest{Params: p})
	require.NoError(t, err)
	final := waitFinished(t, ts.client, run.Id)
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_COMPLETED, final.Status)

	got := rcv.wait(t, 2)
	ds := waitDelivered(t, ctx, ts.client, run.Id, 1)
	d := ds[0]
	require.Equal(t, "delivered", d.State)
	require.Equal(t, int32(2), d.Attempts, "one failure, one success")
	require.Equal(t, int32(http.StatusNoContent), d.LastStatus)
	require.Empty(t, d.LastError)
	require.Equal(t, webhook.EventRunFinished, d.Event)
	require.Equal(t, rcv.URL+"/hooks/wayfinder", d.Url)
	require.NotNil(t, d.DeliveredTime)
	for i, r := range got {
		require.NoError(t, r.verify, "request %d is not signed correctly", i)
		require.Equal(t, d.Id, r.header.Get(webhook.HeaderID))
		require.Equal(t, string(got[0].body), string(r.body), "a retry changed the body")
	}
	body, bodyRun := decodeHook(t, got[0].body)
	require.Equal(t, webhook.EventRunFinished, body.Event)
	require.Equal(t, d.Id, body.DeliveryID)
	require.True(t, final.EndTime.AsTime().Equal(body.Time), "time is the run's end: %v, %v", final.EndTime.AsTime(), body.Time)
	require.Equal(t, final.Id, bodyRun.Id)
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_COMPLETED, bodyRun.Status)
	require.Equal(t, final.LastEventSequence, bodyRun.LastEventSequence)
	require.Equal(t, "[redacted]", bodyRun.GetParams().GetWebhook().GetSecret())

	// Redelivery: a new delivery of the same body, signed afresh.
	again, err := ts.client.RedeliverWebhook(ctx, &wfv1.RedeliverWebhookRequest{RunId: run.Id, DeliveryId: d.Id})
	require.NoError(t, err)
	require.NotEqual(t, d.Id, again.Id)
	require.Equal(t, webhook.EventRunFinished, again.Event)
	third := rcv.wait(t, 3)[2]
	require.NoError(t, third.verify)
	require.Equal(t, again.Id, third.header.Get(webhook.HeaderID))
	require.Equal(t, string(got[0].body), string(third.body), "a redelivery sends the same body")
	ds = waitDelivered(t, ctx, ts.client, run.Id, 2)
	require.Equal(t, again.Id, ds[0].Id, "newest first")
	require.Equal(t, "delivered", ds[0].State)
	require.Equal(t, int32(1), ds[0].Attempts)
	require.Equal(t, d.Id, ds[1].Id)

	// Over REST too.
	var listed map[string]any
	require.Equal(t, http.StatusOK, restJSON(t, http.MethodGet, "http://"+ts.addrs.HTTP+"/v1/runs/"+run.Id+"/webhook-deliveries", "", &listed))
	require.Len(t, listed["deliveries"], 2)
	raw, err := json.Marshal(listed)
	require.NoError(t, err)

	evs := collectEvents(t, ts.client, run.Id, 0)
	for what, text := range map[string]string{"server log": logs.String(), "deliveries (REST)": string(raw),
		"events": eventsText(t, evs)} {
		require.NotContains(t, text, hookSecret, "the webhook secret is in the %s", what)
	}
	for table, text := range dumpDatabase(t, dbURL) {
		require.NotContains(t, text, hookSecret, "the webhook secret is stored in clear in %s", table)
	}
}

func eventsText(t *testing.T, evs []*wfv1.RunEvent) string {
	var b strings.Builder
	for _, ev := range evs {
		b.WriteString(protoText(t, ev))
	}
	return b.String()
}

// TestWebhookWhenCancelledWhileQueued: a run cancelled before any worker
// took it still POSTs its result, sent by a worker that starts later (the
// dispatcher looks back for events no one delivered).
func TestWebhookWhenCancelledWhileQueued(t *testing.T) {
	t.Parallel()
	dbURL := storetest.NewDB(t)
	apiOnly := startServer(t, dbURL, serverOpts{role: config.RoleAPI})
	ctx := context.Background()
	rcv := newHookReceiver(t)
	p := params("http://127.0.0.1:9/")
	p.Webhook = &wfv1.RunWebhook{Url: rcv.URL, Secret: hookSecret}
	run, err := apiOnly.client.CreateRun(ctx, &wfv1.CreateRunRequest{Params: p})
	require.NoError(t, err)
	cancelled, err := apiOnly.client.CancelRun(ctx, &wfv1.CancelRunRequest{RunId: run.Id, Reason: "not needed"})
	require.NoError(t, err)
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_CANCELLED, cancelled.Status)

	startServer(t, dbURL, serverOpts{role: config.RoleWorker, allowPrivate: true})
	got := rcv.wait(t, 1)[0]
	require.NoError(t, got.verify)
	body, bodyRun := decodeHook(t, got.body)
	require.Equal(t, webhook.EventRunFinished, body.Event)
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_CANCELLED, bodyRun.Status)
	require.Equal(t, "not needed", bodyRun.GetError().GetMessage())
	ds := waitDelivered(t, ctx, apiOnly.client, run.Id, 1)
	require.Equal(t, "delivered", ds[0].State)
}

// TestWebhookDeliveriesTenantScoped: another tenant can neither list nor
// redeliver a run's deliveries, not even through its own run.
func TestWebhookDeliveriesTenantScoped(t *testing.T) {
	t.Parallel()
	ts := startServer(t, storetest.NewDB(t), serverOpts{adminKey: testAdminKey, allowPrivate: true})
	actx := as(context.Background(), testAdminKey)
	admin := wfv1.NewAccessServiceClient(ts.conn)
	a := newTenant(t, actx, admin, ts.conn, "hooks-a")
	b := newTenant(t, actx, admin, ts.conn, "hooks-b")
	rcv := newHookReceiver(t)
	s := newSite(t)
	newRun := func(tc tenantClients) *wfv1.Run {
		p := params(s.URL + "/")
		p.Webhook = &wfv1.RunWebhook{Url: rcv.URL, Secret: hookSecret}
		run, err := tc.runs.CreateRun(tc.ctx, &wfv1.CreateRunRequest{Params: p})
		require.NoError(t, err)
		pollFinished(t, tc.ctx, tc.runs, run.Id)
		return run
	}
	runA, runB := newRun(a), newRun(b)
	dA := waitDelivered(t, a.ctx, a.runs, runA.Id, 1)[0]
	dB := waitDelivered(t, b.ctx, b.runs, runB.Id, 1)[0]

	_, err := b.runs.ListWebhookDeliveries(b.ctx, &wfv1.ListWebhookDeliveriesRequest{RunId: runA.Id})
	requireCode(t, err, "NotFound")
	_, err = b.runs.RedeliverWebhook(b.ctx, &wfv1.RedeliverWebhookRequest{RunId: runA.Id, DeliveryId: dA.Id})
	requireCode(t, err, "NotFound")
	_, err = b.runs.RedeliverWebhook(b.ctx, &wfv1.RedeliverWebhookRequest{RunId: runB.Id, DeliveryId: dA.Id})
	requireCode(t, err, "NotFound")
	_, err = b.runs.RedeliverWebhook(b.ctx, &wfv1.RedeliverWebhookRequest{RunId: runB.Id, DeliveryId: "not-an-id"})
	requireCode(t, err, "NotFound")
	req, err := http.NewRequest(http.MethodGet, "http://"+ts.addrs.HTTP+"/v1/runs/"+runA.Id+"/webhook-deliveries", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+b.key)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode)

	// B's own are B's.
	l, err := b.runs.ListWebhookDeliveries(b.ctx, &wfv1.ListWebhookDeliveriesRequest{RunId: runB.Id})
	require.NoError(t, err)
	require.Len(t, l.Deliveries, 1)
	require.Equal(t, dB.Id, l.Deliveries[0].Id)
	again, err := b.runs.RedeliverWebhook(b.ctx, &wfv1.RedeliverWebhookRequest{RunId: runB.Id, DeliveryId: dB.Id})
	require.NoError(t, err)
	require.Equal(t, runB.Id, again.RunId)

	// A's deliveries are untouched.
	l, err = a.runs.ListWebhookDeliveries(a.ctx, &wfv1.ListWebhookDeliveriesRequest{RunId: runA.Id})
	require.NoError(t, err)
	require.Len(t, l.Deliveries, 1)
}
