package mcpserver

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/api"
	"github.com/wayfinder/wayfinder/internal/events"
	"github.com/wayfinder/wayfinder/internal/llm"
	"github.com/wayfinder/wayfinder/internal/llm/llmtest"
	"github.com/wayfinder/wayfinder/internal/store"
	"github.com/wayfinder/wayfinder/internal/store/storetest"
	"github.com/wayfinder/wayfinder/internal/tenant"
	"github.com/wayfinder/wayfinder/internal/worker"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// queue stands in for the run queue: nothing executes the runs unless the
// test plays the worker; it reports each run it is given.
type queue struct{ enqueued chan string }

func (q queue) EnqueueRunTx(_ context.Context, _ pgx.Tx, runID string, _ time.Duration) (int64, error) {
	select {
	case q.enqueued <- runID:
	default:
	}
	return 1, nil
}

func (queue) CancelJobTx(context.Context, pgx.Tx, int64) error { return nil }

type testBundle struct {
	st       *store.Store
	sessions *Sessions
	queue    queue
	url      string
	// keys are API keys by tenant.
	keys map[string]string
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	logger := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	pool := storetest.NewPool(t)
	st := store.New(pool)
	hub := events.NewHub(pool, store.NotifyChannel, logger)
	hubDone := make(chan struct{})
	go func() { _ = hub.Run(ctx); close(hubDone) }()
	sessions := NewSessions(0)
	q := queue{enqueued: make(chan string, 16)}
	runs := api.NewRunService(api.Config{Store: st, Queue: q, Hub: hub, MaxRunTimeout: time.Minute, Logger: logger,
		Models: &worker.Models{DefaultProvider: llm.ProviderSteps, Extra: map[string]func(llm.Settings) (llm.Model, error){Provider: sessions.Model}}})
	srv := New(ctx, Config{Runs: runs, Authn: &api.Authenticator{Store: st}, Sessions: sessions, Logger: logger})
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
		cancel()
		srv.Wait()
		<-hubDone
	})
	b := &testBundle{st: st, sessions: sessions, queue: q, url: hs.URL, keys: map[string]string{}}
	admin := tenant.With(ctx, tenant.Caller{Tenant: tenant.Default, Admin: true})
	access := api.NewAccessService(st, logger)
	for _, id := range []string{"acme", "globex"} {
		_, err := access.CreateTenant(admin, &wfv1.CreateTenantRequest{Tenant: &wfv1.Tenant{Id: id}})
		require.NoError(t, err)
		k, err := access.CreateApiKey(admin, &wfv1.CreateApiKeyRequest{TenantId: id, Name: "mcp test"})
		require.NoError(t, err)
		b.keys[id] = k.GetSecret()
	}
	return b
}

// bearer adds an Authorization header to every request.
type bearer struct{ key string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.key != "" {
		r.Header.Set("Authorization", "Bearer "+b.key)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// connect opens an MCP client session as the holder of key.
func (b *testBundle) connect(t *testing.T, key string) (*mcp.ClientSession, error) {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: b.url,
		HTTPClient: &http.Client{Transport: bearer{key}}, MaxRetries: -1, DisableStandaloneSSE: true}, nil)
	if err == nil {
		t.Cleanup(func() { _ = cs.Close() })
	}
	return cs, err
}

func call(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	require.NoError(t, err)
	return res
}

func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func image(res *mcp.CallToolResult) *mcp.ImageContent {
	for _, c := range res.Content {
		if ic, ok := c.(*mcp.ImageContent); ok {
			return ic
		}
	}
	return nil
}

func TestAuthentication(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, tc := range []struct {
		name, key string
		ok        bool
	}{
		{"no key", "", false},
		{"unknown key", api.NewAPIKey(), false},
		{"tenant key", b.keys["acme"], true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, err := b.connect(t, tc.key)
			if !tc.ok {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			var names []string
			for tool, err := range cs.Tools(context.Background(), nil) {
				require.NoError(t, err)
				names = append(names, tool.Name)
			}
			require.ElementsMatch(t, []string{"computer_use", "open_session", "snapshot", "click", "fill", "type",
				"press_key", "scroll", "navigate", "close_session"}, names)
		})
	}
}

