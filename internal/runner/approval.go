package runner

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/wayfinder/wayfinder/internal/browser"
	"github.com/wayfinder/wayfinder/internal/llm"
)

// Sources of approval requests (ApprovalRequest.Source).
const (
	// SourceModel: the model called request_human_approval.
	SourceModel = "model"
	// SourceCheckpoint: a server-side checkpoint matched the page.
	SourceCheckpoint = "checkpoint"
	// SourceConsent: the consent policy ASK met a cookie banner.
	SourceConsent = "consent"
)

// ApprovalRequest is a pause for a human decision.
type ApprovalRequest struct {
	// Source is SourceModel, SourceCheckpoint or SourceConsent.
	Source string
	// Action is what the run wants to do (the model's words, the
	// checkpoint's name); Reason why it needs approval.
	Action, Reason string
	// Step, URL and Screenshot (PNG, nil when none) are filled in by the
	// runner: the page as the human should see it.
	Step       int
	URL        string
	Screenshot []byte
}

// ApprovalAnswer is a human's decision, or what the run's approval timeout
// policy made of none.
type ApprovalAnswer struct {
	Approved bool
	// Message is the human's message (for a rejection, what to do
	// instead), or why there was no answer.
	Message string
	// TimedOut: nobody answered in time.
	TimedOut bool
	// End, when set, ends the run with this status (StatusFailed or
	// StatusCancelled) and Message as its reason: the timeout policies
	// FAIL and CANCEL.
	End Status
}

// Approvals is implemented by sinks that can pause a run for a human and
// keep the pause when the run moves to another worker. The runner prefers
// it to Approver.
type Approvals interface {
	// RequestApproval pauses the run until a human answers req (or the
	// run's approval timeout policy does). While it waits, no action runs.
	RequestApproval(ctx context.Context, req ApprovalRequest) (ApprovalAnswer, error)
	// ResumeApproval is called once when a run starts, after the start
	// page opened: when the run was paused for a human as its previous
	// worker stopped, it waits for that same request (the human is not
	// asked again) and returns it with its answer; ok is false when there
	// was none.
	ResumeApproval(ctx context.Context) (req ApprovalRequest, ans ApprovalAnswer, ok bool, err error)
}

// Approver is implemented by sinks that can pause a run for a human
// decision; Approvals is the fuller form.
type Approver interface {
	// Approve asks a human and returns their answer.
	Approve(ctx context.Context, step int, action, reason string) (approved bool, message string, err error)
}

// approverAdapter serves Approvals with a plain Approver.
type approverAdapter struct{ Approver }

func (a approverAdapter) RequestApproval(ctx context.Context, req ApprovalRequest) (ApprovalAnswer, error) {
	ok, msg, err := a.Approve(ctx, req.Step, req.Action, req.Reason)
	return ApprovalAnswer{Approved: ok, Message: msg}, err
}

func (approverAdapter) ResumeApproval(context.Context) (ApprovalRequest, ApprovalAnswer, bool, error) {
	return ApprovalRequest{}, ApprovalAnswer{}, false, nil
}

// sinkApprovals returns the sink's way to ask a human, nil when it has none.
func sinkApprovals(sink Sink) Approvals {
	if a, ok := sink.(Approvals); ok {
		return a
	}
	if a, ok := sink.(Approver); ok {
		return approverAdapter{a}
	}
	return nil
}

// errNoApprover: nobody can answer approval requests for this run.
var errNoApprover = errors.New("no human can approve actions for this run")

// runKey is the context key under which the run's hooks find their run.
type runKey struct{}

// AskHuman pauses the run that ctx belongs to (the context the runner hands
// its Hooks) for a human decision, like request_human_approval: the request
// is recorded with the run's current step and page, and an answer whose
// timeout policy ends the run ends it once the hook returns. Outside a run,
// or when the run has nobody to ask, the answer is a rejection.
func AskHuman(ctx context.Context, req ApprovalRequest) (ApprovalAnswer, error) {
	ru, ok := ctx.Value(runKey{}).(*run)
	if !ok {
		return ApprovalAnswer{Message: errNoApprover.Error()}, nil
	}
	ans, err := ru.requestApproval(ctx, req)
	if errors.Is(err, errNoApprover) {
		return ans, nil
	}
	return ans, err
}

