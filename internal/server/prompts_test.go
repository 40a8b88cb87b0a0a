package server_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/llm"
	"github.com/wayfinder/wayfinder/internal/llm/llmtest"
	"github.com/wayfinder/wayfinder/internal/store/storetest"
)

// A run whose controller and judge name library prompts gets their
// rendered templates as system prompts and the prompts' default model
// settings, and every model call records the version it used — the
// latest when the run started, even though a newer one exists since.
func TestRunUsesPromptLibrary(t *testing.T) {
	t.Parallel()
	ts := startServer(t, storetest.NewDB(t), serverOpts{allowPrivate: true})
	prompts := wfv1.NewPromptServiceClient(ts.conn)
	ctx := context.Background()
	site := newSite(t)

	var (
		mu                      sync.Mutex
		controllerSys, judgeSys []string
		controllerTemp          []*float64
		release                 = make(chan struct{})
	)
	fake := llmtest.NewOpenAI(t, func(c llmtest.Call) llmtest.Reply {
		mu.Lock()
		defer mu.Unlock()
		if slices.Contains(c.Tools, "submit_verdict") {
			judgeSys = append(judgeSys, c.System)
			return llmtest.Reply{ToolCalls: []llm.ToolCall{llm.Call("submit_verdict",
				map[string]any{"done": true, "failed": false, "confidence": 0.95, "reason": "the page says hello"})}}
		}
		controllerSys, controllerTemp = append(controllerSys, c.System), append(controllerTemp, c.Temperature)
		mu.Unlock()
		<-release // hold the first call until v2 exists
		mu.Lock()
		return llmtest.Reply{ToolCalls: []llm.ToolCall{llm.Call("complete_task",
			map[string]any{"status": "success", "reason": "the page says hello"})}}
	})

	_, err := prompts.CreatePrompt(ctx, &wfv1.CreatePromptRequest{Prompt: &wfv1.Prompt{
		Name: "greeter", Role: wfv1.PromptRole_PROMPT_ROLE_CONTROLLER, Description: "says hello",
		Template: "LIBRARY v1. Your goal: {{.Goal}}. Act {{.ActionsPerTurn}} at a time.",
		Defaults: &wfv1.ModelSettings{Temperature: proto.Float64(0.25)},
	}})
	require.NoError(t, err)
	_, err = prompts.CreatePrompt(ctx, &wfv1.CreatePromptRequest{Prompt: &wfv1.Prompt{
		Name: "strict", Role: wfv1.PromptRole_PROMPT_ROLE_JUDGE, Template: "STRICT JUDGE. Trust only the page.",
	}})
	require.NoError(t, err)

	p := params(site.URL + "/")
	p.Controller = &wfv1.ModelSettings{Provider: "openai", Model: "test-model", BaseUrl: fake.URL,
		Prompt: &wfv1.ModelSettings_PromptRef{PromptRef: "greeter"}}
	p.Judge = &wfv1.JudgeSettings{Strategy: wfv1.JudgeStrategy_JUDGE_STRATEGY_LLM,
		Model: &wfv1.ModelSettings{Provider: "openai", Model: "test-model", BaseUrl: fake.URL,
			Prompt: &wfv1.ModelSettings_PromptRef{PromptRef: "strict@1"}}}
	run, err := ts.client.CreateRun(ctx, &wfv1.CreateRunRequest{Params: p})
	require.NoError(t, err)

	waitForEventCtx(t, ctx, ts.client, run.Id, wfv1.RunEventType_RUN_EVENT_TYPE_STEP_STARTED)
	// The run has started: "greeter" is pinned at v1, so v2 changes nothing.
	_, err = prompts.CreatePrompt(ctx, &wfv1.CreatePromptRequest{Prompt: &wfv1.Prompt{
		Name: "greeter", Role: wfv1.PromptRole_PROMPT_ROLE_CONTROLLER, Template: "LIBRARY v2 {{.Goal}}",
	}})
	require.NoError(t, err)
	close(release)

	final := waitFinished(t, ts.client, run.Id)
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_COMPLETED, final.Status, "%v %s", final.Error, final.Summary)

	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, controllerSys)
	for i, sys := range controllerSys {
		require.Equal(t, "LIBRARY v1. Your goal: Expect text Hello from the test site. Act 1 at a time.", sys)
		require.NotNil(t, controllerTemp[i], "the prompt's default temperature applies")
		require.InDelta(t, 0.25, *controllerTemp[i], 1e-9)
	}
	require.NotEmpty(t, judgeSys)
	for _, sys := range judgeSys {
		require.Equal(t, "STRICT JUDGE. Trust only the page.", sys)
	}

	prs, err := ts.client.ListPromptRuns(ctx, &wfv1.ListPromptRunsRequest{RunId: run.Id})
	require.NoError(t, err)
	roles := map[string]int{}
	for _, pr := range prs.PromptRuns {
		roles[pr.Role]++
		switch pr.Role {
		case "controller":
			require.Equal(t, "greeter@1", pr.PromptRef)
		case "judge":
			require.Equal(t, "strict@1", pr.PromptRef)
		}
	}
	require.Positive(t, roles["controller"])
	require.Positive(t, roles["judge"])

	// A prompt a run no longer needs can go; the record keeps its name.
	_, err = prompts.DeletePrompt(ctx, &wfv1.DeletePromptRequest{Name: "greeter"})
	require.NoError(t, err)
	_, err = ts.client.CreateRun(ctx, &wfv1.CreateRunRequest{Params: p})
	requireCode(t, err, "InvalidArgument")
}
