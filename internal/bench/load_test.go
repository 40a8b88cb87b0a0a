package bench

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRunLoad measures the real service (in-process servers, managed
// Postgres, Chromium, the benchmark pages) with tiny counts: every run
// completes, and every figure is there and sane.
func TestRunLoad(t *testing.T) {
	// A short path of its own: Postgres and Chromium put sockets under
	// it, and Postgres (as another user, when root) must reach it.
	work, err := os.MkdirTemp("", "wfload-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(work) })
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	var log bytes.Buffer
	res, err := RunLoad(ctx, LoadConfig{
		Concurrency: []int{1, 2}, RunsPerSlot: 1, Actions: 2,
		APIDuration: 3 * time.Second, CreateRate: 1, GetRate: 5, APICapacity: 1,
		ReplicaRuns: 2, ReplicaCapacity: 1,
		WorkDir: work, Command: "go test", Log: &log,
	})
	require.NoError(t, err, log.String())
	require.Empty(t, res.Errors, log.String())

	require.Len(t, res.Levels, 2)
	for _, l := range res.Levels {
		require.Equal(t, l.Runs, l.Completed, "capacity %d", l.Capacity)
		require.Equal(t, l.Runs*3, l.Steps, "capacity %d: 2 actions and complete_task per run", l.Capacity)
		require.Positive(t, l.RunsPerMinute)
		require.Positive(t, l.Wall)
		require.Equal(t, l.Steps, l.StepOverhead.N)
		require.Positive(t, l.StepOverhead.P50)
		require.LessOrEqual(t, l.StepOverhead.P50, l.StepOverhead.P99)
		require.LessOrEqual(t, l.StepOverhead.P99, l.StepWall.Max)
		require.GreaterOrEqual(t, l.QueueWait.P50, 0.0)
		require.Positive(t, l.IdlePSS)
		require.Positive(t, l.Connections)
		require.Positive(t, l.TreeCores)
		require.InDelta(t, 0.5, l.MachineBusy, 0.5)
		if l.SteadySamples > 0 {
			require.Positive(t, l.ServerPSS)
			require.Positive(t, l.ChromiumPSS)
			require.Positive(t, l.PostgresPSS)
		}
	}
	c := res.Capacity
	require.Equal(t, 9, c.Steps)
	require.Positive(t, c.WALBytesPerStep)
	require.Positive(t, c.RowsPerStep)
	require.Positive(t, c.MediaBytesPerStep)
	require.Positive(t, c.RunsPerHour)

	api := res.API
	require.Len(t, api.Ops, 4)
	for _, op := range api.Ops {
		require.Positive(t, op.Sent, op.Name+" "+op.Protocol)
		require.Zero(t, op.Errors, op.FirstError)
		require.Equal(t, op.Sent, op.Latency.N)
		require.Positive(t, op.Latency.P50)
	}
	require.Positive(t, api.RunsCreated)
	require.Positive(t, api.Events.N, "step events delivered")
	require.GreaterOrEqual(t, api.Events.P50, 0.0)

	r := res.Replicas
	require.Equal(t, 2, r.CompletedOne)
	require.Equal(t, 2, r.CompletedTwo)
	require.Positive(t, r.One)
	require.Positive(t, r.Two)
	total := 0
	for _, n := range r.Shares {
		total += n
	}
	require.Equal(t, 2, total)

	var md bytes.Buffer
	require.NoError(t, RenderLoadMarkdown(&md, &Report{Date: res.Date, Load: res}))
	for _, want := range []string{"## Throughput and latency under load", "## API latency under load", "## Two replicas", "## Capacity model", "## Resilience"} {
		require.Contains(t, md.String(), want)
	}
}
