package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/timestamppb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
)

// Webhook delivery states (WebhookDelivery.state).
const (
	WebhookPending   = "pending"
	WebhookDelivered = "delivered"
	WebhookFailed    = "failed"
)

// WebhookSource is a recorded event that calls for a webhook delivery: the
// FINISHED event of a run that names a webhook, or its APPROVAL_REQUESTED
// events when the webhook asks for them (on_approval).
type WebhookSource struct {
	// Event carries the run ID and sequence number.
	Event *wfv1.RunEvent
	// Webhook is the run's webhook as stored (its secret redacted).
	Webhook *wfv1.RunWebhook
}

// WebhookSources returns up to limit events created after since that call
// for a webhook delivery and have none yet, oldest first, and the
// database's clock at the time of the query.
func (s *Store) WebhookSources(ctx context.Context, since time.Time, limit int) ([]WebhookSource, time.Time, error) {
	now, err := s.Now(ctx)
	if err != nil {
		return nil, time.Time{}, err
	}
	rows, err := s.pool.Query(ctx, `
		SELECT e.event, r.params->'webhook' FROM run_events e
		JOIN runs r ON r.id = e.run_id
		WHERE e.type IN ('RUN_EVENT_TYPE_FINISHED', 'RUN_EVENT_TYPE_APPROVAL_REQUESTED') AND e.created_at > $1
		  AND r.params ? 'webhook'
		  AND (e.type = 'RUN_EVENT_TYPE_FINISHED' OR coalesce((r.params->'webhook'->>'onApproval')::boolean, false))
		  AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d
		                  WHERE d.run_id = e.run_id AND d.event_seq = e.seq AND d.redelivery_of IS NULL)
		ORDER BY e.created_at, e.run_id, e.seq LIMIT $2`, since, limit)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("find webhook events: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (WebhookSource, error) {
		var rawEvent, rawHook []byte
		if err := r.Scan(&rawEvent, &rawHook); err != nil {
			return WebhookSource{}, err
		}
		src := WebhookSource{Event: &wfv1.RunEvent{}, Webhook: &wfv1.RunWebhook{}}
		if err := protojson.Unmarshal(rawEvent, src.Event); err != nil {
			return WebhookSource{}, fmt.Errorf("decode event: %w", err)
		}
		if err := protojson.Unmarshal(rawHook, src.Webhook); err != nil {
			return WebhookSource{}, fmt.Errorf("decode webhook: %w", err)
		}
		return src, nil
	})
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("find webhook events: %w", err)
	}
	return out, now, nil
}

// NewWebhookDelivery is a delivery to be created.
type NewWebhookDelivery struct {
	// ID is the delivery's ID (a UUID), also inside Body.
	ID    string
	RunID string
	// EventSeq is the sequence number of the event the delivery reports.
	EventSeq int64
	// Event is "run.finished" or "run.approval_requested".
	Event string
	URL   string
	// Body is exactly what is POSTed.
	Body []byte
	// RedeliveryOf is the delivery a redelivery repeats; empty for an
	// event's original delivery.
	RedeliveryOf string
}

// WebhookEnqueueFunc enqueues the job that sends delivery id inside tx.
type WebhookEnqueueFunc func(ctx context.Context, tx pgx.Tx, id string) error

// CreateWebhookDelivery stores a pending delivery and calls enqueue in the
// same transaction. An event has one original delivery: when d is an
// original and its event already has one, nothing is written and created
// is false.
func (s *Store) CreateWebhookDelivery(ctx context.Context, d NewWebhookDelivery, enqueue WebhookEnqueueFunc) (created bool, err error) {
	var redeliveryOf *string
	if d.RedeliveryOf != "" {
		redeliveryOf = &d.RedeliveryOf
	}
	err = s.InTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `
			INSERT INTO webhook_deliveries (id, run_id, event_seq, event, url, body, state, redelivery_of)
			VALUES ($1, $2, $3, $4, $5, $6, 'pending', $7)
			ON CONFLICT (run_id, event_seq) WHERE redelivery_of IS NULL DO NOTHING`,
			d.ID, d.RunID, d.EventSeq, d.Event, d.URL, d.Body, redeliveryOf)
		if err != nil {
			return fmt.Errorf("insert webhook delivery: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return nil
		}
		if err := enqueue(ctx, tx, d.ID); err != nil {
			return fmt.Errorf("enqueue webhook delivery: %w", err)
		}
		created = true
		return nil
	})
	return created, err
}

