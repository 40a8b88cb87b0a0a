package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
)

// TenantWakeKey is the NOTIFY payload (on NotifyChannel) sent with every
// event of one of tenant's runs, so that an events.Hub subscription to it
// wakes the tenant's streams. A database trigger sends it (migration 00005).
func TenantWakeKey(tenant string) string { return "tenant:" + tenant }

// WebhookWakeKey is the NOTIFY payload (on NotifyChannel) sent with every
// FINISHED or APPROVAL_REQUESTED event of a run that names a webhook.
const WebhookWakeKey = "webhooks"

// RunSeq names an event of a run by sequence number.
type RunSeq struct {
	RunID string
	Seq   int64
}

// ActiveRuns returns the tenant's runs that may get new events, each with
// the sequence of its newest event: the live ones and those that ended at
// or after endedSince. It also returns the database's clock at the time of
// the query. A run that is neither has recorded its last event (FINISHED).
func (s *Store) ActiveRuns(ctx context.Context, tenant string, endedSince time.Time) ([]RunSeq, time.Time, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT id::text, last_event_seq, now() FROM runs
		WHERE tenant_id = $1 AND status IN ('queued', 'running', 'awaiting_approval')
		UNION ALL
		SELECT id::text, last_event_seq, now() FROM runs
		WHERE tenant_id = $1 AND ended_at IS NOT NULL AND ended_at >= $2`, tenant, endedSince)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("list active runs: %w", err)
	}
	var (
		out []RunSeq
		now time.Time
	)
	for rows.Next() {
		var r RunSeq
		if err := rows.Scan(&r.RunID, &r.Seq, &now); err != nil {
			rows.Close()
			return nil, time.Time{}, fmt.Errorf("list active runs: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, time.Time{}, fmt.Errorf("list active runs: %w", err)
	}
	if len(out) == 0 {
		if now, err = s.Now(ctx); err != nil {
			return nil, time.Time{}, err
		}
	}
	return out, now, nil
}

// EventSeqsAt returns, for each of runIDs, the sequence of its newest event
// created at or before t; runs without one are absent.
func (s *Store) EventSeqsAt(ctx context.Context, runIDs []string, t time.Time) (map[string]int64, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT run_id::text, max(seq) FROM run_events
		WHERE run_id = ANY($1::uuid[]) AND created_at <= $2 GROUP BY run_id`, runIDs, t)
	if err != nil {
		return nil, fmt.Errorf("find event positions: %w", err)
	}
	out := make(map[string]int64, len(runIDs))
	var (
		id  string
		seq int64
	)
	if _, err := pgx.ForEachRow(rows, []any{&id, &seq}, func() error {
		out[id] = seq
		return nil
	}); err != nil {
		return nil, fmt.Errorf("find event positions: %w", err)
	}
	return out, nil
}

// ListEventsAfter returns, for each position in after, up to perRun events
// of that run with greater sequence numbers, keeping only the given types
// when types is not empty; ordered by run, then sequence.
func (s *Store) ListEventsAfter(ctx context.Context, after []RunSeq, types []wfv1.RunEventType, perRun int) ([]*wfv1.RunEvent, error) {
	if len(after) == 0 {
		return nil, nil
	}
	ids := make([]string, len(after))
	seqs := make([]int64, len(after))
	for i, a := range after {
		ids[i], seqs[i] = a.RunID, a.Seq
	}
	names := make([]string, len(types))
	for i, t := range types {
		names[i] = t.String()
	}
	rows, err := s.pool.Query(ctx, `
		SELECT e.event FROM unnest($1::uuid[], $2::bigint[]) AS k(run_id, seq)
		CROSS JOIN LATERAL (
			SELECT event, seq FROM run_events
			WHERE run_id = k.run_id AND seq > k.seq AND (cardinality($3::text[]) = 0 OR type = ANY($3::text[]))
			ORDER BY seq LIMIT $4
		) e
		ORDER BY k.run_id, e.seq`, ids, seqs, names, perRun)
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	return pgx.CollectRows(rows, scanEvent)
}

// Now returns the database's clock, which times events.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	var now time.Time
	if err := s.pool.QueryRow(ctx, `SELECT now()`).Scan(&now); err != nil {
		return time.Time{}, fmt.Errorf("read database clock: %w", err)
	}
	return now, nil
}
