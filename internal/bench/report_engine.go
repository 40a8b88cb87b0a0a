package bench

import (
	"fmt"
	"strings"
)

// The token budgets of seed 002 §2.1.1 (target, hard limit), per turn.
var tokenBudgets = []struct {
	what          string
	target, limit int
	value         func(EngineTokens) (float64, string)
}{
	{"system prompt", 500, 1000, func(t EngineTokens) (float64, string) {
		return float64(t.System), thousands(float64(t.System))
	}},
	{"conversation history (text, largest request)", 6000, 10000, func(t EngineTokens) (float64, string) {
		return t.History.Max, thousands(t.History.Max)
	}},
	{"total per turn (text and screenshots), median request", 8000, 15000, func(t EngineTokens) (float64, string) {
		return t.Total.Median, thousands(t.Total.Median)
	}},
	{"total per turn (text and screenshots), largest request", 8000, 15000, func(t EngineTokens) (float64, string) {
		return t.Total.Max, thousands(t.Total.Max)
	}},
}

func renderEngine(b *strings.Builder, r *Report) {
	e := r.Engine
	b.WriteString("\n## Engine overhead per step\n\n")
	if len(e.Pages) == 0 {
		b.WriteString("Not measured in this run.\n")
		return
	}
	fmt.Fprintf(b, "The agent loop itself (`runner.Runner.Run`), everything but the model's latency: on each page, "+
		"%d runs (after one unrecorded warm-up run) in a context leased from `internal/pool`, each of %d browser actions "+
		"then `complete_task`. The controller is `llm.NewScripted`, answering at once with the next action on an element "+
		"of the snapshot in its request (alternately a click on the page's click target and a fill of its first text "+
		"field; a click again where it has none); the judge is the heuristic one (`judge.Heuristic`, no model), asked "+
		"every step as by default; the controller sees %d screenshots (the API's default). The run's record goes to an "+
		"in-memory sink: storing steps, prompt runs and screenshots in Postgres is the service's cost, not the "+
		"engine's, and is not measured here (nor is the worker's network guard, whose cost falls on requests these "+
		"steps do not make).\n\n", e.Runs, e.Actions, e.ScreenshotDepth)
	b.WriteString("A step runs from its start to its record: the model call, the browser action, the observation of " +
		"the page after it, the judge. Counted are the steps after the first (which also opens the page) that ran a " +
		"browser action, not the final `complete_task` step. Engine overhead is the step without the model call. " +
		"Page-layer step is the Wayfinder step of the comparison above (snapshot, screenshot, click), for scale.\n\n")
	var rows [][]string
	for _, p := range append(append([]EnginePage(nil), e.Pages...), e.All) {
		layer := "—"
		for _, pr := range r.Pages {
			if pr.Page.Name == p.Page.Name && pr.Ours.Step.N > 0 {
				layer = millis(pr.Ours.Step.Median)
			}
		}
		rows = append(rows, []string{engineName(p), fmt.Sprint(p.Step.N),
			engineCell(p, p.Step, (*Summary).median, millis), engineCell(p, p.Step, (*Summary).p95, millis),
			engineCell(p, p.Overhead, (*Summary).median, millis), engineCell(p, p.Overhead, (*Summary).p95, millis),
			layer,
		})
	}
	table(b, []string{"page", "steps", "step median, ms", "step p95, ms", "engine overhead median, ms", "engine overhead p95, ms", "page-layer step median, ms"}, rows)

	b.WriteString("\n### Where a step's time goes\n\n")
	b.WriteString("Medians in ms of each phase (`runner.Step.Timings`; medians of parts do not add up to the median " +
		"of the whole). Action to settled: the browser action and its settle wait (no network, navigation or DOM " +
		"change for " + durationMillis(r.OursSettle) + "), as the action's own duration. Result snapshot: the rest of the " +
		"action phase, the fresh snapshot the action's result carries. Observation: the snapshot's text and the " +
		"screenshot with the refs marked, taken after the action (the marks are drawn in Go on the decoded image, " +
		"which is then encoded again; the page layer's screenshot above has none). Model: the scripted model's call, " +
		"about zero. " +
		"Request: the rest of the model phase (building the conversation into a request within its token budgets, " +
		"the retry wrapper, the prompt-run record). Rest: what no phase covers (tool dispatch, tool results, the " +
		"step record, events).\n\n")
	rows = rows[:0]
	for _, p := range append(append([]EnginePage(nil), e.Pages...), e.All) {
		med := func(s Summary) string { return engineCell(p, s, (*Summary).median, fineMillis) }
		rows = append(rows, []string{engineName(p), med(p.Settled), med(p.ResultSnapshot), med(p.Snapshot), med(p.Judge),
			med(p.Model), med(p.Conversation), med(p.Rest)})
	}
	table(b, []string{"page", "action to settled", "result snapshot", "observation", "judge (heuristic)", "model (scripted)", "request", "rest"}, rows)

	renderEngineTokens(b, r)
}

