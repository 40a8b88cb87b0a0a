package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/demo"
	"github.com/wayfinder/wayfinder/internal/llm"
	"github.com/wayfinder/wayfinder/internal/llm/llmtest"
	"github.com/wayfinder/wayfinder/internal/store/storetest"
)

// waitFinished streams the run's events to its end and returns the run.
func waitFinished(t *testing.T, client wfv1.RunServiceClient, runID string) *wfv1.Run {
	t.Helper()
	evs := collectEvents(t, client, runID, 0)
	require.NotEmpty(t, evs)
	last := evs[len(evs)-1]
	require.Equal(t, wfv1.RunEventType_RUN_EVENT_TYPE_FINISHED, last.Type)
	return last.GetRun()
}

// describeSteps renders a run's actions for failure messages.
func describeSteps(t *testing.T, client wfv1.RunServiceClient, runID string) string {
	steps, err := client.ListSteps(context.Background(), &wfv1.ListStepsRequest{RunId: runID})
	require.NoError(t, err)
	var b strings.Builder
	for _, s := range steps.Steps {
		for _, a := range s.Actions {
			args, _ := json.Marshal(a.Arguments.AsMap())
			res, _ := json.Marshal(a.Result.AsMap())
			fmt.Fprintf(&b, "step %d %s %s: %s %s %s %s\n", s.Number, a.Tool, args, a.Outcome, a.Strategy, a.Message, res)
		}
	}
	return b.String()
}

func demoSite(t *testing.T) string {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	u, err := demo.ServeSite(ctx)
	require.NoError(t, err)
	return u
}

// The offline step controller runs the demo task (log in, navigate, fill a
// form, verify the result) end to end through the public API, with no
// model and no cost.
func TestOfflineControllerRunsDemoTask(t *testing.T) {
	t.Parallel()
	ts := startServer(t, storetest.NewDB(t), serverOpts{})
	ctx := context.Background()
	run, err := ts.client.CreateRun(ctx, &wfv1.CreateRunRequest{Params: &wfv1.RunParams{
		Goal: demo.Goal, StartUrl: demoSite(t), AllowedDomains: []string{"127.0.0.1"},
	}})
	require.NoError(t, err)
	final := waitFinished(t, ts.client, run.Id)
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_COMPLETED, final.Status, "%s\n%s", final.Summary, describeSteps(t, ts.client, run.Id))
	require.True(t, strings.HasSuffix(final.FinalUrl, "/expenses"), final.FinalUrl)
	require.NotEmpty(t, final.Summary)
	require.NotEmpty(t, final.FinalScreenshotMediaId)
	require.True(t, final.GetFinalVerdict().GetDone())

	steps, err := ts.client.ListSteps(ctx, &wfv1.ListStepsRequest{RunId: run.Id})
	require.NoError(t, err)
	var tools []string
	for _, s := range steps.Steps {
		require.NotEmpty(t, s.ScreenshotMediaId, "step %d", s.Number)
		require.NotNil(t, s.Timings, "step %d", s.Number)
		for _, a := range s.Actions {
			tools = append(tools, a.Tool)
			if a.Tool != "complete_task" && a.Tool != "browser_navigate" {
				require.Equal(t, "ok", a.Outcome, "step %d %s: %s", s.Number, a.Tool, a.Message)
			}
		}
	}
	require.Contains(t, tools, "browser_fill")
	require.Contains(t, tools, "browser_select")
	require.Contains(t, tools, "browser_click")
	require.Equal(t, "complete_task", tools[len(tools)-1])

	prs, err := ts.client.ListPromptRuns(ctx, &wfv1.ListPromptRunsRequest{RunId: run.Id, PageSize: 200})
	require.NoError(t, err)
	require.NotEmpty(t, prs.PromptRuns)
	for _, pr := range prs.PromptRuns {
		require.Equal(t, "steps", pr.Provider)
		require.Equal(t, "controller", pr.Role)
		require.Empty(t, pr.Error)
	}
}

