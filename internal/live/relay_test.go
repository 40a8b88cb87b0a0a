package live

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/events"
	"github.com/wayfinder/wayfinder/internal/runner"
	"github.com/wayfinder/wayfinder/internal/store"
	"github.com/wayfinder/wayfinder/internal/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// waitLimit bounds every wait for something the relay or a viewer does.
// Exceeding it is a failure (a lost wake-up), not a measurement.
const waitLimit = 30 * time.Second

// relayBundle is a started run in a real database, with two "replicas":
// the worker's (hub w, registry wReg) and an API replica's (hub a, registry
// aReg, which never holds the run's Session).
type relayBundle struct {
	pool  *pgxpool.Pool
	store *store.Store
	run   *wfv1.Run
	w, a  *events.Hub
	wReg  *Registry
	aReg  *Registry
}

func newRelayBundle(t *testing.T) *relayBundle {
	t.Helper()
	ctx := t.Context()
	pool := storetest.NewPool(t)
	st := store.New(pool)
	run, _, err := st.CreateRun(ctx, store.NewRun{Params: &wfv1.RunParams{Goal: "g", StartUrl: "https://example.com"}},
		func(context.Context, pgx.Tx, string) (int64, error) { return 1, nil })
	require.NoError(t, err)
	_, _, err = st.StartRun(ctx, run.Id)
	require.NoError(t, err)
	return &relayBundle{pool: pool, store: st, run: run, w: startHub(t, pool), a: startHub(t, pool),
		wReg: NewRegistry(), aReg: NewRegistry()}
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

func (b *relayBundle) startRelay(t *testing.T) *Relay {
	t.Helper()
	r, err := StartRelay(t.Context(), RelayConfig{Store: b.store, Hub: b.w, Registry: b.wReg, RunID: b.run.Id,
		Tenant: b.run.TenantId, Worker: "worker:1"})
	require.NoError(t, err)
	t.Cleanup(func() { r.Close(context.Background()) })
	return r
}

// waitUntil polls cond until it holds.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, waitLimit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (b *relayBundle) openTakeover(t *testing.T) *wfv1.Takeover {
	t.Helper()
	open, _, err := b.store.OpenTakeover(t.Context(), b.run.Id)
	require.NoError(t, err)
	return open
}

func (b *relayBundle) takeover(t *testing.T, id string) *wfv1.Takeover {
	t.Helper()
	evs, err := b.store.ListEvents(t.Context(), b.run.Id, 0, 1000)
	require.NoError(t, err)
	var last *wfv1.Takeover
	for _, ev := range evs {
		if ev.GetTakeover().GetId() == id {
			last = ev.GetTakeover()
		}
	}
	return last
}

func (b *relayBundle) count(t *testing.T, query string) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(t.Context(), query, b.run.Id).Scan(&n))
	return n
}

// A takeover withdrawn in the database while the Session holds it
// REQUESTED ends in the Session too; the runner's next Pause finds
// nothing.
func TestRelayWithdrawn(t *testing.T) {
	t.Parallel()
	b := newRelayBundle(t)
	r := b.startRelay(t)
	tk, err := b.store.RequestTakeover(t.Context(), b.run.Id, "local")
	require.NoError(t, err)
	waitUntil(t, "the session holds the request", func() bool { return r.Session().Takeover().GetId() == tk.Id })

	_, err = b.store.HandBackTakeover(t.Context(), b.run.Id, tk.Id, "local", "")
	require.NoError(t, err)
	waitUntil(t, "the session drops the withdrawn request", func() bool { return r.Session().Takeover() == nil })
	_, ok, err := r.Session().Pause(t.Context())
	require.NoError(t, err)
	require.False(t, ok, "a withdrawn takeover never pauses the run")
	require.Equal(t, store.TakeoverWithdrawn, b.takeover(t, tk.Id).GetEndReason())
}

