package api

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/worker"
)

// A trace ID is the canonical UUID (in any case). Other forms a UUID is
// written in (urn:uuid:…, braces, no hyphens) are no trace's — NOT_FOUND,
// never an internal error (Postgres reads no urn:uuid: prefix) — and no
// run's either; CreateRun stores the canonical ID the worker looks up.
func TestReviewTraceIDForms(t *testing.T) {
	t.Parallel()
	b := setupTraces(t)
	mine := b.save(t, "acme", keyA, profileTrace())
	other := func(id string) []string {
		return []string{"urn:uuid:" + id, "URN:UUID:" + strings.ToUpper(id), "{" + id + "}", strings.ReplaceAll(id, "-", "")}
	}
	upper := strings.ToUpper(mine.RunID)
	got, err := b.svc.GetTrace(b.acme, &wfv1.GetTraceRequest{TraceId: upper})
	require.NoError(t, err)
	require.Equal(t, mine.RunID, got.Id)
	_, err = b.svc.PinTrace(b.acme, &wfv1.PinTraceRequest{TraceId: upper, Pinned: true})
	require.NoError(t, err)
	_, err = b.svc.GetTrace(b.other, &wfv1.GetTraceRequest{TraceId: upper})
	require.Equal(t, codes.NotFound, codeOf(err), "%v", err)
	for _, id := range other(mine.RunID) {
		_, err := b.svc.GetTrace(b.acme, &wfv1.GetTraceRequest{TraceId: id})
		require.Equal(t, codes.NotFound, codeOf(err), "%s: %v", id, err)
		_, err = b.svc.PinTrace(b.acme, &wfv1.PinTraceRequest{TraceId: id, Pinned: true})
		require.Equal(t, codes.NotFound, codeOf(err), "%v", err)
		_, err = b.svc.DeleteTrace(b.acme, &wfv1.DeleteTraceRequest{TraceId: id})
		require.Equal(t, codes.NotFound, codeOf(err), "%v", err)
		_, err = b.svc.ExportTrace(b.acme, &wfv1.ExportTraceRequest{TraceId: id, Format: wfv1.TraceExportFormat_TRACE_EXPORT_FORMAT_STEPS})
		require.Equal(t, codes.NotFound, codeOf(err), "%v", err)
	}
	_, err = b.svc.DeleteTrace(b.acme, &wfv1.DeleteTraceRequest{TraceId: upper})
	require.NoError(t, err)

	runs := NewRunService(Config{Store: b.st, Queue: nopQueue{}, MaxRunTimeout: testMaxRunTimeout, Logger: slog.New(slog.DiscardHandler)})
	run, err := runs.CreateRun(b.acme, &wfv1.CreateRunRequest{Params: validParams(nil)})
	require.NoError(t, err)
	key, err := worker.TraceKey(run.GetParams())
	require.NoError(t, err)
	recorded := b.save(t, "acme", key, profileTrace())
	p := validParams(nil)
	p.Replay = &wfv1.ReplayOptions{Mode: wfv1.ReplayMode_REPLAY_MODE_STRICT, TraceId: strings.ToUpper(recorded.RunID)}
	run, err = runs.CreateRun(b.acme, &wfv1.CreateRunRequest{Params: p})
	require.NoError(t, err)
	require.Equal(t, recorded.RunID, run.GetParams().GetReplay().GetTraceId())
	for _, id := range other(recorded.RunID) {
		p := validParams(nil)
		p.Replay = &wfv1.ReplayOptions{Mode: wfv1.ReplayMode_REPLAY_MODE_AUTO, TraceId: id}
		_, err := runs.CreateRun(b.acme, &wfv1.CreateRunRequest{Params: p})
		code, reason, _ := statusOf(err)
		require.Equal(t, codes.InvalidArgument, code, "%v", err)
		require.Equal(t, ReasonTraceNotFound, reason)
	}
	// The run methods answer NOT_FOUND for such an ID too.
	for _, id := range other(run.Id) {
		_, err := runs.GetRun(b.acme, &wfv1.GetRunRequest{RunId: id})
		require.Equal(t, codes.NotFound, codeOf(err), "%s: %v", id, err)
	}
}
