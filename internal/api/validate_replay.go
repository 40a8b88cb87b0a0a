package api

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/store"
	"github.com/wayfinder/wayfinder/internal/tenant"
	"github.com/wayfinder/wayfinder/internal/worker"
)

// Reasons (google.rpc.ErrorInfo.reason, domain errorDomain) of the
// statuses CreateRun refuses a replay with (RunParams.replay).
const (
	// ReasonTraceNotFound: INVALID_ARGUMENT, replay.trace_id names no
	// trace of the caller's tenant.
	ReasonTraceNotFound = "TRACE_NOT_FOUND"
	// ReasonTraceTaskMismatch: INVALID_ARGUMENT, replay.trace_id is a
	// trace of another task (goal, start URL or behaviour-changing params).
	ReasonTraceTaskMismatch = "TRACE_TASK_MISMATCH"
	// ReasonNoTrace: FAILED_PRECONDITION, a STRICT replay without
	// trace_id of a task that has no trace yet.
	ReasonNoTrace = "NO_TRACE"
)

// checkReplay checks params.replay of a run about to be created; params
// are checked already, with their defaults filled in. The trace it names
// must be the caller's and of the run's task: the task key is computed as
// the worker computes it, on the params as stored (redacted). A STRICT
// replay needs a trace to follow.
func checkReplay(ctx context.Context, st *store.Store, params *wfv1.RunParams) error {
	r := params.GetReplay()
	if r == nil {
		return nil
	}
	mode := r.GetMode()
	if mode == wfv1.ReplayMode_REPLAY_MODE_UNSPECIFIED || mode == wfv1.ReplayMode_REPLAY_MODE_OFF {
		return nil // validateParams refused a trace_id here
	}
	id := r.GetTraceId()
	var v fault.Violations
	stored, _ := RedactParams(params)
	key, err := worker.TraceKey(stored)
	if err != nil {
		return err
	}
	if id == "" {
		if mode != wfv1.ReplayMode_REPLAY_MODE_STRICT {
			return nil
		}
		_, err := st.LatestTrace(ctx, tenant.ID(ctx), key)
		if errors.Is(err, fault.ErrNotFound) {
			return failedPrecondition(ReasonNoTrace,
				"a strict replay needs a trace of the task, and it has none: run it once with replay off or auto to record one")
		}
		return err
	}
	u, err := uuid.Parse(id)
	if err != nil || !isUUID(id) {
		v.Add("params.replay.trace_id", "no trace %q (a trace is named by the UUID of the run that recorded it)", truncateName(id))
		return violationsErr(&v, ReasonTraceNotFound)
	}
	// The run stores the canonical ID, which the worker looks the trace
	// up by (Postgres reads no urn:uuid: form).
	id = u.String()
	r.TraceId = id
	tr, err := st.GetTrace(ctx, tenant.ID(ctx), id)
	switch {
	case errors.Is(err, fault.ErrNotFound):
		v.Add("params.replay.trace_id", "no trace %s", id)
		return violationsErr(&v, ReasonTraceNotFound)
	case err != nil:
		return err
	case tr.Key != key:
		v.Add("params.replay.trace_id", "trace %s was recorded for another task: the goal, start URL or behaviour-changing params differ", id)
		return violationsErr(&v, ReasonTraceTaskMismatch)
	}
	return nil
}

// validateReplay checks what can be checked of params.replay without the
// store (for tests too, whose runs are created later): a known mode, and a
// trace_id only with a mode that replays.
func validateReplay(v *fault.Violations, r *wfv1.ReplayOptions) {
	if r == nil {
		return
	}
	mode := r.GetMode()
	if _, ok := wfv1.ReplayMode_name[int32(mode)]; !ok {
		v.Add("params.replay.mode", "unknown replay mode %d", mode)
		return
	}
	if r.GetTraceId() != "" && (mode == wfv1.ReplayMode_REPLAY_MODE_UNSPECIFIED || mode == wfv1.ReplayMode_REPLAY_MODE_OFF) {
		v.Add("params.replay.trace_id", "a trace is replayed only with mode REPLAY_MODE_AUTO or REPLAY_MODE_STRICT")
	}
}

// failedPrecondition is a FAILED_PRECONDITION status naming reason.
func failedPrecondition(reason, format string, args ...any) error {
	st := status.New(codes.FailedPrecondition, fmt.Sprintf(format, args...))
	if d, err := st.WithDetails(&errdetails.ErrorInfo{Reason: reason, Domain: errorDomain}); err == nil {
		st = d
	}
	return st.Err()
}
