package store

import (
	"context"
	"encoding/base64"
	"encoding/json"

	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/wayfinder/wayfinder/internal/fault"
)

// Trace is the stored replayable trace of a completed run (issue 8). The
// store keeps its actions and final state as the JSON the worker encodes
// (internal/trace), redacted before they get here.
type Trace struct {
	RunID    string
	TenantID string
	// Key identifies the task (trace.Key); Version counts the key's
	// traces from 1, in the order they were saved.
	Key     string
	Version int
	// Pinned: replay uses this trace for its key rather than the newest.
	Pinned bool
	// HealedFrom is the run whose trace a healed replay started from, ""
	// for a trace recorded with the model.
	HealedFrom string
	// Actions ([]trace.Action) and Final (trace.Final) as JSON.
	Actions   json.RawMessage
	Final     json.RawMessage
	CreatedAt time.Time
}

// TraceFilter narrows ListTraces.
type TraceFilter struct {
	// Key, when not empty, lists only the traces of that task.
	Key string
	// PinnedOnly lists only pinned traces.
	PinnedOnly bool
}

const traceColumns = `run_id::text, tenant_id, key, version, pinned, COALESCE(healed_from::text, ''), actions, final, created_at`

func scanTrace(row pgx.Row) (*Trace, error) {
	t := &Trace{}
	var actions, final []byte
	if err := row.Scan(&t.RunID, &t.TenantID, &t.Key, &t.Version, &t.Pinned, &t.HealedFrom, &actions, &final, &t.CreatedAt); err != nil {
		return nil, err
	}
	t.Actions, t.Final = actions, final
	return t, nil
}

