package api

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/store"
	"github.com/wayfinder/wayfinder/internal/store/storetest"
	"github.com/wayfinder/wayfinder/internal/tenant"
)

// liveTestStore returns a store on a fresh migrated database.
func liveTestStore(t *testing.T) *store.Store {
	t.Helper()
	return store.New(storetest.NewPool(t))
}

// liveRun creates a started run of the default tenant; with a live
// session when live is set.
func liveRun(t *testing.T, st *store.Store, live bool) *wfv1.Run {
	t.Helper()
	ctx := t.Context()
	run, _, err := st.CreateRun(ctx, store.NewRun{Params: &wfv1.RunParams{Goal: "g", StartUrl: "https://example.com"}},
		func(context.Context, pgx.Tx, string) (int64, error) { return 1, nil })
	require.NoError(t, err)
	_, _, err = st.StartRun(ctx, run.Id)
	require.NoError(t, err)
	if live {
		require.NoError(t, st.RegisterLiveSession(ctx, run.Id, "worker:1"))
	}
	return run
}

func reasonOf(t *testing.T, err error) string {
	t.Helper()
	st, ok := status.FromError(err)
	require.True(t, ok, "not a status: %v", err)
	require.Equal(t, codes.FailedPrecondition, st.Code(), "%v", err)
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info.Reason
		}
	}
	t.Fatalf("no ErrorInfo in %v", err)
	return ""
}

func codeOf(err error) codes.Code {
	return status.Code(toStatus(context.Background(), slog.New(slog.DiscardHandler), "test", err))
}

func click(x, y float64) *wfv1.LiveInput {
	return &wfv1.LiveInput{Event: &wfv1.LiveInput_Mouse{Mouse: &wfv1.MouseInput{
		Type: wfv1.MouseInput_TYPE_DOWN, X: x, Y: y, Button: wfv1.MouseInput_BUTTON_LEFT, ClickCount: 1}}}
}

