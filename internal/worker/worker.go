// Package worker executes queued runs: it is the River worker that leases a
// browser context from the pool, hands the run to the runner, and persists
// what the runner reports (steps, screenshots, events, the final status)
// through the store. It is where the engine meets the service: metrics,
// traces and logs of a run are recorded here.
package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/events"
	"github.com/wayfinder/wayfinder/internal/governance"
	"github.com/wayfinder/wayfinder/internal/guard"
	"github.com/wayfinder/wayfinder/internal/judge"
	"github.com/wayfinder/wayfinder/internal/live"
	"github.com/wayfinder/wayfinder/internal/llm"
	"github.com/wayfinder/wayfinder/internal/netguard"
	"github.com/wayfinder/wayfinder/internal/pool"
	"github.com/wayfinder/wayfinder/internal/queue"
	"github.com/wayfinder/wayfinder/internal/runner"
	"github.com/wayfinder/wayfinder/internal/secrets"
	"github.com/wayfinder/wayfinder/internal/store"
	"github.com/wayfinder/wayfinder/internal/tools"
)

// Config configures a Worker.
type Config struct {
	Store  *store.Store
	Pool   *pool.Pool
	Runner *runner.Runner
	// AllowPrivateNetworks lets every run reach private and loopback
	// addresses (WAYFINDER_ALLOW_PRIVATE_NETWORKS).
	AllowPrivateNetworks bool
	Logger               *slog.Logger
	Tracer               trace.Tracer
	Metrics              *Metrics
	// NetMetrics counts the requests the network guard refuses; nil counts
	// none.
	NetMetrics *netguard.Metrics
	// Models builds each run's controller and judge.
	Models *Models
	// Prices turn token usage into cost. Default llm.DefaultPrices.
	Prices *llm.Prices
	// Egress makes the server's own calls on behalf of runs (custom tool
	// webhooks); nil uses Egress(AllowPrivateNetworks).
	Egress *http.Client
	// Keyring opens runs' sealed params and stored credentials. Required
	// for runs with secrets.
	Keyring *secrets.Keyring
	// CallbackHost is the host the CDP endpoint handed to login webhooks
	// listens on and is advertised with. Default 127.0.0.1.
	CallbackHost string
	// Governance is the politeness state the worker's runs share: the
	// per-domain rate limiter, the robots.txt cache, the server's site
	// profiles and default rate (governance.New). Nil: each run gets its
	// own, without server profiles or default rate.
	Governance *governance.Governor
	// Hub wakes runs that wait for a human when their approval is
	// answered (on any replica); nil: they poll the store.
	Hub *events.Hub
	// Live, when set, gives every run a live view and takeover
	// (LiveService): its Session is registered here for viewers on this
	// replica and in the database for the others. Nil: runs have none.
	Live *live.Registry
	// Instance names this process in the live sessions it registers.
	// Default host:pid.
	Instance string
	// TakeoverIdle ends a person's takeover after this long without
	// input. Default 5 minutes.
	TakeoverIdle time.Duration
}

// Worker is the River worker of queue.RunArgs jobs.
type Worker struct {
	river.WorkerDefaults[queue.RunArgs]
	cfg Config
}

// New returns a Worker.
func New(cfg Config) *Worker {
	if cfg.Models == nil {
		cfg.Models = &Models{}
	}
	if cfg.Prices == nil {
		cfg.Prices = llm.DefaultPrices()
	}
	if cfg.Egress == nil {
		cfg.Egress = Egress(cfg.AllowPrivateNetworks)
	}
	if cfg.Instance == "" {
		host, _ := os.Hostname()
		cfg.Instance = fmt.Sprintf("%s:%d", host, os.Getpid())
	}
	return &Worker{cfg: cfg}
}

// Timeout is the run's own wall-clock limit.
func (w *Worker) Timeout(job *river.Job[queue.RunArgs]) time.Duration {
	return job.Args.Timeout
}

