package runner

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/template"
	"time"

	"github.com/wayfinder/wayfinder/internal/browser"
	"github.com/wayfinder/wayfinder/internal/judge"
	"github.com/wayfinder/wayfinder/internal/llm"
	"github.com/wayfinder/wayfinder/internal/llm/promptrunner"
	"github.com/wayfinder/wayfinder/internal/tools"
	"github.com/wayfinder/wayfinder/internal/trace"
)

//go:embed prompts/controller.md
var defaultControllerPrompt string

// DefaultControllerPrompt is the embedded controller system prompt, a
// text/template executed with PromptData.
func DefaultControllerPrompt() string { return defaultControllerPrompt }

// PromptData is what a controller prompt template can use.
type PromptData struct {
	Goal           string
	MinConfidence  float64
	ActionsPerTurn int
	// Tools lists the run's custom tools by name, "" when none.
	Tools string
	// Guidance is extra guidance (a login is available, site notes); ""
	// when none.
	Guidance string
}

// Limits of the loop's recovery (seed 000 §3.7, seed 003 §2.6).
const (
	maxReprompts       = 2 // unparseable answers or answers without a tool call
	maxSelfCorrections = 3 // element errors in a row before the judge is asked
	budgetWarnFraction = 0.8
)

// Run executes p in the browser b and reports progress to sink. An error
// is returned only when the sink fails (the run's record is then
// incomplete and the caller should retry); everything that happens in the
// browser or with the models is part of the Result.
func (r *Runner) Run(ctx context.Context, b Browser, p Params, sink Sink) (Result, error) {
	ru, err := r.newRun(ctx, b, p, sink)
	if err != nil {
		return Result{Status: StatusError, Err: &Error{Category: CategoryInternal, Message: err.Error()}}, nil
	}
	return ru.run()
}

// run is the state of one run.
type run struct {
	r      *Runner
	ctx    context.Context
	record context.Context // survives cancellation: the record is written
	b      Browser
	p      Params
	// sink is the caller's sink behind a redactingSink; approvals is the
	// caller's sink when it can ask a human.
	sink      Sink
	approvals Approvals
	// cps is the state of the run's checkpoints; ended is set when an
	// unanswered approval's timeout policy ended the run.
	cps   checkpointState
	ended *Result
	// criteria are the completion indicators' last results;
	// criteriaStale is set when the page was observed anew since.
	criteria      []IndicatorResult
	criteriaStale bool
	// output is the data of the complete_task call that ended the run;
	// extracted the rows of the last successful browser_extract (both
	// redacted JSON values, nil for none).
	output, extracted any
	// secrets are substituted into fill and type actions; redact hides
	// their values (and Params.Redact) from the model and the record.
	secrets *secrets
	redact  *Redactor
	// loginNote tells the model about the secrets in the opening message
	// when a custom controller prompt leaves out PromptData.Guidance.
	loginNote string

	system     string
	tools      []llm.Tool
	controller llm.Model
	judge      judge.Judge
	observe    bool // the controller wants structured observations

	page    *browser.Page
	obs     *observation
	conv    conversation
	pending []string // notes for the controller's next message

	step int // current step number
	// humanSteps counts the steps that recorded a person's takeover; they
	// do not count against MaxSteps.
	humanSteps int
	rec        *Step
	summary    []judge.StepSummary
	history    []llm.Image // screenshots for the judge, oldest first
	usage      llm.Usage
	cost       float64
	warned     bool
	renewals   int
	// recoveredAt is when the browser was last replaced; askedAt when the
	// controller was last asked.
	recoveredAt, askedAt time.Time
	failures             int // element errors in a row
	verdict              *judge.Verdict
	lastURL              string

	// tr are the actions recorded for the run's trace; acting is the
	// page's latest snapshot (the one the model's refs belong to);
	// noTrace says why the run leaves no trace ("" when it does).
	tr      []trace.Action
	acting  *browser.Snapshot
	noTrace string
	// rp is the run's replay, nil when it follows none; ctrl is what its
	// controller calls spent.
	rp   *replayState
	ctrl trace.Usage
}

// observation is the page as the controller and the judge see it.
type observation struct {
	snap *browser.Snapshot
	png  []byte
	img  *llm.Image
	url  string
	text string // snapshot text, for the judge
}

func (r *Runner) newRun(ctx context.Context, b Browser, p Params, sink Sink) (*run, error) {
	if p.Controller == nil {
		return nil, errors.New("no controller model")
	}
	if p.NavigationTimeout <= 0 {
		p.NavigationTimeout = 30 * time.Second
	}
	if p.ActionTimeout <= 0 {
		p.ActionTimeout = browser.DefaultActionTimeout
	}
	if p.MaxSteps <= 0 {
		p.MaxSteps = 25
	}
	if p.FirstStep <= 0 {
		p.FirstStep = 1
	}
	if p.MinConfidence == 0 {
		p.MinConfidence = 0.6
	}
	if p.ActionsPerTurn <= 0 {
		p.ActionsPerTurn = 1
	}
	if p.TurnTokenBudget <= 0 {
		p.TurnTokenBudget = 15000
	}
	if p.HistoryTokenBudget <= 0 {
		p.HistoryTokenBudget = 10000
	}
	if p.HistoryTurns <= 0 {
		p.HistoryTurns = 10
	}
	if p.Prices == nil {
		p.Prices = llm.DefaultPrices()
	}
	if p.MaxRenewals == 0 {
		p.MaxRenewals = 2
	}
	if p.JudgeFrequency == (judge.Frequency{}) {
		p.JudgeFrequency = judge.Frequency{EveryN: 1}
	}
	sec, err := compileSecrets(p.Secrets)
	if err != nil {
		return nil, err
	}
	red := p.Redactor
	if red == nil {
		red = NewRedactor(p.Secrets, p.Redact)
	}
	ru := &run{
		r: r, ctx: ctx, record: context.WithoutCancel(ctx), b: b, p: p, sink: sink,
		observe: p.Controller.Provider() == llm.ProviderSteps,
		redact:  red,
	}
	ru.approvals = sinkApprovals(sink)
	ru.cps = checkpointState{approved: map[int]bool{}, guard: -1}
	// Hooks find the run through their context (AskHuman).
	ru.ctx = context.WithValue(ctx, runKey{}, ru)
	if red.Active() {
		ru.sink = redactingSink{Sink: sink, r: red}
	}
	if len(sec.order) > 0 {
		ru.secrets = sec
	}
	if p.PriorExtract != nil {
		ru.extracted = outputRows(p.PriorExtract)
	}
	if p.FirstStep > 1 {
		ru.stopTrace("the run was resumed: the actions of its earlier steps are not at hand")
	}
	if p.Replay != nil && p.Replay.Trace != nil {
		ru.rp = &replayState{p: *p.Replay, following: true}
	}
	policy := llm.DefaultRetryPolicy()
	if r.Retry != nil {
		policy = *r.Retry
	}
	ru.controller = llm.WithRetry(ru.recorded(p.Controller, RoleController), policy, ru.onRetry(p.Controller))
	ru.judge = p.Judge
	if ru.judge == nil {
		ru.judge = ru.newJudge(policy)
	}
	ru.tools = EngineTools()
	var custom []string
	if p.Tools != nil {
		for _, t := range p.Tools.Tools() {
			ru.tools = append(ru.tools, t)
			custom = append(custom, t.Name)
		}
	}
	text := p.ControllerPrompt
	if text == "" {
		text = defaultControllerPrompt
	}
	tmpl, err := template.New("controller").Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, fmt.Errorf("controller prompt: %w", err)
	}
	var sys strings.Builder
	guidance := sec.guidance()
	if err := tmpl.Execute(&sys, PromptData{Goal: p.Goal, MinConfidence: p.MinConfidence,
		ActionsPerTurn: p.ActionsPerTurn, Tools: strings.Join(custom, ", "), Guidance: guidance}); err != nil {
		return nil, fmt.Errorf("controller prompt: %w", err)
	}
	ru.system = sys.String()
	if guidance != "" && !strings.Contains(ru.system, guidance) {
		ru.loginNote = guidance
	}
	ru.conv = conversation{depth: p.ScreenshotHistoryDepth, historyBudget: p.HistoryTokenBudget,
		historyTurns: p.HistoryTurns, turnBudget: p.TurnTokenBudget, fullSnapshots: 2}
	return ru, nil
}

