// Package runner is the agent loop of one run: it shows the page to a
// controller model, executes the tool calls it answers with under the
// run's navigation policy, asks the judge whether the goal is met, recovers
// from what can be recovered (model errors, unparseable answers, element
// errors, a crashed browser) and reports every step and every model call to
// a Sink. It reaches the world only through what it is handed (a Browser, a
// Policy, models, a judge, custom tools, a Sink); it imports neither the
// store nor the API.
package runner

import (
	"context"
	"time"

	"github.com/wayfinder/wayfinder/internal/browser"
	"github.com/wayfinder/wayfinder/internal/judge"
	"github.com/wayfinder/wayfinder/internal/llm"
	"github.com/wayfinder/wayfinder/internal/tools"
	"github.com/wayfinder/wayfinder/internal/trace"
)

// Policy decides whether the browser may load a URL.
type Policy interface {
	Check(ctx context.Context, rawURL string) error
}

// Browser is the run's browser context. The runner uses Session until an
// operation fails because the browser is gone (or Done is closed), then
// asks Renew for a fresh context and carries on from the last URL.
type Browser interface {
	// Session is the current context.
	Session() *browser.Session
	// Done is closed when the current context's browser died or hung.
	Done() <-chan struct{}
	// Renew replaces the dead context with a fresh one (network rules and
	// auth re-applied) and returns it.
	Renew(ctx context.Context) (*browser.Session, error)
}

// Params is what the runner needs to know about a run.
type Params struct {
	Goal     string
	StartURL string
	// Policy guards every navigation the model asks for.
	Policy Policy
	// Page holds the emulation settings.
	Page browser.PageOptions
	// NavigationTimeout bounds one navigation. Default 30s.
	NavigationTimeout time.Duration
	// ActionTimeout bounds one browser action. Default 15s.
	ActionTimeout time.Duration
	// MaxSteps ends the run MAX_STEPS_REACHED. Default 25.
	MaxSteps int
	// FirstStep is the number of the first step to execute (a resumed run
	// continues its numbering). Default 1.
	FirstStep int
	// Resumed, when set, summarises what the run did before it was
	// resumed on this worker; the model is told.
	Resumed string
	// ScreenshotHistoryDepth is how many recent screenshots the controller
	// sees (0: none). Default 3.
	ScreenshotHistoryDepth int

	// Controller picks the tool calls.
	Controller llm.Model
	// ControllerPrompt replaces the default system prompt (a text/template
	// with the fields of PromptData). Default: DefaultControllerPrompt.
	ControllerPrompt string
	// ControllerPromptRef is the prompt library version ("name@version")
	// ControllerPrompt came from, recorded on every controller call;
	// "" for none.
	ControllerPromptRef string
	// JudgeStrategy picks the judge. Default JudgeHybrid.
	JudgeStrategy JudgeStrategy
	// JudgeModel is the LLM judge's model; nil leaves only the heuristic
	// judge (free, no model calls).
	JudgeModel llm.Model
	// JudgePrompt replaces the judge's default prompt.
	JudgePrompt string
	// JudgePromptRef is the prompt library version JudgePrompt came from,
	// recorded on every judge call; "" for none.
	JudgePromptRef string
	// Judge, when set, is used instead of the judge the fields above
	// describe (tests, embedders).
	Judge judge.Judge
	// JudgeFrequency says when the judge runs between claims. Default
	// every step.
	JudgeFrequency judge.Frequency
	// Tools are the run's custom tools; nil for none.
	Tools *tools.Set
	// MinConfidence: a browser action whose stated confidence is below it
	// is not executed and the model is asked again. Default 0.6; negative
	// disables the check.
	MinConfidence float64
	// ActionsPerTurn is how many browser actions of one answer run, in
	// order, stopping as soon as the page changes. Default 1 (extra calls
	// are answered "not executed" and logged).
	ActionsPerTurn int
	// TurnTokenBudget bounds the estimated input tokens of one controller
	// call; older history is summarised to fit. Default 15000.
	TurnTokenBudget int
	// HistoryTokenBudget is the size past which the conversation is
	// truncated to the last HistoryTurns turns plus a summary of the
	// actions before them. Default 10000 tokens, 10 turns.
	HistoryTokenBudget int
	HistoryTurns       int
	// MaxTokens and MaxCostUSD end the run (ERROR, budget_exceeded) once
	// the run's model calls reach them; the model is warned at 80%. Zero:
	// no limit.
	MaxTokens  int
	MaxCostUSD float64
	// Prices turn token usage into cost. Default llm.DefaultPrices.
	Prices *llm.Prices
	// MaxRenewals is how many times a crashed browser is replaced within
	// one run. Default 2.
	MaxRenewals int
	// RunID is passed to models that want it (the prompt-runner webhook).
	RunID string
	// Hooks are called around every browser action (auth, governance).
	// Default none.
	Hooks Hooks
	// Secrets are the form-login values the model uses by placeholder.
	// Default none.
	Secrets []Secret
	// Redact are further secret values (header tokens, cookie values,
	// client secrets) that the model must never see and the record never
	// hold, even if a page echoes them: they are replaced by [redacted]
	// (see Redactor). Default none.
	Redact []string
	// Redactor, when set, is the run's redactor instead of one built from
	// Secrets and Redact (it must cover them): the caller can Add values
	// it learns while the run goes.
	Redactor *Redactor
	// Checkpoints pause the run for a human (through the sink's
	// Approvals) when the page after an action matches one; the model
	// cannot bypass them. Default none.
	Checkpoints []Checkpoint
	// Criteria are the run's success, failure and report indicators,
	// evaluated after every step. Default none.
	Criteria Criteria
	// PriorExtract, for a resumed run, are the rows of the last
	// successful browser_extract it recorded before it was resumed: its
	// output falls back to them until this execution extracts again.
	// Default none.
	PriorExtract []map[string]string
	// Takeover lets a person take the browser between steps; what they
	// did is recorded as a step by actor "human" and told to the model.
	// Default none.
	Takeover Takeover
	// Replay, when set, follows a recorded trace without the controller
	// until the page no longer matches it (see Replay). Default none.
	Replay *Replay
}

