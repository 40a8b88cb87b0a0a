package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/llm"
	"github.com/wayfinder/wayfinder/internal/llm/llmtest"
	"github.com/wayfinder/wayfinder/internal/store/storetest"
)

// mcpShopPage has a Buy button that relabels itself when clicked.
const mcpShopPage = `<!doctype html><title>Shop</title><h1>Shop</h1>` +
	`<button onclick="this.textContent='Bought'">Buy</button>`

func newMCPShop(t *testing.T) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, mcpShopPage)
	}))
	t.Cleanup(s.Close)
	return s
}

// mcpConnect opens an MCP client session on the server's /mcp endpoint.
func mcpConnect(t *testing.T, ts *testServer) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "mcp-test", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: "http://" + ts.addrs.HTTP + "/mcp", MaxRetries: -1, DisableStandaloneSSE: true}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func mcpCall(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (*mcp.CallToolResult, string) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	require.NoError(t, err)
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return res, strings.Join(parts, "\n")
}

func mcpImage(t *testing.T, res *mcp.CallToolResult) []byte {
	t.Helper()
	for _, c := range res.Content {
		if ic, ok := c.(*mcp.ImageContent); ok {
			require.Equal(t, "image/png", ic.MIMEType)
			return ic.Data
		}
	}
	t.Fatal("the result has no image")
	return nil
}

type mcpRunResult struct {
	RunID     string `json:"run_id"`
	Status    string `json:"status"`
	Success   bool   `json:"success"`
	Summary   string `json:"summary"`
	FinalURL  string `json:"final_url"`
	StepCount int    `json:"step_count"`
	Steps     []struct {
		Number  int      `json:"number"`
		Actions []string `json:"actions"`
	} `json:"steps"`
}

// TestMCPComputerUse calls computer_use on a local page with a scripted
// model: the run clicks Buy, completes, and the result carries the
// status, summary, final URL, steps and the final screenshot.
func TestMCPComputerUse(t *testing.T) {
	t.Parallel()
	ts := startServer(t, storetest.NewDB(t), serverOpts{allowPrivate: true})
	shop := newMCPShop(t)
	model := llmtest.NewOpenAI(t, llmtest.Replies(
		llmtest.Reply{Text: "buy it", ToolCalls: []llm.ToolCall{llm.Call("browser_click",
			map[string]any{"target": map[string]any{"role": "button", "name": "Buy"}, "confidence": 0.9})}},
		llmtest.Reply{ToolCalls: []llm.ToolCall{llm.Call("complete_task", map[string]any{"status": "success", "reason": "bought it"})}},
	))
	cs := mcpConnect(t, ts)
	res, text := mcpCall(t, cs, "computer_use", map[string]any{
		"goal": "Buy the item", "url": shop.URL + "/", "allowed_domains": "127.0.0.1", "max_steps": 5, "timeout": "2m",
		"controller_provider": "openai", "controller_model": "test-model",
		"options": map[string]any{"controller_base_url": model.URL, "judge_strategy": "heuristic", "labels": "via=mcp"},
	})
	require.False(t, res.IsError, text)
	var out mcpRunResult
	require.NoError(t, json.Unmarshal([]byte(text), &out))
	logRunOnFailure(t, ts, out.RunID)
	require.Equal(t, "COMPLETED", out.Status)
	require.True(t, out.Success)
	require.Contains(t, out.Summary, "bought it")
	require.Equal(t, shop.URL+"/", out.FinalURL)
	require.Equal(t, 2, out.StepCount)
	require.Len(t, out.Steps, 2)
	require.Contains(t, out.Steps[0].Actions, "browser_click: ok")
	require.NotEmpty(t, mcpImage(t, res))

	run, err := ts.client.GetRun(context.Background(), &wfv1.GetRunRequest{RunId: out.RunID})
	require.NoError(t, err)
	require.Equal(t, "mcp", run.GetParams().GetLabels()["via"])
	require.Equal(t, []string{"127.0.0.1"}, run.GetParams().GetAllowedDomains())
}

var buyRef = regexp.MustCompile(`(@e\d+) button "Buy"`)

// TestMCPSession drives a session: open it on a local page, click Buy by
// the ref of the snapshot, look again, try a blocked domain, close it;
// every call is a recorded step of the session's run.
func TestMCPSession(t *testing.T) {
	t.Parallel()
	ts := startServer(t, storetest.NewDB(t), serverOpts{allowPrivate: true})
	shop := newMCPShop(t)
	cs := mcpConnect(t, ts)
	ctx := context.Background()

	res, text := mcpCall(t, cs, "open_session", map[string]any{"url": shop.URL + "/", "allowed_domains": "127.0.0.1"})
	require.False(t, res.IsError, text)
	var opened struct {
		SessionID string `json:"session_id"`
		Page      string `json:"page"`
	}
	require.NoError(t, json.Unmarshal([]byte(text), &opened))
	logRunOnFailure(t, ts, opened.SessionID)
	require.Contains(t, opened.Page, "Shop")
	m := buyRef.FindStringSubmatch(opened.Page)
	require.NotNil(t, m, "no Buy button in the page:\n%s", opened.Page)
	require.NotEmpty(t, mcpImage(t, res))

	res, text = mcpCall(t, cs, "click", map[string]any{"session_id": opened.SessionID, "ref": m[1]})
	require.False(t, res.IsError, text)
	require.Contains(t, text, `"success":true`)
	require.NotEmpty(t, mcpImage(t, res))

	res, text = mcpCall(t, cs, "snapshot", map[string]any{"session_id": opened.SessionID})
	require.False(t, res.IsError, text)
	require.Contains(t, text, `button \"Bought\"`)

	// The session's domain policy holds.
	res, text = mcpCall(t, cs, "navigate", map[string]any{"session_id": opened.SessionID, "url": "https://example.com/"})
	require.True(t, res.IsError, text)
	require.Contains(t, text, "domain_blocked")

	res, text = mcpCall(t, cs, "close_session", map[string]any{"session_id": opened.SessionID, "status": "failed", "reason": "done looking"})
	require.False(t, res.IsError, text)
	var closed mcpRunResult
	require.NoError(t, json.Unmarshal([]byte(text), &closed))
	require.Equal(t, opened.SessionID, closed.RunID)
	require.Equal(t, "FAILED", closed.Status)

	// Recorded like any run: one step per call.
	steps, err := ts.client.ListSteps(ctx, &wfv1.ListStepsRequest{RunId: opened.SessionID})
	require.NoError(t, err)
	var tools []string
	for _, st := range steps.GetSteps() {
		for _, a := range st.GetActions() {
			tools = append(tools, a.GetTool()+":"+a.GetOutcome())
		}
	}
	require.Equal(t, []string{"browser_navigate:ok", "browser_click:ok", "get_snapshot:ok", "browser_navigate:domain_blocked", "complete_task:ok"}, tools)

	// A closed session answers with its result.
	res, text = mcpCall(t, cs, "snapshot", map[string]any{"session_id": opened.SessionID})
	require.True(t, res.IsError)
	require.Contains(t, text, "The session has ended")
}
