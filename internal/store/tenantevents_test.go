package store_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/events"
	"github.com/wayfinder/wayfinder/internal/store"
	"github.com/wayfinder/wayfinder/internal/store/storetest"
)

func seqsOf(rs []store.RunSeq) map[string]int64 {
	m := map[string]int64{}
	for _, r := range rs {
		m[r.RunID] = r.Seq
	}
	return m
}

// TestActiveRuns: live runs and recently ended ones of the tenant, never
// another tenant's, each with its newest event sequence.
func TestActiveRuns(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := t.Context()
	_, err := s.CreateTenant(ctx, &wfv1.Tenant{Id: "other"})
	require.NoError(t, err)
	q := &fakeQueue{jobID: 1}
	newRun := func(tn string) string {
		run, _, err := s.CreateRun(ctx, store.NewRun{Tenant: tn, Params: testParams(nil)}, q.enqueue)
		require.NoError(t, err)
		return run.Id
	}
	queued, running, ended, foreign := newRun("default"), newRun("default"), newRun("default"), newRun("other")
	startRun(t, s, running)
	_, err = s.FinishRun(ctx, ended, store.Outcome{Status: wfv1.RunStatus_RUN_STATUS_CANCELLED})
	require.NoError(t, err)

	active, now, err := s.ActiveRuns(ctx, "default", time.Now().Add(-time.Hour))
	require.NoError(t, err)
	require.WithinDuration(t, time.Now(), now, time.Minute)
	require.Equal(t, map[string]int64{queued: 1, running: 2, ended: 2}, seqsOf(active))
	require.NotContains(t, seqsOf(active), foreign)

	active, _, err = s.ActiveRuns(ctx, "default", now.Add(time.Second))
	require.NoError(t, err)
	require.Equal(t, map[string]int64{queued: 1, running: 2}, seqsOf(active), "a run ended before endedSince is listed")

	active, _, err = s.ActiveRuns(ctx, "nobody", time.Time{})
	require.NoError(t, err)
	require.Empty(t, active)
}

// TestListEventsAfter: per-run positions, type filter and the per-run limit.
func TestListEventsAfter(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := t.Context()
	q := &fakeQueue{jobID: 1}
	a, b := createRun(t, s, q, nil).Id, createRun(t, s, q, nil).Id
	startRun(t, s, a)
	startRun(t, s, b)
	for i := range 3 {
		for _, id := range []string{a, b} {
			_, err := s.AppendEvent(ctx, id, &wfv1.RunEvent{Type: wfv1.RunEventType_RUN_EVENT_TYPE_TOOL_CALLED, Message: fmt.Sprint(i)})
			require.NoError(t, err)
		}
	}
	// Each run: 1 QUEUED, 2 STARTED, 3-5 TOOL_CALLED.
	evs, err := s.ListEventsAfter(ctx, []store.RunSeq{{RunID: a, Seq: 3}, {RunID: b, Seq: 0}}, nil, 100)
	require.NoError(t, err)
	var got []string
	for _, ev := range evs {
		got = append(got, fmt.Sprintf("%s/%d", ev.RunId, ev.Sequence))
	}
	want := []string{fmt.Sprintf("%s/4", a), fmt.Sprintf("%s/5", a)}
	for i := 1; i <= 5; i++ {
		want = append(want, fmt.Sprintf("%s/%d", b, i))
	}
	if b < a {
		want = append(want[2:], want[:2]...)
	}
	require.Equal(t, want, got)

	evs, err = s.ListEventsAfter(ctx, []store.RunSeq{{RunID: a, Seq: 0}}, []wfv1.RunEventType{wfv1.RunEventType_RUN_EVENT_TYPE_STARTED}, 100)
	require.NoError(t, err)
	require.Len(t, evs, 1)
	require.Equal(t, wfv1.RunEventType_RUN_EVENT_TYPE_STARTED, evs[0].Type)

	evs, err = s.ListEventsAfter(ctx, []store.RunSeq{{RunID: a, Seq: 0}, {RunID: b, Seq: 0}}, nil, 2)
	require.NoError(t, err)
	require.Len(t, evs, 4, "two of each run")

	seqs, err := s.EventSeqsAt(ctx, []string{a, b}, evs[1].Time.AsTime())
	require.NoError(t, err)
	require.GreaterOrEqual(t, seqs[a], int64(2))
	seqs, err = s.EventSeqsAt(ctx, []string{a}, time.Now().Add(-time.Hour))
	require.NoError(t, err)
	require.Empty(t, seqs)
}

