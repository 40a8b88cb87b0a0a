package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/wayfinder/wayfinder/internal/browser"
	"github.com/wayfinder/wayfinder/internal/judge"
	"github.com/wayfinder/wayfinder/internal/pool"
	"github.com/wayfinder/wayfinder/internal/runner"
	"github.com/wayfinder/wayfinder/internal/trace"
)

// ReplayResult is record and replay (issue 8) measured on the benchmark
// pages: on each page one run of the engine's scripted controller is
// recorded, then its trace is replayed strictly Rounds times, alternating
// with Rounds more model-driven runs of the same script, so load from
// other work falls on both alike.
type ReplayResult struct {
	// Rounds is the number of replays (and of model-driven runs) per
	// page; Actions the browser actions of each run (then complete_task).
	Rounds, Actions int
	// Pages holds the figures per page, in page order.
	Pages []ReplayPage
	// All pools the samples of every page.
	All ReplayPage
}

// ReplayPage is record and replay on one page (or on all, pooled). Times
// are in milliseconds.
type ReplayPage struct {
	Page Page
	// TraceActions is the number of actions of the recorded trace
	// (pooled: of every page's).
	TraceActions int
	// Replays and ModelRuns count the runs measured. Completed counts the
	// replays that completed with every action of the trace replayed and
	// no controller call; anything else fails the page (Err).
	Replays, ModelRuns, Completed int
	// ReplayCalls are the controller calls the replays made: zero.
	ReplayCalls int
	// Relocated counts the replayed actions whose target was found by its
	// fingerprint away from its recorded ref (0 on an unchanged page).
	Relocated int
	// Replayed are the steps the replay took (actor "replay"), Model the
	// steps the scripted controller took in the model-driven runs; as in
	// the engine's figures, only steps after the first (which also opens
	// the page) that ran a browser action.
	Replayed, Model StepPhases
	// ExactRef and Relocate are finding a recorded target again, measured
	// apart on the page as loaded (no step timing covers it: in a
	// replayed step it falls in Rest). ExactRef is the check a replay
	// makes first (trace.AtRecordedRef: the recorded ref still shows the
	// same element), which settles an unchanged page; Relocate is what it
	// does when that check fails (trace.Shortlist, one ElementDetails
	// call, trace.Match). ExactHeld counts the targets the check accepted,
	// of Targets checked.
	ExactRef, Relocate Summary
	ExactHeld, Targets int
	// Calls, InputTokens and OutputTokens are a model-driven run's
	// controller calls and their tokens, per run: what a replay saves.
	// Input tokens are counted as the engine's (text and screenshots);
	// output tokens are the tool calls the script answered with; Tokens
	// both.
	Calls, InputTokens, OutputTokens, Tokens Summary
	// Err is the failure that cut the page's runs short.
	Err string
}

// StepPhases are step times and their phases (runner.Step.Timings), in
// milliseconds.
type StepPhases struct {
	// Step is the step's wall time, from its start to its record.
	Step Summary
	// Snapshot is Timings.Snapshot: the observation after the action and,
	// in a replayed step, any wait for the page the action expects.
	Snapshot Summary
	// Action is Timings.Action (the action to settled, the fingerprint of
	// its target, the result's snapshot); Settled the browser action's own
	// duration, to settled.
	Action, Settled Summary
	// Model is Timings.Model (the scripted call and building the
	// request); Judge is Timings.Judge. Both are zero in a replayed step.
	Model, Judge Summary
	// Rest is what no timing covers: dispatch, the step record and, in a
	// replayed step, checking the page's signature and finding the target
	// again.
	Rest Summary
}

// phaseSamples accumulates raw step phases.
type phaseSamples struct {
	step, snapshot, action, settled, model, judge, rest []time.Duration
}

func (s *phaseSamples) add(st runner.Step, settled time.Duration) {
	wall, t := st.End.Sub(st.Start), st.Timings
	s.step = append(s.step, wall)
	s.snapshot = append(s.snapshot, t.Snapshot)
	s.action = append(s.action, t.Action)
	s.settled = append(s.settled, settled)
	s.model = append(s.model, t.Model)
	s.judge = append(s.judge, t.Judge)
	s.rest = append(s.rest, wall-t.Snapshot-t.Action-t.Model-t.Judge)
}

