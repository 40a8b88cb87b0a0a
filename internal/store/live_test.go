package store_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/events"
	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/store"
)

// liveRun returns a started run that has a live session.
func liveRun(t *testing.T, s *store.Store) *wfv1.Run {
	t.Helper()
	run := createRun(t, s, &fakeQueue{jobID: 1}, nil)
	startRun(t, s, run.Id)
	require.NoError(t, s.RegisterLiveSession(t.Context(), run.Id, "host:1"))
	return run
}

func lastEvent(t *testing.T, s *store.Store, runID string) *wfv1.RunEvent {
	t.Helper()
	evs := listEvents(t, s, runID)
	return evs[len(evs)-1]
}

func auditKinds(t *testing.T, s *store.Store, runID string) []string {
	t.Helper()
	evs, _, err := s.ListAudit(t.Context(), store.AuditFilter{Tenant: "default", RunID: runID, PageSize: 100})
	require.NoError(t, err)
	var kinds []string
	for i := len(evs) - 1; i >= 0; i-- {
		kinds = append(kinds, evs[i].Kind)
	}
	return kinds
}

func TestLiveSession(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t)
	ctx := t.Context()
	run := createRun(t, s, &fakeQueue{jobID: 1}, nil)

	_, err := s.LiveSession(ctx, run.Id)
	require.ErrorIs(t, err, store.ErrLiveUnavailable)
	require.ErrorIs(t, err, fault.ErrFailedPrecondition)
	require.ErrorIs(t, s.WatchLive(ctx, run.Id, 15*time.Second), store.ErrLiveUnavailable)

	require.NoError(t, s.RegisterLiveSession(ctx, run.Id, "host:1"))
	_, err = s.LiveSession(ctx, run.Id)
	require.ErrorIs(t, err, store.ErrLiveUnavailable, "a queued run has no live view, whatever row is left")

	startRun(t, s, run.Id)
	ls, err := s.LiveSession(ctx, run.Id)
	require.NoError(t, err)
	require.Equal(t, "host:1", ls.Worker)
	require.False(t, ls.Watched)

	require.NoError(t, s.WatchLive(ctx, run.Id, 15*time.Second))
	require.NoError(t, s.WatchLive(ctx, run.Id, time.Millisecond), "a shorter watch never shortens it")
	ls, err = s.LiveSession(ctx, run.Id)
	require.NoError(t, err)
	require.True(t, ls.Watched)

	// A resumed run's worker takes the row over and drops what the dead
	// worker left.
	frame := &wfv1.LiveFrame{Sequence: 9, Time: timestamppb.Now(), Data: []byte("jpeg"), Width: 10, Height: 20}
	require.NoError(t, s.PutLiveFrame(ctx, run.Id, frame))
	require.NoError(t, s.RegisterLiveSession(ctx, run.Id, "host:2"))
	again, err := s.LiveSession(ctx, run.Id)
	require.NoError(t, err)
	require.Equal(t, "host:2", again.Worker)
	require.True(t, again.StartedAt.After(ls.StartedAt), "a new session has a new start")
	require.Zero(t, count(t, pool, `SELECT count(*) FROM live_frames WHERE run_id = $1`, run.Id))

	require.NoError(t, s.PutLiveFrame(ctx, run.Id, frame))
	require.NoError(t, s.EndLiveSession(ctx, run.Id))
	_, err = s.LiveSession(ctx, run.Id)
	require.ErrorIs(t, err, store.ErrLiveUnavailable)
	require.Zero(t, count(t, pool, `SELECT count(*) FROM live_frames WHERE run_id = $1`, run.Id))

	_, err = s.LiveSession(ctx, "not-a-uuid")
	require.ErrorIs(t, err, fault.ErrNotFound)
}

func TestLiveFrames(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := t.Context()
	run := liveRun(t, s)

	got, err := s.LiveFrame(ctx, run.Id, 0)
	require.NoError(t, err)
	require.Nil(t, got)

	at := time.Now().UTC().Truncate(time.Microsecond)
	for _, seq := range []int64{1, 2} {
		f := &wfv1.LiveFrame{Sequence: seq, Time: timestamppb.New(at), Data: []byte{byte(seq)}, Width: 1280, Height: 800, Url: "https://example.com/"}
		require.NoError(t, s.PutLiveFrame(ctx, run.Id, f))
		got, err = s.LiveFrame(ctx, run.Id, seq-1)
		require.NoError(t, err)
		require.True(t, proto.Equal(f, got), "%v != %v", f, got)
	}
	got, err = s.LiveFrame(ctx, run.Id, 2)
	require.NoError(t, err)
	require.Nil(t, got, "no frame newer than the one read")
}