// requestApproval asks the run's human. The request carries the current
// step and page; an answer that ends the run is kept in ru.ended.
func (ru *run) requestApproval(ctx context.Context, req ApprovalRequest) (ApprovalAnswer, error) {
	if ru.approvals == nil {
		return ApprovalAnswer{Message: errNoApprover.Error()}, errNoApprover
	}
	req.Step = ru.step
	req.URL = ru.lastURL
	if ru.obs != nil {
		req.URL, req.Screenshot = ru.obs.url, ru.obs.png
	}
	req.Action, req.Reason, req.URL = ru.redact.String(req.Action), ru.redact.String(req.Reason), ru.redact.String(req.URL)
	ans, err := ru.approvals.RequestApproval(ctx, req)
	ans.Message = ru.redact.String(ans.Message)
	if err == nil && ans.End != 0 && ru.ended == nil {
		ru.ended = &Result{Status: ans.End, Reason: ans.Message}
	}
	return ans, err
}

// Checkpoint pauses the run for a human when the page after an action
// matches every condition it sets (at least one): the page URL, the page
// title, an element of the snapshot by role and accessible name.
type Checkpoint struct {
	// Name is shown to the approver.
	Name string
	// URL and Title match the page's URL and title; nil sets no
	// condition.
	URL, Title *regexp.Regexp
	// An element of the page whose role equals ElementRole (when set) and
	// whose accessible name matches ElementName (when set).
	ElementRole string
	ElementName *regexp.Regexp
	// Repeat triggers the checkpoint every time it matches; by default
	// it triggers once per run (once approved).
	Repeat bool
}

// matches reports whether the page of snap meets every condition of c.
func (c *Checkpoint) matches(snap *browser.Snapshot) bool {
	if snap == nil || (c.URL == nil && c.Title == nil && c.ElementRole == "" && c.ElementName == nil) {
		return false
	}
	if c.URL != nil && !c.URL.MatchString(snap.Page.URL) {
		return false
	}
	if c.Title != nil && !c.Title.MatchString(snap.Page.Title) {
		return false
	}
	if c.ElementRole == "" && c.ElementName == nil {
		return true
	}
	for _, e := range snap.Elements {
		if (c.ElementRole == "" || strings.EqualFold(e.Role, c.ElementRole)) &&
			(c.ElementName == nil || c.ElementName.MatchString(e.Name)) {
			return true
		}
	}
	return false
}

// checkpointState is what a run knows of its checkpoints: which were
// approved (and so, unless they repeat, are done), and which was rejected
// on the page the browser still shows.
type checkpointState struct {
	approved map[int]bool
	// guard is the index of a rejected checkpoint whose page the browser
	// still shows, -1 for none: actions that act on that page need a
	// human's approval first, so a rejection cannot be walked past.
	guard int
}

// checkpoints evaluates the run's checkpoints on the page after an action
// and pauses the run at the first that matches. done is true when the
// run ends there (interrupted, or the timeout policy ended it).
func (ru *run) checkpoints() (Result, bool) {
	if len(ru.p.Checkpoints) == 0 || ru.obs == nil {
		return Result{}, false
	}
	if g := ru.cps.guard; g >= 0 && !ru.p.Checkpoints[g].matches(ru.obs.snap) {
		ru.cps.guard = -1 // the rejected page is gone
	}
	for i := range ru.p.Checkpoints {
		c := &ru.p.Checkpoints[i]
		if (ru.cps.approved[i] && !c.Repeat) || ru.cps.guard == i || !c.matches(ru.obs.snap) {
			continue
		}
		return ru.pauseAt(i, "", nil)
	}
	return Result{}, false
}

