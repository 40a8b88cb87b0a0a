package bench

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/pool"
)

// TestMeasureReplay records a run of the scripted controller on a page,
// replays its trace strictly beside a model-driven run, and checks the
// figures: replayed steps without a controller call, a model-driven run's
// calls and tokens as what the replay saved.
func TestMeasureReplay(t *testing.T) {
	t.Parallel()
	site, err := StartSite()
	require.NoError(t, err)
	t.Cleanup(site.Close)
	ctx := context.Background()
	p, err := pool.New(pool.Config{Capacity: 2, WorkDir: t.TempDir(), HealthInterval: time.Hour})
	require.NoError(t, err)
	require.NoError(t, p.Start(ctx))
	t.Cleanup(p.Close)
	tok, err := NewTokenizer("")
	require.NoError(t, err)

	const rounds, actions = 1, 3
	var logged strings.Builder
	pages := Pages()[:1] // form: a click target and text fields
	res := measureReplay(ctx, p, site, pages, tok, rounds, actions, func(f string, a ...any) {
		logged.WriteString(f + "\n")
	})
	require.Len(t, res.Pages, 1)
	pg := res.Pages[0]
	require.Empty(t, pg.Err, logged.String())
	require.True(t, replayComplete(res))

	require.Equal(t, actions, pg.TraceActions)
	require.Equal(t, rounds, pg.Replays)
	require.Equal(t, rounds, pg.Completed)
	require.Equal(t, rounds, pg.ModelRuns)
	require.Zero(t, pg.ReplayCalls)
	require.Zero(t, pg.Relocated, "the page did not change")
	// Step 1 opens the page; the last step only completes.
	require.Equal(t, rounds*(actions-1), pg.Replayed.Step.N)
	require.Equal(t, rounds*(actions-1), pg.Model.Step.N)
	require.Positive(t, pg.Replayed.Step.Min)
	require.Positive(t, pg.Replayed.Action.Min)
	require.Positive(t, pg.Replayed.Settled.Min)
	require.Positive(t, pg.Replayed.Snapshot.Min, "the observation after the action")
	require.Zero(t, pg.Replayed.Model.Max, "no model phase in a replayed step")
	require.Zero(t, pg.Replayed.Judge.Max, "no judge between replayed steps")
	require.Positive(t, pg.Model.Model.Min)
	// Every target of the trace, found again apart both ways, once per
	// round; on the page as loaded the recorded refs still hold.
	require.Equal(t, rounds*actions, pg.Targets)
	require.Equal(t, pg.Targets, pg.ExactHeld)
	require.Equal(t, pg.Targets, pg.ExactRef.N)
	require.Equal(t, pg.Targets, pg.Relocate.N)
	require.Greater(t, pg.Relocate.Median, pg.ExactRef.Median, "the match reads the DOM")

	// A model-driven run: a controller call per action and one to complete.
	require.InDelta(t, actions+1, pg.Calls.Median, 0)
	require.Positive(t, pg.InputTokens.Min)
	require.Positive(t, pg.OutputTokens.Min)
	require.InDelta(t, pg.InputTokens.Median+pg.OutputTokens.Median, pg.Tokens.Median, 0)

	all := res.All
	require.Equal(t, pg.Replayed.Step.N, all.Replayed.Step.N)
	require.Equal(t, pg.Completed, all.Completed)
	require.InDelta(t, pg.Tokens.Median, all.Tokens.Median, 0)
}

func TestRenderReplay(t *testing.T) {
	t.Parallel()
	r := sampleReport()
	phases := func(step, model, judge float64) StepPhases {
		return StepPhases{Step: measured(step, step*1.5), Snapshot: measured(90, 100), Action: measured(200, 220),
			Settled: measured(180, 190), Model: measured(model, model), Judge: measured(judge, judge), Rest: measured(3, 4)}
	}
	form := ReplayPage{Page: r.Pages[0].Page, TraceActions: 8, Replays: 3, ModelRuns: 3, Completed: 3,
		Replayed: phases(300, 0, 0), Model: phases(400, 0.5, 0.02), ExactRef: measured(0.004, 0.005), Relocate: measured(7.5, 9),
		ExactHeld: 24, Targets: 24,
		Calls: measured(9, 9), InputTokens: measured(80000, 80000), OutputTokens: measured(400, 400), Tokens: measured(80400, 80400)}
	all := form
	all.Page = Page{Name: allPages}
	r.Replay = ReplayResult{Rounds: 3, Actions: 8, Pages: []ReplayPage{form}, All: all}
	md := render(t, r)
	for _, want := range []string{
		"## Replay vs model-driven steps\n",
		"(8 browser actions then `complete_task`)",
		"replayed 3 times strictly",
		"Every replay completed without a controller call: **yes**: 3 of 3 replays completed",
		"| form | 8 | 3 / 3 | 15 | 300 | 450 | 15 | 400 | 600 | 0.75 | 0 |",
		"which held for 24 of 24 targets here",
		"| form, replayed | 90.0 | 200 | 180 | 0.00 | 0.00 | 3.0 | 4.0 | 7.5 |",
		"| form, model-driven | 90.0 | 200 | 180 | 0.50 | 0.02 | 3.0 | — | — |",
		"| form | 9 | 80,000 | 400 | 0 | 9 | 80,400 |",
		"| **all pages** | 9 | 80,000 | 400 | 0 | 9 | 80,400 |",
	} {
		require.Contains(t, md, want)
	}
	require.Empty(t, r.Failures())

	// A replay that called the controller fails the section, loudly.
	bad := form
	bad.Page = r.Pages[1].Page
	bad.Completed, bad.ReplayCalls = 0, 1
	bad.Err = "replay 1: the replay called the controller 1 times"
	bad.Replayed = StepPhases{}
	all.Completed, all.Replays, all.ReplayCalls = 3, 6, 1
	r.Replay.Pages, r.Replay.All = append(r.Replay.Pages, bad), all
	md = render(t, r)
	require.Contains(t, md, "Every replay completed without a controller call: **no: the replay figures failed** (3 of 6 replays completed, 1 controller calls in replays; see Failures).")
	require.Contains(t, md, "| many | 8 | 0 / 3 | 0 | failed | failed | 15 | 400 | 600 | — | 0 |")
	require.Contains(t, md, "- many: replay: replay 1: the replay called the controller 1 times\n")
	require.Len(t, r.Failures(), 1)

	// Skipped.
	r.Replay = ReplayResult{}
	require.Contains(t, render(t, r), "## Replay vs model-driven steps\n\nNot measured in this run.\n")
}
