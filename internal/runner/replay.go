package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/wayfinder/wayfinder/internal/llm"
	"github.com/wayfinder/wayfinder/internal/trace"
)

// Replay (issue 8): a run given a recorded trace executes its actions
// without asking the controller. Each action waits for the page it expects
// (trace.Signature), its target is found again by its fingerprint (the
// recorded ref when it still names the same element, else the best
// confident match), and it runs through the same path as a model's tool
// call: the navigation guard, hooks, secrets, checkpoints and the record.
// After the last action the run claims success and the run's completion
// criteria and judge verify the claim as they would a model's. Where the
// page no longer matches, the run diverges: a strict replay ends
// (CategoryReplayDiverged); otherwise the controller takes over from that
// step with what was replayed and the rest of the recorded path as context
// (self-heal), and the run's trace is a new version of the path.

// CategoryReplayDiverged: a strict replay could not follow its trace.
const CategoryReplayDiverged Category = "replay_diverged"

// ActorReplay is the actor of a step the replay took without a model.
const ActorReplay = "replay"

// Defaults of Replay.
const (
	// DefaultPageWait bounds waiting for the page an action expects.
	DefaultPageWait = 10 * time.Second
	// pagePoll is how often the page is looked at again while waiting.
	pagePoll = 250 * time.Millisecond
	// resolveTimeout bounds reading the shortlisted elements' details.
	resolveTimeout = 5 * time.Second
	// maxHealHint bounds the recorded actions a self-heal tells the model.
	maxHealHint = 30
)

// Replay asks a run to follow a recorded trace (Params.Replay).
type Replay struct {
	// Trace is the path to follow; its actions' arguments hold secrets as
	// placeholders, filled in as a model's would be.
	Trace *trace.Trace
	// Strict ends the run (StatusError, CategoryReplayDiverged) where it
	// diverges, instead of handing it to the controller.
	Strict bool
	// PageWait bounds waiting for the page an action expects. Default
	// DefaultPageWait.
	PageWait time.Duration
}

// ReplayReport is what a run's replay did (Result.Replay).
type ReplayReport struct {
	// Replayed counts the trace's actions executed without a model.
	Replayed int
	// Relocated counts those whose target was not at its recorded ref and
	// was found by its fingerprint.
	Relocated int
	// DivergedAt is the step at which the run left the trace, 0 when it
	// did not; Divergence says why.
	DivergedAt int
	Divergence string
	// Healed: the controller took over at DivergedAt (not strict).
	Healed bool
	// Controller is what this run's controller calls spent.
	Controller trace.Usage
}

// replayState is the state of a run's replay.
type replayState struct {
	p         Replay
	next      int  // index of the next action of the trace
	following bool // the replay still drives the run
	claimed   bool // the end of the trace was reached and success claimed
	// failed is why the last replayed action did not succeed.
	failed *divergence
	// acted and moved: the current step's replayed action, counted in
	// the report, and whether its target was relocated.
	acted, moved bool
	report       ReplayReport
}

// divergence is why a replay cannot take its next action.
type divergence struct {
	why string
	// step is the step it happened at, when not the current one (an
	// action that failed in the step before).
	step int
}

// replaying says whether the replay drives the run's next turn.
func (ru *run) replaying() bool { return ru.rp != nil && ru.rp.following }

