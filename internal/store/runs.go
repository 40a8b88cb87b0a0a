package store

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/tenant"
)

// NewRun is a run to be created.
type NewRun struct {
	// Tenant owns the run. Default tenant.Default.
	Tenant string
	// RequestID is the caller's idempotency key (unique per tenant);
	// empty for none.
	RequestID string
	// Params are stored as given; validate and redact them first.
	Params *wfv1.RunParams
	// Seal, when set, returns the params as given (secrets included),
	// sealed for the new run's ID; the worker runs with them.
	Seal func(runID string) ([]byte, error)
	// TraceContext is the W3C trace context of the creating request.
	TraceContext map[string]string
}

// EnqueueFunc enqueues the job that executes run runID inside tx and returns
// the job's ID.
type EnqueueFunc func(ctx context.Context, tx pgx.Tx, runID string) (jobID int64, err error)

// CreateRun stores a queued run, its QUEUED event and its job in one
// transaction. When nr.RequestID names an existing run, that run is returned
// with created false and nothing is written.
func (s *Store) CreateRun(ctx context.Context, nr NewRun, enqueue EnqueueFunc) (run *wfv1.Run, created bool, err error) {
	params, err := protojson.Marshal(nr.Params)
	if err != nil {
		return nil, false, fmt.Errorf("encode run params: %w", err)
	}
	labels, err := json.Marshal(nonNilLabels(nr.Params.GetLabels()))
	if err != nil {
		return nil, false, fmt.Errorf("encode labels: %w", err)
	}
	trace, err := json.Marshal(nonNilLabels(nr.TraceContext))
	if err != nil {
		return nil, false, fmt.Errorf("encode trace context: %w", err)
	}
	id := uuid.NewString()
	if nr.Tenant == "" {
		nr.Tenant = tenant.Default
	}
	var sealed []byte
	if nr.Seal != nil {
		if sealed, err = nr.Seal(id); err != nil {
			return nil, false, fmt.Errorf("seal run params: %w", err)
		}
	}
	err = s.InTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `
			INSERT INTO runs (id, tenant_id, request_id, status, params, labels, trace_context, sealed_params)
			VALUES ($1, $2, NULLIF($3, ''), 'queued', $4, $5, $6, $7)
			ON CONFLICT (tenant_id, request_id) DO NOTHING`,
			id, nr.Tenant, nr.RequestID, params, labels, trace, sealed)
		if err != nil {
			return fmt.Errorf("insert run: %w", err)
		}
		if tag.RowsAffected() == 0 {
			run, err = scanRun(tx.QueryRow(ctx, `SELECT `+runColumns+` FROM runs WHERE tenant_id = $1 AND request_id = $2`,
				nr.Tenant, nr.RequestID))
			if err != nil {
				return fmt.Errorf("load run for request %q: %w", nr.RequestID, err)
			}
			return nil
		}
		jobID, err := enqueue(ctx, tx, id)
		if err != nil {
			return fmt.Errorf("enqueue run: %w", err)
		}
		if _, err := tx.Exec(ctx, `UPDATE runs SET job_id = $2 WHERE id = $1`, id, jobID); err != nil {
			return fmt.Errorf("record job of run: %w", err)
		}
		if _, err := appendEvent(ctx, tx, id, &wfv1.RunEvent{
			Type:    wfv1.RunEventType_RUN_EVENT_TYPE_QUEUED,
			Status:  wfv1.RunStatus_RUN_STATUS_QUEUED,
			Message: "run queued",
		}); err != nil {
			return err
		}
		run, err = getRun(ctx, tx, id)
		created = true
		return err
	})
	if err != nil {
		return nil, false, err
	}
	return run, created, nil
}

// GetRun returns the run with the given ID, or an error wrapping
// fault.ErrNotFound.
func (s *Store) GetRun(ctx context.Context, id string) (*wfv1.Run, error) {
	return getRun(ctx, s.pool, id)
}

// SealedParams returns the sealed params of a run (nil when its params hold
// no secret).
func (s *Store) SealedParams(ctx context.Context, id string) ([]byte, error) {
	var sealed []byte
	if err := s.pool.QueryRow(ctx, `SELECT sealed_params FROM runs WHERE id = $1`, id).Scan(&sealed); err != nil {
		return nil, notFound("run", id, err)
	}
	return sealed, nil
}

