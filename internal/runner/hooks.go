package runner

import (
	"context"
	"errors"
	"fmt"

	"github.com/wayfinder/wayfinder/internal/browser"
)

// Hooks are the service's rules around the engine's browser work (per-domain
// auth, robots.txt, rate limits, consent banners). The runner calls them;
// it knows none of the rules. Every hook bounds its own waits by ctx.
type Hooks interface {
	// BeforeAction is called before every browser action, and before the
	// start URL is opened (act is then a navigate to it). page is the
	// page the action runs on (for the start URL, the new blank page). A
	// hook may wait (rate limits) or refuse the action with a *Refusal,
	// which the model is told as the action's outcome (for the start URL
	// it ends the run). A *Error ends the run; any other error is
	// answered as action_failed.
	BeforeAction(ctx context.Context, page *browser.Page, act *browser.Action) error
	// AfterAction is called after every browser action that ran, and
	// after the start URL opened (res is then nil), before the page is
	// observed: per-domain login callbacks, consent banners and re-auth
	// after a 401/403 happen here. A *Error ends the run; other errors
	// are noted for the model.
	AfterAction(ctx context.Context, page *browser.Page, act browser.Action, res *browser.ActionResult) (HookResult, error)
}

// HookResult is what an AfterAction hook did.
type HookResult struct {
	// Notes are told to the model with the action's result (or, for the
	// start page, with the opening message).
	Notes []string
	// Changed says the hook changed the page (it clicked a banner away or
	// logged in), so a snapshot taken by the action is stale.
	Changed bool
}

// Refusal is a hook's refusal of one action. The model sees Code as the
// action's outcome and Message as its explanation.
type Refusal struct {
	// Code is an action error code, e.g. "domain_blocked".
	Code    string
	Message string
}

func (r *Refusal) Error() string { return r.Code + ": " + r.Message }

// JoinHooks returns Hooks that call each of hs in order (nil entries are
// skipped): BeforeAction stops at the first error; AfterAction merges the
// results and stops at the first *Error.
func JoinHooks(hs ...Hooks) Hooks {
	var out multiHooks
	for _, h := range hs {
		if h != nil {
			out = append(out, h)
		}
	}
	switch len(out) {
	case 0:
		return nil
	case 1:
		return out[0]
	}
	return out
}

type multiHooks []Hooks

func (m multiHooks) BeforeAction(ctx context.Context, page *browser.Page, act *browser.Action) error {
	for _, h := range m {
		if err := h.BeforeAction(ctx, page, act); err != nil {
			return err
		}
	}
	return nil
}

func (m multiHooks) AfterAction(ctx context.Context, page *browser.Page, act browser.Action, res *browser.ActionResult) (HookResult, error) {
	var all HookResult
	var errs []error
	for _, h := range m {
		r, err := h.AfterAction(ctx, page, act, res)
		all.Notes = append(all.Notes, r.Notes...)
		all.Changed = all.Changed || r.Changed
		if err != nil {
			var e *Error
			if errors.As(err, &e) {
				return all, err
			}
			errs = append(errs, err)
		}
	}
	return all, errors.Join(errs...)
}

// beforeAction runs the run's BeforeAction hook.
func (ru *run) beforeAction(ctx context.Context, act *browser.Action) error {
	if ru.p.Hooks == nil {
		return nil
	}
	return ru.p.Hooks.BeforeAction(ctx, ru.page, act)
}

// afterAction runs the run's AfterAction hook. Notes (and a hook's
// non-fatal error) are returned for the model; a *Error is returned as
// fatal.
func (ru *run) afterAction(ctx context.Context, act browser.Action, res *browser.ActionResult) (HookResult, *Error) {
	if ru.p.Hooks == nil {
		return HookResult{}, nil
	}
	r, err := ru.p.Hooks.AfterAction(ctx, ru.page, act, res)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			if e.Step == 0 {
				e.Step = ru.step
			}
			return r, e
		}
		r.Notes = append(r.Notes, fmt.Sprintf("note: %v", err))
	}
	return r, nil
}

// refusal classifies a BeforeAction error: the outcome code and message
// the model is told, or a fatal *Error.
func refusal(err error) (code, msg string, fatal *Error) {
	var e *Error
	if errors.As(err, &e) {
		return "", "", e
	}
	var r *Refusal
	if errors.As(err, &r) {
		return r.Code, r.Message, nil
	}
	return string(browser.CodeActionFailed), err.Error(), nil
}

// hookFailure reports whether err (from opening a page) came from a hook,
// and the run error it means: a hook's *Error as is, a refusal of the
// start URL as domain_blocked (or navigation_error for other codes).
func hookFailure(err error, step int) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		if e.Step == 0 {
			e.Step = step
		}
		return e, true
	}
	var r *Refusal
	if errors.As(err, &r) {
		cat := CategoryNavigationError
		if r.Code == string(browser.CodeDomainBlocked) {
			cat = CategoryDomainBlocked
		}
		return &Error{Category: cat, Message: r.Message, Step: step}, true
	}
	return nil, false
}

// hookOutcome is the recorded outcome of a start navigation a hook stopped.
func hookOutcome(err error) string {
	var r *Refusal
	if errors.As(err, &r) {
		return r.Code
	}
	return string(browser.CodeActionFailed)
}
