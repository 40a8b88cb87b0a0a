package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/llm"
	"github.com/wayfinder/wayfinder/internal/llm/llmtest"
	"github.com/wayfinder/wayfinder/internal/store/storetest"
)

const (
	replayProfile = `<!doctype html><title>Profile</title>
<h1>Edit profile</h1>
<form action="/saved" method="get">
<p><label>First name <input name="first"></label></p>
<p><label><input type="checkbox" name="news"> Newsletter</label></p>
<button type="submit" id="save">Save</button> <button type="button">Cancel</button>
</form>`
	replaySaved = `<!doctype html><title>Saved</title><h1>Profile saved</h1><p>Your profile was saved.</p>`
)

// profileSite serves a profile form whose page a test can change.
type profileSite struct {
	*httptest.Server
	mu      sync.Mutex
	profile string
}

func newProfileSite(t *testing.T) *profileSite {
	s := &profileSite{profile: replayProfile}
	mux := http.NewServeMux()
	mux.HandleFunc("/profile", func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		body := s.profile
		s.mu.Unlock()
		fmt.Fprint(w, body)
	})
	mux.HandleFunc("/saved", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, replaySaved) })
	mux.HandleFunc("/favicon.ico", http.NotFound)
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

func (s *profileSite) set(body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.profile = body
}

// controllerQueue is a model on OpenAI's wire that answers with the calls
// queued, one per request, and fails the test when asked with none left.
type controllerQueue struct {
	t     *testing.T
	mu    sync.Mutex
	calls []llm.ToolCall
}

func (q *controllerQueue) push(calls ...llm.ToolCall) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.calls = append(q.calls, calls...)
}

func (q *controllerQueue) left() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.calls)
}

func (q *controllerQueue) reply(llmtest.Call) llmtest.Reply {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.calls) == 0 {
		q.t.Errorf("the controller was asked with no answer queued")
		return llmtest.Reply{Status: 500}
	}
	c := q.calls[0]
	q.calls = q.calls[1:]
	return llmtest.Reply{Text: "Next: " + c.Name, ToolCalls: []llm.ToolCall{c}, Usage: llm.Usage{InputTokens: 1000, OutputTokens: 50}}
}

func byName(tool, role, name string, extra map[string]any) llm.ToolCall {
	args := map[string]any{"target": map[string]any{"role": role, "name": name}, "confidence": 0.9}
	for k, v := range extra {
		args[k] = v
	}
	return llm.Call(tool, args)
}

