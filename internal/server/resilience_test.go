package server_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"google.golang.org/grpc/metadata"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/config"
	"github.com/wayfinder/wayfinder/internal/store/storetest"
)

// TestCancelQueuedRun cancels a run no worker has picked up: it ends at
// once, and its job never runs.
func TestCancelQueuedRun(t *testing.T) {
	t.Parallel()
	ts := startServer(t, storetest.NewDB(t), serverOpts{role: config.RoleAPI})
	ctx := context.Background()
	run, err := ts.client.CreateRun(ctx, &wfv1.CreateRunRequest{Params: params("http://127.0.0.1:1/")})
	require.NoError(t, err)

	got, err := ts.client.CancelRun(ctx, &wfv1.CancelRunRequest{RunId: run.Id, Reason: "changed my mind"})
	require.NoError(t, err)
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_CANCELLED, got.Status)
	require.Equal(t, "changed my mind", got.Error.Message)

	evs := collectEvents(t, ts.client, run.Id, 0)
	require.Equal(t, []wfv1.RunEventType{wfv1.RunEventType_RUN_EVENT_TYPE_QUEUED, wfv1.RunEventType_RUN_EVENT_TYPE_FINISHED}, eventTypes(evs))

	again, err := ts.client.CancelRun(ctx, &wfv1.CancelRunRequest{RunId: run.Id})
	require.NoError(t, err, "cancelling a finished run is a no-op")
	require.Equal(t, got.EndTime.AsTime(), again.EndTime.AsTime())
}

// TestCancelRunningRun cancels a run whose page is still loading; the
// worker stops it and records CANCELLED.
func TestCancelRunningRun(t *testing.T) {
	t.Parallel()
	ts := startServer(t, storetest.NewDB(t), serverOpts{})
	s := newSite(t)
	s.stalls.Store(1)
	ctx := context.Background()
	run, err := ts.client.CreateRun(ctx, &wfv1.CreateRunRequest{Params: params(s.URL + "/stall")})
	require.NoError(t, err)
	waitForEvent(t, ts.client, run.Id, wfv1.RunEventType_RUN_EVENT_TYPE_STEP_STARTED)
	requireEventually(t, func() bool { return s.hits.Load() > 0 }, "the browser requested the page")

	cancelled, err := ts.client.CancelRun(ctx, &wfv1.CancelRunRequest{RunId: run.Id, Reason: "stop"})
	require.NoError(t, err)
	require.True(t, cancelled.CancelRequested)

	evs := collectEvents(t, ts.client, run.Id, 0)
	final := evs[len(evs)-1].GetRun()
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_CANCELLED, final.Status)
	require.Equal(t, "stop", final.Error.Message)
	require.Contains(t, eventTypes(evs), wfv1.RunEventType_RUN_EVENT_TYPE_CANCEL_REQUESTED)
	require.Less(t, final.EndTime.AsTime().Sub(evs[len(evs)-2].Time.AsTime()), 30*time.Second)
}

// TestEventsAcrossProcesses streams from an API-only server while a worker
// in another process executes the run.
func TestEventsAcrossProcesses(t *testing.T) {
	t.Parallel()
	dbURL := storetest.NewDB(t)
	api := startServer(t, dbURL, serverOpts{role: config.RoleAPI})
	startSubprocess(t, dbURL, "WAYFINDER_ROLE=worker")
	s := newSite(t)

	run, err := api.client.CreateRun(context.Background(), &wfv1.CreateRunRequest{Params: params(s.URL + "/")})
	require.NoError(t, err)
	evs := collectEvents(t, api.client, run.Id, 0)
	require.Equal(t, []wfv1.RunEventType{
		wfv1.RunEventType_RUN_EVENT_TYPE_QUEUED, wfv1.RunEventType_RUN_EVENT_TYPE_STARTED,
		wfv1.RunEventType_RUN_EVENT_TYPE_STEP_STARTED, wfv1.RunEventType_RUN_EVENT_TYPE_TOOL_CALLED,
		wfv1.RunEventType_RUN_EVENT_TYPE_JUDGE_VERDICT, wfv1.RunEventType_RUN_EVENT_TYPE_TOOL_RESULT,
		wfv1.RunEventType_RUN_EVENT_TYPE_STEP_FINISHED, wfv1.RunEventType_RUN_EVENT_TYPE_FINISHED,
	}, eventTypes(evs))
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_COMPLETED, evs[len(evs)-1].GetRun().Status)
}