// WebhookDelivery is a stored delivery with what it sends.
type WebhookDelivery struct {
	*wfv1.WebhookDelivery
	// EventSeq is the sequence number of the event it reports.
	EventSeq int64
	// Body is exactly what is POSTed.
	Body []byte
	// RedeliveryOf is the delivery it repeats, if any.
	RedeliveryOf string
}

const deliveryColumns = `id::text, run_id::text, event, url, state, attempts, last_status, last_error,
	created_at, delivered_at, event_seq, body, coalesce(redelivery_of::text, '')`

func scanDelivery(row pgx.Row) (*WebhookDelivery, error) {
	d := &WebhookDelivery{WebhookDelivery: &wfv1.WebhookDelivery{}}
	var (
		created   time.Time
		delivered *time.Time
	)
	if err := row.Scan(&d.Id, &d.RunId, &d.Event, &d.Url, &d.State, &d.Attempts, &d.LastStatus, &d.LastError,
		&created, &delivered, &d.EventSeq, &d.Body, &d.RedeliveryOf); err != nil {
		return nil, err
	}
	d.CreateTime = timestamppb.New(created)
	if delivered != nil {
		d.DeliveredTime = timestamppb.New(*delivered)
	}
	return d, nil
}

// GetWebhookDelivery returns a delivery, or an error wrapping
// fault.ErrNotFound.
func (s *Store) GetWebhookDelivery(ctx context.Context, id string) (*WebhookDelivery, error) {
	if _, err := uuid.Parse(id); err != nil {
		return nil, fmt.Errorf("webhook delivery %q: %w", id, errNotFound)
	}
	d, err := scanDelivery(s.pool.QueryRow(ctx, `SELECT `+deliveryColumns+` FROM webhook_deliveries WHERE id = $1`, id))
	if err != nil {
		return nil, notFound("webhook delivery", id, err)
	}
	return d, nil
}

// ListWebhookDeliveries returns a run's deliveries, newest first.
func (s *Store) ListWebhookDeliveries(ctx context.Context, runID string) ([]*wfv1.WebhookDelivery, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT `+deliveryColumns+` FROM webhook_deliveries WHERE run_id = $1 ORDER BY created_at DESC, id DESC`, runID)
	if err != nil {
		return nil, fmt.Errorf("list webhook deliveries: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (*wfv1.WebhookDelivery, error) {
		d, err := scanDelivery(r)
		if err != nil {
			return nil, err
		}
		return d.WebhookDelivery, nil
	})
}

// WebhookAttempt is the outcome of one POST of a delivery.
type WebhookAttempt struct {
	// Attempt is the attempt's number (1 for the first).
	Attempt int
	// Status is the HTTP status of the answer; 0 when there was none.
	Status int
	// Err says why the attempt failed; empty when it succeeded.
	Err string
	// State is the delivery's state after the attempt.
	State string
}

// ErrWebhookDone is returned by RecordWebhookAttempt for a delivery that
// is no longer pending (its outcome is final).
var ErrWebhookDone = errors.New("webhook delivery is no longer pending")

// RecordWebhookAttempt records an attempt of a pending delivery.
func (s *Store) RecordWebhookAttempt(ctx context.Context, id string, a WebhookAttempt) error {
	switch a.State {
	case WebhookPending, WebhookDelivered, WebhookFailed:
	default:
		return fmt.Errorf("webhook delivery state %q is unknown", a.State)
	}
	tag, err := s.pool.Exec(ctx, `
		UPDATE webhook_deliveries SET attempts = greatest(attempts + 1, $2), last_status = $3, last_error = $4, state = $5,
			delivered_at = CASE WHEN $5 = 'delivered' THEN now() END
		WHERE id = $1 AND state = 'pending'`, id, a.Attempt, a.Status, a.Err, a.State)
	if err != nil {
		return fmt.Errorf("record webhook attempt: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("webhook delivery %s: %w", id, ErrWebhookDone)
	}
	return nil
}