// Work executes (or resumes) one run. It returns an error only when the
// run's record could not be written, so that River retries the job; every
// outcome of the run itself is recorded as the run's status.
func (w *Worker) Work(ctx context.Context, job *river.Job[queue.RunArgs]) error {
	runID := job.Args.RunID
	log := w.cfg.Logger.With("run_id", runID, "job_id", job.ID, "attempt", job.Attempt)
	bg := context.WithoutCancel(ctx)

	carrier, err := w.cfg.Store.RunTraceContext(bg, runID)
	if err != nil {
		return err
	}
	ctx = propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier(carrier))
	ctx, span := w.cfg.Tracer.Start(ctx, "run", trace.WithAttributes(
		attribute.String("wayfinder.run_id", runID), attribute.Int("wayfinder.attempt", job.Attempt)))
	defer span.End()

	run, execute, err := w.cfg.Store.StartRun(bg, runID)
	if errors.Is(err, store.ErrTenantBusy) {
		log.DebugContext(ctx, "tenant at its concurrent run limit; the run waits", "error", err)
		return river.JobSnooze(2 * time.Second)
	}
	if err != nil {
		return w.failAttempt(bg, job, log, fmt.Errorf("start run: %w", err))
	}
	if !execute {
		log.InfoContext(ctx, "run already finished; nothing to do", "status", run.Status.String())
		return nil
	}
	log.InfoContext(ctx, "run started", "start_url", run.Params.GetStartUrl())
	w.cfg.Metrics.started.Inc()
	begin := time.Now()

	final, err := w.execute(ctx, run, log)
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		return w.failAttempt(bg, job, log, err)
	}
	if final == nil { // handed back to the queue
		return river.JobSnooze(time.Second)
	}
	span.SetAttributes(attribute.String("wayfinder.status", final.Status.String()))
	if final.Status != wfv1.RunStatus_RUN_STATUS_COMPLETED && final.Error != nil {
		span.SetStatus(codes.Error, final.Error.Message)
	}
	w.cfg.Metrics.observeFinish(final.Status, time.Since(begin))
	log.InfoContext(ctx, "run finished", "status", final.Status.String(), "steps", final.StepCount,
		"duration", time.Since(begin))
	return nil
}

