package worker

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/trace/noop"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/llm"
	"github.com/wayfinder/wayfinder/internal/runner"
	"github.com/wayfinder/wayfinder/internal/store"
	"github.com/wayfinder/wayfinder/internal/store/storetest"
)

const pricesPage = `<!doctype html><title>Prices</title><h1>Prices</h1>
<table><tr><td>Apple</td><td>1.20</td></tr><tr><td>Pear</td><td>0.80</td></tr></table>`

// outputBundle executes runs of a scripted controller through the worker
// (execute: engine, sink, FinishRun) on a real store and browser.
type outputBundle struct {
	store *store.Store
	url   string
	log   *slog.Logger
}

func newOutputBundle(t *testing.T) *outputBundle {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/prices" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, pricesPage)
	}))
	t.Cleanup(srv.Close)
	return &outputBundle{store: store.New(storetest.NewPool(t)), url: srv.URL + "/prices", log: slog.New(slog.DiscardHandler)}
}

// worker returns a worker whose runs' controller is m.
func (b *outputBundle) worker(t *testing.T, m llm.Model) *Worker {
	t.Helper()
	return New(Config{Store: b.store, Pool: sharedPool(t), Runner: &runner.Runner{}, AllowPrivateNetworks: true,
		Logger: b.log, Tracer: noop.NewTracerProvider().Tracer(""), Metrics: NewMetrics(nil),
		Models: &Models{DefaultProvider: llm.ProviderScripted, Extra: map[string]func(llm.Settings) (llm.Model, error){
			llm.ProviderScripted: func(llm.Settings) (llm.Model, error) { return m, nil },
		}}})
}

// start creates and starts a run of the prices page with a report
// indicator.
func (b *outputBundle) start(t *testing.T) *wfv1.Run {
	t.Helper()
	params := &wfv1.RunParams{Goal: "Read the prices", StartUrl: b.url, MaxSteps: 5,
		Judge: &wfv1.JudgeSettings{Strategy: wfv1.JudgeStrategy_JUDGE_STRATEGY_HEURISTIC},
		Completion: &wfv1.CompletionCriteria{Report: []*wfv1.Indicator{
			{Name: "apple", Condition: &wfv1.Indicator_TextPresent{TextPresent: "Apple"}},
		}}}
	run, _, err := b.store.CreateRun(t.Context(), store.NewRun{Params: params},
		func(context.Context, pgx.Tx, string) (int64, error) { return 1, nil })
	require.NoError(t, err)
	run, _, err = b.store.StartRun(t.Context(), run.Id)
	require.NoError(t, err)
	return run
}

func extractCall() llm.Turn {
	return llm.Reply("I read the prices.", llm.Call(runner.ToolExtract, map[string]any{"rows": "tr",
		"fields": map[string]string{"name": "td:nth-child(1)", "price": "td:nth-child(2)"}, "reasoning": "read", "confidence": 0.9}))
}

func completeCall(data any) llm.Turn {
	args := map[string]any{"status": "success", "reason": "read"}
	if data != nil {
		args["data"] = data
	}
	return llm.Reply("Done.", llm.Call(runner.ToolComplete, args))
}

func jsonValue(t *testing.T, v any) *structpb.Value {
	t.Helper()
	pv, err := structpb.NewValue(v)
	require.NoError(t, err)
	return pv
}

var priceRows = []any{map[string]any{"name": "Apple", "price": "1.20"}, map[string]any{"name": "Pear", "price": "0.80"}}

// The engine's output and its report indicators reach the stored run.
func TestWorkerRecordsOutput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		turns []llm.Turn
		want  any
	}{
		{"complete_task data", []llm.Turn{extractCall(), completeCall(map[string]any{"apple": 1.2, "pear": 0.8})},
			map[string]any{"apple": 1.2, "pear": 0.8}},
		{"the extract's rows", []llm.Turn{extractCall(), completeCall(nil)}, priceRows},
		{"none", []llm.Turn{completeCall(nil)}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := newOutputBundle(t)
			run := b.start(t)
			final, err := b.worker(t, llm.NewScripted("controller", tc.turns...)).execute(testCtx(t), run, b.log)
			require.NoError(t, err)
			require.Equal(t, wfv1.RunStatus_RUN_STATUS_COMPLETED, final.Status, "%v", final.Error)
			if tc.want == nil {
				require.Nil(t, final.Output)
			} else {
				require.True(t, proto.Equal(jsonValue(t, tc.want), final.Output), "%v", final.Output)
			}
			stored, err := b.store.GetRun(t.Context(), run.Id)
			require.NoError(t, err)
			require.True(t, proto.Equal(final.Output, stored.Output))
			require.Len(t, stored.Criteria, 1)
			r := stored.Criteria[0]
			require.Equal(t, "report", r.Kind)
			require.Equal(t, "Apple", r.GetIndicator().GetTextPresent())
			require.True(t, r.Matched)
			require.Equal(t, final.StepCount, r.StepNumber)
		})
	}
}

