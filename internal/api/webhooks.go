package api

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/store"
)

// webhookQueue is what redelivery needs of the queue (queue.Queue has it).
type webhookQueue interface {
	EnqueueWebhookTx(ctx context.Context, tx pgx.Tx, deliveryID string) error
}

// ListWebhookDeliveries implements wayfinder.v1.RunService.
func (s *RunService) ListWebhookDeliveries(ctx context.Context, req *wfv1.ListWebhookDeliveriesRequest) (*wfv1.ListWebhookDeliveriesResponse, error) {
	if _, err := s.ownRun(ctx, req.GetRunId()); err != nil {
		return nil, err
	}
	ds, err := s.cfg.Store.ListWebhookDeliveries(ctx, req.GetRunId())
	if err != nil {
		return nil, err
	}
	return &wfv1.ListWebhookDeliveriesResponse{Deliveries: ds}, nil
}

// RedeliverWebhook implements wayfinder.v1.RunService: a new delivery of
// the same body, signed afresh when it is sent, with its own attempts.
func (s *RunService) RedeliverWebhook(ctx context.Context, req *wfv1.RedeliverWebhookRequest) (*wfv1.WebhookDelivery, error) {
	if _, err := s.ownRun(ctx, req.GetRunId()); err != nil {
		return nil, err
	}
	if err := requireID("delivery_id", req.GetDeliveryId()); err != nil {
		return nil, err
	}
	d, err := s.cfg.Store.GetWebhookDelivery(ctx, req.GetDeliveryId())
	if err != nil {
		return nil, err
	}
	if d.RunId != req.GetRunId() {
		return nil, fmt.Errorf("webhook delivery %q: %w", req.GetDeliveryId(), fault.ErrNotFound)
	}
	q, ok := s.cfg.Queue.(webhookQueue)
	if !ok {
		return nil, errors.New("the server's queue cannot enqueue webhook deliveries")
	}
	id := uuid.NewString()
	if _, err := s.cfg.Store.CreateWebhookDelivery(ctx, store.NewWebhookDelivery{
		ID: id, RunID: d.RunId, EventSeq: d.EventSeq, Event: d.Event, URL: d.Url, Body: d.Body, RedeliveryOf: d.Id,
	}, q.EnqueueWebhookTx); err != nil {
		return nil, err
	}
	s.cfg.Logger.InfoContext(ctx, "webhook redelivery requested", "run_id", d.RunId, "delivery_id", id, "redelivery_of", d.Id)
	redelivery, err := s.cfg.Store.GetWebhookDelivery(ctx, id)
	if err != nil {
		return nil, err
	}
	return redelivery.WebhookDelivery, nil
}