// RunTraceContext returns the W3C trace context stored with the run.
func (s *Store) RunTraceContext(ctx context.Context, id string) (map[string]string, error) {
	var carrier map[string]string
	err := s.pool.QueryRow(ctx, `SELECT trace_context FROM runs WHERE id = $1`, id).Scan(&carrier)
	if err != nil {
		return nil, notFound("run", id, err)
	}
	return carrier, nil
}

// RunJob returns the ID of the River job that executes the run.
func (s *Store) RunJob(ctx context.Context, id string) (int64, error) {
	var jobID *int64
	if err := s.pool.QueryRow(ctx, `SELECT job_id FROM runs WHERE id = $1`, id).Scan(&jobID); err != nil {
		return 0, notFound("run", id, err)
	}
	if jobID == nil {
		return 0, fmt.Errorf("run %q has no job", id)
	}
	return *jobID, nil
}

type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func getRun(ctx context.Context, q querier, id string) (*wfv1.Run, error) {
	if !validUUID(id) {
		return nil, fmt.Errorf("run %q: %w", id, errNotFound)
	}
	run, err := scanRun(q.QueryRow(ctx, `SELECT `+runColumns+` FROM runs WHERE id = $1`, id))
	if err != nil {
		return nil, notFound("run", id, err)
	}
	return run, nil
}

func lockRun(ctx context.Context, tx pgx.Tx, id string) (*wfv1.Run, error) {
	if !validUUID(id) {
		return nil, fmt.Errorf("run %q: %w", id, errNotFound)
	}
	run, err := scanRun(tx.QueryRow(ctx, `SELECT `+runColumns+` FROM runs WHERE id = $1 FOR UPDATE`, id))
	if err != nil {
		return nil, notFound("run", id, err)
	}
	return run, nil
}

// RunByRequest returns the tenant's run created with idempotency key
// requestID; fault.ErrNotFound when there is none.
func (s *Store) RunByRequest(ctx context.Context, tenantID, requestID string) (*wfv1.Run, error) {
	run, err := scanRun(s.pool.QueryRow(ctx, `SELECT `+runColumns+` FROM runs WHERE tenant_id = $1 AND request_id = $2`,
		tenantID, requestID))
	if err != nil {
		return nil, notFound("run for request", requestID, err)
	}
	return run, nil
}

const runColumns = `id, coalesce(request_id, ''), status, params, created_at, started_at, ended_at,
	step_count, coalesce(error_category, ''), coalesce(error_message, ''), coalesce(error_step, 0),
	coalesce(final_screenshot_media_id::text, ''), coalesce(final_url, ''), final_verdict,
	cancel_requested, attempts, last_event_seq,
	input_tokens, output_tokens, cached_input_tokens, cost_usd::float8, model_calls, coalesce(summary, ''), tenant_id,
	criteria, ` + pendingApprovalColumn + `, ` + openTakeoverColumn + `, output, replay`

func scanRun(row pgx.Row) (*wfv1.Run, error) {
	var (
		run                          wfv1.Run
		status, errCategory, errMsg  string
		params, verdict              []byte
		criteria, pending, takeover  []byte
		output, replay               []byte
		created                      time.Time
		started, ended               *time.Time
		stepCount, errStep, attempts int32
		id                           uuid.UUID
		usage                        wfv1.Usage
	)
	err := row.Scan(&id, &run.RequestId, &status, &params, &created, &started, &ended,
		&stepCount, &errCategory, &errMsg, &errStep,
		&run.FinalScreenshotMediaId, &run.FinalUrl, &verdict,
		&run.CancelRequested, &attempts, &run.LastEventSequence,
		&usage.InputTokens, &usage.OutputTokens, &usage.CachedInputTokens, &usage.CostUsd, &usage.ModelCalls, &run.Summary, &run.TenantId,
		&criteria, &pending, &takeover, &output, &replay)
	if err != nil {
		return nil, err
	}
	run.Id = id.String()
	if run.Status, err = parseStatus(status); err != nil {
		return nil, err
	}
	run.Params = &wfv1.RunParams{}
	if err := protojson.Unmarshal(params, run.Params); err != nil {
		return nil, fmt.Errorf("decode params of run %s: %w", run.Id, err)
	}
	if verdict != nil {
		run.FinalVerdict = &wfv1.JudgeVerdict{}
		if err := protojson.Unmarshal(verdict, run.FinalVerdict); err != nil {
			return nil, fmt.Errorf("decode verdict of run %s: %w", run.Id, err)
		}
	}
	run.CreateTime = timestamppb.New(created)
	if started != nil {
		run.StartTime = timestamppb.New(*started)
	}
	if ended != nil {
		run.EndTime = timestamppb.New(*ended)
	}
	run.StepCount, run.Attempts = stepCount, attempts
	if errCategory != "" {
		run.Error = &wfv1.RunError{
			Category:   wfv1.ErrorCategory(wfv1.ErrorCategory_value[errCategory]),
			Message:    errMsg,
			StepNumber: errStep,
		}
	}
	run.Success = run.Status == wfv1.RunStatus_RUN_STATUS_COMPLETED
	if usage.ModelCalls > 0 {
		run.Usage = &usage
	}
	if run.Criteria, err = decodeCriteria(criteria); err != nil {
		return nil, fmt.Errorf("run %s: %w", run.Id, err)
	}
	if output != nil {
		run.Output = &structpb.Value{}
		if err := protojson.Unmarshal(output, run.Output); err != nil {
			return nil, fmt.Errorf("decode output of run %s: %w", run.Id, err)
		}
	}
	if replay != nil {
		run.Replay = &wfv1.ReplayReport{}
		if err := protojson.Unmarshal(replay, run.Replay); err != nil {
			return nil, fmt.Errorf("decode replay report of run %s: %w", run.Id, err)
		}
	}
	if pending != nil {
		if run.PendingApproval, err = decodeApproval(pending); err != nil {
			return nil, fmt.Errorf("run %s: %w", run.Id, err)
		}
	}
	if run.Takeover, err = decodeOpenTakeover(run.Id, takeover); err != nil {
		return nil, fmt.Errorf("run %s: %w", run.Id, err)
	}
	return &run, nil
}

