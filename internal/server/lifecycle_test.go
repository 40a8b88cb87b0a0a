package server_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/durationpb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/config"
	"github.com/wayfinder/wayfinder/internal/store/storetest"
)

var pngMagic = []byte("\x89PNG\r\n\x1a\n")

// TestRunOverREST creates a run over REST, follows its NDJSON event stream
// to the end, and fetches the run, its steps and its screenshot.
func TestRunOverREST(t *testing.T) {
	t.Parallel()
	ts := startServer(t, storetest.NewDB(t), serverOpts{})
	s := newSite(t)
	base := "http://" + ts.addrs.HTTP

	var run struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	body := `{"goal": "Expect text Hello from the test site", "start_url": "` + s.URL + `/", "allowed_domains": ["127.0.0.1"], "labels": {"suite": "rest"}}`
	require.Equal(t, http.StatusOK, restJSON(t, http.MethodPost, base+"/v1/runs", body, &run))
	require.Equal(t, "RUN_STATUS_QUEUED", run.Status)

	lines := ndjson(t, base+"/v1/runs/"+run.ID+"/events")
	require.NotEmpty(t, lines)
	var types []string
	for _, l := range lines {
		types = append(types, l["result"].(map[string]any)["type"].(string))
	}
	require.Equal(t, []string{"RUN_EVENT_TYPE_QUEUED", "RUN_EVENT_TYPE_STARTED", "RUN_EVENT_TYPE_STEP_STARTED",
		"RUN_EVENT_TYPE_TOOL_CALLED", "RUN_EVENT_TYPE_JUDGE_VERDICT", "RUN_EVENT_TYPE_TOOL_RESULT",
		"RUN_EVENT_TYPE_STEP_FINISHED", "RUN_EVENT_TYPE_FINISHED"}, types)

	var got struct {
		Status                 string `json:"status"`
		Success                bool   `json:"success"`
		StepCount              int    `json:"step_count"`
		FinalScreenshotMediaID string `json:"final_screenshot_media_id"`
		FinalURL               string `json:"final_url"`
	}
	require.Equal(t, http.StatusOK, restJSON(t, http.MethodGet, base+"/v1/runs/"+run.ID, "", &got))
	require.Equal(t, "RUN_STATUS_COMPLETED", got.Status)
	require.True(t, got.Success)
	require.Equal(t, 1, got.StepCount)
	require.Equal(t, s.URL+"/", got.FinalURL)

	var steps struct {
		Steps []struct {
			Number            int    `json:"number"`
			Title             string `json:"title"`
			ScreenshotMediaID string `json:"screenshot_media_id"`
			Actions           []struct {
				Tool    string `json:"tool"`
				Outcome string `json:"outcome"`
			} `json:"actions"`
		} `json:"steps"`
	}
	require.Equal(t, http.StatusOK, restJSON(t, http.MethodGet, base+"/v1/runs/"+run.ID+"/steps", "", &steps))
	require.Len(t, steps.Steps, 1)
	require.Equal(t, "Test page", steps.Steps[0].Title)
	require.Equal(t, got.FinalScreenshotMediaID, steps.Steps[0].ScreenshotMediaID)
	require.Equal(t, "browser_navigate", steps.Steps[0].Actions[0].Tool)
	require.Equal(t, "ok", steps.Steps[0].Actions[0].Outcome)

	resp, err := http.Get(base + "/v1/media/" + got.FinalScreenshotMediaID)
	require.NoError(t, err)
	defer resp.Body.Close()
	img, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "image/png", resp.Header.Get("Content-Type"))
	require.True(t, bytes.HasPrefix(img, pngMagic), "media is a PNG")

	var list struct {
		Runs []struct {
			ID string `json:"id"`
		} `json:"runs"`
	}
	require.Equal(t, http.StatusOK, restJSON(t, http.MethodGet, base+"/v1/runs?labels=suite%3Drest&statuses=RUN_STATUS_COMPLETED", "", &list))
	require.Len(t, list.Runs, 1)
	require.Equal(t, run.ID, list.Runs[0].ID)
	var none struct {
		Runs []any `json:"runs"`
	}
	require.Equal(t, http.StatusOK, restJSON(t, http.MethodGet, base+"/v1/runs?labels=suite%3Dother", "", &none))
	require.Empty(t, none.Runs)

	var waited struct {
		Run struct {
			Status string `json:"status"`
		} `json:"run"`
		TimedOut bool `json:"timed_out"`
	}
	body = `{"params": {"goal": "Expect text Hello", "start_url": "` + s.URL + `/", "allowed_domains": ["127.0.0.1"]}, "timeout": "60s"}`
	require.Equal(t, http.StatusOK, restJSON(t, http.MethodPost, base+"/v1/runs:wait", body, &waited))
	require.Equal(t, "RUN_STATUS_COMPLETED", waited.Run.Status)
	require.False(t, waited.TimedOut)
}