func TestComputerUseInvalid(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cs, err := b.connect(t, b.keys["acme"])
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		args map[string]any
		want []string
	}{
		{"no url", map[string]any{"goal": "buy"}, []string{"missing properties", "url"}},
		{"empty url", map[string]any{"goal": "buy", "url": ""}, []string{"INVALID_ARGUMENT", "- url: a start URL is required"}},
		{"bad url and steps", map[string]any{"goal": "buy", "url": "ftp://x", "max_steps": 900},
			[]string{"- url: must be an absolute http", "- params.max_steps: must be between 1 and 500"}},
		{"bad timeout", map[string]any{"goal": "buy", "url": "https://example.com/", "timeout": "soon"},
			[]string{"- timeout: must be a duration"}},
		{"unknown option", map[string]any{"goal": "buy", "url": "https://example.com/", "options": map[string]any{"colour": "blue"}},
			[]string{"- colour: unknown parameter"}},
		{"unknown provider", map[string]any{"goal": "buy", "url": "https://example.com/", "controller_provider": "nope"},
			[]string{"params.controller.provider", `unknown provider "nope"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := call(t, cs, "computer_use", tc.args)
			require.True(t, res.IsError, text(res))
			for _, w := range tc.want {
				require.Contains(t, text(res), w)
			}
		})
	}
	select {
	case id := <-b.queue.enqueued:
		t.Fatalf("an invalid call created run %s", id)
	default:
	}
}

// TestComputerUseTimeout: no worker runs the run, so the wait times out;
// the run (the caller tenant's, with the comma-delimited domains as a
// list) is cancelled and the result says so.
func TestComputerUseTimeout(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cs, err := b.connect(t, b.keys["acme"])
	require.NoError(t, err)
	res := call(t, cs, "computer_use", map[string]any{"goal": "Click Buy", "url": "https://shop.example/",
		"allowed_domains": "shop.example, *.shop.example", "timeout": "1s", "max_steps": 7,
		"options": map[string]any{"labels": "from=mcp", "judge_strategy": "heuristic"}})
	require.False(t, res.IsError, text(res))
	var out runResult
	require.NoError(t, json.Unmarshal([]byte(text(res)), &out))
	require.True(t, out.TimedOut)
	require.Equal(t, "CANCELLED", out.Status)
	run, err := b.st.GetRun(context.Background(), out.RunID)
	require.NoError(t, err)
	require.Equal(t, "acme", run.GetTenantId())
	require.Equal(t, []string{"shop.example", "*.shop.example"}, run.GetParams().GetAllowedDomains())
	require.EqualValues(t, 7, run.GetParams().GetMaxSteps())
	require.Equal(t, "mcp", run.GetParams().GetLabels()["from"])
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_CANCELLED, run.GetStatus())
}

// TestSessionHandOver plays the worker: it starts the session's run and
// drives its controller model as the runner does, and checks what each
// side sees.
func TestSessionHandOver(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	cs, err := b.connect(t, b.keys["acme"])
	require.NoError(t, err)

	opened := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "open_session", Arguments: map[string]any{
			"url": "https://shop.example/", "allowed_domains": "shop.example"}})
		if err != nil {
			res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
		}
		opened <- res
	}()
	runID := <-b.queue.enqueued
	var run *wfv1.Run
	require.Eventually(t, func() bool { run, err = b.st.GetRun(ctx, runID); return err == nil }, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, Provider, run.GetParams().GetController().GetProvider())
	require.Equal(t, wfv1.JudgeStrategy_JUDGE_STRATEGY_HEURISTIC, run.GetParams().GetJudge().GetStrategy())
	_, execute, err := b.st.StartRun(ctx, runID)
	require.NoError(t, err)
	require.True(t, execute)

	// The worker builds the controller; an unknown session is refused.
	_, err = b.sessions.Model(llm.Settings{Provider: Provider, Model: "s_unknown"})
	require.ErrorContains(t, err, "not open on this server replica")
	model, err := b.sessions.Model(llm.Settings{Provider: Provider, Model: run.GetParams().GetController().GetModel()})
	require.NoError(t, err)

	png := llmtest.PNG()
	answers := make(chan *llm.Response, 1)
	complete := func(req *llm.Request) {
		go func() {
			resp, err := model.Complete(ctx, req)
			if err != nil {
				resp = &llm.Response{Text: "error: " + err.Error()}
			}
			answers <- resp
		}()
	}
	complete(&llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{
		{Text: "Goal: " + sessionGoal},
		{Text: "The browser opened https://shop.example/. Current page:\n- @e1 button \"Buy\""},
		{Image: &llm.Image{MediaType: "image/png", Data: png}},
	}}}})
	res := <-opened
	require.False(t, res.IsError, text(res))
	require.Contains(t, text(res), `@e1 button \"Buy\"`)
	require.Contains(t, text(res), runID)
	require.NotNil(t, image(res))
	require.Equal(t, png, image(res).Data)

	// Another tenant cannot use the session.
	other, err := b.connect(t, b.keys["globex"])
	require.NoError(t, err)
	res = call(t, other, "click", map[string]any{"session_id": runID, "ref": "@e1"})
	require.True(t, res.IsError)
	require.Contains(t, text(res), "NOT_FOUND")

	// click → the runner gets browser_click and answers it.
	clicked := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, _ := cs.CallTool(ctx, &mcp.CallToolParams{Name: "click", Arguments: map[string]any{"session_id": runID, "ref": "@e1"}})
		clicked <- res
	}()
	resp := <-answers
	require.Len(t, resp.ToolCalls, 1)
	tc := resp.ToolCalls[0]
	require.Equal(t, "browser_click", tc.Name)
	require.JSONEq(t, `{"ref":"@e1"}`, string(tc.Arguments))
	complete(&llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{
		{ToolResult: &llm.ToolResult{CallID: tc.ID, Name: tc.Name, Content: `{"success":true,"navigated":true}`}},
		{Image: &llm.Image{MediaType: "image/png", Data: png}},
		{Text: "Judge feedback: keep going"},
	}}}})
	res = <-clicked
	require.NotNil(t, res)
	require.False(t, res.IsError, text(res))
	require.Contains(t, text(res), `"result":{"success":true,"navigated":true}`)
	require.Contains(t, text(res), "Judge feedback: keep going")
	require.NotNil(t, image(res))

	// close_session → complete_task; the run ends and the result says how.
	closed := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, _ := cs.CallTool(ctx, &mcp.CallToolParams{Name: "close_session", Arguments: map[string]any{"session_id": runID, "reason": "bought"}})
		closed <- res
	}()
	resp = <-answers
	require.Equal(t, "complete_task", resp.ToolCalls[0].Name)
	require.JSONEq(t, `{"status":"success","reason":"bought"}`, string(resp.ToolCalls[0].Arguments))
	_, err = b.st.FinishRun(ctx, runID, store.Outcome{Status: wfv1.RunStatus_RUN_STATUS_COMPLETED, Summary: "bought"})
	require.NoError(t, err)
	res = <-closed
	require.NotNil(t, res)
	require.False(t, res.IsError, text(res))
	var out runResult
	require.NoError(t, json.Unmarshal([]byte(text(res)), &out))
	require.Equal(t, runID, out.RunID)
	require.Equal(t, "COMPLETED", out.Status)

	// The session is gone; a late call learns how it ended.
	require.Eventually(t, func() bool { return b.sessions.get("acme", runID) == nil }, 10*time.Second, 10*time.Millisecond)
	res = call(t, cs, "snapshot", map[string]any{"session_id": runID})
	require.True(t, res.IsError)
	require.Contains(t, text(res), "The session has ended")
	require.Contains(t, text(res), `"status":"COMPLETED"`)
}

