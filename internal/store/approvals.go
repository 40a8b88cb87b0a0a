package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/fault"
)

// Who answered an approval (ApprovalRequest.answered_by).
const (
	AnsweredByHuman   = "human"
	AnsweredByTimeout = "timeout"
	// AnsweredByCancel closes the open approval of a run that stopped
	// waiting for good (cancelled, timed out, its browser died): nobody
	// answered it.
	AnsweredByCancel = "cancelled"
)

// OpenApproval pauses a live run for a human: it stores req (its ID and
// request time are set here; screenshot, when not nil, is stored as the
// request's media), moves the run to AWAITING_APPROVAL and appends the
// APPROVAL_REQUESTED event carrying the request, in one transaction.
//
// A run has at most one open approval. When it already has one (a run that
// stopped while it waited and was resumed), that one is returned instead,
// and the run is moved back to AWAITING_APPROVAL if it had left it. A
// finished run is a failed precondition.
func (s *Store) OpenApproval(ctx context.Context, runID string, req *wfv1.ApprovalRequest, screenshot *Media) (*wfv1.ApprovalRequest, error) {
	req = proto.Clone(req).(*wfv1.ApprovalRequest)
	screenshot = s.stageMedia(ctx, runID, screenshot) // before the transaction: no network I/O in it
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		run, err := lockRun(ctx, tx, runID)
		if err != nil {
			return err
		}
		if IsTerminal(run.Status) {
			return fmt.Errorf("run %s is %s: %w", runID, run.Status, fault.ErrFailedPrecondition)
		}
		open, err := openApproval(ctx, tx, runID)
		if err != nil {
			return err
		}
		if open != nil {
			req = open
		} else {
			req.Id = uuid.NewString()
			var now time.Time
			if err := tx.QueryRow(ctx, `SELECT now()`).Scan(&now); err != nil {
				return fmt.Errorf("read clock: %w", err)
			}
			req.RequestTime = timestamppb.New(now)
			if screenshot != nil {
				if req.ScreenshotMediaId, err = saveMedia(ctx, tx, runID, req.StepNumber, screenshot); err != nil {
					return err
				}
			}
			raw, err := protojson.Marshal(req)
			if err != nil {
				return fmt.Errorf("encode approval request: %w", err)
			}
			if _, err := tx.Exec(ctx, `
				INSERT INTO approvals (id, run_id, request, requested_at) VALUES ($1, $2, $3, $4)`,
				req.Id, runID, raw, now); err != nil {
				return fmt.Errorf("insert approval: %w", err)
			}
		}
		if open != nil && run.Status == wfv1.RunStatus_RUN_STATUS_AWAITING_APPROVAL {
			return nil // already waiting: nothing changes
		}
		if _, err := tx.Exec(ctx, `UPDATE runs SET status = 'awaiting_approval' WHERE id = $1`, runID); err != nil {
			return fmt.Errorf("pause run: %w", err)
		}
		msg := "approval requested: " + req.Action
		if open != nil {
			msg = "still awaiting approval: " + req.Action
		}
		_, err = appendEvent(ctx, tx, runID, &wfv1.RunEvent{
			Type:    wfv1.RunEventType_RUN_EVENT_TYPE_APPROVAL_REQUESTED,
			Status:  wfv1.RunStatus_RUN_STATUS_AWAITING_APPROVAL,
			Message: msg,
			Payload: &wfv1.RunEvent_Approval{Approval: req},
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return req, nil
}

// Answer is a decision on an open approval.
type Answer struct {
	// ApprovalID, when set, must name the run's open approval.
	ApprovalID string
	Approved   bool
	Message    string
	// By is AnsweredByHuman, AnsweredByTimeout or AnsweredByCancel.
	By string
}

// AnswerApproval answers the open approval of a run that is
// AWAITING_APPROVAL: it stores the answer, moves the run back to RUNNING and
// appends the APPROVAL_ANSWERED event (whose notification wakes the worker
// waiting for it on any replica), in one transaction. It returns the run and
// the answered request. A run that is not awaiting approval, or whose open
// approval is not a.ApprovalID, is a failed precondition.
func (s *Store) AnswerApproval(ctx context.Context, runID string, a Answer) (*wfv1.Run, *wfv1.ApprovalRequest, error) {
	var run *wfv1.Run
	var req *wfv1.ApprovalRequest
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		var err error
		if run, err = lockRun(ctx, tx, runID); err != nil {
			return err
		}
		if run.Status != wfv1.RunStatus_RUN_STATUS_AWAITING_APPROVAL {
			return fmt.Errorf("run %s is %s, not awaiting approval: %w", runID, run.Status, fault.ErrFailedPrecondition)
		}
		if req, err = openApproval(ctx, tx, runID); err != nil {
			return err
		}
		if req == nil {
			return fmt.Errorf("run %s has no open approval: %w", runID, fault.ErrFailedPrecondition)
		}
		if a.ApprovalID != "" && a.ApprovalID != req.Id {
			return fmt.Errorf("approval %q is not the run's open approval: %w", a.ApprovalID, fault.ErrFailedPrecondition)
		}
		var now time.Time
		if err := tx.QueryRow(ctx, `
			UPDATE approvals SET answered_at = now(), approved = $2, message = $3, answered_by = $4
			WHERE id = $1 RETURNING answered_at`, req.Id, a.Approved, a.Message, a.By).Scan(&now); err != nil {
			return fmt.Errorf("answer approval: %w", err)
		}
		req.AnswerTime, req.Approved, req.Message, req.AnsweredBy = timestamppb.New(now), a.Approved, a.Message, a.By
		if _, err := tx.Exec(ctx, `UPDATE runs SET status = 'running' WHERE id = $1`, runID); err != nil {
			return fmt.Errorf("resume run: %w", err)
		}
		msg := "approved: " + req.Action
		if !a.Approved {
			msg = "rejected: " + req.Action
		}
		if a.By == AnsweredByTimeout {
			msg += " (no answer in time)"
		}
		if _, err := appendEvent(ctx, tx, runID, &wfv1.RunEvent{
			Type:    wfv1.RunEventType_RUN_EVENT_TYPE_APPROVAL_ANSWERED,
			Status:  wfv1.RunStatus_RUN_STATUS_RUNNING,
			Message: msg,
			Payload: &wfv1.RunEvent_Approval{Approval: req},
		}); err != nil {
			return err
		}
		run, err = getRun(ctx, tx, runID)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return run, req, nil
}

// GetApproval returns approval id of run runID, with its answer once
// answered, or an error wrapping fault.ErrNotFound.
func (s *Store) GetApproval(ctx context.Context, runID, id string) (*wfv1.ApprovalRequest, error) {
	if !validUUID(id) {
		return nil, fmt.Errorf("approval %q: %w", id, errNotFound)
	}
	req, err := scanApproval(s.pool.QueryRow(ctx, `SELECT `+approvalColumns+` FROM approvals WHERE id = $1 AND run_id = $2`, id, runID))
	if err != nil {
		return nil, notFound("approval", id, err)
	}
	return req, nil
}

// PendingApproval returns the run's open approval, nil when it has none.
func (s *Store) PendingApproval(ctx context.Context, runID string) (*wfv1.ApprovalRequest, error) {
	req, err := scanApproval(s.pool.QueryRow(ctx, `
		SELECT `+approvalColumns+` FROM approvals WHERE run_id = $1 AND answered_at IS NULL`, runID))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("load open approval of run %s: %w", runID, err)
	}
	return req, nil
}

// SuspendApproval leaves the open approval of a run whose worker is
// stopping open, and moves the run from AWAITING_APPROVAL back to RUNNING so
// that it is handed back to the queue (RequeueRun) like any running run; the
// worker that resumes it waits for the same approval (OpenApproval).
func (s *Store) SuspendApproval(ctx context.Context, runID string) error {
	_, err := s.pool.Exec(ctx, `UPDATE runs SET status = 'running' WHERE id = $1 AND status = 'awaiting_approval'`, runID)
	if err != nil {
		return fmt.Errorf("suspend approval of run %s: %w", runID, err)
	}
	return nil
}

// SetRunCriteria stores the last evaluation of the run's completion
// indicators (Run.criteria).
func (s *Store) SetRunCriteria(ctx context.Context, runID string, results []*wfv1.IndicatorResult) error {
	raw, err := encodeCriteria(results)
	if err != nil {
		return err
	}
	if _, err := s.pool.Exec(ctx, `UPDATE runs SET criteria = $2 WHERE id = $1`, runID, raw); err != nil {
		return fmt.Errorf("store criteria of run %s: %w", runID, err)
	}
	return nil
}

const approvalColumns = `request, answered_at, coalesce(approved, false), coalesce(message, ''), coalesce(answered_by, '')`

func scanApproval(row pgx.Row) (*wfv1.ApprovalRequest, error) {
	var (
		raw      []byte
		answered *time.Time
		approved bool
		msg, by  string
	)
	if err := row.Scan(&raw, &answered, &approved, &msg, &by); err != nil {
		return nil, err
	}
	req, err := decodeApproval(raw)
	if err != nil {
		return nil, err
	}
	if answered != nil {
		req.AnswerTime, req.Approved, req.Message, req.AnsweredBy = timestamppb.New(*answered), approved, msg, by
	}
	return req, nil
}

func decodeApproval(raw []byte) (*wfv1.ApprovalRequest, error) {
	req := &wfv1.ApprovalRequest{}
	if err := protojson.Unmarshal(raw, req); err != nil {
		return nil, fmt.Errorf("decode approval request: %w", err)
	}
	return req, nil
}

// openApproval returns the run's open approval, locked, or nil.
func openApproval(ctx context.Context, tx pgx.Tx, runID string) (*wfv1.ApprovalRequest, error) {
	req, err := scanApproval(tx.QueryRow(ctx, `
		SELECT `+approvalColumns+` FROM approvals WHERE run_id = $1 AND answered_at IS NULL FOR UPDATE`, runID))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("load open approval of run %s: %w", runID, err)
	}
	return req, nil
}