// A takeover that became ACTIVE in the Session (the runner paused) after
// the API withdrew it: the conditional activation matches nothing, and the
// relay ends it in the Session as withdrawn: Pause returns no turn (no
// empty human step for the model).
func TestRelayActivationAfterWithdrawal(t *testing.T) {
	t.Parallel()
	b := newRelayBundle(t)
	r := b.startRelay(t)
	sess := r.Session()
	tk, err := b.store.RequestTakeover(t.Context(), b.run.Id, "local")
	require.NoError(t, err)
	waitUntil(t, "the session holds the request", func() bool { return sess.Takeover().GetId() == tk.Id })

	// Withdraw directly in the database, the way a racing API call does,
	// and pause the runner before the relay hears of it: the relay is
	// stopped from storing by holding the run's row lock.
	tx, err := b.pool.Begin(t.Context())
	require.NoError(t, err)
	_, err = tx.Exec(t.Context(), `SELECT 1 FROM runs WHERE id = $1 FOR UPDATE`, b.run.Id)
	require.NoError(t, err)
	type paused struct {
		turn runner.HumanTurn
		ok   bool
	}
	turns := make(chan paused, 1)
	go func() {
		turn, ok, _ := sess.Pause(context.Background())
		turns <- paused{turn, ok}
	}()
	waitUntil(t, "the session activates", func() bool {
		return sess.Takeover().GetState() == wfv1.TakeoverState_TAKEOVER_STATE_ACTIVE
	})
	_, err = tx.Exec(t.Context(), `UPDATE takeovers SET state = 'ended', end_reason = 'withdrawn', ended_at = now() WHERE id = $1`, tk.Id)
	require.NoError(t, err)
	require.NoError(t, tx.Commit(t.Context()))

	select {
	case p := <-turns:
		require.False(t, p.ok, "a withdrawn takeover is no turn: %+v", p.turn)
	case <-time.After(waitLimit):
		t.Fatal("the paused runner was never released")
	}
	open := b.openTakeover(t)
	require.Nil(t, open)
	require.NotEqual(t, wfv1.TakeoverState_TAKEOVER_STATE_ACTIVE, b.takeover(t, tk.Id).GetState(), "no ACTIVE event for a withdrawn takeover")
}

// A relay ends the takeover a killed worker left open before it starts,
// and its Close ends the open one and removes the live session.
func TestRelayStartAndClose(t *testing.T) {
	t.Parallel()
	b := newRelayBundle(t)
	ctx := t.Context()
	require.NoError(t, b.store.RegisterLiveSession(ctx, b.run.Id, "dead:1"))
	left, err := b.store.RequestTakeover(ctx, b.run.Id, "local")
	require.NoError(t, err)

	r := b.startRelay(t)
	require.Equal(t, store.TakeoverRunEnded, b.takeover(t, left.Id).GetEndReason())
	ls, err := b.store.LiveSession(ctx, b.run.Id)
	require.NoError(t, err)
	require.Equal(t, "worker:1", ls.Worker)
	require.Same(t, r.Session(), b.wReg.Get(b.run.Id))
	require.Nil(t, b.aReg.Get(b.run.Id))

	tk, err := b.store.RequestTakeover(ctx, b.run.Id, "local")
	require.NoError(t, err)
	waitUntil(t, "the session holds the request", func() bool { return r.Session().Takeover().GetId() == tk.Id })
	r.Close(ctx)
	r.Close(ctx) // idempotent
	require.Nil(t, b.openTakeover(t))
	require.Equal(t, store.TakeoverRunEnded, b.takeover(t, tk.Id).GetEndReason())
	_, err = b.store.LiveSession(ctx, b.run.Id)
	require.ErrorIs(t, err, store.ErrLiveUnavailable)
	require.Nil(t, b.wReg.Get(b.run.Id))
	_, err = b.store.RequestTakeover(ctx, b.run.Id, "local")
	require.ErrorIs(t, err, store.ErrLiveUnavailable)
}

func TestRegistry(t *testing.T) {
	t.Parallel()
	reg := NewRegistry()
	a, b := NewSession(SessionConfig{RunID: "r"}), NewSession(SessionConfig{RunID: "r"})
	defer a.Close()
	defer b.Close()
	require.Nil(t, reg.Get("r"))
	reg.add("r", a)
	require.Same(t, a, reg.Get("r"))
	reg.add("r", b)
	reg.remove("r", a)
	require.Same(t, b, reg.Get("r"), "removing an old session keeps the newer one")
	reg.remove("r", b)
	require.Nil(t, reg.Get("r"))
	var none *Registry
	require.Nil(t, none.Get("r"))
}
