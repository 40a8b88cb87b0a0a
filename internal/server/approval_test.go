package server_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/durationpb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/config"
	"github.com/wayfinder/wayfinder/internal/llm"
	"github.com/wayfinder/wayfinder/internal/llm/llmtest"
	"github.com/wayfinder/wayfinder/internal/store/storetest"
)

// shop is a checkout on 127.0.0.1: / links to /pay, whose button posts to
// /paid. paid counts the payments.
type shop struct {
	url  string
	mu   sync.Mutex
	paid int
}

func newShop(t *testing.T) *shop {
	s := &shop{}
	page := func(body string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, body)
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", page(`<!doctype html><title>Shop</title><h1>Shop</h1><a href="/pay">Checkout</a>`))
	mux.HandleFunc("GET /pay", page(`<!doctype html><title>Confirm payment</title><h1>Confirm</h1>
<form method="post" action="/paid"><button>Pay now</button></form>`))
	mux.HandleFunc("POST /paid", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.paid++
		s.mu.Unlock()
		page(`<!doctype html><title>Order placed</title><h1 id="ok">Thank you</h1>`)(w, r)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

func (s *shop) payments() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.paid
}

// shopper is a controller model that works through calls in turn; once a
// tool result says human_rejected it gives up, quoting what it was told.
func shopper(t *testing.T, calls ...llm.ToolCall) llmtest.Script {
	var mu sync.Mutex
	turn := 0
	return func(c llmtest.Call) llmtest.Reply {
		if last := sinceAssistant(c.Messages); strings.Contains(last, "human_rejected") {
			return llmtest.Reply{ToolCalls: []llm.ToolCall{llm.Call("complete_task", map[string]any{"status": "failed", "reason": "told: " + last})}}
		}
		mu.Lock()
		defer mu.Unlock()
		if turn >= len(calls) {
			t.Errorf("controller called %d times", turn+1)
			return llmtest.Reply{Status: 500}
		}
		turn++
		return llmtest.Reply{Text: "next", ToolCalls: []llm.ToolCall{calls[turn-1]}}
	}
}

// sinceAssistant is all the text the model was sent after its last answer,
// tool results included.
func sinceAssistant(msgs []llm.Message) string {
	var b strings.Builder
	for i := len(msgs) - 1; i >= 0 && msgs[i].Role != llm.RoleAssistant; i-- {
		b.WriteString(lastText(msgs[i : i+1]))
	}
	return b.String()
}

func clickOn(role, name string) llm.ToolCall {
	return llm.Call("browser_click", map[string]any{"target": map[string]any{"role": role, "name": name}, "reasoning": "go on", "confidence": 0.9})
}

// shopParams is a run on the shop with a checkpoint at the payment page and
// success once the order is placed.
func shopParams(s *shop, model string) *wfv1.RunParams {
	m := &wfv1.ModelSettings{Provider: "openai", Model: "test-model", BaseUrl: model}
	return &wfv1.RunParams{
		Goal: "Buy the item", StartUrl: s.url + "/", AllowedDomains: []string{"127.0.0.1"}, Controller: m,
		Judge:       &wfv1.JudgeSettings{Strategy: wfv1.JudgeStrategy_JUDGE_STRATEGY_HEURISTIC},
		Checkpoints: []*wfv1.Checkpoint{{Name: "payment", UrlPattern: `/pay$`, ElementRole: "button", ElementNamePattern: `(?i)pay now`}},
		Completion: &wfv1.CompletionCriteria{
			Success: []*wfv1.Indicator{{Name: "order placed", Condition: &wfv1.Indicator_ElementPresent{ElementPresent: "h1#ok"}}},
		},
		Approval: &wfv1.ApprovalSettings{Timeout: durationpb.New(10 * time.Minute)},
	}
}

// awaitApproval waits until the run pauses for a human and returns it.
func awaitApproval(t *testing.T, ctx context.Context, client wfv1.RunServiceClient, runID string) *wfv1.Run {
	t.Helper()
	ev := waitForEventCtx(t, ctx, client, runID, wfv1.RunEventType_RUN_EVENT_TYPE_APPROVAL_REQUESTED)
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_AWAITING_APPROVAL, ev.Status)
	run, err := client.GetRun(ctx, &wfv1.GetRunRequest{RunId: runID})
	require.NoError(t, err)
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_AWAITING_APPROVAL, run.Status)
	require.NotNil(t, run.PendingApproval)
	require.Equal(t, ev.GetApproval().GetId(), run.PendingApproval.Id)
	return run
}

// waitForEventCtx is waitForEvent with the caller's context (an API key).
func waitForEventCtx(t *testing.T, ctx context.Context, client wfv1.RunServiceClient, runID string, typ wfv1.RunEventType) *wfv1.RunEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	stream, err := client.StreamRunEvents(ctx, &wfv1.StreamRunEventsRequest{RunId: runID})
	require.NoError(t, err)
	for {
		ev, err := stream.Recv()
		require.NoError(t, err, "stream ended before a %v event", typ)
		if ev.Type == typ {
			return ev
		}
	}
}