func (s *phaseSamples) merge(o *phaseSamples) {
	s.step = append(s.step, o.step...)
	s.snapshot = append(s.snapshot, o.snapshot...)
	s.action = append(s.action, o.action...)
	s.settled = append(s.settled, o.settled...)
	s.model = append(s.model, o.model...)
	s.judge = append(s.judge, o.judge...)
	s.rest = append(s.rest, o.rest...)
}

func (s *phaseSamples) result() StepPhases {
	return StepPhases{
		Step: SummarizeDurations(s.step), Snapshot: SummarizeDurations(s.snapshot),
		Action: SummarizeDurations(s.action), Settled: SummarizeDurations(s.settled),
		Model: SummarizeDurations(s.model), Judge: SummarizeDurations(s.judge), Rest: SummarizeDurations(s.rest),
	}
}

// replaySamples accumulates one page's raw replay measurements.
type replaySamples struct {
	replayed, model                   phaseSamples
	exactRef, relocate                []time.Duration
	exactHeld, targets                int
	calls, input, output, tokens      []int
	traceActions, replays, modelRuns  int
	completed, replayCalls, relocated int
}

func (s *replaySamples) merge(o *replaySamples) {
	s.replayed.merge(&o.replayed)
	s.model.merge(&o.model)
	s.exactRef = append(s.exactRef, o.exactRef...)
	s.relocate = append(s.relocate, o.relocate...)
	s.exactHeld += o.exactHeld
	s.targets += o.targets
	s.calls = append(s.calls, o.calls...)
	s.input = append(s.input, o.input...)
	s.output = append(s.output, o.output...)
	s.tokens = append(s.tokens, o.tokens...)
	s.traceActions += o.traceActions
	s.replays += o.replays
	s.modelRuns += o.modelRuns
	s.completed += o.completed
	s.replayCalls += o.replayCalls
	s.relocated += o.relocated
}

func (s *replaySamples) result(pg Page, err error) ReplayPage {
	r := ReplayPage{
		Page: pg, TraceActions: s.traceActions,
		Replays: s.replays, ModelRuns: s.modelRuns, Completed: s.completed,
		ReplayCalls: s.replayCalls, Relocated: s.relocated,
		Replayed: s.replayed.result(), Model: s.model.result(),
		ExactRef: SummarizeDurations(s.exactRef), Relocate: SummarizeDurations(s.relocate),
		ExactHeld: s.exactHeld, Targets: s.targets,
		Calls: SummarizeInts(s.calls), InputTokens: SummarizeInts(s.input), OutputTokens: SummarizeInts(s.output),
		Tokens: SummarizeInts(s.tokens),
	}
	if err != nil {
		r.Err = err.Error()
	}
	return r
}

// addModelRun adds a model-driven run: its steps, and its controller
// calls and tokens.
func (s *replaySamples) addModelRun(rec *engineSink, tok *Tokenizer) error {
	steps, prompts := rec.recorded()
	calls, input, output := 0, 0, 0
	for _, pr := range prompts {
		if pr.Role != runner.RoleController {
			continue
		}
		calls++
		if pr.Request == nil {
			return fmt.Errorf("controller call of step %d: no request on record", pr.Step)
		}
		rt, err := countRequest(pr.Request, tok)
		if err != nil {
			return fmt.Errorf("controller request of step %d: %w", pr.Step, err)
		}
		input += rt.total()
		if pr.Response != nil {
			output += tok.Count(pr.Response.Text)
			for _, c := range pr.Response.ToolCalls {
				output += tok.Count(c.Name) + tok.Count(string(c.Arguments))
			}
		}
	}
	s.modelRuns++
	s.calls = append(s.calls, calls)
	s.input = append(s.input, input)
	s.output = append(s.output, output)
	s.tokens = append(s.tokens, input+output)
	s.addSteps(steps, "model", &s.model)
	return nil
}

