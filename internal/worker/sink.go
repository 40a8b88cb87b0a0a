package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/events"
	"github.com/wayfinder/wayfinder/internal/live"
	"github.com/wayfinder/wayfinder/internal/llm"
	"github.com/wayfinder/wayfinder/internal/netguard"
	"github.com/wayfinder/wayfinder/internal/runner"
	"github.com/wayfinder/wayfinder/internal/store"
)

// sink persists what the runner reports: steps with their screenshots,
// prompt runs with the images they showed, and events, each in one
// transaction; and it counts them in metrics and traces. Everything it
// stores, traces or logs is redacted first (redact.go).
type sink struct {
	store   *store.Store
	runID   string
	tracer  trace.Tracer
	metrics *Metrics
	log     *slog.Logger
	// blocks is the run's network guard log; blockSeq is the first block
	// not yet attached to a step.
	blocks   *netguard.Log
	blockSeq uint64
	// status is the run's status for events (RUNNING while it runs).
	status wfv1.RunStatus
	// redact hides the run's secrets (runEnv.redactor); nil hides
	// nothing.
	redact *runner.Redactor
	// hub wakes approval waits when the run has new events (an answer);
	// nil: they poll the store.
	hub *events.Hub
	// human asks for approvals (approval.go); made on first use.
	human *approvals
	// live is the run's live view; a person may take the browser while
	// the run waits for an approval. Nil: none.
	live *live.Session
}

// approvals returns the run's way to a human.
func (s *sink) approvals() *approvals {
	if s.human == nil {
		s.human = &approvals{store: s.store, hub: s.hub, runID: s.runID, log: s.logger(), live: s.live}
	}
	return s.human
}

// RequestApproval implements runner.Approvals: the run waits
// AWAITING_APPROVAL until SubmitApproval answers (on any replica) or the
// run's approval timeout passes.
func (s *sink) RequestApproval(ctx context.Context, req runner.ApprovalRequest) (runner.ApprovalAnswer, error) {
	req.Action, req.Reason, req.URL = s.redact.String(req.Action), s.redact.String(req.Reason), s.redact.String(req.URL)
	return s.approvals().RequestApproval(ctx, req)
}

// ResumeApproval implements runner.Approvals.
func (s *sink) ResumeApproval(ctx context.Context) (runner.ApprovalRequest, runner.ApprovalAnswer, bool, error) {
	return s.approvals().ResumeApproval(ctx)
}

// Approve implements runner.Approver (a request of the model's).
func (s *sink) Approve(ctx context.Context, step int, action, reason string) (bool, string, error) {
	ans, err := s.RequestApproval(ctx, runner.ApprovalRequest{Source: runner.SourceModel, Action: action, Reason: reason, Step: step})
	return ans.Approved, ans.Message, err
}

var (
	_ runner.Approvals = (*sink)(nil)
	_ runner.Approver  = (*sink)(nil)
)

// logger is the sink's logger, redacting.
func (s *sink) logger() *slog.Logger { return redactLogger(s.log, s.redact) }

func (s *sink) StepStarted(ctx context.Context, number int) error {
	run, err := s.store.GetRun(ctx, s.runID)
	if err != nil {
		return err
	}
	s.status = run.Status
	if int(run.StepCount) >= number {
		return nil // a resumed run repeats a step that is already on record
	}
	_, err = s.store.AppendEvent(ctx, s.runID, &wfv1.RunEvent{
		Type:    wfv1.RunEventType_RUN_EVENT_TYPE_STEP_STARTED,
		Status:  run.Status,
		Message: fmt.Sprintf("step %d started", number),
		Payload: &wfv1.RunEvent_Step{Step: &wfv1.Step{RunId: s.runID, Number: int32(number)}},
	})
	return err
}

