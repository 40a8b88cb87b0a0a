package api

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/store"
	"github.com/wayfinder/wayfinder/internal/store/storetest"
	"github.com/wayfinder/wayfinder/internal/trace"
)

type tracesBundle struct {
	st          *store.Store
	svc         *TraceService
	acme, other context.Context
}

func setupTraces(t *testing.T) tracesBundle {
	t.Helper()
	st := store.New(storetest.NewPool(t))
	for _, id := range []string{"acme", "other"} {
		_, err := st.CreateTenant(t.Context(), &wfv1.Tenant{Id: id})
		require.NoError(t, err)
	}
	return tracesBundle{st: st, svc: NewTraceService(st), acme: asTenant("acme"), other: asTenant("other")}
}

// run stores a run of the tenant and returns its ID.
func (b tracesBundle) run(t *testing.T, tenantID string, params *wfv1.RunParams) string {
	t.Helper()
	run, _, err := b.st.CreateRun(t.Context(), store.NewRun{Tenant: tenantID, Params: params},
		func(context.Context, pgx.Tx, string) (int64, error) { return 1, nil })
	require.NoError(t, err)
	return run.Id
}

// save stores tr as the trace of a new run of the tenant under key.
func (b tracesBundle) save(t *testing.T, tenantID, key string, tr *trace.Trace) *store.Trace {
	t.Helper()
	id := b.run(t, tenantID, &wfv1.RunParams{Goal: tr.Goal, StartUrl: tr.StartURL})
	actions, final, err := tr.Encode()
	require.NoError(t, err)
	saved, err := b.st.SaveTrace(t.Context(), store.Trace{RunID: id, TenantID: tenantID, Key: key, Actions: actions, Final: final})
	require.NoError(t, err)
	return saved
}

// profileTrace is a recorded trace of a profile form.
func profileTrace() *trace.Trace {
	page := trace.Signature{URLPattern: "https://shop.example/profile", Structure: "abc123", Roles: map[string]int{"textbox": 1, "button": 1}}
	return &trace.Trace{
		Format: trace.FormatVersion, Goal: "Save the profile", StartURL: "https://shop.example/profile",
		Actions: []trace.Action{
			{Step: 1, Tool: "browser_fill", Arguments: map[string]any{"ref": "@e3", "value": "{{password}}"},
				Target: &trace.Fingerprint{Ref: "@e3", Role: "textbox", Name: "Password", Tag: "input",
					Attrs: map[string]string{"name": "pw", "type": "password"}, Path: "form > input", ValueKind: "password"},
				Page: page, URL: "https://shop.example/profile"},
			{Step: 2, Tool: "browser_click", Arguments: map[string]any{"ref": "@e4"},
				Target: &trace.Fingerprint{Ref: "@e4", Role: "button", Name: "Save", Tag: "button", Attrs: map[string]string{"id": "save"}},
				Page:   page, URL: "https://shop.example/profile", URLAfter: "https://shop.example/orders/42?ok=1"},
			{Step: 3, Tool: "browser_hover", Arguments: map[string]any{"ref": "@e9"}, TargetError: "no DOM details: the element left the page",
				Page: page, URL: "https://shop.example/orders/42"},
		},
		Final: trace.Final{
			URL: "https://shop.example/orders/42?ok=1", Page: trace.Signature{URLPattern: "https://shop.example/orders/*", Structure: "def456"},
			Reason:  "the order page shows Saved",
			Verdict: &trace.Verdict{Done: true, Confidence: 0.9, Reason: "Saved is shown", Source: "llm"},
			Criteria: []trace.Criterion{
				{Name: `"saved"`, Kind: "text_present", Value: "Saved", Set: "success", Matched: true},
				{Name: `url_pattern "/error"`, Kind: "url_pattern", Value: "/error", Set: "failure", Err: "none"},
			},
		},
		Model: trace.Usage{Calls: 4, InputTokens: 4000, OutputTokens: 200, CostUSD: 0.012},
	}
}

const (
	keyA = "aaaa0000aaaa0000aaaa0000aaaa0000aaaa0000aaaa0000aaaa0000aaaa0000"
	keyB = "bbbb0000bbbb0000bbbb0000bbbb0000bbbb0000bbbb0000bbbb0000bbbb0000"
)