func TestTakeoverLifecycle(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := t.Context()
	run := liveRun(t, s)

	tk, err := s.RequestTakeover(ctx, run.Id, "key:k1")
	require.NoError(t, err)
	require.Equal(t, wfv1.TakeoverState_TAKEOVER_STATE_REQUESTED, tk.State)
	require.Equal(t, "key:k1", tk.RequestedBy)
	require.Equal(t, run.Id, tk.RunId)
	require.NotNil(t, tk.RequestTime)
	ev := lastEvent(t, s, run.Id)
	require.Equal(t, wfv1.RunEventType_RUN_EVENT_TYPE_TAKEOVER, ev.Type)
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_RUNNING, ev.Status)
	require.True(t, proto.Equal(tk, ev.GetTakeover()))
	require.Contains(t, ev.Message, "key:k1")

	got := getRun(t, s, run.Id)
	require.Equal(t, tk.Id, got.GetTakeover().GetId(), "GetRun carries the open takeover")
	require.Equal(t, wfv1.TakeoverState_TAKEOVER_STATE_REQUESTED, got.GetTakeover().GetState())
	require.True(t, tk.RequestTime.AsTime().Equal(got.GetTakeover().GetRequestTime().AsTime()))
	list, _, err := s.ListRuns(ctx, store.ListRunsFilter{})
	require.NoError(t, err)
	require.Equal(t, tk.Id, list[0].GetTakeover().GetId(), "listed runs carry their open takeover")

	_, err = s.RequestTakeover(ctx, run.Id, "key:k2")
	require.ErrorIs(t, err, store.ErrTakeoverInProgress)
	require.ErrorIs(t, err, fault.ErrFailedPrecondition)

	require.ErrorIs(t, s.AppendLiveInputs(ctx, run.Id, tk.Id, []*wfv1.LiveInput{{Event: &wfv1.LiveInput_Text{Text: "x"}}}),
		store.ErrTakeoverNotActive, "input before the takeover is active")

	open, handBack, err := s.OpenTakeover(ctx, run.Id)
	require.NoError(t, err)
	require.False(t, handBack)
	require.True(t, proto.Equal(tk, open))

	active, changed, err := s.UpdateTakeover(ctx, run.Id, &wfv1.Takeover{Id: tk.Id, State: wfv1.TakeoverState_TAKEOVER_STATE_ACTIVE})
	require.NoError(t, err)
	require.True(t, changed)
	require.Equal(t, wfv1.TakeoverState_TAKEOVER_STATE_ACTIVE, active.State)
	require.NotNil(t, active.StartTime)
	require.Equal(t, wfv1.TakeoverState_TAKEOVER_STATE_ACTIVE, lastEvent(t, s, run.Id).GetTakeover().GetState())
	require.NotNil(t, getRun(t, s, run.Id).GetTakeover().GetStartTime())

	_, changed, err = s.UpdateTakeover(ctx, run.Id, &wfv1.Takeover{Id: tk.Id, State: wfv1.TakeoverState_TAKEOVER_STATE_ACTIVE})
	require.NoError(t, err)
	require.False(t, changed, "activation is conditional on REQUESTED")

	// Input, in order; applied input is deleted.
	var in []*wfv1.LiveInput
	for i := range 5 {
		in = append(in, &wfv1.LiveInput{Event: &wfv1.LiveInput_Mouse{Mouse: &wfv1.MouseInput{Type: wfv1.MouseInput_TYPE_MOVE, X: float64(i), Y: 1}}})
	}
	in = append(in, &wfv1.LiveInput{Event: &wfv1.LiveInput_Key{Key: &wfv1.KeyInput{Type: wfv1.KeyInput_TYPE_DOWN, Key: "Enter", Code: "Enter"}}})
	require.NoError(t, s.AppendLiveInputs(ctx, run.Id, tk.Id, in[:3]))
	require.NoError(t, s.AppendLiveInputs(ctx, run.Id, tk.Id, in[3:]))
	stored, err := s.LiveInputs(ctx, run.Id, 0, 100)
	require.NoError(t, err)
	require.Len(t, stored, len(in))
	for i := range in {
		require.True(t, proto.Equal(in[i], stored[i].Input), "input %d out of order: %v", i, stored[i].Input)
		require.Equal(t, tk.Id, stored[i].TakeoverID)
		if i > 0 {
			require.Greater(t, stored[i].Seq, stored[i-1].Seq)
		}
	}
	require.NoError(t, s.DeleteLiveInputs(ctx, run.Id, stored[2].Seq))
	rest, err := s.LiveInputs(ctx, run.Id, 0, 100)
	require.NoError(t, err)
	require.Len(t, rest, 3)
	require.Equal(t, stored[3].Seq, rest[0].Seq)
	after, err := s.LiveInputs(ctx, run.Id, stored[4].Seq, 100)
	require.NoError(t, err)
	require.Len(t, after, 1)

	// Hand back: marked, then the worker ends it.
	_, err = s.HandBackTakeover(ctx, run.Id, uuid.NewString(), "key:k1", "")
	require.ErrorIs(t, err, store.ErrTakeoverNotActive)
	hb, err := s.HandBackTakeover(ctx, run.Id, tk.Id, "key:k1", "the form is filled")
	require.NoError(t, err)
	require.Equal(t, wfv1.TakeoverState_TAKEOVER_STATE_ACTIVE, hb.State, "the worker ends an active takeover")
	_, handBack, err = s.OpenTakeover(ctx, run.Id)
	require.NoError(t, err)
	require.True(t, handBack)
	require.ErrorIs(t, s.AppendLiveInputs(ctx, run.Id, tk.Id, in[:1]), store.ErrTakeoverNotActive, "input after the hand-back")

	ended, changed, err := s.UpdateTakeover(ctx, run.Id, &wfv1.Takeover{Id: tk.Id, State: wfv1.TakeoverState_TAKEOVER_STATE_ENDED, EndReason: store.TakeoverHandedBack})
	require.NoError(t, err)
	require.True(t, changed)
	require.Equal(t, wfv1.TakeoverState_TAKEOVER_STATE_ENDED, ended.State)
	require.Equal(t, store.TakeoverHandedBack, ended.EndReason)
	require.Equal(t, "the form is filled", ended.Note, "the note given at hand-back is kept")
	require.NotNil(t, ended.EndTime)
	ev = lastEvent(t, s, run.Id)
	require.Equal(t, wfv1.RunEventType_RUN_EVENT_TYPE_TAKEOVER, ev.Type)
	require.Equal(t, "key:k1 handed the browser back", ev.Message)
	require.Nil(t, getRun(t, s, run.Id).GetTakeover(), "an ended takeover is not the run's")
	_, changed, err = s.UpdateTakeover(ctx, run.Id, &wfv1.Takeover{Id: tk.Id, State: wfv1.TakeoverState_TAKEOVER_STATE_ENDED, EndReason: store.TakeoverIdle})
	require.NoError(t, err)
	require.False(t, changed, "an ended takeover stays as it ended")

	require.NoError(t, s.SetTakeoverStep(ctx, run.Id, tk.Id, 4))
	evs := listEvents(t, s, run.Id)
	require.Equal(t, []wfv1.TakeoverState{wfv1.TakeoverState_TAKEOVER_STATE_REQUESTED, wfv1.TakeoverState_TAKEOVER_STATE_ACTIVE, wfv1.TakeoverState_TAKEOVER_STATE_ENDED},
		takeoverStates(evs), "one TAKEOVER event per change")
	for i := range evs {
		require.Equal(t, int64(i+1), evs[i].Sequence, "sequences have no gaps")
	}
	require.Equal(t, []string{store.AuditTakeoverRequested, store.AuditTakeoverStarted, store.AuditTakeoverEnded}, auditKinds(t, s, run.Id))
	require.ErrorIs(t, s.SetTakeoverStep(ctx, run.Id, uuid.NewString(), 4), fault.ErrNotFound)

	// The run is free for the next one.
	next, err := s.RequestTakeover(ctx, run.Id, "local")
	require.NoError(t, err)
	require.NotEqual(t, tk.Id, next.Id)
}