// TestSessionIdle: a session whose client makes no call ends itself with
// a failed complete_task, so its run ends FAILED instead of holding its
// browser until the run timeout.
func TestSessionIdle(t *testing.T) {
	t.Parallel()
	ss := NewSessions(time.Millisecond)
	sess, err := ss.open("acme")
	require.NoError(t, err)
	model, err := ss.Model(llm.Settings{Provider: Provider, Model: sess.key})
	require.NoError(t, err)
	resp, err := model.Complete(context.Background(), &llm.Request{})
	require.NoError(t, err)
	require.Len(t, resp.ToolCalls, 1)
	require.Equal(t, "complete_task", resp.ToolCalls[0].Name)
	require.Contains(t, string(resp.ToolCalls[0].Arguments), `"status":"failed"`)
	ss.drop(sess)
	_, err = ss.Model(llm.Settings{Provider: Provider, Model: sess.key})
	require.Error(t, err)
}

// An MCP session belongs to the tenant that opened it: another tenant's
// key that learns its Mcp-Session-Id can neither use nor end it.
func TestTransportSessionOwner(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cs, err := b.connect(t, b.keys["acme"])
	require.NoError(t, err)
	id := cs.ID()
	require.NotEmpty(t, id)
	for _, tc := range []struct {
		tenant string
		want   int
	}{{"globex", http.StatusForbidden}, {"acme", http.StatusNoContent}} {
		req, err := http.NewRequest(http.MethodDelete, b.url, nil)
		require.NoError(t, err)
		req.Header.Set("Mcp-Session-Id", id)
		req.Header.Set("Authorization", "Bearer "+b.keys[tc.tenant])
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, tc.want, resp.StatusCode, "DELETE by %s", tc.tenant)
	}
}