// JudgeStrategy selects how completion is decided (seed 000 §3.6).
type JudgeStrategy int

// Judge strategies.
const (
	// JudgeHybrid runs cheap heuristics first and the LLM judge only when
	// they are inconclusive.
	JudgeHybrid JudgeStrategy = iota
	// JudgeLLM uses only the LLM judge.
	JudgeLLM
	// JudgeHeuristic uses only heuristics (no model calls).
	JudgeHeuristic
)

// Status is how a run ended, from the engine's point of view.
type Status int

// The engine's run outcomes.
const (
	// StatusCompleted: the goal was met, confirmed by the judge.
	StatusCompleted Status = iota + 1
	// StatusFailed: the judge (or the model, acknowledged) concluded the
	// goal cannot be met.
	StatusFailed
	// StatusMaxSteps: the step limit was reached first.
	StatusMaxSteps
	// StatusError: an error ended the run; see Result.Err.
	StatusError
	// StatusInterrupted: ctx ended before the run did. The caller knows why
	// (cancellation, timeout, shutdown) and decides the final status.
	StatusInterrupted
	// StatusCancelled: an approval went unanswered and the run's timeout
	// policy cancels it; Result.Reason says so.
	StatusCancelled
)

func (s Status) String() string {
	switch s {
	case StatusCompleted:
		return "completed"
	case StatusFailed:
		return "failed"
	case StatusMaxSteps:
		return "max_steps_reached"
	case StatusError:
		return "error"
	case StatusInterrupted:
		return "interrupted"
	case StatusCancelled:
		return "cancelled"
	}
	return "unknown"
}

// Category classifies errors.
type Category string

// Error categories the engine reports.
const (
	CategoryBrowserCrash      Category = "browser_crash"
	CategoryNavigationTimeout Category = "navigation_timeout"
	CategoryNavigationError   Category = "navigation_error"
	CategoryElementNotFound   Category = "element_not_found"
	CategoryLLMError          Category = "llm_error"
	CategoryLLMParseError     Category = "llm_parse_error"
	CategoryToolExecution     Category = "tool_execution_error"
	CategoryDomainBlocked     Category = "domain_blocked"
	CategoryBudgetExceeded    Category = "budget_exceeded"
	CategoryAuthentication    Category = "authentication_error"
	CategoryInternal          Category = "internal"
)

// Error is a classified run or step error.
type Error struct {
	Category Category
	Message  string
	// Step is the step that failed, 0 for none.
	Step int
}

func (e *Error) Error() string { return string(e.Category) + ": " + e.Message }

// Action is one executed browser action or tool call.
type Action struct {
	Tool      string
	Arguments map[string]any
	// Outcome is "ok" or an error code: the action vocabulary
	// (ref_invalid, element_disabled, element_obscured,
	// element_not_visible, action_failed, timeout, invalid_params,
	// domain_blocked), low_confidence, not_executed, or a custom tool's
	// error code.
	Outcome string
	Message string
	// Strategy found the element (ref, css, role, text, coordinates).
	Strategy string
	// Result is what the tool returned (JSON-compatible), nil when none.
	Result   map[string]any
	Duration time.Duration
}