func takeoverStates(evs []*wfv1.RunEvent) []wfv1.TakeoverState {
	var out []wfv1.TakeoverState
	for _, ev := range evs {
		if ev.Type == wfv1.RunEventType_RUN_EVENT_TYPE_TAKEOVER {
			out = append(out, ev.GetTakeover().GetState())
		}
	}
	return out
}

// Handing back a takeover that is still REQUESTED withdraws it; the worker's
// later activation matches nothing.
func TestTakeoverWithdrawn(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := t.Context()
	run := liveRun(t, s)
	tk, err := s.RequestTakeover(ctx, run.Id, "local")
	require.NoError(t, err)

	w, err := s.HandBackTakeover(ctx, run.Id, tk.Id, "local", "never mind")
	require.NoError(t, err)
	require.Equal(t, wfv1.TakeoverState_TAKEOVER_STATE_ENDED, w.State)
	require.Equal(t, store.TakeoverWithdrawn, w.EndReason)
	require.Equal(t, "local withdrew the takeover request", lastEvent(t, s, run.Id).Message)
	open, _, err := s.OpenTakeover(ctx, run.Id)
	require.NoError(t, err)
	require.Nil(t, open)

	stored, changed, err := s.UpdateTakeover(ctx, run.Id, &wfv1.Takeover{Id: tk.Id, State: wfv1.TakeoverState_TAKEOVER_STATE_ACTIVE})
	require.NoError(t, err)
	require.False(t, changed)
	require.Equal(t, wfv1.TakeoverState_TAKEOVER_STATE_ENDED, stored.State, "the stored takeover tells the worker it was withdrawn")
	_, err = s.HandBackTakeover(ctx, run.Id, tk.Id, "local", "")
	require.ErrorIs(t, err, store.ErrTakeoverNotActive, "handed back twice")
	require.Equal(t, []string{store.AuditTakeoverRequested, store.AuditTakeoverEnded}, auditKinds(t, s, run.Id))
}