// addReplay adds a strict replay of tr, which must have completed with
// every action replayed and no controller call.
func (s *replaySamples) addReplay(res runner.Result, rec *engineSink, tr *trace.Trace) error {
	steps, prompts := rec.recorded()
	calls := 0
	for _, pr := range prompts {
		if pr.Role == runner.RoleController {
			calls++
		}
	}
	s.replays++
	s.replayCalls += calls
	rp := res.Replay
	switch {
	case rp == nil:
		return errors.New("the run reports no replay")
	case rp.DivergedAt > 0:
		return fmt.Errorf("the replay diverged at step %d: %s", rp.DivergedAt, rp.Divergence)
	case rp.Replayed != len(tr.Actions):
		return fmt.Errorf("the replay took %d of the trace's %d actions", rp.Replayed, len(tr.Actions))
	case calls > 0 || rp.Controller.Calls > 0:
		return fmt.Errorf("the replay called the controller %d times", max(calls, rp.Controller.Calls))
	}
	s.completed++
	s.relocated += rp.Relocated
	s.addSteps(steps, runner.ActorReplay, &s.replayed)
	return nil
}

// addSteps adds the steps of actor after the first that ran a browser
// action.
func (s *replaySamples) addSteps(steps []runner.Step, actor string, into *phaseSamples) {
	for _, st := range steps {
		settled, ok := browserActions(st)
		if st.Number < 2 || !ok || st.Actor != actor {
			continue
		}
		into.add(st, settled)
	}
}

// measureReplay records a run on every page and measures rounds strict
// replays of its trace against rounds model-driven runs, alternating
// (which goes first alternates too), then times finding the trace's
// targets again apart.
func measureReplay(ctx context.Context, p *pool.Pool, site *Site, pages []Page, tok *Tokenizer, rounds, actions int, logf func(string, ...any)) ReplayResult {
	res := ReplayResult{Rounds: rounds, Actions: actions}
	var all replaySamples
	for _, pg := range pages {
		logf("replay: page %s: a recorded run, then %d replays and %d model-driven runs of %d actions", pg.Name, rounds, rounds, actions)
		var s replaySamples
		err := measureReplayPage(ctx, p, site.URL+pg.Path, pg, tok, rounds, actions, &s)
		if err != nil {
			logf("replay: page %s: %v", pg.Name, err)
		}
		all.merge(&s)
		res.Pages = append(res.Pages, s.result(pg, err))
		if ctx.Err() != nil {
			break
		}
	}
	res.All = all.result(Page{Name: allPages}, nil)
	return res
}

func measureReplayPage(ctx context.Context, p *pool.Pool, url string, pg Page, tok *Tokenizer, rounds, actions int, s *replaySamples) error {
	recorded, _, err := agentRun(ctx, p, url, pg, actions, nil)
	if err != nil {
		return fmt.Errorf("recording: %w", err)
	}
	tr := recorded.Trace
	if tr == nil || len(tr.Actions) == 0 {
		return errors.New("recording: the completed run kept no trace")
	}
	s.traceActions = len(tr.Actions)
	for i := range rounds {
		replayFirst := i%2 == 0
		for k := range 2 {
			if (k == 0) == replayFirst {
				res, rec, err := agentRun(ctx, p, url, pg, actions, tr)
				if err == nil {
					err = s.addReplay(res, rec, tr)
				}
				if err != nil {
					return fmt.Errorf("replay %d: %w", i+1, err)
				}
				continue
			}
			_, rec, err := agentRun(ctx, p, url, pg, actions, nil)
			if err == nil {
				err = s.addModelRun(rec, tok)
			}
			if err != nil {
				return fmt.Errorf("model-driven run %d: %w", i+1, err)
			}
		}
	}
	if err := timeResolve(ctx, p, url, tr, rounds, s); err != nil {
		return fmt.Errorf("target resolution: %w", err)
	}
	return nil
}