// newJudge builds the run's judge from the judge parameters, its model
// calls recorded and retried like the controller's.
func (ru *run) newJudge(policy llm.RetryPolicy) judge.Judge {
	p := ru.p
	h := &judge.Heuristic{}
	if p.JudgeModel == nil || p.JudgeStrategy == JudgeHeuristic {
		return h
	}
	m := llm.WithRetry(ru.recorded(p.JudgeModel, RoleJudge), policy, ru.onRetry(p.JudgeModel))
	l := judge.NewLLM(m, p.JudgePrompt, judge.LLMOptions{})
	if p.JudgeStrategy == JudgeLLM {
		return l
	}
	return &judge.Hybrid{Heuristic: h, LLM: l}
}

func (ru *run) onRetry(m llm.Model) func(int, error, time.Duration) {
	return func(attempt int, err error, _ time.Duration) {
		if ru.r.OnModelRetry != nil {
			ru.r.OnModelRetry(m.Provider(), attempt, err)
		}
	}
}

func (ru *run) run() (Result, error) {
	start := ru.p.FirstStep
	ru.step = start
	ru.rec = &Step{Number: start, Start: time.Now(), Actor: "system"}
	if err := ru.sink.StepStarted(ru.record, start); err != nil {
		return Result{}, fmt.Errorf("record step start: %w", err)
	}
	if res, done := ru.open(); done {
		return ru.end(res)
	}
	if res, done := ru.resumeApproval(); done {
		return ru.end(res)
	}
	if res, done := ru.checkpoints(); done {
		return ru.end(res)
	}
	ru.rec.Actor = "model"
	for {
		res, done, err := ru.turn()
		if err != nil {
			return Result{}, err
		}
		if done {
			return ru.end(res)
		}
		if ru.step-ru.humanSteps >= ru.p.MaxSteps {
			return ru.end(Result{Status: StatusMaxSteps, Reason: fmt.Sprintf("the step limit (%d) was reached before the goal was confirmed", ru.p.MaxSteps)})
		}
		if err := ru.finishStep(); err != nil {
			return Result{}, err
		}
		if res, done, err := ru.humanTurn(); err != nil || done {
			if err != nil {
				return Result{}, err
			}
			return ru.end(res)
		}
		ru.step++
		ru.rec = &Step{Number: ru.step, Start: time.Now(), Actor: "model"}
		if err := ru.sink.StepStarted(ru.record, ru.step); err != nil {
			return Result{}, fmt.Errorf("record step start: %w", err)
		}
	}
}

// end records the current step and returns res; an interrupted run still
// records the partial step.
func (ru *run) end(res Result) (Result, error) {
	if ru.rec != nil {
		if res.Err != nil && ru.rec.Err == nil && res.Status != StatusInterrupted {
			ru.rec.Err = res.Err
		}
		ru.finalCriteria(res)
		if err := ru.finishStep(); err != nil {
			return Result{}, err
		}
	}
	return ru.result(res), nil
}

func (ru *run) result(res Result) Result {
	res.Steps = ru.step
	res.Usage, res.CostUSD = ru.usage, ru.cost
	res.Criteria = ru.criteria
	res.Output = ru.output
	if res.Output == nil && ru.extracted != nil {
		res.Output = ru.extracted
	}
	if res.Verdict == nil {
		res.Verdict = ru.verdict
	}
	res.Trace = ru.finalTrace(res)
	if ru.rp != nil {
		r := ru.rp.report
		r.Controller = ru.ctrl
		// The divergence quotes the trace and the page: redacted.
		r.Divergence = ru.redact.String(r.Divergence)
		res.Replay = &r
	}
	if ru.obs != nil {
		res.FinalURL, res.FinalScreenshot = ru.obs.url, ru.obs.png
	}
	if res.FinalURL == "" {
		res.FinalURL = ru.lastURL
	}
	return ru.redact.Result(res)
}

func (ru *run) finishStep() error {
	st := ru.rec
	ru.rec = nil
	st.End = time.Now()
	if st.URL == "" && ru.obs != nil {
		st.URL, st.Title, st.Screenshot = ru.obs.url, ru.obs.snap.Page.Title, ru.obs.png
	}
	if err := ru.sink.StepFinished(ru.record, *st); err != nil {
		return fmt.Errorf("record step %d: %w", st.Number, err)
	}
	sum := judge.StepSummary{Number: st.Number, URL: st.URL, Title: st.Title}
	if ru.obs != nil && ru.obs.img != nil {
		sum.ScreenshotHash = ru.obs.img.Ref
	}
	for _, a := range st.Actions {
		sum.Actions = append(sum.Actions, judge.Action{Tool: a.Tool, Args: shortArgs(a.Arguments), Outcome: a.Outcome})
	}
	if st.Err != nil {
		sum.Error = string(st.Err.Category) + ": " + st.Err.Message
	}
	ru.summary = append(ru.summary, sum)
	return nil
}

// open opens the start URL and takes the first observation. done is true
// when the run ended there.
func (ru *run) open() (Result, bool) {
	nav := Action{Tool: ToolNavigate, Arguments: map[string]any{"url": ru.p.StartURL}, Outcome: "ok"}
	begin := time.Now()
	recorded := false
	record := func() {
		if !recorded {
			recorded = true
			nav.Duration = time.Since(begin)
			ru.rec.Actions = append(ru.rec.Actions, nav)
		}
	}
	defer record()
	if err := ru.p.Policy.Check(ru.ctx, ru.p.StartURL); err != nil {
		nav.Outcome, nav.Message = string(browser.CodeDomainBlocked), err.Error()
		return Result{Status: StatusError, Err: &Error{Category: CategoryDomainBlocked, Message: err.Error(), Step: ru.step}}, true
	}
	if err := ru.openPage(ru.p.StartURL); err != nil {
		if ru.ctx.Err() != nil {
			return Result{Status: StatusInterrupted}, true
		}
		if e, ok := hookFailure(err, ru.step); ok {
			nav.Outcome, nav.Message = hookOutcome(err), e.Message
			ru.takeObservation(nil)
			return Result{Status: StatusError, Err: e}, true
		}
		e := classify(err, ru.step)
		nav.Outcome, nav.Message = "action_failed", err.Error()
		if e.Category == CategoryNavigationTimeout {
			nav.Outcome = string(browser.CodeTimeout)
		}
		if e.Category == CategoryBrowserCrash {
			record() // before the reopening that recover records
			if res, done := ru.recover(err); done {
				return res, true
			}
			return Result{}, false
		}
		ru.takeObservation(nil)
		return Result{Status: StatusError, Err: e}, true
	}
	if !ru.takeObservation(nil) {
		return ru.interruptedOrCrash()
	}
	if ru.ended != nil { // a hook's approval ended the run
		return *ru.ended, true
	}
	ru.startConversation()
	return Result{}, false
}