// ListRunsFilter selects runs for ListRuns.
type ListRunsFilter struct {
	// Tenant keeps only the tenant's runs. Default tenant.Default.
	Tenant string
	// Statuses, when non-empty, keeps runs in one of them.
	Statuses []wfv1.RunStatus
	// Labels keeps runs carrying every one of these labels.
	Labels map[string]string
	// PageSize is the maximum number of runs returned. Default 50.
	PageSize int
	// PageToken continues a previous listing.
	PageToken string
}

type pageCursor struct {
	Created time.Time `json:"t"`
	ID      string    `json:"id"`
}

// ListRuns returns runs newest first and the token of the next page (empty
// on the last page). A malformed page token is an invalid argument.
func (s *Store) ListRuns(ctx context.Context, f ListRunsFilter) ([]*wfv1.Run, string, error) {
	if f.PageSize < 1 {
		f.PageSize = 50
	}
	if f.Tenant == "" {
		f.Tenant = tenant.Default
	}
	statuses := make([]string, 0, len(f.Statuses))
	for _, st := range f.Statuses {
		name, err := statusName(st)
		if err != nil {
			return nil, "", err
		}
		statuses = append(statuses, name)
	}
	labels, err := json.Marshal(nonNilLabels(f.Labels))
	if err != nil {
		return nil, "", fmt.Errorf("encode labels: %w", err)
	}
	var cur *pageCursor
	if f.PageToken != "" {
		cur, err = decodeCursor(f.PageToken)
		if err != nil {
			return nil, "", err
		}
	}
	var afterTime *time.Time
	var afterID *string
	if cur != nil {
		afterTime, afterID = &cur.Created, &cur.ID
	}
	rows, err := s.pool.Query(ctx, `
		SELECT `+runColumns+` FROM runs
		WHERE tenant_id = $6
		  AND (cardinality($1::text[]) = 0 OR status = ANY($1))
		  AND labels @> $2::jsonb
		  AND ($3::timestamptz IS NULL OR (created_at, id) < ($3, $4::uuid))
		ORDER BY created_at DESC, id DESC
		LIMIT $5`,
		statuses, labels, afterTime, afterID, f.PageSize+1, f.Tenant)
	if err != nil {
		return nil, "", fmt.Errorf("list runs: %w", err)
	}
	runs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*wfv1.Run, error) { return scanRun(r) })
	if err != nil {
		return nil, "", fmt.Errorf("list runs: %w", err)
	}
	next := ""
	if len(runs) > f.PageSize {
		runs = runs[:f.PageSize]
		last := runs[len(runs)-1]
		next = encodeCursor(pageCursor{Created: last.CreateTime.AsTime(), ID: last.Id})
	}
	return runs, next, nil
}