func TestTakeoverUnavailable(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t)
	ctx := t.Context()

	run := createRun(t, s, &fakeQueue{jobID: 1}, nil)
	_, err := s.RequestTakeover(ctx, run.Id, "local")
	require.ErrorIs(t, err, store.ErrLiveUnavailable, "a queued run")
	startRun(t, s, run.Id)
	_, err = s.RequestTakeover(ctx, run.Id, "local")
	require.ErrorIs(t, err, store.ErrLiveUnavailable, "no worker holds its browser")

	require.NoError(t, s.RegisterLiveSession(ctx, run.Id, "host:1"))
	_, err = s.OpenApproval(ctx, run.Id, &wfv1.ApprovalRequest{Source: "model", Action: "pay"}, nil)
	require.NoError(t, err)
	tk, err := s.RequestTakeover(ctx, run.Id, "local")
	require.NoError(t, err, "a run that awaits approval can be taken over")
	require.Equal(t, wfv1.RunStatus_RUN_STATUS_AWAITING_APPROVAL, lastEvent(t, s, run.Id).Status)

	// The run ends with the takeover open: it ends with it, after FINISHED
	// without another event.
	_, err = s.FinishRun(ctx, run.Id, store.Outcome{Status: wfv1.RunStatus_RUN_STATUS_CANCELLED})
	require.NoError(t, err)
	n := len(listEvents(t, s, run.Id))
	ended, changed, err := s.UpdateTakeover(ctx, run.Id, &wfv1.Takeover{Id: tk.Id, State: wfv1.TakeoverState_TAKEOVER_STATE_ENDED, EndReason: store.TakeoverRunEnded})
	require.NoError(t, err)
	require.True(t, changed)
	require.Equal(t, store.TakeoverRunEnded, ended.EndReason)
	require.Len(t, listEvents(t, s, run.Id), n, "FINISHED stays the last event")
	require.Equal(t, wfv1.RunEventType_RUN_EVENT_TYPE_FINISHED, lastEvent(t, s, run.Id).Type)
	_, err = s.RequestTakeover(ctx, run.Id, "local")
	require.ErrorIs(t, err, store.ErrLiveUnavailable, "a finished run")

	_, err = s.RequestTakeover(ctx, uuid.NewString(), "local")
	require.ErrorIs(t, err, fault.ErrNotFound)
}

