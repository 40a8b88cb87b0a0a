package worker

import (
	"encoding/json"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/stretchr/testify/require"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/llm"
	"github.com/wayfinder/wayfinder/internal/runner"
	"github.com/wayfinder/wayfinder/internal/trace"
)

// A completed run's trace is stored under its task key; a failed run's is
// not.
func TestWorkerStoresTraceOfCompletedRun(t *testing.T) {
	t.Parallel()
	b := newOutputBundle(t)
	run := b.start(t)
	key, err := TraceKey(run.GetParams())
	require.NoError(t, err)
	final, err := b.worker(t, llm.NewScripted("controller", extractCall(), completeCall(nil))).execute(testCtx(t), run, b.log)
	require.NoError(t, err)
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_COMPLETED, final.Status, "%v", final.Error)

	tr, err := b.store.LatestTrace(t.Context(), run.GetTenantId(), key)
	require.NoError(t, err)
	require.Equal(t, run.Id, tr.RunID)
	require.Equal(t, 1, tr.Version)
	var actions []trace.Action
	require.NoError(t, json.Unmarshal(tr.Actions, &actions))
	require.Len(t, actions, 1)
	require.Equal(t, runner.ToolExtract, actions[0].Tool)
	require.Nil(t, actions[0].Target, "an extract aims at no element")
	require.Equal(t, b.url, actions[0].URL)
	var fin struct {
		trace.Final
		StartURL string `json:"start_url"`
	}
	require.NoError(t, json.Unmarshal(tr.Final, &fin))
	require.Equal(t, b.url, fin.URL)
	require.Equal(t, b.url, fin.StartURL)
	require.NotNil(t, fin.Verdict)
	require.True(t, fin.Verdict.Done)
	require.Len(t, fin.Criteria, 1)
	require.True(t, fin.Criteria[0].Matched)

	failed := b.start(t)
	final, err = b.worker(t, llm.NewScripted("controller", llm.Reply("No.",
		llm.Call(runner.ToolComplete, map[string]any{"status": "failed", "reason": "no prices"})))).execute(testCtx(t), failed, b.log)
	require.NoError(t, err)
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_FAILED, final.Status)
	_, err = b.store.GetTrace(t.Context(), failed.GetTenantId(), failed.Id)
	require.ErrorIs(t, err, fault.ErrNotFound)
}

func TestTraceKey(t *testing.T) {
	t.Parallel()
	base := func() *wfv1.RunParams {
		return &wfv1.RunParams{Goal: "Read the prices", StartUrl: "https://shop.example/prices", AllowedDomains: []string{"shop.example"}}
	}
	key := func(p *wfv1.RunParams) string {
		k, err := TraceKey(p)
		require.NoError(t, err)
		return k
	}
	k := key(base())
	same := base()
	same.Goal, same.MaxSteps, same.Labels = "Read  the prices\n", 9, map[string]string{"team": "a"}
	require.Equal(t, k, key(same), "whitespace, limits and labels do not change the task")
	timed := base()
	timed.Browser = &wfv1.BrowserConfig{RunTimeout: durationpb.New(time.Minute),
		NavigationTimeout: durationpb.New(time.Second), ActionTimeout: durationpb.New(time.Second)}
	require.Equal(t, k, key(timed), "timeouts (filled in from the server's maximum) do not change the task")
	replay := base()
	replay.Replay = &wfv1.ReplayOptions{Mode: wfv1.ReplayMode_REPLAY_MODE_STRICT}
	require.Equal(t, k, key(replay), "asking for a replay does not change the task")
	for name, change := range map[string]func(*wfv1.RunParams){
		"goal":      func(p *wfv1.RunParams) { p.Goal = "Read the fees" },
		"start URL": func(p *wfv1.RunParams) { p.StartUrl = "https://shop.example/fees" },
		"domains":   func(p *wfv1.RunParams) { p.AllowedDomains = append(p.AllowedDomains, "cdn.example") },
		"locale":    func(p *wfv1.RunParams) { p.Browser = &wfv1.BrowserConfig{Locale: "de-DE"} },
		"profile":   func(p *wfv1.RunParams) { p.Browser = &wfv1.BrowserConfig{Profile: "signed-in"} },
		"viewport": func(p *wfv1.RunParams) {
			p.Browser = &wfv1.BrowserConfig{Viewport: &wfv1.Viewport{Width: 390, Height: 844}}
		},
	} {
		p := base()
		change(p)
		require.NotEqual(t, k, key(p), name)
	}
}