func encodeCursor(c pageCursor) string {
	b, _ := json.Marshal(c) // a struct of a time and a string always encodes
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(token string) (*pageCursor, error) {
	b, err := base64.RawURLEncoding.DecodeString(token)
	var c pageCursor
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err == nil {
		_, err = uuid.Parse(c.ID)
	}
	if err != nil {
		return nil, &fault.RequestError{Kind: fault.ErrInvalidArgument, Violations: []fault.FieldViolation{
			{Field: "page_token", Description: "malformed page token; pass next_page_token from a previous response"},
		}}
	}
	return &c, nil
}

func nonNilLabels(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// StartRun marks a run RUNNING for a new execution attempt and records the
// STARTED event. It returns the run and whether the caller should execute it:
// a run that is already terminal (a repeated delivery) or whose cancellation
// was requested before it started is not executed; the latter is finished as
// CANCELLED here.
func (s *Store) StartRun(ctx context.Context, id string) (run *wfv1.Run, execute bool, err error) {
	err = s.InTx(ctx, func(tx pgx.Tx) error {
		run, err = lockRun(ctx, tx, id)
		if err != nil {
			return err
		}
		if IsTerminal(run.Status) {
			return nil
		}
		if run.CancelRequested {
			// Its worker was lost after the cancel was requested.
			var reason string
			if err := tx.QueryRow(ctx, `SELECT coalesce(cancel_reason, '') FROM runs WHERE id = $1`, id).Scan(&reason); err != nil {
				return fmt.Errorf("load cancel reason: %w", err)
			}
			run, err = finishLocked(ctx, tx, run, Outcome{
				Status: wfv1.RunStatus_RUN_STATUS_CANCELLED,
				Error:  &wfv1.RunError{Category: wfv1.ErrorCategory_ERROR_CATEGORY_CANCELLED, Message: reason},
			})
			return err
		}
		if err := checkTenantCapacity(ctx, tx, run); err != nil {
			return err
		}
		msg := "run started"
		if run.Attempts > 0 {
			msg = fmt.Sprintf("run resumed (attempt %d)", run.Attempts+1)
		}
		if _, err := tx.Exec(ctx, `
			UPDATE runs SET status = 'running', started_at = coalesce(started_at, now()), attempts = attempts + 1
			WHERE id = $1`, id); err != nil {
			return fmt.Errorf("start run: %w", err)
		}
		if _, err := appendEvent(ctx, tx, id, &wfv1.RunEvent{
			Type: wfv1.RunEventType_RUN_EVENT_TYPE_STARTED, Status: wfv1.RunStatus_RUN_STATUS_RUNNING, Message: msg,
		}); err != nil {
			return err
		}
		run, err = getRun(ctx, tx, id)
		execute = err == nil
		return err
	})
	return run, execute, err
}

// Outcome is how a run ended.
type Outcome struct {
	// Status is terminal.
	Status wfv1.RunStatus
	// Error explains ERROR (and some FAILED and CANCELLED) outcomes.
	Error *wfv1.RunError
	// FinalURL is the last page URL, when known.
	FinalURL string
	// Verdict is the judge's final verdict, when there was one.
	Verdict *wfv1.JudgeVerdict
	// Summary is the account of the outcome (the model's or the judge's).
	Summary string
	// Output is the structured data the run produced (Run.output), nil
	// for none.
	Output *structpb.Value
	// Replay is what the run's replay did (Run.replay), nil when it asked
	// for none.
	Replay *wfv1.ReplayReport
}

// FinishRun moves a live run to a terminal status and records the FINISHED
// event carrying the final run. A run that is already terminal is returned
// unchanged: a terminal status never regresses.
func (s *Store) FinishRun(ctx context.Context, id string, o Outcome) (*wfv1.Run, error) {
	if !IsTerminal(o.Status) {
		return nil, fmt.Errorf("finish run %s: status %v is not terminal", id, o.Status)
	}
	return s.updateLive(ctx, id, func(tx pgx.Tx, run *wfv1.Run) (*wfv1.Run, error) {
		return finishLocked(ctx, tx, run, o)
	})
}

// updateLive locks run id for the length of a transaction and, when the run
// is live, calls fn with it and returns what fn returns. A finished run is
// returned unchanged without calling fn.
func (s *Store) updateLive(ctx context.Context, id string, fn func(tx pgx.Tx, run *wfv1.Run) (*wfv1.Run, error)) (*wfv1.Run, error) {
	var run *wfv1.Run
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		var err error
		if run, err = lockRun(ctx, tx, id); err != nil || IsTerminal(run.Status) {
			return err
		}
		run, err = fn(tx, run)
		return err
	})
	return run, err
}