func (s *sink) StepFinished(ctx context.Context, st runner.Step) error {
	_, span := s.tracer.Start(ctx, "step", trace.WithTimestamp(st.Start),
		trace.WithAttributes(attribute.String("wayfinder.run_id", s.runID), attribute.Int("wayfinder.step", st.Number)))
	defer span.End(trace.WithTimestamp(st.End))
	for _, a := range st.Actions {
		_, as := s.tracer.Start(ctx, "action "+a.Tool, trace.WithTimestamp(st.End.Add(-a.Duration)),
			trace.WithAttributes(attribute.String("wayfinder.outcome", a.Outcome)))
		as.End(trace.WithTimestamp(st.End))
	}
	step := &wfv1.Step{
		RunId:     s.runID,
		Number:    int32(st.Number),
		StartTime: timestamppb.New(st.Start),
		EndTime:   timestamppb.New(st.End),
		Url:       st.URL,
		Title:     st.Title,
		Reasoning: st.Reasoning,
		Verdict:   verdictProto(st.Verdict),
		Error:     runError(st.Err),
		Actor:     st.Actor,
		Timings: &wfv1.StepTimings{Snapshot: durationpb.New(st.Timings.Snapshot), Model: durationpb.New(st.Timings.Model),
			Action: durationpb.New(st.Timings.Action), Judge: durationpb.New(st.Timings.Judge)},
	}
	if st.Usage.Total() > 0 || st.CostUSD > 0 {
		step.Usage = usageProto(st.Usage, st.CostUSD, 0)
	}
	for _, a := range st.Actions {
		args, err := structpb.NewStruct(a.Arguments)
		if err != nil {
			return fmt.Errorf("encode arguments of %s: %w", a.Tool, err)
		}
		act := &wfv1.Action{
			Tool: a.Tool, Arguments: args, Outcome: a.Outcome, Message: a.Message, Strategy: a.Strategy,
			Duration: durationpb.New(a.Duration),
		}
		if a.Result != nil {
			if act.Result, err = structpb.NewStruct(a.Result); err != nil {
				return fmt.Errorf("encode result of %s: %w", a.Tool, err)
			}
		}
		step.Actions = append(step.Actions, act)
	}
	var blocked []netguard.Block
	blocked, s.blockSeq = s.blocks.Since(s.blockSeq)
	for _, b := range blocked {
		step.BlockedRequests = append(step.BlockedRequests, &wfv1.BlockedRequest{
			Time: timestamppb.New(b.Time), Kind: string(b.Kind), Url: b.URL, Host: b.Host,
			Reason: string(b.Reason), Message: b.Message,
		})
	}
	redactProto(s.redact, step)
	var shot *store.Media
	if st.Screenshot != nil {
		shot = &store.Media{ContentType: "image/png", Data: st.Screenshot}
		step.ThumbnailMediaId = s.saveThumbnail(ctx, st.Number, st.Screenshot)
	}
	if st.Criteria != nil {
		results := criteriaProto(st.Criteria)
		for _, r := range results {
			redactProto(s.redact, r)
		}
		if err := s.store.SetRunCriteria(ctx, s.runID, results); err != nil {
			return err
		}
	}
	recorded, err := s.store.RecordStep(ctx, step, shot)
	if err != nil {
		return err
	}
	if recorded {
		s.metrics.observeStep(st)
	}
	if st.TakeoverID != "" {
		// The takeover names the step that records it.
		if err := s.store.SetTakeoverStep(ctx, s.runID, st.TakeoverID, int32(st.Number)); err != nil {
			s.logger().WarnContext(ctx, "linking the takeover to its step", "takeover_id", st.TakeoverID, "error", err)
		}
	}
	return nil
}

// PromptRun stores a model call. The request is stored as JSON with each
// image named by its media ID.
func (s *sink) PromptRun(ctx context.Context, pr runner.PromptRun) error {
	pr = s.redact.PromptRun(pr)
	request, err := json.Marshal(pr.Request)
	if err != nil {
		return fmt.Errorf("encode prompt: %w", err)
	}
	rec := store.PromptRun{
		RunID: s.runID, Step: int32(pr.Step), Role: string(pr.Role), Provider: pr.Provider, Model: pr.Model,
		Request: s.redact.Bytes(request), Usage: usageProto(pr.Usage, pr.CostUSD, 1), Start: pr.Start, End: pr.End, Error: pr.Err,
		PromptRef: pr.PromptRef,
	}
	if pr.Response != nil {
		if rec.Response, err = json.Marshal(pr.Response); err != nil {
			return fmt.Errorf("encode answer: %w", err)
		}
		rec.Response = s.redact.Bytes(rec.Response)
	}
	seen := map[string]bool{}
	for _, img := range requestImages(pr.Request) {
		if seen[img.Ref] {
			continue
		}
		seen[img.Ref] = true
		rec.Images = append(rec.Images, store.PromptImage{Ref: img.Ref, Media: store.Media{ContentType: img.MediaType, Data: img.Data}})
	}
	if _, err := s.store.RecordPromptRun(ctx, rec); err != nil {
		return err
	}
	_, span := s.tracer.Start(ctx, "model "+string(pr.Role), trace.WithTimestamp(pr.Start),
		trace.WithAttributes(attribute.String("wayfinder.run_id", s.runID), attribute.Int("wayfinder.step", pr.Step),
			attribute.String("gen_ai.system", pr.Provider), attribute.String("gen_ai.request.model", pr.Model),
			attribute.Int("gen_ai.usage.input_tokens", pr.Usage.InputTokens),
			attribute.Int("gen_ai.usage.output_tokens", pr.Usage.OutputTokens)))
	if pr.Err != "" {
		span.SetStatus(codes.Error, pr.Err)
	}
	span.End(trace.WithTimestamp(pr.End))
	s.metrics.observePrompt(pr)
	if pr.Err != "" {
		s.logger().WarnContext(ctx, "model call failed", "role", pr.Role, "provider", pr.Provider, "model", pr.Model,
			"step", pr.Step, "error", pr.Err)
	}
	return nil
}

