package live

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/browser"
	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/runner"
)

// Frame is one screencast frame of a run's page.
type Frame struct {
	// Seq increases with every frame of the Session.
	Seq  int64
	Time time.Time
	// JPEG is the picture, shared by every subscriber: read it, never
	// modify it.
	JPEG []byte
	// Width and Height are the viewport's size in CSS pixels: input
	// coordinates are in this space.
	Width, Height int
	// URL is the page's URL (redacted).
	URL string
}

// SessionConfig configures a Session.
type SessionConfig struct {
	// RunID is the run whose browser the Session shows.
	RunID string
	// Logger receives the Session's diagnostics. Default: discarded.
	Logger *slog.Logger
	// IdleTimeout ends an ACTIVE takeover after this long without input
	// (end reason "idle"). Default 5 minutes.
	IdleTimeout time.Duration
	// Redact is applied to every description the Session records (element
	// names, URLs) and to frame URLs: the run's redactor. Default identity.
	Redact func(string) string
	// OnChange is told every takeover state change (ACTIVE, ENDED), in
	// order and never concurrently. It may call the Session (HandBack to
	// end a takeover it cannot record). Default none.
	OnChange func(t *wfv1.Takeover)
	// Quality (JPEG, default 60) and MaxWidth/MaxHeight (default 1280x800)
	// of the screencast's frames.
	Quality, MaxWidth, MaxHeight int
}

// End reasons of a takeover.
const (
	reasonHandedBack = "handed_back"
	reasonWithdrawn  = "withdrawn"
	reasonIdle       = "idle"
	reasonRunEnded   = "run_ended"
)

// cdpCall bounds the Session's own browser calls (element descriptions,
// URLs), so that a hung page cannot hold input up.
const cdpCall = 2 * time.Second

// urlRefresh is how long the page's URL read for frames is reused: frames
// come many a second, and each waits for it before its acknowledgement.
const urlRefresh = 500 * time.Millisecond

// Session is the live view and takeover of one running run, in the worker
// that runs it: it streams the run's page to subscribers, takes the
// browser from the runner for a person (runner.Takeover) and passes their
// input to the page. It is safe for concurrent use. See the package doc.
type Session struct {
	cfg SessionConfig
	log *slog.Logger
	// ctx bounds the screencast; cancelled by Close.
	ctx    context.Context
	cancel context.CancelFunc
	// inputMu keeps batches of input in order.
	inputMu sync.Mutex

	mu      sync.Mutex
	closed  bool
	page    *browser.Page
	open    *wfv1.Takeover // REQUESTED or ACTIVE; nil when none
	turn    *turn          // the ACTIVE takeover's record
	ended   map[string]bool
	changed chan struct{} // closed and replaced on every state change
	// idle counts the runner's idle phases (inside Pause, or between Idle
	// and resume): a request made meanwhile is ACTIVE at once.
	idle int
	// finished is a turn that ended with no Pause waiting for it.
	finished *runner.HumanTurn
	// queue holds OnChange notifications not yet delivered; flushing is
	// set while one goroutine delivers them.
	queue    []*wfv1.Takeover
	flushing bool

	// location reads a page's URL (Page.Location; replaced by tests);
	// urlTTL is how long frame() reuses what it read. url* are the cache,
	// under urlMu.
	location func(ctx context.Context, pg *browser.Page) (string, error)
	urlTTL   time.Duration
	urlMu    sync.Mutex
	urlPage  *browser.Page
	url      string
	urlAt    time.Time

	subs     map[*subscriber]struct{}
	last     *Frame
	seq      int64
	casting  bool          // the cast loop runs
	kick     chan struct{} // wakes the cast loop
	castDone chan struct{}
}

// turn is what the Session keeps of an ACTIVE takeover.
type turn struct {
	id        string
	start     time.Time
	lastInput time.Time
	timer     *time.Timer
	rec       recorder
}

type subscriber struct{ ch chan Frame }

// NewSession returns the Session of run cfg.RunID. Close it when the run
// ends.
func NewSession(cfg SessionConfig) *Session {
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 5 * time.Minute
	}
	if cfg.Redact == nil {
		cfg.Redact = func(s string) string { return s }
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Session{
		cfg:      cfg,
		log:      log.With("run", cfg.RunID),
		ctx:      ctx,
		cancel:   cancel,
		ended:    map[string]bool{},
		changed:  make(chan struct{}),
		subs:     map[*subscriber]struct{}{},
		kick:     make(chan struct{}, 1),
		castDone: make(chan struct{}),
		location: func(ctx context.Context, pg *browser.Page) (string, error) {
			url, _, err := pg.Location(ctx)
			return url, err
		},
		urlTTL: urlRefresh,
	}
}

