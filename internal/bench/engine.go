package bench

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/wayfinder/wayfinder/internal/browser"
	"github.com/wayfinder/wayfinder/internal/llm"
	"github.com/wayfinder/wayfinder/internal/pool"
	"github.com/wayfinder/wayfinder/internal/runner"
)

// engineScreenshotDepth is how many screenshots the controller sees: the
// API's default screenshot_history_depth.
const engineScreenshotDepth = 3

// allPages names EngineResult.All.
const allPages = "all pages"

// EngineResult is the agent engine measured on the benchmark pages: the
// real runner loop (runner.Runner.Run) on a context leased from the pool,
// with a zero-latency scripted controller, the heuristic judge and an
// in-memory sink.
type EngineResult struct {
	// Runs is the number of recorded runs per page; Actions the browser
	// actions of each (then complete_task).
	Runs, Actions int
	// ScreenshotDepth is how many screenshots the controller sees.
	ScreenshotDepth int
	// Pages holds the figures per page, in page order.
	Pages []EnginePage
	// All pools the samples of every page.
	All EnginePage
}

// EnginePage is the engine's figures on one page (or on all, pooled).
// Times are in milliseconds.
type EnginePage struct {
	Page Page
	// Step is a step's wall time, from its start to its record; Overhead
	// is Step without the model call: what the engine spends per step.
	// Only steps after the first (which opens the page) that ran a
	// browser action are counted.
	Step, Overhead Summary
	// The phases of a step, from runner.Step.Timings. Settled is the
	// browser action to settled (its own Duration); ResultSnapshot the
	// rest of Timings.Action, the fresh snapshot the action's result
	// carries. Snapshot is Timings.Snapshot, the observation after the
	// action (snapshot text and the marked screenshot); Judge is
	// Timings.Judge. Model is the model call itself (the scripted model's:
	// about zero); Conversation the rest of Timings.Model (building the
	// request, the retry wrapper, the prompt-run record). Rest is what no
	// timing covers (dispatch, tool results, the step record, events).
	Settled, ResultSnapshot, Snapshot, Judge, Model, Conversation, Rest Summary
	// Tokens are the input tokens of the controller requests.
	Tokens EngineTokens
	// Err is the failure that cut the page's runs short.
	Err string
}

// EngineTokens are the input tokens of the controller requests the engine
// built, one per step, every step of the recorded runs.
type EngineTokens struct {
	// Requests is the number of requests counted.
	Requests int
	// Text is a request's text (system prompt, tool definitions, messages)
	// counted with the report's tokenizer; Images its screenshots at
	// width×height/750, as Anthropic bills them; Total both.
	Text, Images, Total Summary
	// Screenshots is the number of screenshots in a request.
	Screenshots Summary
	// Snapshot is the current page's snapshot (in the newest message);
	// History is the rest of the messages: the goal, earlier turns with
	// their tool calls and results (older snapshots included).
	Snapshot, History Summary
	// System and Tools are the system prompt's and the tool definitions'
	// tokens, largest over the requests (they do not change in a run).
	System, Tools int
	// Sum adds up every request's parts, for the shares of the whole.
	Sum TokenSums
}

// TokenSums are token counts by part of a request, summed.
type TokenSums struct {
	System, Tools, Snapshot, History, Images int
}

func (s TokenSums) total() int { return s.System + s.Tools + s.Snapshot + s.History + s.Images }

func (s *TokenSums) add(o TokenSums) {
	s.System += o.System
	s.Tools += o.Tools
	s.Snapshot += o.Snapshot
	s.History += o.History
	s.Images += o.Images
}

// engineSamples accumulates one page's raw engine measurements.
type engineSamples struct {
	step, overhead, settled, resultSnapshot, snapshot, judge, model, conversation, rest []time.Duration

	text, images, total, shots, snapshotTokens, history []int
	system, tools                                       int
	sum                                                 TokenSums
}

func (s *engineSamples) merge(o *engineSamples) {
	s.step = append(s.step, o.step...)
	s.overhead = append(s.overhead, o.overhead...)
	s.settled = append(s.settled, o.settled...)
	s.resultSnapshot = append(s.resultSnapshot, o.resultSnapshot...)
	s.snapshot = append(s.snapshot, o.snapshot...)
	s.judge = append(s.judge, o.judge...)
	s.model = append(s.model, o.model...)
	s.conversation = append(s.conversation, o.conversation...)
	s.rest = append(s.rest, o.rest...)
	s.text = append(s.text, o.text...)
	s.images = append(s.images, o.images...)
	s.total = append(s.total, o.total...)
	s.shots = append(s.shots, o.shots...)
	s.snapshotTokens = append(s.snapshotTokens, o.snapshotTokens...)
	s.history = append(s.history, o.history...)
	s.system, s.tools = max(s.system, o.system), max(s.tools, o.tools)
	s.sum.add(o.sum)
}

