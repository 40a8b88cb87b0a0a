package live

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/events"
	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/store"
)

const (
	// pollInterval is how often relays and viewers re-read the database
	// when no notification arrives (a safety net for missed ones).
	pollInterval = time.Second
	// frameCopyGap spaces the frames a relay copies to the database for
	// viewers on other replicas: at most 5 a second.
	frameCopyGap = 200 * time.Millisecond
	// inputBatch is how many stored input events a relay reads at a time.
	inputBatch = 500
	// inputTimeout bounds the application of one batch of input.
	inputTimeout = 30 * time.Second
)

// RelayConfig configures a Relay.
type RelayConfig struct {
	Store *store.Store
	// Hub wakes the relay on the run's live notifications; nil: it polls
	// only (every second).
	Hub *events.Hub
	// Registry receives the run's Session for viewers on this replica;
	// nil for none.
	Registry *Registry
	RunID    string
	// Tenant owns the run (for logs).
	Tenant string
	// Worker names this process (host:pid) in live_sessions.
	Worker string
	// Session configures the run's Session; RunID and OnChange are set by
	// the relay.
	Session SessionConfig
	// Logger defaults to discarding.
	Logger *slog.Logger
}

// Relay connects one running run's Session to the database, where the API
// of every replica reaches it: it applies the takeovers, input and
// hand-backs the API stores, persists the Session's takeover changes, and
// copies frames to live_frames while a viewer on another replica watches.
type Relay struct {
	cfg  RelayConfig
	log  *slog.Logger
	sess *Session

	mu      sync.Mutex
	changes []*wfv1.Takeover // told by the Session, not yet stored
	kick    chan struct{}

	cancel    context.CancelFunc
	done      chan struct{}
	closeOnce sync.Once

	// Owned by the loop (and by Close once the loop has stopped).
	given      map[string]bool // takeovers handed to the Session
	handedBack map[string]bool // hand-backs passed to the Session
	activated  map[string]bool // takeovers stored ACTIVE
	inputSeq   int64
}

// StartRelay ends a takeover a previous worker of the run left open
// ("run_ended"), registers the run's live session, creates its Session,
// adds it to the Registry and follows the run until Close. ctx bounds the
// start only.
func StartRelay(ctx context.Context, cfg RelayConfig) (*Relay, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	r := &Relay{
		cfg:        cfg,
		log:        cfg.Logger.With("run_id", cfg.RunID),
		kick:       make(chan struct{}, 1),
		done:       make(chan struct{}),
		given:      make(map[string]bool),
		handedBack: make(map[string]bool),
		activated:  make(map[string]bool),
	}
	if err := r.endOpen(ctx); err != nil {
		return nil, err
	}
	if err := cfg.Store.RegisterLiveSession(ctx, cfg.RunID, cfg.Worker); err != nil {
		return nil, err
	}
	sc := cfg.Session
	sc.RunID = cfg.RunID
	if sc.Logger == nil {
		sc.Logger = r.log
	}
	sc.OnChange = r.onChange
	r.sess = NewSession(sc)
	cfg.Registry.add(cfg.RunID, r.sess)
	loopCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.cancel = cancel
	go r.loop(loopCtx)
	return r, nil
}

// Session returns the run's Session (the runner's Takeover).
func (r *Relay) Session() *Session { return r.sess }

// Close stops following the run, closes the Session (which ends an open
// takeover: "run_ended"), stores that, ends any takeover still open in the
// database and removes the run's live session, frame and input. It is
// idempotent; ctx bounds the database writes.
func (r *Relay) Close(ctx context.Context) {
	r.closeOnce.Do(func() {
		r.cfg.Registry.remove(r.cfg.RunID, r.sess)
		r.cancel()
		<-r.done
		r.sess.Close()
		r.flush(ctx)
		if err := r.endOpen(ctx); err != nil {
			r.log.WarnContext(ctx, "live: could not end the run's open takeover", "error", err)
		}
		if err := r.cfg.Store.EndLiveSession(ctx, r.cfg.RunID); err != nil {
			r.log.WarnContext(ctx, "live: could not remove the run's live session", "error", err)
		}
	})
}

// endOpen ends the run's open takeover in the database as "run_ended".
func (r *Relay) endOpen(ctx context.Context) error {
	open, _, err := r.cfg.Store.OpenTakeover(ctx, r.cfg.RunID)
	if err != nil || open == nil {
		return err
	}
	_, _, err = r.cfg.Store.UpdateTakeover(ctx, r.cfg.RunID, &wfv1.Takeover{
		Id: open.Id, State: wfv1.TakeoverState_TAKEOVER_STATE_ENDED, EndReason: store.TakeoverRunEnded,
	})
	if err != nil {
		return fmt.Errorf("end open takeover %s: %w", open.Id, err)
	}
	return nil
}

