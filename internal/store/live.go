package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/timestamppb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/fault"
)

// Errors of the live view and takeovers. Each wraps
// fault.ErrFailedPrecondition; the API names them as the status's reason.
var (
	// ErrLiveUnavailable: the run has no live view (no worker holds its
	// browser, or it is not RUNNING or AWAITING_APPROVAL).
	ErrLiveUnavailable = fmt.Errorf("the run has no live view: %w", fault.ErrFailedPrecondition)
	// ErrTakeoverInProgress: another takeover of the run is REQUESTED or
	// ACTIVE.
	ErrTakeoverInProgress = fmt.Errorf("another takeover of the run is requested or active: %w", fault.ErrFailedPrecondition)
	// ErrTakeoverNotActive: the takeover named is not the run's open (for
	// input: ACTIVE and not handed back) takeover.
	ErrTakeoverNotActive = fmt.Errorf("the takeover is not the run's active takeover: %w", fault.ErrFailedPrecondition)
)

// Audit event kinds of takeovers.
const (
	AuditTakeoverRequested = "takeover.requested"
	AuditTakeoverStarted   = "takeover.started"
	AuditTakeoverEnded     = "takeover.ended"
)

// Takeover end reasons (Takeover.end_reason).
const (
	TakeoverHandedBack = "handed_back"
	TakeoverWithdrawn  = "withdrawn"
	TakeoverIdle       = "idle"
	TakeoverRunEnded   = "run_ended"
)

// LiveKey is the NOTIFY payload (and events.Hub key) that announces a
// change of control of run runID's live view: its session (registered,
// watched, ended) or a takeover. Input and frames, which come many a
// second, have keys of their own, so that a follower wakes only for what
// it reads.
func LiveKey(runID string) string { return "live:" + runID }

// LiveInputKey is the NOTIFY payload (and events.Hub key) that announces
// new input of run runID's takeover (AppendLiveInputs), for its worker.
func LiveInputKey(runID string) string { return "live-input:" + runID }

// LiveFrameKey is the NOTIFY payload (and events.Hub key) that announces a
// new frame of run runID (PutLiveFrame), for viewers on other replicas.
func LiveFrameKey(runID string) string { return "live-frame:" + runID }

// liveRunStatuses are the stored statuses of runs that can have a live view.
var liveRunStatuses = []string{"running", "awaiting_approval"}

func notifyLive(ctx context.Context, tx pgx.Tx, runID string) error {
	return notifyKey(ctx, tx, LiveKey(runID))
}

func notifyKey(ctx context.Context, tx pgx.Tx, key string) error {
	if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, NotifyChannel, key); err != nil {
		return fmt.Errorf("notify live view: %w", err)
	}
	return nil
}

// LiveSession is the record of the worker that holds a run's browser.
type LiveSession struct {
	RunID  string
	Worker string
	// StartedAt changes when another worker (a resumed run) takes over the
	// session; a viewer treats that as the end of the session it watched.
	StartedAt time.Time
	// Watched is true while a viewer on another replica asked for frames
	// (watched_until is in the future by the database's clock).
	Watched bool
}

// RegisterLiveSession records that worker holds run runID's browser (an
// upsert: a resumed run takes over the row of a worker that died), drops
// the frame and input a previous worker left, and wakes the run's live
// followers.
func (s *Store) RegisterLiveSession(ctx context.Context, runID, worker string) error {
	if !validUUID(runID) {
		return fmt.Errorf("run %q: %w", runID, errNotFound)
	}
	return s.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `
			INSERT INTO live_sessions (run_id, worker) VALUES ($1, $2)
			ON CONFLICT (run_id) DO UPDATE SET worker = EXCLUDED.worker, started_at = clock_timestamp()`,
			runID, worker); err != nil {
			return fmt.Errorf("register live session of run %s: %w", runID, err)
		}
		if err := deleteLiveData(ctx, tx, runID); err != nil {
			return err
		}
		return notifyLive(ctx, tx, runID)
	})
}

// EndLiveSession removes run runID's live session with its frame and
// pending input, and wakes its viewers, whose streams end.
func (s *Store) EndLiveSession(ctx context.Context, runID string) error {
	return s.InTx(ctx, func(tx pgx.Tx) error { return dropLiveView(ctx, tx, runID) })
}

