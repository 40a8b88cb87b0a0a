package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
)

// followed is how following a run's events ended.
type followed struct {
	// run is the final run (from the FINISHED event); nil when the
	// handler stopped following first.
	run *wfv1.Run
	// last is the sequence of the last event handled.
	last int64
}

// follow streams the events of runID after sequence after and hands each
// to handle, in order and once, until the FINISHED event or until handle
// returns true. A dropped stream is resumed after the last sequence seen,
// with backoff, for up to s.reconnectFor without progress; notice is told
// each time.
func (s *session) follow(ctx context.Context, runID string, after int64, handle func(*wfv1.RunEvent) (stop bool), notice func(string)) (followed, error) {
	giveUp := s.reconnectFor
	if giveUp == 0 {
		giveUp = time.Minute
	}
	const firstBackoff, maxBackoff = 200 * time.Millisecond, 5 * time.Second
	last, backoff, failingSince := after, firstBackoff, time.Time{}
	for {
		progressed := false
		streamCtx, cancel := context.WithCancel(ctx)
		stream, err := s.runs.StreamRunEvents(streamCtx, &wfv1.StreamRunEventsRequest{RunId: runID, AfterSequence: last})
		for err == nil {
			var ev *wfv1.RunEvent
			if ev, err = stream.Recv(); err != nil {
				break
			}
			// Heartbeats carry no sequence; a resumed stream never
			// repeats an event, but be sure.
			if ev.GetSequence() <= last {
				continue
			}
			last, progressed = ev.GetSequence(), true
			if handle(ev) {
				cancel()
				return followed{last: last}, nil
			}
			if ev.GetType() == wfv1.RunEventType_RUN_EVENT_TYPE_FINISHED {
				cancel()
				return followed{run: ev.GetRun(), last: last}, nil
			}
		}
		cancel()
		if ctx.Err() != nil {
			return followed{last: last}, ctx.Err()
		}
		if errors.Is(err, io.EOF) {
			// The stream ended without a FINISHED event: the run may have
			// finished with its FINISHED event at or before last (the
			// server then ends the stream at once), or the server closed
			// the stream on its way down.
			run, gerr := s.getRun(ctx, runID)
			switch {
			case gerr == nil && ended(run.GetStatus()) && run.GetLastEventSequence() <= last:
				return followed{run: run, last: last}, nil
			case gerr != nil && !retryable(gerr):
				return followed{last: last}, gerr
			}
			err = errors.New("the server ended the stream early")
		} else if !retryable(err) {
			return followed{last: last}, err
		}
		if progressed || failingSince.IsZero() {
			failingSince, backoff = time.Now(), firstBackoff
		}
		if time.Since(failingSince) > giveUp {
			return followed{last: last}, fmt.Errorf("lost the event stream of run %s after event %d: %s; the run goes on (wayfinder runs events %s --follow --after %d)",
				runID, last, s.describe(err), runID, last)
		}
		notice(fmt.Sprintf("event stream interrupted (%s); resuming after event %d", shortReason(err), last))
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return followed{last: last}, ctx.Err()
		case <-t.C:
		}
		backoff = min(backoff*2, maxBackoff)
	}
}

func (s *session) getRun(ctx context.Context, runID string) (*wfv1.Run, error) {
	cctx, cancel := s.call(ctx)
	defer cancel()
	return s.runs.GetRun(cctx, &wfv1.GetRunRequest{RunId: runID})
}

// retryable reports whether a failed stream is worth opening again: the
// connection dropped, the server shut down or shed a slow client.
func retryable(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.ResourceExhausted, codes.Aborted, codes.Internal, codes.Unknown:
		return true
	}
	return false
}

func shortReason(err error) string {
	if st, ok := status.FromError(err); ok {
		return st.Code().String()
	}
	return err.Error()
}

// ended reports whether a run in status st has ended.
func ended(st wfv1.RunStatus) bool {
	switch st {
	case wfv1.RunStatus_RUN_STATUS_UNSPECIFIED, wfv1.RunStatus_RUN_STATUS_QUEUED,
		wfv1.RunStatus_RUN_STATUS_RUNNING, wfv1.RunStatus_RUN_STATUS_AWAITING_APPROVAL:
		return false
	}
	return true
}

// exitCodeFor is the exit code of a run that ended in st.
func exitCodeFor(st wfv1.RunStatus) int {
	switch st {
	case wfv1.RunStatus_RUN_STATUS_COMPLETED:
		return exitOK
	case wfv1.RunStatus_RUN_STATUS_FAILED:
		return exitFailed
	case wfv1.RunStatus_RUN_STATUS_MAX_STEPS_REACHED:
		return exitMaxSteps
	case wfv1.RunStatus_RUN_STATUS_ERROR:
		return exitError
	case wfv1.RunStatus_RUN_STATUS_CANCELLED:
		return exitCancelled
	case wfv1.RunStatus_RUN_STATUS_AWAITING_APPROVAL:
		return exitApproval
	}
	return exitUsage
}
