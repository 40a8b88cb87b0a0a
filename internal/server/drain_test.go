package server_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/config"
	"github.com/wayfinder/wayfinder/internal/store/storetest"
)

// get GETs url and returns the status and body; a refused connection is
// status 0.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// TestWorkerServesOps: a worker-only process serves no API, but answers
// /healthz, /readyz and /metrics on its HTTP address, for its probes and
// Prometheus.
func TestWorkerServesOps(t *testing.T) {
	t.Parallel()
	ts := startServer(t, storetest.NewDB(t), serverOpts{role: config.RoleWorker})
	require.Empty(t, ts.addrs.GRPC, "a worker serves no gRPC API")
	require.NotEmpty(t, ts.addrs.HTTP)
	base := "http://" + ts.addrs.HTTP
	for _, tc := range []struct {
		path, want string
		status     int
	}{
		{"/healthz", "ok", http.StatusOK},
		{"/readyz", "ready", http.StatusOK},
		{"/metrics", "wayfinder_queue_jobs", http.StatusOK},
		{"/metrics", "wayfinder_pool_capacity 2", http.StatusOK},
		{"/v1/runs", "404", http.StatusNotFound},
		{"/openapi.json", "404", http.StatusNotFound},
	} {
		status, body := get(t, base+tc.path)
		require.Equal(t, tc.status, status, "GET %s: %s", tc.path, body)
		require.Contains(t, body, tc.want, "GET %s", tc.path)
	}
}

// freeAddr returns a loopback address no one listens on (for a subprocess
// whose HTTP address the test must know in advance).
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// TestDrainHandsRunToOtherReplica sends SIGTERM to a worker replica while
// it executes a run and a second replica is up: the draining replica turns
// unready at once while still live, hands the run back when its shutdown
// timeout ends, and exits cleanly (a pod's terminationGracePeriodSeconds
// must cover this); the other replica completes the run.
func TestDrainHandsRunToOtherReplica(t *testing.T) {
	t.Parallel()
	dbURL := storetest.NewDB(t)
	s := newSite(t)
	s.stalls.Store(1) // the first load of /stall never finishes
	api := startServer(t, dbURL, serverOpts{role: config.RoleAPI})
	const shutdown = 3 * time.Second
	opsAddr := freeAddr(t)
	draining := startSubprocess(t, dbURL, "WAYFINDER_ROLE=worker", "WAYFINDER_HTTP_ADDR="+opsAddr,
		"WAYFINDER_SHUTDOWN_TIMEOUT="+shutdown.String(), "WAYFINDER_ALLOW_PRIVATE_NETWORKS=true")
	requireEventually(t, func() bool { status, _ := get(t, "http://"+opsAddr+"/readyz"); return status == http.StatusOK },
		"the draining replica became ready")

	ctx := context.Background()
	run, err := api.client.CreateRun(ctx, &wfv1.CreateRunRequest{Params: params(s.URL + "/stall")})
	require.NoError(t, err)
	waitForEvent(t, api.client, run.Id, wfv1.RunEventType_RUN_EVENT_TYPE_STEP_STARTED)
	requireEventually(t, func() bool { return s.hits.Load() > 0 }, "the browser requested the page")

	// The second replica is up before the first drains.
	startServer(t, dbURL, serverOpts{role: config.RoleWorker, allowPrivate: true})

	require.NoError(t, draining.cmd.Process.Signal(syscall.SIGTERM))
	// Readiness goes false at once while liveness holds: the run is still
	// in flight for the shutdown timeout.
	status, body := get(t, "http://"+opsAddr+"/readyz")
	for status == http.StatusOK {
		status, body = get(t, "http://"+opsAddr+"/readyz")
	}
	require.Equal(t, http.StatusServiceUnavailable, status, "readyz while draining: %s", body)
	status, body = get(t, "http://"+opsAddr+"/healthz")
	require.Equal(t, http.StatusOK, status, "healthz while draining: %s", body)

	// The drain is bounded by the shutdown timeout, plus River's
	// StopAndCancel (15s) and the HTTP stop (5s); the rest is headroom for
	// a loaded machine.
	select {
	case <-draining.exited:
	case <-time.After(shutdown + 15*time.Second + 5*time.Second + 30*time.Second):
		t.Fatal("the draining replica did not exit within its shutdown bound")
	}
	require.Equal(t, 0, draining.cmd.ProcessState.ExitCode(), "a drained replica exits 0")
	require.Empty(t, processesUsing(draining.dataDir), "no Chromium outlives its drained replica")

	evs := collectEvents(t, api.client, run.Id, 0)
	final := evs[len(evs)-1].GetRun()
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_COMPLETED, final.Status, "%v", final.Error)
	require.Equal(t, int32(2), final.Attempts, "attempted by the drained replica, then the other")
	types := eventTypes(evs)
	require.Contains(t, types, wfv1.RunEventType_RUN_EVENT_TYPE_REQUEUED)
	var requeued, restarted int
	for i, ty := range types {
		switch ty {
		case wfv1.RunEventType_RUN_EVENT_TYPE_REQUEUED:
			requeued = i
		case wfv1.RunEventType_RUN_EVENT_TYPE_STARTED:
			restarted = i
		}
	}
	require.Greater(t, restarted, requeued, "the run started again after it was handed back: %v", types)
	t.Logf("handed back at %s, started again %s later, finished %s later",
		evs[requeued].Time.AsTime().Format(time.RFC3339Nano), evs[restarted].Time.AsTime().Sub(evs[requeued].Time.AsTime()),
		evs[len(evs)-1].Time.AsTime().Sub(evs[requeued].Time.AsTime()))
	// The interrupted first step is on record; the resumed run goes on with
	// step 2 (as in TestShutdownHandsRunsBack).
	require.Equal(t, int32(2), final.StepCount)
}