func (ru *run) openPage(url string) error {
	bctx, cancel := ru.browserCtx()
	defer cancel()
	s := ru.b.Session()
	s.SetActionOptions(browser.ActionOptions{Policy: ru.p.Policy, Timeout: ru.p.ActionTimeout,
		Snapshot: ru.snapshotOptions()})
	page, err := s.NewPage(bctx, ru.p.Page)
	if err != nil {
		return errors.Join(err, context.Cause(bctx))
	}
	ru.setPage(page)
	act := browser.Action{Kind: browser.ActionNavigate, URL: url}
	if err := ru.beforeAction(bctx, &act); err != nil {
		return err
	}
	if err := page.Navigate(bctx, url, ru.p.NavigationTimeout); err != nil {
		return errors.Join(err, context.Cause(bctx))
	}
	ru.lastURL = url
	hr, fatal := ru.afterAction(bctx, act, nil)
	ru.pending = append(ru.pending, hr.Notes...)
	if fatal != nil {
		return fatal
	}
	return nil
}

func (ru *run) snapshotOptions() browser.SnapshotOptions {
	return browser.SnapshotOptions{VisibleText: ru.observe}
}

// browserCtx is the run's ctx, also cancelled (with ErrBrowserGone) when
// the browser dies, so no browser wait outlives it.
func (ru *run) browserCtx() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ru.ctx)
	done := ru.b.Done()
	quit := make(chan struct{})
	go func() {
		select {
		case <-done:
			cancel(browser.ErrBrowserGone)
		case <-quit:
		case <-ctx.Done():
		}
	}()
	return ctx, func() { close(quit); cancel(nil) }
}

// takeObservation captures the page: snap (an action's fresh snapshot) or
// a new one, and a screenshot with the refs marked. It returns false when
// the browser is gone or ctx ended.
func (ru *run) takeObservation(snap *browser.Snapshot) bool {
	begin := time.Now()
	defer func() { ru.rec.Timings.Snapshot += time.Since(begin) }()
	bctx, cancel := ru.browserCtx()
	defer cancel()
	if ru.page == nil {
		return false
	}
	if snap == nil {
		sctx, scancel := context.WithTimeout(bctx, ru.p.ActionTimeout)
		s, err := ru.page.Snapshot(sctx, ru.snapshotOptions())
		scancel()
		if err != nil {
			return false
		}
		snap = s
	}
	ru.redact.Snapshot(snap)
	ru.acting = snap
	o := &observation{snap: snap, url: snap.Page.URL, text: snap.Text()}
	timeout := ru.r.ScreenshotTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	sctx, scancel := context.WithTimeout(bctx, timeout)
	img, err := ru.page.Capture(sctx, browser.ScreenshotOptions{Marks: snap})
	scancel()
	if err == nil {
		o.png = img.Data
		i := newImage(img.Data, "image/png")
		o.img = &i
	} else if bctx.Err() != nil {
		return false
	}
	ru.obs = o
	ru.lastURL = o.url
	ru.criteriaStale = true
	if o.img != nil {
		ru.history = append(ru.history, *o.img)
		if n := ru.p.ScreenshotHistoryDepth + 1; len(ru.history) > n {
			ru.history = ru.history[len(ru.history)-n:]
		}
	}
	return true
}

func (ru *run) startConversation() {
	parts := []llm.Part{{Text: "Goal: " + ru.p.Goal}}
	if ru.p.Resumed != "" {
		parts = append(parts, llm.Part{Text: "This run was resumed on another worker after the previous one stopped. " + ru.p.Resumed})
	}
	if ru.loginNote != "" {
		parts = append(parts, llm.Part{Text: ru.loginNote})
	}
	parts = append(parts, llm.Part{Text: "The browser opened " + ru.obs.url + ". Current page:\n" + untrusted(ru.obs.text)})
	if ru.obs.img != nil && ru.p.ScreenshotHistoryDepth > 0 {
		parts = append(parts, llm.Part{Image: ru.obs.img})
	}
	ru.conv.opening = llm.Message{Role: llm.RoleUser, Parts: parts}
}

// interruptedOrCrash ends the run when an observation failed.
func (ru *run) interruptedOrCrash() (Result, bool) {
	if ru.ctx.Err() != nil {
		return Result{Status: StatusInterrupted}, true
	}
	return ru.recover(browser.ErrBrowserGone)
}

// recover replaces a crashed browser and goes back to the last URL. done
// is true when the run cannot go on.
func (ru *run) recover(cause error) (Result, bool) {
	if ru.ctx.Err() != nil {
		return Result{Status: StatusInterrupted}, true
	}
	crash := &Error{Category: CategoryBrowserCrash, Message: "the browser crashed: " + cause.Error(), Step: ru.step}
	ru.rec.Err = crash
	if ru.renewals >= ru.p.MaxRenewals {
		crash.Message += fmt.Sprintf(" (after %d restarts)", ru.renewals)
		return Result{Status: StatusError, Err: crash}, true
	}
	ru.renewals++
	bctx, cancel := context.WithTimeout(ru.ctx, 2*ru.p.NavigationTimeout)
	_, err := ru.b.Renew(bctx)
	cancel()
	if err != nil {
		if ru.ctx.Err() != nil {
			return Result{Status: StatusInterrupted}, true
		}
		crash.Message += "; restarting it failed: " + err.Error()
		return Result{Status: StatusError, Err: crash}, true
	}
	url := ru.lastURL
	if url == "" {
		url = ru.p.StartURL
	}
	ru.page = nil
	if err := ru.openPage(url); err != nil && !errors.Is(err, browser.ErrNavigationTimeout) && !errors.Is(err, browser.ErrNavigation) {
		if ru.ctx.Err() != nil {
			return Result{Status: StatusInterrupted}, true
		}
		crash.Message += "; reopening " + url + " failed: " + err.Error()
		return Result{Status: StatusError, Err: crash}, true
	}
	ru.rec.Actions = append(ru.rec.Actions, Action{Tool: ToolNavigate, Arguments: map[string]any{"url": url},
		Outcome: "ok", Message: "reopened after a browser restart"})
	ru.recordAction(trace.Action{Step: ru.step, URL: url}, ToolNavigate, map[string]any{"url": url}, nil)
	ru.recoveredAt = time.Now()
	if !ru.takeObservation(nil) {
		if ru.ctx.Err() != nil {
			return Result{Status: StatusInterrupted}, true
		}
		return Result{Status: StatusError, Err: crash}, true
	}
	note := fmt.Sprintf("The browser crashed and was restarted (restart %d of at most %d); it reopened %s. Anything typed but not submitted is lost.", ru.renewals, ru.p.MaxRenewals, url)
	if ru.conv.opening.Parts == nil {
		ru.startConversation()
		ru.conv.opening.Parts = append(ru.conv.opening.Parts, llm.Part{Text: note})
	} else {
		ru.pending = append(ru.pending, note)
	}
	return Result{}, false
}

