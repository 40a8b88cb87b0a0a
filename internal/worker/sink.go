package worker

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/netguard"
	"github.com/wayfinder/wayfinder/internal/runner"
	"github.com/wayfinder/wayfinder/internal/store"
)

// sink persists what the runner reports: steps with their screenshots and
// events, each in one transaction.
type sink struct {
	store   *store.Store
	runID   string
	tracer  trace.Tracer
	metrics *Metrics
	// blocks is the run's network guard log; blockSeq is the first block
	// not yet attached to a step.
	blocks   *netguard.Log
	blockSeq uint64
}

func (s *sink) StepStarted(ctx context.Context, number int) error {
	run, err := s.store.GetRun(ctx, s.runID)
	if err != nil {
		return err
	}
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
		_, as := s.tracer.Start(ctx, "action "+a.Tool, trace.WithTimestamp(st.Start),
			trace.WithAttributes(attribute.String("wayfinder.outcome", a.Outcome)))
		as.End(trace.WithTimestamp(st.Start.Add(a.Duration)))
	}
	step := &wfv1.Step{
		RunId:     s.runID,
		Number:    int32(st.Number),
		StartTime: timestamppb.New(st.Start),
		EndTime:   timestamppb.New(st.End),
		Url:       st.URL,
		Title:     st.Title,
		Error:     runError(st.Err),
		Actor:     st.Actor,
	}
	for _, a := range st.Actions {
		args, err := structpb.NewStruct(a.Arguments)
		if err != nil {
			return fmt.Errorf("encode arguments of %s: %w", a.Tool, err)
		}
		step.Actions = append(step.Actions, &wfv1.Action{
			Tool: a.Tool, Arguments: args, Outcome: a.Outcome, Message: a.Message,
			Duration: durationpb.New(a.Duration),
		})
	}
	var blocked []netguard.Block
	blocked, s.blockSeq = s.blocks.Since(s.blockSeq)
	for _, b := range blocked {
		step.BlockedRequests = append(step.BlockedRequests, &wfv1.BlockedRequest{
			Time: timestamppb.New(b.Time), Kind: string(b.Kind), Url: b.URL, Host: b.Host,
			Reason: string(b.Reason), Message: b.Message,
		})
	}
	var shot *store.Media
	if st.Screenshot != nil {
		shot = &store.Media{ContentType: "image/png", Data: st.Screenshot}
	}
	recorded, err := s.store.RecordStep(ctx, step, shot)
	if err != nil {
		return err
	}
	if recorded {
		s.metrics.stepDuration.Observe(st.End.Sub(st.Start).Seconds())
	}
	return nil
}