// TestRunOverGRPC creates runs over gRPC and checks the result, steps,
// media, listing, idempotency keys and stream resumption.
func TestRunOverGRPC(t *testing.T) {
	t.Parallel()
	ts := startServer(t, storetest.NewDB(t), serverOpts{})
	s := newSite(t)
	ctx := context.Background()

	p := params(s.URL + "/")
	p.Labels = map[string]string{"team": "qa"}
	p.Browser = &wfv1.BrowserConfig{
		Viewport: &wfv1.Viewport{Width: 800, Height: 600}, Locale: "de-DE", Timezone: "Europe/Berlin",
		NavigationTimeout: durationpb.New(20 * time.Second),
	}
	run, err := ts.client.CreateRun(ctx, &wfv1.CreateRunRequest{Params: p, RequestId: "req-1"})
	require.NoError(t, err)
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_QUEUED, run.Status)
	again, err := ts.client.CreateRun(ctx, &wfv1.CreateRunRequest{Params: p, RequestId: "req-1"})
	require.NoError(t, err)
	require.Equal(t, run.Id, again.Id, "same request_id, same run")
	// A retry gets its run even when the request could no longer be
	// accepted (a suite run resuming after a credential was deleted).
	again, err = ts.client.CreateRun(ctx, &wfv1.CreateRunRequest{Params: &wfv1.RunParams{}, RequestId: "req-1"})
	require.NoError(t, err)
	require.Equal(t, run.Id, again.Id)

	evs := collectEvents(t, ts.client, run.Id, 0)
	require.Equal(t, []wfv1.RunEventType{
		wfv1.RunEventType_RUN_EVENT_TYPE_QUEUED, wfv1.RunEventType_RUN_EVENT_TYPE_STARTED,
		wfv1.RunEventType_RUN_EVENT_TYPE_STEP_STARTED,
		// The offline controller sees the expected text at once and claims
		// success; the judge confirms it before the tool result.
		wfv1.RunEventType_RUN_EVENT_TYPE_TOOL_CALLED, wfv1.RunEventType_RUN_EVENT_TYPE_JUDGE_VERDICT,
		wfv1.RunEventType_RUN_EVENT_TYPE_TOOL_RESULT,
		wfv1.RunEventType_RUN_EVENT_TYPE_STEP_FINISHED, wfv1.RunEventType_RUN_EVENT_TYPE_FINISHED,
	}, eventTypes(evs))
	for i, ev := range evs {
		require.Equal(t, int64(i+1), ev.Sequence)
	}
	final := evs[len(evs)-1].GetRun()
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_COMPLETED, final.Status)
	require.Equal(t, evs[len(evs)-1].Sequence, final.LastEventSequence)

	// Resume: only the events after the given sequence; nothing after the end.
	resumed := collectEvents(t, ts.client, run.Id, 3)
	require.Equal(t, eventTypes(evs[3:]), eventTypes(resumed))
	require.Equal(t, int64(4), resumed[0].Sequence)
	require.Empty(t, collectEvents(t, ts.client, run.Id, evs[len(evs)-1].Sequence))

	got, err := ts.client.GetRun(ctx, &wfv1.GetRunRequest{RunId: run.Id})
	require.NoError(t, err)
	require.Equal(t, int32(1), got.StepCount)
	require.Equal(t, int32(1), got.Attempts)
	require.Equal(t, int32(25), got.Params.MaxSteps, "defaults are filled in")

	steps, err := ts.client.ListSteps(ctx, &wfv1.ListStepsRequest{RunId: run.Id})
	require.NoError(t, err)
	require.Len(t, steps.Steps, 1)
	media, err := ts.client.GetMedia(ctx, &wfv1.GetMediaRequest{MediaId: steps.Steps[0].ScreenshotMediaId})
	require.NoError(t, err)
	require.Equal(t, "image/png", media.ContentType)
	require.True(t, bytes.HasPrefix(media.Data, pngMagic))
	require.Equal(t, 800, pngWidth(t, media.Data), "the run's viewport is applied")

	list, err := ts.client.ListRuns(ctx, &wfv1.ListRunsRequest{
		Statuses: []wfv1.RunStatus{wfv1.RunStatus_RUN_STATUS_COMPLETED}, Labels: []string{"team=qa"},
	})
	require.NoError(t, err)
	require.Len(t, list.Runs, 1)
	list, err = ts.client.ListRuns(ctx, &wfv1.ListRunsRequest{Statuses: []wfv1.RunStatus{wfv1.RunStatus_RUN_STATUS_QUEUED}})
	require.NoError(t, err)
	require.Empty(t, list.Runs)

	_, err = ts.client.SubmitApproval(ctx, &wfv1.SubmitApprovalRequest{RunId: run.Id, Approved: true})
	requireCode(t, err, "FailedPrecondition")
}