// Every write a reader waits for wakes the hub key "live:<run>".
// Each write wakes the followers of its key only: control changes wake
// LiveKey, input LiveInputKey (the worker), frames LiveFrameKey (remote
// viewers), so that frames and mouse moves do not wake every follower.
func TestLiveNotifications(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t)
	ctx := t.Context()
	run := createRun(t, s, &fakeQueue{jobID: 1}, nil)
	startRun(t, s, run.Id)
	hub := startHub(t, pool)
	keys := map[string]string{"control": store.LiveKey(run.Id), "input": store.LiveInputKey(run.Id), "frame": store.LiveFrameKey(run.Id)}
	require.Len(t, map[string]bool{keys["control"]: true, keys["input"]: true, keys["frame"]: true}, 3, "distinct keys")
	wakes := map[string]<-chan struct{}{}
	for name, key := range keys {
		ch, unsubscribe := hub.Subscribe(key)
		defer unsubscribe()
		wakes[name] = ch
	}
	sentinel, unsubscribeSentinel := hub.Subscribe("sentinel")
	defer unsubscribeSentinel()
	// Notifications are handled in order: once a sentinel sent after a
	// write arrives, the write's wake-ups have been handed out. The hub
	// listens once a sentinel arrives at all (it may have started
	// listening before or after the subscriptions).
	require.Eventually(t, func() bool {
		_, err := pool.Exec(ctx, `SELECT pg_notify($1, 'sentinel')`, store.NotifyChannel)
		require.NoError(t, err)
		select {
		case <-sentinel:
			return true
		case <-time.After(100 * time.Millisecond):
			return false
		}
	}, 30*time.Second, time.Millisecond, "the hub listens")
	settle := func() {
		key := "sentinel-" + uuid.NewString()
		ch, unsubscribe := hub.Subscribe(key)
		defer unsubscribe()
		_, err := pool.Exec(ctx, `SELECT pg_notify($1, $2)`, store.NotifyChannel, key)
		require.NoError(t, err)
		waitFor(t, ch, "sentinel")
	}
	settle()
	for _, ch := range wakes {
		drain(ch)
	}

	var tk *wfv1.Takeover
	steps := []struct {
		name  string
		wakes string
		write func() error
	}{
		{"register", "control", func() error { return s.RegisterLiveSession(ctx, run.Id, "host:1") }},
		{"watch", "control", func() error { return s.WatchLive(ctx, run.Id, time.Minute) }},
		{"frame", "frame", func() error {
			return s.PutLiveFrame(ctx, run.Id, &wfv1.LiveFrame{Sequence: 1, Time: timestamppb.Now(), Data: []byte("j")})
		}},
		{"request", "control", func() (err error) { tk, err = s.RequestTakeover(ctx, run.Id, "local"); return err }},
		{"activate", "control", func() error {
			_, _, err := s.UpdateTakeover(ctx, run.Id, &wfv1.Takeover{Id: tk.Id, State: wfv1.TakeoverState_TAKEOVER_STATE_ACTIVE})
			return err
		}},
		{"input", "input", func() error {
			return s.AppendLiveInputs(ctx, run.Id, tk.Id, []*wfv1.LiveInput{{Event: &wfv1.LiveInput_Text{Text: "a"}}})
		}},
		{"hand back", "control", func() error { _, err := s.HandBackTakeover(ctx, run.Id, tk.Id, "local", ""); return err }},
		{"end", "control", func() error {
			_, _, err := s.UpdateTakeover(ctx, run.Id, &wfv1.Takeover{Id: tk.Id, State: wfv1.TakeoverState_TAKEOVER_STATE_ENDED, EndReason: store.TakeoverHandedBack})
			return err
		}},
		{"end session", "control", func() error { return s.EndLiveSession(ctx, run.Id) }},
	}
	for _, st := range steps {
		require.NoError(t, st.write(), st.name)
		settle()
		for name, ch := range wakes {
			select {
			case <-ch:
				require.Equal(t, st.wakes, name, "%s woke %s", st.name, name)
			default:
				require.NotEqual(t, st.wakes, name, "%s did not wake %s", st.name, name)
			}
		}
	}
}