// turn runs one controller turn: ask, execute, observe, judge. done is
// true when the run ends with res.
func (ru *run) turn() (res Result, done bool, err error) {
	ru.askedAt = time.Now()
	var resp *llm.Response
	if ru.replaying() {
		var d *divergence
		if resp, d = ru.replayAnswer(); d != nil {
			if ru.ctx.Err() != nil {
				return Result{Status: StatusInterrupted}, true, nil
			}
			if r, done := ru.diverge(d); done {
				return r, true, nil
			}
		} else {
			ru.rec.Actor = ActorReplay
		}
	}
	if resp == nil {
		var fail *Result
		if resp, fail = ru.ask(); fail != nil {
			return *fail, true, nil
		}
	}
	ru.rec.Reasoning = strings.TrimSpace(resp.Text)
	t := turn{assistant: assistantMessage(resp)}
	out := ru.execute(resp.ToolCalls, &t)
	if ru.rec.Actor == ActorReplay {
		ru.rp.failed = ru.replayOutcome()
	}
	if out.interrupted {
		ru.answerUnanswered(&t, resp.ToolCalls, "not executed: the run was interrupted")
		return Result{Status: StatusInterrupted}, true, nil
	}
	if out.fatal != nil {
		ru.answerUnanswered(&t, resp.ToolCalls, "not executed: the run ended")
		ru.conv.turns = append(ru.conv.turns, t)
		ru.takeObservation(nil)
		return Result{Status: StatusError, Err: out.fatal}, true, nil
	}
	if out.crashed != nil {
		r, done := ru.recover(out.crashed)
		ru.answerUnanswered(&t, resp.ToolCalls, "not executed: the browser crashed and was restarted")
		ru.conv.turns = append(ru.conv.turns, t)
		if done {
			return r, true, nil
		}
		ru.attachObservation(&ru.conv.turns[len(ru.conv.turns)-1])
		return Result{}, false, nil
	}
	// The page after the turn: the last action's snapshot, or a new one.
	if !ru.takeObservation(out.snapshot) {
		if r, done := ru.interruptedOrCrash(); done {
			return r, true, nil
		}
	}
	if ru.ended != nil { // a hook's approval ended the run
		ru.answerUnanswered(&t, resp.ToolCalls, "not executed: the run ended")
		ru.conv.turns = append(ru.conv.turns, t)
		return *ru.ended, true, nil
	}
	// Checkpoints after every action: the run waits here for a human,
	// before the model sees the page again.
	if out.acted {
		if r, done := ru.checkpoints(); done {
			ru.answerUnanswered(&t, resp.ToolCalls, "not executed: the run ended at a checkpoint")
			ru.conv.turns = append(ru.conv.turns, t)
			return r, true, nil
		}
	}
	if out.claim != nil && out.claim.Status == "success" && ru.cps.guard >= 0 {
		// A success the human just refused to let happen is not one.
		ru.answer(&t, out.claimCall, map[string]any{"acknowledged": false,
			"message": "Not confirmed: a human rejected continuing at a checkpoint. Take another path, or call complete_task with status failed."}, true)
		ru.conv.turns = append(ru.conv.turns, t)
		ru.attachObservation(&ru.conv.turns[len(ru.conv.turns)-1])
		return Result{}, false, nil
	}
	check := ru.checkCriteria()
	if r, done := ru.decideByCriteria(&t, check, &out); done {
		if out.claim != nil && (out.claim.Status == "success") == (r.Status == StatusCompleted) {
			ru.output = out.data // the claim was acknowledged
		}
		ru.answerUnanswered(&t, resp.ToolCalls, "not executed: the run ended")
		ru.conv.turns = append(ru.conv.turns, t)
		return r, true, nil
	}
	if out.claim != nil && out.claim.Status == "success" && check != nil && len(check.unmet) > 0 {
		// A success the run's own indicators contradict needs no judge.
		ru.answer(&t, out.claimCall, map[string]any{"acknowledged": false, "message": check.unmetMessage()}, true)
		ru.conv.turns = append(ru.conv.turns, t)
		ru.attachObservation(&ru.conv.turns[len(ru.conv.turns)-1])
		return Result{}, false, nil
	}

	// A claim is verified before the loop goes on (seed 002 §1.7).
	if out.claim != nil {
		v, jerr := ru.evaluate(out.claim)
		if jerr != nil {
			ru.answer(&t, out.claimCall, map[string]any{"acknowledged": false, "error": "not_verified",
				"message": "the judge could not verify the claim"}, true)
			return ru.judgeFailed(jerr), true, nil
		}
		ack, msg := ru.acknowledge(out.claim, v)
		ru.answer(&t, out.claimCall, map[string]any{"acknowledged": ack, "message": msg}, !ack)
		ru.conv.turns = append(ru.conv.turns, t)
		ru.attachObservation(&ru.conv.turns[len(ru.conv.turns)-1])
		if ack {
			ru.output = out.data
			if out.claim.Status == "success" {
				return Result{Status: StatusCompleted, Verdict: &v, Reason: out.claim.Reason}, true, nil
			}
			return Result{Status: StatusFailed, Verdict: &v, Reason: out.claim.Reason}, true, nil
		}
		return Result{}, false, nil
	}
	ru.conv.turns = append(ru.conv.turns, t)
	ru.attachObservation(&ru.conv.turns[len(ru.conv.turns)-1])

	// A replayed step is on a known path: the judge looks at its end.
	if ru.rec.Actor != ActorReplay && (out.forceJudge || ru.p.JudgeFrequency.Due(ru.judgeContext(nil))) {
		v, jerr := ru.evaluate(nil)
		if jerr != nil {
			return ru.judgeFailed(jerr), true, nil
		}
		switch {
		case v.Done && check != nil && len(check.unmet) > 0:
			ru.pending = append(ru.pending, "The judge believes the goal is met, but the run's success indicators do not hold yet: "+strings.Join(check.unmet, ", ")+".")
		case v.Done:
			return Result{Status: StatusCompleted, Verdict: &v, Reason: v.Reason}, true, nil
		case v.Failed:
			return Result{Status: StatusFailed, Verdict: &v, Reason: v.Reason}, true, nil
		case v.Feedback != "" || v.SuggestedNextAction != "":
			note := "Judge feedback: " + v.Feedback
			if v.SuggestedNextAction != "" {
				note += " Suggested next action: " + v.SuggestedNextAction
			}
			ru.pending = append(ru.pending, note)
		}
	}
	if r, stop := ru.checkBudget(); stop {
		return r, true, nil
	}
	return Result{}, false, nil
}

