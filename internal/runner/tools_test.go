package runner

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/llm"
	"github.com/wayfinder/wayfinder/internal/tools"
)

// webhooks serves custom tools on 127.0.0.1 and records their calls.
type webhooks struct {
	URL string

	mu    sync.Mutex
	calls map[string][]string // path → bodies
}

func newWebhooks(t *testing.T) *webhooks {
	t.Helper()
	w := &webhooks{calls: map[string][]string{}}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.mu.Lock()
		w.calls[r.URL.Path] = append(w.calls[r.URL.Path], string(body))
		w.mu.Unlock()
		switch r.URL.Path {
		case "/lookup":
			rw.Header().Set("Content-Type", "application/json")
			_, _ = rw.Write([]byte(`{"order":"A-1","status":"shipped"}`))
		case "/slow":
			select {
			case <-r.Context().Done():
			case <-time.After(time.Minute):
			}
		default:
			http.Error(rw, "internal error", http.StatusInternalServerError)
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(srv.CloseClientConnections)
	w.URL = srv.URL
	return w
}

func (w *webhooks) bodies(path string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.calls[path]...)
}

func TestCustomTools(t *testing.T) {
	t.Parallel()
	hooks := newWebhooks(t)
	schema := json.RawMessage(`{"type":"object","properties":{"id":{"type":"string"}},"required":["id"],"additionalProperties":false}`)
	set, err := tools.NewSet([]tools.Definition{
		{Name: "lookup_order", Description: "Look up an order by its ID.", InputSchema: schema,
			Webhook: tools.Webhook{URL: hooks.URL + "/lookup", Headers: map[string]string{"Authorization": "Bearer hook-secret-123"}}},
		{Name: "broken_tool", Description: "Always fails.", InputSchema: json.RawMessage(`{"type":"object"}`),
			Webhook: tools.Webhook{URL: hooks.URL + "/broken"}},
		{Name: "slow_tool", Description: "Never answers in time.", InputSchema: json.RawMessage(`{"type":"object"}`),
			Webhook: tools.Webhook{URL: hooks.URL + "/slow", Timeout: 200 * time.Millisecond}},
	}, tools.Options{})
	require.NoError(t, err)

	s := newSite(t, nil)
	m := llm.NewScripted("controller",
		llm.Reply("look it up", llm.Call("lookup_order", map[string]any{"id": "A-1"})),
		llm.Reply("a number will do", llm.Call("lookup_order", map[string]any{"id": 5})),
		llm.Reply("try the other", llm.Call("broken_tool", nil)),
		llm.Reply("and the slow one", llm.Call("slow_tool", nil)),
		llm.Reply("again", llm.Call("lookup_order", map[string]any{"id": "A-1"})),
		completeTurn("success", "order A-1 has shipped"))
	p := params(s, m)
	p.Goal = "Find out whether order A-1 has shipped"
	p.Tools = set
	res, sink := execute(t, runCtx(t), nil, p)
	require.Equal(t, StatusCompleted, res.Status, "%+v", res.Err)
	require.Equal(t, 6, res.Steps)

	reqs := m.Requests()
	require.Contains(t, reqs[0].System, "Besides the browser you have these tools: lookup_order, broken_tool, slow_tool.")
	var offered []string
	for _, tool := range reqs[0].Tools {
		offered = append(offered, tool.Name)
		if tool.Name == "lookup_order" {
			require.JSONEq(t, string(schema), string(tool.InputSchema))
		}
	}
	require.Equal(t, []string{"lookup_order", "broken_tool", "slow_tool"}, offered[len(offered)-3:], "after the engine's tools")

	ok := toolResults(t, reqs[1])
	require.Len(t, ok, 1)
	require.False(t, ok[0].IsError)
	require.Equal(t, "lookup_order", ok[0].Name)
	require.JSONEq(t, `{"order":"A-1","status":"shipped"}`, ok[0].Content, "the webhook's answer reaches the model as is")

	for i, want := range []string{tools.CodeInvalidArguments, tools.CodeHTTPError, tools.CodeTimeout} {
		r := toolResults(t, reqs[2+i])
		require.Len(t, r, 1)
		require.True(t, r[0].IsError, want)
		require.Equal(t, want, r[0].body["error"])
		require.Contains(t, r[0].body["message"], "ToolExecutionError: ")
		require.NotContains(t, r[0].Content, "hook-secret-123")
		st := sink.step(t, 2+i)
		require.Equal(t, CategoryToolExecution, st.Err.Category, want)
		require.Equal(t, want, st.Actions[len(st.Actions)-1].Outcome)
	}

	require.Len(t, hooks.bodies("/lookup"), 2, "arguments that fail the schema are never sent")
	require.JSONEq(t, `{"id":"A-1"}`, hooks.bodies("/lookup")[0])
	require.Len(t, hooks.bodies("/broken"), 1)
	first := sink.step(t, 1).Actions[1]
	require.Equal(t, "ok", first.Outcome)
	require.Equal(t, map[string]any{"order": "A-1", "status": "shipped"}, first.Result)
}

func TestCustomToolInterrupted(t *testing.T) {
	t.Parallel()
	hooks := newWebhooks(t)
	set, err := tools.NewSet([]tools.Definition{{Name: "slow_tool", Description: "Takes its time.",
		InputSchema: json.RawMessage(`{"type":"object"}`), Webhook: tools.Webhook{URL: hooks.URL + "/slow"}}}, tools.Options{})
	require.NoError(t, err)
	s := newSite(t, nil)
	ctx, cancel := context.WithCancel(runCtx(t))
	defer cancel()
	m := llm.NewScripted("controller", llm.Reply("ask", llm.Call("slow_tool", nil), llm.Call(ToolScroll, map[string]any{"direction": "down"})),
		completeTurn("failed", "never reached"))
	sink := &recordingSink{onEvent: func(e Event) {
		if e.Kind == EventToolCalled && e.Tool == "slow_tool" {
			go func() {
				for len(hooks.bodies("/slow")) == 0 {
					time.Sleep(10 * time.Millisecond)
				}
				cancel()
			}()
		}
	}}
	p := params(s, m)
	p.Tools = set
	res, _ := executeOn(t, ctx, nil, newLeasedBrowser(t, sharedPool(t)), p, sink)
	require.Equal(t, StatusInterrupted, res.Status)
	st := sink.step(t, 1)
	require.Equal(t, []string{ToolNavigate, "slow_tool", ToolScroll}, toolNames(st.Actions))
	require.Equal(t, "tool_execution_error", st.Actions[1].Outcome)
	require.Contains(t, st.Actions[1].Message, "interrupted")
	require.NotEqual(t, "ok", st.Actions[2].Outcome, "nothing runs after the interruption: %s", st.Actions[2].Message)
	require.Len(t, m.Requests(), 1)
}
