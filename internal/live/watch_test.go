package live

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/runner"
	"github.com/wayfinder/wayfinder/internal/store"
)

// A page that keeps changing, so that the screencast keeps sending frames.
const livePage = `<!doctype html><html><body style="margin:0">
<input id="name" style="position:absolute;left:10px;top:10px;width:200px;height:30px">
<div id="tick" style="position:absolute;left:10px;top:60px">0</div>
<script>let n = 0; setInterval(() => { document.getElementById('tick').textContent = ++n; }, 50);</script>
</body></html>`

// viewer runs Watch in the background and keeps what it receives.
type viewer struct {
	mu     sync.Mutex
	frames []*wfv1.LiveFrame
	done   chan error
	stop   context.CancelFunc
}

func watch(t *testing.T, cfg WatchConfig) *viewer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	v := &viewer{done: make(chan error, 1), stop: cancel}
	go func() {
		v.done <- Watch(ctx, cfg, func(f *wfv1.LiveFrame) error {
			v.mu.Lock()
			defer v.mu.Unlock()
			v.frames = append(v.frames, f)
			return nil
		})
	}()
	t.Cleanup(func() {
		cancel()
		<-v.done
	})
	return v
}

// waitFrame waits for a frame that satisfies ok and returns it.
func (v *viewer) waitFrame(t *testing.T, what string, ok func(f *wfv1.LiveFrame) bool) *wfv1.LiveFrame {
	t.Helper()
	var got *wfv1.LiveFrame
	waitUntil(t, what, func() bool {
		v.mu.Lock()
		defer v.mu.Unlock()
		for _, f := range v.frames {
			if ok(f) {
				got = f
				return true
			}
		}
		return false
	})
	return got
}

func (v *viewer) end(t *testing.T) error {
	t.Helper()
	select {
	case err := <-v.done:
		v.done <- err // for the cleanup
		return err
	case <-time.After(waitLimit):
		t.Fatal("Watch did not return")
		return nil
	}
}

func isJPEG(f *wfv1.LiveFrame) bool {
	return bytes.HasPrefix(f.GetData(), []byte{0xff, 0xd8}) && f.GetWidth() > 0 && f.GetHeight() > 0
}