// pageURL returns pg's (redacted) URL, read again when the one read last
// is older than urlTTL or of another page, or when fresh is set; "" when
// it cannot be read.
func (s *Session) pageURL(ctx context.Context, pg *browser.Page, fresh bool) (string, error) {
	s.urlMu.Lock()
	defer s.urlMu.Unlock()
	if !fresh && s.urlPage == pg && time.Since(s.urlAt) < s.urlTTL {
		return s.url, nil
	}
	cctx, cancel := context.WithTimeout(ctx, cdpCall)
	url, err := s.location(cctx, pg)
	cancel()
	if err != nil {
		return "", err
	}
	s.urlPage, s.url, s.urlAt = pg, s.cfg.Redact(url), time.Now()
	return s.url, nil
}

// PageChanged implements runner.Takeover: the screencast and the input go
// to p from now on. It does not block.
func (s *Session) PageChanged(p *browser.Page) {
	s.mu.Lock()
	s.page = p
	s.mu.Unlock()
	s.poke()
}

// Pause implements runner.Takeover. Without a takeover it returns ok=false
// at once. With a REQUESTED one it makes it ACTIVE and waits until the
// person hands the browser back, their takeover goes idle, the Session
// closes or ctx ends (then the turn ends as "run_ended"), and returns what
// they did. A turn that ended while the runner was idle (Idle) is returned
// at once.
func (s *Session) Pause(ctx context.Context) (runner.HumanTurn, bool, error) {
	s.mu.Lock()
	if t := s.finished; t != nil {
		s.finished = nil
		s.mu.Unlock()
		return *t, true, nil
	}
	if s.open == nil || s.closed {
		s.mu.Unlock()
		return runner.HumanTurn{}, false, nil
	}
	if s.open.State == wfv1.TakeoverState_TAKEOVER_STATE_REQUESTED {
		s.activateLocked()
	}
	s.idle++
	s.mu.Unlock()
	s.flush()

	s.waitNoTurn(ctx)
	s.mu.Lock()
	s.idle--
	if ctx.Err() != nil && s.turn != nil {
		s.endLocked(reasonRunEnded, "")
	}
	t := s.finished
	s.finished = nil
	s.mu.Unlock()
	s.flush()
	if t == nil {
		return runner.HumanTurn{}, false, nil
	}
	return *t, true, nil
}

// Idle marks the runner idle (an approval wait): a REQUESTED takeover, or
// one requested until resume, becomes ACTIVE at once. resume waits until
// no takeover is ACTIVE (or ctx ends) and takes the page back; a turn that
// ended meanwhile is kept for the next Pause. While such a finished turn
// waits for Pause, another request stays REQUESTED: it becomes ACTIVE at
// the Pause after the one that takes the finished turn. resume must be
// called once; later calls return at once.
func (s *Session) Idle() (resume func(ctx context.Context) error) {
	s.mu.Lock()
	s.idle++
	if s.open != nil && s.open.State == wfv1.TakeoverState_TAKEOVER_STATE_REQUESTED && !s.closed && s.canActivateLocked() {
		s.activateLocked()
	}
	s.mu.Unlock()
	s.flush()
	var once sync.Once
	return func(ctx context.Context) error {
		var err error
		once.Do(func() {
			s.waitNoTurn(ctx)
			err = ctx.Err()
			s.mu.Lock()
			s.idle--
			s.mu.Unlock()
		})
		return err
	}
}

