package queue

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
)

// WebhookQueue is the River queue of webhook deliveries. It is apart from
// the runs' queue so that a slow receiver never holds a browser slot and a
// long run never delays a delivery.
const WebhookQueue = "webhooks"

// WebhookMaxAttempts is how many times a delivery is POSTed before it is
// given up as failed.
const WebhookMaxAttempts = 8

// WebhookArgs is the job that POSTs one webhook delivery (with retries).
// It names the stored delivery only: the body is in the delivery's row and
// the signing secret is taken from the run's sealed params when sending.
type WebhookArgs struct {
	DeliveryID string `json:"delivery_id"`
}

// Kind implements river.JobArgs.
func (WebhookArgs) Kind() string { return "wayfinder.webhook" }

// InsertOpts implements river.JobArgsWithInsertOpts.
func (WebhookArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: WebhookQueue, MaxAttempts: WebhookMaxAttempts}
}

// EnqueueWebhookTx inserts the job that sends a webhook delivery inside tx.
func (q *Queue) EnqueueWebhookTx(ctx context.Context, tx pgx.Tx, deliveryID string) error {
	if _, err := q.client.InsertTx(ctx, tx, WebhookArgs{DeliveryID: deliveryID}, nil); err != nil {
		return fmt.Errorf("insert webhook job: %w", err)
	}
	return nil
}

// ServeWebhooks makes this replica work webhook deliveries, at most
// maxWorkers at once. The queue must have been made with workers that
// include the webhook worker (Config.Workers).
func (q *Queue) ServeWebhooks(maxWorkers int) error {
	if err := q.client.Queues().Add(WebhookQueue, river.QueueConfig{MaxWorkers: maxWorkers}); err != nil {
		return fmt.Errorf("add webhook queue: %w", err)
	}
	return nil
}