// onChange queues a Session's takeover change for the loop, which stores
// the changes in order. It never blocks the Session.
func (r *Relay) onChange(t *wfv1.Takeover) {
	r.mu.Lock()
	r.changes = append(r.changes, proto.Clone(t).(*wfv1.Takeover))
	r.mu.Unlock()
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

func (r *Relay) loop(ctx context.Context) {
	defer close(r.done)
	// Control changes (takeovers, the session) and input wake the relay;
	// frames, its own among them, do not.
	var wake, inputWake <-chan struct{}
	if r.cfg.Hub != nil {
		w, unsubscribe := r.cfg.Hub.Subscribe(store.LiveKey(r.cfg.RunID))
		defer unsubscribe()
		iw, unsubscribeInput := r.cfg.Hub.Subscribe(store.LiveInputKey(r.cfg.RunID))
		defer unsubscribeInput()
		wake, inputWake = w, iw
	}
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	c := copier{r: r}
	defer c.stop()
	refresh := func() {
		r.flush(ctx)
		r.reconcile(ctx)
		c.watch(ctx)
	}
	refresh()
	for {
		select {
		case <-ctx.Done():
			return
		case <-wake:
			refresh()
		case <-inputWake:
			r.flush(ctx)
			if cur := r.sess.Takeover(); cur != nil && cur.State == wfv1.TakeoverState_TAKEOVER_STATE_ACTIVE {
				r.applyInput(ctx, cur.Id)
			}
		case <-tick.C:
			refresh()
		case <-r.kick:
			r.flush(ctx)
		case f, ok := <-c.frames:
			c.frame(ctx, f, ok)
		case <-c.timerC():
			c.put(ctx)
		}
	}
}

// flush stores the Session's queued takeover changes in order. A change
// that fails for a transient reason stays queued for the next round.
func (r *Relay) flush(ctx context.Context) {
	for {
		r.mu.Lock()
		if len(r.changes) == 0 {
			r.mu.Unlock()
			return
		}
		t := r.changes[0]
		r.mu.Unlock()
		stored, changed, err := r.cfg.Store.UpdateTakeover(ctx, r.cfg.RunID, t)
		if err != nil && !errors.Is(err, fault.ErrNotFound) {
			if ctx.Err() == nil {
				r.log.WarnContext(ctx, "live: could not store a takeover change; retrying", "takeover_id", t.Id, "error", err)
			}
			return
		}
		r.mu.Lock()
		r.changes = r.changes[1:]
		r.mu.Unlock()
		if err == nil && changed && t.State == wfv1.TakeoverState_TAKEOVER_STATE_ACTIVE {
			r.activated[t.Id] = true
		}
		if err == nil && !changed && t.State == wfv1.TakeoverState_TAKEOVER_STATE_ACTIVE &&
			stored.State == wfv1.TakeoverState_TAKEOVER_STATE_ENDED {
			// Withdrawn before the Session made it active: end it there too,
			// as withdrawn (no person's turn for the runner to record).
			r.handedBack[t.Id] = true
			r.sess.withdraw(t.Id)
		}
	}
}

// reconcile applies the database's view of the run's open takeover to the
// Session: a new request, input, a hand-back, a withdrawal.
func (r *Relay) reconcile(ctx context.Context) {
	open, handBack, err := r.cfg.Store.OpenTakeover(ctx, r.cfg.RunID)
	if err != nil {
		if ctx.Err() == nil {
			r.log.WarnContext(ctx, "live: could not read the run's takeover", "error", err)
		}
		return
	}
	cur := r.sess.Takeover()
	if cur != nil && (open == nil || open.Id != cur.Id) {
		// Ended in the database while the Session holds it: withdrawn when
		// it never was ACTIVE there (the person never had the browser).
		if r.activated[cur.Id] {
			r.handBack(cur.Id, "")
		} else {
			r.handedBack[cur.Id] = true
			r.sess.withdraw(cur.Id)
		}
		cur = nil
	}
	if open == nil {
		return
	}
	switch {
	case cur == nil && !r.given[open.Id]:
		r.given[open.Id] = true
		if open.State != wfv1.TakeoverState_TAKEOVER_STATE_REQUESTED {
			// Active in the database, unknown to this Session: left by a
			// previous worker.
			if err := r.endOpen(ctx); err != nil {
				r.log.WarnContext(ctx, "live: could not end a stale takeover", "takeover_id", open.Id, "error", err)
			}
			return
		}
		if err := r.sess.Request(open); err != nil {
			r.log.WarnContext(ctx, "live: the session refused a takeover", "takeover_id", open.Id, "error", err)
		}
	case cur != nil && cur.State == wfv1.TakeoverState_TAKEOVER_STATE_ACTIVE:
		r.applyInput(ctx, cur.Id)
		if handBack && !r.handedBack[cur.Id] {
			r.handBack(cur.Id, open.Note)
		}
	}
}

func (r *Relay) handBack(id, note string) {
	r.handedBack[id] = true
	if err := r.sess.HandBack(id, note); err != nil {
		r.log.Debug("live: hand-back not applied", "takeover_id", id, "error", err)
	}
}

// applyInput passes the stored input of takeover id to the Session in
// order and deletes it (with input of other, ended takeovers).
func (r *Relay) applyInput(ctx context.Context, id string) {
	for {
		rows, err := r.cfg.Store.LiveInputs(ctx, r.cfg.RunID, r.inputSeq, inputBatch)
		if err != nil {
			if ctx.Err() == nil {
				r.log.WarnContext(ctx, "live: could not read input", "error", err)
			}
			return
		}
		if len(rows) == 0 {
			return
		}
		batch := make([]*wfv1.LiveInput, 0, len(rows))
		for _, row := range rows {
			if row.TakeoverID == id {
				batch = append(batch, row.Input)
			}
		}
		if len(batch) > 0 {
			ictx, cancel := context.WithTimeout(ctx, inputTimeout)
			err := r.sess.Input(ictx, id, batch)
			cancel()
			if err != nil {
				r.log.WarnContext(ctx, "live: input not applied", "takeover_id", id, "events", len(batch), "error", err)
			}
		}
		r.inputSeq = rows[len(rows)-1].Seq
		if err := r.cfg.Store.DeleteLiveInputs(ctx, r.cfg.RunID, r.inputSeq); err != nil && ctx.Err() == nil {
			r.log.WarnContext(ctx, "live: could not delete applied input", "error", err)
		}
		if len(rows) < inputBatch {
			return
		}
	}
}

// copier copies the Session's frames to live_frames while a viewer on
// another replica watches: it subscribes only then (the screencast runs
// only while someone subscribes), at most one frame per frameCopyGap,
// the newest winning.
type copier struct {
	r           *Relay
	frames      <-chan Frame
	unsubscribe func()
	pending     *Frame
	last        time.Time
	timer       *time.Timer
}

// watch subscribes or unsubscribes as the session is watched or not.
func (c *copier) watch(ctx context.Context) {
	ls, err := c.r.cfg.Store.LiveSession(ctx, c.r.cfg.RunID)
	if err != nil {
		if ctx.Err() == nil && !errors.Is(err, store.ErrLiveUnavailable) {
			c.r.log.WarnContext(ctx, "live: could not read the live session", "error", err)
		}
		return
	}
	switch {
	case ls.Watched && c.unsubscribe == nil:
		c.frames, c.unsubscribe = c.r.sess.Subscribe()
	case !ls.Watched && c.unsubscribe != nil:
		c.stop()
	}
}

func (c *copier) stop() {
	if c.unsubscribe != nil {
		c.unsubscribe()
	}
	c.frames, c.unsubscribe, c.pending = nil, nil, nil
	c.stopTimer()
}

func (c *copier) stopTimer() {
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
}

func (c *copier) timerC() <-chan time.Time {
	if c.timer == nil {
		return nil
	}
	return c.timer.C
}

func (c *copier) frame(ctx context.Context, f Frame, ok bool) {
	if !ok { // the Session closed
		c.frames = nil
		return
	}
	c.pending = &f
	if wait := frameCopyGap - time.Since(c.last); wait > 0 {
		if c.timer == nil {
			c.timer = time.NewTimer(wait)
		}
		return
	}
	c.put(ctx)
}

func (c *copier) put(ctx context.Context) {
	c.stopTimer()
	f := c.pending
	if f == nil {
		return
	}
	c.pending, c.last = nil, time.Now()
	err := c.r.cfg.Store.PutLiveFrame(ctx, c.r.cfg.RunID, &wfv1.LiveFrame{
		Sequence: f.Seq, Time: timestamppb.New(f.Time), Data: f.JPEG,
		Width: int32(f.Width), Height: int32(f.Height), Url: f.URL,
	})
	if err != nil && ctx.Err() == nil {
		c.r.log.WarnContext(ctx, "live: could not store a frame", "error", err)
	}
}