// TestRunRescuedAfterWorkerKilled kills a worker process mid-run with
// SIGKILL; the run's job is rescued and another worker completes the run
// without duplicating its step, and the killed worker leaves no Chromium.
func TestRunRescuedAfterWorkerKilled(t *testing.T) {
	t.Parallel()
	dbURL := storetest.NewDB(t)
	s := newSite(t)
	s.stalls.Store(1)
	doomed := startSubprocess(t, dbURL, "WAYFINDER_ROLE=all", "WAYFINDER_RUN_TIMEOUT=10s")
	api := startServer(t, dbURL, serverOpts{role: config.RoleAPI})

	run, err := api.client.CreateRun(context.Background(), &wfv1.CreateRunRequest{Params: params(s.URL + "/stall")})
	require.NoError(t, err)
	waitForEvent(t, api.client, run.Id, wfv1.RunEventType_RUN_EVENT_TYPE_STEP_STARTED)
	requireEventually(t, func() bool { return s.hits.Load() > 0 }, "the browser requested the page")

	require.NoError(t, doomed.cmd.Process.Signal(syscall.SIGKILL))
	<-doomed.exited
	requireEventually(t, func() bool { return len(processesUsing(doomed.dataDir)) == 0 },
		"no Chromium outlives its killed server")

	startServer(t, dbURL, serverOpts{role: config.RoleWorker, runTimeout: 10 * time.Second})
	evs := collectEvents(t, api.client, run.Id, 0)
	final := evs[len(evs)-1].GetRun()
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_COMPLETED, final.Status, "%v", final.Error)
	require.Equal(t, int32(2), final.Attempts)
	require.Equal(t, int32(1), final.StepCount)
	steps, err := api.client.ListSteps(context.Background(), &wfv1.ListStepsRequest{RunId: run.Id})
	require.NoError(t, err)
	require.Len(t, steps.Steps, 1)
	var resumed bool
	for _, ev := range evs {
		resumed = resumed || strings.Contains(ev.Message, "resumed")
	}
	require.True(t, resumed, "the second attempt says it resumed the run")
}

// TestShutdownHandsRunsBack stops a server while a run is in flight: the
// run goes back to the queue, and the next server completes it.
func TestShutdownHandsRunsBack(t *testing.T) {
	t.Parallel()
	dbURL := storetest.NewDB(t)
	s := newSite(t)
	s.stalls.Store(1)
	first := startServer(t, dbURL, serverOpts{shutdown: time.Second})
	run, err := first.client.CreateRun(context.Background(), &wfv1.CreateRunRequest{Params: params(s.URL + "/stall")})
	require.NoError(t, err)
	waitForEvent(t, first.client, run.Id, wfv1.RunEventType_RUN_EVENT_TYPE_STEP_STARTED)
	requireEventually(t, func() bool { return s.hits.Load() > 0 }, "the browser requested the page")
	first.stop()

	second := startServer(t, dbURL, serverOpts{})
	evs := collectEvents(t, second.client, run.Id, 0)
	require.Contains(t, eventTypes(evs), wfv1.RunEventType_RUN_EVENT_TYPE_REQUEUED)
	final := evs[len(evs)-1].GetRun()
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_COMPLETED, final.Status, "%v", final.Error)
	// The interrupted first step is on record; the resumed run goes on with
	// step 2.
	require.Equal(t, int32(2), final.StepCount)
}