// replayAnswer is the replay's tool call for the current step, as if the
// controller had answered with it; nil with a divergence when the replay
// cannot go on.
func (ru *run) replayAnswer() (*llm.Response, *divergence) {
	rp := ru.rp
	rp.acted, rp.moved = false, false
	if rp.failed != nil {
		return nil, rp.failed
	}
	if ru.humanSteps > 0 {
		return nil, &divergence{why: "a person took over the browser"}
	}
	if g := ru.cps.guard; g >= 0 {
		// A rejection stops the replay: only a model may look for another
		// path, and the human is not asked again for the recorded one.
		name := ru.p.Checkpoints[g].Name
		if name == "" {
			name = fmt.Sprintf("checkpoint %d", g+1)
		}
		return nil, &divergence{why: "a human rejected continuing at the checkpoint " + strconvQuote(name)}
	}
	if rp.claimed {
		return nil, &divergence{why: "the goal was not confirmed at the end of the recorded path"}
	}
	if ru.obs == nil || ru.page == nil {
		return nil, &divergence{why: "the page is not at hand"}
	}
	// Custom tools, get_snapshot, complete_task, request_human_approval
	// and anything else that is not a browser action are not replayed.
	for rp.next < len(rp.p.Trace.Actions) && !isBrowserTool(rp.p.Trace.Actions[rp.next].Tool) {
		rp.next++
	}
	if rp.next >= len(rp.p.Trace.Actions) {
		return ru.replayClaim()
	}
	a := rp.p.Trace.Actions[rp.next]
	if d := ru.awaitPage(a.Page, fmt.Sprintf("action %d (%s)", rp.next+1, a.Tool)); d != nil {
		return nil, d
	}
	args := make(map[string]any, len(a.Arguments)+1)
	for k, v := range a.Arguments {
		args[k] = v
	}
	_, hasRef := args["ref"]
	switch {
	case a.Target != nil:
		ref, relocated, d := ru.resolveTarget(*a.Target)
		if d != nil {
			return nil, &divergence{why: fmt.Sprintf("action %d (%s %s): %s", rp.next+1, a.Tool, describeTarget(*a.Target), d.why)}
		}
		// The element found stands for the recorded ref or description.
		args["ref"] = ref
		delete(args, "target")
		if relocated {
			rp.report.Relocated++
			rp.moved = true
		}
	case hasRef || a.TargetError != "":
		// An element action without a fingerprint (a ref, or a description
		// that named no single element): which element it was is unknown.
		why := a.TargetError
		if why == "" {
			why = "no fingerprint was recorded"
		}
		return nil, &divergence{why: fmt.Sprintf("action %d (%s): its target cannot be found again: %s", rp.next+1, a.Tool, why)}
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, &divergence{why: fmt.Sprintf("action %d (%s): %v", rp.next+1, a.Tool, err)}
	}
	rp.next++
	rp.report.Replayed++
	rp.acted = true
	// Redacted as a model's answer is: a value of the trace that is a
	// secret of this run becomes its placeholder, typed only on its domains.
	return ru.redact.Response(&llm.Response{
		Text:      fmt.Sprintf("Replaying action %d of %d of the recorded path.", rp.next, len(rp.p.Trace.Actions)),
		ToolCalls: []llm.ToolCall{{ID: fmt.Sprintf("replay_%d", rp.next), Name: a.Tool, Arguments: raw}},
	}), nil
}

// replayClaim ends the recorded path: the final page must be the one the
// recording ended on, then success is claimed for the criteria and the
// judge to verify.
func (ru *run) replayClaim() (*llm.Response, *divergence) {
	rp := ru.rp
	if d := ru.awaitPage(rp.p.Trace.Final.Page, "the final page"); d != nil {
		return nil, d
	}
	rp.claimed = true
	reason := rp.p.Trace.Final.Reason
	if reason == "" {
		reason = "the recorded path was replayed"
	}
	raw, err := json.Marshal(map[string]any{"status": "success", "reason": reason})
	if err != nil {
		return nil, &divergence{why: err.Error()}
	}
	return ru.redact.Response(&llm.Response{
		Text:      "The recorded path was replayed; claiming the goal for verification.",
		ToolCalls: []llm.ToolCall{{ID: "replay_done", Name: ToolComplete, Arguments: raw}},
	}), nil
}

// awaitPage waits, up to the replay's PageWait, for the page to be the
// kind of page want describes; what for names the step in the divergence.
// A zero signature (not recorded) matches any page.
func (ru *run) awaitPage(want trace.Signature, what string) *divergence {
	if want.URLPattern == "" && want.Structure == "" {
		return nil
	}
	ok, sim := want.Matches(trace.PageSignature(ru.obs.snap))
	if ok {
		return nil
	}
	wait := ru.rp.p.PageWait
	if wait <= 0 {
		wait = DefaultPageWait
	}
	deadline := time.Now().Add(wait)
	begin := time.Now()
	defer func() { ru.rec.Timings.Snapshot += time.Since(begin) }()
	for time.Now().Before(deadline) {
		select {
		case <-ru.ctx.Done():
			return &divergence{why: "the run was interrupted"}
		case <-time.After(pagePoll):
		}
		bctx, cancel := ru.browserCtx()
		sctx, scancel := context.WithTimeout(bctx, ru.p.ActionTimeout)
		snap, err := ru.page.Snapshot(sctx, ru.snapshotOptions())
		scancel()
		cancel()
		if err != nil {
			continue
		}
		if ok, sim = want.Matches(trace.PageSignature(snap)); ok {
			ru.takeObservation(snap)
			return nil
		}
	}
	// The page as it is now is what the controller (or the record) sees.
	ru.takeObservation(nil)
	return &divergence{why: fmt.Sprintf("%s expects the page %s, the browser shows %s (similarity %.2f after %s)",
		what, want.URLPattern, trace.URLPattern(ru.obs.url), sim, wait)}
}

