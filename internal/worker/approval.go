package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"time"

	"github.com/riverqueue/river/rivertype"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/browser"
	"github.com/wayfinder/wayfinder/internal/events"
	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/live"
	"github.com/wayfinder/wayfinder/internal/runner"
	"github.com/wayfinder/wayfinder/internal/store"
)

// Approval waits re-read the store this often when no notification came: a
// safety net for missed notifications (with a hub), the only way to learn
// of an answer without one.
const (
	approvalPollWithHub    = 5 * time.Second
	approvalPollWithoutHub = time.Second
)

// approvals pauses a run for a human: the request is stored and the run
// waits AWAITING_APPROVAL until SubmitApproval, on any replica, answers it
// (its notification wakes the wait through the hub), or until the run's
// approval timeout passes.
type approvals struct {
	store *store.Store
	// hub wakes the wait when the run has new events; nil polls only.
	hub   *events.Hub
	runID string
	log   *slog.Logger
	// poll overrides the poll interval (tests). Default by hub.
	poll time.Duration

	// settings are the run's approval settings, loaded once.
	settings *wfv1.ApprovalSettings
	// live, when set, lets a person take the browser while the run waits:
	// the run is idle, so a takeover starts at once, and the run goes on
	// after the answer only once the person has handed the browser back.
	live *live.Session
}

// RequestApproval implements runner.Approvals.
func (a *approvals) RequestApproval(ctx context.Context, req runner.ApprovalRequest) (runner.ApprovalAnswer, error) {
	settings, err := a.loadSettings(ctx)
	if err != nil {
		return runner.ApprovalAnswer{}, err
	}
	var shot *store.Media
	if len(req.Screenshot) > 0 {
		shot = &store.Media{ContentType: "image/png", Data: req.Screenshot}
	}
	open, err := a.store.OpenApproval(ctx, a.runID, &wfv1.ApprovalRequest{
		Source: req.Source, Action: req.Action, Reason: req.Reason, StepNumber: int32(req.Step), Url: req.URL,
	}, shot)
	if err != nil {
		if ctx.Err() != nil {
			// The request may have been stored as ctx ended.
			if open, _ := a.store.PendingApproval(context.WithoutCancel(ctx), a.runID); open != nil {
				a.stopped(ctx, open)
			}
			return runner.ApprovalAnswer{}, context.Cause(ctx)
		}
		return runner.ApprovalAnswer{}, fmt.Errorf("request approval: %w", err)
	}
	a.log.InfoContext(ctx, "awaiting approval", "approval_id", open.Id, "source", open.Source, "step", open.StepNumber)
	return a.wait(ctx, open, settings)
}

// ResumeApproval implements runner.Approvals: the run's open approval, left
// by a worker that stopped while it waited, is waited for again.
func (a *approvals) ResumeApproval(ctx context.Context) (runner.ApprovalRequest, runner.ApprovalAnswer, bool, error) {
	pending, err := a.store.PendingApproval(ctx, a.runID)
	if err != nil || pending == nil {
		return runner.ApprovalRequest{}, runner.ApprovalAnswer{}, false, err
	}
	settings, err := a.loadSettings(ctx)
	if err != nil {
		return runner.ApprovalRequest{}, runner.ApprovalAnswer{}, false, err
	}
	open, err := a.store.OpenApproval(ctx, a.runID, pending, nil)
	if err != nil {
		if ctx.Err() != nil {
			a.stopped(ctx, pending)
			return runner.ApprovalRequest{}, runner.ApprovalAnswer{}, false, context.Cause(ctx)
		}
		return runner.ApprovalRequest{}, runner.ApprovalAnswer{}, false, fmt.Errorf("resume approval: %w", err)
	}
	a.log.InfoContext(ctx, "resumed run awaits its open approval", "approval_id", open.Id, "source", open.Source)
	req := runner.ApprovalRequest{Source: open.Source, Action: open.Action, Reason: open.Reason,
		Step: int(open.StepNumber), URL: open.Url}
	ans, err := a.wait(ctx, open, settings)
	return req, ans, err == nil, err
}