// TestTraceFollowsRunAcrossQueue checks that the run and step spans join
// the trace of the request that created the run.
func TestTraceFollowsRunAcrossQueue(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	ts := startServer(t, storetest.NewDB(t), serverOpts{tracer: tp})
	s := newSite(t)

	// The caller's own trace context travels in the request metadata.
	callerCtx, span := tp.Tracer("caller").Start(context.Background(), "caller")
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(callerCtx, carrier)
	span.End()
	ctx := metadata.AppendToOutgoingContext(context.Background(), "traceparent", carrier["traceparent"])

	run, err := ts.client.CreateRun(ctx, &wfv1.CreateRunRequest{Params: params(s.URL + "/")})
	require.NoError(t, err)
	collectEvents(t, ts.client, run.Id, 0)

	traceID := span.SpanContext().TraceID()
	requireEventually(t, func() bool {
		names := map[string]bool{}
		for _, sp := range rec.Ended() {
			if sp.SpanContext().TraceID() == traceID {
				names[sp.Name()] = true
			}
		}
		return names["wayfinder.v1.RunService/CreateRun"] && names["run"] && names["step"] && names["action browser_navigate"]
	}, "request, run, step and action spans share the caller's trace")
}

func requireEventually(t *testing.T, cond func() bool, msg string) {
	t.Helper()
	require.Eventually(t, cond, time.Minute, 50*time.Millisecond, msg)
}

// processesUsing lists the PIDs whose command line mentions dir.
func processesUsing(dir string) []string {
	var pids []string
	entries, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range entries {
		b, err := os.ReadFile(f)
		if err == nil && strings.Contains(string(b), dir) && !strings.Contains(string(b), "go test") {
			pids = append(pids, filepath.Base(filepath.Dir(f)))
		}
	}
	return pids
}

// killBrowsers SIGKILLs every Chromium process of the server.
func killBrowsers(ts *testServer) {
	for _, pid := range processesUsing(filepath.Join(ts.dataDir, "browsers")) {
		var n int
		if _, err := fmt.Sscan(pid, &n); err == nil {
			_ = syscall.Kill(n, syscall.SIGKILL)
		}
	}
}

// TestBrowserCrashRecovers kills the browser under a running run: the run
// gets a new browser context, goes back to its page and completes; the step
// that crashed says so. (A run whose browser keeps crashing ends
// ERROR/BROWSER_CRASH after two restarts: internal/runner's crash tests.)
func TestBrowserCrashRecovers(t *testing.T) {
	t.Parallel()
	ts := startServer(t, storetest.NewDB(t), serverOpts{})
	s := newSite(t)
	s.stalls.Store(1)
	ctx := context.Background()
	p := params(s.URL + "/stall")
	p.Goal = "Expect text finally"
	run, err := ts.client.CreateRun(ctx, &wfv1.CreateRunRequest{Params: p})
	require.NoError(t, err)
	waitForEvent(t, ts.client, run.Id, wfv1.RunEventType_RUN_EVENT_TYPE_STEP_STARTED)
	requireEventually(t, func() bool { return s.hits.Load() > 0 }, "the browser requested the page")
	killBrowsers(ts)

	final := waitFinished(t, ts.client, run.Id)
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_COMPLETED, final.Status, "%v %s\n%s", final.Error, final.Summary, describeSteps(t, ts.client, run.Id))
	steps, err := ts.client.ListSteps(ctx, &wfv1.ListStepsRequest{RunId: run.Id})
	require.NoError(t, err)
	require.Equal(t, wfv1.ErrorCategory_ERROR_CATEGORY_BROWSER_CRASH, steps.Steps[0].GetError().GetCategory())

	// The worker serves the next run on the replacement browser.
	next, err := ts.client.CreateRun(ctx, &wfv1.CreateRunRequest{Params: params(s.URL + "/")})
	require.NoError(t, err)
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_COMPLETED, waitFinished(t, ts.client, next.Id).Status)
}