// requestImages lists the images of a request in order.
func requestImages(req *llm.Request) []llm.Image {
	if req == nil {
		return nil
	}
	var out []llm.Image
	for _, m := range req.Messages {
		for _, p := range m.Parts {
			if p.Image != nil && len(p.Image.Data) > 0 {
				out = append(out, *p.Image)
			}
			if p.ToolResult != nil {
				for _, img := range p.ToolResult.Images {
					if len(img.Data) > 0 {
						out = append(out, img)
					}
				}
			}
		}
	}
	return out
}

// Event records progress inside a step for live streams. A failure to
// record it is logged, not fatal: the step record has the same facts.
func (s *sink) Event(ctx context.Context, e runner.Event) error {
	ev := &wfv1.RunEvent{Status: s.status, Message: e.Message}
	switch e.Kind {
	case runner.EventToolCalled:
		ev.Type = wfv1.RunEventType_RUN_EVENT_TYPE_TOOL_CALLED
		ev.Message = fmt.Sprintf("step %d: %s", e.Step, e.Tool)
		ev.Payload = &wfv1.RunEvent_Tool{Tool: &wfv1.ToolEvent{StepNumber: int32(e.Step), Tool: e.Tool}}
	case runner.EventToolResult:
		ev.Type = wfv1.RunEventType_RUN_EVENT_TYPE_TOOL_RESULT
		ev.Message = fmt.Sprintf("step %d: %s: %s", e.Step, e.Tool, e.Outcome)
		ev.Payload = &wfv1.RunEvent_Tool{Tool: &wfv1.ToolEvent{StepNumber: int32(e.Step), Tool: e.Tool, Outcome: e.Outcome}}
	case runner.EventJudgeVerdict:
		ev.Type = wfv1.RunEventType_RUN_EVENT_TYPE_JUDGE_VERDICT
		ev.Payload = &wfv1.RunEvent_Verdict{Verdict: verdictProto(e.Verdict)}
		s.metrics.observeVerdict(e.Verdict)
	default:
		return nil
	}
	if s.status == wfv1.RunStatus_RUN_STATUS_UNSPECIFIED {
		ev.Status = wfv1.RunStatus_RUN_STATUS_RUNNING
	}
	redactProto(s.redact, ev)
	if _, err := s.store.AppendEvent(ctx, s.runID, ev); err != nil {
		s.logger().WarnContext(ctx, "recording a run event failed", "type", ev.Type.String(), "error", err)
	}
	return nil
}

// outcome is the run's final record from the engine's result.
func (s *sink) outcome(ctx context.Context, res runner.Result) (store.Outcome, error) {
	if res.Status == runner.StatusCancelled { // an approval's timeout policy
		res = s.redact.Result(res)
		return store.Outcome{Status: wfv1.RunStatus_RUN_STATUS_CANCELLED, FinalURL: res.FinalURL, Summary: res.Reason,
			Error:  &wfv1.RunError{Category: wfv1.ErrorCategory_ERROR_CATEGORY_CANCELLED, Message: res.Reason, StepNumber: int32(res.Steps)},
			Output: s.output(ctx, res.Output)}, nil
	}
	status, ok := statuses[res.Status]
	if !ok {
		return store.Outcome{}, fmt.Errorf("unexpected engine status %v", res.Status)
	}
	res = s.redact.Result(res)
	o := store.Outcome{Status: status, FinalURL: res.FinalURL, Error: runError(res.Err),
		Verdict: verdictProto(res.Verdict), Summary: res.Reason, Output: s.output(ctx, res.Output)}
	redactProto(s.redact, o.Error)
	redactProto(s.redact, o.Verdict)
	return o, nil
}

// output is the stored form of a run's output (Result.Output), redacted;
// nil for none. A value that cannot be encoded (the engine makes none) is
// dropped with a warning rather than failing the run's record.
func (s *sink) output(ctx context.Context, v any) *structpb.Value {
	if v == nil {
		return nil
	}
	pv, err := structpb.NewValue(s.redact.Value(v))
	if err != nil {
		s.logger().WarnContext(ctx, "the run's output cannot be stored", "error", err)
		return nil
	}
	redactProto(s.redact, pv)
	return pv
}

func usageProto(u llm.Usage, cost float64, calls int32) *wfv1.Usage {
	return &wfv1.Usage{InputTokens: int64(u.InputTokens), OutputTokens: int64(u.OutputTokens),
		CachedInputTokens: int64(u.CachedInputTokens), CostUsd: cost, ModelCalls: calls}
}