// execute runs the engine and records its outcome. It returns the finished
// run, or nil when the run was handed back to the queue.
func (w *Worker) execute(ctx context.Context, run *wfv1.Run, log *slog.Logger) (*wfv1.Run, error) {
	bg := context.WithoutCancel(ctx)
	// The task key of the run's trace, from its stored (redacted) params.
	traceKey, keyErr := TraceKey(run.GetParams())
	if err := w.unseal(bg, run); err != nil {
		return w.cfg.Store.FinishRun(bg, run.Id, store.Outcome{Status: wfv1.RunStatus_RUN_STATUS_ERROR,
			Error: &wfv1.RunError{Category: wfv1.ErrorCategory_ERROR_CATEGORY_INTERNAL, Message: err.Error()}})
	}
	controllerPrompt, judgePrompt, err := w.resolvePrompts(bg, run)
	if err != nil {
		return w.cfg.Store.FinishRun(bg, run.Id, store.Outcome{Status: wfv1.RunStatus_RUN_STATUS_ERROR,
			Error: &wfv1.RunError{Category: wfv1.ErrorCategory_ERROR_CATEGORY_INTERNAL, Message: err.Error()}})
	}
	if err := w.resolveTools(bg, run); err != nil {
		return w.cfg.Store.FinishRun(bg, run.Id, store.Outcome{Status: wfv1.RunStatus_RUN_STATUS_ERROR,
			Error: &wfv1.RunError{Category: wfv1.ErrorCategory_ERROR_CATEGORY_TOOL_EXECUTION_ERROR, Message: err.Error()}})
	}
	models, err := w.runModels(bg, run)
	if err != nil {
		return w.cfg.Store.FinishRun(bg, run.Id, store.Outcome{Status: wfv1.RunStatus_RUN_STATUS_ERROR,
			Error: &wfv1.RunError{Category: wfv1.ErrorCategory_ERROR_CATEGORY_AUTHENTICATION_ERROR, Message: err.Error()}})
	}
	params, policy, err := w.runnerParams(run, models)
	if err != nil {
		// Validated at CreateRun; reaching here means the server's
		// configuration changed since. End the run rather than retry forever.
		var re *runner.Error
		if !errors.As(err, &re) {
			re = &runner.Error{Category: runner.CategoryInternal, Message: err.Error()}
		}
		return w.cfg.Store.FinishRun(bg, run.Id, store.Outcome{Status: wfv1.RunStatus_RUN_STATUS_ERROR, Error: runError(re)})
	}
	defer params.Tools.Close() // the run's MCP sessions
	plan, err := w.planReplay(bg, run, traceKey, keyErr)
	if err != nil {
		return nil, err
	}
	if plan != nil && plan.end != nil {
		return w.finishReplayed(bg, run.Id, *plan.end)
	}
	params.Replay = plan.runnerReplay()
	if run.GetStepCount() > 0 {
		// A resumed run's output falls back to what it extracted before.
		if params.PriorExtract, err = w.priorExtract(bg, run.Id); err != nil {
			return nil, err
		}
	}
	// The prompt versions the run was pinned to, recorded with every model call.
	params.ControllerPromptRef, params.JudgePromptRef = controllerPrompt, judgePrompt

	// The run's log is redacted once its secrets are known (below).
	var redactor atomic.Pointer[runner.Redactor]
	log = lateRedactingLogger(log, &redactor)

	// Every request of the run's context goes through its own proxy, which
	// enforces the domain policy on the addresses it dials.
	blocks := netguard.NewLog(netguard.DefaultMaxBlocks, w.cfg.NetMetrics)
	proxy, err := netguard.Start(netguard.Config{Policy: policy, Log: blocks, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("start network guard: %w", err)
	}
	defer proxy.Close()

	b := &leasedBrowser{pool: w.cfg.Pool, proxy: proxy.URL(), blocks: blocks, log: log}
	env := &runEnv{run: run, tenant: run.GetTenantId(), b: b, store: w.cfg.Store, log: log, redactor: &redactor}
	if params.Hooks, err = w.hooks(ctx, env); err != nil {
		var re *runner.Error
		if !errors.As(err, &re) {
			re = &runner.Error{Category: runner.CategoryInternal, Message: err.Error()}
		}
		return w.cfg.Store.FinishRun(bg, run.Id, store.Outcome{Status: wfv1.RunStatus_RUN_STATUS_ERROR, Error: runError(re)})
	}
	params.Secrets, params.Redact = env.secrets, env.redact
	redact := runner.NewRedactor(env.secrets, env.redact)
	params.Redactor = redact
	redactor.Store(redact)
	if err := b.start(ctx); err != nil {
		if ctx.Err() != nil {
			return w.interrupted(ctx, run, log, nil)
		}
		return w.cfg.Store.FinishRun(bg, run.Id, store.Outcome{
			Status: wfv1.RunStatus_RUN_STATUS_ERROR,
			Error:  &wfv1.RunError{Category: wfv1.ErrorCategory_ERROR_CATEGORY_BROWSER_CRASH, Message: err.Error()},
		})
	}
	defer b.close()

	sink := &sink{store: w.cfg.Store, runID: run.Id, tracer: w.cfg.Tracer, metrics: w.cfg.Metrics, blocks: blocks, log: log,
		redact: redact, hub: w.cfg.Hub}
	if w.cfg.Live != nil {
		relay, err := live.StartRelay(ctx, live.RelayConfig{
			Store: w.cfg.Store, Hub: w.cfg.Hub, Registry: w.cfg.Live, RunID: run.Id, Tenant: run.GetTenantId(),
			Worker: w.cfg.Instance, Logger: log,
			Session: live.SessionConfig{Logger: log, Redact: redact.String, IdleTimeout: w.cfg.TakeoverIdle},
		})
		if err != nil {
			// The run goes on without a live view.
			log.WarnContext(ctx, "starting the run's live view", "error", err)
		} else {
			defer relay.Close(bg)
			params.Takeover, sink.live = relay.Session(), relay.Session()
		}
	}
	res, err := w.cfg.Runner.Run(ctx, b, params, sink)
	for _, f := range env.atEnd {
		f(bg)
	}
	if err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return w.interrupted(ctx, run, log, sink.output(bg, res.Output))
	}
	if res.Status == runner.StatusInterrupted {
		return nil, fmt.Errorf("run interrupted without a cause: %w", context.Cause(ctx))
	}
	o, err := sink.outcome(bg, res)
	if err != nil {
		return nil, err
	}
	save := plan.finish(res)
	if res.Status == runner.StatusCompleted && res.Trace != nil && save {
		// A trace that cannot be kept costs a later replay, not the run.
		saved, err := sink.saveTrace(bg, run.GetTenantId(), traceKey, plan.healedFrom(), res.Trace)
		if err := errors.Join(keyErr, err); err != nil {
			log.WarnContext(ctx, "the run's trace was not saved", "error", err)
		} else if plan.healedFrom() != "" {
			plan.report.HealedTraceId = saved.RunID
		}
	}
	if plan != nil {
		o.Replay = plan.report
	}
	return w.finishReplayed(bg, run.Id, o)
}

