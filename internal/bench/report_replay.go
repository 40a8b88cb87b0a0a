package bench

import (
	"fmt"
	"strings"
)

func renderReplay(b *strings.Builder, r *Report) {
	e := r.Replay
	b.WriteString("\n## Replay vs model-driven steps\n\n")
	if len(e.Pages) == 0 {
		b.WriteString("Not measured in this run.\n")
		return
	}
	fmt.Fprintf(b, "Record and replay (issue 8, [docs/replay.md](replay.md)): on each page, one run of the engine "+
		"section's scripted controller (%d browser actions then `complete_task`) is recorded, and its trace "+
		"(`runner.Result.Trace`) is then replayed %d times strictly (`runner.Replay{Strict: true}`), alternating with "+
		"%d more model-driven runs of the same script (which of the two goes first alternates too), so load from other "+
		"work on the machine falls on both alike. Same pool, in-memory sink and heuristic judge as the engine section. "+
		"Counted, as there, are the steps after the first (which also opens the page) that ran a browser action: "+
		"in a replay the steps of actor `replay`, in a model-driven run those of actor `model`.\n\n",
		e.Actions, e.Rounds, e.Rounds)

	all := e.All
	ok := replayComplete(e)
	verdict := fmt.Sprintf("**yes**: %d of %d replays completed, every action of the trace replayed, %d controller calls",
		all.Completed, all.Replays, all.ReplayCalls)
	if !ok {
		verdict = fmt.Sprintf("**no: the replay figures failed** (%d of %d replays completed, %d controller calls in replays; see Failures)",
			all.Completed, all.Replays, all.ReplayCalls)
	}
	b.WriteString("Every replay completed without a controller call: " + verdict + ".\n\n")

	b.WriteString("A model-driven step here has a zero-latency model: its figures are the engine's overhead around " +
		"the model call. Besides that call, a replayed step skips building the request and the judge between steps " +
		"(their phases are below); the browser's work, the action and the observation after it, is the same on both " +
		"sides. A real model adds its latency to every model-driven step, one controller call each, which a replayed " +
		"step never pays; that latency is not measured in this report, so the ratio below compares the two without " +
		"it: a replay saves per step that latency plus the difference shown.\n\n")
	var rows [][]string
	for _, p := range replayRows(e) {
		ratio := "—"
		if x, ok := Ratio(p.Replayed.Step.Median, p.Model.Step.Median); ok && p.Replayed.Step.N > 0 {
			ratio = ratioStr(x)
		}
		med := func(s Summary, stat func(*Summary) float64) string { return replayCell(p, s, stat, millis) }
		rows = append(rows, []string{replayName(p), fmt.Sprint(p.TraceActions), fmt.Sprintf("%d / %d", p.Completed, p.Replays),
			fmt.Sprint(p.Replayed.Step.N), med(p.Replayed.Step, (*Summary).median), med(p.Replayed.Step, (*Summary).p95),
			fmt.Sprint(p.Model.Step.N), med(p.Model.Step, (*Summary).median), med(p.Model.Step, (*Summary).p95),
			ratio, fmt.Sprint(p.Relocated)})
	}
	table(b, []string{"page", "trace actions", "replays completed", "replayed steps", "replayed median, ms", "replayed p95, ms",
		"model steps", "model-driven median, ms", "model-driven p95, ms", "ratio (replayed ÷ model, medians)", "relocated"}, rows)
	b.WriteString("\nRelocated: replayed actions whose target was found by its fingerprint away from its recorded ref; " +
		"0 on these unchanged pages.\n")

	b.WriteString("\n### Where a replayed step's time goes\n\n")
	b.WriteString("Medians in ms (`runner.Step.Timings`; medians of parts do not add up to the median of the whole), " +
		"replayed steps beside model-driven ones. Page wait and observation: `Timings.Snapshot`, the snapshot and " +
		"marked screenshot after the action and, in a replay, any wait for the page the action expects (none on an " +
		"unchanged page: its signature matches at once). Action: `Timings.Action`, the action to settled (also " +
		"shown alone), the fingerprint of its target and the result's snapshot. Model and request: `Timings.Model`; " +
		"judge: `Timings.Judge` (heuristic; not asked between replayed steps). Rest: what no timing covers — in a " +
		"replayed step that includes checking the page's signature and finding the target again.\n\n")
	fmt.Fprintf(b, "Finding the target again is measured apart (no step timing covers it), on a fresh snapshot of "+
		"the page as loaded, for each of the trace's targets, both ways a replay can take: the exact-ref check it "+
		"makes first (`trace.AtRecordedRef`: the recorded ref still shows the same element, by role, name, context "+
		"and neighbours; no browser call), which held for %d of %d targets here, and the match by fingerprint it "+
		"falls back to when the check fails, as on a changed page (`trace.Shortlist`, one `ElementDetails` call, "+
		"`trace.Match`; every match here confident and at its recorded ref).\n\n", e.All.ExactHeld, e.All.Targets)
	rows = rows[:0]
	for _, p := range replayRows(e) {
		med := func(s Summary) string { return replayCell(p, s, (*Summary).median, fineMillis) }
		rows = append(rows,
			[]string{replayName(p) + ", replayed", med(p.Replayed.Snapshot), med(p.Replayed.Action), med(p.Replayed.Settled),
				med(p.Replayed.Model), med(p.Replayed.Judge), med(p.Replayed.Rest),
				replayCell(p, p.ExactRef, (*Summary).median, micros), med(p.Relocate)},
			[]string{replayName(p) + ", model-driven", med(p.Model.Snapshot), med(p.Model.Action), med(p.Model.Settled),
				med(p.Model.Model), med(p.Model.Judge), med(p.Model.Rest), "—", "—"})
	}
	table(b, []string{"page, steps (ms but where noted)", "page wait and observation", "action", "of it, to settled", "model and request",
		"judge", "rest", "exact-ref check (apart), µs", "match by fingerprint (apart)"}, rows)

	b.WriteString("\n### What a replay saves per run\n\n")
	fmt.Fprintf(b, "A model-driven run's controller calls and tokens, per run (median over its %d model-driven runs "+
		"a page), which a completed replay does not spend. Input tokens are counted as in the engine section (%s text "+
		"and screenshots at width×height/750, every request of the run); output tokens are the tool calls the script "+
		"answered with (a real model writes at least these). A replay with the heuristic judge, as here, or success "+
		"indicators makes no model call at all; with an LLM judge it makes that one call at the end.\n\n", e.Rounds, r.Tokenizer)
	rows = rows[:0]
	for _, p := range replayRows(e) {
		cell := func(s Summary) string { return replayCell(p, s, (*Summary).median, thousands) }
		rows = append(rows, []string{replayName(p), cell(p.Calls), cell(p.InputTokens), cell(p.OutputTokens),
			fmt.Sprint(p.ReplayCalls), cell(p.Calls), replaySaved(p)})
	}
	table(b, []string{"page", "controller calls per model-driven run", "input tokens per run", "output tokens per run",
		"controller calls in all replays", "calls saved per replay", "tokens saved per replay (input and output)"}, rows)
}