// dropLiveView removes a finishing run's live session with its frame and
// pending input (typed text must not rest in the database; a worker that
// was killed never removed them) and wakes the run's viewers.
func dropLiveView(ctx context.Context, tx pgx.Tx, runID string) error {
	if _, err := tx.Exec(ctx, `DELETE FROM live_sessions WHERE run_id = $1`, runID); err != nil {
		return fmt.Errorf("end live session of run %s: %w", runID, err)
	}
	if err := deleteLiveData(ctx, tx, runID); err != nil {
		return err
	}
	return notifyLive(ctx, tx, runID)
}

func deleteLiveData(ctx context.Context, tx pgx.Tx, runID string) error {
	if _, err := tx.Exec(ctx, `DELETE FROM live_frames WHERE run_id = $1`, runID); err != nil {
		return fmt.Errorf("delete live frame of run %s: %w", runID, err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM live_inputs WHERE run_id = $1`, runID); err != nil {
		return fmt.Errorf("delete live input of run %s: %w", runID, err)
	}
	return nil
}

// LiveSession returns run runID's live session, or an error wrapping
// ErrLiveUnavailable when it has none or the run is not RUNNING or
// AWAITING_APPROVAL (a row a killed worker left behind).
func (s *Store) LiveSession(ctx context.Context, runID string) (*LiveSession, error) {
	if !validUUID(runID) {
		return nil, fmt.Errorf("run %q: %w", runID, errNotFound)
	}
	ls := LiveSession{RunID: runID}
	err := s.pool.QueryRow(ctx, `
		SELECT l.worker, l.started_at, l.watched_until > now()
		FROM live_sessions l JOIN runs r ON r.id = l.run_id
		WHERE l.run_id = $1 AND r.status = ANY($2)`, runID, liveRunStatuses).Scan(&ls.Worker, &ls.StartedAt, &ls.Watched)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("run %s: %w", runID, ErrLiveUnavailable)
	}
	if err != nil {
		return nil, fmt.Errorf("load live session of run %s: %w", runID, err)
	}
	return &ls, nil
}

// WatchLive keeps run runID's session watched for d from now (it never
// shortens it). When nobody watched before, the worker is woken so that it
// starts copying frames at once. A run without a session is
// ErrLiveUnavailable.
func (s *Store) WatchLive(ctx context.Context, runID string, d time.Duration) error {
	return s.InTx(ctx, func(tx pgx.Tx) error {
		var wasWatched bool
		err := tx.QueryRow(ctx, `
			WITH old AS (SELECT run_id, watched_until > now() AS watched FROM live_sessions WHERE run_id = $1 FOR UPDATE)
			UPDATE live_sessions l SET watched_until = greatest(l.watched_until, now() + $2 * interval '1 millisecond')
			FROM old WHERE l.run_id = old.run_id
			RETURNING old.watched`, runID, d.Milliseconds()).Scan(&wasWatched)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("run %s: %w", runID, ErrLiveUnavailable)
		}
		if err != nil {
			return fmt.Errorf("watch live session of run %s: %w", runID, err)
		}
		if wasWatched {
			return nil
		}
		return notifyLive(ctx, tx, runID)
	})
}

// PutLiveFrame stores f as run runID's newest frame (replacing the one
// before) and wakes the run's viewers (LiveFrameKey).
func (s *Store) PutLiveFrame(ctx context.Context, runID string, f *wfv1.LiveFrame) error {
	return s.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `
			INSERT INTO live_frames (run_id, sequence, captured_at, width, height, url, data)
			VALUES ($1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT (run_id) DO UPDATE SET sequence = EXCLUDED.sequence, captured_at = EXCLUDED.captured_at,
				width = EXCLUDED.width, height = EXCLUDED.height, url = EXCLUDED.url, data = EXCLUDED.data`,
			runID, f.GetSequence(), f.GetTime().AsTime(), f.GetWidth(), f.GetHeight(), f.GetUrl(), f.GetData()); err != nil {
			return fmt.Errorf("store live frame of run %s: %w", runID, err)
		}
		return notifyKey(ctx, tx, LiveFrameKey(runID))
	})
}

// LiveFrame returns run runID's newest frame when its sequence is greater
// than afterSeq, else nil. The frame carries no takeover.
func (s *Store) LiveFrame(ctx context.Context, runID string, afterSeq int64) (*wfv1.LiveFrame, error) {
	var (
		f  wfv1.LiveFrame
		at time.Time
	)
	err := s.pool.QueryRow(ctx, `
		SELECT sequence, captured_at, width, height, url, data FROM live_frames WHERE run_id = $1 AND sequence > $2`,
		runID, afterSeq).Scan(&f.Sequence, &at, &f.Width, &f.Height, &f.Url, &f.Data)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("load live frame of run %s: %w", runID, err)
	}
	f.Time = timestamppb.New(at)
	return &f, nil
}

// RequestTakeover stores a REQUESTED takeover of run runID by by, appends
// the TAKEOVER event, records the takeover.requested audit event and wakes
// the run's worker, in one transaction. The run must be RUNNING or
// AWAITING_APPROVAL with a live session (else ErrLiveUnavailable) and have
// no open takeover (else ErrTakeoverInProgress).
func (s *Store) RequestTakeover(ctx context.Context, runID, by string) (*wfv1.Takeover, error) {
	var t *wfv1.Takeover
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		run, err := lockRun(ctx, tx, runID)
		if err != nil {
			return err
		}
		if !isLiveStatus(run.Status) {
			return fmt.Errorf("run %s is %s: %w", runID, run.Status, ErrLiveUnavailable)
		}
		var has bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM live_sessions WHERE run_id = $1)`, runID).Scan(&has); err != nil {
			return fmt.Errorf("load live session of run %s: %w", runID, err)
		}
		if !has {
			return fmt.Errorf("run %s: %w", runID, ErrLiveUnavailable)
		}
		t, err = scanTakeover(tx.QueryRow(ctx, `
			INSERT INTO takeovers (id, run_id, state, requested_by) VALUES ($1, $2, 'requested', $3)
			RETURNING `+takeoverColumns, uuid.NewString(), runID, by))
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "23505" && pgErr.ConstraintName == "takeovers_open_idx" {
			return fmt.Errorf("run %s: %w", runID, ErrTakeoverInProgress)
		}
		if err != nil {
			return fmt.Errorf("insert takeover of run %s: %w", runID, err)
		}
		return recordTakeover(ctx, tx, run, t, AuditTakeoverRequested, by, "takeover requested by "+by)
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// OpenTakeover returns run runID's REQUESTED or ACTIVE takeover (nil when
// none) and whether a hand-back of it was asked for.
func (s *Store) OpenTakeover(ctx context.Context, runID string) (t *wfv1.Takeover, handBack bool, err error) {
	if !validUUID(runID) {
		return nil, false, nil
	}
	var at *time.Time
	t, err = scanTakeover(s.pool.QueryRow(ctx, `
		SELECT `+takeoverColumns+`, handback_at FROM takeovers WHERE run_id = $1 AND state <> 'ended'`, runID), &at)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("load open takeover of run %s: %w", runID, err)
	}
	return t, at != nil, nil
}

// UpdateTakeover persists a takeover state change the worker's session
// made: ACTIVE (from REQUESTED: started_at is set) or ENDED (end_reason
// and, when set, note from t). It appends the TAKEOVER event (while the
// run is not finished) and the takeover.started or takeover.ended audit
// event and wakes the run's followers, in one transaction. The change is
// conditional: when the row is no longer in a state it can leave that way
// (the API withdrew it meanwhile), nothing is written and changed is
// false; the stored takeover is returned either way.
func (s *Store) UpdateTakeover(ctx context.Context, runID string, t *wfv1.Takeover) (stored *wfv1.Takeover, changed bool, err error) {
	err = s.InTx(ctx, func(tx pgx.Tx) error {
		run, err := lockRun(ctx, tx, runID)
		if err != nil {
			return err
		}
		if _, err := uuid.Parse(t.GetId()); err != nil {
			return fmt.Errorf("takeover %q: %w", t.GetId(), errNotFound)
		}
		var kind, msg, q string
		args := []any{t.GetId(), runID}
		switch t.GetState() {
		case wfv1.TakeoverState_TAKEOVER_STATE_ACTIVE:
			q = `UPDATE takeovers SET state = 'active', started_at = now()
				WHERE id = $1 AND run_id = $2 AND state = 'requested' RETURNING ` + takeoverColumns
			kind = AuditTakeoverStarted
		case wfv1.TakeoverState_TAKEOVER_STATE_ENDED:
			q = `UPDATE takeovers SET state = 'ended', ended_at = now(), end_reason = $3,
				note = CASE WHEN $4 <> '' THEN $4 ELSE note END
				WHERE id = $1 AND run_id = $2 AND state <> 'ended' RETURNING ` + takeoverColumns
			args = append(args, t.GetEndReason(), t.GetNote())
			kind = AuditTakeoverEnded
		default:
			return fmt.Errorf("takeover state %v is not a change a session makes", t.GetState())
		}
		stored, err = scanTakeover(tx.QueryRow(ctx, q, args...))
		if errors.Is(err, pgx.ErrNoRows) {
			stored, err = scanTakeover(tx.QueryRow(ctx, `SELECT `+takeoverColumns+` FROM takeovers WHERE id = $1 AND run_id = $2`, t.GetId(), runID))
			if err != nil {
				return notFound("takeover", t.GetId(), err)
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("update takeover %s: %w", t.GetId(), err)
		}
		changed = true
		if kind == AuditTakeoverStarted {
			msg = stored.RequestedBy + " has the browser; the run is paused"
		} else {
			msg = endMessage(stored)
		}
		return recordTakeover(ctx, tx, run, stored, kind, stored.RequestedBy, msg)
	})
	if err != nil {
		return nil, false, err
	}
	return stored, changed, nil
}

func endMessage(t *wfv1.Takeover) string {
	switch t.EndReason {
	case TakeoverHandedBack:
		return t.RequestedBy + " handed the browser back"
	case TakeoverWithdrawn:
		return t.RequestedBy + " withdrew the takeover request"
	case TakeoverIdle:
		return t.RequestedBy + "'s takeover ended: no input for the idle limit"
	case TakeoverRunEnded:
		return t.RequestedBy + "'s takeover ended with the run"
	}
	return t.RequestedBy + "'s takeover ended: " + t.EndReason
}

// HandBackTakeover answers the API's HandBack of takeover id of run runID
// by by. A REQUESTED takeover is withdrawn at once (ENDED, "withdrawn",
// with its TAKEOVER and audit events); an ACTIVE one is marked handed back
// with note, and the worker ends it (UpdateTakeover). Both wake the run's
// worker. Any other takeover is ErrTakeoverNotActive.
func (s *Store) HandBackTakeover(ctx context.Context, runID, id, by, note string) (*wfv1.Takeover, error) {
	if !validUUID(id) {
		return nil, fmt.Errorf("takeover %q: %w", id, ErrTakeoverNotActive)
	}
	var t *wfv1.Takeover
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		run, err := lockRun(ctx, tx, runID)
		if err != nil {
			return err
		}
		t, err = scanTakeover(tx.QueryRow(ctx, `
			SELECT `+takeoverColumns+` FROM takeovers WHERE id = $1 AND run_id = $2 AND state <> 'ended' FOR UPDATE`, id, runID))
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("takeover %s: %w", id, ErrTakeoverNotActive)
		}
		if err != nil {
			return fmt.Errorf("load takeover %s: %w", id, err)
		}
		if t.State == wfv1.TakeoverState_TAKEOVER_STATE_ACTIVE {
			t, err = scanTakeover(tx.QueryRow(ctx, `
				UPDATE takeovers SET handback_at = coalesce(handback_at, now()), note = $2 WHERE id = $1
				RETURNING `+takeoverColumns, id, note))
			if err != nil {
				return fmt.Errorf("hand back takeover %s: %w", id, err)
			}
			return notifyLive(ctx, tx, runID)
		}
		t, err = scanTakeover(tx.QueryRow(ctx, `
			UPDATE takeovers SET state = 'ended', ended_at = now(), end_reason = $2, note = $3 WHERE id = $1
			RETURNING `+takeoverColumns, id, TakeoverWithdrawn, note))
		if err != nil {
			return fmt.Errorf("withdraw takeover %s: %w", id, err)
		}
		return recordTakeover(ctx, tx, run, t, AuditTakeoverEnded, by, endMessage(t))
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// SetTakeoverStep records the number of the step that holds what the
// person did in takeover takeoverID of run runID.
func (s *Store) SetTakeoverStep(ctx context.Context, runID, takeoverID string, step int32) error {
	if !validUUID(takeoverID) {
		return fmt.Errorf("takeover %q: %w", takeoverID, errNotFound)
	}
	tag, err := s.pool.Exec(ctx, `UPDATE takeovers SET step_number = $3 WHERE id = $1 AND run_id = $2`, takeoverID, runID, step)
	if err != nil {
		return fmt.Errorf("set step of takeover %s: %w", takeoverID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("takeover %q: %w", takeoverID, errNotFound)
	}
	return nil
}

// LiveInput is one stored input event of a takeover.
type LiveInput struct {
	Seq        int64
	TakeoverID string
	Input      *wfv1.LiveInput
}

// AppendLiveInputs stores input events for takeover takeoverID of run
// runID, in order, and wakes the run's worker (LiveInputKey). Appends to one takeover
// commit one after another, in the order of their sequence numbers. The takeover must be ACTIVE
// and not handed back, else ErrTakeoverNotActive.
func (s *Store) AppendLiveInputs(ctx context.Context, runID, takeoverID string, in []*wfv1.LiveInput) error {
	if !validUUID(takeoverID) {
		return fmt.Errorf("takeover %q: %w", takeoverID, ErrTakeoverNotActive)
	}
	raw := make([][]byte, len(in))
	for i, ev := range in {
		b, err := protojson.Marshal(ev)
		if err != nil {
			return fmt.Errorf("encode live input: %w", err)
		}
		raw[i] = b
	}
	return s.InTx(ctx, func(tx pgx.Tx) error {
		// FOR UPDATE serializes the run's appends: sequence numbers are
		// drawn at insert, so two appends at once could commit out of
		// their order, and the worker, which applies input by sequence,
		// would skip the rows that commit late.
		var active bool
		err := tx.QueryRow(ctx, `
			SELECT state = 'active' AND handback_at IS NULL FROM takeovers WHERE id = $1 AND run_id = $2 FOR UPDATE`,
			takeoverID, runID).Scan(&active)
		if errors.Is(err, pgx.ErrNoRows) || (err == nil && !active) {
			return fmt.Errorf("takeover %s: %w", takeoverID, ErrTakeoverNotActive)
		}
		if err != nil {
			return fmt.Errorf("load takeover %s: %w", takeoverID, err)
		}
		// Sequence numbers are drawn in the order of the rows.
		if _, err := tx.Exec(ctx, `
			INSERT INTO live_inputs (run_id, takeover_id, event)
			SELECT $1, $2, e.ev FROM unnest($3::jsonb[]) WITH ORDINALITY AS e(ev, n) ORDER BY e.n`,
			runID, takeoverID, raw); err != nil {
			return fmt.Errorf("store live input of run %s: %w", runID, err)
		}
		return notifyKey(ctx, tx, LiveInputKey(runID))
	})
}

// LiveInputs returns up to limit input events of run runID with sequence
// numbers greater than afterSeq, in order.
func (s *Store) LiveInputs(ctx context.Context, runID string, afterSeq int64, limit int) ([]LiveInput, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT seq, takeover_id::text, event FROM live_inputs WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
		runID, afterSeq, limit)
	if err != nil {
		return nil, fmt.Errorf("load live input of run %s: %w", runID, err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (LiveInput, error) {
		var (
			in  LiveInput
			raw []byte
		)
		if err := r.Scan(&in.Seq, &in.TakeoverID, &raw); err != nil {
			return in, err
		}
		in.Input = &wfv1.LiveInput{}
		if err := protojson.Unmarshal(raw, in.Input); err != nil {
			return in, fmt.Errorf("decode live input: %w", err)
		}
		return in, nil
	})
}

// DeleteLiveInputs deletes run runID's input events with sequence numbers
// up to and including upToSeq (the ones applied).
func (s *Store) DeleteLiveInputs(ctx context.Context, runID string, upToSeq int64) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM live_inputs WHERE run_id = $1 AND seq <= $2`, runID, upToSeq); err != nil {
		return fmt.Errorf("delete live input of run %s: %w", runID, err)
	}
	return nil
}

// recordTakeover appends the TAKEOVER event carrying t (unless the run has
// finished: FINISHED stays its last event), records the audit event and
// wakes the run's live followers.
func recordTakeover(ctx context.Context, tx pgx.Tx, run *wfv1.Run, t *wfv1.Takeover, kind, actor, msg string) error {
	if !IsTerminal(run.Status) {
		if _, err := appendEvent(ctx, tx, run.Id, &wfv1.RunEvent{
			Type:    wfv1.RunEventType_RUN_EVENT_TYPE_TAKEOVER,
			Status:  run.Status,
			Message: msg,
			Payload: &wfv1.RunEvent_Takeover{Takeover: t},
		}); err != nil {
			return err
		}
	}
	details := map[string]any{"state": t.State.String(), "requested_by": t.RequestedBy}
	if t.EndReason != "" {
		details["end_reason"] = t.EndReason
	}
	raw, err := json.Marshal(details)
	if err != nil {
		return fmt.Errorf("encode audit details: %w", err)
	}
	if _, err := tx.Exec(ctx, `
		INSERT INTO audit_events (tenant_id, kind, actor, subject, run_id, details) VALUES ($1, $2, $3, $4, $5, $6)`,
		run.TenantId, kind, actor, t.Id, run.Id, raw); err != nil {
		return fmt.Errorf("record audit event: %w", err)
	}
	return notifyLive(ctx, tx, run.Id)
}

func isLiveStatus(s wfv1.RunStatus) bool {
	return s == wfv1.RunStatus_RUN_STATUS_RUNNING || s == wfv1.RunStatus_RUN_STATUS_AWAITING_APPROVAL
}

const takeoverColumns = `id::text, run_id::text, state, requested_by, requested_at, started_at, ended_at, end_reason, note, step_number`

// scanTakeover scans takeoverColumns, then extra.
func scanTakeover(row pgx.Row, extra ...any) (*wfv1.Takeover, error) {
	var (
		t              wfv1.Takeover
		state          string
		requested      time.Time
		started, ended *time.Time
	)
	dest := append([]any{&t.Id, &t.RunId, &state, &t.RequestedBy, &requested, &started, &ended, &t.EndReason, &t.Note, &t.StepNumber}, extra...)
	if err := row.Scan(dest...); err != nil {
		return nil, err
	}
	t.State = takeoverStates[state]
	t.RequestTime = timestamppb.New(requested)
	if started != nil {
		t.StartTime = timestamppb.New(*started)
	}
	if ended != nil {
		t.EndTime = timestamppb.New(*ended)
	}
	return &t, nil
}

var takeoverStates = map[string]wfv1.TakeoverState{
	"requested": wfv1.TakeoverState_TAKEOVER_STATE_REQUESTED,
	"active":    wfv1.TakeoverState_TAKEOVER_STATE_ACTIVE,
	"ended":     wfv1.TakeoverState_TAKEOVER_STATE_ENDED,
}

// openTakeoverColumn is the open takeover of a run that is RUNNING or
// AWAITING_APPROVAL (Run.takeover), part of runColumns.
const openTakeoverColumn = `CASE WHEN status IN ('running', 'awaiting_approval') THEN
		(SELECT json_build_object('id', t.id::text, 'state', t.state, 'requested_by', t.requested_by,
			'requested_at', t.requested_at, 'started_at', t.started_at, 'note', t.note)
		FROM takeovers t WHERE t.run_id = runs.id AND t.state <> 'ended') END`

// decodeOpenTakeover decodes openTakeoverColumn of run runID.
func decodeOpenTakeover(runID string, raw []byte) (*wfv1.Takeover, error) {
	if raw == nil {
		return nil, nil
	}
	var v struct {
		ID          string     `json:"id"`
		State       string     `json:"state"`
		RequestedBy string     `json:"requested_by"`
		RequestedAt time.Time  `json:"requested_at"`
		StartedAt   *time.Time `json:"started_at"`
		Note        string     `json:"note"`
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("decode open takeover: %w", err)
	}
	t := &wfv1.Takeover{Id: v.ID, RunId: runID, State: takeoverStates[v.State], RequestedBy: v.RequestedBy,
		RequestTime: timestamppb.New(v.RequestedAt), Note: v.Note}
	if v.StartedAt != nil {
		t.StartTime = timestamppb.New(*v.StartedAt)
	}
	return t, nil
}