// ask calls the controller until it answers with at least one tool call:
// unparseable answers and answers without a tool call are re-prompted
// (twice), model errors are retried by the retry policy.
func (ru *run) ask() (*llm.Response, *Result) {
	begin := time.Now()
	defer func() { ru.rec.Timings.Model += time.Since(begin) }()
	var extra []llm.Message
	for attempt := 0; ; attempt++ {
		req := ru.conv.request(ru.system, ru.tools)
		notes := len(ru.pending) // sent with this request
		if len(ru.pending) > 0 {
			last := &req.Messages[len(req.Messages)-1]
			last.Parts = append(append([]llm.Part(nil), last.Parts...), llm.Part{Text: strings.Join(ru.pending, "\n")})
		}
		req.Messages = append(req.Messages, extra...)
		req.ToolChoice = "any"
		if ru.observe {
			req.Observation = ru.observation()
		}
		resp, err := ru.controller.Complete(ru.ctx, req)
		if ru.ctx.Err() != nil {
			return nil, &Result{Status: StatusInterrupted}
		}
		if r, stop := ru.checkBudget(); stop {
			return nil, &r
		}
		switch {
		case err == nil && len(resp.ToolCalls) > 0:
			// Notes added since the request was built (the budget
			// warning of this very call) wait for the next one.
			ru.pending = ru.pending[notes:]
			if len(extra) > 0 {
				// Keep the exchange that led here in the history.
				ru.conv.turns = append(ru.conv.turns, turn{assistant: extra[0], results: extra[1], lean: extra[1]})
			}
			return resp, nil
		case err == nil || errors.Is(err, llm.ErrUnparseable):
			if attempt >= maxReprompts {
				msg := "the model answered without a tool call three times"
				cat := CategoryLLMParseError
				if err != nil {
					msg = err.Error()
				}
				return nil, &Result{Status: StatusError, Err: &Error{Category: cat, Message: msg, Step: ru.step}}
			}
			text := ""
			if resp != nil {
				text = resp.Text
			}
			if text == "" {
				text = "(no answer)"
			}
			nudge := "Answer with exactly one tool call from the tools offered, with JSON arguments that match its schema. If the goal is achieved or cannot be achieved, call complete_task."
			if err != nil {
				nudge = "Your last answer could not be parsed (" + truncate(err.Error(), 200) + "). " + nudge
			}
			extra = []llm.Message{{Role: llm.RoleAssistant, Parts: []llm.Part{{Text: text}}}, {Role: llm.RoleUser, Parts: []llm.Part{{Text: nudge}}}}
		default:
			return nil, &Result{Status: StatusError, Err: &Error{Category: CategoryLLMError, Message: err.Error(), Step: ru.step}}
		}
	}
}

func (ru *run) observation() *llm.Observation {
	o := &llm.Observation{Goal: ru.p.Goal}
	if ru.obs == nil {
		return o
	}
	s := ru.obs.snap
	o.URL, o.Title, o.Text, o.SnapshotID = s.Page.URL, s.Page.Title, s.VisibleText, s.ID
	for _, e := range s.Elements {
		o.Elements = append(o.Elements, llm.ObservedElement{Ref: e.Ref, Role: e.Role, Name: e.Name, Value: e.Value,
			State: e.State, Options: e.Options, Context: e.Context, Hint: e.Hint})
	}
	return o
}

func assistantMessage(resp *llm.Response) llm.Message {
	m := llm.Message{Role: llm.RoleAssistant}
	if resp.Text != "" {
		m.Parts = append(m.Parts, llm.Part{Text: resp.Text})
	}
	for i := range resp.ToolCalls {
		m.Parts = append(m.Parts, llm.Part{ToolCall: &resp.ToolCalls[i]})
	}
	return m
}

// executed is what a turn's tool calls did.
type executed struct {
	snapshot  *browser.Snapshot // the newest page snapshot an action returned
	claim     *judge.Claim
	claimCall llm.ToolCall
	// data is the claim's data argument, nil for none.
	data       any
	forceJudge bool
	// acted: a browser action ran (checkpoints are evaluated after it).
	acted       bool
	interrupted bool
	crashed     error
	// fatal is a hook's error that ends the run (authentication).
	fatal *Error
}

// execute runs the turn's tool calls in order: browser actions up to
// ActionsPerTurn (stopping early when the page changes), custom tools and
// get_snapshot; complete_task and request_human_approval end the turn.
// Every call gets an answer, as the vendors' APIs require.
func (ru *run) execute(calls []llm.ToolCall, t *turn) executed {
	var out executed
	browserActions := 0
	stopped := ""
	for _, call := range calls {
		if stopped != "" {
			ru.answerNotExecuted(t, call, stopped)
			continue
		}
		a, args, perr := parseArgs(call.Arguments)
		ru.note(Event{Kind: EventToolCalled, Step: ru.step, Tool: call.Name})
		switch {
		case perr != nil:
			ru.answerError(t, call, args, "invalid_params", perr.Error(), 0)
		case call.Name == ToolComplete:
			if a.Status != "success" && a.Status != "failed" {
				ru.answerError(t, call, args, "invalid_params", `status must be "success" or "failed"`, 0)
				continue
			}
			data, err := claimData(a.Data)
			if err != nil {
				args["data"] = fmt.Sprintf("(%d bytes, not kept)", len(a.Data))
				ru.answerError(t, call, args, "invalid_params", err.Error(), 0)
				continue
			}
			out.claim, out.claimCall, out.data = &judge.Claim{Status: a.Status, Reason: a.Reason}, call, data
			ru.rec.Actions = append(ru.rec.Actions, Action{Tool: call.Name, Arguments: args, Outcome: "ok"})
			t.summary = append(t.summary, summarize(call.Name, a, "ok"))
			stopped = "not executed: complete_task ends the turn"
		case call.Name == ToolApproval:
			ru.approval(t, call, a, args, &out)
			stopped = "not executed: request_human_approval ends the turn"
		case call.Name == ToolGetSnapshot:
			ru.getSnapshot(t, call, a, args, &out)
		case ru.p.Tools != nil && ru.p.Tools.Has(call.Name):
			ru.customTool(t, call, args)
		case isBrowserTool(call.Name):
			if browserActions >= ru.p.ActionsPerTurn {
				ru.answerNotExecuted(t, call, fmt.Sprintf("not executed: one browser action per turn (%d)", ru.p.ActionsPerTurn))
				continue
			}
			browserActions++
			changed := ru.browserTool(t, call, a, args, &out)
			if out.interrupted || out.crashed != nil || out.fatal != nil || ru.ended != nil {
				stopped = "not executed"
				continue
			}
			if changed {
				stopped = "not executed: the page changed; look at the new snapshot first"
			} else if ru.atCheckpoint(out.snapshot) {
				stopped = "not executed: the page reached a human checkpoint"
			}
		default:
			ru.answerError(t, call, args, "invalid_params", "unknown tool "+call.Name, 0)
		}
	}
	return out
}

