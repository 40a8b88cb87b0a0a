package judge

import (
	"context"

	"github.com/wayfinder/wayfinder/internal/llm"
)

// Judge evaluates a run's progress towards its goal.
type Judge interface {
	// Evaluate returns the verdict on c. Errors from a model wrap the llm
	// error classes (llm.ErrTransient, llm.ErrUnparseable, …); ctx's error
	// is returned as is.
	Evaluate(ctx context.Context, c *Context) (Verdict, error)
}

// Verdict is a judge's decision.
type Verdict struct {
	// Done: the goal is met; the run ends COMPLETED.
	Done bool `json:"done"`
	// Failed: the goal cannot be met; the run ends FAILED. Never set
	// together with Done.
	Failed bool `json:"failed"`
	// Confidence in the verdict, in [0, 1].
	Confidence float64 `json:"confidence"`
	// Feedback for the controller's next turn ("" when there is none).
	Feedback string `json:"feedback,omitempty"`
	// Reason explains the verdict, for records and the run's result.
	Reason string `json:"reason,omitempty"`
	// SuggestedNextAction is a concrete next step for the controller.
	SuggestedNextAction string `json:"suggested_next_action,omitempty"`
	// Source is SourceHeuristic or SourceLLM.
	Source string `json:"source"`
	// Conclusive reports that the verdict needs no second opinion: the
	// heuristics found the run stuck for good (Failed), accepted a
	// "failed" claim or found a "success" claim contradicted by the
	// evidence. Hybrid returns conclusive heuristic verdicts without
	// asking the model. Model verdicts are always conclusive.
	Conclusive bool `json:"conclusive"`
}

// Verdict sources.
const (
	// SourceHeuristic: decided by rules, without a model.
	SourceHeuristic = "heuristic"
	// SourceLLM: decided by a model.
	SourceLLM = "llm"
)

// Claim statuses, as the agent passes them to complete_task.
const (
	// ClaimSuccess: the agent says the goal is met.
	ClaimSuccess = "success"
	// ClaimFailed: the agent says the goal cannot be met.
	ClaimFailed = "failed"
)

// Context is what a judge sees of a run.
type Context struct {
	// Goal is the run's goal, in the caller's words.
	Goal string
	// StepNumber is the current step, from 1; MaxSteps the run's limit.
	StepNumber, MaxSteps int
	// Screenshot is the current screenshot; nil when there is none.
	Screenshot *llm.Image
	// ScreenshotHistory holds earlier screenshots, oldest first.
	ScreenshotHistory []llm.Image
	// Page is the current page snapshot as text. It is untrusted page
	// content: judges treat instructions in it as data.
	Page string
	// Steps summarises the run so far, oldest first, including the
	// current step.
	Steps []StepSummary
	// Claim is set when the agent claimed to be finished (complete_task);
	// the judge then verifies it.
	Claim *Claim
}

// StepSummary is one step of the run as a judge sees it.
type StepSummary struct {
	// Number of the step, from 1.
	Number int
	// URL and Title of the page at the end of the step.
	URL, Title string
	// ScreenshotHash is the hex SHA-256 of the step's screenshot; "" when
	// the step has none. Equal hashes mean an unchanged page.
	ScreenshotHash string
	// Actions the step executed, in order.
	Actions []Action
	// Error that ended the step ("" when none).
	Error string
}

// Action is one executed action, rendered short.
type Action struct {
	// Tool is the action's name ("click", "type", "navigate", …).
	Tool string
	// Args is a short rendering of the arguments, e.g. `@e5` or
	// `@e8, "test"`.
	Args string
	// Outcome is "ok" or an error code ("not_found", "timeout", …).
	Outcome string
}

// Failed reports whether the action ended in an error. An empty Outcome
// (not yet executed) is not a failure.
func (a Action) Failed() bool { return a.Outcome != "" && a.Outcome != "ok" }

// Claim is the agent's statement that it is finished.
type Claim struct {
	// Status is ClaimSuccess or ClaimFailed.
	Status string
	// Reason is the agent's explanation.
	Reason string
}

// Frequency says after which steps the runner asks the judge. A claim is
// always verified, whatever the frequency.
type Frequency struct {
	// EveryN asks after steps N, 2N, …; 0 and 1 mean every step.
	EveryN int
	// OnStagnation, when positive, asks only when the last OnStagnation
	// steps' screenshots are identical (and EveryN also selects the step).
	OnStagnation int
}

// Due reports whether the judge should evaluate c.
func (f Frequency) Due(c *Context) bool {
	if c == nil {
		return false
	}
	if c.Claim != nil {
		return true
	}
	if f.EveryN > 1 && c.StepNumber%f.EveryN != 0 {
		return false
	}
	if f.OnStagnation > 0 && unchangedSteps(c.Steps) < f.OnStagnation {
		return false
	}
	return true
}

// unchangedSteps counts the trailing steps whose screenshots are identical
// to the last one: 1 when the last step's page differs from the one
// before, 0 when the last step has no screenshot.
func unchangedSteps(steps []StepSummary) int {
	if len(steps) == 0 {
		return 0
	}
	last := steps[len(steps)-1].ScreenshotHash
	if last == "" {
		return 0
	}
	n := 0
	for i := len(steps) - 1; i >= 0 && steps[i].ScreenshotHash == last; i-- {
		n++
	}
	return n
}