// TestDomainPolicyRefusesBeforeNavigation checks that blocked, unlisted and
// private hosts are refused before the browser makes any request.
func TestDomainPolicyRefusesBeforeNavigation(t *testing.T) {
	t.Parallel()
	ts := startServer(t, storetest.NewDB(t), serverOpts{})
	s := newSite(t)
	ctx := context.Background()
	tests := []struct {
		name     string
		allowed  []string
		blocked  []string
		contains string
	}{
		{name: "blocked wins over allowed", allowed: []string{"127.0.0.1"}, blocked: []string{"127.0.0.1"}, contains: "blocked"},
		{name: "not in allowed list", allowed: []string{"example.com"}, contains: "allowed"},
		{name: "private network not named", contains: "private"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run, err := ts.client.CreateRun(ctx, &wfv1.CreateRunRequest{Params: &wfv1.RunParams{
				Goal: "Expect text Hello", StartUrl: s.URL + "/", AllowedDomains: tt.allowed, BlockedDomains: tt.blocked,
			}})
			require.NoError(t, err)
			evs := collectEvents(t, ts.client, run.Id, 0)
			final := evs[len(evs)-1].GetRun()
			require.Equal(t, wfv1.RunStatus_RUN_STATUS_ERROR, final.Status)
			require.Equal(t, wfv1.ErrorCategory_ERROR_CATEGORY_DOMAIN_BLOCKED, final.Error.Category)
			require.Contains(t, final.Error.Message, tt.contains)
			steps, err := ts.client.ListSteps(ctx, &wfv1.ListStepsRequest{RunId: run.Id})
			require.NoError(t, err)
			require.Equal(t, "domain_blocked", steps.Steps[0].Actions[0].Outcome)
		})
	}
	require.Zero(t, s.hits.Load(), "the site was never contacted")
}

// TestNavigationErrorsEndTheRun covers a refused connection and a page that
// never finishes loading.
func TestNavigationErrorsEndTheRun(t *testing.T) {
	t.Parallel()
	ts := startServer(t, storetest.NewDB(t), serverOpts{})
	s := newSite(t)
	s.stalls.Store(1)
	ctx := context.Background()

	closed := newSite(t)
	closedURL := closed.URL + "/"
	closed.Close()

	for _, tt := range []struct {
		name     string
		params   *wfv1.RunParams
		category wfv1.ErrorCategory
	}{
		{"connection refused", params(closedURL), wfv1.ErrorCategory_ERROR_CATEGORY_NAVIGATION_ERROR},
		{"load never finishes", func() *wfv1.RunParams {
			p := params(s.URL + "/stall")
			p.Browser = &wfv1.BrowserConfig{NavigationTimeout: durationpb.New(2 * time.Second)}
			return p
		}(), wfv1.ErrorCategory_ERROR_CATEGORY_NAVIGATION_TIMEOUT},
	} {
		t.Run(tt.name, func(t *testing.T) {
			run, err := ts.client.CreateRun(ctx, &wfv1.CreateRunRequest{Params: tt.params})
			require.NoError(t, err)
			evs := collectEvents(t, ts.client, run.Id, 0)
			final := evs[len(evs)-1].GetRun()
			require.Equal(t, wfv1.RunStatus_RUN_STATUS_ERROR, final.Status)
			require.Equal(t, tt.category, final.Error.Category, final.Error.Message)
		})
	}
}