// browserTool executes one browser action. changed reports that the page
// changed (navigation, a new tab).
func (ru *run) browserTool(t *turn, call llm.ToolCall, a toolArgs, args map[string]any, out *executed) (changed bool) {
	if a.Confidence != nil && ru.p.MinConfidence > 0 && *a.Confidence < ru.p.MinConfidence {
		msg := fmt.Sprintf("not executed: confidence %.2f is below the run's threshold %.2f. Look at the snapshot and screenshot again and choose an action you are sure of.", *a.Confidence, ru.p.MinConfidence)
		ru.answerError(t, call, args, "low_confidence", msg, 0)
		return false
	}
	if call.Name == ToolTabs && (a.Action == "" || a.Action == "list") {
		tabs := ru.b.Session().Tabs()
		ru.answer(t, call, map[string]any{"success": true, "tabs": tabs}, false)
		ru.rec.Actions = append(ru.rec.Actions, Action{Tool: call.Name, Arguments: args, Outcome: "ok"})
		return false
	}
	act, _, err := browserAction(call.Name, a, ru.p.ActionTimeout)
	if err != nil {
		ru.answerError(t, call, args, string(browser.CodeInvalidParams), err.Error(), 0)
		return false
	}
	// A checkpoint the human rejected still guards its page.
	allowed, _, done := ru.guarded(call.Name, a, func(msg string) {
		ru.answerError(t, call, args, humanRejected, msg, 0)
	})
	if done {
		if ru.ctx.Err() != nil {
			out.interrupted = true
		}
		ru.answerError(t, call, args, humanRejected, "not executed: the run ended while awaiting approval", 0)
		return false
	}
	if !allowed {
		return false
	}
	begin := time.Now()
	bctx, cancel := ru.browserCtx()
	if herr := ru.beforeAction(bctx, &act); herr != nil {
		cancel()
		code, msg, fatal := refusal(herr)
		if fatal != nil {
			ru.answerError(t, call, args, string(browser.CodeActionFailed), fatal.Message, time.Since(begin))
			out.fatal = fatal
			return false
		}
		if ru.ctx.Err() != nil {
			ru.answerError(t, call, args, string(browser.CodeActionFailed), msg, time.Since(begin))
			out.interrupted = true
			return false
		}
		ru.answerError(t, call, args, code, msg, time.Since(begin))
		if code == string(browser.CodeDomainBlocked) {
			ru.rec.Err = &Error{Category: CategoryDomainBlocked, Message: msg, Step: ru.step}
		}
		return false
	}
	// Secrets are put in last, on the page the action runs on now.
	asked := act.Value
	if refused := ru.fillSecrets(bctx, &act); refused != nil {
		cancel()
		ru.answerError(t, call, args, refused.code, refused.msg, time.Since(begin))
		return false
	}
	var captured trace.Action
	if ru.noTrace == "" {
		captured = ru.captureTarget(bctx, act)
	}
	out.acted = true
	res, err := ru.page.Do(bctx, act)
	if err == nil {
		if act.Value != asked && res.Value == act.Value {
			res.Value = asked // the field holds what the placeholders stand for
		}
		ru.redact.ActionResult(res)
	}
	act.Value = asked // the secrets' values go no further
	cause := context.Cause(bctx)
	var hooked HookResult
	var fatal *Error
	if err == nil {
		if res.Page != nil && res.Page != ru.page {
			ru.setPage(res.Page)
		}
		hooked, fatal = ru.afterAction(bctx, act, res)
	}
	cancel()
	ru.rec.Timings.Action += time.Since(begin)
	if err != nil {
		// Answered (and recorded) here, so the call has its one record and
		// its result event even though the run stops or recovers.
		ru.answerError(t, call, args, string(browser.CodeActionFailed), err.Error(), time.Since(begin))
		if ru.ctx.Err() != nil {
			out.interrupted = true
			return false
		}
		if errors.Is(cause, browser.ErrBrowserGone) || errors.Is(err, browser.ErrBrowserGone) {
			out.crashed = errors.Join(err, cause)
			return false
		}
		out.crashed = err // the page cannot be used any more
		return false
	}
	if hooked.Changed {
		// The hook changed the page after the action's snapshot.
		res.Snapshot, res.SnapshotError = nil, ""
	}
	if res.Snapshot != nil {
		out.snapshot = res.Snapshot
	}
	ru.acting = res.Snapshot // nil when the page after the action is unknown
	if res.Error == nil {
		ru.recordAction(captured, call.Name, args, res)
	}
	if act.Kind == browser.ActionExtract && res.Error == nil && res.Rows != nil {
		ru.extracted = outputRows(res.Rows) // redacted with the result above
	}
	outcome, msg := "ok", res.Note
	if res.Error != nil {
		outcome, msg = string(res.Error.Code), res.Error.Message
	}
	ru.rec.Actions = append(ru.rec.Actions, Action{Tool: call.Name, Arguments: args, Outcome: outcome, Message: msg,
		Strategy: string(res.Strategy), Result: actionResult(res), Duration: res.Duration})
	t.summary = append(t.summary, summarize(call.Name, a, outcome))
	body := toolResultBody(res)
	if res.Error != nil && elementError(res.Error.Code) && (act.Ref != "" || act.Target != nil) {
		ru.failures++
		tried := string(res.Strategy)
		if tried == "" {
			tried = "ref"
			if act.Target != nil {
				tried = "target"
			}
		}
		body["self_correction"] = fmt.Sprintf("attempt %d of %d: the %s strategy failed; try a different one (another ref from the new snapshot, a target by role and name, by text, or browser_click_at with coordinates from the screenshot)", ru.failures, maxSelfCorrections, tried)
		ru.rec.Err = &Error{Category: CategoryElementNotFound, Message: msg, Step: ru.step}
		if ru.failures >= maxSelfCorrections {
			out.forceJudge = true
			ru.failures = 0
		}
	} else if res.Error == nil {
		ru.failures = 0
	}
	if res.Error != nil && res.Error.Code == browser.CodeDomainBlocked {
		ru.rec.Err = &Error{Category: CategoryDomainBlocked, Message: msg, Step: ru.step}
		body["hint"] = "this domain is not allowed for the run; choose another path"
	}
	if len(hooked.Notes) > 0 {
		body["notes"] = hooked.Notes
	}
	ru.answer(t, call, body, res.Error != nil)
	if fatal != nil {
		out.fatal = fatal
	}
	return res.Navigated || res.OpenedTab || hooked.Changed
}

func toolResultBody(res *browser.ActionResult) map[string]any {
	body := map[string]any{"success": res.Success, "error": nil}
	if res.Error != nil {
		body["error"] = string(res.Error.Code)
		body["message"] = res.Error.Message
		if res.Error.Covering != "" {
			body["covering"] = res.Error.Covering
		}
	}
	for k, v := range actionResult(res) {
		body[k] = v
	}
	if res.Snapshot != nil {
		body["snapshot"] = untrusted(res.Snapshot.Text())
	} else if res.SnapshotError != "" {
		body["snapshot_error"] = res.SnapshotError
	}
	return body
}

// actionResult is what an action produced besides success and its
// snapshot, for the record and the model.
func actionResult(res *browser.ActionResult) map[string]any {
	m := map[string]any{}
	if res.Strategy != "" {
		m["strategy"] = string(res.Strategy)
	}
	if res.Note != "" {
		m["note"] = res.Note
	}
	if res.Value != "" {
		m["value"] = res.Value
	}
	if res.Checked != nil {
		m["checked"] = *res.Checked
	}
	if res.URL != "" {
		m["url"] = res.URL
	}
	if res.Navigated {
		m["navigated"] = true
	}
	if res.OpenedTab {
		m["opened_tab"] = res.Tab
	}
	if len(res.Dialogs) > 0 {
		m["dialogs"] = toJSONValue(res.Dialogs)
	}
	if res.Rows != nil {
		m["rows"] = toJSONValue(res.Rows)
		m["rows_matched"] = res.RowsMatched
	}
	if res.Scroll != nil {
		m["scroll"] = toJSONValue(res.Scroll)
	}
	return m
}

