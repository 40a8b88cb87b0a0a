package api

import (
	"context"
	"unicode/utf8"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/store"
)

// SubmitApproval implements wayfinder.v1.RunService. It answers the open
// approval of the caller's run that is AWAITING_APPROVAL; any other status,
// or an approval_id that is not the open request, is a failed
// precondition. The answer is stored with its event in one transaction; the
// event's notification wakes the worker that waits for it, on whichever
// replica it runs.
func (s *RunService) SubmitApproval(ctx context.Context, req *wfv1.SubmitApprovalRequest) (*wfv1.Run, error) {
	if utf8.RuneCountInString(req.GetMessage()) > maxApprovalMessage {
		var v fault.Violations
		v.Add("message", "at most %d characters", maxApprovalMessage)
		return nil, v.Err()
	}
	if _, err := s.ownRun(ctx, req.GetRunId()); err != nil {
		return nil, err
	}
	run, answered, err := s.cfg.Store.AnswerApproval(ctx, req.GetRunId(), store.Answer{
		ApprovalID: req.GetApprovalId(), Approved: req.GetApproved(), Message: req.GetMessage(), By: store.AnsweredByHuman,
	})
	if err != nil {
		return nil, err
	}
	s.cfg.Logger.InfoContext(ctx, "approval answered", "run_id", run.Id, "approval_id", answered.Id,
		"source", answered.Source, "approved", answered.Approved)
	return run, nil
}