// waitNoTurn waits until no takeover is ACTIVE or ctx ends.
func (s *Session) waitNoTurn(ctx context.Context) {
	for {
		s.mu.Lock()
		busy, changed := s.turn != nil, s.changed
		s.mu.Unlock()
		if !busy {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
	}
}

// Request asks for the browser for t (a REQUESTED takeover): it becomes
// ACTIVE at the runner's next safe point, at once when the runner is idle.
// Requesting the open takeover again does nothing. The error wraps
// fault.ErrFailedPrecondition when another takeover is open, t has ended,
// or the Session is closed.
func (s *Session) Request(t *wfv1.Takeover) error {
	if t == nil || t.GetId() == "" {
		return fmt.Errorf("takeover without an id: %w", fault.ErrInvalidArgument)
	}
	s.mu.Lock()
	switch {
	case s.closed:
		s.mu.Unlock()
		return fmt.Errorf("run %s: live session closed: %w", s.cfg.RunID, fault.ErrFailedPrecondition)
	case s.open != nil && s.open.Id == t.Id:
		s.mu.Unlock()
		return nil
	case s.open != nil:
		id := s.open.Id
		s.mu.Unlock()
		return fmt.Errorf("run %s: takeover %s is in progress: %w", s.cfg.RunID, id, fault.ErrFailedPrecondition)
	case s.ended[t.Id]:
		s.mu.Unlock()
		return fmt.Errorf("run %s: takeover %s has ended: %w", s.cfg.RunID, t.Id, fault.ErrFailedPrecondition)
	}
	o := proto.CloneOf(t)
	o.State = wfv1.TakeoverState_TAKEOVER_STATE_REQUESTED
	if o.RunId == "" {
		o.RunId = s.cfg.RunID
	}
	if o.RequestTime == nil {
		o.RequestTime = timestamppb.Now()
	}
	o.StartTime, o.EndTime, o.EndReason, o.Note = nil, nil, "", ""
	s.open = o
	if s.canActivateLocked() {
		s.activateLocked()
	}
	s.notifyLocked()
	s.mu.Unlock()
	s.flush()
	return nil
}

// HandBack ends takeover id: an ACTIVE one as "handed_back" with the
// person's note (the waiting Pause returns their turn), a REQUESTED one as
// "withdrawn". Handing back a takeover that already ended does nothing;
// an unknown one is an error wrapping fault.ErrFailedPrecondition.
func (s *Session) HandBack(takeoverID, note string) error {
	s.mu.Lock()
	switch {
	case s.open != nil && s.open.Id == takeoverID:
		if s.turn != nil {
			s.endLocked(reasonHandedBack, note)
		} else {
			s.endLocked(reasonWithdrawn, note)
		}
	case s.ended[takeoverID]:
	default:
		s.mu.Unlock()
		return fmt.Errorf("run %s: takeover %s is not open: %w", s.cfg.RunID, takeoverID, fault.ErrFailedPrecondition)
	}
	s.mu.Unlock()
	s.flush()
	return nil
}

// withdraw ends takeover id as "withdrawn": the API withdrew it before it
// became ACTIVE in the database, so nobody could act on it, even when the
// Session made it ACTIVE meanwhile. A waiting Pause returns ok=false.
func (s *Session) withdraw(id string) {
	s.mu.Lock()
	if s.open == nil || s.open.Id != id {
		s.mu.Unlock()
		return
	}
	if s.turn != nil {
		s.turn.timer.Stop()
		s.turn = nil // no turn to return: the person never had the browser
	}
	s.endLocked(reasonWithdrawn, "")
	s.mu.Unlock()
	s.flush()
}

// Takeover returns a copy of the open (REQUESTED or ACTIVE) takeover, nil
// when none.
func (s *Session) Takeover() *wfv1.Takeover {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open == nil {
		return nil
	}
	return proto.CloneOf(s.open)
}

// Close ends the open takeover ("run_ended"; a waiting Pause returns the
// turn, and so does the next one), stops the screencast and closes every
// subscription. It is idempotent.
func (s *Session) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	if s.open != nil {
		s.endLocked(reasonRunEnded, "")
	}
	for sub := range s.subs {
		close(sub.ch)
	}
	clear(s.subs)
	casting := s.casting
	s.mu.Unlock()
	s.flush()
	if casting {
		// The cast loop stops the screencast with the page's consent;
		// cancelling s.ctx cuts a page that does not answer short.
		s.poke()
		select {
		case <-s.castDone:
		case <-time.After(2 * cdpCall):
		}
	}
	s.cancel()
	if casting {
		<-s.castDone
	}
}

// canActivateLocked reports whether a REQUESTED takeover may become ACTIVE
// now, without waiting for the runner's next Pause: the runner is idle and
// holds no finished turn it has not taken yet (a second turn would have
// nowhere to go: the runner records one turn per Pause). s.mu is held.
func (s *Session) canActivateLocked() bool {
	return s.idle > 0 && s.finished == nil
}

// activateLocked makes the REQUESTED takeover ACTIVE. s.mu is held.
func (s *Session) activateLocked() {
	now := time.Now()
	s.open.State = wfv1.TakeoverState_TAKEOVER_STATE_ACTIVE
	s.open.StartTime = timestamppb.New(now)
	tn := &turn{id: s.open.Id, start: now, lastInput: now}
	if s.last != nil {
		tn.rec.lastURL = s.last.URL // where the person starts
	}
	tn.timer = time.AfterFunc(s.cfg.IdleTimeout, func() { s.checkIdle(tn) })
	s.turn = tn
	s.queue = append(s.queue, proto.CloneOf(s.open))
	s.notifyLocked()
}

// checkIdle ends tn when it has had no input for the idle limit, or waits
// for the rest of the limit.
func (s *Session) checkIdle(tn *turn) {
	s.mu.Lock()
	if s.turn != tn {
		s.mu.Unlock()
		return
	}
	if left := s.cfg.IdleTimeout - time.Since(tn.lastInput); left > 0 {
		tn.timer.Reset(left)
		s.mu.Unlock()
		return
	}
	s.endLocked(reasonIdle, "")
	s.mu.Unlock()
	s.flush()
}