func (s *engineSamples) result(pg Page, err error) EnginePage {
	r := EnginePage{
		Page:           pg,
		Step:           SummarizeDurations(s.step),
		Overhead:       SummarizeDurations(s.overhead),
		Settled:        SummarizeDurations(s.settled),
		ResultSnapshot: SummarizeDurations(s.resultSnapshot),
		Snapshot:       SummarizeDurations(s.snapshot),
		Judge:          SummarizeDurations(s.judge),
		Model:          SummarizeDurations(s.model),
		Conversation:   SummarizeDurations(s.conversation),
		Rest:           SummarizeDurations(s.rest),
		Tokens: EngineTokens{
			Requests:    len(s.text),
			Text:        SummarizeInts(s.text),
			Images:      SummarizeInts(s.images),
			Total:       SummarizeInts(s.total),
			Screenshots: SummarizeInts(s.shots),
			Snapshot:    SummarizeInts(s.snapshotTokens),
			History:     SummarizeInts(s.history),
			System:      s.system,
			Tools:       s.tools,
			Sum:         s.sum,
		},
	}
	if err != nil {
		r.Err = err.Error()
	}
	return r
}

// addRun adds the steps and controller requests of one run.
func (s *engineSamples) addRun(rec *engineSink, tok *Tokenizer) error {
	steps, prompts := rec.recorded()
	model := map[int]time.Duration{}
	for _, pr := range prompts {
		if pr.Role != runner.RoleController {
			continue
		}
		model[pr.Step] += pr.End.Sub(pr.Start)
		if pr.Request == nil {
			continue
		}
		rt, err := countRequest(pr.Request, tok)
		if err != nil {
			return fmt.Errorf("controller request of step %d: %w", pr.Step, err)
		}
		s.text = append(s.text, rt.text())
		s.images = append(s.images, rt.Images)
		s.total = append(s.total, rt.total())
		s.shots = append(s.shots, rt.screenshots)
		s.snapshotTokens = append(s.snapshotTokens, rt.Snapshot)
		s.history = append(s.history, rt.History)
		s.system, s.tools = max(s.system, rt.System), max(s.tools, rt.Tools)
		s.sum.add(rt.TokenSums)
	}
	for _, st := range steps {
		settled, ok := browserActions(st)
		if st.Number < 2 || !ok {
			continue
		}
		wall := st.End.Sub(st.Start)
		t := st.Timings
		m := model[st.Number]
		s.step = append(s.step, wall)
		s.overhead = append(s.overhead, wall-m)
		s.settled = append(s.settled, settled)
		s.resultSnapshot = append(s.resultSnapshot, t.Action-settled)
		s.snapshot = append(s.snapshot, t.Snapshot)
		s.judge = append(s.judge, t.Judge)
		s.model = append(s.model, m)
		s.conversation = append(s.conversation, t.Model-m)
		s.rest = append(s.rest, wall-t.Snapshot-t.Action-t.Judge-t.Model)
	}
	return nil
}

// browserActions sums the durations (to settled, without the result's
// snapshot) of st's browser actions; ok is false when it ran none.
func browserActions(st runner.Step) (d time.Duration, ok bool) {
	for _, a := range st.Actions {
		if strings.HasPrefix(a.Tool, "browser_") {
			d += a.Duration
			ok = true
		}
	}
	return d, ok
}

// measureEngine runs the agent loop on every page: one unrecorded warm-up
// run on the first page, then runs recorded runs per page, each of
// actions browser actions and complete_task.
func measureEngine(ctx context.Context, p *pool.Pool, site *Site, pages []Page, tok *Tokenizer, runs, actions int, logf func(string, ...any)) EngineResult {
	res := EngineResult{Runs: runs, Actions: actions, ScreenshotDepth: engineScreenshotDepth}
	if len(pages) == 0 {
		return res
	}
	if _, err := runEngine(ctx, p, site.URL+pages[0].Path, pages[0], actions); err != nil {
		logf("engine: warm-up run failed: %v", err)
	}
	var all engineSamples
	for _, pg := range pages {
		logf("engine: page %s: %d runs of %d actions", pg.Name, runs, actions)
		var s engineSamples
		var err error
		for i := range runs {
			var rec *engineSink
			rec, err = runEngine(ctx, p, site.URL+pg.Path, pg, actions)
			if err == nil {
				err = s.addRun(rec, tok)
			}
			if err != nil {
				err = fmt.Errorf("run %d: %w", i+1, err)
				logf("engine: page %s: %v", pg.Name, err)
				break
			}
		}
		all.merge(&s)
		res.Pages = append(res.Pages, s.result(pg, err))
		if ctx.Err() != nil {
			break
		}
	}
	res.All = all.result(Page{Name: allPages}, nil)
	return res
}