// TestLiveService runs the LiveService against one private Postgres.
func TestLiveService(t *testing.T) {
	st := liveTestStore(t)
	svc := NewLiveService(LiveConfig{Store: st})
	owner := tenant.With(context.Background(), tenant.Caller{Tenant: tenant.Default, KeyID: "k1"})
	intruder := asTenant("other")

	t.Run("tenant isolation", func(t *testing.T) {
		run := liveRun(t, st, true)
		tk, err := svc.TakeOver(owner, &wfv1.TakeOverRequest{RunId: run.Id})
		require.NoError(t, err)

		_, err = svc.TakeOver(intruder, &wfv1.TakeOverRequest{RunId: run.Id})
		require.Equal(t, codes.NotFound, codeOf(err), "TakeOver: %v", err)
		_, err = svc.SendLiveInput(intruder, &wfv1.SendLiveInputRequest{RunId: run.Id, TakeoverId: tk.Id, Events: []*wfv1.LiveInput{click(1, 1)}})
		require.Equal(t, codes.NotFound, codeOf(err), "SendLiveInput: %v", err)
		_, err = svc.HandBack(intruder, &wfv1.HandBackRequest{RunId: run.Id, TakeoverId: tk.Id})
		require.Equal(t, codes.NotFound, codeOf(err), "HandBack: %v", err)
		sent := 0
		err = svc.FollowLive(intruder, &wfv1.WatchLiveRequest{RunId: run.Id}, func(*wfv1.LiveFrame) error { sent++; return nil })
		require.Equal(t, codes.NotFound, codeOf(err), "WatchLive: %v", err)
		require.Zero(t, sent)

		open, _, err := st.OpenTakeover(t.Context(), run.Id)
		require.NoError(t, err)
		require.Equal(t, tk.Id, open.Id, "the intruder's hand-back changed nothing")
		require.Equal(t, wfv1.TakeoverState_TAKEOVER_STATE_REQUESTED, open.State)
	})

	t.Run("reasons", func(t *testing.T) {
		run := liveRun(t, st, false)
		_, err := svc.TakeOver(owner, &wfv1.TakeOverRequest{RunId: run.Id})
		require.Equal(t, ReasonLiveUnavailable, reasonOf(t, err))
		err = svc.FollowLive(owner, &wfv1.WatchLiveRequest{RunId: run.Id}, func(*wfv1.LiveFrame) error { return nil })
		require.Equal(t, ReasonLiveUnavailable, reasonOf(t, err))

		require.NoError(t, st.RegisterLiveSession(t.Context(), run.Id, "worker:1"))
		tk, err := svc.TakeOver(owner, &wfv1.TakeOverRequest{RunId: run.Id})
		require.NoError(t, err)
		require.Equal(t, "key:k1", tk.RequestedBy, "requested_by names the caller")
		require.Equal(t, wfv1.TakeoverState_TAKEOVER_STATE_REQUESTED, tk.State)
		_, err = svc.TakeOver(owner, &wfv1.TakeOverRequest{RunId: run.Id})
		require.Equal(t, ReasonTakeoverInProgress, reasonOf(t, err))

		_, err = svc.SendLiveInput(owner, &wfv1.SendLiveInputRequest{RunId: run.Id, TakeoverId: tk.Id, Events: []*wfv1.LiveInput{click(1, 1)}})
		require.Equal(t, ReasonTakeoverNotActive, reasonOf(t, err), "input before the takeover is active")
		_, _, err = st.UpdateTakeover(t.Context(), run.Id, &wfv1.Takeover{Id: tk.Id, State: wfv1.TakeoverState_TAKEOVER_STATE_ACTIVE})
		require.NoError(t, err)
		resp, err := svc.SendLiveInput(owner, &wfv1.SendLiveInputRequest{RunId: run.Id, TakeoverId: tk.Id,
			Events: []*wfv1.LiveInput{click(1, 1), {Event: &wfv1.LiveInput_Text{Text: "hi"}}}})
		require.NoError(t, err)
		require.EqualValues(t, 2, resp.Accepted)
		_, err = svc.SendLiveInput(owner, &wfv1.SendLiveInputRequest{RunId: run.Id, TakeoverId: "6c1f4d8e-0000-4000-8000-000000000000", Events: []*wfv1.LiveInput{click(1, 1)}})
		require.Equal(t, ReasonTakeoverNotActive, reasonOf(t, err), "another takeover's ID")

		hb, err := svc.HandBack(owner, &wfv1.HandBackRequest{RunId: run.Id, TakeoverId: tk.Id, Note: "done"})
		require.NoError(t, err)
		require.Equal(t, wfv1.TakeoverState_TAKEOVER_STATE_ACTIVE, hb.State, "the worker ends an active takeover")
		_, err = svc.SendLiveInput(owner, &wfv1.SendLiveInputRequest{RunId: run.Id, TakeoverId: tk.Id, Events: []*wfv1.LiveInput{click(1, 1)}})
		require.Equal(t, ReasonTakeoverNotActive, reasonOf(t, err), "input after the hand-back")
		_, err = svc.HandBack(owner, &wfv1.HandBackRequest{RunId: run.Id, TakeoverId: "not-an-id"})
		require.Equal(t, ReasonTakeoverNotActive, reasonOf(t, err))
	})

	t.Run("withdraw", func(t *testing.T) {
		run := liveRun(t, st, true)
		tk, err := svc.TakeOver(owner, &wfv1.TakeOverRequest{RunId: run.Id})
		require.NoError(t, err)
		w, err := svc.HandBack(owner, &wfv1.HandBackRequest{RunId: run.Id, TakeoverId: tk.Id})
		require.NoError(t, err)
		require.Equal(t, wfv1.TakeoverState_TAKEOVER_STATE_ENDED, w.State)
		require.Equal(t, store.TakeoverWithdrawn, w.EndReason)
		got, err := st.GetRun(t.Context(), run.Id)
		require.NoError(t, err)
		require.Nil(t, got.Takeover)
	})

	t.Run("watch ends with the run", func(t *testing.T) {
		run := liveRun(t, st, true)
		require.NoError(t, st.PutLiveFrame(t.Context(), run.Id, &wfv1.LiveFrame{Sequence: 1, Data: []byte{0xff, 0xd8}, Width: 2, Height: 2}))
		var frames []*wfv1.LiveFrame
		err := svc.FollowLive(owner, &wfv1.WatchLiveRequest{RunId: run.Id, MaxFps: 5}, func(f *wfv1.LiveFrame) error {
			frames = append(frames, f)
			// The run ends while watched: the stream ends without error.
			_, err := st.FinishRun(t.Context(), run.Id, store.Outcome{Status: wfv1.RunStatus_RUN_STATUS_COMPLETED})
			return err
		})
		require.NoError(t, err)
		require.Len(t, frames, 1)
		require.EqualValues(t, 1, frames[0].Sequence)
	})

	t.Run("validation", func(t *testing.T) {
		run := liveRun(t, st, true)
		ok := []*wfv1.LiveInput{click(1, 1)}
		many := make([]*wfv1.LiveInput, maxLiveEvents+1)
		for i := range many {
			many[i] = click(1, 1)
		}
		mouse := func(m *wfv1.MouseInput) []*wfv1.LiveInput {
			return []*wfv1.LiveInput{{Event: &wfv1.LiveInput_Mouse{Mouse: m}}}
		}
		key := func(k *wfv1.KeyInput) []*wfv1.LiveInput {
			return []*wfv1.LiveInput{{Event: &wfv1.LiveInput_Key{Key: k}}}
		}
		input := func(evs []*wfv1.LiveInput) func() error {
			return func() error {
				_, err := svc.SendLiveInput(owner, &wfv1.SendLiveInputRequest{RunId: run.Id, TakeoverId: "t", Events: evs})
				return err
			}
		}
		tests := []struct {
			name  string
			call  func() error
			field string
		}{
			{"watch max_fps too high", func() error {
				return svc.FollowLive(owner, &wfv1.WatchLiveRequest{RunId: run.Id, MaxFps: 31}, nil)
			}, "max_fps"},
			{"watch max_fps negative", func() error {
				return svc.FollowLive(owner, &wfv1.WatchLiveRequest{RunId: run.Id, MaxFps: -1}, nil)
			}, "max_fps"},
			{"run_id missing", func() error { _, err := svc.TakeOver(owner, &wfv1.TakeOverRequest{}); return err }, "run_id"},
			{"takeover_id missing", func() error {
				_, err := svc.SendLiveInput(owner, &wfv1.SendLiveInputRequest{RunId: run.Id, Events: ok})
				return err
			}, "takeover_id"},
			{"no events", input(nil), "events"},
			{"too many events", input(many), "events"},
			{"empty event", input([]*wfv1.LiveInput{{}}), "events[0]"},
			{"mouse type missing", input(mouse(&wfv1.MouseInput{X: 1, Y: 1})), "events[0].mouse.type"},
			{"mouse x NaN", input(mouse(&wfv1.MouseInput{Type: wfv1.MouseInput_TYPE_MOVE, X: math.NaN()})), "events[0].mouse.x"},
			{"mouse y infinite", input(mouse(&wfv1.MouseInput{Type: wfv1.MouseInput_TYPE_MOVE, Y: math.Inf(1)})), "events[0].mouse.y"},
			{"mouse x negative", input(mouse(&wfv1.MouseInput{Type: wfv1.MouseInput_TYPE_MOVE, X: -1})), "events[0].mouse.x"},
			{"mouse y too far", input(mouse(&wfv1.MouseInput{Type: wfv1.MouseInput_TYPE_MOVE, Y: 10001})), "events[0].mouse.y"},
			{"wheel delta too far", input(mouse(&wfv1.MouseInput{Type: wfv1.MouseInput_TYPE_WHEEL, DeltaY: -10001})), "events[0].mouse.delta_y"},
			{"unknown button", input(mouse(&wfv1.MouseInput{Type: wfv1.MouseInput_TYPE_DOWN, Button: 9})), "events[0].mouse.button"},
			{"click count", input(mouse(&wfv1.MouseInput{Type: wfv1.MouseInput_TYPE_DOWN, ClickCount: 4})), "events[0].mouse.click_count"},
			{"mouse modifiers", input(mouse(&wfv1.MouseInput{Type: wfv1.MouseInput_TYPE_MOVE, Modifiers: 16})), "events[0].mouse.modifiers"},
			{"key type missing", input(key(&wfv1.KeyInput{Key: "a"})), "events[0].key.type"},
			{"key and code missing", input(key(&wfv1.KeyInput{Type: wfv1.KeyInput_TYPE_DOWN})), "events[0].key.key"},
			{"key too long", input(key(&wfv1.KeyInput{Type: wfv1.KeyInput_TYPE_DOWN, Key: strings.Repeat("k", 33)})), "events[0].key.key"},
			{"code too long", input(key(&wfv1.KeyInput{Type: wfv1.KeyInput_TYPE_DOWN, Key: "a", Code: strings.Repeat("c", 33)})), "events[0].key.code"},
			{"empty text", input([]*wfv1.LiveInput{{Event: &wfv1.LiveInput_Text{}}}), "events[0].text"},
			{"text too long", input([]*wfv1.LiveInput{{Event: &wfv1.LiveInput_Text{Text: strings.Repeat("é", 2001)}}}), "events[0].text"},
			{"second event bad", input([]*wfv1.LiveInput{click(1, 1), {}}), "events[1]"},
			{"hand back takeover_id missing", func() error {
				_, err := svc.HandBack(owner, &wfv1.HandBackRequest{RunId: run.Id})
				return err
			}, "takeover_id"},
			{"note too long", func() error {
				_, err := svc.HandBack(owner, &wfv1.HandBackRequest{RunId: run.Id, TakeoverId: "t", Note: strings.Repeat("n", 2001)})
				return err
			}, "note"},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				err := tc.call()
				st, ok := status.FromError(toStatus(context.Background(), slog.New(slog.DiscardHandler), "test", err))
				require.True(t, ok)
				require.Equal(t, codes.InvalidArgument, st.Code(), "%v", err)
				var fields []string
				for _, d := range st.Details() {
					if br, ok := d.(*errdetails.BadRequest); ok {
						for _, v := range br.FieldViolations {
							fields = append(fields, v.Field)
						}
					}
				}
				require.Contains(t, fields, tc.field)
			})
		}

		// The limits themselves pass.
		edge := []*wfv1.LiveInput{
			{Event: &wfv1.LiveInput_Mouse{Mouse: &wfv1.MouseInput{Type: wfv1.MouseInput_TYPE_WHEEL, X: 10000, Y: 0, DeltaX: -10000, DeltaY: 10000, Modifiers: 15}}},
			{Event: &wfv1.LiveInput_Key{Key: &wfv1.KeyInput{Type: wfv1.KeyInput_TYPE_UP, Key: strings.Repeat("k", 32), Code: strings.Repeat("c", 32)}}},
			{Event: &wfv1.LiveInput_Text{Text: strings.Repeat("é", 2000)}},
		}
		_, err := svc.SendLiveInput(owner, &wfv1.SendLiveInputRequest{RunId: run.Id, TakeoverId: "t", Events: append(edge, many[:197]...)})
		require.Equal(t, ReasonTakeoverNotActive, reasonOf(t, err), "valid input reaches the takeover check")
	})
}

func TestWithReasonLeavesOtherErrors(t *testing.T) {
	t.Parallel()
	other := errors.New("boom")
	require.Same(t, other, withReason(other))
	require.NoError(t, withReason(nil))
}