// endLocked ends the open takeover; an ACTIVE one's turn is kept for
// Pause. s.mu is held.
func (s *Session) endLocked(reason, note string) {
	now := time.Now()
	o := s.open
	o.State = wfv1.TakeoverState_TAKEOVER_STATE_ENDED
	o.EndTime = timestamppb.New(now)
	o.EndReason = reason
	o.Note = note
	if tn := s.turn; tn != nil {
		tn.timer.Stop()
		s.finished = &runner.HumanTurn{
			TakeoverID: o.Id, By: o.RequestedBy, Start: tn.start, End: now,
			Actions: tn.rec.actions, Note: note, EndReason: reason,
		}
	}
	s.turn = nil
	s.open = nil
	s.ended[o.Id] = true
	s.queue = append(s.queue, o)
	s.notifyLocked()
}

func (s *Session) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// flush delivers the queued notifications to OnChange, in order, from one
// goroutine at a time; a call made while another delivers (or from inside
// OnChange) leaves its notifications to that one.
func (s *Session) flush() {
	s.mu.Lock()
	if s.flushing {
		s.mu.Unlock()
		return
	}
	s.flushing = true
	for len(s.queue) > 0 {
		t := s.queue[0]
		s.queue = s.queue[1:]
		s.mu.Unlock()
		if s.cfg.OnChange != nil {
			s.cfg.OnChange(t)
		}
		s.mu.Lock()
	}
	s.flushing = false
	s.mu.Unlock()
}

// Subscribe returns the Session's frames: the newest at once (when there
// is one), then each new one. The channel holds one frame; a subscriber
// that falls behind gets the newest and skips the rest, never slowing the
// screencast or other subscribers. The screencast runs while the Session
// has subscribers. cancel ends the subscription and closes the channel;
// so does Close.
func (s *Session) Subscribe() (<-chan Frame, func()) {
	sub := &subscriber{ch: make(chan Frame, 1)}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		close(sub.ch)
		return sub.ch, func() {}
	}
	if s.last != nil {
		sub.ch <- *s.last
	}
	s.subs[sub] = struct{}{}
	if !s.casting {
		s.casting = true
		go s.castLoop()
	}
	s.mu.Unlock()
	s.poke()
	var once sync.Once
	return sub.ch, func() {
		once.Do(func() {
			s.mu.Lock()
			if _, ok := s.subs[sub]; ok {
				delete(s.subs, sub)
				close(sub.ch)
			}
			s.mu.Unlock()
			s.poke()
		})
	}
}

// poke wakes the cast loop to compare what it casts with what it should.
func (s *Session) poke() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// castLoop keeps a screencast running on the current page while the
// Session has subscribers, until Close. Browser calls happen here, never
// in the callers of PageChanged or Subscribe.
func (s *Session) castLoop() {
	defer close(s.castDone)
	var cur *browser.Page
	var stop func()
	for {
		<-s.kick
		s.mu.Lock()
		want, closed := s.page, s.closed
		if len(s.subs) == 0 {
			want = nil
		}
		s.mu.Unlock()
		if closed {
			want = nil
		}
		if want != cur && stop != nil {
			stop()
			stop, cur = nil, nil
		}
		if want != nil && cur == nil {
			pg := want
			st, err := pg.StartScreencast(s.ctx, browser.ScreencastOptions{
				Quality: s.cfg.Quality, MaxWidth: s.cfg.MaxWidth, MaxHeight: s.cfg.MaxHeight,
			}, func(f browser.ScreencastFrame) { s.frame(pg, f) })
			if err != nil {
				s.log.Debug("live: screencast did not start", "err", err)
			} else {
				stop, cur = st, pg
			}
		}
		if closed {
			return
		}
	}
}

// frame hands a screencast frame of pg to every subscriber; when a person
// has the browser, a new URL is noted as their navigation.
func (s *Session) frame(pg *browser.Page, f browser.ScreencastFrame) {
	url, _ := s.pageURL(s.ctx, pg, false)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.page != pg || s.closed {
		return
	}
	if s.turn != nil && url != "" {
		s.turn.rec.navigated(url)
	}
	s.seq++
	fr := Frame{Seq: s.seq, Time: f.Time, JPEG: f.JPEG, Width: f.Width, Height: f.Height, URL: url}
	s.last = &fr
	for sub := range s.subs {
		select {
		case sub.ch <- fr:
		default:
			select { // newest wins
			case <-sub.ch:
			default:
			}
			sub.ch <- fr
		}
	}
}