// agentRun runs the engine's benchmark run on pg at url once in a new
// context, driven by the scripted controller, or, with replay, following
// replay strictly (the controller is there to be counted, not called).
// It fails unless the run completed with every action successful.
func agentRun(ctx context.Context, p *pool.Pool, url string, pg Page, actions int, replay *trace.Trace) (runner.Result, *engineSink, error) {
	lease, err := p.Lease(ctx, browser.SessionOptions{})
	if err != nil {
		return runner.Result{}, nil, fmt.Errorf("lease: %w", err)
	}
	b := &leasedBrowser{pool: p, lease: lease}
	defer b.release()
	rec := &engineSink{}
	params := runner.Params{
		Goal: fmt.Sprintf("Benchmark: on this page, alternately click %s and fill the first text field, %d actions in all, then complete the task.",
			pg.Click, actions),
		StartURL:               url,
		Policy:                 loopbackPolicy{},
		MaxSteps:               actions + 1,
		ScreenshotHistoryDepth: engineScreenshotDepth,
		Controller:             scriptedController(pg.Click, actions),
		JudgeStrategy:          runner.JudgeHeuristic,
		Judge:                  &judge.Heuristic{},
	}
	if replay != nil {
		params.Replay = &runner.Replay{Trace: replay, Strict: true}
	}
	res, err := (&runner.Runner{}).Run(ctx, b, params, rec)
	if err != nil {
		return res, rec, err
	}
	if res.Status != runner.StatusCompleted {
		msg := "the run ended " + res.Status.String()
		if res.Err != nil {
			msg += ": " + res.Err.Error()
		}
		return res, rec, errors.New(msg)
	}
	steps, _ := rec.recorded()
	for _, st := range steps {
		for _, a := range st.Actions {
			if a.Outcome != "ok" {
				return res, rec, fmt.Errorf("step %d: %s: %s %s", st.Number, a.Tool, a.Outcome, a.Message)
			}
		}
	}
	return res, rec, nil
}

// timeResolve opens url in a new context and, rounds times, finds every
// target of tr again as a replay does (runner's resolveTarget) on a fresh
// snapshot, timing both ways apart: the exact-ref check, and the match by
// fingerprint (trace.Shortlist, one ElementDetails call, trace.Match) a
// replay falls back to. Every match must be confident and at its recorded
// ref: the page is the one the trace was recorded on, as loaded.
func timeResolve(ctx context.Context, p *pool.Pool, url string, tr *trace.Trace, rounds int, s *replaySamples) error {
	lease, err := p.Lease(ctx, browser.SessionOptions{})
	if err != nil {
		return fmt.Errorf("lease: %w", err)
	}
	defer lease.Release()
	page, err := lease.Session().NewPage(ctx, browser.PageOptions{})
	if err != nil {
		return fmt.Errorf("open page: %w", err)
	}
	if err := page.Navigate(ctx, url, navigationTimeout); err != nil {
		return err
	}
	for range rounds {
		// The runner's snapshot options for a controller that is not the
		// offline step list.
		snap, err := page.Snapshot(ctx, browser.SnapshotOptions{})
		if err != nil {
			return fmt.Errorf("snapshot: %w", err)
		}
		for i, a := range tr.Actions {
			if a.Target == nil {
				continue
			}
			fp := *a.Target
			begin := time.Now()
			held := trace.AtRecordedRef(fp, snap)
			s.exactRef = append(s.exactRef, time.Since(begin))
			s.targets++
			if held {
				s.exactHeld++
			}

			begin = time.Now()
			refs := trace.Shortlist(fp, snap, 0)
			details, err := page.ElementDetails(ctx, refs...)
			if err != nil {
				return fmt.Errorf("action %d: element details: %w", i+1, err)
			}
			m := trace.Match(fp, snap, details)
			s.relocate = append(s.relocate, time.Since(begin))
			if !m.Confident || m.Ref != fp.Ref {
				return fmt.Errorf("action %d (%s %s): recorded at %s, matched at %s: %s", i+1, a.Tool, describe(fp), fp.Ref, m.Ref, m.Reason)
			}
		}
	}
	return nil
}

// describe names a fingerprint by role and name.
func describe(fp trace.Fingerprint) string { return fmt.Sprintf("%s %q", fp.Role, fp.Name) }
