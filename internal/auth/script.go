package auth

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/wayfinder/wayfinder/internal/browser"
)

// runScript runs a login script's steps in order on page, as the model's
// actions would run (the run's navigation policy applies). A step that
// fails stops the script; the error names the step, never a value.
func (a *Auth) runScript(ctx context.Context, page *browser.Page, s *Script) error {
	for i, st := range s.Steps {
		act, timeout := a.stepAction(st, s.Secrets)
		act.Timeout = timeout
		// Settling and the snapshot come on top of the step's own timeout.
		sctx, cancel := context.WithTimeout(ctx, timeout+30*time.Second)
		res, err := page.Do(sctx, act)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("login script step %d (%s): %s", i+1, describeStep(st), a.scrub(err.Error()))
		}
		if res.Error != nil {
			return fmt.Errorf("login script step %d (%s): %s: %s", i+1, describeStep(st), res.Error.Code, a.scrub(res.Error.Message))
		}
	}
	return nil
}

// stepAction is the browser action of a step, and its timeout.
func (a *Auth) stepAction(st Step, secrets map[string]string) (browser.Action, time.Duration) {
	var target *browser.Target
	if st.Selector != "" {
		target = &browser.Target{CSS: st.Selector}
	}
	switch st.Action {
	case StepNavigate:
		return browser.Action{Kind: browser.ActionNavigate, URL: st.URL}, a.opts.NavigationTimeout
	case StepFill:
		v := st.Value
		if st.SecretRef != "" {
			v = secrets[st.SecretRef]
		}
		return browser.Action{Kind: browser.ActionFill, Target: target, Value: v}, a.opts.StepTimeout
	case StepClick:
		return browser.Action{Kind: browser.ActionClick, Target: target}, a.opts.StepTimeout
	case StepPress:
		return browser.Action{Kind: browser.ActionPress, Target: target, Keys: st.Value}, a.opts.StepTimeout
	default: // StepWaitFor; validated by New
		return browser.Action{Kind: browser.ActionWait, Target: target}, a.opts.StepTimeout
	}
}

// describeStep names a step for an error: its action and selector or URL
// (without the query), never its value.
func describeStep(st Step) string {
	switch st.Action {
	case StepNavigate:
		if u, err := url.Parse(st.URL); err == nil {
			u.RawQuery, u.Fragment, u.User = "", "", nil
			return "navigate " + u.String()
		}
		return "navigate"
	case StepPress:
		if st.Selector == "" {
			return "press"
		}
	}
	return st.Action + " " + st.Selector
}
