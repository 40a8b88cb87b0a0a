package server_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/llm"
	"github.com/wayfinder/wayfinder/internal/llm/llmtest"
	"github.com/wayfinder/wayfinder/internal/store/storetest"
)

// linkSite is a two-page task: a start page whose link (with a test id)
// leads to the end. With its notice on, / is an interstitial with a
// Continue button before the start page, so a replay of a trace recorded
// without it no longer finds the page it expects.
type linkSite struct {
	*httptest.Server
	notice atomic.Bool
}

func newLinkSite(t *testing.T) *linkSite {
	t.Helper()
	s := &linkSite{}
	page := func(w http.ResponseWriter, body string) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, body)
	}
	const start = `<!doctype html><title>Start</title><h1>Start</h1><p>Follow the link.</p><a href="/done" data-testid="go-link">Go</a>`
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		if s.notice.Load() {
			page(w, `<!doctype html><title>Notice</title><h1>Notice</h1><p>Read this first.</p><form action="/start"><button>Continue</button></form>`)
			return
		}
		page(w, start)
	})
	mux.HandleFunc("GET /start", func(w http.ResponseWriter, _ *http.Request) { page(w, start) })
	mux.HandleFunc("GET /done", func(w http.ResponseWriter, _ *http.Request) {
		page(w, `<!doctype html><title>Done</title><h1>All done</h1><p>You reached the end.</p>`)
	})
	mux.HandleFunc("/favicon.ico", http.NotFound)
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// linkFollower is a controller model that acts on the page it was shown
// last (by its heading): Continue on the notice, Go on the start page. Its controller calls
// are counted.
func linkFollower(calls *atomic.Int64) llmtest.Script {
	return func(c llmtest.Call) llmtest.Reply {
		calls.Add(1)
		// A tool result holds the page as a JSON string.
		page := strings.ReplaceAll(sinceAssistant(c.Messages), `\"`, `"`)
		usage := llm.Usage{InputTokens: 1200, OutputTokens: 40}
		switch {
		case strings.Contains(page, `h1 "Notice"`):
			return llmtest.Reply{Text: "a notice", ToolCalls: []llm.ToolCall{clickOn("button", "Continue")}, Usage: usage}
		case strings.Contains(page, `h1 "Start"`):
			return llmtest.Reply{Text: "the start page", ToolCalls: []llm.ToolCall{clickOn("link", "Go")}, Usage: usage}
		}
		return llmtest.Reply{ToolCalls: []llm.ToolCall{llm.Call("complete_task", map[string]any{"status": "failed", "reason": "lost: " + page})}, Usage: usage}
	}
}

// linkRunParams are REST run params for the link task with goal; the run
// completes when the end page shows.
func linkRunParams(goal string, s *linkSite, model string) map[string]any {
	return map[string]any{
		"goal": goal, "start_url": s.URL + "/", "allowed_domains": []string{"127.0.0.1"},
		"controller": map[string]any{"provider": "openai", "model": "test-model", "base_url": model},
		"judge":      map[string]any{"strategy": "JUDGE_STRATEGY_HEURISTIC"},
		"completion": map[string]any{"success": []map[string]any{{"name": "the end", "text_present": "You reached the end"}}},
	}
}

// restTrace is a trace as the REST API answers it.
type restTrace struct {
	ID            string `json:"id"`
	TaskKey       string `json:"task_key"`
	Version       int    `json:"version"`
	Pinned        bool   `json:"pinned"`
	HealedFrom    string `json:"healed_from"`
	ActionCount   int    `json:"action_count"`
	RecordedUsage struct {
		ModelCalls int `json:"model_calls"`
	} `json:"recorded_usage"`
	Actions []map[string]any `json:"actions"`
}

// getTrace reads a trace over REST; it returns the HTTP status.
func getTrace(t *testing.T, base, id string) (restTrace, int) {
	t.Helper()
	var tr restTrace
	code := restJSON(t, http.MethodGet, base+"/v1/traces/"+id, "", &tr)
	return tr, code
}

// pwnGoal is a goal with markup that must show as text.
const pwnGoal = `Follow Go to the end <img src=x id=pwn onerror="window.__pwned=1"><script>window.__pwned=2</script>`