func finishLocked(ctx context.Context, tx pgx.Tx, run *wfv1.Run, o Outcome) (*wfv1.Run, error) {
	status, err := statusName(o.Status)
	if err != nil {
		return nil, err
	}
	var category, message *string
	var step *int32
	if o.Error != nil {
		c := o.Error.Category.String()
		category, message, step = &c, &o.Error.Message, &o.Error.StepNumber
	}
	var verdict []byte
	if o.Verdict != nil {
		if verdict, err = protojson.Marshal(o.Verdict); err != nil {
			return nil, fmt.Errorf("encode verdict: %w", err)
		}
	}
	var output []byte
	if o.Output != nil {
		if output, err = protojson.Marshal(o.Output); err != nil {
			return nil, fmt.Errorf("encode output: %w", err)
		}
	}
	var replay []byte
	if o.Replay != nil {
		if replay, err = protojson.Marshal(o.Replay); err != nil {
			return nil, fmt.Errorf("encode replay report: %w", err)
		}
	}
	_, err = tx.Exec(ctx, `
		UPDATE runs SET status = $2, ended_at = now(), error_category = $3, error_message = $4,
			error_step = NULLIF($5, 0), final_url = coalesce(NULLIF($6, ''), final_url),
			final_verdict = coalesce($7, final_verdict), summary = NULLIF($8, ''), output = $9,
			replay = $10
		WHERE id = $1`, run.Id, status, category, message, step, o.FinalURL, verdict, o.Summary, output, replay)
	if err != nil {
		return nil, fmt.Errorf("finish run %s: %w", run.Id, err)
	}
	if err := dropLiveView(ctx, tx, run.Id); err != nil {
		return nil, err
	}
	final, err := getRun(ctx, tx, run.Id)
	if err != nil {
		return nil, err
	}
	// The FINISHED event carries the run as it is once the event exists.
	final.LastEventSequence++
	if _, err := appendEvent(ctx, tx, run.Id, &wfv1.RunEvent{
		Type:    wfv1.RunEventType_RUN_EVENT_TYPE_FINISHED,
		Status:  o.Status,
		Message: finishMessage(o),
		Payload: &wfv1.RunEvent_Run{Run: final},
	}); err != nil {
		return nil, err
	}
	return final, nil
}

func finishMessage(o Outcome) string {
	msg := "run finished: " + statusNames[o.Status]
	if o.Error != nil && o.Error.Message != "" {
		msg += ": " + o.Error.Message
	}
	return msg
}