// runModels returns the server's models with the API keys of the stored
// credentials the run names, each use audited.
func (w *Worker) runModels(ctx context.Context, run *wfv1.Run) (*Models, error) {
	names := CredentialNames(run.GetParams())
	if len(names) == 0 {
		return w.cfg.Models.ForRun(run.GetId()), nil
	}
	keys, err := ModelKeys(ctx, w.cfg.Store, w.cfg.Keyring, w.cfg.Logger, run.GetTenantId(), "run:"+run.GetId(), run.GetId(), names)
	if err != nil {
		return nil, err
	}
	return w.cfg.Models.WithRunKeys(keys).ForRun(run.GetId()), nil
}

// unseal replaces run's (redacted) params with the sealed params as given,
// secrets included, when it has any.
func (w *Worker) unseal(ctx context.Context, run *wfv1.Run) error {
	sealed, err := w.cfg.Store.SealedParams(ctx, run.Id)
	if err != nil || sealed == nil {
		return err
	}
	if w.cfg.Keyring == nil {
		return errors.New("the run's secrets cannot be opened: the server has no encryption key")
	}
	raw, err := w.cfg.Keyring.Open(sealed, secrets.RunParamsAAD(run.Id))
	if err != nil {
		return fmt.Errorf("the run's secrets cannot be opened: %w", err)
	}
	params := &wfv1.RunParams{}
	if err := protojson.Unmarshal(raw, params); err != nil {
		return fmt.Errorf("decode the run's sealed params: %w", err)
	}
	run.Params = params
	return nil
}