// The whole path across two replicas with a real Chromium page: a viewer
// on the worker's replica reads the Session directly, a viewer on another
// replica reads frames the relay copies to the database; a takeover asked
// for in the database pauses the runner, input stored by the API drives
// the page, the hand-back returns the person's turn, and Close ends both
// viewers.
func TestRelayWatchAcrossReplicas(t *testing.T) {
	t.Parallel()
	b := newRelayBundle(t)
	ctx := t.Context()
	r := b.startRelay(t)
	sess := r.Session()
	page := openPage(t, newBrowserSession(t), serveHTML(t, map[string]string{"/": livePage})+"/")
	sess.PageChanged(page)

	// Local: frames straight from the Session, nothing through the
	// database.
	local := watch(t, WatchConfig{Store: b.store, Hub: b.w, Registry: b.wReg, RunID: b.run.Id, MaxFPS: 30})
	f := local.waitFrame(t, "a local frame", isJPEG)
	require.Contains(t, f.Url, "127.0.0.1")
	ls, err := b.store.LiveSession(ctx, b.run.Id)
	require.NoError(t, err)
	require.False(t, ls.Watched, "a viewer on the worker's replica never asks for frames through the database")
	require.Zero(t, b.count(t, `SELECT count(*) FROM live_frames WHERE run_id = $1`), "no frame was copied for a local viewer")
	local.stop()
	require.ErrorIs(t, local.end(t), context.Canceled)

	// Remote: the viewer's registry lacks the Session.
	remote := watch(t, WatchConfig{Store: b.store, Hub: b.a, Registry: b.aReg, RunID: b.run.Id, MaxFPS: 10})
	first := remote.waitFrame(t, "a remote frame", isJPEG)
	require.Nil(t, first.Takeover)
	ls, err = b.store.LiveSession(ctx, b.run.Id)
	require.NoError(t, err)
	require.True(t, ls.Watched)
	require.Equal(t, 1, b.count(t, `SELECT count(*) FROM live_frames WHERE run_id = $1`))
	remote.waitFrame(t, "a newer remote frame", func(f *wfv1.LiveFrame) bool { return f.Sequence > first.Sequence })

	// Take over: requested in the database, ACTIVE when the runner pauses.
	tk, err := b.store.RequestTakeover(ctx, b.run.Id, "key:k1")
	require.NoError(t, err)
	waitUntil(t, "the session holds the request", func() bool { return sess.Takeover().GetId() == tk.Id })
	type pauseResult struct {
		turn runner.HumanTurn
		ok   bool
		err  error
	}
	paused := make(chan pauseResult, 1)
	go func() {
		turn, ok, err := sess.Pause(context.Background())
		paused <- pauseResult{turn, ok, err}
	}()
	waitUntil(t, "the takeover is ACTIVE in the database", func() bool {
		return b.openTakeover(t).GetState() == wfv1.TakeoverState_TAKEOVER_STATE_ACTIVE
	})
	remote.waitFrame(t, "a frame carrying the active takeover", func(f *wfv1.LiveFrame) bool {
		return f.GetTakeover().GetId() == tk.Id && f.GetTakeover().GetState() == wfv1.TakeoverState_TAKEOVER_STATE_ACTIVE
	})

	// Input through the database drives the page, in order.
	in := append(clickIn(60, 25), textIn("hello"))
	require.NoError(t, b.store.AppendLiveInputs(ctx, b.run.Id, tk.Id, in))
	waitUntil(t, "the typed text reaches the page", func() bool {
		ok, err := page.Truthy(ctx, `document.getElementById('name').value === 'hello'`)
		return err == nil && ok
	})
	waitUntil(t, "applied input is deleted", func() bool {
		return b.count(t, `SELECT count(*) FROM live_inputs WHERE run_id = $1`) == 0
	})

	// Hand back: the runner gets the turn, the database the end.
	_, err = b.store.HandBackTakeover(ctx, b.run.Id, tk.Id, "key:k1", "filled in the name")
	require.NoError(t, err)
	var res pauseResult
	select {
	case res = <-paused:
	case <-time.After(waitLimit):
		t.Fatal("the runner was never handed the browser back")
	}
	require.NoError(t, res.err)
	require.True(t, res.ok)
	require.Equal(t, tk.Id, res.turn.TakeoverID)
	require.Equal(t, "filled in the name", res.turn.Note)
	require.Equal(t, store.TakeoverHandedBack, res.turn.EndReason)
	require.NotEmpty(t, res.turn.Actions)
	for _, a := range res.turn.Actions {
		for k, v := range a.Arguments {
			if s, ok := v.(string); ok {
				require.NotContains(t, s, "hello", "typed text is never recorded (%s.%s)", a.Tool, k)
			}
		}
	}
	waitUntil(t, "the takeover is ENDED in the database", func() bool { return b.openTakeover(t) == nil })
	ended := b.takeover(t, tk.Id)
	require.Equal(t, wfv1.TakeoverState_TAKEOVER_STATE_ENDED, ended.State)
	require.Equal(t, store.TakeoverHandedBack, ended.EndReason)
	require.Equal(t, "filled in the name", ended.Note)
	audit, _, err := b.store.ListAudit(ctx, store.AuditFilter{Tenant: b.run.TenantId, RunID: b.run.Id, PageSize: 10})
	require.NoError(t, err)
	var kinds []string
	for _, a := range audit {
		kinds = append(kinds, a.Kind)
	}
	require.ElementsMatch(t, []string{store.AuditTakeoverRequested, store.AuditTakeoverStarted, store.AuditTakeoverEnded}, kinds)
	remote.waitFrame(t, "a frame after the hand-back, without a takeover", func(f *wfv1.LiveFrame) bool {
		return f.Sequence > first.Sequence && f.Takeover == nil && isJPEG(f)
	})

	// The run leaves the worker: the viewer's stream ends cleanly.
	r.Close(ctx)
	require.NoError(t, remote.end(t))
}

// A run without a live session cannot be watched.
func TestWatchUnavailable(t *testing.T) {
	t.Parallel()
	b := newRelayBundle(t)
	err := Watch(t.Context(), WatchConfig{Store: b.store, Hub: b.a, Registry: b.aReg, RunID: b.run.Id},
		func(*wfv1.LiveFrame) error { return nil })
	require.ErrorIs(t, err, store.ErrLiveUnavailable)
	require.ErrorIs(t, err, fault.ErrFailedPrecondition)
}

// A viewer's send error ends Watch with that error; a remote viewer with
// no frame yet still ends when the session does.
func TestWatchEnds(t *testing.T) {
	t.Parallel()
	b := newRelayBundle(t)
	ctx := t.Context()
	r := b.startRelay(t)
	v := watch(t, WatchConfig{Store: b.store, Hub: b.a, Registry: b.aReg, RunID: b.run.Id})
	waitUntil(t, "the viewer watches", func() bool {
		ls, err := b.store.LiveSession(ctx, b.run.Id)
		return err == nil && ls.Watched
	})
	r.Close(ctx)
	require.NoError(t, v.end(t))

	// send fails: a frame stored by hand is the first thing sent.
	require.NoError(t, b.store.RegisterLiveSession(ctx, b.run.Id, "w"))
	require.NoError(t, b.store.PutLiveFrame(ctx, b.run.Id, &wfv1.LiveFrame{Sequence: 1, Data: []byte{0xff, 0xd8}, Width: 1, Height: 1}))
	boom := errors.New("client gone")
	err := Watch(ctx, WatchConfig{Store: b.store, Hub: b.a, Registry: b.aReg, RunID: b.run.Id},
		func(f *wfv1.LiveFrame) error {
			require.True(t, strings.HasPrefix(string(f.Data), "\xff\xd8"))
			return boom
		})
	require.ErrorIs(t, err, boom)
}