func TestTraceServiceGetAndList(t *testing.T) {
	t.Parallel()
	b := setupTraces(t)
	first := b.save(t, "acme", keyA, profileTrace())
	second := b.save(t, "acme", keyA, profileTrace())
	other := b.save(t, "acme", keyB, &trace.Trace{Format: trace.FormatVersion, Goal: "Other", StartURL: "https://x.example/"})
	theirs := b.save(t, "other", keyA, profileTrace())

	got, err := b.svc.GetTrace(b.acme, &wfv1.GetTraceRequest{TraceId: first.RunID})
	require.NoError(t, err)
	require.Equal(t, first.RunID, got.Id)
	require.Equal(t, keyA, got.TaskKey)
	require.EqualValues(t, 1, got.Version)
	require.False(t, got.Pinned)
	require.Equal(t, "Save the profile", got.Goal)
	require.Equal(t, "https://shop.example/profile", got.StartUrl)
	require.EqualValues(t, trace.FormatVersion, got.Format)
	require.NotNil(t, got.CreateTime)
	require.EqualValues(t, 3, got.ActionCount)
	require.Len(t, got.Actions, 3)
	a := got.Actions[0]
	require.EqualValues(t, 1, a.Step)
	require.Equal(t, "browser_fill", a.Tool)
	require.Equal(t, "{{password}}", a.Arguments.AsMap()["value"])
	target := a.Target.AsMap()
	require.Equal(t, "textbox", target["role"])
	require.Equal(t, "Password", target["name"])
	require.Equal(t, "password", target["value_kind"])
	require.Equal(t, map[string]any{"name": "pw", "type": "password"}, target["attrs"])
	require.Equal(t, "https://shop.example/profile", a.UrlPattern)
	require.Equal(t, "abc123", a.PageStructure)
	require.Equal(t, "https://shop.example/orders/42?ok=1", got.Actions[1].UrlAfter)
	require.Nil(t, got.Actions[2].Target)
	require.Equal(t, "no DOM details: the element left the page", got.Actions[2].TargetError)
	f := got.Final
	require.Equal(t, "https://shop.example/orders/*", f.UrlPattern)
	require.Equal(t, "def456", f.PageStructure)
	require.Equal(t, "the order page shows Saved", f.Reason)
	require.True(t, f.Verdict.Done)
	require.Equal(t, "llm", f.Verdict.Source)
	require.Len(t, f.Criteria, 2)
	require.Equal(t, "saved", f.Criteria[0].Indicator.Name)
	require.Equal(t, "Saved", f.Criteria[0].Indicator.GetTextPresent())
	require.Equal(t, "success", f.Criteria[0].Kind)
	require.True(t, f.Criteria[0].Matched)
	require.Empty(t, f.Criteria[1].Indicator.Name, "an unnamed indicator")
	require.Equal(t, "/error", f.Criteria[1].Indicator.GetUrlPattern())
	require.Equal(t, "none", f.Criteria[1].Error)
	u := got.RecordedUsage
	require.EqualValues(t, 4, u.ModelCalls)
	require.EqualValues(t, 4000, u.InputTokens)
	require.EqualValues(t, 200, u.OutputTokens)
	require.InDelta(t, 0.012, u.CostUsd, 1e-9)

	list, err := b.svc.ListTraces(b.acme, &wfv1.ListTracesRequest{})
	require.NoError(t, err)
	require.Equal(t, []string{other.RunID, second.RunID, first.RunID}, traceIDs(list.Traces), "newest first, the tenant's only")
	require.Empty(t, list.NextPageToken)
	for _, tr := range list.Traces {
		require.Empty(t, tr.Actions, "a listed trace has no actions")
	}
	require.EqualValues(t, 3, list.Traces[1].ActionCount)
	require.EqualValues(t, 2, list.Traces[1].Version)
	require.EqualValues(t, 4, list.Traces[1].RecordedUsage.ModelCalls)

	list, err = b.svc.ListTraces(b.acme, &wfv1.ListTracesRequest{TaskKey: keyA})
	require.NoError(t, err)
	require.Equal(t, []string{second.RunID, first.RunID}, traceIDs(list.Traces))

	// Page by page.
	var paged []string
	token := ""
	for range 5 {
		page, err := b.svc.ListTraces(b.acme, &wfv1.ListTracesRequest{PageSize: 1, PageToken: token})
		require.NoError(t, err)
		paged = append(paged, traceIDs(page.Traces)...)
		if token = page.NextPageToken; token == "" {
			break
		}
	}
	require.Equal(t, []string{other.RunID, second.RunID, first.RunID}, paged)

	// Another tenant's trace is not found, nor listed.
	_, err = b.svc.GetTrace(b.acme, &wfv1.GetTraceRequest{TraceId: theirs.RunID})
	require.Equal(t, codes.NotFound, codeOf(err))
	list, err = b.svc.ListTraces(b.other, &wfv1.ListTracesRequest{})
	require.NoError(t, err)
	require.Equal(t, []string{theirs.RunID}, traceIDs(list.Traces))
}

func traceIDs(ts []*wfv1.Trace) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Id
	}
	return out
}