// A run paused at a checkpoint on a worker replica is approved through
// another replica (API only) sharing the database: the answer's
// notification wakes the worker, the run completes by its criteria.
func TestCheckpointApprovedFromAnotherReplica(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	startServer(t, db, serverOpts{role: config.RoleWorker, allowPrivate: true})
	api := startServer(t, db, serverOpts{role: config.RoleAPI, allowPrivate: true})
	s := newShop(t)
	fake := llmtest.NewOpenAI(t, shopper(t, clickOn("link", "Checkout"), clickOn("button", "Pay now"),
		llm.Call("complete_task", map[string]any{"status": "success", "reason": "paid"})))
	ctx := context.Background()
	run, err := api.client.CreateRun(ctx, &wfv1.CreateRunRequest{Params: shopParams(s, fake.URL)})
	require.NoError(t, err)

	paused := awaitApproval(t, ctx, api.client, run.Id)
	pa := paused.PendingApproval
	require.Equal(t, "checkpoint", pa.Source)
	require.Equal(t, "payment", pa.Action)
	require.Equal(t, s.url+"/pay", pa.Url)
	require.EqualValues(t, 1, pa.StepNumber)
	require.NotNil(t, pa.RequestTime)
	require.Nil(t, pa.AnswerTime)
	require.NotEmpty(t, pa.ScreenshotMediaId)
	media, err := api.client.GetMedia(ctx, &wfv1.GetMediaRequest{MediaId: pa.ScreenshotMediaId})
	require.NoError(t, err)
	require.Equal(t, "image/png", media.ContentType)
	require.Zero(t, s.payments(), "nothing is paid while the run waits")

	_, err = api.client.SubmitApproval(ctx, &wfv1.SubmitApprovalRequest{RunId: run.Id, Approved: true,
		ApprovalId: "00000000-0000-0000-0000-000000000000"})
	requireCode(t, err, "FailedPrecondition")
	_, err = api.client.SubmitApproval(ctx, &wfv1.SubmitApprovalRequest{RunId: run.Id, Message: strings.Repeat("m", 2001)})
	requireCode(t, err, "InvalidArgument")

	var answered map[string]any
	body := fmt.Sprintf(`{"approved": true, "approvalId": %q, "message": "go ahead"}`, pa.Id)
	require.Equal(t, http.StatusOK, restJSON(t, http.MethodPost, "http://"+api.addrs.HTTP+"/v1/runs/"+run.Id+":approve", body, &answered))
	require.Equal(t, "RUN_STATUS_RUNNING", answered["status"])
	require.Nil(t, answered["pendingApproval"])

	final := waitFinished(t, api.client, run.Id)
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_COMPLETED, final.Status, "%v %s\n%s", final.Error, final.Summary, describeSteps(t, api.client, run.Id))
	require.Equal(t, 1, s.payments())
	require.Equal(t, "criteria", final.GetFinalVerdict().GetSource())
	require.Len(t, final.Criteria, 1)
	require.True(t, final.Criteria[0].Matched)
	require.Equal(t, "success", final.Criteria[0].Kind)
	require.Equal(t, "order placed", final.Criteria[0].GetIndicator().GetName())
	require.Nil(t, final.PendingApproval)

	evs := collectEvents(t, api.client, run.Id, 0)
	var answeredEv *wfv1.RunEvent
	for _, ev := range evs {
		if ev.Type == wfv1.RunEventType_RUN_EVENT_TYPE_APPROVAL_ANSWERED {
			answeredEv = ev
		}
	}
	require.NotNil(t, answeredEv)
	require.True(t, answeredEv.GetApproval().GetApproved())
	require.Equal(t, "go ahead", answeredEv.GetApproval().GetMessage())
	require.Equal(t, "human", answeredEv.GetApproval().GetAnsweredBy())
	_, err = api.client.SubmitApproval(ctx, &wfv1.SubmitApprovalRequest{RunId: run.Id, Approved: true})
	requireCode(t, err, "FailedPrecondition")
}