// TestTenantWakeUps: every event of a tenant's run wakes the tenant's
// subscribers on every hub listening on the store's channel; a webhook
// run's FINISHED event also wakes the webhook dispatchers.
func TestTenantWakeUps(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	hub := events.NewHub(pool, store.NotifyChannel, slog.New(slog.DiscardHandler))
	done := make(chan struct{})
	go func() { _ = hub.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	_, err := s.CreateTenant(ctx, &wfv1.Tenant{Id: "acme"})
	require.NoError(t, err)
	acme, unsub := hub.Subscribe(store.TenantWakeKey("acme"))
	defer unsub()
	hooks, unsubHooks := hub.Subscribe(store.WebhookWakeKey)
	defer unsubHooks()

	wait := func(ch <-chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("no wake-up for %s", what)
		}
	}
	// Once two sentinel notifications in a row woke their subscriber, the
	// hub listens and its initial wake-up of everyone is over.
	sentinel, unsubSentinel := hub.Subscribe("sentinel")
	defer unsubSentinel()
	require.Eventually(t, func() bool {
		_, err := pool.Exec(ctx, `SELECT pg_notify($1, 'sentinel')`, store.NotifyChannel)
		require.NoError(t, err)
		select {
		case <-sentinel:
			return true
		case <-time.After(100 * time.Millisecond):
			return false
		}
	}, 10*time.Second, time.Millisecond)
	_, err = pool.Exec(ctx, `SELECT pg_notify($1, 'sentinel')`, store.NotifyChannel)
	require.NoError(t, err)
	wait(sentinel, "the second sentinel")
	for _, ch := range []<-chan struct{}{acme, hooks} {
		select {
		case <-ch:
		default:
		}
	}

	q := &fakeQueue{jobID: 1}
	run, _, err := s.CreateRun(ctx, store.NewRun{Tenant: "acme", Params: testParams(nil)}, q.enqueue)
	require.NoError(t, err)
	plain := run.Id
	wait(acme, "a run's QUEUED")
	_, err = s.FinishRun(ctx, plain, store.Outcome{Status: wfv1.RunStatus_RUN_STATUS_COMPLETED})
	require.NoError(t, err)
	wait(acme, "a run's FINISHED")

	p := testParams(nil)
	p.Webhook = &wfv1.RunWebhook{Url: "https://hooks.example.com/", Secret: "[redacted]"}
	hooked, _, err := s.CreateRun(ctx, store.NewRun{Tenant: "acme", Params: p}, q.enqueue)
	require.NoError(t, err)
	// The hub handles notifications in order: once this one arrived, the
	// plain run's FINISHED has been handled too.
	wait(acme, "a webhook run's QUEUED")
	select {
	case <-hooks:
		t.Fatal("a run without a webhook woke the webhook dispatchers")
	default:
	}
	_, err = s.FinishRun(ctx, hooked.Id, store.Outcome{Status: wfv1.RunStatus_RUN_STATUS_COMPLETED})
	require.NoError(t, err)
	wait(hooks, "a webhook run's FINISHED")
}