func TestTraceServiceErrors(t *testing.T) {
	t.Parallel()
	b := setupTraces(t)
	mine := b.save(t, "acme", keyA, profileTrace())
	theirs := b.save(t, "other", keyA, profileTrace())
	unknown := "00000000-0000-4000-8000-000000000000"
	for _, tc := range []struct {
		name string
		call func(ctx context.Context) error
		code codes.Code
	}{
		{"list page size too big", func(ctx context.Context) error {
			_, err := b.svc.ListTraces(ctx, &wfv1.ListTracesRequest{PageSize: 501})
			return err
		}, codes.InvalidArgument},
		{"list page size negative", func(ctx context.Context) error {
			_, err := b.svc.ListTraces(ctx, &wfv1.ListTracesRequest{PageSize: -1})
			return err
		}, codes.InvalidArgument},
		{"list page size 500", func(ctx context.Context) error {
			_, err := b.svc.ListTraces(ctx, &wfv1.ListTracesRequest{PageSize: 500})
			return err
		}, codes.OK},
		{"list malformed token", func(ctx context.Context) error {
			_, err := b.svc.ListTraces(ctx, &wfv1.ListTracesRequest{PageToken: "nope"})
			return err
		}, codes.InvalidArgument},
		{"list malformed task key", func(ctx context.Context) error {
			_, err := b.svc.ListTraces(ctx, &wfv1.ListTracesRequest{TaskKey: "Not A Key"})
			return err
		}, codes.InvalidArgument},
		{"get without id", func(ctx context.Context) error {
			_, err := b.svc.GetTrace(ctx, &wfv1.GetTraceRequest{})
			return err
		}, codes.InvalidArgument},
		{"get malformed id", func(ctx context.Context) error {
			_, err := b.svc.GetTrace(ctx, &wfv1.GetTraceRequest{TraceId: "not-a-uuid"})
			return err
		}, codes.NotFound},
		{"get unknown", func(ctx context.Context) error {
			_, err := b.svc.GetTrace(ctx, &wfv1.GetTraceRequest{TraceId: unknown})
			return err
		}, codes.NotFound},
		{"get theirs", func(ctx context.Context) error {
			_, err := b.svc.GetTrace(ctx, &wfv1.GetTraceRequest{TraceId: theirs.RunID})
			return err
		}, codes.NotFound},
		{"pin theirs", func(ctx context.Context) error {
			_, err := b.svc.PinTrace(ctx, &wfv1.PinTraceRequest{TraceId: theirs.RunID, Pinned: true})
			return err
		}, codes.NotFound},
		{"pin without id", func(ctx context.Context) error {
			_, err := b.svc.PinTrace(ctx, &wfv1.PinTraceRequest{Pinned: true})
			return err
		}, codes.InvalidArgument},
		{"delete theirs", func(ctx context.Context) error {
			_, err := b.svc.DeleteTrace(ctx, &wfv1.DeleteTraceRequest{TraceId: theirs.RunID})
			return err
		}, codes.NotFound},
		{"delete malformed", func(ctx context.Context) error {
			_, err := b.svc.DeleteTrace(ctx, &wfv1.DeleteTraceRequest{TraceId: "x"})
			return err
		}, codes.NotFound},
		{"export without format", func(ctx context.Context) error {
			_, err := b.svc.ExportTrace(ctx, &wfv1.ExportTraceRequest{TraceId: mine.RunID})
			return err
		}, codes.InvalidArgument},
		{"export unknown format", func(ctx context.Context) error {
			_, err := b.svc.ExportTrace(ctx, &wfv1.ExportTraceRequest{TraceId: mine.RunID, Format: 9})
			return err
		}, codes.InvalidArgument},
		{"export theirs", func(ctx context.Context) error {
			_, err := b.svc.ExportTrace(ctx, &wfv1.ExportTraceRequest{TraceId: theirs.RunID, Format: wfv1.TraceExportFormat_TRACE_EXPORT_FORMAT_STEPS})
			return err
		}, codes.NotFound},
		{"export a hover as steps", func(ctx context.Context) error {
			_, err := b.svc.ExportTrace(ctx, &wfv1.ExportTraceRequest{TraceId: mine.RunID, Format: wfv1.TraceExportFormat_TRACE_EXPORT_FORMAT_STEPS})
			return err
		}, codes.FailedPrecondition},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.code, codeOf(tc.call(b.acme)), "%v", tc.call(b.acme))
		})
	}
	// Nothing of the other tenant's changed.
	got, err := b.svc.GetTrace(b.other, &wfv1.GetTraceRequest{TraceId: theirs.RunID})
	require.NoError(t, err)
	require.False(t, got.Pinned)
}

