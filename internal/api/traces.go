package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"

	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/store"
	"github.com/wayfinder/wayfinder/internal/tenant"
	"github.com/wayfinder/wayfinder/internal/trace"
)

// Page sizes of ListTraces.
const (
	defaultTracePageSize = 50
	maxTracePageSize     = 500
)

// taskKeyPattern is the form of a task key (trace.Key: hex SHA-256).
var taskKeyPattern = regexp.MustCompile(`^[0-9a-f]{1,128}$`)

// TraceService implements wayfinder.v1.TraceService: the replayable
// traces of the caller's tenant's completed runs. Another tenant's trace
// is NOT_FOUND, exactly like one that does not exist.
type TraceService struct {
	wfv1.UnimplementedTraceServiceServer
	store *store.Store
}

// NewTraceService returns the trace service.
func NewTraceService(st *store.Store) *TraceService {
	return &TraceService{store: st}
}

// ListTraces implements wayfinder.v1.TraceService: newest first, without
// actions (action_count says how many).
func (s *TraceService) ListTraces(ctx context.Context, req *wfv1.ListTracesRequest) (*wfv1.ListTracesResponse, error) {
	var v fault.Violations
	size := pageSize(&v, req.GetPageSize(), defaultTracePageSize, maxTracePageSize)
	if k := req.GetTaskKey(); k != "" && !taskKeyPattern.MatchString(k) {
		v.Add("task_key", "a task key is lower-case hex (Trace.task_key)")
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	ts, next, err := s.store.ListTraces(ctx, tenant.ID(ctx), store.TraceFilter{Key: req.GetTaskKey(), PinnedOnly: req.GetPinnedOnly()},
		size, req.GetPageToken())
	if err != nil {
		return nil, err
	}
	out := &wfv1.ListTracesResponse{Traces: make([]*wfv1.Trace, 0, len(ts)), NextPageToken: next}
	for _, st := range ts {
		t, err := traceProto(st, false)
		if err != nil {
			// A trace this build cannot read is still listed, by what the
			// store knows of it; GetTrace says why it cannot be read.
			t = traceHeader(st)
		}
		out.Traces = append(out.Traces, t)
	}
	return out, nil
}

// GetTrace implements wayfinder.v1.TraceService.
func (s *TraceService) GetTrace(ctx context.Context, req *wfv1.GetTraceRequest) (*wfv1.Trace, error) {
	st, err := s.ownTrace(ctx, req.GetTraceId())
	if err != nil {
		return nil, err
	}
	return traceProto(st, true)
}

// PinTrace implements wayfinder.v1.TraceService: pinning unpins the
// task's other traces.
func (s *TraceService) PinTrace(ctx context.Context, req *wfv1.PinTraceRequest) (*wfv1.Trace, error) {
	id, err := traceID(req.GetTraceId())
	if err != nil {
		return nil, err
	}
	st, err := s.store.PinTrace(ctx, tenant.ID(ctx), id, req.GetPinned())
	if err != nil {
		return nil, err
	}
	return traceProto(st, true)
}

// DeleteTrace implements wayfinder.v1.TraceService; the run that recorded
// the trace stays.
func (s *TraceService) DeleteTrace(ctx context.Context, req *wfv1.DeleteTraceRequest) (*emptypb.Empty, error) {
	id, err := traceID(req.GetTraceId())
	if err != nil {
		return nil, err
	}
	if err := s.store.DeleteTrace(ctx, tenant.ID(ctx), id); err != nil {
		return nil, err
	}
	return &emptypb.Empty{}, nil
}

// ExportTrace implements wayfinder.v1.TraceService. A trace with an action
// the step list cannot express is FAILED_PRECONDITION naming the step.
func (s *TraceService) ExportTrace(ctx context.Context, req *wfv1.ExportTraceRequest) (*wfv1.ExportTraceResponse, error) {
	var v fault.Violations
	switch f := req.GetFormat(); {
	case f == wfv1.TraceExportFormat_TRACE_EXPORT_FORMAT_UNSPECIFIED:
		v.Add("format", "required: TRACE_EXPORT_FORMAT_GO_TEST or TRACE_EXPORT_FORMAT_STEPS")
	case wfv1.TraceExportFormat_name[int32(f)] == "":
		v.Add("format", "unknown export format %d", f)
	}
	if req.GetTraceId() == "" {
		v.Add("trace_id", "required")
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	st, err := s.ownTrace(ctx, req.GetTraceId())
	if err != nil {
		return nil, err
	}
	t, err := decodeTrace(st)
	if err != nil {
		return nil, err
	}
	short := st.RunID[:8]
	switch req.GetFormat() {
	case wfv1.TraceExportFormat_TRACE_EXPORT_FORMAT_GO_TEST:
		src, err := trace.ExportGoTest(t, "Replay "+short)
		if err != nil {
			return nil, exportErr(err)
		}
		return &wfv1.ExportTraceResponse{Filename: "replay_" + short + "_test.go", ContentType: "text/x-go; charset=utf-8", Content: string(src)}, nil
	default:
		steps, err := trace.ExportSteps(t)
		if err != nil {
			return nil, exportErr(err)
		}
		return &wfv1.ExportTraceResponse{Filename: "steps_" + short + ".txt", ContentType: "text/plain; charset=utf-8", Content: steps}, nil
	}
}

// exportErr classifies an export error: an action the format cannot
// express is a failed precondition of the trace.
func exportErr(err error) error {
	if errors.Is(err, trace.ErrNotExportable) {
		return fmt.Errorf("%w: %w", fault.ErrFailedPrecondition, err)
	}
	return err
}

// ownTrace returns the caller's trace id. Another tenant's trace is
// NOT_FOUND, as are IDs that are no UUID (as runs treat theirs).
func (s *TraceService) ownTrace(ctx context.Context, id string) (*store.Trace, error) {
	id, err := traceID(id)
	if err != nil {
		return nil, err
	}
	return s.store.GetTrace(ctx, tenant.ID(ctx), id)
}

// traceID checks a request's trace_id (requireID) and returns it as the
// canonical UUID: uuid.Parse reads forms Postgres does not (urn:uuid:…),
// which would make the query fail as an internal error.
func traceID(id string) (string, error) {
	if err := requireID("trace_id", id); err != nil {
		return "", err
	}
	return uuid.MustParse(id).String(), nil
}

// decodeTrace reads a stored trace; one of a format newer than this
// server reads is a failed precondition.
func decodeTrace(st *store.Trace) (*trace.Trace, error) {
	t, err := trace.Decode(st.Actions, st.Final)
	if err != nil {
		return nil, fmt.Errorf("trace %s cannot be read: %w: %w", st.RunID, fault.ErrFailedPrecondition, err)
	}
	return t, nil
}

// traceHeader is what the store knows of a trace without decoding it.
func traceHeader(st *store.Trace) *wfv1.Trace {
	return &wfv1.Trace{Id: st.RunID, TaskKey: st.Key, Version: int32(st.Version), Pinned: st.Pinned,
		HealedFrom: st.HealedFrom, CreateTime: timestamppb.New(st.CreatedAt)}
}

// traceProto converts a stored trace; with actions when withActions.
func traceProto(st *store.Trace, withActions bool) (*wfv1.Trace, error) {
	t, err := decodeTrace(st)
	if err != nil {
		return nil, err
	}
	out := traceHeader(st)
	out.Goal, out.StartUrl, out.Format = t.Goal, t.StartURL, int32(t.Format)
	out.ActionCount = int32(len(t.Actions))
	out.Final = finalProto(t.Final)
	out.RecordedUsage = &wfv1.Usage{ModelCalls: int32(t.Model.Calls), InputTokens: t.Model.InputTokens,
		OutputTokens: t.Model.OutputTokens, CostUsd: t.Model.CostUSD}
	if !withActions {
		return out, nil
	}
	out.Actions = make([]*wfv1.TraceAction, 0, len(t.Actions))
	for i, a := range t.Actions {
		pa, err := actionProto(a)
		if err != nil {
			return nil, fmt.Errorf("trace %s action %d: %w", st.RunID, i+1, err)
		}
		out.Actions = append(out.Actions, pa)
	}
	return out, nil
}

func actionProto(a trace.Action) (*wfv1.TraceAction, error) {
	out := &wfv1.TraceAction{Step: int32(a.Step), Tool: a.Tool, TargetError: a.TargetError,
		Url: a.URL, UrlPattern: a.Page.URLPattern, PageStructure: a.Page.Structure, UrlAfter: a.URLAfter}
	if len(a.Arguments) > 0 {
		args, err := structpb.NewStruct(a.Arguments)
		if err != nil {
			return nil, fmt.Errorf("arguments: %w", err)
		}
		out.Arguments = args
	}
	if a.Target != nil {
		target, err := jsonStruct(a.Target)
		if err != nil {
			return nil, fmt.Errorf("target: %w", err)
		}
		out.Target = target
	}
	return out, nil
}

// jsonStruct is v's JSON object as a Struct: the stored form of the
// fingerprint, field names and all.
func jsonStruct(v any) (*structpb.Struct, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	return structpb.NewStruct(m)
}

func finalProto(f trace.Final) *wfv1.TraceFinal {
	out := &wfv1.TraceFinal{Url: f.URL, UrlPattern: f.Page.URLPattern, PageStructure: f.Page.Structure, Reason: f.Reason}
	if v := f.Verdict; v != nil {
		out.Verdict = &wfv1.JudgeVerdict{Done: v.Done, Confidence: v.Confidence, Reason: v.Reason, Source: v.Source}
	}
	for _, c := range f.Criteria {
		out.Criteria = append(out.Criteria, &wfv1.IndicatorResult{Indicator: indicatorProto(c), Kind: c.Set,
			Matched: c.Matched, Error: c.Err})
	}
	return out
}

// indicatorProto rebuilds a criterion's indicator. The trace keeps its
// display name: a quoted name for a named indicator, `kind "value"` for
// an unnamed one.
func indicatorProto(c trace.Criterion) *wfv1.Indicator {
	ind := &wfv1.Indicator{}
	if name, err := strconv.Unquote(c.Name); err == nil {
		ind.Name = name
	}
	switch c.Kind {
	case "url_pattern":
		ind.Condition = &wfv1.Indicator_UrlPattern{UrlPattern: c.Value}
	case "title_pattern":
		ind.Condition = &wfv1.Indicator_TitlePattern{TitlePattern: c.Value}
	case "text_present":
		ind.Condition = &wfv1.Indicator_TextPresent{TextPresent: c.Value}
	case "element_present":
		ind.Condition = &wfv1.Indicator_ElementPresent{ElementPresent: c.Value}
	case "js_expression":
		ind.Condition = &wfv1.Indicator_JsExpression{JsExpression: c.Value}
	}
	return ind
}
