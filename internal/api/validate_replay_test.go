package api

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/secrets"
	"github.com/wayfinder/wayfinder/internal/store"
	"github.com/wayfinder/wayfinder/internal/store/storetest"
	"github.com/wayfinder/wayfinder/internal/trace"
	"github.com/wayfinder/wayfinder/internal/worker"
)

// statusOf is err as the client sees it: code, ErrorInfo reason and the
// fields of its BadRequest.
func statusOf(err error) (codes.Code, string, []string) {
	st := status.Convert(toStatus(context.Background(), slog.New(slog.DiscardHandler), "test", err))
	reason := ""
	var fields []string
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.ErrorInfo:
			reason = d.Reason
		case *errdetails.BadRequest:
			for _, v := range d.FieldViolations {
				fields = append(fields, v.Field)
			}
		}
	}
	return st.Code(), reason, fields
}

func TestCreateRunChecksReplay(t *testing.T) {
	t.Parallel()
	st := store.New(storetest.NewPool(t))
	for _, id := range []string{"acme", "other"} {
		_, err := st.CreateTenant(t.Context(), &wfv1.Tenant{Id: id})
		require.NoError(t, err)
	}
	kr, err := secrets.Parse("k1:" + strings.Repeat("a", 64))
	require.NoError(t, err)
	runs := NewRunService(Config{Store: st, Queue: nopQueue{}, MaxRunTimeout: testMaxRunTimeout, Logger: slog.New(slog.DiscardHandler), Keyring: kr})
	acme, other := asTenant("acme"), asTenant("other")

	// The task: its params hold a password, stored redacted.
	task := func(edit func(p *wfv1.RunParams)) *wfv1.RunParams {
		p := validParams(withAuthBindings(authBind(&wfv1.BasicAuth{Username: "alice", Password: "hunter2"})))
		p.Goal, p.StartUrl = "Save the profile", "https://app.example.com/profile"
		if edit != nil {
			edit(p)
		}
		return p
	}
	// record runs params for the caller and stores a trace of the run
	// under its task key, as the worker does.
	record := func(ctx context.Context, tenantID string, p *wfv1.RunParams) string {
		t.Helper()
		run, err := runs.CreateRun(ctx, &wfv1.CreateRunRequest{Params: p})
		require.NoError(t, err)
		require.NotContains(t, run.GetParams().String(), "hunter2", "stored redacted")
		key, err := worker.TraceKey(run.GetParams())
		require.NoError(t, err)
		actions, final, err := (&trace.Trace{Format: trace.FormatVersion, Goal: p.Goal, StartURL: p.StartUrl}).Encode()
		require.NoError(t, err)
		_, err = st.SaveTrace(t.Context(), store.Trace{RunID: run.Id, TenantID: tenantID, Key: key, Actions: actions, Final: final})
		require.NoError(t, err)
		return run.Id
	}
	recorded := record(acme, "acme", task(nil))
	otherTask := record(acme, "acme", task(func(p *wfv1.RunParams) { p.Goal = "Delete the profile" }))
	theirs := record(other, "other", task(nil))

	replay := func(mode wfv1.ReplayMode, id string, edit func(p *wfv1.RunParams)) *wfv1.RunParams {
		p := task(edit)
		p.Replay = &wfv1.ReplayOptions{Mode: mode, TraceId: id}
		return p
	}
	const (
		off    = wfv1.ReplayMode_REPLAY_MODE_OFF
		auto   = wfv1.ReplayMode_REPLAY_MODE_AUTO
		strict = wfv1.ReplayMode_REPLAY_MODE_STRICT
	)
	for _, tc := range []struct {
		name   string
		params *wfv1.RunParams
		code   codes.Code
		reason string
		field  string
	}{
		{"off", replay(off, "", nil), codes.OK, "", ""},
		{"unspecified", replay(wfv1.ReplayMode_REPLAY_MODE_UNSPECIFIED, "", nil), codes.OK, "", ""},
		{"unknown mode", replay(7, "", nil), codes.InvalidArgument, "", "params.replay.mode"},
		{"a trace without a replay", replay(off, recorded, nil), codes.InvalidArgument, "", "params.replay.trace_id"},
		{"auto with the task's trace", replay(auto, recorded, nil), codes.OK, "", ""},
		{"strict with the task's trace", replay(strict, recorded, nil), codes.OK, "", ""},
		{"another password is the same task", replay(strict, recorded, func(p *wfv1.RunParams) {
			p.Auth.Bindings[0].GetBasic().Password = "another-one"
		}), codes.OK, "", ""},
		{"models, limits and labels are the same task", replay(strict, recorded, func(p *wfv1.RunParams) {
			p.MaxSteps, p.Labels = 40, map[string]string{"ci": "yes"}
			p.Controller = &wfv1.ModelSettings{Provider: "steps"}
		}), codes.OK, "", ""},
		{"a trace ID that is no UUID", replay(strict, "nope", nil), codes.InvalidArgument, ReasonTraceNotFound, "params.replay.trace_id"},
		{"an unknown trace", replay(auto, "00000000-0000-4000-8000-000000000000", nil), codes.InvalidArgument, ReasonTraceNotFound, "params.replay.trace_id"},
		{"another tenant's trace", replay(strict, theirs, nil), codes.InvalidArgument, ReasonTraceNotFound, "params.replay.trace_id"},
		{"a run without a trace", replay(strict, "", nil), codes.OK, "", ""},
		{"another task's trace", replay(auto, otherTask, nil), codes.InvalidArgument, ReasonTraceTaskMismatch, "params.replay.trace_id"},
		{"another viewport is another task", replay(strict, recorded, func(p *wfv1.RunParams) {
			p.Browser = &wfv1.BrowserConfig{Viewport: &wfv1.Viewport{Width: 800, Height: 600}}
		}), codes.InvalidArgument, ReasonTraceTaskMismatch, "params.replay.trace_id"},
		{"strict: the task's latest trace", replay(strict, "", nil), codes.OK, "", ""},
		{"strict: a task without a trace", replay(strict, "", func(p *wfv1.RunParams) { p.Goal = "Print the profile" }),
			codes.FailedPrecondition, ReasonNoTrace, ""},
		{"auto: a task without a trace", replay(auto, "", func(p *wfv1.RunParams) { p.Goal = "Print the profile" }), codes.OK, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run, err := runs.CreateRun(acme, &wfv1.CreateRunRequest{Params: tc.params})
			code, reason, fields := statusOf(err)
			require.Equal(t, tc.code, code, "%v", err)
			require.Equal(t, tc.reason, reason)
			if tc.field != "" {
				require.Equal(t, []string{tc.field}, fields)
			}
			if err != nil {
				require.NotContains(t, err.Error(), "hunter2")
				return
			}
			require.True(t, proto.Equal(tc.params.Replay, run.GetParams().GetReplay()), "the replay options are stored")
		})
	}

	// The other tenant's strict replay of the same task finds its own trace.
	_, err = runs.CreateRun(other, &wfv1.CreateRunRequest{Params: replay(strict, "", nil)})
	require.NoError(t, err)
	_, err = runs.CreateRun(other, &wfv1.CreateRunRequest{Params: replay(strict, recorded, nil)})
	code, reason, _ := statusOf(err)
	require.Equal(t, codes.InvalidArgument, code)
	require.Equal(t, ReasonTraceNotFound, reason)
}
