package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseConcurrency(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    []int
		wantErr bool
	}{
		{"1,2,4", []int{1, 2, 4}, false},
		{" 8 ", []int{8}, false},
		{"0", nil, true},
		{"1,,2", nil, true},
		{"two", nil, true},
		{"65", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParseConcurrency(tt.in)
			if tt.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestProcCounters(t *testing.T) {
	t.Parallel()
	cpu := parseCPULine([]byte("cpu  100 5 50 800 20 3 2 0 7 0"))
	require.Equal(t, cpuTimes{busy: 160, total: 980}, cpu)
	require.InDelta(t, 0.5, cpuTimes{busy: 260, total: 1180}.busyShare(cpu), 1e-9)
	require.Zero(t, cpu.busyShare(cpu))
	require.Equal(t, cpuTimes{}, parseCPULine([]byte("intr 1 2 3")))

	// utime 7, stime 3, cutime 20, cstime 10 (fields 14-17), after a
	// command name with spaces and parentheses.
	stat := "42 (a (b) c) S 1 42 42 0 -1 4194560 100 0 0 0 7 3 20 10 20 0 1 0 123 0 0"
	require.Equal(t, uint64(40), statTicks([]byte(stat)))
	require.Zero(t, statTicks([]byte("42 (x) S 1")))
	require.Positive(t, treeCPU(os.Getpid()))
}

func TestDistAndSlope(t *testing.T) {
	t.Parallel()
	var ds []time.Duration
	for i := 1; i <= 100; i++ {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	d := distOf(ds)
	require.Equal(t, 100, d.N)
	require.InDelta(t, 50.5, d.P50, 1e-9)
	require.InDelta(t, 99.01, d.P99, 1e-9)
	require.InDelta(t, 100, d.Max, 1e-9)
	require.Zero(t, distOf(nil).N)

	s, ok := pssSlope([]LoadLevel{{Capacity: 1, SteadyPSS: 500, SteadySamples: 1}, {Capacity: 2, SteadyPSS: 600, SteadySamples: 1},
		{Capacity: 4, SteadyPSS: 800, SteadySamples: 3}, {Capacity: 8}})
	require.True(t, ok)
	require.InDelta(t, 100, s, 1e-9)
	_, ok = pssSlope([]LoadLevel{{Capacity: 1, SteadyPSS: 500, SteadySamples: 1}})
	require.False(t, ok)
}

func TestReadResilience(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	missing, err := ReadResilience(filepath.Join(dir, "none.json"))
	require.NoError(t, err)
	require.Nil(t, missing)

	path := filepath.Join(dir, "resilience.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"command": "make chaos", "chromium_kills": {"kills": 40, "recovery_ms": {"p50": 812.5}},
		"runs": [{"status": "COMPLETED"}], "note": null}`), 0o600))
	r, err := ReadResilience(path)
	require.NoError(t, err)
	require.Equal(t, "make chaos", r.Command)
	require.Equal(t, [][2]string{
		{"chromium_kills.kills", "40"}, {"chromium_kills.recovery_ms.p50", "812.5"}, {"note", "—"}, {"runs[0].status", "COMPLETED"},
	}, r.Rows)

	var b strings.Builder
	renderResilience(&b, &Report{Resilience: r})
	require.Contains(t, b.String(), "| `runs[0].status` | COMPLETED |")
	require.Contains(t, b.String(), "Command: `make chaos`")
	require.Contains(t, b.String(), "| `chromium_kills.kills` | 40 |")
	b.Reset()
	renderResilience(&b, &Report{})
	require.Contains(t, b.String(), "Not measured yet")

	// The chaos tests' own shape: a section per test.
	require.NoError(t, os.WriteFile(path, []byte(`{"command": "make chaos", "tests": {
		"TestB": {"updated": "2026-11-22T15:49:50Z", "duration_s": 32.6, "summary": "all good", "figures": {"outages": 2, "by": {"X": 1}}},
		"TestA": {"summary": "fine", "figures": {"runs": 6}}}}`), 0o600))
	r, err = ReadResilience(path)
	require.NoError(t, err)
	require.Empty(t, r.Rows)
	require.Equal(t, []ResilienceTest{
		{Name: "TestA", Summary: "fine", Figures: [][2]string{{"runs", "6"}}},
		{Name: "TestB", Summary: "all good", Updated: "2026-11-22T15:49:50Z", Seconds: 32.6, Figures: [][2]string{{"by.X", "1"}, {"outages", "2"}}},
	}, r.Tests)
	b.Reset()
	renderResilience(&b, &Report{Resilience: r})
	require.Contains(t, b.String(), "### TestB\n\nall good (took 33 s; written 2026-11-22T15:49:50Z).")
	require.Contains(t, b.String(), "| `by.X` | 1 |")

	require.NoError(t, os.WriteFile(path, []byte(`{"broken`), 0o600))
	_, err = ReadResilience(path)
	require.ErrorContains(t, err, "resilience figures")
}

// The load sections render every figure, say where throughput
// saturates, and keep failures visible.
func TestRenderLoad(t *testing.T) {
	t.Parallel()
	lvl := func(c int, rpm float64) LoadLevel {
		return LoadLevel{Capacity: c, Runs: 4 * c, Completed: 4 * c, Steps: 20 * c, Wall: time.Minute, RunsPerMinute: rpm,
			RunTime: Dist{N: 4 * c, P50: 3000}, StepOverhead: Dist{N: 20 * c, P50: 250, P99: 900}, QueueWait: Dist{N: 4 * c, P50: 5000, P99: 9000},
			IdlePSS: 400 << 20, SteadyPSS: int64(400+100*c) << 20, ServerPSS: 100 << 20, ChromiumPSS: int64(250+100*c) << 20, PostgresPSS: 50 << 20,
			SteadySamples: 5, Connections: 6, TreeCores: 1.8, MachineBusy: 0.95}
	}
	l := &LoadResult{Command: "go run ./cmd/wfbench -load", Duration: 5 * time.Minute, Load: "3.0, 2.0, 1.0", Actions: 4, RunsPerSlot: 4,
		Levels: []LoadLevel{lvl(1, 20), lvl(2, 30), lvl(4, 31), {Capacity: 8, Runs: 32, Err: "boom"}},
		API: APILoad{Duration: 20 * time.Second, Capacity: 2, RunsCreated: 40, RunsStarted: 10,
			Ops:    []APIOp{{Name: "GetRun", Protocol: "REST", Rate: 25, Sent: 500, Latency: Dist{N: 500, P50: 2, P99: 40, Max: 90}}},
			Events: Dist{N: 50, P50: 3, P99: 30, Max: 31}},
		Replicas: ReplicaResult{Runs: 12, CapacityEach: 2, One: 40 * time.Second, Two: 30 * time.Second, Shares: []int{7, 5}, CompletedOne: 12, CompletedTwo: 12},
		Capacity: CapacityInputs{Steps: 140, Runs: 28, WALBytesPerStep: 300 << 10, RowsPerStep: 12, MediaBytesPerStep: 120 << 10, MediaPerStep: 2,
			RunsPerHour: 1860, BestCapacity: 4, MeanRunSeconds: 3},
		Errors: []string{"load: capacity 8: boom"},
	}
	var md bytes.Buffer
	require.NoError(t, RenderLoadMarkdown(&md, &Report{Load: l}))
	out := md.String()
	for _, want := range []string{
		"Command: `go run ./cmd/wfbench -load` (5m0s in all, load average 3.0, 2.0, 1.0",
		"| 2 | 8 / 8 | 30.0 | 250 | 900 |",
		"failed: boom",
		"**Throughput saturates at capacity 2**",
		"**100.0 MiB per concurrent run**",
		"| GetRun | REST | 25 | 500 | 0 | 2.0 | 40.0 | 90.0 |",
		"50 events: **p50 3.0 ms, p99 30.0 ms**",
		"| two replicas | 30,000 ms | 12 / 12 | 7 / 5 |",
		"Drain with two replicas ÷ one: **0.75**",
		"| runs/hour per replica (best level, this machine's cores) | 1,860 (capacity 4; median run 3.0 s) |",
		"PgBouncer", "session", "NOTIFY", "reaper", "S3",
		"## Resilience", "Not measured yet",
		"## Failures", "- load: capacity 8: boom",
	} {
		require.Contains(t, out, want)
	}

	md.Reset()
	require.NoError(t, RenderMarkdown(&md, &Report{}))
	require.Contains(t, md.String(), "Not measured in this run (`wfbench -skip-load`)")
}