// SaveTrace stores the trace of run t.RunID, which must be a run of
// t.TenantID (else the error wraps fault.ErrNotFound), as the next version
// of its key, and returns it as stored. Saving a run's trace again
// replaces its actions and final state and keeps its version, so a
// retried worker stores it once.
func (s *Store) SaveTrace(ctx context.Context, t Trace) (*Trace, error) {
	if !validUUID(t.RunID) {
		return nil, fmt.Errorf("run %q: %w", t.RunID, errNotFound)
	}
	if t.Key == "" || !json.Valid(t.Actions) || !json.Valid(t.Final) {
		return nil, fmt.Errorf("%w: a trace needs a key and JSON actions and final state", fault.ErrInvalidArgument)
	}
	var healed *string
	if t.HealedFrom != "" {
		healed = &t.HealedFrom
	}
	var out *Trace
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		// Versions of a key are numbered under a lock of the key, so two
		// runs finishing at once do not take the same number.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1 || '/' || $2, 0))`, t.TenantID, t.Key); err != nil {
			return fmt.Errorf("save trace of run %s: %w", t.RunID, err)
		}
		var err error
		out, err = scanTrace(tx.QueryRow(ctx, `
			INSERT INTO run_traces (run_id, tenant_id, key, version, healed_from, actions, final)
			SELECT r.id, r.tenant_id, $3,
				COALESCE((SELECT max(version) FROM run_traces WHERE tenant_id = $2 AND key = $3), 0) + 1,
				$4::uuid, $5, $6
			FROM runs r WHERE r.id = $1 AND r.tenant_id = $2
			ON CONFLICT (run_id) DO UPDATE SET actions = EXCLUDED.actions, final = EXCLUDED.final
			RETURNING `+traceColumns, t.RunID, t.TenantID, t.Key, healed, []byte(t.Actions), []byte(t.Final)))
		if err != nil {
			return notFound("run", t.RunID, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// GetTrace returns the trace of the tenant's run runID, or an error
// wrapping fault.ErrNotFound.
func (s *Store) GetTrace(ctx context.Context, tenantID, runID string) (*Trace, error) {
	if !validUUID(runID) {
		return nil, fmt.Errorf("trace of run %q: %w", runID, errNotFound)
	}
	t, err := scanTrace(s.pool.QueryRow(ctx, `SELECT `+traceColumns+` FROM run_traces
		WHERE run_id = $1 AND tenant_id = $2`, runID, tenantID))
	if err != nil {
		return nil, notFound("trace of run", runID, err)
	}
	return t, nil
}

// LatestTrace returns the trace replay should use for the tenant's task
// key: the pinned one, else the newest; an error wrapping
// fault.ErrNotFound when the key has none.
func (s *Store) LatestTrace(ctx context.Context, tenantID, key string) (*Trace, error) {
	t, err := scanTrace(s.pool.QueryRow(ctx, `SELECT `+traceColumns+` FROM run_traces
		WHERE tenant_id = $1 AND key = $2
		ORDER BY pinned DESC, created_at DESC, version DESC LIMIT 1`, tenantID, key))
	if err != nil {
		return nil, notFound("trace for key", key, err)
	}
	return t, nil
}

// ListTraces returns up to pageSize (default 50, at most 500) of the
// tenant's traces, newest first, after the page token, and the next page's
// token ("" on the last page). A malformed token is an invalid argument.
func (s *Store) ListTraces(ctx context.Context, tenantID string, f TraceFilter, pageSize int, pageToken string) ([]*Trace, string, error) {
	at, afterID, err := decodeTraceToken(pageToken)
	if err != nil {
		return nil, "", err
	}
	if pageSize < 1 {
		pageSize = 50
	}
	pageSize = min(pageSize, 500)
	rows, err := s.pool.Query(ctx, `SELECT `+traceColumns+` FROM run_traces
		WHERE tenant_id = $1 AND ($2 = '' OR key = $2) AND (NOT $3 OR pinned)
			AND ($4::timestamptz IS NULL OR (created_at, run_id) < ($4, $5::uuid))
		ORDER BY created_at DESC, run_id DESC LIMIT $6`, tenantID, f.Key, f.PinnedOnly, at, afterID, pageSize+1)
	if err != nil {
		return nil, "", fmt.Errorf("list traces: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Trace, error) { return scanTrace(r) })
	if err != nil {
		return nil, "", fmt.Errorf("list traces: %w", err)
	}
	next := ""
	if len(out) > pageSize {
		out = out[:pageSize]
		last := out[len(out)-1]
		next = encodeTraceToken(last.CreatedAt, last.RunID)
	}
	return out, next, nil
}

// PinTrace pins (or unpins) the trace of the tenant's run runID. Pinning
// unpins the other traces of its key: a key has at most one pinned trace.
// A missing trace wraps fault.ErrNotFound.
func (s *Store) PinTrace(ctx context.Context, tenantID, runID string, pinned bool) (*Trace, error) {
	if !validUUID(runID) {
		return nil, fmt.Errorf("trace of run %q: %w", runID, errNotFound)
	}
	var out *Trace
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		var err error
		out, err = scanTrace(tx.QueryRow(ctx, `UPDATE run_traces SET pinned = $3
			WHERE run_id = $1 AND tenant_id = $2 RETURNING `+traceColumns, runID, tenantID, pinned))
		if err != nil {
			return notFound("trace of run", runID, err)
		}
		if pinned {
			if _, err := tx.Exec(ctx, `UPDATE run_traces SET pinned = false
				WHERE tenant_id = $1 AND key = $2 AND run_id <> $3 AND pinned`, tenantID, out.Key, runID); err != nil {
				return fmt.Errorf("pin trace of run %s: %w", runID, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteTrace deletes the trace of the tenant's run runID (the run stays).
// A missing trace wraps fault.ErrNotFound.
func (s *Store) DeleteTrace(ctx context.Context, tenantID, runID string) error {
	if !validUUID(runID) {
		return fmt.Errorf("trace of run %q: %w", runID, errNotFound)
	}
	tag, err := s.pool.Exec(ctx, `DELETE FROM run_traces WHERE run_id = $1 AND tenant_id = $2`, runID, tenantID)
	if err != nil {
		return fmt.Errorf("delete trace of run %s: %w", runID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("trace of run %q: %w", runID, errNotFound)
	}
	return nil
}

// traceTokenPrefix marks a ListTraces page token: the last trace listed,
// as its creation time and run ID.
const traceTokenPrefix = "tr:"

func encodeTraceToken(at time.Time, runID string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(traceTokenPrefix + at.UTC().Format(time.RFC3339Nano) + "|" + runID))
}

func decodeTraceToken(token string) (*time.Time, *string, error) {
	if token == "" {
		return nil, nil, nil
	}
	bad := fmt.Errorf("%w: malformed page token", fault.ErrInvalidArgument)
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || !strings.HasPrefix(string(b), traceTokenPrefix) {
		return nil, nil, bad
	}
	ts, id, ok := strings.Cut(strings.TrimPrefix(string(b), traceTokenPrefix), "|")
	at, err := time.Parse(time.RFC3339Nano, ts)
	if !ok || err != nil || !validUUID(id) {
		return nil, nil, bad
	}
	return &at, &id, nil
}

// validUUID reports whether id is a UUID (run IDs are; anything else is
// no run's and would only make Postgres complain).
func validUUID(id string) bool {
	u, err := uuid.Parse(id)
	return err == nil && u.String() == strings.ToLower(id) // not urn:uuid:…, which Postgres refuses
}
