package cli

import (
	"context"
	"fmt"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
)

// approveCmd is `wayfinder approve RUN_ID [--reject] [--message TEXT]`.
func approveCmd(ctx context.Context, s *session, args []string) (int, error) {
	var (
		reject              bool
		message, approvalID string
	)
	fs := s.flags("approve", "approve RUN_ID [--reject] [--message TEXT] [--approval-id ID]")
	fs.BoolVar(&reject, "reject", false, "reject instead of approving; the model is told human_rejected")
	fs.StringVar(&message, "message", "", "sent to the model with a rejection (at most 2000 characters)")
	fs.StringVar(&approvalID, "approval-id", "", "the request being answered (Run.pending_approval.id); refused when it is no longer pending")
	pos, err := s.parse(fs, args)
	if err != nil {
		return 0, err
	}
	id, err := oneArg(pos, "RUN_ID")
	if err != nil {
		return 0, err
	}
	if err := s.connect(); err != nil {
		return 0, err
	}
	cctx, cancel := s.call(ctx)
	defer cancel()
	run, err := s.runs.SubmitApproval(cctx, &wfv1.SubmitApprovalRequest{RunId: id, Approved: !reject, Message: message, ApprovalId: approvalID})
	if err != nil {
		return 0, err
	}
	if s.json {
		return exitOK, printJSON(s.env.Stdout, run)
	}
	verb := "approved"
	if reject {
		verb = "rejected"
	}
	fmt.Fprintf(s.env.Stdout, "run %s: %s (%s)\n", id, verb, statusName(run.GetStatus()))
	return exitOK, nil
}