// runEngine runs the agent loop once on pg at url in a new context: the
// scripted controller takes actions browser actions, then completes.
func runEngine(ctx context.Context, p *pool.Pool, url string, pg Page, actions int) (*engineSink, error) {
	_, rec, err := agentRun(ctx, p, url, pg, actions, nil)
	return rec, err
}

// scriptedController answers at once: click target, fill the first text
// field (or click again when there is none), and so on for actions
// actions, each on an element of the snapshot in the request; then
// complete_task.
func scriptedController(target Target, actions int) llm.Model {
	turns := make([]llm.Turn, 0, actions+1)
	for i := range actions {
		turns = append(turns, func(req *llm.Request) (*llm.Response, error) {
			call, err := nextAction(req, target, i)
			if err != nil {
				return nil, err
			}
			return llm.Reply("", call)(req)
		})
	}
	turns = append(turns, llm.Reply("", llm.Call(runner.ToolComplete, map[string]any{
		"status": "success", "reason": "every benchmark action succeeded",
	})))
	return llm.NewScripted("benchmark", turns...)
}

// nextAction is the i-th action on the page the request shows: even i
// clicks target, odd i fills the first text field.
func nextAction(req *llm.Request, target Target, i int) (llm.ToolCall, error) {
	snap, ok := latestSnapshot(req)
	if !ok {
		return llm.ToolCall{}, errors.New("benchmark script: no page snapshot in the request")
	}
	elements := parseSnapshotElements(snap)
	if i%2 == 1 {
		for _, e := range elements {
			if (e.role == "textbox" || e.role == "searchbox") && !e.disabled {
				return llm.Call(runner.ToolFill, map[string]any{"ref": e.ref, "value": fmt.Sprintf("benchmark %d", i),
					"reasoning": "fill the first text field", "confidence": 0.9}), nil
			}
		}
	}
	for _, e := range elements {
		if e.role == target.Role && e.name == target.Name {
			return llm.Call(runner.ToolClick, map[string]any{"ref": e.ref,
				"reasoning": "click the page's benchmark target", "confidence": 0.9}), nil
		}
	}
	return llm.ToolCall{}, fmt.Errorf("benchmark script: %w: %s", errNoTarget, target)
}

// leasedBrowser is a runner.Browser over pool leases, as the worker's.
type leasedBrowser struct {
	pool  *pool.Pool
	lease *pool.Lease
}

func (b *leasedBrowser) Session() *browser.Session { return b.lease.Session() }

func (b *leasedBrowser) Done() <-chan struct{} { return b.lease.Done() }

// Renew releases the dead lease and takes a new one.
func (b *leasedBrowser) Renew(ctx context.Context) (*browser.Session, error) {
	b.lease.Release()
	lease, err := b.pool.Lease(ctx, browser.SessionOptions{})
	if err != nil {
		b.lease = nil
		return nil, err
	}
	b.lease = lease
	return lease.Session(), nil
}

func (b *leasedBrowser) release() {
	if b.lease != nil {
		b.lease.Release()
	}
}

// loopbackPolicy lets runs load the benchmark site (both its origins).
type loopbackPolicy struct{}

func (loopbackPolicy) Check(_ context.Context, rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil {
		return err
	}
	if h := u.Hostname(); h != "127.0.0.1" && h != "localhost" {
		return fmt.Errorf("%s is not the benchmark site", h)
	}
	return nil
}

// engineSink keeps a run's record in memory: the store's cost is not the
// engine's.
type engineSink struct {
	mu      sync.Mutex
	steps   []runner.Step
	prompts []runner.PromptRun
}

func (s *engineSink) StepStarted(context.Context, int) error { return nil }

func (s *engineSink) StepFinished(_ context.Context, st runner.Step) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.steps = append(s.steps, st)
	return nil
}

func (s *engineSink) PromptRun(_ context.Context, pr runner.PromptRun) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.prompts = append(s.prompts, pr)
	return nil
}

func (s *engineSink) Event(context.Context, runner.Event) error { return nil }

func (s *engineSink) recorded() ([]runner.Step, []runner.PromptRun) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]runner.Step(nil), s.steps...), append([]runner.PromptRun(nil), s.prompts...)
}