func TestTraceServicePinDeleteExport(t *testing.T) {
	t.Parallel()
	b := setupTraces(t)
	first := b.save(t, "acme", keyA, profileTrace())
	second := b.save(t, "acme", keyA, profileTrace())
	elsewhere := b.save(t, "acme", keyB, profileTrace())
	pin := func(id string, on bool) *wfv1.Trace {
		t.Helper()
		tr, err := b.svc.PinTrace(b.acme, &wfv1.PinTraceRequest{TraceId: id, Pinned: on})
		require.NoError(t, err)
		require.Equal(t, on, tr.Pinned)
		require.Len(t, tr.Actions, 3)
		return tr
	}
	pinned := func() []string {
		t.Helper()
		list, err := b.svc.ListTraces(b.acme, &wfv1.ListTracesRequest{PinnedOnly: true})
		require.NoError(t, err)
		return traceIDs(list.Traces)
	}
	pin(first.RunID, true)
	pin(elsewhere.RunID, true)
	require.Equal(t, []string{elsewhere.RunID, first.RunID}, pinned())
	pin(second.RunID, true)
	require.Equal(t, []string{elsewhere.RunID, second.RunID}, pinned(), "pinning unpins the task's other trace only")
	pin(second.RunID, false)
	require.Equal(t, []string{elsewhere.RunID}, pinned())

	// Export: a Go test with the secret from the environment.
	gt, err := b.svc.ExportTrace(b.acme, &wfv1.ExportTraceRequest{TraceId: first.RunID, Format: wfv1.TraceExportFormat_TRACE_EXPORT_FORMAT_GO_TEST})
	require.NoError(t, err)
	require.Equal(t, "replay_"+first.RunID[:8]+"_test.go", gt.Filename)
	require.Equal(t, "text/x-go; charset=utf-8", gt.ContentType)
	require.Contains(t, gt.Content, "func TestReplay"+strings.ToUpper(first.RunID[:1])+first.RunID[1:8]+"(t *testing.T) {")
	require.Contains(t, gt.Content, `secret["WAYFINDER_SECRET_PASSWORD"]`)
	require.Contains(t, gt.Content, `t.Fatal("unsupported: step 3 (browser_hover) was aimed at an element that was not recorded`)

	// Steps of a trace without the hover.
	noHover := profileTrace()
	noHover.Actions = noHover.Actions[:2]
	plain := b.save(t, "acme", keyA, noHover)
	st, err := b.svc.ExportTrace(b.acme, &wfv1.ExportTraceRequest{TraceId: plain.RunID, Format: wfv1.TraceExportFormat_TRACE_EXPORT_FORMAT_STEPS})
	require.NoError(t, err)
	require.Equal(t, "steps_"+plain.RunID[:8]+".txt", st.Filename)
	require.Equal(t, "text/plain; charset=utf-8", st.ContentType)
	require.Contains(t, st.Content, "Type \"{{password}}\" into \"Password\"\nClick the \"Save\" button\nExpect URL \"https://shop.example/orders/*\"\n")

	// Delete: the trace goes, the run stays.
	_, err = b.svc.DeleteTrace(b.acme, &wfv1.DeleteTraceRequest{TraceId: first.RunID})
	require.NoError(t, err)
	_, err = b.svc.GetTrace(b.acme, &wfv1.GetTraceRequest{TraceId: first.RunID})
	require.Equal(t, codes.NotFound, codeOf(err))
	_, err = b.svc.DeleteTrace(b.acme, &wfv1.DeleteTraceRequest{TraceId: first.RunID})
	require.Equal(t, codes.NotFound, codeOf(err))
	run, err := b.st.GetRun(t.Context(), first.RunID)
	require.NoError(t, err)
	require.Equal(t, first.RunID, run.Id)
}

// A trace of a newer format than this server reads is listed by what the
// store knows; getting it is FAILED_PRECONDITION.
func TestTraceServiceNewerFormat(t *testing.T) {
	t.Parallel()
	b := setupTraces(t)
	id := b.run(t, "acme", &wfv1.RunParams{Goal: "g", StartUrl: "https://x.example/"})
	final, err := json.Marshal(map[string]any{"format": trace.FormatVersion + 1, "goal": "g"})
	require.NoError(t, err)
	_, err = b.st.SaveTrace(t.Context(), store.Trace{RunID: id, TenantID: "acme", Key: keyA, Actions: []byte(`[]`), Final: final})
	require.NoError(t, err)
	list, err := b.svc.ListTraces(b.acme, &wfv1.ListTracesRequest{})
	require.NoError(t, err)
	require.Len(t, list.Traces, 1)
	require.Equal(t, id, list.Traces[0].Id)
	require.Equal(t, keyA, list.Traces[0].TaskKey)
	_, err = b.svc.GetTrace(b.acme, &wfv1.GetTraceRequest{TraceId: id})
	require.Equal(t, codes.FailedPrecondition, codeOf(err))
}