// interrupted decides what an ended job context means: the caller cancelled
// the run, the run hit its timeout, or this worker is shutting down (the run
// goes back to the queue to be resumed). output is what the run produced
// so far, kept when it ends here.
func (w *Worker) interrupted(ctx context.Context, run *wfv1.Run, log *slog.Logger, output *structpb.Value) (*wfv1.Run, error) {
	bg := context.WithoutCancel(ctx)
	cause := context.Cause(ctx)
	switch {
	case errors.Is(cause, rivertype.ErrJobCancelledRemotely):
		reason, err := w.cfg.Store.CancelReason(bg, run.Id)
		if err != nil {
			return nil, err
		}
		return w.cfg.Store.FinishRun(bg, run.Id, store.Outcome{
			Status: wfv1.RunStatus_RUN_STATUS_CANCELLED,
			Error:  &wfv1.RunError{Category: wfv1.ErrorCategory_ERROR_CATEGORY_CANCELLED, Message: reason},
			Output: output,
		})
	case errors.Is(cause, context.DeadlineExceeded):
		return w.cfg.Store.FinishRun(bg, run.Id, store.Outcome{
			Status: wfv1.RunStatus_RUN_STATUS_ERROR,
			Error: &wfv1.RunError{Category: wfv1.ErrorCategory_ERROR_CATEGORY_RUN_TIMEOUT,
				Message: "the run exceeded its run timeout"},
			Output: output,
		})
	}
	log.InfoContext(ctx, "worker stopping; handing the run back to the queue", "cause", cause)
	if err := w.cfg.Store.RequeueRun(bg, run.Id, "worker shutting down; the run will resume on another worker"); err != nil {
		return nil, err
	}
	return nil, nil
}

// priorExtract returns the rows of the last successful browser_extract a
// resumed run recorded (runner.Params.PriorExtract), nil for none. The
// record is already redacted.
func (w *Worker) priorExtract(ctx context.Context, runID string) ([]map[string]string, error) {
	const page = 100
	var rows []map[string]string
	for after := int32(0); ; {
		steps, err := w.cfg.Store.ListSteps(ctx, runID, after, page)
		if err != nil {
			return nil, fmt.Errorf("read the steps of resumed run %s: %w", runID, err)
		}
		for _, st := range steps {
			for _, a := range st.GetActions() {
				if a.GetTool() == runner.ToolExtract && a.GetOutcome() == "ok" && a.GetResult().GetFields()["rows"] != nil {
					rows = recordedRows(a.GetResult().GetFields()["rows"])
				}
			}
			after = st.GetNumber()
		}
		if len(steps) < page {
			return rows, nil
		}
	}
}

// recordedRows turns an extract's recorded rows back into the engine's.
func recordedRows(v *structpb.Value) []map[string]string {
	rows := []map[string]string{}
	for _, item := range v.GetListValue().GetValues() {
		row := map[string]string{}
		for k, f := range item.GetStructValue().GetFields() {
			row[k] = f.GetStringValue()
		}
		rows = append(rows, row)
	}
	return rows
}

// failAttempt handles an attempt that could not record its run. On the last
// attempt the run is ended as an internal error so it never stays live.
func (w *Worker) failAttempt(ctx context.Context, job *river.Job[queue.RunArgs], log *slog.Logger, err error) error {
	log.ErrorContext(ctx, "run attempt failed", "error", err)
	if job.Attempt >= job.MaxAttempts {
		if _, ferr := w.cfg.Store.FinishRun(ctx, job.Args.RunID, store.Outcome{
			Status: wfv1.RunStatus_RUN_STATUS_ERROR,
			Error:  &wfv1.RunError{Category: wfv1.ErrorCategory_ERROR_CATEGORY_INTERNAL, Message: "the run could not be recorded"},
		}); ferr != nil {
			log.ErrorContext(ctx, "ending run after its last attempt failed", "error", ferr)
		}
	}
	return err
}

