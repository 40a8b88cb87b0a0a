// Package events delivers "run X has new events" signals to the streams of
// this process. One LISTEN connection per process follows the store's NOTIFY
// channel and wakes the subscribers of that run. A wake-up is only a hint:
// subscribers read the events themselves from the store, so a slow or
// disconnected subscriber never slows a run or loses an event, and events
// written by any replica reach streams on every replica.
package events

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Hub fans NOTIFY wake-ups out to subscribers by run ID.
type Hub struct {
	pool    *pgxpool.Pool
	channel string
	logger  *slog.Logger

	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{}
}

// NewHub returns a hub listening on channel through pool.
func NewHub(pool *pgxpool.Pool, channel string, logger *slog.Logger) *Hub {
	return &Hub{pool: pool, channel: channel, logger: logger, subs: make(map[string]map[chan struct{}]struct{})}
}

// Subscribe returns a channel that receives a value (coalesced: capacity 1)
// whenever run runID may have new events, and a function that ends the
// subscription.
func (h *Hub) Subscribe(runID string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	if h.subs[runID] == nil {
		h.subs[runID] = make(map[chan struct{}]struct{})
	}
	h.subs[runID][ch] = struct{}{}
	h.mu.Unlock()
	return ch, func() {
		h.mu.Lock()
		delete(h.subs[runID], ch)
		if len(h.subs[runID]) == 0 {
			delete(h.subs, runID)
		}
		h.mu.Unlock()
	}
}

func (h *Hub) wake(runID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs[runID] {
		select {
		case ch <- struct{}{}:
		default: // already pending
		}
	}
}

// wakeAll wakes every subscriber; used after reconnecting, when
// notifications may have been missed.
func (h *Hub) wakeAll() {
	h.mu.Lock()
	ids := make([]string, 0, len(h.subs))
	for id := range h.subs {
		ids = append(ids, id)
	}
	h.mu.Unlock()
	for _, id := range ids {
		h.wake(id)
	}
}

// Run listens until ctx is done, reconnecting with backoff when the
// connection drops (a database restart).
func (h *Hub) Run(ctx context.Context) error {
	const initialBackoff = 100 * time.Millisecond
	backoff := initialBackoff
	for ctx.Err() == nil {
		listening, err := h.listen(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if listening {
			backoff = initialBackoff // the connection worked; this is a new outage
		}
		h.logger.WarnContext(ctx, "event listener disconnected; reconnecting", "error", err, "backoff", backoff)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
	return nil
}

// listen follows notifications until the connection fails; listening
// reports whether LISTEN had succeeded.
func (h *Hub) listen(ctx context.Context) (listening bool, err error) {
	pooled, err := h.pool.Acquire(ctx)
	if err != nil {
		return false, err
	}
	// A LISTEN connection is never returned to the pool: its state is
	// session-bound.
	conn := pooled.Hijack()
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{h.channel}.Sanitize()); err != nil {
		return false, err
	}
	h.wakeAll()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return true, err
		}
		h.wake(n.Payload)
	}
}
