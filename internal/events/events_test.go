package events

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/wayfinder/wayfinder/internal/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

const testChannel = "wf_test_events"

// deliveryTimeout bounds every wait for a wake-up. Exceeding it is a
// failure (a lost wake-up), not a performance measurement.
const deliveryTimeout = 10 * time.Second

// reconnectTimeout covers the hub's reconnect backoff (at most 5s) plus
// delivery.
const reconnectTimeout = 15 * time.Second

func notify(t *testing.T, pool *pgxpool.Pool, payload string) {
	t.Helper()
	_, err := pool.Exec(t.Context(), `SELECT pg_notify($1, $2)`, testChannel, payload)
	require.NoError(t, err)
}

func waitWake(t *testing.T, ch <-chan struct{}, timeout time.Duration, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(timeout):
		t.Fatalf("%s: no wake-up within %s", what, timeout)
	}
}

func pending(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// sync notifies the sentinel run and waits for its wake-up. The hub handles
// notifications one at a time and in order, so once the sentinel is woken
// every notification sent before it has been handled.
func syncHub(t *testing.T, pool *pgxpool.Pool, sentinel <-chan struct{}) {
	t.Helper()
	notify(t, pool, "sentinel")
	waitWake(t, sentinel, deliveryTimeout, "sentinel")
}

func TestHub(t *testing.T) {
	t.Parallel()
	pool := storetest.NewPool(t)
	leaks := goleak.IgnoreCurrent()
	hub := NewHub(pool, testChannel, slog.New(slog.DiscardHandler))

	// The sentinel subscribes before the hub starts, so the wake-up of
	// every subscriber that follows a successful LISTEN tells us that the
	// hub is listening.
	sentinel, unsubscribeSentinel := hub.Subscribe("sentinel")
	defer unsubscribeSentinel()

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- hub.Run(ctx) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(deliveryTimeout):
			t.Fatal("Run did not return after its context was cancelled")
		}
	}
	defer stop()

	waitWake(t, sentinel, deliveryTimeout, "initial wake-up after LISTEN")

	// Subscribed after that wake-up, so only notifications wake them.
	runA, unsubscribeA := hub.Subscribe("run-a")
	defer unsubscribeA()
	runB, unsubscribeB := hub.Subscribe("run-b")

	t.Run("delivers to the run's subscribers only", func(t *testing.T) {
		notify(t, pool, "run-a")
		waitWake(t, runA, deliveryTimeout, "run-a")
		syncHub(t, pool, sentinel)
		require.False(t, pending(runB), "run-b was woken by run-a's notification")
		require.False(t, pending(runA), "run-a was woken twice")
	})

	t.Run("wake-ups coalesce and never block the hub", func(t *testing.T) {
		notify(t, pool, "run-a")
		notify(t, pool, "run-a")
		notify(t, pool, "run-a")
		syncHub(t, pool, sentinel)
		require.Equal(t, 1, cap(runA))
		require.Len(t, runA, 1)
		require.True(t, pending(runA))
		require.False(t, pending(runA))
		require.False(t, pending(runB))
	})

	t.Run("several subscribers of one run", func(t *testing.T) {
		runA2, unsubscribeA2 := hub.Subscribe("run-a")
		defer unsubscribeA2()
		notify(t, pool, "run-a")
		waitWake(t, runA, deliveryTimeout, "run-a, first subscriber")
		waitWake(t, runA2, deliveryTimeout, "run-a, second subscriber")
	})

	t.Run("unsubscribe", func(t *testing.T) {
		unsubscribeB()
		unsubscribeB() // idempotent
		hub.mu.Lock()
		_, ok := hub.subs["run-b"]
		hub.mu.Unlock()
		require.False(t, ok, "run-b still has subscribers")

		notify(t, pool, "run-b")
		syncHub(t, pool, sentinel)
		require.False(t, pending(runB), "an ended subscription was woken")
	})

	t.Run("reconnects after the connection drops", func(t *testing.T) {
		var terminated int
		require.NoError(t, pool.QueryRow(t.Context(), `
			SELECT count(*) FROM (
				SELECT pg_terminate_backend(pid) FROM pg_stat_activity
				WHERE datname = current_database() AND pid <> pg_backend_pid() AND query LIKE 'LISTEN%'
			) AS t`).Scan(&terminated))
		require.Equal(t, 1, terminated, "the hub's LISTEN connection was not found")

		// After reconnecting the hub wakes every subscriber, since
		// notifications may have been missed.
		waitWake(t, sentinel, reconnectTimeout, "wake-up after reconnecting")

		// A subscriber added after that is woken by a notification only.
		runC, unsubscribeC := hub.Subscribe("run-c")
		defer unsubscribeC()
		notify(t, pool, "run-c")
		waitWake(t, runC, deliveryTimeout, "run-c after reconnecting")
	})

	t.Run("Run returns when cancelled", func(t *testing.T) {
		tests := []struct {
			name string
			// listening: cancel only once the second hub is listening.
			listening bool
		}{
			{name: "cancelled before Run"},
			{name: "cancelled while listening", listening: true},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				other := NewHub(pool, testChannel, slog.New(slog.DiscardHandler))
				ready, unsubscribe := other.Subscribe("ready")
				defer unsubscribe()
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				if !tt.listening {
					cancel()
				}
				done := make(chan error, 1)
				go func() { done <- other.Run(ctx) }()
				if tt.listening {
					waitWake(t, ready, deliveryTimeout, "second hub listening")
					cancel()
				}
				select {
				case err := <-done:
					require.NoError(t, err)
				case <-time.After(deliveryTimeout):
					t.Fatal("Run did not return after its context was cancelled")
				}
			})
		}
	})

	stop()
	unsubscribeA()
	unsubscribeSentinel()
	hub.mu.Lock()
	require.Empty(t, hub.subs)
	hub.mu.Unlock()
	goleak.VerifyNone(t, leaks)
}

func TestSubscribeWithoutListener(t *testing.T) {
	t.Parallel()
	hub := NewHub(nil, testChannel, slog.New(slog.DiscardHandler))
	tests := []struct {
		name  string
		wakes []string
		want  map[string]bool
	}{
		{name: "no wake-ups", wakes: nil, want: map[string]bool{"a": false, "b": false}},
		{name: "one run", wakes: []string{"a"}, want: map[string]bool{"a": true, "b": false}},
		{name: "coalesced", wakes: []string{"a", "a", "a"}, want: map[string]bool{"a": true, "b": false}},
		{name: "unknown run", wakes: []string{"zzz"}, want: map[string]bool{"a": false, "b": false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a, unsubscribeA := hub.Subscribe(tt.name + "/a")
			defer unsubscribeA()
			b, unsubscribeB := hub.Subscribe(tt.name + "/b")
			defer unsubscribeB()
			for _, id := range tt.wakes {
				hub.wake(tt.name + "/" + id)
			}
			require.Equal(t, tt.want["a"], pending(a))
			require.Equal(t, tt.want["b"], pending(b))
			require.False(t, pending(a))
		})
	}
}