// runnerParams translates a validated run into the engine's parameters,
// and returns the run's domain policy.
func (w *Worker) runnerParams(run *wfv1.Run, models *Models) (runner.Params, *guard.Policy, error) {
	p := run.GetParams()
	policy, err := guard.New(p.GetAllowedDomains(), p.GetBlockedDomains(), w.cfg.AllowPrivateNetworks)
	if err != nil {
		return runner.Params{}, nil, &runner.Error{Category: runner.CategoryDomainBlocked, Message: err.Error()}
	}
	b := p.GetBrowser()
	rp := runner.Params{
		RunID:                  run.GetId(),
		Goal:                   p.GetGoal(),
		StartURL:               p.GetStartUrl(),
		Policy:                 policy,
		MaxSteps:               int(p.GetMaxSteps()),
		ScreenshotHistoryDepth: int(p.GetScreenshotHistoryDepth()),
		ControllerPrompt:       p.GetController().GetPromptText(),
		JudgePrompt:            p.GetJudge().GetModel().GetPromptText(),
		ActionsPerTurn:         int(p.GetActionsPerTurn()),
		MaxTokens:              int(p.GetMaxTokens()),
		MaxCostUSD:             p.GetMaxCostUsd(),
		Prices:                 w.cfg.Prices,
		MinConfidence:          0.6,
	}
	if p.MinConfidence != nil {
		rp.MinConfidence = p.GetMinConfidence()
		if rp.MinConfidence == 0 {
			rp.MinConfidence = -1 // explicitly off
		}
	}
	if run.GetStepCount() > 0 {
		// A resumed run continues its numbering; the model is told.
		rp.FirstStep = int(run.GetStepCount()) + 1
		rp.Resumed = fmt.Sprintf("Steps 1-%d were already taken; the page was reopened at the start URL.", run.GetStepCount())
	}
	switch p.GetJudge().GetStrategy() {
	case wfv1.JudgeStrategy_JUDGE_STRATEGY_LLM:
		rp.JudgeStrategy = runner.JudgeLLM
	case wfv1.JudgeStrategy_JUDGE_STRATEGY_HEURISTIC:
		rp.JudgeStrategy = runner.JudgeHeuristic
	}
	switch f := p.GetJudge().GetFrequency(); {
	case f.GetEveryNSteps() > 0:
		rp.JudgeFrequency = judge.Frequency{EveryN: int(f.GetEveryNSteps())}
	case f.GetOnStagnation() > 0:
		rp.JudgeFrequency = judge.Frequency{EveryN: 1, OnStagnation: int(f.GetOnStagnation())}
	}
	rp.Page.Width, rp.Page.Height = int(b.GetViewport().GetWidth()), int(b.GetViewport().GetHeight())
	rp.Page.UserAgent, rp.Page.Locale, rp.Page.Timezone = b.GetUserAgent(), b.GetLocale(), b.GetTimezone()
	if d := b.GetNavigationTimeout(); d != nil {
		rp.NavigationTimeout = d.AsDuration()
	}
	if d := b.GetActionTimeout(); d != nil {
		rp.ActionTimeout = d.AsDuration()
	}
	if rp.Controller, err = models.Controller(p); err != nil {
		return rp, nil, &runner.Error{Category: runner.CategoryLLMError, Message: err.Error()}
	}
	if rp.JudgeModel, err = models.Judge(p); err != nil {
		return rp, nil, &runner.Error{Category: runner.CategoryLLMError, Message: err.Error()}
	}
	if len(p.GetTools()) > 0 {
		defs, err := ToolDefinitions(p.GetTools())
		if err == nil {
			rp.Tools, err = tools.NewSet(defs, tools.Options{Client: w.cfg.Egress, MCPAuth: w.mcpAuth(run)})
		}
		if err != nil {
			return rp, nil, &runner.Error{Category: runner.CategoryToolExecution, Message: err.Error()}
		}
	}
	if err := LiveParams(&rp, p); err != nil {
		return rp, nil, &runner.Error{Category: runner.CategoryInternal, Message: err.Error()}
	}
	return rp, policy, nil
}