// TestObservabilityEndpoints checks health, readiness, metrics and the
// OpenAPI document.
func TestObservabilityEndpoints(t *testing.T) {
	t.Parallel()
	ts := startServer(t, storetest.NewDB(t), serverOpts{})
	s := newSite(t)
	run, err := ts.client.CreateRun(context.Background(), &wfv1.CreateRunRequest{Params: params(s.URL + "/")})
	require.NoError(t, err)
	evs := collectEvents(t, ts.client, run.Id, 0)
	final := evs[len(evs)-1].GetRun()
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_COMPLETED, final.Status, "%v", final.Error)
	require.EqualValues(t, 1, final.StepCount)
	base := "http://" + ts.addrs.HTTP

	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get(base + path)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
	}
	// The run's metrics are counted just after its FINISHED event is
	// stored: read until they are there.
	var metrics []byte
	for deadline := time.Now().Add(30 * time.Second); ; {
		resp, err := http.Get(base + "/metrics")
		require.NoError(t, err)
		metrics, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		if bytes.Contains(metrics, []byte(`wayfinder_runs_finished_total{status="completed"} 1`)) || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	wants := []string{
		`wayfinder_runs_finished_total{status="completed"} 1`,
		`wayfinder_run_duration_seconds_count{status="completed"} 1`,
		`wayfinder_step_duration_seconds_count 1`,
		`wayfinder_pool_capacity 2`,
		`wayfinder_pool_in_use 0`,
		`wayfinder_runs{status="queued"} 0`,
		`wayfinder_queue_jobs{state="available"} 0`,
		`wayfinder_grpc_server_handled_total{grpc_code="OK",grpc_method="CreateRun"`,
		`wayfinder_build_info{commit=`,
	}
	for _, want := range wants {
		assert.Contains(t, string(metrics), want)
	}
	if t.Failed() {
		// The whole exposition is long: show the families asserted on.
		for line := range strings.Lines(string(metrics)) {
			for _, w := range wants {
				if name, _, _ := strings.Cut(w, "{"); strings.HasPrefix(line, strings.Fields(name)[0]) {
					t.Log(strings.TrimSpace(line))
					break
				}
			}
		}
		t.FailNow()
	}

	var doc struct {
		Paths map[string]any `json:"paths"`
	}
	require.Equal(t, http.StatusOK, restJSON(t, http.MethodGet, base+"/openapi.json", "", &doc))
	for _, p := range []string{"/v1/runs", "/v1/runs/{run_id}", "/v1/runs/{run_id}:cancel", "/v1/runs/{run_id}/events",
		"/v1/runs/{run_id}/steps", "/v1/media/{media_id}", "/v1/suites:import", "/v1/suites/{suite}:run", "/v1/suite-runs/{id}"} {
		require.Contains(t, doc.Paths, p)
	}
}

// TestReadyzWhenAPIOnly: an API-only replica has no browser pool and is
// ready with the database alone.
func TestReadyzWhenAPIOnly(t *testing.T) {
	t.Parallel()
	ts := startServer(t, storetest.NewDB(t), serverOpts{role: config.RoleAPI})
	resp, err := http.Get("http://" + ts.addrs.HTTP + "/readyz")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// pngWidth reads the width from a PNG's IHDR chunk.
func pngWidth(t *testing.T, png []byte) int {
	t.Helper()
	require.Greater(t, len(png), 24)
	return int(png[16])<<24 | int(png[17])<<16 | int(png[18])<<8 | int(png[19])
}

// TestNetworkGuardRecordsBlockedRequests: a page's subresources and XHR to a
// host outside the run's allowed domains never leave the machine, and the
// step records each refusal.
func TestNetworkGuardRecordsBlockedRequests(t *testing.T) {
	t.Parallel()
	ts := startServer(t, storetest.NewDB(t), serverOpts{})
	s := newSite(t)
	ctx := context.Background()
	p := params(s.URL + "/leaky")
	p.Goal = "Expect title Leaky"
	run, err := ts.client.CreateRun(ctx, &wfv1.CreateRunRequest{Params: p})
	require.NoError(t, err)
	evs := collectEvents(t, ts.client, run.Id, 0)
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_COMPLETED, evs[len(evs)-1].GetRun().Status)

	steps, err := ts.client.ListSteps(ctx, &wfv1.ListStepsRequest{RunId: run.Id})
	require.NoError(t, err)
	blocked := steps.Steps[0].BlockedRequests
	require.NotEmpty(t, blocked)
	for _, b := range blocked {
		require.Equal(t, "localhost", b.Host)
		require.Equal(t, "domain_not_allowed", b.Reason)
	}
	require.Zero(t, s.pixelHits.Load(), "no blocked request reached the server")
}
