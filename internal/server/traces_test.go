package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/llm"
	"github.com/wayfinder/wayfinder/internal/llm/llmtest"
	"github.com/wayfinder/wayfinder/internal/store/storetest"
)

// newTraceSite serves a profile form whose Save leads to "Profile saved".
func newTraceSite(t *testing.T) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/profile", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `<!doctype html><title>Profile</title><h1>Edit profile</h1>
<form action="/saved" method="get"><p><label>First name <input name="first"></label></p>
<button type="submit" id="save">Save</button></form>`)
	})
	mux.HandleFunc("/saved", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<!doctype html><title>Saved</title><h1>Profile saved</h1><p>for %s</p>`, strings.ReplaceAll(r.URL.Query().Get("first"), "<", ""))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

var (
	traceFirstNameRef = regexp.MustCompile(`(@e\d+) textbox "First name"( = "Ada")?`)
	traceSaveRef      = regexp.MustCompile(`(@e\d+) button "Save"`)
)

// traceModel fills the first name with Ada, then saves, by the refs of
// the latest snapshot it was shown; 1000 input and 50 output tokens a call.
func traceModel(c llmtest.Call) llmtest.Reply {
	usage := llm.Usage{InputTokens: 1000, OutputTokens: 50}
	var text strings.Builder
	for _, m := range c.Messages {
		for _, p := range m.Parts {
			text.WriteString(p.Text)
			if p.ToolResult != nil {
				text.WriteString(p.ToolResult.Content)
			}
		}
	}
	// Tool results carry the snapshot as a JSON string.
	all := strings.ReplaceAll(text.String(), `\"`, `"`)
	if i := strings.LastIndex(all, "page: "); i >= 0 {
		all = all[i:] // the latest snapshot
	}
	reply := func(call llm.ToolCall) llmtest.Reply {
		return llmtest.Reply{Text: "next", ToolCalls: []llm.ToolCall{call}, Usage: usage}
	}
	first, save := traceFirstNameRef.FindStringSubmatch(all), traceSaveRef.FindStringSubmatch(all)
	switch {
	case strings.Contains(all, "Profile saved"):
		return reply(llm.Call("complete_task", map[string]any{"status": "success", "reason": "the profile is saved"}))
	case first != nil && first[2] == "":
		return reply(llm.Call("browser_fill", map[string]any{"ref": first[1], "value": "Ada", "confidence": 0.9}))
	case save != nil:
		return reply(llm.Call("browser_click", map[string]any{"ref": save[1], "confidence": 0.9}))
	}
	return reply(llm.Call("complete_task", map[string]any{"status": "failed", "reason": "lost"}))
}

// traceParams is the profile task on site with the fake model.
func traceParams(site, model string) *wfv1.RunParams {
	return &wfv1.RunParams{
		Goal: "Save the profile with first name Ada", StartUrl: site + "/profile", AllowedDomains: []string{"127.0.0.1"},
		Controller: &wfv1.ModelSettings{Provider: "openai", Model: "test-model", BaseUrl: model},
		Judge:      &wfv1.JudgeSettings{Strategy: wfv1.JudgeStrategy_JUDGE_STRATEGY_HEURISTIC},
		Completion: &wfv1.CompletionCriteria{Success: []*wfv1.Indicator{{Name: "saved", Condition: &wfv1.Indicator_TextPresent{TextPresent: "Profile saved"}}}},
	}
}

// finishTenantRun follows a tenant's run to its end.
func finishTenantRun(t *testing.T, tc tenantClients, runID string) *wfv1.Run {
	t.Helper()
	ctx, cancel := context.WithTimeout(tc.ctx, 4*time.Minute)
	defer cancel()
	stream, err := tc.runs.StreamRunEvents(ctx, &wfv1.StreamRunEventsRequest{RunId: runID})
	require.NoError(t, err)
	var last *wfv1.RunEvent
	for {
		ev, err := stream.Recv()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		last = ev
	}
	require.NotNil(t, last)
	require.Equal(t, wfv1.RunEventType_RUN_EVENT_TYPE_FINISHED, last.Type)
	return last.GetRun()
}

