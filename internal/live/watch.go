package live

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/events"
	"github.com/wayfinder/wayfinder/internal/store"
)

const (
	defaultMaxFPS = 10
	maxMaxFPS     = 30
	// A viewer on another replica than the worker's keeps the session
	// watched for watchLease, renewed every watchRenew.
	watchLease = 15 * time.Second
	watchRenew = 5 * time.Second
)

// WatchConfig configures Watch.
type WatchConfig struct {
	Store *store.Store
	// Hub wakes the viewer on the run's live notifications; nil: it polls
	// only (every second).
	Hub *events.Hub
	// Registry is this process's; when it holds the run's Session, frames
	// come straight from it.
	Registry *Registry
	RunID    string
	// MaxFPS caps the frames sent a second. Default 10, at most 30.
	MaxFPS int
	// Logger defaults to discarding.
	Logger *slog.Logger
}

// Watch streams run cfg.RunID's frames to send: the newest at once, then
// each new one, at most MaxFPS a second (a slow send skips frames, the
// newest wins; it never slows the run). Each frame carries the run's open
// takeover (nil when none); when that changes, the last frame is sent
// again with it (same sequence).
//
// Frames come from the Session when this process holds the run (the
// Registry), else from the database: the viewer keeps the session watched
// so that the worker copies frames there, and reads the newest when woken
// for a frame (store.LiveFrameKey). Every viewer re-reads the session and
// the takeover only on control changes (store.LiveKey) and once a second.
//
// Watch returns nil when the run's live session ends (the run finished or
// left its worker), ctx.Err() when ctx ends, the error of send, and an
// error wrapping store.ErrLiveUnavailable (a failed precondition) when the
// run has no live session to begin with.
func Watch(ctx context.Context, cfg WatchConfig, send func(*wfv1.LiveFrame) error) error {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	fps := cfg.MaxFPS
	if fps <= 0 {
		fps = defaultMaxFPS
	}
	fps = min(fps, maxMaxFPS)
	ls, err := cfg.Store.LiveSession(ctx, cfg.RunID)
	if err != nil {
		return err
	}
	w := &watcher{cfg: cfg, send: send, gap: time.Second / time.Duration(fps), started: ls.StartedAt}
	// Control changes (the session, takeovers) wake every viewer; stored
	// frames wake only remote ones, which read them; input wakes none.
	var wake, frameWake <-chan struct{}
	if cfg.Hub != nil {
		ch, unsubscribe := cfg.Hub.Subscribe(store.LiveKey(cfg.RunID))
		defer unsubscribe()
		wake = ch
	}
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	defer w.stopTimer()

	var frames <-chan Frame
	if sess := cfg.Registry.Get(cfg.RunID); sess != nil {
		ch, unsubscribe := sess.Subscribe()
		defer unsubscribe()
		frames = ch
	} else {
		w.remote = true
		if cfg.Hub != nil {
			ch, unsubscribe := cfg.Hub.Subscribe(store.LiveFrameKey(cfg.RunID))
			defer unsubscribe()
			frameWake = ch
		}
	}
	if ended, err := w.refresh(ctx); ended || err != nil {
		return err
	}
	for {
		var err error
		ended := false
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wake:
			ended, err = w.refresh(ctx)
		case <-frameWake:
			err = w.next(ctx)
		case <-tick.C:
			ended, err = w.refresh(ctx)
		case f, ok := <-frames:
			if !ok {
				return nil // the Session closed: the run left this worker
			}
			w.pending = &wfv1.LiveFrame{Sequence: f.Seq, Time: timestamppb.New(f.Time), Data: f.JPEG,
				Width: int32(f.Width), Height: int32(f.Height), Url: f.URL}
			err = w.next(ctx)
		case <-w.timerC():
			w.timer = nil
			err = w.next(ctx)
		}
		if ended || err != nil {
			return err
		}
	}
}

type watcher struct {
	cfg     WatchConfig
	send    func(*wfv1.LiveFrame) error
	gap     time.Duration
	remote  bool
	started time.Time // the session's; another start is another session

	takeover *wfv1.Takeover
	last     *wfv1.LiveFrame // the last frame sent
	lastSent time.Time
	pending  *wfv1.LiveFrame // local: the newest frame not sent yet
	timer    *time.Timer
	renewed  time.Time // remote: when watched_until was last pushed out
}

// refresh checks that the session lives on, renews the watch, follows the
// takeover and (remote) reads a new frame. ended reports the session's end.
func (w *watcher) refresh(ctx context.Context) (ended bool, err error) {
	ls, err := w.cfg.Store.LiveSession(ctx, w.cfg.RunID)
	if errors.Is(err, store.ErrLiveUnavailable) || (err == nil && !ls.StartedAt.Equal(w.started)) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	if w.remote && time.Since(w.renewed) >= watchRenew {
		if err := w.cfg.Store.WatchLive(ctx, w.cfg.RunID, watchLease); err != nil {
			if errors.Is(err, store.ErrLiveUnavailable) {
				return true, nil
			}
			return false, err
		}
		w.renewed = time.Now()
	}
	open, _, err := w.cfg.Store.OpenTakeover(ctx, w.cfg.RunID)
	if err != nil {
		return false, err
	}
	if !proto.Equal(open, w.takeover) {
		w.takeover = open
		if w.last != nil {
			again := proto.Clone(w.last).(*wfv1.LiveFrame)
			if err := w.deliver(again); err != nil {
				return false, err
			}
		}
	}
	return false, w.next(ctx)
}

// next sends the newest frame not sent yet, or arms the timer when the
// last one went out less than a frame gap ago.
func (w *watcher) next(ctx context.Context) error {
	if w.timer != nil {
		return nil // armed: the newest frame goes when it fires
	}
	if wait := w.gap - time.Since(w.lastSent); wait > 0 {
		if w.remote || w.pending != nil {
			w.timer = time.NewTimer(wait)
		}
		return nil
	}
	f := w.pending
	if w.remote {
		after := int64(0)
		if w.last != nil {
			after = w.last.Sequence
		}
		var err error
		if f, err = w.cfg.Store.LiveFrame(ctx, w.cfg.RunID, after); err != nil {
			return err
		}
	}
	w.pending = nil
	if f == nil {
		return nil
	}
	return w.deliver(f)
}

func (w *watcher) deliver(f *wfv1.LiveFrame) error {
	f.Takeover = w.takeover
	if err := w.send(f); err != nil {
		return err
	}
	w.last, w.lastSent = f, time.Now()
	return nil
}

func (w *watcher) timerC() <-chan time.Time {
	if w.timer == nil {
		return nil
	}
	return w.timer.C
}

func (w *watcher) stopTimer() {
	if w.timer != nil {
		w.timer.Stop()
	}
}