// wait waits for req's answer, its timeout (counted from its request
// time, so a resumed wait keeps its deadline) or the end of ctx.
func (a *approvals) wait(ctx context.Context, req *wfv1.ApprovalRequest, settings *wfv1.ApprovalSettings) (ans runner.ApprovalAnswer, err error) {
	if a.live != nil {
		resume := a.live.Idle()
		defer func() {
			if rerr := resume(ctx); rerr != nil && err == nil {
				err = context.Cause(ctx)
			}
		}()
	}
	var wake <-chan struct{}
	if a.hub != nil {
		ch, unsubscribe := a.hub.Subscribe(a.runID)
		defer unsubscribe()
		wake = ch
	}
	poll := a.poll
	if poll <= 0 {
		poll = approvalPollWithoutHub
		if a.hub != nil {
			poll = approvalPollWithHub
		}
	}
	ticker := time.NewTicker(poll)
	defer ticker.Stop()
	var expired <-chan time.Time
	timeout := settings.GetTimeout().AsDuration()
	if timeout > 0 {
		timer := time.NewTimer(time.Until(req.GetRequestTime().AsTime().Add(timeout)))
		defer timer.Stop()
		expired = timer.C
	}
	for {
		got, err := a.store.GetApproval(ctx, a.runID, req.Id)
		switch {
		case err == nil && got.AnswerTime != nil:
			return a.answered(ctx, got, settings), nil
		case err != nil && ctx.Err() == nil:
			a.log.WarnContext(ctx, "reading approval; retrying", "approval_id", req.Id, "error", err)
		}
		select {
		case <-ctx.Done():
			a.stopped(ctx, req)
			return runner.ApprovalAnswer{}, context.Cause(ctx)
		case <-wake:
		case <-ticker.C:
		case <-expired:
			return a.expire(ctx, req, settings, timeout)
		}
	}
}

// answered turns a stored answer into the runner's.
func (a *approvals) answered(ctx context.Context, got *wfv1.ApprovalRequest, settings *wfv1.ApprovalSettings) runner.ApprovalAnswer {
	a.log.InfoContext(ctx, "approval answered", "approval_id", got.Id, "approved", got.Approved, "by", got.AnsweredBy)
	ans := runner.ApprovalAnswer{Approved: got.Approved, Message: got.Message}
	if got.AnsweredBy == store.AnsweredByTimeout {
		ans.TimedOut = true
		switch settings.GetOnTimeout() {
		case wfv1.ApprovalTimeoutPolicy_APPROVAL_TIMEOUT_POLICY_FAIL:
			ans.End = runner.StatusFailed
		case wfv1.ApprovalTimeoutPolicy_APPROVAL_TIMEOUT_POLICY_CANCEL:
			ans.End = runner.StatusCancelled
		}
	}
	return ans
}

// expire answers req by the run's timeout policy. A human's answer that
// arrived first wins.
func (a *approvals) expire(ctx context.Context, req *wfv1.ApprovalRequest, settings *wfv1.ApprovalSettings, timeout time.Duration) (runner.ApprovalAnswer, error) {
	msg := fmt.Sprintf("no answer within %s", timeout)
	switch settings.GetOnTimeout() {
	case wfv1.ApprovalTimeoutPolicy_APPROVAL_TIMEOUT_POLICY_FAIL:
		msg += "; the run's approval timeout policy fails the run"
	case wfv1.ApprovalTimeoutPolicy_APPROVAL_TIMEOUT_POLICY_CANCEL:
		msg += "; the run's approval timeout policy cancels the run"
	default:
		msg += "; treated as a rejection"
	}
	_, _, err := a.store.AnswerApproval(ctx, a.runID, store.Answer{ApprovalID: req.Id, Message: msg, By: store.AnsweredByTimeout})
	if err != nil && !errors.Is(err, fault.ErrFailedPrecondition) {
		return runner.ApprovalAnswer{}, fmt.Errorf("answer approval on timeout: %w", err)
	}
	got, err := a.store.GetApproval(ctx, a.runID, req.Id)
	if err != nil {
		return runner.ApprovalAnswer{}, err
	}
	return a.answered(ctx, got, settings), nil
}

// stopped handles a wait that ended with ctx. When this worker is stopping,
// the approval stays open and the run is made RUNNING again so that it is
// handed back to the queue; the next worker waits for the same request.
// When the run ends (cancelled, timed out) or its browser died, nobody will
// wait for the request any more: it is closed.
func (a *approvals) stopped(ctx context.Context, req *wfv1.ApprovalRequest) {
	bg := context.WithoutCancel(ctx)
	cause := context.Cause(ctx)
	var err error
	switch {
	case errors.Is(cause, rivertype.ErrJobCancelledRemotely), errors.Is(cause, context.DeadlineExceeded),
		errors.Is(cause, browser.ErrBrowserGone):
		_, _, err = a.store.AnswerApproval(bg, a.runID, store.Answer{ApprovalID: req.Id, By: store.AnsweredByCancel,
			Message: "nobody answered before the run stopped waiting: " + cause.Error()})
		if errors.Is(err, fault.ErrFailedPrecondition) {
			err = nil
		}
	default:
		err = a.store.SuspendApproval(bg, a.runID)
	}
	if err != nil {
		a.log.WarnContext(bg, "leaving an approval wait", "approval_id", req.Id, "error", err)
	}
}