// tenantSteps renders a tenant's run's actions for failure messages.
func tenantSteps(t *testing.T, tc tenantClients, runID string) string {
	steps, err := tc.runs.ListSteps(tc.ctx, &wfv1.ListStepsRequest{RunId: runID})
	require.NoError(t, err)
	var b strings.Builder
	for _, s := range steps.Steps {
		for _, a := range s.Actions {
			fmt.Fprintf(&b, "step %d %s %v: %s %s\n", s.Number, a.Tool, a.Arguments.AsMap(), a.Outcome, a.Message)
		}
	}
	return b.String()
}

// traceOverREST decodes a REST answer as a Trace.
func traceOverREST(t *testing.T, method, url, key, body string) (*wfv1.Trace, int) {
	t.Helper()
	var raw json.RawMessage
	code := restJSONKey(t, method, url, key, body, &raw)
	tr := &wfv1.Trace{}
	if code == http.StatusOK {
		require.NoError(t, protojson.Unmarshal(raw, tr))
	}
	return tr, code
}

// restErrorReason is the ErrorInfo reason of a REST error body.
func restErrorReason(body map[string]any) string {
	details, _ := body["details"].([]any)
	for _, d := range details {
		if m, ok := d.(map[string]any); ok && strings.HasSuffix(fmt.Sprint(m["@type"]), "google.rpc.ErrorInfo") {
			return fmt.Sprint(m["reason"])
		}
	}
	return ""
}