func renderEngineTokens(b *strings.Builder, r *Report) {
	e := r.Engine
	b.WriteString("\n## Tokens per step\n\n")
	fmt.Fprintf(b, "The input of every controller request the engine built in those runs (one per step, all steps), "+
		"counted as in the rest of this report: text with %s (system prompt; tool definitions as above; messages: "+
		"text, tool calls as name and arguments, tool results as their content, without a vendor's per-message "+
		"framing), screenshots at width×height/750 as Anthropic bills them (1,365 for 1280×800), listed apart. "+
		"Median and largest over the requests.\n\n", r.Tokenizer)
	var rows [][]string
	for _, p := range append(append([]EnginePage(nil), e.Pages...), e.All) {
		t := p.Tokens
		cell := func(s Summary, stat func(*Summary) float64) string { return engineCell(p, s, stat, thousands) }
		shots := "—"
		if t.Screenshots.N > 0 {
			shots = fmt.Sprintf("%s (%s)", cell(t.Images, (*Summary).median), thousands(t.Screenshots.Median))
		}
		rows = append(rows, []string{engineName(p), fmt.Sprint(t.Requests),
			cell(t.Text, (*Summary).median), cell(t.Text, (*Summary).max),
			shots, cell(t.Total, (*Summary).median), cell(t.Total, (*Summary).max),
			cell(t.Snapshot, (*Summary).median), cell(t.History, (*Summary).median),
		})
	}
	table(b, []string{"page", "requests", "text median", "text max", "screenshots median (count)", "total median", "total max",
		"page snapshot median", "history median"}, rows)

	b.WriteString("\nShare of all input tokens of the runs. Page snapshot: the page the model acts on, in the newest " +
		"message. History: the rest of the messages (goal, earlier turns with their tool calls and results, including " +
		"the older snapshots the two latest turns keep).\n\n")
	rows = rows[:0]
	for _, p := range append(append([]EnginePage(nil), e.Pages...), e.All) {
		s := p.Tokens.Sum
		total := s.total()
		share := func(n int) string {
			if total == 0 {
				return "—"
			}
			return fmt.Sprintf("%.0f%%", 100*float64(n)/float64(total))
		}
		rows = append(rows, []string{engineName(p), share(s.System), share(s.Tools), share(s.Snapshot), share(s.History), share(s.Images)})
	}
	table(b, []string{"page", "system prompt", "tool definitions", "page snapshot", "history", "screenshots"}, rows)

	b.WriteString("\n### Token budgets (seed 002 §2.1.1)\n\n")
	rows = rows[:0]
	all := e.All.Tokens
	for _, tb := range tokenBudgets {
		v, s := tb.value(all)
		result := "pending"
		if all.Requests > 0 {
			switch {
			case v <= float64(tb.target):
				result = "**met**"
			case v <= float64(tb.limit):
				result = "over target, within the limit"
			default:
				result = "**not met**"
			}
		} else {
			s = "—"
		}
		rows = append(rows, []string{tb.what, thousands(float64(tb.target)), thousands(float64(tb.limit)), s, result})
	}
	table(b, []string{"per request, all pages", "target", "hard limit", "measured", "result"}, rows)
	b.WriteString("\nThe seed's budgets are in Claude's tokens, which no public tokenizer counts; " + r.Tokenizer +
		" stands in. Its screenshot target (about 500 tokens) is not met by a full 1280×800 viewport (1,365).\n")
}

func (s *Summary) max() float64 { return s.Max }

// fineMillis renders milliseconds with two decimals below one.
func fineMillis(ms float64) string {
	if ms < 1 {
		return fmt.Sprintf("%.2f", ms)
	}
	return millis(ms)
}

func engineName(p EnginePage) string {
	if p.Page.Name == allPages {
		return "**" + p.Page.Name + "**"
	}
	return p.Page.Name
}

// engineCell renders a statistic of an engine page, or why it is missing.
func engineCell(p EnginePage, s Summary, stat func(*Summary) float64, format func(float64) string) string {
	switch {
	case s.N > 0:
		return format(stat(&s))
	case p.Err != "":
		return "failed"
	default:
		return "—"
	}
}