// Record and replay end to end: a model-driven run records its trace; the
// same task replays it without a model call; on a changed page the replay
// heals through the model and the healed path becomes the task's newest
// trace, which then replays without the model; a strict replay of the old
// path fails cleanly; the metrics count it all.
func TestReplayRuns(t *testing.T) {
	t.Parallel()
	ts := startServer(t, storetest.NewDB(t), serverOpts{allowPrivate: true})
	traces := wfv1.NewTraceServiceClient(ts.conn)
	site := newProfileSite(t)
	q := &controllerQueue{t: t}
	fake := llmtest.NewOpenAI(t, q.reply)
	ctx := context.Background()
	recordPath := []llm.ToolCall{
		byName("browser_fill", "textbox", "First name", map[string]any{"value": "Ada"}),
		byName("browser_check", "checkbox", "Newsletter", nil),
		byName("browser_click", "button", "Save", nil),
		llm.Call("complete_task", map[string]any{"status": "success", "reason": "the page says Profile saved"}),
	}
	runParams := func(mode wfv1.ReplayMode, traceID string) *wfv1.RunParams {
		return &wfv1.RunParams{
			Goal:           "Save the profile with first name Ada and the newsletter on",
			StartUrl:       site.URL + "/profile",
			AllowedDomains: []string{"127.0.0.1"},
			Controller:     &wfv1.ModelSettings{Provider: "openai", Model: "test-model", BaseUrl: fake.URL},
			Judge:          &wfv1.JudgeSettings{Strategy: wfv1.JudgeStrategy_JUDGE_STRATEGY_HEURISTIC},
			Replay:         &wfv1.ReplayOptions{Mode: mode, TraceId: traceID},
		}
	}
	run := func(p *wfv1.RunParams) *wfv1.Run {
		t.Helper()
		r, err := ts.client.CreateRun(ctx, &wfv1.CreateRunRequest{Params: p})
		require.NoError(t, err)
		final := waitFinished(t, ts.client, r.Id)
		require.Zero(t, q.left(), "every queued model answer was used")
		return final
	}
	actors := func(runID string) []string {
		t.Helper()
		steps, err := ts.client.ListSteps(ctx, &wfv1.ListStepsRequest{RunId: runID})
		require.NoError(t, err)
		var out []string
		for _, st := range steps.Steps {
			out = append(out, st.Actor)
		}
		return out
	}

	// 1. The model drives and the run records the task's first trace. The
	// mode is auto: there is no trace yet.
	q.push(recordPath...)
	first := run(runParams(wfv1.ReplayMode_REPLAY_MODE_AUTO, ""))
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_COMPLETED, first.Status, "%v\n%s", first.Error, describeSteps(t, ts.client, first.Id))
	require.Equal(t, wfv1.ReplayOutcome_REPLAY_OUTCOME_NO_TRACE, first.Replay.GetOutcome())
	recorded, err := traces.GetTrace(ctx, &wfv1.GetTraceRequest{TraceId: first.Id})
	require.NoError(t, err)
	require.EqualValues(t, 1, recorded.Version)
	require.Len(t, recorded.Actions, 3)
	require.EqualValues(t, 4, recorded.RecordedUsage.GetModelCalls())
	calls := len(fake.Calls())

	// 2. The same task replays without a model call.
	second := run(runParams(wfv1.ReplayMode_REPLAY_MODE_AUTO, ""))
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_COMPLETED, second.Status, "%v\n%s", second.Error, describeSteps(t, ts.client, second.Id))
	require.Equal(t, calls, len(fake.Calls()), "no model call")
	require.Zero(t, second.Usage.GetModelCalls())
	rep := second.Replay
	require.Equal(t, wfv1.ReplayOutcome_REPLAY_OUTCOME_REPLAYED, rep.Outcome, rep.Divergence)
	require.Equal(t, first.Id, rep.TraceId)
	require.EqualValues(t, 1, rep.TraceVersion)
	require.EqualValues(t, 3, rep.ReplayedActions)
	require.EqualValues(t, 4, rep.ModelCallsSaved)
	require.EqualValues(t, 4*1050, rep.TokensSaved)
	require.Empty(t, rep.HealedTraceId, "a replay that followed its trace learned no new path")
	require.Equal(t, []string{"replay", "replay", "replay", "replay"}, actors(second.Id))

	// 3. The Save button is renamed and loses its id: the replay heals
	// through the model from the step it could not take.
	site.set(strings.Replace(replayProfile, `<button type="submit" id="save">Save</button>`,
		`<button type="submit">Store</button> <button type="reset">Reset</button>`, 1))
	q.push(byName("browser_click", "button", "Store", nil),
		llm.Call("complete_task", map[string]any{"status": "success", "reason": "the page says Profile saved"}))
	third := run(runParams(wfv1.ReplayMode_REPLAY_MODE_AUTO, ""))
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_COMPLETED, third.Status, "%v\n%s", third.Error, describeSteps(t, ts.client, third.Id))
	rep = third.Replay
	require.Equal(t, wfv1.ReplayOutcome_REPLAY_OUTCOME_HEALED, rep.Outcome)
	require.EqualValues(t, 2, rep.ReplayedActions)
	require.EqualValues(t, 3, rep.DivergedAtStep)
	require.Contains(t, rep.Divergence, `browser_click button "Save"`)
	require.EqualValues(t, 2, rep.ModelCallsSaved)
	require.Equal(t, third.Id, rep.HealedTraceId)
	require.Equal(t, []string{"replay", "replay", "model", "model"}, actors(third.Id))
	healed, err := traces.GetTrace(ctx, &wfv1.GetTraceRequest{TraceId: third.Id})
	require.NoError(t, err)
	require.EqualValues(t, 2, healed.Version)
	require.Equal(t, first.Id, healed.HealedFrom)
	require.Equal(t, recorded.TaskKey, healed.TaskKey)
	require.Len(t, healed.Actions, 3)
	require.EqualValues(t, 4, healed.RecordedUsage.GetModelCalls(), "a healed trace keeps the model-driven cost of the path")

	// 4. The healed trace is the task's newest: the changed page replays
	// without the model.
	calls = len(fake.Calls())
	fourth := run(runParams(wfv1.ReplayMode_REPLAY_MODE_AUTO, ""))
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_COMPLETED, fourth.Status, "%v\n%s", fourth.Error, describeSteps(t, ts.client, fourth.Id))
	require.Equal(t, calls, len(fake.Calls()), "no model call")
	require.Equal(t, wfv1.ReplayOutcome_REPLAY_OUTCOME_REPLAYED, fourth.Replay.Outcome, fourth.Replay.Divergence)
	require.Equal(t, third.Id, fourth.Replay.TraceId)

	// 5. A strict replay of the first trace fails cleanly where the page
	// changed, without asking the model.
	fifth := run(runParams(wfv1.ReplayMode_REPLAY_MODE_STRICT, first.Id))
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_ERROR, fifth.Status)
	require.Equal(t, wfv1.ErrorCategory_ERROR_CATEGORY_REPLAY_DIVERGED, fifth.Error.GetCategory())
	require.Contains(t, fifth.Error.GetMessage(), "diverged from its trace at step 3")
	require.Equal(t, wfv1.ReplayOutcome_REPLAY_OUTCOME_DIVERGED, fifth.Replay.Outcome)
	require.EqualValues(t, 3, fifth.Replay.DivergedAtStep)
	require.Equal(t, calls, len(fake.Calls()), "no model call")

	resp, err := http.Get("http://" + ts.addrs.HTTP + "/metrics")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	var lines []string
	for _, l := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(l, "wayfinder_replay") {
			lines = append(lines, l)
		}
	}
	got := strings.Join(lines, "\n")
	for _, want := range []string{
		`wayfinder_replays_total{mode="auto",outcome="no_trace"} 1`,
		`wayfinder_replays_total{mode="auto",outcome="replayed"} 2`,
		`wayfinder_replays_total{mode="auto",outcome="healed"} 1`,
		`wayfinder_replays_total{mode="strict",outcome="diverged"} 1`,
		`wayfinder_replay_model_calls_saved_total 10`,
		`wayfinder_replay_tokens_saved_total 10500`,
	} {
		require.Contains(t, got, want)
	}
}