func (a *approvals) loadSettings(ctx context.Context) (*wfv1.ApprovalSettings, error) {
	if a.settings != nil {
		return a.settings, nil
	}
	run, err := a.store.GetRun(ctx, a.runID)
	if err != nil {
		return nil, fmt.Errorf("load approval settings: %w", err)
	}
	a.settings = run.GetParams().GetApproval()
	if a.settings == nil {
		a.settings = &wfv1.ApprovalSettings{}
	}
	return a.settings, nil
}

// askConsent is the governance approver of CONSENT_POLICY_ASK: the same
// human, through the run that the hook's ctx belongs to.
func askConsent(ctx context.Context, action, reason string) (bool, error) {
	ans, err := runner.AskHuman(ctx, runner.ApprovalRequest{Source: runner.SourceConsent, Action: action, Reason: reason})
	return ans.Approved, err
}

// LiveParams adds a run's checkpoints and completion criteria to the
// engine's parameters. Their patterns were validated at CreateRun.
func LiveParams(rp *runner.Params, p *wfv1.RunParams) error {
	for i, c := range p.GetCheckpoints() {
		cp := runner.Checkpoint{Name: c.GetName(), ElementRole: c.GetElementRole(), Repeat: c.GetRepeat()}
		var err error
		if cp.URL, err = compileOptional(c.GetUrlPattern()); err == nil {
			if cp.Title, err = compileOptional(c.GetTitlePattern()); err == nil {
				cp.ElementName, err = compileOptional(c.GetElementNamePattern())
			}
		}
		if err != nil {
			return fmt.Errorf("checkpoints[%d]: %w", i, err)
		}
		rp.Checkpoints = append(rp.Checkpoints, cp)
	}
	for _, set := range []struct {
		field string
		in    []*wfv1.Indicator
		out   *[]runner.Indicator
	}{
		{"success", p.GetCompletion().GetSuccess(), &rp.Criteria.Success},
		{"failure", p.GetCompletion().GetFailure(), &rp.Criteria.Failure},
		{"report", p.GetCompletion().GetReport(), &rp.Criteria.Report},
	} {
		for i, ind := range set.in {
			r, err := indicator(ind)
			if err != nil {
				return fmt.Errorf("completion.%s[%d]: %w", set.field, i, err)
			}
			*set.out = append(*set.out, r)
		}
	}
	return nil
}

func compileOptional(pattern string) (*regexp.Regexp, error) {
	if pattern == "" {
		return nil, nil
	}
	return regexp.Compile(pattern)
}

func indicator(in *wfv1.Indicator) (runner.Indicator, error) {
	out := runner.Indicator{Name: in.GetName()}
	switch c := in.GetCondition().(type) {
	case *wfv1.Indicator_UrlPattern:
		out.Kind, out.Value = runner.IndicatorURL, c.UrlPattern
	case *wfv1.Indicator_TitlePattern:
		out.Kind, out.Value = runner.IndicatorTitle, c.TitlePattern
	case *wfv1.Indicator_TextPresent:
		out.Kind, out.Value = runner.IndicatorText, c.TextPresent
	case *wfv1.Indicator_ElementPresent:
		out.Kind, out.Value = runner.IndicatorElement, c.ElementPresent
	case *wfv1.Indicator_JsExpression:
		out.Kind, out.Value = runner.IndicatorJS, c.JsExpression
	default:
		return out, errors.New("no condition")
	}
	if out.Kind == runner.IndicatorURL || out.Kind == runner.IndicatorTitle {
		var err error
		if out.Pattern, err = regexp.Compile(out.Value); err != nil {
			return out, err
		}
	}
	return out, nil
}

// criteriaProto is the stored form of indicator results.
func criteriaProto(results []runner.IndicatorResult) []*wfv1.IndicatorResult {
	out := make([]*wfv1.IndicatorResult, 0, len(results))
	for _, r := range results {
		ind := &wfv1.Indicator{Name: r.Indicator.Name}
		switch r.Indicator.Kind {
		case runner.IndicatorURL:
			ind.Condition = &wfv1.Indicator_UrlPattern{UrlPattern: r.Indicator.Value}
		case runner.IndicatorTitle:
			ind.Condition = &wfv1.Indicator_TitlePattern{TitlePattern: r.Indicator.Value}
		case runner.IndicatorText:
			ind.Condition = &wfv1.Indicator_TextPresent{TextPresent: r.Indicator.Value}
		case runner.IndicatorElement:
			ind.Condition = &wfv1.Indicator_ElementPresent{ElementPresent: r.Indicator.Value}
		case runner.IndicatorJS:
			ind.Condition = &wfv1.Indicator_JsExpression{JsExpression: r.Indicator.Value}
		}
		out = append(out, &wfv1.IndicatorResult{Indicator: ind, Kind: string(r.Set), Matched: r.Matched, Error: r.Err, StepNumber: int32(r.Step)})
	}
	return out
}