// ToolDefinitions converts a run's custom tools (webhook and MCP tools;
// catalog references are resolved before) into the tools package's
// definitions. An MCP tool without a name is named as on its server.
func ToolDefinitions(in []*wfv1.ToolDefinition) ([]tools.Definition, error) {
	out := make([]tools.Definition, 0, len(in))
	for _, t := range in {
		d := tools.Definition{Name: t.GetName(), Description: t.GetDescription()}
		if m := t.GetMcp(); m != nil {
			d.MCP = &tools.MCPTool{ServerURL: m.GetServerUrl(), ToolName: m.GetToolName()}
			if d.Name == "" {
				d.Name = m.GetToolName()
			}
		}
		var err error
		if d.InputSchema, err = structJSON(t.GetInputSchema()); err != nil {
			return nil, fmt.Errorf("tool %s: input schema: %w", t.GetName(), err)
		}
		if t.GetOutputSchema() != nil {
			if d.OutputSchema, err = structJSON(t.GetOutputSchema()); err != nil {
				return nil, fmt.Errorf("tool %s: output schema: %w", t.GetName(), err)
			}
		}
		if wh := t.GetWebhook(); wh != nil {
			d.Webhook = tools.Webhook{URL: wh.GetUrl(), Headers: wh.GetHeaders()}
			if wh.GetTimeout() != nil {
				d.Webhook.Timeout = wh.GetTimeout().AsDuration()
			}
		}
		out = append(out, d)
	}
	return out, nil
}

func structJSON(s *structpb.Struct) (json.RawMessage, error) {
	if s == nil {
		return nil, nil
	}
	return protojson.Marshal(s)
}

var categories = map[runner.Category]wfv1.ErrorCategory{
	runner.CategoryBrowserCrash:      wfv1.ErrorCategory_ERROR_CATEGORY_BROWSER_CRASH,
	runner.CategoryNavigationTimeout: wfv1.ErrorCategory_ERROR_CATEGORY_NAVIGATION_TIMEOUT,
	runner.CategoryNavigationError:   wfv1.ErrorCategory_ERROR_CATEGORY_NAVIGATION_ERROR,
	runner.CategoryDomainBlocked:     wfv1.ErrorCategory_ERROR_CATEGORY_DOMAIN_BLOCKED,
	runner.CategoryElementNotFound:   wfv1.ErrorCategory_ERROR_CATEGORY_ELEMENT_NOT_FOUND,
	runner.CategoryLLMError:          wfv1.ErrorCategory_ERROR_CATEGORY_LLM_ERROR,
	runner.CategoryLLMParseError:     wfv1.ErrorCategory_ERROR_CATEGORY_LLM_PARSE_ERROR,
	runner.CategoryToolExecution:     wfv1.ErrorCategory_ERROR_CATEGORY_TOOL_EXECUTION_ERROR,
	runner.CategoryBudgetExceeded:    wfv1.ErrorCategory_ERROR_CATEGORY_BUDGET_EXCEEDED,
	runner.CategoryAuthentication:    wfv1.ErrorCategory_ERROR_CATEGORY_AUTHENTICATION_ERROR,
	runner.CategoryInternal:          wfv1.ErrorCategory_ERROR_CATEGORY_INTERNAL,
	runner.CategoryReplayDiverged:    wfv1.ErrorCategory_ERROR_CATEGORY_REPLAY_DIVERGED,
}

func runError(e *runner.Error) *wfv1.RunError {
	if e == nil {
		return nil
	}
	c, ok := categories[e.Category]
	if !ok {
		c = wfv1.ErrorCategory_ERROR_CATEGORY_INTERNAL
	}
	return &wfv1.RunError{Category: c, Message: e.Message, StepNumber: int32(e.Step)}
}

var statuses = map[runner.Status]wfv1.RunStatus{
	runner.StatusCompleted: wfv1.RunStatus_RUN_STATUS_COMPLETED,
	runner.StatusFailed:    wfv1.RunStatus_RUN_STATUS_FAILED,
	runner.StatusMaxSteps:  wfv1.RunStatus_RUN_STATUS_MAX_STEPS_REACHED,
	runner.StatusError:     wfv1.RunStatus_RUN_STATUS_ERROR,
}

func verdictProto(v *judge.Verdict) *wfv1.JudgeVerdict {
	if v == nil {
		return nil
	}
	return &wfv1.JudgeVerdict{Done: v.Done, Failed: v.Failed, Confidence: v.Confidence, Feedback: v.Feedback,
		Reason: v.Reason, SuggestedNextAction: v.SuggestedNextAction, Source: v.Source}
}