// toJSONValue turns v into plain JSON values (maps, slices, strings,
// float64s) so it fits a structpb.Struct.
func toJSONValue(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

func (ru *run) getSnapshot(t *turn, call llm.ToolCall, a toolArgs, args map[string]any, out *executed) {
	begin := time.Now()
	opts := ru.snapshotOptions()
	opts.ViewportOnly, opts.Filter, opts.Offset = a.ViewportOnly, a.Filter, a.Offset
	bctx, cancel := ru.browserCtx()
	snap, err := ru.page.Snapshot(bctx, opts)
	cause := context.Cause(bctx)
	cancel()
	ru.rec.Timings.Snapshot += time.Since(begin)
	if err != nil {
		switch {
		case ru.ctx.Err() != nil:
			out.interrupted = true
		case errors.Is(cause, browser.ErrBrowserGone) || errors.Is(err, browser.ErrBrowserGone):
			out.crashed = errors.Join(err, cause)
		default:
			ru.answerError(t, call, args, string(browser.CodeActionFailed), err.Error(), time.Since(begin))
		}
		return
	}
	ru.redact.Snapshot(snap)
	ru.acting = snap
	if opts.Filter == "" && opts.Offset == 0 && !opts.ViewportOnly {
		out.snapshot = snap
	}
	ru.rec.Actions = append(ru.rec.Actions, Action{Tool: call.Name, Arguments: args, Outcome: "ok", Duration: time.Since(begin)})
	t.summary = append(t.summary, summarize(call.Name, a, "ok"))
	ru.answer(t, call, map[string]any{"success": true, "error": nil, "snapshot": untrusted(snap.Text())}, false)
}

func (ru *run) customTool(t *turn, call llm.ToolCall, args map[string]any) {
	begin := time.Now()
	result, err := ru.p.Tools.Call(ru.ctx, call.Name, call.Arguments)
	ru.rec.Timings.Action += time.Since(begin)
	if err != nil {
		code, msg := "tool_execution_error", err.Error()
		var te *tools.Error
		if errors.As(err, &te) {
			code, msg = te.Code, te.Message
		}
		msg = ru.redact.String(msg)
		if ru.ctx.Err() != nil {
			msg = "interrupted"
		}
		ru.rec.Err = &Error{Category: CategoryToolExecution, Message: call.Name + ": " + msg, Step: ru.step}
		ru.answerError(t, call, args, code, "ToolExecutionError: "+msg, time.Since(begin))
		return
	}
	result = ru.redact.Bytes(result)
	var value any
	_ = json.Unmarshal(result, &value)
	resMap, _ := value.(map[string]any)
	if resMap == nil {
		resMap = map[string]any{"value": value}
	}
	ru.rec.Actions = append(ru.rec.Actions, Action{Tool: call.Name, Arguments: args, Outcome: "ok", Result: resMap, Duration: time.Since(begin)})
	ru.recordAction(ru.captureTarget(ru.ctx, browser.Action{}), call.Name, args, nil)
	t.summary = append(t.summary, fmt.Sprintf("%s(): success", call.Name))
	t.results.Parts = append(t.results.Parts, llm.Part{ToolResult: &llm.ToolResult{CallID: call.ID, Name: call.Name, Content: string(result)}})
	t.lean.Parts = append(t.lean.Parts, t.results.Parts[len(t.results.Parts)-1])
	ru.note(Event{Kind: EventToolResult, Step: ru.step, Tool: call.Name, Outcome: "ok"})
}

func (ru *run) answer(t *turn, call llm.ToolCall, body map[string]any, isError bool) {
	content, err := marshalResult(body)
	if err != nil {
		content = []byte(`{"success":false,"error":"action_failed"}`)
	}
	t.results.Parts = append(t.results.Parts, llm.Part{ToolResult: &llm.ToolResult{CallID: call.ID, Name: call.Name, Content: string(content), IsError: isError}})
	lean := body
	if _, ok := body["snapshot"]; ok {
		lean = map[string]any{}
		for k, v := range body {
			lean[k] = v
		}
		lean["snapshot"] = "(older snapshot omitted)"
		content, _ = marshalResult(lean)
	}
	t.lean.Parts = append(t.lean.Parts, llm.Part{ToolResult: &llm.ToolResult{CallID: call.ID, Name: call.Name, Content: string(content), IsError: isError}})
	outcome := "ok"
	if isError {
		outcome, _ = body["error"].(string)
	}
	ru.note(Event{Kind: EventToolResult, Step: ru.step, Tool: call.Name, Outcome: outcome})
}

// marshalResult encodes a tool result for the model without HTML escaping:
// json.Marshal would send the untrusted-content delimiters as
// \u003cuntrusted_page_content\u003e, not as the system prompt names them.
func marshalResult(body map[string]any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(body); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

func (ru *run) answerError(t *turn, call llm.ToolCall, args map[string]any, code, msg string, d time.Duration) {
	msg = ru.redact.String(msg)
	ru.rec.Actions = append(ru.rec.Actions, Action{Tool: call.Name, Arguments: args, Outcome: code, Message: msg, Duration: d})
	t.summary = append(t.summary, fmt.Sprintf("%s: failed (%s)", call.Name, code))
	ru.answer(t, call, map[string]any{"success": false, "error": code, "message": msg}, true)
}

func (ru *run) answerNotExecuted(t *turn, call llm.ToolCall, why string) {
	_, args, _ := parseArgs(call.Arguments)
	ru.rec.Actions = append(ru.rec.Actions, Action{Tool: call.Name, Arguments: args, Outcome: "not_executed", Message: why})
	ru.answer(t, call, map[string]any{"success": false, "error": "not_executed", "message": why}, true)
}

// answerUnanswered answers the calls of t that have no result yet.
func (ru *run) answerUnanswered(t *turn, calls []llm.ToolCall, why string) {
	answered := map[string]bool{}
	for _, p := range t.results.Parts {
		if p.ToolResult != nil {
			answered[p.ToolResult.CallID] = true
		}
	}
	for _, c := range calls {
		if !answered[c.ID] {
			ru.answerNotExecuted(t, c, why)
		}
	}
}

// attachObservation adds the screenshot after the turn and any pending
// notes to the turn's answer.
func (ru *run) attachObservation(t *turn) {
	if ru.obs != nil && ru.obs.img != nil && ru.p.ScreenshotHistoryDepth > 0 {
		t.results.Parts = append(t.results.Parts, llm.Part{Image: ru.obs.img})
		t.lean.Parts = append(t.lean.Parts, llm.Part{Image: ru.obs.img})
	}
	if len(t.results.Parts) == 0 {
		t.results.Parts = []llm.Part{{Text: "(nothing executed)"}}
		t.lean.Parts = t.results.Parts
	}
	t.results.Role, t.lean.Role = llm.RoleUser, llm.RoleUser
}

func (ru *run) note(e Event) {
	_ = ru.sink.Event(ru.record, e)
}

// evaluate asks the judge, with a claim to verify or without.
func (ru *run) evaluate(claim *judge.Claim) (judge.Verdict, error) {
	begin := time.Now()
	defer func() { ru.rec.Timings.Judge += time.Since(begin) }()
	v, err := ru.judge.Evaluate(ru.ctx, ru.judgeContext(claim))
	if err != nil {
		return v, err
	}
	v = *ru.redact.Verdict(&v)
	ru.verdict = &v
	ru.rec.Verdict = &v
	ru.note(Event{Kind: EventJudgeVerdict, Step: ru.step, Verdict: &v, Message: v.Reason})
	return v, nil
}

func (ru *run) judgeContext(claim *judge.Claim) *judge.Context {
	c := &judge.Context{Goal: ru.p.Goal, StepNumber: ru.step, MaxSteps: ru.p.MaxSteps, Claim: claim}
	if ru.obs != nil {
		c.Page = ru.obs.text
		c.Screenshot = ru.obs.img
	}
	if n := len(ru.history); n > 1 {
		c.ScreenshotHistory = ru.history[:n-1]
	}
	c.Steps = append(append([]judge.StepSummary(nil), ru.summary...), ru.currentSummary())
	ru.redact.JudgeContext(c)
	return c
}

// currentSummary summarises the step in progress for the judge.
func (ru *run) currentSummary() judge.StepSummary {
	s := judge.StepSummary{Number: ru.step}
	if ru.obs != nil {
		s.URL, s.Title = ru.obs.url, ru.obs.snap.Page.Title
		if ru.obs.img != nil {
			s.ScreenshotHash = ru.obs.img.Ref
		}
	}
	for _, a := range ru.rec.Actions {
		s.Actions = append(s.Actions, judge.Action{Tool: a.Tool, Args: shortArgs(a.Arguments), Outcome: a.Outcome})
	}
	// A browser crash recovered from before the model looked at the page
	// says nothing about the page the model judged; one during the turn
	// does (the state the model acted on may be gone).
	recoveredBefore := ru.rec.Err != nil && ru.rec.Err.Category == CategoryBrowserCrash && ru.recoveredAt.Before(ru.askedAt)
	if ru.rec.Err != nil && !recoveredBefore {
		s.Error = string(ru.rec.Err.Category) + ": " + ru.rec.Err.Message
	}
	return s
}

// acknowledge decides the answer to complete_task from the judge's verdict:
// a success claim needs the judge's confirmation; a failure claim is
// accepted (seed 002 §1.7.3).
func (ru *run) acknowledge(c *judge.Claim, v judge.Verdict) (bool, string) {
	if c.Status == "failed" {
		return true, ""
	}
	if v.Done {
		return true, ""
	}
	why := v.Feedback
	if why == "" {
		why = v.Reason
	}
	if why == "" {
		why = "the judge could not confirm that the goal is met"
	}
	return false, "Not confirmed: " + why + " Continue working on the goal, or call complete_task with status failed if it cannot be achieved."
}

func (ru *run) judgeFailed(err error) Result {
	if ru.ctx.Err() != nil {
		return Result{Status: StatusInterrupted}
	}
	cat := CategoryLLMError
	if errors.Is(err, llm.ErrUnparseable) {
		cat = CategoryLLMParseError
	}
	return Result{Status: StatusError, Err: &Error{Category: cat, Message: "judge: " + err.Error(), Step: ru.step}}
}

// checkBudget ends the run when its token or cost limit is reached and
// warns the model once past 80%.
func (ru *run) checkBudget() (Result, bool) {
	p := ru.p
	tokens := ru.usage.Total()
	switch {
	case p.MaxTokens > 0 && tokens >= p.MaxTokens:
		return Result{Status: StatusError, Err: &Error{Category: CategoryBudgetExceeded, Step: ru.step,
			Message: fmt.Sprintf("the run used %d tokens, its max_tokens is %d", tokens, p.MaxTokens)}}, true
	case p.MaxCostUSD > 0 && ru.cost >= p.MaxCostUSD:
		return Result{Status: StatusError, Err: &Error{Category: CategoryBudgetExceeded, Step: ru.step,
			Message: fmt.Sprintf("the run cost $%.4f, its max_cost_usd is $%.4f", ru.cost, p.MaxCostUSD)}}, true
	}
	if !ru.warned && ((p.MaxTokens > 0 && float64(tokens) >= budgetWarnFraction*float64(p.MaxTokens)) ||
		(p.MaxCostUSD > 0 && ru.cost >= budgetWarnFraction*p.MaxCostUSD)) {
		ru.warned = true
		ru.pending = append(ru.pending, "Budget warning: this run has used over 80% of its token or cost budget. Finish quickly: complete the goal in as few actions as possible or call complete_task.")
	}
	return Result{}, false
}

func shortArgs(args map[string]any) string {
	var parts []string
	for _, k := range []string{"ref", "url", "value", "keys", "text", "direction", "status"} {
		if v, ok := args[k]; ok {
			parts = append(parts, fmt.Sprintf("%v", v))
		}
	}
	return truncate(strings.Join(parts, ", "), 120)
}

// recorded wraps m so every call is reported to the sink as a prompt run
// of role, with its usage and cost added to the run's totals.
func (ru *run) recorded(m llm.Model, role Role) llm.Model {
	return &recorder{m: m, ru: ru, role: role}
}

// recorder reports each call of m as a prompt run.
type recorder struct {
	m    llm.Model
	ru   *run
	role Role
}

func (rc *recorder) Provider() string { return rc.m.Provider() }
func (rc *recorder) Name() string     { return rc.m.Name() }

func (rc *recorder) Complete(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	ru := rc.ru
	ctx = promptrunner.WithCall(ctx, ru.p.RunID, string(rc.role), ru.step)
	// What the model is sent and what is recorded are the same, redacted
	// request; the answer is redacted before the loop acts on it, so a
	// value the model wrote anyway is recorded as its placeholder.
	req = ru.redact.Request(req)
	pr := PromptRun{Step: ru.step, Role: rc.role, Provider: rc.m.Provider(), Model: rc.m.Name(), Request: req, Start: time.Now()}
	if pr.PromptRef = ru.p.ControllerPromptRef; rc.role == RoleJudge {
		pr.PromptRef = ru.p.JudgePromptRef
	}
	resp, err := rc.m.Complete(ctx, req)
	if err == nil && resp == nil {
		err = &llm.Error{Class: llm.ErrRefused, Provider: rc.m.Provider(), Message: "empty answer"}
	}
	resp = ru.redact.Response(resp)
	err = ru.redact.err(err)
	pr.End = time.Now()
	if err != nil {
		pr.Err = err.Error()
	} else {
		pr.Response, pr.Usage = resp, resp.Usage
		if resp.Model != "" {
			pr.Model = resp.Model
		}
		pr.CostUSD, _ = ru.p.Prices.Cost(pr.Provider, pr.Model, resp.Usage)
		ru.usage = ru.usage.Add(resp.Usage)
		ru.cost += pr.CostUSD
		if rc.role == RoleController {
			ru.ctrl.Calls++
			ru.ctrl.InputTokens += int64(resp.Usage.InputTokens)
			ru.ctrl.OutputTokens += int64(resp.Usage.OutputTokens)
			ru.ctrl.CostUSD += pr.CostUSD
		}
		if ru.rec != nil {
			ru.rec.Usage = ru.rec.Usage.Add(resp.Usage)
			ru.rec.CostUSD += pr.CostUSD
		}
	}
	if serr := ru.sink.PromptRun(ru.record, pr); serr != nil && err == nil {
		return nil, fmt.Errorf("record prompt run: %w", serr)
	}
	return resp, err
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