// demoScript drives the demo task like a vision model would, by targets,
// and judges like an LLM judge: done once the total is on the page.
func demoScript(t *testing.T) llmtest.Script {
	var mu sync.Mutex
	turn := 0
	calls := []llm.ToolCall{
		llm.Call("browser_fill", map[string]any{"target": map[string]any{"name": "Username"}, "value": demo.DemoUser, "reasoning": "log in", "confidence": 0.9}),
		llm.Call("browser_fill", map[string]any{"target": map[string]any{"name": "Password"}, "value": demo.DemoPassword, "confidence": 0.9}),
		llm.Call("browser_click", map[string]any{"target": map[string]any{"role": "button", "name": "Sign in"}, "confidence": 0.9}),
		llm.Call("browser_click", map[string]any{"target": map[string]any{"role": "link", "name": "Expenses"}, "confidence": 0.9}),
		llm.Call("browser_click", map[string]any{"target": map[string]any{"role": "link", "name": "New expense"}, "confidence": 0.9}),
		llm.Call("browser_fill", map[string]any{"target": map[string]any{"name": "Description"}, "value": "Team lunch", "confidence": 0.9}),
		llm.Call("browser_fill", map[string]any{"target": map[string]any{"name": "Amount"}, "value": "42.50", "confidence": 0.9}),
		llm.Call("browser_select", map[string]any{"target": map[string]any{"name": "Category"}, "value": "Meals", "confidence": 0.9}),
		llm.Call("browser_click", map[string]any{"target": map[string]any{"role": "button", "name": "Save"}, "confidence": 0.9}),
		llm.Call("complete_task", map[string]any{"status": "success", "reason": "the list shows Total: 42.50"}),
	}
	return func(c llmtest.Call) llmtest.Reply {
		usage := llm.Usage{InputTokens: 1000, OutputTokens: 50}
		if slices.Contains(c.Tools, "submit_verdict") {
			done := strings.Contains(lastText(c.Messages), "Total: 42.50")
			args, _ := json.Marshal(map[string]any{"done": done, "confidence": 0.9, "reason": "checked the page", "feedback": ""})
			return llmtest.Reply{ToolCalls: []llm.ToolCall{{ID: "v", Name: "submit_verdict", Arguments: args}}, Usage: usage}
		}
		mu.Lock()
		defer mu.Unlock()
		if turn >= len(calls) {
			t.Errorf("controller called %d times", turn+1)
			return llmtest.Reply{Status: 500}
		}
		call := calls[turn]
		turn++
		return llmtest.Reply{Text: "Next: " + call.Name, ToolCalls: []llm.ToolCall{call}, Usage: usage}
	}
}

// lastText is all the text of the conversation's last message, tool
// results included.
func lastText(msgs []llm.Message) string {
	if len(msgs) == 0 {
		return ""
	}
	var b strings.Builder
	for _, p := range msgs[len(msgs)-1].Parts {
		b.WriteString(p.Text)
		if p.ToolResult != nil {
			b.WriteString(p.ToolResult.Content)
		}
	}
	return b.String()
}

// The full loop on each vendor's wire format: the real SDK code paths
// (tool calls, tool results, image parts, usage) against local servers that
// speak Anthropic's, OpenAI's and Gemini's APIs, with an LLM judge.
func TestVendorProvidersDriveTheLoop(t *testing.T) {
	t.Parallel()
	ts := startServer(t, storetest.NewDB(t), serverOpts{allowPrivate: true})
	site := demoSite(t)
	for _, tc := range []struct {
		provider string
		server   func(testing.TB, llmtest.Script) *llmtest.Server
	}{
		{"anthropic", llmtest.NewAnthropic},
		{"openai", llmtest.NewOpenAI},
		{"gemini", llmtest.NewGemini},
	} {
		t.Run(tc.provider, func(t *testing.T) {
			t.Parallel()
			fake := tc.server(t, demoScript(t))
			ctx := context.Background()
			model := &wfv1.ModelSettings{Provider: tc.provider, Model: "test-model", BaseUrl: fake.URL}
			run, err := ts.client.CreateRun(ctx, &wfv1.CreateRunRequest{Params: &wfv1.RunParams{
				Goal: "Record a team lunch of 42.50 as a Meals expense and check the total", StartUrl: site,
				AllowedDomains: []string{"127.0.0.1"}, Controller: model,
				Judge: &wfv1.JudgeSettings{Strategy: wfv1.JudgeStrategy_JUDGE_STRATEGY_HYBRID, Model: model},
			}})
			require.NoError(t, err)
			final := waitFinished(t, ts.client, run.Id)
			require.Equal(t, wfv1.RunStatus_RUN_STATUS_COMPLETED, final.Status, "%v\n%s", final.Error, describeSteps(t, ts.client, run.Id))
			require.NotNil(t, final.Usage)
			require.Positive(t, final.Usage.InputTokens)
			require.Positive(t, final.Usage.ModelCalls)

			var sawImage, sawToolResult bool
			for _, c := range fake.Calls() {
				sawImage = sawImage || c.ImageCount > 0
				for _, m := range c.Messages {
					for _, p := range m.Parts {
						sawToolResult = sawToolResult || p.ToolResult != nil
					}
				}
			}
			require.True(t, sawImage, "no screenshot reached the model")
			require.True(t, sawToolResult, "no tool result reached the model")

			prs, err := ts.client.ListPromptRuns(ctx, &wfv1.ListPromptRunsRequest{RunId: run.Id, PageSize: 200})
			require.NoError(t, err)
			roles := map[string]int{}
			for _, pr := range prs.PromptRuns {
				roles[pr.Role]++
				require.Equal(t, tc.provider, pr.Provider)
				require.NotNil(t, pr.Request)
				if pr.Role == "controller" {
					require.NotEmpty(t, pr.MediaIds, "controller prompt without its screenshot")
				}
			}
			require.Positive(t, roles["controller"])
			require.Positive(t, roles["judge"])
		})
	}
}