// resolveTarget finds fp on the current snapshot: at its recorded ref when
// the snapshot shows the same element there (trace.AtRecordedRef), else by
// one details read of the shortlisted elements and trace.Match. relocated
// says the element is not at its recorded ref.
func (ru *run) resolveTarget(fp trace.Fingerprint) (ref string, relocated bool, d *divergence) {
	snap := ru.acting
	if snap == nil || snap.ID != ru.page.SnapshotID() {
		snap = ru.obs.snap
	}
	if trace.AtRecordedRef(fp, snap) {
		return fp.Ref, false, nil // the exact-ref match: no details read
	}
	refs := trace.Shortlist(fp, snap, 0)
	bctx, cancel := ru.browserCtx()
	dctx, dcancel := context.WithTimeout(bctx, resolveTimeout)
	details, err := ru.page.ElementDetails(dctx, refs...)
	dcancel()
	cancel()
	if err != nil {
		details = nil // scored on the snapshot's features alone
	}
	res := trace.Match(fp, snap, details)
	if !res.Confident {
		why := "no element matches its fingerprint with confidence: " + res.Reason
		if len(res.Runners) > 0 {
			var alt []string
			for _, c := range res.Runners {
				alt = append(alt, fmt.Sprintf("%s %q %.2f", c.Role, c.Name, c.Score))
			}
			why += " (best " + fmt.Sprintf("%.2f", res.Score) + "; next: " + strings.Join(alt, ", ") + ")"
		}
		return "", false, &divergence{why: why}
	}
	return res.Ref, res.Ref != fp.Ref, nil
}

// describeTarget names a fingerprint for a person: its role and name.
func describeTarget(fp trace.Fingerprint) string {
	if fp.Name != "" {
		return fmt.Sprintf("%s %q", fp.Role, fp.Name)
	}
	return fp.Role
}

// replayOutcome is checked after a replayed step: an action that did not
// succeed is a divergence at the next step, and not counted as replayed.
func (ru *run) replayOutcome() *divergence {
	rp := ru.rp
	for _, a := range ru.rec.Actions {
		if a.Tool != ToolComplete && a.Outcome != "ok" {
			d := &divergence{why: fmt.Sprintf("action %d (%s) failed: %s %s", rp.next, a.Tool, a.Outcome, a.Message), step: ru.step}
			if rp.acted {
				rp.report.Replayed--
				if rp.moved {
					rp.report.Relocated--
				}
				rp.acted, rp.moved = false, false
				rp.next-- // not done: the model is told to do it
			}
			return d
		}
	}
	return nil
}

// diverge leaves the trace at the current step. A strict replay ends the
// run; otherwise the controller takes over from here with the replayed
// steps in its history and the rest of the recorded path as a hint.
func (ru *run) diverge(d *divergence) (Result, bool) {
	rp := ru.rp
	rp.following = false
	at := ru.step
	if d.step > 0 {
		at = d.step
	}
	rp.report.DivergedAt, rp.report.Divergence = at, d.why
	if rp.p.Strict {
		ru.rec.Actor = ActorReplay
		return Result{Status: StatusError, Err: &Error{Category: CategoryReplayDiverged, Step: at,
			Message: fmt.Sprintf("the replay diverged from its trace at step %d: %s", at, d.why)}}, true
	}
	rp.report.Healed = true
	ru.rec.Actor = "model"
	var b strings.Builder
	fmt.Fprintf(&b, "This run was replaying a recorded path to the goal without a model. At step %d it left the path: %s. Continue from the current page yourself.", at, d.why)
	if rest := rp.p.Trace.Actions[min(rp.next, len(rp.p.Trace.Actions)):]; len(rest) > 0 {
		b.WriteString(" The recorded path went on with these actions (the page may have changed since; use them as a guide, not as refs):")
		for i, a := range rest[:min(len(rest), maxHealHint)] {
			fmt.Fprintf(&b, "\n%d. %s", i+1, describeAction(a))
		}
		if len(rest) > maxHealHint {
			fmt.Fprintf(&b, "\n(and %d more)", len(rest)-maxHealHint)
		}
	}
	if ru.obs != nil {
		// The page may have changed since the snapshot in the history (a
		// wait for the expected page ends with a new one): refs are these.
		b.WriteString("\nThe page now:\n" + untrusted(ru.obs.text))
	}
	ru.pending = append(ru.pending, b.String())
	return Result{}, false
}

// describeAction is one recorded action in words, for the controller.
func describeAction(a trace.Action) string {
	var b strings.Builder
	b.WriteString(a.Tool)
	if a.Target != nil {
		b.WriteString(" " + describeTarget(*a.Target))
	}
	for _, k := range []string{"value", "url", "keys", "text", "direction", "action"} {
		if v, ok := a.Arguments[k].(string); ok && v != "" {
			fmt.Fprintf(&b, " %s=%q", k, truncate(v, 80))
		}
	}
	if a.Page.URLPattern != "" {
		b.WriteString(" on " + a.Page.URLPattern)
	}
	return b.String()
}
