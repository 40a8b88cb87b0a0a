// Package runner executes one run in a browser context it is given. It owns
// the run's flow (today: open the start URL under the domain policy, record
// a step with a screenshot; the agent loop grows here) and reaches the world
// only through what it is handed: a browser session, a policy and a Sink.
// It imports neither the store nor the API.
package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/wayfinder/wayfinder/internal/browser"
)

// Policy decides whether the browser may load a URL.
type Policy interface {
	Check(ctx context.Context, rawURL string) error
}

// Params is what the runner needs to know about a run.
type Params struct {
	Goal     string
	StartURL string
	// Policy guards every navigation.
	Policy Policy
	// Page holds the emulation settings.
	Page browser.PageOptions
	// NavigationTimeout bounds one navigation. Default 30s.
	NavigationTimeout time.Duration
}

// Status is how a run ended, from the engine's point of view.
type Status int

// The engine's run outcomes.
const (
	// StatusCompleted: the run did what it was asked.
	StatusCompleted Status = iota + 1
	// StatusError: an error ended the run; see Result.Err.
	StatusError
	// StatusInterrupted: ctx ended before the run did. The caller knows why
	// (cancellation, timeout, shutdown) and decides the final status.
	StatusInterrupted
)

// Category classifies errors.
type Category string

// Error categories the engine reports.
const (
	CategoryBrowserCrash      Category = "browser_crash"
	CategoryNavigationTimeout Category = "navigation_timeout"
	CategoryNavigationError   Category = "navigation_error"
	CategoryDomainBlocked     Category = "domain_blocked"
	CategoryInternal          Category = "internal"
)

// Error is a classified run or step error.
type Error struct {
	Category Category
	Message  string
	// Step is the step that failed, 0 for none.
	Step int
}

// Action is one executed browser action or tool call.
type Action struct {
	Tool      string
	Arguments map[string]any
	// Outcome is "ok" or an action error code such as "domain_blocked" or
	// "timeout".
	Outcome  string
	Message  string
	Duration time.Duration
}

// Step is a finished step.
type Step struct {
	Number     int
	Start, End time.Time
	URL, Title string
	// Screenshot is a PNG, nil when none could be taken.
	Screenshot []byte
	Actions    []Action
	Err        *Error
	// Actor is who decided the step: "system" for the fixed first step.
	Actor string
}

// Sink receives the run's progress. Its methods are called with a context
// that survives cancellation of the run, so a final step is never lost.
type Sink interface {
	StepStarted(ctx context.Context, number int) error
	StepFinished(ctx context.Context, step Step) error
}

// Result is how the run ended.
type Result struct {
	Status   Status
	Err      *Error
	FinalURL string
	Steps    int
}

// Runner executes runs.
type Runner struct {
	// ScreenshotTimeout bounds taking a screenshot. Default 10s.
	ScreenshotTimeout time.Duration
}

// Run executes p in session s and reports progress to sink. An error is
// returned only when the sink fails (the run's record is then incomplete and
// the caller should retry); everything that happens in the browser is part
// of the Result.
func (r *Runner) Run(ctx context.Context, s *browser.Session, p Params, sink Sink) (Result, error) {
	if p.NavigationTimeout <= 0 {
		p.NavigationTimeout = 30 * time.Second
	}
	record := context.WithoutCancel(ctx)
	step := Step{Number: 1, Start: time.Now(), Actor: "system"}
	if err := sink.StepStarted(record, step.Number); err != nil {
		return Result{}, fmt.Errorf("record step start: %w", err)
	}
	nav := Action{Tool: "browser_navigate", Arguments: map[string]any{"url": p.StartURL}, Outcome: "ok"}
	finish := func(res Result) (Result, error) {
		nav.Duration = time.Since(step.Start)
		step.Actions, step.End, step.Err = []Action{nav}, time.Now(), res.Err
		if err := sink.StepFinished(record, step); err != nil {
			return Result{}, fmt.Errorf("record step: %w", err)
		}
		res.Steps, res.FinalURL = 1, step.URL
		return res, nil
	}

	if err := p.Policy.Check(ctx, p.StartURL); err != nil {
		nav.Outcome, nav.Message = "domain_blocked", err.Error()
		return finish(Result{Status: StatusError, Err: &Error{Category: CategoryDomainBlocked, Message: err.Error(), Step: 1}})
	}
	page, err := s.NewPage(ctx, p.Page)
	if err != nil {
		if ctx.Err() != nil {
			return Result{Status: StatusInterrupted}, nil
		}
		return finish(Result{Status: StatusError, Err: classify(err, 1)})
	}
	navErr := page.Navigate(ctx, p.StartURL, p.NavigationTimeout)
	if ctx.Err() != nil {
		return Result{Status: StatusInterrupted}, nil
	}
	r.capture(ctx, page, &step)
	if navErr != nil {
		e := classify(navErr, 1)
		nav.Outcome, nav.Message = "action_failed", navErr.Error()
		if e.Category == CategoryNavigationTimeout {
			nav.Outcome = "timeout"
		}
		return finish(Result{Status: StatusError, Err: e})
	}
	if ctx.Err() != nil {
		return Result{Status: StatusInterrupted}, nil
	}
	return finish(Result{Status: StatusCompleted})
}

// capture records the page's location and a screenshot into step; failures
// leave the fields empty, because evidence is best effort once the page is
// broken.
func (r *Runner) capture(ctx context.Context, page *browser.Page, step *Step) {
	timeout := r.ScreenshotTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	step.URL, step.Title, _ = page.Location(cctx)
	step.Screenshot, _ = page.Screenshot(cctx)
}

func classify(err error, step int) *Error {
	e := &Error{Category: CategoryInternal, Message: err.Error(), Step: step}
	switch {
	case errors.Is(err, browser.ErrNavigationTimeout):
		e.Category = CategoryNavigationTimeout
	case errors.Is(err, browser.ErrNavigation):
		e.Category = CategoryNavigationError
	case errors.Is(err, browser.ErrBrowserGone):
		e.Category = CategoryBrowserCrash
	}
	return e
}
