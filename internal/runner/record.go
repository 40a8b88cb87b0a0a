package runner

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/wayfinder/wayfinder/internal/browser"
	"github.com/wayfinder/wayfinder/internal/trace"
)

// Recording (issue 8): every successful action is kept with the page it was
// taken on and, for an element action, a fingerprint of its target read
// just before it ran, so a completed run leaves a replayable trace
// (Result.Trace).

// captureTimeout bounds reading a target's DOM details before an action
// (the median read takes 2.5 ms).
const captureTimeout = time.Second

// captureTarget describes the page an action is about to run on and, when
// act aims at an element by ref, fingerprints it: one ElementDetails call.
// A failure to capture never stops the action: the returned action then
// says why in TargetError.
func (ru *run) captureTarget(ctx context.Context, act browser.Action) trace.Action {
	ta := trace.Action{Step: ru.step}
	snap := ru.acting
	if snap != nil {
		ta.Page, ta.URL = trace.PageSignature(snap), snap.Page.URL
	}
	ref := act.Ref
	if ref == "" && act.Target != nil && act.Target.Point == nil {
		// A description by role and name is fingerprinted as the one
		// element of the snapshot it names, if it names exactly one.
		if ref = describedRef(snap, act.Target); ref == "" {
			ta.TargetError = "aimed by a target description that names no single element of the snapshot"
			return ta
		}
	}
	if ref == "" {
		return ta
	}
	if snap == nil || ru.page == nil || snap.ID != ru.page.SnapshotID() {
		ta.TargetError = "the snapshot the ref belongs to is not at hand"
		return ta
	}
	// Bounded apart from the action's own deadline: a slow page costs the
	// trace a fingerprint, never the action its time.
	cctx, cancel := context.WithTimeout(ctx, captureTimeout)
	defer cancel()
	ds, err := ru.page.ElementDetails(cctx, ref)
	d, ok := ds[ref]
	switch {
	case err != nil:
		ta.TargetError = "no DOM details: " + err.Error()
	case !ok:
		ta.TargetError = "no DOM details: the element left the page"
	}
	fp, err := trace.Capture(snap, ref, d)
	if err != nil {
		ta.TargetError = err.Error()
		return ta
	}
	ta.Target = &fp
	return ta
}

// describedRef is the ref of the one element of snap whose accessible name
// is t's name (case and surrounding space aside) and, when t has one, whose
// role is t's role; "" when t is not by role and name or names no single
// element.
func describedRef(snap *browser.Snapshot, t *browser.Target) string {
	if snap == nil || t.Name == "" || t.CSS != "" || t.Text != "" {
		return ""
	}
	name := strings.TrimSpace(t.Name)
	found := ""
	for _, e := range snap.Elements {
		if !strings.EqualFold(strings.TrimSpace(e.Name), name) || (t.Role != "" && !strings.EqualFold(e.Role, t.Role)) {
			continue
		}
		if found != "" {
			return ""
		}
		found = e.Ref
	}
	return found
}

// recordAction keeps ta, the capture of an action that succeeded, with its
// arguments and the URL it led to.
func (ru *run) recordAction(ta trace.Action, tool string, args map[string]any, res *browser.ActionResult) {
	if ru.noTrace != "" {
		return
	}
	ta.Tool, ta.Arguments = tool, traceArgs(args)
	if res != nil {
		ta.URLAfter = res.URL
		if ta.URLAfter == "" && res.Snapshot != nil {
			ta.URLAfter = res.Snapshot.Page.URL
		}
	}
	ru.tr = append(ru.tr, ta)
}

// traceArgs are the arguments a trace keeps: the call's, without the
// model's commentary. Secrets are placeholders already (the model never
// sees their values); the whole trace is redacted again at the end.
func traceArgs(args map[string]any) map[string]any {
	out := make(map[string]any, len(args))
	for k, v := range args {
		if k == "reasoning" || k == confidenceArgument {
			continue
		}
		out[k] = v
	}
	return out
}

// stopTrace records why the run cannot leave a replayable trace.
func (ru *run) stopTrace(why string) {
	if ru.noTrace == "" {
		ru.noTrace = why
		ru.tr = nil
	}
}

// finalTrace is the run's trace when res completes it, nil otherwise.
// Every text in it is redacted.
func (ru *run) finalTrace(res Result) *trace.Trace {
	if res.Status != StatusCompleted || ru.noTrace != "" {
		return nil
	}
	if ru.humanSteps > 0 {
		return nil // a person's actions are not on record as actions
	}
	t := &trace.Trace{Format: trace.FormatVersion, Goal: ru.p.Goal, StartURL: ru.p.StartURL,
		Actions: append([]trace.Action{}, ru.tr...)}
	t.Final.Reason = res.Reason
	// What a model-driven run of the path costs: this run's controller
	// calls, or for a healed replay those of the path it healed.
	t.Model = ru.ctrl
	if ru.rp != nil {
		t.Model = ru.rp.p.Trace.Model
	}
	if ru.obs != nil {
		t.Final.URL, t.Final.Page = ru.obs.url, trace.PageSignature(ru.obs.snap)
	}
	v := res.Verdict
	if v == nil {
		v = ru.verdict
	}
	if v != nil {
		t.Final.Verdict = &trace.Verdict{Done: v.Done, Confidence: v.Confidence, Reason: v.Reason, Source: v.Source}
	}
	for _, c := range ru.criteria {
		t.Final.Criteria = append(t.Final.Criteria, trace.Criterion{Name: indicatorName(c.Indicator),
			Kind: string(c.Indicator.Kind), Value: c.Indicator.Value, Set: string(c.Set), Matched: c.Matched, Err: c.Err})
	}
	return ru.redactTrace(t)
}

// redactTrace redacts every string of t, through its JSON form so that no
// field is missed.
func (ru *run) redactTrace(t *trace.Trace) *trace.Trace {
	if !ru.redact.Active() {
		return t
	}
	b, err := json.Marshal(t)
	if err != nil {
		return nil
	}
	var out trace.Trace
	if err := json.Unmarshal(ru.redact.Bytes(b), &out); err != nil {
		// Redaction only replaces text with text; a trace that no longer
		// decodes is not kept rather than kept unredacted.
		return nil
	}
	return &out
}