// Timings are a step's durations by phase.
type Timings struct {
	Snapshot, Model, Action, Judge time.Duration
}

// Step is a finished step: one controller turn and what it caused.
type Step struct {
	Number     int
	Start, End time.Time
	// URL, Title and Screenshot (PNG) are the page at the end of the step,
	// as the judge and the controller's next turn see it. Screenshot is nil
	// when none could be taken.
	URL, Title string
	Screenshot []byte
	// Reasoning is the model's stated reasoning.
	Reasoning string
	Actions   []Action
	Verdict   *judge.Verdict
	Err       *Error
	// Actor is who decided the step: "model", "system" for a step the
	// engine took itself (opening the start URL when it fails), or "human"
	// for what a person did while they had the browser (Takeover).
	Actor string
	// TakeoverID is the takeover a "human" step records.
	TakeoverID string
	Timings    Timings
	// Usage and CostUSD sum the step's model calls (controller and judge).
	Usage   llm.Usage
	CostUSD float64
	// Criteria are the completion indicators evaluated after the step,
	// nil when the run declares none.
	Criteria []IndicatorResult
}

// Role names the prompt a model call served.
type Role string

// Prompt roles.
const (
	RoleController Role = "controller"
	RoleJudge      Role = "judge"
)

// PromptRun is one model call on record.
type PromptRun struct {
	Step     int
	Role     Role
	Provider string
	Model    string
	// Request is what was sent; its images carry Ref (a sha256 hex of
	// the image) and their Data, which the sink stores once as media.
	Request  *llm.Request
	Response *llm.Response
	Usage    llm.Usage
	CostUSD  float64
	Start    time.Time
	End      time.Time
	// Err is the failure, "" on success.
	Err string
	// PromptRef is the prompt library version ("name@version") of the
	// call's system prompt; "" for the default prompt or inline text.
	PromptRef string
}

// EventKind names an Event.
type EventKind string

// Event kinds.
const (
	EventToolCalled   EventKind = "tool_called"
	EventToolResult   EventKind = "tool_result"
	EventJudgeVerdict EventKind = "judge_verdict"
)

// Event is progress inside a step, for live streams.
type Event struct {
	Kind    EventKind
	Step    int
	Tool    string
	Outcome string
	Message string
	Verdict *judge.Verdict
}

// Sink receives the run's progress. Its methods are called with a context
// that survives cancellation of the run, so a final step is never lost.
type Sink interface {
	StepStarted(ctx context.Context, number int) error
	StepFinished(ctx context.Context, step Step) error
	PromptRun(ctx context.Context, pr PromptRun) error
	Event(ctx context.Context, e Event) error
}

// Result is how the run ended.
type Result struct {
	Status   Status
	Err      *Error
	FinalURL string
	// Steps is the number of the last step recorded.
	Steps int
	// FinalScreenshot is the last screenshot taken (PNG), nil when none.
	FinalScreenshot []byte
	// Verdict is the judge's last verdict.
	Verdict *judge.Verdict
	// Reason is the model's (or the judge's) account of the outcome.
	Reason  string
	Usage   llm.Usage
	CostUSD float64
	// Criteria are the completion indicators' last results, nil when the
	// run declares none.
	Criteria []IndicatorResult
	// Output is the structured data the run produced, a JSON value (maps,
	// slices, strings, float64s, booleans): the data argument of the
	// acknowledged complete_task call that ended the run, else the
	// rows of its last successful browser_extract (a list of objects of
	// strings, cut to the leading rows that fit in MaxOutputSize; those
	// of Params.PriorExtract when this execution extracted nothing); nil
	// when none. Redacted.
	Output any
	// Trace is the run's replayable trace (issue 8) when it COMPLETED:
	// its successful actions with their targets' fingerprints and the
	// final page and verdict. Nil for any other outcome, for a resumed run
	// and for a run a person took over. Redacted.
	Trace *trace.Trace
	// Replay is what the run's replay did, nil when Params.Replay was
	// not set.
	Replay *ReplayReport
}

// Runner executes runs.
type Runner struct {
	// ScreenshotTimeout bounds taking a screenshot. Default 10s.
	ScreenshotTimeout time.Duration
	// Retry is the model retry policy. Default llm.DefaultRetryPolicy.
	Retry *llm.RetryPolicy
	// OnModelRetry, when set, is told of each model retry.
	OnModelRetry func(provider string, attempt int, err error)
}