// atCheckpoint reports whether snap (an action's snapshot, nil when there
// is none) may meet a checkpoint that would pause the run, so that no
// further action of the turn runs before it is evaluated.
func (ru *run) atCheckpoint(snap *browser.Snapshot) bool {
	if len(ru.p.Checkpoints) == 0 {
		return false
	}
	if snap == nil {
		return true
	}
	for i := range ru.p.Checkpoints {
		c := &ru.p.Checkpoints[i]
		if (!ru.cps.approved[i] || c.Repeat) && c.matches(snap) {
			return true
		}
	}
	return false
}

// pauseAt asks the human at checkpoint i. action, when set, is the action
// the model wants to take on the checkpoint's page after it was rejected;
// then a rejection is answered to that call through refuse.
func (ru *run) pauseAt(i int, action string, refuse func(msg string)) (Result, bool) {
	c := &ru.p.Checkpoints[i]
	name := c.Name
	if name == "" {
		name = fmt.Sprintf("checkpoint %d", i+1)
	}
	req := ApprovalRequest{Source: SourceCheckpoint, Action: name,
		Reason: "the page matches the run's checkpoint " + strconvQuote(name) + "; the run continues only when a human approves"}
	if action != "" {
		req.Action = action
		req.Reason = "the checkpoint " + strconvQuote(name) + " was rejected on this page and the model wants to act on it anyway"
	}
	begin := time.Now()
	ans, err := ru.requestApproval(ru.ctx, req)
	rec := Action{Tool: toolCheckpoint, Arguments: map[string]any{"checkpoint": name}, Outcome: "ok", Message: ans.Message, Duration: time.Since(begin)}
	if action != "" {
		rec.Arguments["action"] = action
	}
	if ru.ctx.Err() != nil {
		rec.Outcome, rec.Message = string(browser.CodeActionFailed), "interrupted while awaiting approval"
		ru.rec.Actions = append(ru.rec.Actions, rec)
		return Result{Status: StatusInterrupted}, true
	}
	if err != nil {
		ans = ApprovalAnswer{Message: ru.redact.String(err.Error())}
	}
	if !ans.Approved {
		rec.Outcome = humanRejected
	}
	ru.rec.Actions = append(ru.rec.Actions, rec)
	if ru.ended != nil {
		return *ru.ended, true
	}
	if ans.Approved {
		ru.cps.approved[i] = true
		if ru.cps.guard == i {
			ru.cps.guard = -1
		}
		note := "Checkpoint " + strconvQuote(name) + ": a human approved continuing on this page."
		if ans.Message != "" {
			note += " Their message: " + ans.Message
		}
		ru.pending = append(ru.pending, note)
		return Result{}, false
	}
	ru.cps.guard = i
	feedback := rejectionMessage(ans)
	if refuse != nil {
		refuse(feedback)
		return Result{}, false
	}
	ru.pending = append(ru.pending, fmt.Sprintf("Checkpoint %s: human_rejected. A human must approve before the run acts on this page, and they declined. %s Do not act on this page; take another path, or call complete_task with status failed if there is none.",
		strconvQuote(name), feedback))
	return Result{}, false
}

// guarded asks the human again when the model wants to act on the page of
// a rejected checkpoint. It returns false when the action must not run
// (refuse has answered the call) and done when the run ends.
func (ru *run) guarded(tool string, a toolArgs, refuse func(msg string)) (allowed bool, res Result, done bool) {
	g := ru.cps.guard
	if g < 0 || !actsOnPage(tool) {
		return true, Result{}, false
	}
	if ru.obs == nil || !ru.p.Checkpoints[g].matches(ru.obs.snap) {
		ru.cps.guard = -1
		return true, Result{}, false
	}
	refused := false
	res, done = ru.pauseAt(g, summarize(tool, a, "requested"), func(msg string) { refused = true; refuse(msg) })
	return !refused && !done, res, done
}

