package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/store"
)

// The deliveries' events (WebhookDelivery.event and the body's "event").
const (
	EventRunFinished       = "run.finished"
	EventApprovalRequested = "run.approval_requested"
)

// Body returns the JSON a delivery POSTs:
//
//	{"event": "run.finished", "run": <Run>, "delivery_id": "…", "time": "…"}
//
// run is the Run as the API returns it (protojson with proto field names,
// its params' secrets redacted); time is when the event happened (RFC 3339).
func Body(event string, run *wfv1.Run, deliveryID string, at time.Time) ([]byte, error) {
	raw, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(run)
	if err != nil {
		return nil, fmt.Errorf("encode run: %w", err)
	}
	return json.Marshal(struct {
		Event      string          `json:"event"`
		Run        json.RawMessage `json:"run"`
		DeliveryID string          `json:"delivery_id"`
		Time       string          `json:"time"`
	}{event, raw, deliveryID, at.UTC().Format(time.RFC3339Nano)})
}

// Enqueuer enqueues delivery jobs (queue.Queue).
type Enqueuer interface {
	EnqueueWebhookTx(ctx context.Context, tx pgx.Tx, deliveryID string) error
}

// Waker wakes subscribers of a key (events.Hub).
type Waker interface {
	Subscribe(key string) (<-chan struct{}, func())
}

// DispatcherConfig configures NewDispatcher.
type DispatcherConfig struct {
	Store *store.Store
	Queue Enqueuer
	// Hub wakes the dispatcher when a run with a webhook records a
	// FINISHED or APPROVAL_REQUESTED event (store.WebhookWakeKey).
	Hub    Waker
	Logger *slog.Logger
	// Interval is how often the dispatcher looks without a wake-up (a
	// safety net for missed notifications). Default 30s.
	Interval time.Duration
	// Lookback is how far back the first look goes, so that events
	// recorded while no dispatcher ran are delivered. Default 24h.
	Lookback time.Duration
}

// Dispatcher records a delivery, with its job, for every event that calls
// for one.
type Dispatcher struct {
	cfg DispatcherConfig
}

// NewDispatcher returns a Dispatcher.
func NewDispatcher(cfg DispatcherConfig) *Dispatcher {
	if cfg.Interval <= 0 {
		cfg.Interval = 30 * time.Second
	}
	if cfg.Lookback <= 0 {
		cfg.Lookback = 24 * time.Hour
	}
	return &Dispatcher{cfg: cfg}
}

// overlap is how far before its previous look the dispatcher looks again:
// an event is visible only once its transaction commits, a little after
// its time.
const overlap = time.Minute

// Run dispatches until ctx is done.
func (d *Dispatcher) Run(ctx context.Context) {
	wake, unsubscribe := d.cfg.Hub.Subscribe(store.WebhookWakeKey)
	defer unsubscribe()
	t := time.NewTicker(d.cfg.Interval)
	defer t.Stop()
	since := time.Now().Add(-d.cfg.Lookback)
	for {
		next, more, err := d.Dispatch(ctx, since)
		switch {
		case err != nil && ctx.Err() == nil:
			d.cfg.Logger.WarnContext(ctx, "dispatching webhooks", "error", err)
		case err == nil:
			since = next
		}
		if more && err == nil {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-t.C:
		}
	}
}

// Dispatch records the deliveries of events recorded after since that have
// none yet. It returns where the next look starts, and whether more events
// may be waiting (a full batch).
func (d *Dispatcher) Dispatch(ctx context.Context, since time.Time) (next time.Time, more bool, err error) {
	const batch = 100
	srcs, now, err := d.cfg.Store.WebhookSources(ctx, since, batch)
	if err != nil {
		return since, false, err
	}
	for _, src := range srcs {
		if err := d.dispatch(ctx, src); err != nil {
			return since, false, fmt.Errorf("run %s event %d: %w", src.Event.RunId, src.Event.Sequence, err)
		}
	}
	if len(srcs) == batch {
		return since, true, nil
	}
	return now.Add(-overlap), false, nil
}

func (d *Dispatcher) dispatch(ctx context.Context, src store.WebhookSource) error {
	ev := src.Event
	event := EventRunFinished
	run := ev.GetRun()
	if ev.Type == wfv1.RunEventType_RUN_EVENT_TYPE_APPROVAL_REQUESTED {
		// The run as it is now, with the status and request of the event.
		event = EventApprovalRequested
		cur, err := d.cfg.Store.GetRun(ctx, ev.RunId)
		if err != nil {
			return err
		}
		run = proto.Clone(cur).(*wfv1.Run)
		run.Status = ev.Status
		if a := ev.GetApproval(); a != nil {
			run.PendingApproval = a
		}
	}
	if run == nil {
		return fmt.Errorf("the %s event carries no run", ev.Type)
	}
	id := uuid.NewString()
	body, err := Body(event, run, id, ev.GetTime().AsTime())
	if err != nil {
		return err
	}
	created, err := d.cfg.Store.CreateWebhookDelivery(ctx, store.NewWebhookDelivery{
		ID: id, RunID: ev.RunId, EventSeq: ev.Sequence, Event: event, URL: src.Webhook.GetUrl(), Body: body,
	}, d.cfg.Queue.EnqueueWebhookTx)
	if err == nil && created {
		d.cfg.Logger.DebugContext(ctx, "webhook delivery recorded", "delivery_id", id, "run_id", ev.RunId, "event", event)
	}
	return err
}