// A rejection's message reaches the model as human_rejected; another
// tenant cannot answer the run (it does not exist for them).
func TestApprovalRejectedReachesModel(t *testing.T) {
	t.Parallel()
	ts := startServer(t, storetest.NewDB(t), serverOpts{adminKey: testAdminKey, allowPrivate: true})
	ctx := as(context.Background(), testAdminKey)
	admin := wfv1.NewAccessServiceClient(ts.conn)
	a := newTenant(t, ctx, admin, ts.conn, "buyer")
	b := newTenant(t, ctx, admin, ts.conn, "other")
	s := newShop(t)
	fake := llmtest.NewOpenAI(t, shopper(t,
		llm.Call("request_human_approval", map[string]any{"action": "pay 42 EUR with the stored card", "reason": "it costs money"})))
	p := shopParams(s, fake.URL)
	p.Checkpoints = nil
	run, err := a.runs.CreateRun(a.ctx, &wfv1.CreateRunRequest{Params: p})
	require.NoError(t, err)

	paused := awaitApproval(t, a.ctx, a.runs, run.Id)
	require.Equal(t, "model", paused.PendingApproval.Source)
	require.Equal(t, "pay 42 EUR with the stored card", paused.PendingApproval.Action)
	require.Equal(t, "it costs money", paused.PendingApproval.Reason)

	_, err = b.runs.SubmitApproval(b.ctx, &wfv1.SubmitApprovalRequest{RunId: run.Id, Approved: true})
	requireCode(t, err, "NotFound")
	still, err := a.runs.GetRun(a.ctx, &wfv1.GetRunRequest{RunId: run.Id})
	require.NoError(t, err)
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_AWAITING_APPROVAL, still.Status)

	_, err = a.runs.SubmitApproval(a.ctx, &wfv1.SubmitApprovalRequest{RunId: run.Id, Approved: false, Message: "not with this card"})
	require.NoError(t, err)
	final := waitForEventCtx(t, a.ctx, a.runs, run.Id, wfv1.RunEventType_RUN_EVENT_TYPE_FINISHED).GetRun()
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_FAILED, final.Status, "%v %s", final.Error, final.Summary)
	require.Contains(t, final.Summary, "User feedback: not with this card")
	require.Zero(t, s.payments())

	var sawRejection bool
	for _, c := range fake.Calls() {
		for _, m := range c.Messages {
			for _, part := range m.Parts {
				if r := part.ToolResult; r != nil {
					sawRejection = sawRejection || (strings.Contains(r.Content, `"error":"human_rejected"`) &&
						strings.Contains(r.Content, `"message":"User feedback: not with this card"`))
				}
			}
		}
	}
	require.True(t, sawRejection, "the model was told of the rejection")
}

// pageShopper clicks whatever leads on from the page it was shown last:
// Checkout on the shop, Pay now on the payment page.
func pageShopper(c llmtest.Call) llmtest.Reply {
	page := sinceAssistant(c.Messages)
	switch {
	case strings.Contains(page, "Pay now"):
		return llmtest.Reply{ToolCalls: []llm.ToolCall{clickOn("button", "Pay now")}}
	case strings.Contains(page, "Checkout"):
		return llmtest.Reply{ToolCalls: []llm.ToolCall{clickOn("link", "Checkout")}}
	}
	return llmtest.Reply{ToolCalls: []llm.ToolCall{llm.Call("complete_task", map[string]any{"status": "failed", "reason": "lost: " + page})}}
}

// A run paused at a checkpoint when its worker shuts down keeps its
// approval: the run goes back to the queue, the next worker waits for the
// same request (the human is not asked twice), and its answer lets the run
// finish there.
func TestApprovalSurvivesWorkerRestart(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	api := startServer(t, db, serverOpts{role: config.RoleAPI, allowPrivate: true})
	first := startServer(t, db, serverOpts{role: config.RoleWorker, allowPrivate: true, shutdown: time.Second})
	s := newShop(t)
	fake := llmtest.NewOpenAI(t, pageShopper)
	ctx := context.Background()
	run, err := api.client.CreateRun(ctx, &wfv1.CreateRunRequest{Params: shopParams(s, fake.URL)})
	require.NoError(t, err)
	paused := awaitApproval(t, ctx, api.client, run.Id)

	first.stop()
	queued, err := api.client.GetRun(ctx, &wfv1.GetRunRequest{RunId: run.Id})
	require.NoError(t, err)
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_QUEUED, queued.Status, "handed back to the queue")
	require.Nil(t, queued.PendingApproval)
	_, err = api.client.SubmitApproval(ctx, &wfv1.SubmitApprovalRequest{RunId: run.Id, Approved: true})
	requireCode(t, err, "FailedPrecondition")

	startServer(t, db, serverOpts{role: config.RoleWorker, allowPrivate: true})
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	stream, err := api.client.StreamRunEvents(sctx, &wfv1.StreamRunEventsRequest{RunId: run.Id, AfterSequence: queued.LastEventSequence})
	require.NoError(t, err)
	for {
		ev, err := stream.Recv()
		require.NoError(t, err)
		if ev.Type == wfv1.RunEventType_RUN_EVENT_TYPE_APPROVAL_REQUESTED {
			require.Equal(t, paused.PendingApproval.Id, ev.GetApproval().GetId(), "the same request")
			break
		}
	}
	_, err = api.client.SubmitApproval(ctx, &wfv1.SubmitApprovalRequest{RunId: run.Id, Approved: true, ApprovalId: paused.PendingApproval.Id})
	require.NoError(t, err)
	final := waitFinished(t, api.client, run.Id)
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_COMPLETED, final.Status, "%v %s\n%s", final.Error, final.Summary, describeSteps(t, api.client, run.Id))
	require.EqualValues(t, 2, final.Attempts)
	require.Equal(t, 1, s.payments())
	var requests int
	for _, ev := range collectEvents(t, api.client, run.Id, 0) {
		if ev.Type == wfv1.RunEventType_RUN_EVENT_TYPE_APPROVAL_ANSWERED {
			requests++
		}
	}
	require.Equal(t, 1, requests, "one answer for one request")
}