// TestDashboardTraces drives the Traces pages in Chromium: completed runs'
// traces are listed newest first and filtered by task and by pinned; a
// trace's page shows its actions (tool, arguments, target, pages) and final
// page; it is pinned and unpinned, exported (shown, and downloaded as the
// file the server names) and deleted; an unknown trace says so; the goal's
// markup stays text.
func TestDashboardTraces(t *testing.T) {
	t.Parallel()
	ts := startServer(t, storetest.NewDB(t), serverOpts{allowPrivate: true})
	base := "http://" + ts.addrs.HTTP
	site := newLinkSite(t)
	var calls atomic.Int64
	model := llmtest.NewOpenAI(t, linkFollower(&calls))

	// Two tasks, each recorded by a completed run.
	first := createRunREST(t, base, linkRunParams(pwnGoal, site, model.URL))
	logRunOnFailure(t, ts, first)
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_COMPLETED, waitFinished(t, ts.client, first).Status)
	other := createRunREST(t, base, linkRunParams("Reach the end page", site, model.URL))
	logRunOnFailure(t, ts, other)
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_COMPLETED, waitFinished(t, ts.client, other).Status)
	tr, code := getTrace(t, base, first)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, 1, tr.ActionCount, "%+v", tr)
	require.Positive(t, tr.RecordedUsage.ModelCalls)

	// The header leads to the list: newest first, each with its run.
	page := openDashboard(t, base+"/ui/")
	page.click(`nav.sections a[data-section="traces"]`)
	row := `tr[data-trace-id="` + first + `"]`
	otherRow := `tr[data-trace-id="` + other + `"]`
	page.el(row)
	page.el(otherRow)
	require.Equal(t, "true", page.eval(`() => document.querySelector('nav.sections a[data-section="traces"]').getAttribute('aria-current')`))
	require.Equal(t, []any{other, first}, page.eval(`() => [...document.querySelectorAll('.traces-table tbody tr')].map(tr => tr.dataset.traceId)`))
	require.Equal(t, pwnGoal, page.text(row+` a.goal`))
	require.Equal(t, site.URL+"/", page.text(row+` .start-url`))
	require.Equal(t, "v1", page.text(row+` .version`))
	require.Equal(t, "1", page.text(row+` .actions-count`))
	require.True(t, strings.HasPrefix(page.text(row+` .recorded-usage`), fmt.Sprintf("%d model call", tr.RecordedUsage.ModelCalls)), page.text(row+` .recorded-usage`))
	require.Equal(t, "#/runs/"+first, page.eval(`sel => document.querySelector(sel).getAttribute('href')`, row+` a.run-link`))
	require.False(t, page.has(row+` .pinned:not([hidden])`))
	page.shot("traces")

	// A task key filters the list to its task.
	page.click(row + ` a.task-key`)
	page.waitJS(`key => location.hash === '#/traces?task=' + key`, tr.TaskKey)
	page.el(row)
	page.waitJS(`sel => !document.querySelector(sel)`, otherRow)
	page.el(`.traces .task-filter`)

	// The trace's page: its header, actions and final page.
	page.click(row + ` a.goal`)
	view := `section.trace[data-trace-id="` + first + `"]`
	page.waitText(view+` .trace-header h1.goal`, pwnGoal)
	require.Equal(t, "v1", page.text(view+` .trace-header .version`))
	require.Equal(t, "#/runs/"+first, page.eval(`sel => document.querySelector(sel).getAttribute('href')`, view+` .trace-header a.run-link`))
	action := view + ` li.trace-action[data-step="1"][data-tool="browser_click"]`
	page.el(action)
	require.Contains(t, page.text(action+` .args`), `"name":"Go"`)
	require.Equal(t, "link", page.text(action+` .target-role`))
	require.Equal(t, `"Go"`, page.text(action+` .target-name`))
	require.Equal(t, "data-testid=go-link", page.text(action+` .target-testid`))
	require.NotEmpty(t, page.text(action+` .url-pattern`))
	require.Equal(t, site.URL+"/done", page.text(action+` .url-after`))
	require.Equal(t, site.URL+"/done", page.text(view+` .trace-final .final-url`))
	require.Equal(t, "the end", page.text(view+` .trace-final .criteria tr[data-matched="true"] td`))
	page.shot("trace")

	// Pin, then unpin.
	require.False(t, page.has(view+` .trace-header .pinned:not([hidden])`))
	page.click(view + ` button.pin`)
	page.el(view + `[data-pinned="true"] .trace-header .pinned:not([hidden])`)
	require.Equal(t, "Unpin", page.text(view+` button.pin`))
	tr, _ = getTrace(t, base, first)
	require.True(t, tr.Pinned)
	page.eval(`() => { location.hash = '#/traces?pinned=1' }`)
	page.el(row + `[data-pinned="true"] .pinned:not([hidden])`)
	page.waitJS(`sel => !document.querySelector(sel)`, otherRow)
	page.click(row + ` a.goal`)
	page.el(view + `[data-pinned="true"]`)
	page.click(view + ` button.pin`)
	page.el(view + `[data-pinned="false"]`)
	require.False(t, page.has(view+` .trace-header .pinned:not([hidden])`))
	require.Equal(t, "Pin", page.text(view+` button.pin`))
	tr, _ = getTrace(t, base, first)
	require.False(t, tr.Pinned)

	// Export: shown as the server renders it, and saved as its file.
	for _, tc := range []struct{ name, format string }{
		{"go", "TRACE_EXPORT_FORMAT_GO_TEST"},
		{"steps", "TRACE_EXPORT_FORMAT_STEPS"},
	} {
		var out struct {
			Filename string `json:"filename"`
			Content  string `json:"content"`
		}
		require.Equal(t, http.StatusOK, restJSON(t, http.MethodGet, base+"/v1/traces/"+first+":export?format="+tc.format, "", &out))
		require.NotEmpty(t, out.Content)
		page.click(view + ` button.export[data-format="` + tc.name + `"]`)
		panel := `.export-panel[data-format="` + tc.name + `"]`
		page.waitText(panel+` pre.export-content`, out.Content)
		require.Equal(t, out.Filename, page.text(panel+` .filename`))

		dir := t.TempDir()
		wait := page.p.Browser().Timeout(uiWait).WaitDownload(dir)
		page.click(panel + ` button.download`)
		info := wait()
		require.NotNil(t, info, "no download")
		require.Equal(t, out.Filename, info.SuggestedFilename)
		saved, err := os.ReadFile(filepath.Join(dir, info.GUID))
		require.NoError(t, err)
		require.Equal(t, out.Content, string(saved))
	}
	page.shot("trace-export")

	// Delete asks first; kept, then deleted.
	page.click(view + ` button.delete`)
	page.el(view + ` .confirm-delete:not([hidden])`)
	page.click(view + ` .confirm-delete button.keep`)
	page.el(view + ` .confirm-delete[hidden]`)
	_, code = getTrace(t, base, first)
	require.Equal(t, http.StatusOK, code, "kept")
	page.click(view + ` button.delete`)
	page.click(view + ` .confirm-delete button.confirm`)
	page.waitJS(`() => location.hash === '#/traces' && document.querySelector('section.traces') !== null`)
	page.el(otherRow)
	require.False(t, page.has(row))
	_, code = getTrace(t, base, first)
	require.Equal(t, http.StatusNotFound, code)

	// A deleted or unknown trace says so.
	for _, id := range []string{first, uuid.NewString(), "not-a-trace"} {
		page.eval(`id => { location.hash = '#/traces/' + id }`, id)
		page.waitText(`section.trace[data-trace-id="`+id+`"] .message`, "There is no such trace.")
		require.False(t, page.has(`section.trace .trace-header:not([hidden])`))
	}

	// Untrusted text stayed text.
	require.Equal(t, false, page.eval(`() => window.__pwned !== undefined || document.getElementById('pwn') !== null`))
	page.noErrors()
}