// replayComplete says every replay measured completed with no controller
// call, and no page failed.
func replayComplete(e ReplayResult) bool {
	for _, p := range e.Pages {
		if p.Err != "" {
			return false
		}
	}
	return e.All.Replays > 0 && e.All.Completed == e.All.Replays && e.All.ReplayCalls == 0
}

func replayRows(e ReplayResult) []ReplayPage {
	return append(append([]ReplayPage(nil), e.Pages...), e.All)
}

func replayName(p ReplayPage) string {
	if p.Page.Name == allPages {
		return "**" + p.Page.Name + "**"
	}
	return p.Page.Name
}

// replaySaved is the median tokens of a model-driven run, which a
// completed replay does not spend.
func replaySaved(p ReplayPage) string {
	if p.Completed == 0 {
		return replayCell(p, Summary{}, (*Summary).median, thousands)
	}
	return replayCell(p, p.Tokens, (*Summary).median, thousands)
}

// replayCell renders a statistic of a replay page, or why it is missing.
func replayCell(p ReplayPage, s Summary, stat func(*Summary) float64, format func(float64) string) string {
	switch {
	case s.N > 0:
		return format(stat(&s))
	case p.Err != "":
		return "failed"
	default:
		return "—"
	}
}

// micros renders milliseconds as microseconds.
func micros(ms float64) string { return fmt.Sprintf("%.1f", ms*1000) }
