package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/llm"
	"github.com/wayfinder/wayfinder/internal/llm/llmtest"
	"github.com/wayfinder/wayfinder/internal/store/storetest"
	"github.com/wayfinder/wayfinder/internal/tools/mcptest"
)

// A run that names two catalog tools — a webhook tool created through
// ToolService and a tool imported from an MCP server whose bearer is a
// stored credential — calls both for a scripted model in real Chromium.
// The steps record each call with its result; neither the webhook's
// header value nor the MCP bearer appears in them.
func TestRunCallsCatalogTools(t *testing.T) {
	t.Parallel()
	ts := startServer(t, storetest.NewDB(t), serverOpts{allowPrivate: true})
	catalog := wfv1.NewToolServiceClient(ts.conn)
	creds := wfv1.NewCredentialServiceClient(ts.conn)
	ctx := context.Background()
	site := newSite(t)

	const hookAuth, mcpToken = "Bearer hook-secret-5f4e3d2c1b", "mcp-token-9a8b7c6d5e"
	var hookCalls sync.Map
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != hookAuth {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		var in struct {
			ID string `json:"id"`
		}
		_ = json.NewDecoder(r.Body).Decode(&in)
		hookCalls.Store(in.ID, true)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": in.ID, "name": "Ada Lovelace"})
	}))
	t.Cleanup(hook.Close)
	mcpServer := mcptest.Start(t, mcpToken)

	input, err := structpb.NewStruct(map[string]any{"type": "object", "required": []any{"id"},
		"properties": map[string]any{"id": map[string]any{"type": "string"}}})
	require.NoError(t, err)
	_, err = catalog.CreateTool(ctx, &wfv1.CreateToolRequest{Tool: &wfv1.ToolDefinition{
		Name: "customer", Description: "Look up a customer by ID.", InputSchema: input,
		Implementation: &wfv1.ToolDefinition_Webhook{Webhook: &wfv1.WebhookTool{
			Url: hook.URL + "/customer", Headers: map[string]string{"Authorization": hookAuth}}}}})
	require.NoError(t, err)
	_, err = creds.CreateCredential(ctx, &wfv1.CreateCredentialRequest{Name: "crm-mcp",
		Type: wfv1.CredentialType_CREDENTIAL_TYPE_API_KEY, Values: map[string]string{"api_key": mcpToken}})
	require.NoError(t, err)
	imported, err := catalog.ImportMcpServer(ctx, &wfv1.ImportMcpServerRequest{
		ServerUrl: mcpServer.URL, Credential: "crm-mcp", Prefix: "crm_"})
	require.NoError(t, err)
	require.Len(t, imported.Tools, 3)

	var (
		mu      sync.Mutex
		offered [][]string
	)
	fake := llmtest.NewOpenAI(t, func(c llmtest.Call) llmtest.Reply {
		if slices.Contains(c.Tools, "submit_verdict") {
			return llmtest.Reply{ToolCalls: []llm.ToolCall{llm.Call("submit_verdict",
				map[string]any{"done": true, "failed": false, "confidence": 0.95, "reason": "both tools answered"})}}
		}
		mu.Lock()
		offered = append(offered, c.Tools)
		mu.Unlock()
		turn := 1
		for _, m := range c.Messages {
			if m.Role == llm.RoleAssistant {
				turn++
			}
		}
		switch turn {
		case 1:
			return llmtest.Reply{ToolCalls: []llm.ToolCall{llm.Call("customer", map[string]any{"id": "c-42"})}}
		case 2:
			return llmtest.Reply{ToolCalls: []llm.ToolCall{llm.Call("crm_lookup_order", map[string]any{"order_id": "A-7"})}}
		}
		return llmtest.Reply{ToolCalls: []llm.ToolCall{llm.Call("complete_task",
			map[string]any{"status": "success", "reason": "customer and order found"})}}
	})

	p := params(site.URL + "/")
	p.Controller = &wfv1.ModelSettings{Provider: "openai", Model: "test-model", BaseUrl: fake.URL}
	// The judge only verifies the model's claim, so the run takes all three turns.
	p.Judge = &wfv1.JudgeSettings{Frequency: &wfv1.JudgeFrequency{Frequency: &wfv1.JudgeFrequency_EveryNSteps{EveryNSteps: 100}}}
	p.Tools = []*wfv1.ToolDefinition{
		{Implementation: &wfv1.ToolDefinition_CatalogRef{CatalogRef: "customer"}},
		{Implementation: &wfv1.ToolDefinition_CatalogRef{CatalogRef: "crm_lookup_order"}},
	}
	run, err := ts.client.CreateRun(ctx, &wfv1.CreateRunRequest{Params: p})
	require.NoError(t, err)
	final := waitFinished(t, ts.client, run.Id)
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_COMPLETED, final.Status, "%v %s\n%s", final.Error, final.Summary,
		describeSteps(t, ts.client, run.Id))

	_, called := hookCalls.Load("c-42")
	require.True(t, called, "the webhook got the model's arguments")
	require.Equal(t, 1, mcpServer.Calls())
	mu.Lock()
	require.NotEmpty(t, offered)
	require.Contains(t, offered[0], "customer")
	require.Contains(t, offered[0], "crm_lookup_order")
	require.NotContains(t, offered[0], "crm_echo", "only the tools the run names are offered")
	mu.Unlock()

	steps, err := ts.client.ListSteps(ctx, &wfv1.ListStepsRequest{RunId: run.Id})
	require.NoError(t, err)
	results := map[string]map[string]any{}
	for _, s := range steps.Steps {
		for _, a := range s.Actions {
			if a.Tool == "customer" || a.Tool == "crm_lookup_order" {
				require.Equal(t, "ok", a.Outcome, a.Message)
				results[a.Tool] = a.GetResult().AsMap()
			}
		}
		raw, err := protojson.Marshal(s)
		require.NoError(t, err)
		require.NotContains(t, string(raw), "hook-secret-5f4e3d2c1b")
		require.NotContains(t, string(raw), mcpToken)
	}
	require.Equal(t, map[string]any{"id": "c-42", "name": "Ada Lovelace"}, results["customer"])
	require.Equal(t, map[string]any{"order_id": "A-7", "status": "shipped"}, results["crm_lookup_order"])

	// Deleting a tool makes runs that name it invalid.
	_, err = catalog.DeleteTool(ctx, &wfv1.DeleteToolRequest{Name: "customer"})
	require.NoError(t, err)
	_, err = ts.client.CreateRun(ctx, &wfv1.CreateRunRequest{Params: p})
	requireCode(t, err, "InvalidArgument")
}
