package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/timestamppb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
)

// appendEvent gives ev the run's next sequence number, stores it and
// announces it on NotifyChannel; the notification is delivered when tx
// commits. The run row is locked until then, so sequences have no gaps.
func appendEvent(ctx context.Context, tx pgx.Tx, runID string, ev *wfv1.RunEvent) (*wfv1.RunEvent, error) {
	var seq int64
	var now time.Time
	if err := tx.QueryRow(ctx, `
		UPDATE runs SET last_event_seq = last_event_seq + 1 WHERE id = $1
		RETURNING last_event_seq, now()`, runID).Scan(&seq, &now); err != nil {
		return nil, fmt.Errorf("allocate event sequence: %w", err)
	}
	ev.RunId, ev.Sequence, ev.Time = runID, seq, timestamppb.New(now)
	raw, err := protojson.Marshal(ev)
	if err != nil {
		return nil, fmt.Errorf("encode event: %w", err)
	}
	if _, err := tx.Exec(ctx, `
		INSERT INTO run_events (run_id, seq, type, created_at, event) VALUES ($1, $2, $3, $4, $5)`,
		runID, seq, ev.Type.String(), now, raw); err != nil {
		return nil, fmt.Errorf("insert event: %w", err)
	}
	if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, NotifyChannel, runID); err != nil {
		return nil, fmt.Errorf("notify event: %w", err)
	}
	return ev, nil
}

// AppendEvent records an event for a run in its own transaction and returns
// it with its sequence number and time set. A finished run takes no more
// events (FINISHED is always its last): then nothing is written and nil is
// returned.
func (s *Store) AppendEvent(ctx context.Context, runID string, ev *wfv1.RunEvent) (*wfv1.RunEvent, error) {
	var out *wfv1.RunEvent
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		run, err := lockRun(ctx, tx, runID)
		if err != nil || IsTerminal(run.Status) {
			return err
		}
		out, err = appendEvent(ctx, tx, runID, ev)
		return err
	})
	return out, err
}

// ListEvents returns up to limit events of a run with sequence numbers
// greater than afterSeq, in order.
func (s *Store) ListEvents(ctx context.Context, runID string, afterSeq int64, limit int) ([]*wfv1.RunEvent, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT event FROM run_events WHERE run_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`,
		runID, afterSeq, limit)
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	return pgx.CollectRows(rows, scanEvent)
}

// scanEvent decodes a row whose one column is a stored RunEvent.
func scanEvent(r pgx.CollectableRow) (*wfv1.RunEvent, error) {
	var raw []byte
	if err := r.Scan(&raw); err != nil {
		return nil, err
	}
	ev := &wfv1.RunEvent{}
	if err := protojson.Unmarshal(raw, ev); err != nil {
		return nil, fmt.Errorf("decode event: %w", err)
	}
	return ev, nil
}