// pendingApprovalColumn is the run's open approval request while it is
// AWAITING_APPROVAL (Run.pending_approval), part of runColumns.
const pendingApprovalColumn = `CASE WHEN status = 'awaiting_approval' THEN
		(SELECT a.request FROM approvals a WHERE a.run_id = runs.id AND a.answered_at IS NULL LIMIT 1) END`

// encodeCriteria stores indicator results as a JSON array of their
// protojson forms.
func encodeCriteria(results []*wfv1.IndicatorResult) ([]byte, error) {
	if results == nil {
		return nil, nil
	}
	items := make([]json.RawMessage, 0, len(results))
	for _, r := range results {
		raw, err := protojson.Marshal(r)
		if err != nil {
			return nil, fmt.Errorf("encode indicator result: %w", err)
		}
		items = append(items, raw)
	}
	return json.Marshal(items)
}

func decodeCriteria(raw []byte) ([]*wfv1.IndicatorResult, error) {
	if raw == nil {
		return nil, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("decode criteria: %w", err)
	}
	out := make([]*wfv1.IndicatorResult, 0, len(items))
	for _, it := range items {
		r := &wfv1.IndicatorResult{}
		if err := protojson.Unmarshal(it, r); err != nil {
			return nil, fmt.Errorf("decode indicator result: %w", err)
		}
		out = append(out, r)
	}
	return out, nil
}
