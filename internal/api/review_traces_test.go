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

// A trace ID in another of the forms a UUID is written in (urn:uuid:…,
// braces, upper case) is no internal error: Postgres reads no urn:uuid:
// prefix, so the ID must reach the store as the canonical UUID.
func TestReviewTraceIDForms(t *testing.T) {
	t.Parallel()
	b := setupTraces(t)
	mine := b.save(t, "acme", keyA, profileTrace())
	unknown := "00000000-0000-4000-8000-000000000000"
	forms := func(id string) []string {
		return []string{"urn:uuid:" + id, "URN:UUID:" + strings.ToUpper(id), "{" + id + "}"}
	}
	for _, id := range forms(mine.RunID) {
		got, err := b.svc.GetTrace(b.acme, &wfv1.GetTraceRequest{TraceId: id})
		require.NoError(t, err, id)
		require.Equal(t, mine.RunID, got.Id)
		_, err = b.svc.ExportTrace(b.acme, &wfv1.ExportTraceRequest{TraceId: id, Format: wfv1.TraceExportFormat_TRACE_EXPORT_FORMAT_GO_TEST})
		require.NoError(t, err, id)
		_, err = b.svc.PinTrace(b.acme, &wfv1.PinTraceRequest{TraceId: id, Pinned: true})
		require.NoError(t, err, id)
		// Another tenant's is not found.
		_, err = b.svc.GetTrace(b.other, &wfv1.GetTraceRequest{TraceId: id})
		require.Equal(t, codes.NotFound, codeOf(err), "%v", err)
	}
	for _, id := range forms(unknown) {
		_, err := b.svc.GetTrace(b.acme, &wfv1.GetTraceRequest{TraceId: id})
		require.Equal(t, codes.NotFound, codeOf(err), "%v", err)
		_, err = b.svc.PinTrace(b.acme, &wfv1.PinTraceRequest{TraceId: id, Pinned: true})
		require.Equal(t, codes.NotFound, codeOf(err), "%v", err)
		_, err = b.svc.DeleteTrace(b.acme, &wfv1.DeleteTraceRequest{TraceId: id})
		require.Equal(t, codes.NotFound, codeOf(err), "%v", err)
		_, err = b.svc.ExportTrace(b.acme, &wfv1.ExportTraceRequest{TraceId: id, Format: wfv1.TraceExportFormat_TRACE_EXPORT_FORMAT_STEPS})
		require.Equal(t, codes.NotFound, codeOf(err), "%v", err)
	}
	_, err := b.svc.DeleteTrace(b.acme, &wfv1.DeleteTraceRequest{TraceId: "urn:uuid:" + mine.RunID})
	require.NoError(t, err)

	// CreateRun: the trace is found, and the run stores the canonical ID
	// the worker looks it up by.
	runs := NewRunService(Config{Store: b.st, Queue: nopQueue{}, MaxRunTimeout: testMaxRunTimeout, Logger: slog.New(slog.DiscardHandler)})
	params := validParams(nil)
	run, err := runs.CreateRun(b.acme, &wfv1.CreateRunRequest{Params: params})
	require.NoError(t, err)
	key, err := worker.TraceKey(run.GetParams())
	require.NoError(t, err)
	recorded := b.save(t, "acme", key, profileTrace())
	for _, id := range forms(recorded.RunID) {
		p := validParams(nil)
		p.Replay = &wfv1.ReplayOptions{Mode: wfv1.ReplayMode_REPLAY_MODE_STRICT, TraceId: id}
		run, err := runs.CreateRun(b.acme, &wfv1.CreateRunRequest{Params: p})
		require.NoError(t, err, id)
		require.Equal(t, recorded.RunID, run.GetParams().GetReplay().GetTraceId())
	}
	for _, id := range forms(unknown) {
		p := validParams(nil)
		p.Replay = &wfv1.ReplayOptions{Mode: wfv1.ReplayMode_REPLAY_MODE_AUTO, TraceId: id}
		_, err := runs.CreateRun(b.acme, &wfv1.CreateRunRequest{Params: p})
		code, reason, _ := statusOf(err)
		require.Equal(t, codes.InvalidArgument, code, "%v", err)
		require.Equal(t, ReasonTraceNotFound, reason)
	}
}