// BenchmarkAppendEvent measures what the tenant and webhook wake-ups
// (the run_events trigger) add to appending an event.
func BenchmarkAppendEvent(b *testing.B) {
	for _, trigger := range []string{"on", "off"} {
		b.Run("trigger="+trigger, func(b *testing.B) {
			pool := storetest.NewPool(b)
			s := store.New(pool)
			ctx := b.Context()
			if trigger == "off" {
				_, err := pool.Exec(ctx, `ALTER TABLE run_events DISABLE TRIGGER run_events_notify`)
				require.NoError(b, err)
			}
			run, _, err := s.CreateRun(ctx, store.NewRun{Params: testParams(nil)}, (&fakeQueue{jobID: 1}).enqueue)
			require.NoError(b, err)
			ev := &wfv1.RunEvent{Type: wfv1.RunEventType_RUN_EVENT_TYPE_TOOL_CALLED, Message: "step 1: browser_click"}
			b.ResetTimer()
			for b.Loop() {
				if _, err := s.AppendEvent(ctx, run.Id, ev); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEventTrigger measures the trigger alone, without round trips:
// one statement inserts 1000 events, with the trigger on and off; the
// difference per op divided by 1000 is its cost per event.
func BenchmarkEventTrigger(b *testing.B) {
	pool := storetest.NewPool(b)
	s := store.New(pool)
	ctx := b.Context()
	run, _, err := s.CreateRun(ctx, store.NewRun{Params: testParams(nil)}, (&fakeQueue{jobID: 1}).enqueue)
	require.NoError(b, err)
	for _, trigger := range []string{"on", "off", "on", "off"} {
		b.Run("trigger="+trigger, func(b *testing.B) {
			_, err := pool.Exec(ctx, `ALTER TABLE run_events `+map[string]string{"on": "ENABLE", "off": "DISABLE"}[trigger]+` TRIGGER run_events_notify`)
			require.NoError(b, err)
			for b.Loop() {
				_, err := pool.Exec(ctx, `
					WITH base AS (SELECT coalesce(max(seq), 0) AS s FROM run_events WHERE run_id = $1)
					INSERT INTO run_events (run_id, seq, type, event)
					SELECT $1, base.s + g, 'RUN_EVENT_TYPE_TOOL_CALLED', '{}' FROM base, generate_series(1, 1000) g`, run.Id)
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkTenantPoll measures one look of a tenant stream that finds one
// new event: the active-run query and the read of the new event, with 20
// live runs in the tenant and 1000 finished ones in it and another tenant.
func BenchmarkTenantPoll(b *testing.B) {
	pool := storetest.NewPool(b)
	s := store.New(pool)
	ctx := b.Context()
	_, err := s.CreateTenant(ctx, &wfv1.Tenant{Id: "other"})
	require.NoError(b, err)
	q := &fakeQueue{jobID: 1}
	for i := range 2000 {
		tn := "default"
		if i%2 == 1 {
			tn = "other"
		}
		run, _, err := s.CreateRun(ctx, store.NewRun{Tenant: tn, Params: testParams(nil)}, q.enqueue)
		require.NoError(b, err)
		_, err = s.FinishRun(ctx, run.Id, store.Outcome{Status: wfv1.RunStatus_RUN_STATUS_COMPLETED})
		require.NoError(b, err)
	}
	var live []string
	for range 20 {
		run, _, err := s.CreateRun(ctx, store.NewRun{Params: testParams(nil)}, q.enqueue)
		require.NoError(b, err)
		live = append(live, run.Id)
	}
	_, err = pool.Exec(ctx, `ANALYZE`)
	require.NoError(b, err)
	since := time.Now()
	b.ResetTimer()
	for b.Loop() {
		active, _, err := s.ActiveRuns(ctx, "default", since)
		if err != nil || len(active) != len(live) {
			b.Fatal(err, len(active))
		}
		evs, err := s.ListEventsAfter(ctx, []store.RunSeq{{RunID: live[0], Seq: 0}}, nil, 100)
		if err != nil || len(evs) != 1 {
			b.Fatal(err, len(evs))
		}
	}
}