// Cancelling a run while the model thinks ends it at once, with the step in
// progress on record.
func TestCancelDuringModelCall(t *testing.T) {
	t.Parallel()
	ts := startServer(t, storetest.NewDB(t), serverOpts{allowPrivate: true})
	fake := llmtest.NewOpenAI(t, func(llmtest.Call) llmtest.Reply { return llmtest.Reply{Delay: 5 * time.Minute} })
	site := newSite(t)
	ctx := context.Background()
	p := params(site.URL + "/")
	p.Controller = &wfv1.ModelSettings{Provider: "openai", BaseUrl: fake.URL}
	run, err := ts.client.CreateRun(ctx, &wfv1.CreateRunRequest{Params: p})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(fake.Calls()) > 0 }, time.Minute, 50*time.Millisecond)
	_, err = ts.client.CancelRun(ctx, &wfv1.CancelRunRequest{RunId: run.Id, Reason: "test"})
	require.NoError(t, err)
	final := waitFinished(t, ts.client, run.Id)
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_CANCELLED, final.Status)
	require.EqualValues(t, 1, final.StepCount, "the interrupted step is recorded")
}

// Engine parameters are checked at CreateRun: a clear error, nothing
// stored.
func TestEngineParamsRejected(t *testing.T) {
	t.Parallel()
	ts := startServer(t, storetest.NewDB(t), serverOpts{})
	ctx := context.Background()
	schema, _ := structpb.NewStruct(map[string]any{"type": "object"})
	for _, tc := range []struct {
		name  string
		edit  func(*wfv1.RunParams)
		code  codes.Code
		field string
	}{
		{"unknown provider", func(p *wfv1.RunParams) { p.Controller = &wfv1.ModelSettings{Provider: "cohere"} },
			codes.InvalidArgument, "params.controller.provider"},
		{"vendor without key", func(p *wfv1.RunParams) { p.Controller = &wfv1.ModelSettings{Provider: "anthropic"} },
			codes.InvalidArgument, "params.controller.provider"},
		{"offline goal that does not parse", func(p *wfv1.RunParams) { p.Goal = "Find the cheapest flight to Lisbon" },
			codes.InvalidArgument, "params.goal"},
		{"temperature out of range", func(p *wfv1.RunParams) {
			p.Controller = &wfv1.ModelSettings{Provider: "steps", Temperature: ptr(3.0)}
		}, codes.InvalidArgument, "params.controller.temperature"},
		{"tool shadows an engine tool", func(p *wfv1.RunParams) {
			p.Tools = []*wfv1.ToolDefinition{{Name: "browser_click", InputSchema: schema,
				Implementation: &wfv1.ToolDefinition_Webhook{Webhook: &wfv1.WebhookTool{Url: "https://tools.example.com/x"}}}}
		}, codes.InvalidArgument, "params.tools[0].name"},
		{"tool from the catalog", func(p *wfv1.RunParams) {
			p.Tools = []*wfv1.ToolDefinition{{Name: "lookup", InputSchema: schema,
				Implementation: &wfv1.ToolDefinition_CatalogRef{CatalogRef: "lookup"}}}
		}, codes.InvalidArgument, "params.tools[0].input_schema"},
		{"negative budget", func(p *wfv1.RunParams) { p.MaxCostUsd = -1 }, codes.InvalidArgument, "params.max_cost_usd"},
		{"confidence above 1", func(p *wfv1.RunParams) { p.MinConfidence = ptr(1.5) }, codes.InvalidArgument, "params.min_confidence"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := params("https://example.com/")
			tc.edit(p)
			_, err := ts.client.CreateRun(ctx, &wfv1.CreateRunRequest{Params: p})
			require.Equal(t, tc.code, status.Code(err), "%v", err)
			require.Contains(t, err.Error(), tc.field)
		})
	}
	list, err := ts.client.ListRuns(ctx, &wfv1.ListRunsRequest{})
	require.NoError(t, err)
	require.Empty(t, list.Runs)
}

func ptr[T any](v T) *T { return &v }