// RequeueRun hands a RUNNING run back to the queue (its worker is shutting
// down); the next attempt resumes it. Runs in any other status are left alone.
func (s *Store) RequeueRun(ctx context.Context, id, reason string) error {
	return s.InTx(ctx, func(tx pgx.Tx) error {
		run, err := lockRun(ctx, tx, id)
		if err != nil || run.Status != wfv1.RunStatus_RUN_STATUS_RUNNING {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE runs SET status = 'queued' WHERE id = $1`, id); err != nil {
			return fmt.Errorf("requeue run: %w", err)
		}
		_, err = appendEvent(ctx, tx, id, &wfv1.RunEvent{
			Type: wfv1.RunEventType_RUN_EVENT_TYPE_REQUEUED, Status: wfv1.RunStatus_RUN_STATUS_QUEUED, Message: reason,
		})
		return err
	})
}

// CancelJobFunc cancels the River job of a run inside tx.
type CancelJobFunc func(ctx context.Context, tx pgx.Tx, jobID int64) error

// CancelRun cancels a run. A queued run becomes CANCELLED at once; a running
// one is marked cancel-requested (its worker stops it and records the final
// status); a finished run is returned unchanged. cancelJob is called in the
// same transaction for live runs.
func (s *Store) CancelRun(ctx context.Context, id, reason string, cancelJob CancelJobFunc) (*wfv1.Run, error) {
	if reason == "" {
		reason = "cancelled by request"
	}
	return s.updateLive(ctx, id, func(tx pgx.Tx, run *wfv1.Run) (*wfv1.Run, error) {
		var jobID *int64
		if err := tx.QueryRow(ctx, `
			UPDATE runs SET cancel_requested = true, cancel_reason = $2 WHERE id = $1 RETURNING job_id`,
			id, reason).Scan(&jobID); err != nil {
			return nil, fmt.Errorf("request cancel: %w", err)
		}
		if jobID != nil {
			if err := cancelJob(ctx, tx, *jobID); err != nil {
				return nil, fmt.Errorf("cancel job of run %s: %w", id, err)
			}
		}
		if run.Status == wfv1.RunStatus_RUN_STATUS_QUEUED {
			return finishLocked(ctx, tx, run, Outcome{
				Status: wfv1.RunStatus_RUN_STATUS_CANCELLED,
				Error:  &wfv1.RunError{Category: wfv1.ErrorCategory_ERROR_CATEGORY_CANCELLED, Message: reason},
			})
		}
		if _, err := appendEvent(ctx, tx, id, &wfv1.RunEvent{
			Type: wfv1.RunEventType_RUN_EVENT_TYPE_CANCEL_REQUESTED, Status: run.Status, Message: reason,
		}); err != nil {
			return nil, err
		}
		return getRun(ctx, tx, id)
	})
}

// CancelReason returns the reason given when the run's cancellation was
// requested.
func (s *Store) CancelReason(ctx context.Context, id string) (string, error) {
	var reason *string
	if err := s.pool.QueryRow(ctx, `SELECT cancel_reason FROM runs WHERE id = $1`, id).Scan(&reason); err != nil {
		return "", notFound("run", id, err)
	}
	if reason == nil {
		return "", nil
	}
	return *reason, nil
}

// ReapLostRuns ends, as ERROR/WORKER_LOST, every live run whose River job can
// no longer execute it (discarded after its last attempt died, cancelled, or
// gone), so that no run stays RUNNING forever. It returns the IDs it ended.
func (s *Store) ReapLostRuns(ctx context.Context) ([]string, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT r.id::text FROM runs r
		LEFT JOIN river_job j ON j.id = r.job_id
		WHERE r.status = ANY($1) AND r.job_id IS NOT NULL
		  AND (j.id IS NULL OR j.state IN ('discarded', 'cancelled', 'completed'))`, liveStatuses)
	if err != nil {
		return nil, fmt.Errorf("find lost runs: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("find lost runs: %w", err)
	}
	var reaped []string
	for _, id := range ids {
		run, err := s.FinishRun(ctx, id, Outcome{
			Status: wfv1.RunStatus_RUN_STATUS_ERROR,
			Error: &wfv1.RunError{
				Category: wfv1.ErrorCategory_ERROR_CATEGORY_WORKER_LOST,
				Message:  "the worker executing the run was lost and the run could not be resumed",
			},
		})
		if err != nil && !errors.Is(err, fault.ErrNotFound) {
			return reaped, err
		}
		if err == nil && run.Status == wfv1.RunStatus_RUN_STATUS_ERROR {
			reaped = append(reaped, id)
		}
	}
	return reaped, nil
}

// ErrTenantBusy: the run's tenant already runs its max_concurrent_runs; the
// run stays queued and is tried again later.
var ErrTenantBusy = errors.New("the tenant's concurrent run limit is reached")

// checkTenantCapacity returns ErrTenantBusy when starting run would exceed
// its tenant's max_concurrent_runs. Starts of one tenant's runs take a
// transaction-scoped advisory lock, so two workers cannot both take the
// last slot. A resumed run (already running) always continues.
func checkTenantCapacity(ctx context.Context, tx pgx.Tx, run *wfv1.Run) error {
	if run.Status == wfv1.RunStatus_RUN_STATUS_RUNNING || run.Status == wfv1.RunStatus_RUN_STATUS_AWAITING_APPROVAL {
		return nil // a resumed run already holds its slot
	}
	var limit int32
	if err := tx.QueryRow(ctx, `SELECT max_concurrent_runs FROM tenants WHERE id = $1`, run.TenantId).Scan(&limit); err != nil {
		return fmt.Errorf("load tenant limit: %w", err)
	}
	if limit <= 0 {
		return nil
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('wayfinder-tenant:' || $1, 0))`, run.TenantId); err != nil {
		return fmt.Errorf("lock tenant: %w", err)
	}
	var running int32
	if err := tx.QueryRow(ctx, `
		SELECT count(*) FROM runs WHERE tenant_id = $1 AND status IN ('running', 'awaiting_approval')`,
		run.TenantId).Scan(&running); err != nil {
		return fmt.Errorf("count tenant runs: %w", err)
	}
	if running >= limit {
		return fmt.Errorf("tenant %q runs %d of %d: %w", run.TenantId, running, limit, ErrTenantBusy)
	}
	return nil
}