// actsOnPage reports whether a browser tool changes the page's state (and
// so needs approval on a rejected checkpoint's page); reading, scrolling
// and leaving the page do not.
func actsOnPage(tool string) bool {
	switch tool {
	case ToolClick, ToolFill, ToolSelect, ToolPressKey, ToolCheck, ToolType, ToolClickAt:
		return true
	}
	return false
}

// resumeApproval waits, when the run was paused for a human as its previous
// worker stopped, for that request's answer, and tells the model what it
// was. done is true when the run ends there.
func (ru *run) resumeApproval() (Result, bool) {
	if ru.approvals == nil {
		return Result{}, false
	}
	req, ans, ok, err := ru.approvals.ResumeApproval(ru.ctx)
	if ru.ctx.Err() != nil {
		return Result{Status: StatusInterrupted}, true
	}
	if err != nil || !ok {
		return Result{}, false
	}
	ans.Message = ru.redact.String(ans.Message)
	if ans.End != 0 {
		return Result{Status: ans.End, Reason: ans.Message}, true
	}
	what := "your request_human_approval for " + strconvQuote(req.Action)
	if req.Source == SourceCheckpoint {
		what = "the checkpoint " + strconvQuote(req.Action)
		for i := range ru.p.Checkpoints {
			if ru.p.Checkpoints[i].Name == req.Action {
				if ans.Approved {
					ru.cps.approved[i] = true
				}
			}
		}
	}
	note := "Before the run was resumed it was paused for a human at " + what + ": "
	if ans.Approved {
		note += "approved."
		if ans.Message != "" {
			note += " Their message: " + ans.Message
		}
	} else {
		note += "human_rejected. " + rejectionMessage(ans)
	}
	ru.pending = append(ru.pending, ru.redact.String(note))
	return Result{}, false
}

// approval answers request_human_approval.
func (ru *run) approval(t *turn, call llm.ToolCall, a toolArgs, args map[string]any, out *executed) {
	begin := time.Now()
	ans, err := ru.requestApproval(ru.ctx, ApprovalRequest{Source: SourceModel, Action: a.Action, Reason: a.Reason})
	if errors.Is(err, errNoApprover) {
		ru.rec.Actions = append(ru.rec.Actions, Action{Tool: call.Name, Arguments: args, Outcome: "human_rejected", Message: "no approver"})
		ru.answer(t, call, map[string]any{"approved": false, "error": "human_rejected",
			"message": "No human can approve actions for this run. Do not take the action; find a path that needs no approval or call complete_task with status failed."}, true)
		return
	}
	if ru.ctx.Err() != nil {
		ru.answerError(t, call, args, string(browser.CodeActionFailed), "interrupted while awaiting approval", time.Since(begin))
		out.interrupted = true
		return
	}
	if err != nil {
		ans = ApprovalAnswer{Message: ru.redact.String(err.Error())}
	}
	outcome := "ok"
	body := map[string]any{"approved": ans.Approved, "message": nil}
	if ans.Message != "" {
		body["message"] = ans.Message
	}
	if !ans.Approved {
		outcome = humanRejected
		body["success"] = false
		body["error"] = humanRejected
		body["message"] = rejectionMessage(ans)
	}
	ru.rec.Actions = append(ru.rec.Actions, Action{Tool: call.Name, Arguments: args, Outcome: outcome, Message: ans.Message, Duration: time.Since(begin)})
	t.summary = append(t.summary, summarize(call.Name, a, outcome))
	ru.answer(t, call, body, outcome != "ok")
}

// rejectionMessage is what the model is told of a rejection (seed 002
// §1.6.3: "User feedback: …").
func rejectionMessage(ans ApprovalAnswer) string {
	switch {
	case ans.TimedOut:
		return ans.Message
	case ans.Message != "":
		return "User feedback: " + ans.Message
	}
	return "User feedback: (no message)"
}

// toolCheckpoint names a checkpoint's pause in a step's actions.
const toolCheckpoint = "checkpoint"

func strconvQuote(s string) string { return fmt.Sprintf("%q", s) }

// humanRejected is the outcome (and error code) of a rejected approval.
const humanRejected = "human_rejected"