// TestTraceService: a COMPLETED run's trace through the public API, over
// gRPC and REST: listed, read with its actions, targets and recorded
// usage, pinned, exported, deleted; another tenant's is NOT_FOUND; and
// CreateRun refuses replays it cannot do.
func TestTraceService(t *testing.T) {
	t.Parallel()
	ts := startServer(t, storetest.NewDB(t), serverOpts{adminKey: testAdminKey, allowPrivate: true})
	admin := wfv1.NewAccessServiceClient(ts.conn)
	actx := as(context.Background(), testAdminKey)
	a := newTenant(t, actx, admin, ts.conn, "acme")
	b := newTenant(t, actx, admin, ts.conn, "bravo")
	traces := wfv1.NewTraceServiceClient(ts.conn)
	base := "http://" + ts.addrs.HTTP
	site := newTraceSite(t)
	fake := llmtest.NewOpenAI(t, traceModel)

	var ids []string
	for range 2 {
		run, err := a.runs.CreateRun(a.ctx, &wfv1.CreateRunRequest{Params: traceParams(site, fake.URL)})
		require.NoError(t, err)
		final := finishTenantRun(t, a, run.Id)
		require.Equal(t, wfv1.RunStatus_RUN_STATUS_COMPLETED, final.Status, "%v %s\n%s", final.Error, final.Summary, tenantSteps(t, a, run.Id))
		ids = append(ids, run.Id)
	}

	// gRPC: listed newest first without actions, the same task.
	list, err := traces.ListTraces(a.ctx, &wfv1.ListTracesRequest{})
	require.NoError(t, err)
	require.Len(t, list.Traces, 2)
	require.Equal(t, []string{ids[1], ids[0]}, []string{list.Traces[0].Id, list.Traces[1].Id})
	key := list.Traces[0].TaskKey
	require.NotEmpty(t, key)
	require.Equal(t, key, list.Traces[1].TaskKey)
	require.EqualValues(t, 2, list.Traces[0].Version)
	for _, tr := range list.Traces {
		require.Empty(t, tr.Actions)
		require.EqualValues(t, 2, tr.ActionCount)
	}

	// gRPC: read with actions, targets and recorded usage.
	got, err := traces.GetTrace(a.ctx, &wfv1.GetTraceRequest{TraceId: ids[0]})
	require.NoError(t, err)
	require.Equal(t, site+"/profile", got.StartUrl)
	require.Len(t, got.Actions, 2)
	fill, click := got.Actions[0], got.Actions[1]
	require.Equal(t, "browser_fill", fill.Tool)
	require.Equal(t, "Ada", fill.Arguments.AsMap()["value"])
	require.Equal(t, "textbox", fill.Target.AsMap()["role"])
	require.Equal(t, "First name", fill.Target.AsMap()["name"])
	require.Equal(t, "input", fill.Target.AsMap()["tag"])
	require.Equal(t, site+"/profile", fill.UrlPattern)
	require.NotEmpty(t, fill.PageStructure)
	require.Equal(t, "browser_click", click.Tool)
	require.Equal(t, "Save", click.Target.AsMap()["name"])
	require.Equal(t, map[string]any{"id": "save", "type": "submit"}, click.Target.AsMap()["attrs"])
	require.Contains(t, click.UrlAfter, site+"/saved?first=Ada")
	require.Equal(t, site+"/saved", got.Final.UrlPattern)
	u := got.RecordedUsage
	require.GreaterOrEqual(t, u.ModelCalls, int32(2))
	require.EqualValues(t, 1000*int64(u.ModelCalls), u.InputTokens)
	require.EqualValues(t, 50*int64(u.ModelCalls), u.OutputTokens)

	// REST: the same trace.
	restGot, code := traceOverREST(t, http.MethodGet, base+"/v1/traces/"+ids[0], a.key, "")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "First name", restGot.Actions[0].Target.AsMap()["name"])
	require.Equal(t, u.ModelCalls, restGot.RecordedUsage.ModelCalls)
	var restList struct {
		Traces []struct {
			ID          string `json:"id"`
			TaskKey     string `json:"task_key"`
			ActionCount int    `json:"action_count"`
			Pinned      bool   `json:"pinned"`
		} `json:"traces"`
	}
	require.Equal(t, http.StatusOK, restJSONKey(t, http.MethodGet, base+"/v1/traces?task_key="+key, a.key, "", &restList))
	require.Len(t, restList.Traces, 2)
	require.Equal(t, 2, restList.Traces[0].ActionCount)

	// Pinning one unpins the task's other.
	pinned, code := traceOverREST(t, http.MethodPost, base+"/v1/traces/"+ids[0]+":pin", a.key, `{"pinned": true}`)
	require.Equal(t, http.StatusOK, code)
	require.True(t, pinned.Pinned)
	pinned, err = traces.PinTrace(a.ctx, &wfv1.PinTraceRequest{TraceId: ids[1], Pinned: true})
	require.NoError(t, err)
	require.True(t, pinned.Pinned)
	require.Equal(t, http.StatusOK, restJSONKey(t, http.MethodGet, base+"/v1/traces?pinned_only=true", a.key, "", &restList))
	require.Len(t, restList.Traces, 1)
	require.Equal(t, ids[1], restList.Traces[0].ID)
	unpinned, code := traceOverREST(t, http.MethodPost, base+"/v1/traces/"+ids[1]+":pin", a.key, `{"pinned": false}`)
	require.Equal(t, http.StatusOK, code)
	require.False(t, unpinned.Pinned)

	// Export over REST, both formats.
	var exp struct {
		Filename    string `json:"filename"`
		ContentType string `json:"content_type"`
		Content     string `json:"content"`
	}
	require.Equal(t, http.StatusOK, restJSONKey(t, http.MethodGet, base+"/v1/traces/"+ids[0]+":export?format=TRACE_EXPORT_FORMAT_GO_TEST", a.key, "", &exp))
	require.Equal(t, "replay_"+ids[0][:8]+"_test.go", exp.Filename)
	require.Contains(t, exp.Content, "package replay_test")
	require.Contains(t, exp.Content, `"github.com/go-rod/rod"`)
	require.Contains(t, exp.Content, `fill(t, page, 1, target{selectors: []string{"input[name=\"first\"]"}, role: "textbox", name: "First name"`)
	require.Equal(t, http.StatusOK, restJSONKey(t, http.MethodGet, base+"/v1/traces/"+ids[0]+":export?format=TRACE_EXPORT_FORMAT_STEPS", a.key, "", &exp))
	require.Equal(t, "text/plain; charset=utf-8", exp.ContentType)
	require.Contains(t, exp.Content, "Type \"Ada\" into \"First name\"\nClick the \"Save\" button\nExpect URL \""+site+"/saved\"\n")
	var body map[string]any
	require.Equal(t, http.StatusBadRequest, restJSONKey(t, http.MethodGet, base+"/v1/traces/"+ids[0]+":export", a.key, "", &body), "no format")

	// Another tenant's traces are not found, whichever way.
	_, err = traces.GetTrace(b.ctx, &wfv1.GetTraceRequest{TraceId: ids[0]})
	requireCode(t, err, "NotFound")
	_, err = traces.PinTrace(b.ctx, &wfv1.PinTraceRequest{TraceId: ids[0], Pinned: true})
	requireCode(t, err, "NotFound")
	_, err = traces.DeleteTrace(b.ctx, &wfv1.DeleteTraceRequest{TraceId: ids[0]})
	requireCode(t, err, "NotFound")
	_, err = traces.ExportTrace(b.ctx, &wfv1.ExportTraceRequest{TraceId: ids[0], Format: wfv1.TraceExportFormat_TRACE_EXPORT_FORMAT_STEPS})
	requireCode(t, err, "NotFound")
	theirs, err := traces.ListTraces(b.ctx, &wfv1.ListTracesRequest{})
	require.NoError(t, err)
	require.Empty(t, theirs.Traces)
	require.Equal(t, http.StatusNotFound, restJSONKey(t, http.MethodGet, base+"/v1/traces/"+ids[0], b.key, "", nil))
	require.Equal(t, http.StatusNotFound, restJSONKey(t, http.MethodDelete, base+"/v1/traces/"+ids[0], b.key, "", nil))

	// CreateRun's replay checks, over REST.
	createRun := func(key string, p *wfv1.RunParams) (int, map[string]any) {
		t.Helper()
		raw, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(p)
		require.NoError(t, err)
		var out map[string]any
		return restJSONKey(t, http.MethodPost, base+"/v1/runs", key, string(raw), &out), out
	}
	strict := func(edit func(p *wfv1.RunParams), traceID string) *wfv1.RunParams {
		p := traceParams(site, fake.URL)
		if edit != nil {
			edit(p)
		}
		p.Replay = &wfv1.ReplayOptions{Mode: wfv1.ReplayMode_REPLAY_MODE_STRICT, TraceId: traceID}
		return p
	}
	otherGoal := func(p *wfv1.RunParams) { p.Goal = "Save the profile with first name Bea" }
	code, body = createRun(a.key, strict(otherGoal, ""))
	require.Equal(t, http.StatusBadRequest, code, "FAILED_PRECONDITION, as the gateway maps it: %v", body)
	require.EqualValues(t, 9, body["code"], "FAILED_PRECONDITION: %v", body)
	require.Equal(t, "NO_TRACE", restErrorReason(body))
	code, body = createRun(a.key, strict(otherGoal, ids[0]))
	require.Equal(t, http.StatusBadRequest, code, "%v", body)
	require.EqualValues(t, 3, body["code"], "INVALID_ARGUMENT")
	require.Equal(t, "TRACE_TASK_MISMATCH", restErrorReason(body))
	code, body = createRun(b.key, strict(nil, ids[0]))
	require.Equal(t, http.StatusBadRequest, code, "%v", body)
	require.Equal(t, "TRACE_NOT_FOUND", restErrorReason(body), "another tenant's trace is no trace")
	code, body = createRun(b.key, strict(nil, ""))
	require.Equal(t, http.StatusBadRequest, code, "%v", body)
	require.Equal(t, "NO_TRACE", restErrorReason(body), "another tenant's traces are not the caller's")

	// Delete: the trace goes, its run stays.
	require.Equal(t, http.StatusOK, restJSONKey(t, http.MethodDelete, base+"/v1/traces/"+ids[1], a.key, "", nil))
	_, err = traces.GetTrace(a.ctx, &wfv1.GetTraceRequest{TraceId: ids[1]})
	requireCode(t, err, "NotFound")
	run, err := a.runs.GetRun(a.ctx, &wfv1.GetRunRequest{RunId: ids[1]})
	require.NoError(t, err)
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_COMPLETED, run.Status)
	list, err = traces.ListTraces(a.ctx, &wfv1.ListTracesRequest{})
	require.NoError(t, err)
	require.Len(t, list.Traces, 1)
}