// A resumed run's output falls back to the rows its earlier execution
// extracted, as recorded.
func TestWorkerResumedRunKeepsExtract(t *testing.T) {
	t.Parallel()
	b := newOutputBundle(t)
	run := b.start(t)
	rows := jsonValue(t, []any{map[string]any{"name": "Plum", "price": "2.00"}})
	result, err := structpb.NewStruct(map[string]any{"rows": rows.AsInterface(), "rows_matched": 1})
	require.NoError(t, err)
	now := timestamppb.Now()
	for _, st := range []*wfv1.Step{
		{RunId: run.Id, Number: 1, StartTime: now, EndTime: now, Actions: []*wfv1.Action{
			{Tool: runner.ToolExtract, Outcome: "ok", Result: result},
			{Tool: runner.ToolExtract, Outcome: "invalid_params"},
		}},
		{RunId: run.Id, Number: 2, StartTime: now, EndTime: now, Actions: []*wfv1.Action{{Tool: runner.ToolScroll, Outcome: "ok"}}},
	} {
		_, err := b.store.RecordStep(t.Context(), st, nil)
		require.NoError(t, err)
	}
	require.NoError(t, b.store.RequeueRun(t.Context(), run.Id, "worker shutting down"))
	run, _, err = b.store.StartRun(t.Context(), run.Id)
	require.NoError(t, err)
	require.EqualValues(t, 2, run.StepCount)

	final, err := b.worker(t, llm.NewScripted("controller", completeCall(nil))).execute(testCtx(t), run, b.log)
	require.NoError(t, err)
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_COMPLETED, final.Status, "%v", final.Error)
	require.True(t, proto.Equal(rows, final.Output), "%v", final.Output)

	prior, err := b.worker(t, nil).priorExtract(t.Context(), run.Id)
	require.NoError(t, err)
	require.Equal(t, []map[string]string{{"name": "Plum", "price": "2.00"}}, prior)
}

// timeoutModel answers from its script, and on call n ends the run's
// context as its run timeout would.
type timeoutModel struct {
	*llm.Scripted
	n      int
	calls  int
	expire context.CancelCauseFunc
}

func (m *timeoutModel) Complete(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	if m.calls++; m.calls == m.n {
		m.expire(context.DeadlineExceeded)
		return nil, context.Cause(ctx)
	}
	return m.Scripted.Complete(ctx, req)
}

// A run that hits its run timeout keeps what it extracted.
func TestWorkerTimedOutRunKeepsExtract(t *testing.T) {
	t.Parallel()
	b := newOutputBundle(t)
	run := b.start(t)
	ctx, expire := context.WithCancelCause(testCtx(t))
	defer expire(nil)
	m := &timeoutModel{Scripted: llm.NewScripted("controller", extractCall()), n: 2, expire: expire}
	final, err := b.worker(t, m).execute(ctx, run, b.log)
	require.NoError(t, err)
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_ERROR, final.Status)
	require.Equal(t, wfv1.ErrorCategory_ERROR_CATEGORY_RUN_TIMEOUT, final.GetError().GetCategory())
	require.True(t, proto.Equal(jsonValue(t, priceRows), final.Output), "%v", final.Output)
}

// The stored output is redacted with the run's secrets, and report
// indicators map to the engine's.
func TestOutputMapping(t *testing.T) {
	t.Parallel()
	const token = "tok-0a1b2c3d4e"
	s := &sink{redact: runner.NewRedactor(nil, []string{token}), log: slog.New(slog.DiscardHandler)}
	o, err := s.outcome(t.Context(), runner.Result{Status: runner.StatusFailed,
		Output: map[string]any{"key": token, token: []any{"a " + token, 1.0, true, nil}}})
	require.NoError(t, err)
	require.True(t, proto.Equal(jsonValue(t, map[string]any{"key": runner.Redacted, runner.Redacted: []any{"a " + runner.Redacted, 1.0, true, nil}}), o.Output), "%v", o.Output)
	o, err = s.outcome(t.Context(), runner.Result{Status: runner.StatusCancelled, Output: []any{token}})
	require.NoError(t, err)
	require.True(t, proto.Equal(jsonValue(t, []any{runner.Redacted}), o.Output))
	o, err = s.outcome(t.Context(), runner.Result{Status: runner.StatusCompleted})
	require.NoError(t, err)
	require.Nil(t, o.Output)

	var rp runner.Params
	require.NoError(t, LiveParams(&rp, &wfv1.RunParams{Completion: &wfv1.CompletionCriteria{
		Report: []*wfv1.Indicator{{Name: "url", Condition: &wfv1.Indicator_UrlPattern{UrlPattern: "/done$"}}},
	}}))
	require.Empty(t, rp.Criteria.Success)
	require.Empty(t, rp.Criteria.Failure)
	require.Len(t, rp.Criteria.Report, 1)
	require.Equal(t, "/done$", rp.Criteria.Report[0].Pattern.String())
	back := criteriaProto([]runner.IndicatorResult{{Indicator: rp.Criteria.Report[0], Set: runner.SetReport, Matched: true, Step: 4}})
	require.Equal(t, "report", back[0].Kind)
	require.Equal(t, "/done$", back[0].GetIndicator().GetUrlPattern())
	require.EqualValues(t, 4, back[0].StepNumber)
	require.Error(t, LiveParams(&rp, &wfv1.RunParams{Completion: &wfv1.CompletionCriteria{
		Report: []*wfv1.Indicator{{Condition: &wfv1.Indicator_TitlePattern{TitlePattern: "("}}},
	}}), "an invalid report pattern")
}