// restReplay is a run's replay report as the REST API answers it.
type restReplay struct {
	Outcome          string `json:"outcome"`
	TraceID          string `json:"trace_id"`
	TraceVersion     int    `json:"trace_version"`
	ReplayedActions  int    `json:"replayed_actions"`
	RelocatedActions int    `json:"relocated_actions"`
	DivergedAtStep   int    `json:"diverged_at_step"`
	Divergence       string `json:"divergence"`
	ModelCallsSaved  int    `json:"model_calls_saved"`
	TokensSaved      string `json:"tokens_saved"`
	HealedTraceID    string `json:"healed_trace_id"`
}

// TestDashboardTracesReplay: a run that replayed a trace shows its replay
// (outcome, the trace followed, actions replayed, what it saved) and marks
// the steps the replay took apart from the model's; a run that healed
// shows where it diverged and links the healed trace, which the list shows
// as a new version healed from the first.
func TestDashboardTracesReplay(t *testing.T) {
	t.Parallel()
	ts := startServer(t, storetest.NewDB(t), serverOpts{allowPrivate: true})
	base := "http://" + ts.addrs.HTTP
	site := newLinkSite(t)
	var calls atomic.Int64
	model := llmtest.NewOpenAI(t, linkFollower(&calls))
	goal := "Follow Go to the end"

	recorded := createRunREST(t, base, linkRunParams(goal, site, model.URL))
	logRunOnFailure(t, ts, recorded)
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_COMPLETED, waitFinished(t, ts.client, recorded).Status)

	replayRun := func() (string, restReplay) {
		t.Helper()
		p := linkRunParams(goal, site, model.URL)
		p["replay"] = map[string]any{"mode": "REPLAY_MODE_AUTO"}
		id := createRunREST(t, base, p)
		logRunOnFailure(t, ts, id)
		require.Equal(t, wfv1.RunStatus_RUN_STATUS_COMPLETED, waitFinished(t, ts.client, id).Status)
		var run struct {
			Replay restReplay `json:"replay"`
		}
		require.Equal(t, http.StatusOK, restJSON(t, http.MethodGet, base+"/v1/runs/"+id, "", &run))
		return id, run.Replay
	}

	// A replay of the unchanged page: every action replayed, no model.
	before := calls.Load()
	replayed, rep := replayRun()
	require.Equal(t, "REPLAY_OUTCOME_REPLAYED", rep.Outcome, "%+v", rep)
	require.Equal(t, before, calls.Load(), "the replay asked the model")
	page := openDashboard(t, base+"/ui/#/runs/"+replayed)
	panel := `section.run[data-run-id="` + replayed + `"] .run-header section.replay[data-outcome="REPLAY_OUTCOME_REPLAYED"]`
	page.el(panel)
	require.Equal(t, "replayed", page.text(panel+` .replay-outcome`))
	require.Equal(t, "auto", page.text(panel+` .replay-mode`))
	require.Equal(t, "#/traces/"+recorded, page.eval(`sel => document.querySelector(sel).getAttribute('href')`, panel+` a.replay-trace`))
	require.Contains(t, page.text(panel+` a.replay-trace`), fmt.Sprintf("v%d", rep.TraceVersion))
	require.Equal(t, fmt.Sprintf("%d replayed", rep.ReplayedActions), page.text(panel+` .replay-actions`))
	require.True(t, strings.HasPrefix(page.text(panel+` .replay-saved`), fmt.Sprintf("%d model call", rep.ModelCallsSaved)))
	require.False(t, page.has(panel+` .replay-divergence`))

	// Its steps: the replay's are marked, and counted apart from the model's.
	steps, err := ts.client.ListSteps(t.Context(), &wfv1.ListStepsRequest{RunId: replayed})
	require.NoError(t, err)
	by := map[string]int{}
	for _, s := range steps.Steps {
		by[s.Actor]++
		li := fmt.Sprintf(`li.step[data-step="%d"]:not(.in-progress)`, s.Number)
		page.el(li + `[data-actor="` + s.Actor + `"]`)
		require.Equal(t, s.Actor, page.text(li+` .step-head .badge.actor`))
	}
	require.Positive(t, by["replay"], "no step was replayed")
	page.el(`li.step.replay[data-actor="replay"]`)
	require.Equal(t, fmt.Sprintf("%d replayed · %d by the model", by["replay"], by["model"]), page.text(`.tab-steps .actor-counts`))
	page.shot("run-replayed")

	// The page changed (a notice before the start page): the replay
	// diverges and the model heals it.
	site.notice.Store(true)
	healed, rep := replayRun()
	require.Equal(t, "REPLAY_OUTCOME_HEALED", rep.Outcome, "%+v", rep)
	require.NotEmpty(t, rep.HealedTraceID)
	page.eval(`id => { location.hash = '#/runs/' + id }`, healed)
	panel = `section.run[data-run-id="` + healed + `"] .run-header section.replay[data-outcome="REPLAY_OUTCOME_HEALED"]`
	page.el(panel)
	require.Equal(t, "healed", page.text(panel+` .replay-outcome`))
	require.Equal(t, fmt.Sprintf("at step %d", rep.DivergedAtStep), page.text(panel+` .diverged-step`))
	require.Equal(t, rep.Divergence, page.text(panel+` .divergence`))
	require.Equal(t, "#/traces/"+rep.HealedTraceID, page.eval(`sel => document.querySelector(sel).getAttribute('href')`, panel+` a.healed-trace`))
	page.el(`li.step[data-actor="model"] .badge.actor[data-actor="model"]`)
	page.shot("run-healed")

	// The healed trace is the task's next version, healed from the first.
	page.click(panel + ` a.healed-trace`)
	view := `section.trace[data-trace-id="` + rep.HealedTraceID + `"]`
	page.el(view + ` .trace-header:not([hidden])`)
	require.Equal(t, "#/traces/"+recorded, page.eval(`sel => document.querySelector(sel).getAttribute('href')`, view+` a.healed-from`))
	page.click(view + ` .trace-header a.task-key`)
	healedRow := `tr[data-trace-id="` + rep.HealedTraceID + `"]`
	page.el(healedRow)
	page.el(`tr[data-trace-id="` + recorded + `"]`)
	require.Equal(t, "v2", page.text(healedRow+` .version`))
	require.Equal(t, "#/traces/"+recorded, page.eval(`sel => document.querySelector(sel).getAttribute('href')`, healedRow+` a.healed-from`))
	page.noErrors()
}