func startHub(t *testing.T, pool *pgxpool.Pool) *events.Hub {
	t.Helper()
	hub := events.NewHub(pool, store.NotifyChannel, slog.New(slog.DiscardHandler))
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = hub.Run(ctx); close(done) }()
	t.Cleanup(func() { stop(); <-done })
	return hub
}

func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no wake-up", what)
	}
}

func drain(ch <-chan struct{}) {
	select {
	case <-ch:
	default:
	}
}

// Two appends at once commit in the order of their sequence numbers: the
// second draws its numbers only once the first has committed, so a reader
// that has seen the second's rows never misses the first's.
func TestLiveInputsCommitOrder(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t)
	ctx := t.Context()
	run := liveRun(t, s)
	tk, err := s.RequestTakeover(ctx, run.Id, "local")
	require.NoError(t, err)
	_, _, err = s.UpdateTakeover(ctx, run.Id, &wfv1.Takeover{Id: tk.Id, State: wfv1.TakeoverState_TAKEOVER_STATE_ACTIVE})
	require.NoError(t, err)

	// Hold the appends at their INSERT.
	hold, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = hold.Rollback(context.Background()) }()
	_, err = hold.Exec(ctx, `LOCK TABLE live_inputs IN SHARE MODE`)
	require.NoError(t, err)

	waiting := func(query string) int {
		var n int
		require.NoError(t, pool.QueryRow(ctx, `
			SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%' || $1 || '%'`, query).Scan(&n))
		return n
	}
	text := func(s string) []*wfv1.LiveInput { return []*wfv1.LiveInput{{Event: &wfv1.LiveInput_Text{Text: s}}} }
	first, second := make(chan error, 1), make(chan error, 1)
	go func() { first <- s.AppendLiveInputs(ctx, run.Id, tk.Id, text("first")) }()
	require.Eventually(t, func() bool { return waiting("INSERT INTO live_inputs") == 1 }, 30*time.Second, 5*time.Millisecond)
	go func() { second <- s.AppendLiveInputs(ctx, run.Id, tk.Id, text("second")) }()
	require.Eventually(t, func() bool { return waiting("FROM takeovers WHERE id") == 1 }, 30*time.Second, 5*time.Millisecond,
		"the second append waits for the first at the takeover")
	require.Equal(t, 1, waiting("INSERT INTO live_inputs"), "only the first append reached its INSERT")

	require.NoError(t, hold.Rollback(ctx))
	require.NoError(t, <-first)
	require.NoError(t, <-second)
	stored, err := s.LiveInputs(ctx, run.Id, 0, 10)
	require.NoError(t, err)
	require.Len(t, stored, 2)
	require.Equal(t, []string{"first", "second"}, []string{stored[0].Input.GetText(), stored[1].Input.GetText()})
}

// A run that finishes loses its live session, frame and pending input,
// even when no worker removes them (one that was killed): typed text does
// not rest in the database.
func TestLiveDataDroppedWhenRunFinishes(t *testing.T) {
	t.Parallel()
	s, pool := newStore(t)
	ctx := t.Context()
	run := liveRun(t, s)
	tk, err := s.RequestTakeover(ctx, run.Id, "local")
	require.NoError(t, err)
	_, _, err = s.UpdateTakeover(ctx, run.Id, &wfv1.Takeover{Id: tk.Id, State: wfv1.TakeoverState_TAKEOVER_STATE_ACTIVE})
	require.NoError(t, err)
	require.NoError(t, s.AppendLiveInputs(ctx, run.Id, tk.Id, []*wfv1.LiveInput{{Event: &wfv1.LiveInput_Text{Text: "hunter2"}}}))
	require.NoError(t, s.PutLiveFrame(ctx, run.Id, &wfv1.LiveFrame{Sequence: 1, Time: timestamppb.Now(), Data: []byte("j")}))

	_, err = s.FinishRun(ctx, run.Id, store.Outcome{Status: wfv1.RunStatus_RUN_STATUS_ERROR})
	require.NoError(t, err)
	for _, table := range []string{"live_inputs", "live_frames", "live_sessions"} {
		var n int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM `+table+` WHERE run_id = $1`, run.Id).Scan(&n))
		require.Zero(t, n, table)
	}
}
