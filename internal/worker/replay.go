package worker

import (
	"context"
	"errors"
	"fmt"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/runner"
	"github.com/wayfinder/wayfinder/internal/store"
	"github.com/wayfinder/wayfinder/internal/trace"
)

// replayPlan is what a run's replay parameter asks of this execution.
type replayPlan struct {
	mode wfv1.ReplayMode
	// source is the trace replayed, nil when there is none.
	source *store.Trace
	tr     *trace.Trace
	// report is the run's replay report so far (Run.replay).
	report *wfv1.ReplayReport
	// end, when set, ends the run before it starts.
	end *store.Outcome
}

// replayMode is the run's replay mode, OFF when unset.
func replayMode(p *wfv1.RunParams) wfv1.ReplayMode {
	m := p.GetReplay().GetMode()
	if m == wfv1.ReplayMode_REPLAY_MODE_UNSPECIFIED {
		return wfv1.ReplayMode_REPLAY_MODE_OFF
	}
	return m
}

// planReplay loads the trace run replays: the one it names, else the
// task's pinned, else its newest (store.LatestTrace for key). Nil for a
// run that asked for no replay. A run resumed after a lost worker cannot
// pick up a replay mid-path: a strict one ends, an automatic one goes on
// with the model.
func (w *Worker) planReplay(ctx context.Context, run *wfv1.Run, key string, keyErr error) (*replayPlan, error) {
	mode := replayMode(run.GetParams())
	if mode == wfv1.ReplayMode_REPLAY_MODE_OFF {
		return nil, nil
	}
	strict := mode == wfv1.ReplayMode_REPLAY_MODE_STRICT
	plan := &replayPlan{mode: mode, report: &wfv1.ReplayReport{Mode: mode}}
	diverged := func(why string) (*replayPlan, error) {
		plan.report.Outcome, plan.report.Divergence = wfv1.ReplayOutcome_REPLAY_OUTCOME_DIVERGED, why
		plan.end = &store.Outcome{Status: wfv1.RunStatus_RUN_STATUS_ERROR, Replay: plan.report,
			Error: &wfv1.RunError{Category: wfv1.ErrorCategory_ERROR_CATEGORY_REPLAY_DIVERGED, Message: why}}
		return plan, nil
	}
	var (
		src *store.Trace
		err error
	)
	switch id := run.GetParams().GetReplay().GetTraceId(); {
	case keyErr != nil:
		err = keyErr
	case id != "":
		if src, err = w.cfg.Store.GetTrace(ctx, run.GetTenantId(), id); err == nil && src.Key != key {
			src, err = nil, fmt.Errorf("%w: trace %s is a trace of another task", fault.ErrNotFound, id)
		}
	default:
		src, err = w.cfg.Store.LatestTrace(ctx, run.GetTenantId(), key)
	}
	switch {
	case errors.Is(err, fault.ErrNotFound):
		if strict {
			return diverged("the task has no trace to replay (" + err.Error() + ")")
		}
		plan.report.Outcome = wfv1.ReplayOutcome_REPLAY_OUTCOME_NO_TRACE
		return plan, nil
	case err != nil:
		return nil, fmt.Errorf("load the trace to replay: %w", err)
	}
	plan.report.TraceId, plan.report.TraceVersion = src.RunID, int32(src.Version)
	tr, err := trace.Decode(src.Actions, src.Final)
	if err != nil {
		// A trace this server cannot read is not followed.
		if strict {
			return diverged("the trace cannot be read: " + err.Error())
		}
		plan.report.Outcome = wfv1.ReplayOutcome_REPLAY_OUTCOME_NO_TRACE
		plan.report.Divergence = "the trace cannot be read (" + err.Error() + "); the model ran the task"
		return plan, nil
	}
	if run.GetStepCount() > 0 {
		why := "the run was resumed on another worker; a replay cannot resume partway through its trace"
		if strict {
			return diverged(why)
		}
		plan.report.Outcome, plan.report.Divergence = wfv1.ReplayOutcome_REPLAY_OUTCOME_HEALED, why+"; the model took over"
		plan.report.DivergedAtStep = run.GetStepCount() + 1
		return plan, nil
	}
	plan.source, plan.tr = src, tr
	return plan, nil
}

// runnerReplay is the engine's replay parameter: nil when the run follows
// no trace.
func (p *replayPlan) runnerReplay() *runner.Replay {
	if p == nil || p.tr == nil {
		return nil
	}
	return &runner.Replay{Trace: p.tr, Strict: p.mode == wfv1.ReplayMode_REPLAY_MODE_STRICT}
}

// finish completes the report with what the engine's replay did. It says
// whether the run's trace is to be saved: a run that replayed its whole
// trace learned no new path.
func (p *replayPlan) finish(res runner.Result) (saveTrace bool) {
	if p == nil {
		return true
	}
	r := res.Replay
	if r == nil || p.tr == nil {
		return true // no trace was followed: the model ran the task
	}
	rep := p.report
	rep.ReplayedActions, rep.RelocatedActions = int32(r.Replayed), int32(r.Relocated)
	rep.DivergedAtStep, rep.Divergence = int32(r.DivergedAt), r.Divergence
	switch {
	case r.Healed:
		rep.Outcome = wfv1.ReplayOutcome_REPLAY_OUTCOME_HEALED
	case r.DivergedAt > 0:
		rep.Outcome = wfv1.ReplayOutcome_REPLAY_OUTCOME_DIVERGED
	default:
		rep.Outcome = wfv1.ReplayOutcome_REPLAY_OUTCOME_REPLAYED
	}
	if res.Status == runner.StatusCompleted {
		// What a model-driven run of the path spends, less what this one did.
		rep.ModelCallsSaved = int32(max(0, p.tr.Model.Calls-r.Controller.Calls))
		rep.TokensSaved = max(0, p.tr.Model.Tokens()-r.Controller.Tokens())
	}
	return r.Healed
}

// healedFrom is the trace a healed run's trace heals, "" for none.
func (p *replayPlan) healedFrom() string {
	if p == nil || p.source == nil || p.report.GetOutcome() != wfv1.ReplayOutcome_REPLAY_OUTCOME_HEALED {
		return ""
	}
	return p.source.RunID
}

// finishReplayed finishes the run with o and counts its replay, once the
// outcome is stored (a retried job would otherwise count it twice).
func (w *Worker) finishReplayed(ctx context.Context, runID string, o store.Outcome) (*wfv1.Run, error) {
	final, err := w.cfg.Store.FinishRun(ctx, runID, o)
	if err == nil && o.Replay != nil {
		w.cfg.Metrics.observeReplay(o.Replay)
	}
	return final, err
}

// outcomeLabel is the report's outcome for metrics: "replayed", "healed",
// "diverged", "no_trace".
func outcomeLabel(o wfv1.ReplayOutcome) string {
	switch o {
	case wfv1.ReplayOutcome_REPLAY_OUTCOME_REPLAYED:
		return "replayed"
	case wfv1.ReplayOutcome_REPLAY_OUTCOME_HEALED:
		return "healed"
	case wfv1.ReplayOutcome_REPLAY_OUTCOME_DIVERGED:
		return "diverged"
	case wfv1.ReplayOutcome_REPLAY_OUTCOME_NO_TRACE:
		return "no_trace"
	}
	return "unknown"
}

// modeLabel is "auto" or "strict".
func modeLabel(m wfv1.ReplayMode) string {
	if m == wfv1.ReplayMode_REPLAY_MODE_STRICT {
		return "strict"
	}
	return "auto"
}
