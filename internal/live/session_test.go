package live

import (
	"bytes"
	"context"
	"fmt"
	"image/jpeg"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/browser"
	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/runner"
)

const wait = 30 * time.Second

// changes records OnChange calls and fails the test when two overlap.
type changes struct {
	t       *testing.T
	mu      sync.Mutex
	inside  bool
	seen    []string // "ACTIVE id", "ENDED id reason"
	onEnter func(*wfv1.Takeover)
}

func (c *changes) on(tk *wfv1.Takeover) {
	c.mu.Lock()
	if c.inside {
		c.t.Errorf("OnChange called concurrently")
	}
	c.inside = true
	enter := c.onEnter
	c.mu.Unlock()
	if enter != nil {
		enter(tk)
	}
	c.mu.Lock()
	s := strings.TrimPrefix(tk.State.String(), "TAKEOVER_STATE_") + " " + tk.Id
	if tk.EndReason != "" {
		s += " " + tk.EndReason
	}
	c.seen = append(c.seen, s)
	c.inside = false
	c.mu.Unlock()
}

func (c *changes) list() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.seen...)
}

// waitFor waits until the recorded changes are want.
func (c *changes) waitFor(want ...string) {
	c.t.Helper()
	require.Eventually(c.t, func() bool { return fmt.Sprint(c.list()) == fmt.Sprint(want) }, wait, time.Millisecond,
		"want changes %v", want)
}

// newTestSession returns a Session for t (closed when t ends) and its
// change log.
func newTestSession(t *testing.T, cfg SessionConfig) (*Session, *changes) {
	c := &changes{t: t}
	cfg.RunID = "run-1"
	cfg.OnChange = c.on
	s := NewSession(cfg)
	t.Cleanup(s.Close)
	return s, c
}

func takeover(id string) *wfv1.Takeover {
	return &wfv1.Takeover{Id: id, RequestedBy: "key:alice"}
}

// pauseResult is what a Pause returned.
type pauseResult struct {
	turn runner.HumanTurn
	ok   bool
	err  error
}

// pauseAsync calls Pause on its own goroutine.
func pauseAsync(ctx context.Context, s *Session) <-chan pauseResult {
	ch := make(chan pauseResult, 1)
	go func() {
		turn, ok, err := s.Pause(ctx)
		ch <- pauseResult{turn, ok, err}
	}()
	return ch
}

func receive[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(wait):
		t.Fatal("nothing received")
		panic("unreachable")
	}
}

func state(s *Session) wfv1.TakeoverState {
	return s.Takeover().GetState()
}

func TestSessionPauseWithoutRequest(t *testing.T) {
	t.Parallel()
	s, c := newTestSession(t, SessionConfig{})
	turn, ok, err := s.Pause(context.Background())
	require.NoError(t, err)
	require.False(t, ok)
	require.Zero(t, turn)
	require.Nil(t, s.Takeover())
	require.Empty(t, c.list())
}

func TestSessionRequestWhileBusy(t *testing.T) {
	t.Parallel()
	s, c := newTestSession(t, SessionConfig{})
	require.NoError(t, s.Request(takeover("t1")))
	// The runner is busy: the takeover waits for its next Pause.
	require.Equal(t, wfv1.TakeoverState_TAKEOVER_STATE_REQUESTED, state(s))
	require.Equal(t, "run-1", s.Takeover().RunId)
	require.NotNil(t, s.Takeover().RequestTime)
	require.Empty(t, c.list())
	require.NoError(t, s.Request(takeover("t1")), "the open takeover again")
	require.ErrorIs(t, s.Request(takeover("t2")), fault.ErrFailedPrecondition)

	done := pauseAsync(context.Background(), s)
	c.waitFor("ACTIVE t1")
	require.Equal(t, wfv1.TakeoverState_TAKEOVER_STATE_ACTIVE, state(s))
	require.NotNil(t, s.Takeover().StartTime)
	select {
	case <-done:
		t.Fatal("Pause returned while the takeover is active")
	default:
	}
	require.NoError(t, s.HandBack("t1", "over to you"))
	res := receive(t, done)
	require.NoError(t, res.err)
	require.True(t, res.ok)
	require.Equal(t, "t1", res.turn.TakeoverID)
	require.Equal(t, "key:alice", res.turn.By)
	require.Equal(t, "handed_back", res.turn.EndReason)
	require.Equal(t, "over to you", res.turn.Note)
	require.False(t, res.turn.End.Before(res.turn.Start))
	require.Empty(t, res.turn.Actions)
	c.waitFor("ACTIVE t1", "ENDED t1 handed_back")
	require.Nil(t, s.Takeover())

	// Ended: handing back again is a no-op, requesting it again fails,
	// and Pause has nothing more.
	require.NoError(t, s.HandBack("t1", ""))
	require.ErrorIs(t, s.Request(takeover("t1")), fault.ErrFailedPrecondition)
	require.ErrorIs(t, s.HandBack("t9", ""), fault.ErrFailedPrecondition)
	_, ok, _ := s.Pause(context.Background())
	require.False(t, ok)
}

func TestSessionRequestDuringIdle(t *testing.T) {
	t.Parallel()
	s, c := newTestSession(t, SessionConfig{})
	resume := s.Idle()
	require.NoError(t, s.Request(takeover("t1")))
	// Idle: ACTIVE at once.
	require.Equal(t, wfv1.TakeoverState_TAKEOVER_STATE_ACTIVE, state(s))
	c.waitFor("ACTIVE t1")

	resumed := make(chan error, 1)
	go func() { resumed <- resume(context.Background()) }()
	select {
	case <-resumed:
		t.Fatal("resume returned while the takeover is active")
	default:
	}
	require.NoError(t, s.HandBack("t1", "done"))
	require.NoError(t, receive(t, resumed))
	require.NoError(t, resume(context.Background()), "a second resume returns at once")

	// The next Pause returns the finished turn without waiting, then
	// nothing.
	turn, ok, err := s.Pause(context.Background())
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "handed_back", turn.EndReason)
	require.Equal(t, "done", turn.Note)
	_, ok, _ = s.Pause(context.Background())
	require.False(t, ok)
	c.waitFor("ACTIVE t1", "ENDED t1 handed_back")

	// A takeover already requested when the runner goes idle is ACTIVE at
	// once too; resume with an ended ctx gives up waiting.
	require.NoError(t, s.Request(takeover("t2")))
	require.Equal(t, wfv1.TakeoverState_TAKEOVER_STATE_REQUESTED, state(s))
	resume = s.Idle()
	require.Equal(t, wfv1.TakeoverState_TAKEOVER_STATE_ACTIVE, state(s))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, resume(ctx), context.Canceled)
	require.Equal(t, wfv1.TakeoverState_TAKEOVER_STATE_ACTIVE, state(s), "still the person's")
}

// A second takeover during one approval wait, after a first ended there,
// waits for the runner to take the first's turn: neither turn is lost.
func TestSessionSecondTakeoverDuringIdle(t *testing.T) {
	t.Parallel()
	s, c := newTestSession(t, SessionConfig{})
	resume := s.Idle()
	require.NoError(t, s.Request(takeover("t1")))
	require.NoError(t, s.HandBack("t1", "first"))
	require.NoError(t, s.Request(takeover("t2")))
	require.Equal(t, wfv1.TakeoverState_TAKEOVER_STATE_REQUESTED, state(s), "the first turn is not taken yet")
	require.NoError(t, resume(context.Background()))

	turn, ok, err := s.Pause(context.Background())
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "t1", turn.TakeoverID)
	require.Equal(t, "first", turn.Note)
	require.Equal(t, wfv1.TakeoverState_TAKEOVER_STATE_REQUESTED, state(s))

	done := pauseAsync(context.Background(), s)
	c.waitFor("ACTIVE t1", "ENDED t1 handed_back", "ACTIVE t2")
	require.NoError(t, s.HandBack("t2", "second"))
	res := receive(t, done)
	require.True(t, res.ok)
	require.Equal(t, "t2", res.turn.TakeoverID)
	require.Equal(t, "second", res.turn.Note)
}

func TestSessionInputRejected(t *testing.T) {
	t.Parallel()
	s, _ := newTestSession(t, SessionConfig{})
	ctx := context.Background()
	in := []*wfv1.LiveInput{textIn("x")}
	require.ErrorIs(t, s.Input(ctx, "t1", in), fault.ErrFailedPrecondition, "no takeover")
	require.NoError(t, s.Request(takeover("t1")))
	require.ErrorIs(t, s.Input(ctx, "t1", in), fault.ErrFailedPrecondition, "requested, not active")
	resume := s.Idle()
	defer func() { _ = s.HandBack("t1", ""); _ = resume(ctx) }()
	require.ErrorIs(t, s.Input(ctx, "t2", in), fault.ErrFailedPrecondition, "another takeover's id")
	require.ErrorIs(t, s.Input(ctx, "t1", in), fault.ErrFailedPrecondition, "no page yet")
}

func TestSessionWithdrawn(t *testing.T) {
	t.Parallel()
	s, c := newTestSession(t, SessionConfig{})
	require.NoError(t, s.Request(takeover("t1")))
	require.NoError(t, s.HandBack("t1", ""))
	require.Nil(t, s.Takeover())
	c.waitFor("ENDED t1 withdrawn")
	_, ok, err := s.Pause(context.Background())
	require.NoError(t, err)
	require.False(t, ok, "a withdrawn takeover never pauses the run")
}

func TestSessionIdleTimeout(t *testing.T) {
	t.Parallel()
	s, c := newTestSession(t, SessionConfig{IdleTimeout: 50 * time.Millisecond})
	require.NoError(t, s.Request(takeover("t1")))
	res := receive(t, pauseAsync(context.Background(), s))
	require.True(t, res.ok)
	require.Equal(t, "idle", res.turn.EndReason)
	c.waitFor("ACTIVE t1", "ENDED t1 idle")
}

func TestSessionEnds(t *testing.T) {
	t.Parallel()
	t.Run("Close while active", func(t *testing.T) {
		t.Parallel()
		s, c := newTestSession(t, SessionConfig{})
		require.NoError(t, s.Request(takeover("t1")))
		done := pauseAsync(context.Background(), s)
		c.waitFor("ACTIVE t1")
		frames, _ := s.Subscribe()
		s.Close()
		res := receive(t, done)
		require.True(t, res.ok)
		require.Equal(t, "run_ended", res.turn.EndReason)
		c.waitFor("ACTIVE t1", "ENDED t1 run_ended")
		_, open := <-frames
		require.False(t, open, "Close closes subscriptions")
		require.ErrorIs(t, s.Request(takeover("t2")), fault.ErrFailedPrecondition)
		_, ok, _ := s.Pause(context.Background())
		require.False(t, ok)
		frames, cancel := s.Subscribe()
		_, open = <-frames
		require.False(t, open)
		cancel()
		s.Close()
	})
	t.Run("Close while requested", func(t *testing.T) {
		t.Parallel()
		s, c := newTestSession(t, SessionConfig{})
		require.NoError(t, s.Request(takeover("t1")))
		s.Close()
		c.waitFor("ENDED t1 run_ended")
		_, ok, _ := s.Pause(context.Background())
		require.False(t, ok)
	})
	t.Run("Pause's ctx ends", func(t *testing.T) {
		t.Parallel()
		s, c := newTestSession(t, SessionConfig{})
		require.NoError(t, s.Request(takeover("t1")))
		ctx, cancel := context.WithCancel(context.Background())
		done := pauseAsync(ctx, s)
		c.waitFor("ACTIVE t1")
		cancel()
		res := receive(t, done)
		require.True(t, res.ok)
		require.Equal(t, "run_ended", res.turn.EndReason)
		c.waitFor("ACTIVE t1", "ENDED t1 run_ended")
	})
	t.Run("OnChange hands back", func(t *testing.T) {
		// The relay ends a takeover the API withdrew meanwhile from inside
		// OnChange: no deadlock, and the changes stay in order.
		t.Parallel()
		s, c := newTestSession(t, SessionConfig{})
		c.onEnter = func(tk *wfv1.Takeover) {
			if tk.State == wfv1.TakeoverState_TAKEOVER_STATE_ACTIVE {
				require.NoError(t, s.HandBack(tk.Id, ""))
			}
		}
		require.NoError(t, s.Request(takeover("t1")))
		res := receive(t, pauseAsync(context.Background(), s))
		require.True(t, res.ok)
		require.Equal(t, "handed_back", res.turn.EndReason)
		c.waitFor("ACTIVE t1", "ENDED t1 handed_back")
	})
}

// The login page of the gesture test: typing goes into a labelled field,
// Enter submits, the button navigates.
const gesturePage = `<!doctype html><title>login</title>
<style>body{margin:0} input,button{position:absolute;left:100px;width:200px;height:30px}</style>
<form onsubmit="event.preventDefault(); out.textContent = 'submitted ' + user.value.length">
  <input id=user aria-label="User name" style="top:0">
  <input id=other aria-label="Other" style="top:40px">
  <button type=submit style="top:300px">Submit</button>
</form>
<button id=go style="top:100px" onclick="location.href = '/done'">Sign in</button>
<p id=out style="position:absolute;top:160px">-</p>
<div style="height:4000px"></div>`

func TestSessionTakeoverGestures(t *testing.T) {
	t.Parallel()
	base := serveHTML(t, map[string]string{"/": gesturePage, "/done": `<!doctype html><title>done</title><h1>Done</h1>`})
	page := openPage(t, newBrowserSession(t), base+"/")
	ctx := context.Background()
	redact := func(s string) string { return strings.ReplaceAll(s, "User name", "[field]") }
	s, c := newTestSession(t, SessionConfig{Redact: redact})
	s.PageChanged(page)
	require.NoError(t, s.Request(takeover("t1")))
	done := pauseAsync(ctx, s)
	c.waitFor("ACTIVE t1")

	const typed, pasted = "zqxjvk", "wyvern"
	batches := [][]*wfv1.LiveInput{
		clickIn(150, 15),
		append(typeIn(typed), textIn(pasted)),
		keyIn("Backspace", "Backspace", 0),
		keyIn("Enter", "Enter", 0),
		append(keyIn("Control", "ControlLeft", 2), keyIn("a", "KeyA", 2)...),
		keyIn("Tab", "Tab", 0),
		append(typeIn("ab"), wheelIn(400, 400, 0, 120), wheelIn(400, 400, 0, 80)),
	}
	for _, b := range batches {
		require.NoError(t, s.Input(ctx, "t1", b))
	}
	requireTruthy(t, page, `out.textContent === 'submitted 11'`)
	requireTruthy(t, page, `other.value === 'ab' && window.scrollY > 0`)
	require.NoError(t, s.Input(ctx, "t1", []*wfv1.LiveInput{wheelIn(400, 400, 0, -1000)}))
	requireTruthy(t, page, `window.scrollY === 0`)
	require.NoError(t, s.Input(ctx, "t1", clickIn(150, 115)))
	require.Eventually(t, func() bool {
		u, _, err := page.Location(ctx)
		return err == nil && u == base+"/done"
	}, wait, 10*time.Millisecond)
	// The navigation is noted when next seen.
	require.NoError(t, s.Input(ctx, "t1", []*wfv1.LiveInput{mouseIn(wfv1.MouseInput_TYPE_MOVE, 5, 5, 0)}))
	require.ErrorIs(t, s.Input(ctx, "t2", clickIn(1, 1)), fault.ErrFailedPrecondition)
	require.NoError(t, s.HandBack("t1", "logged in"))

	res := receive(t, done)
	require.True(t, res.ok)
	type act struct {
		Tool string
		Args map[string]any
	}
	var got []act
	for _, a := range res.turn.Actions {
		require.Equal(t, "ok", a.Outcome)
		got = append(got, act{a.Tool, a.Arguments})
	}
	want := []act{
		{"human_click", map[string]any{"x": 150, "y": 15, "button": "left", "target": `textbox "[field]"`}},
		{"human_type", map[string]any{"characters": len(typed) + len(pasted), "target": `textbox "[field]"`}},
		{"human_key", map[string]any{"key": "Backspace"}},
		{"human_key", map[string]any{"key": "Enter"}},
		{"human_key", map[string]any{"key": "Control+A"}},
		{"human_key", map[string]any{"key": "Tab"}},
		{"human_type", map[string]any{"characters": 2, "target": `textbox "Other"`}},
		{"human_scroll", map[string]any{"dx": 0, "dy": -800}},
		{"human_click", map[string]any{"x": 150, "y": 115, "button": "left", "target": `button "Sign in"`}},
		{"human_navigate", map[string]any{"url": base + "/done"}},
	}
	require.Equal(t, want, got)
	// Typed text is nowhere in the turn.
	all := fmt.Sprintf("%+v", res.turn)
	for _, secret := range []string{typed, pasted, "zq", "wy", "User name"} {
		require.NotContains(t, all, secret)
	}
	c.waitFor("ACTIVE t1", "ENDED t1 handed_back")
}

// requireTruthy waits until the page's expression is true.
func requireTruthy(t *testing.T, page *browser.Page, expr string) {
	t.Helper()
	require.Eventually(t, func() bool {
		ok, err := page.Truthy(context.Background(), expr)
		return err == nil && ok
	}, wait, 10*time.Millisecond, expr)
}

// TestSessionFrames is not parallel: it ends by checking that the Session
// left no goroutine behind.
func TestSessionFrames(t *testing.T) {
	base := serveHTML(t, map[string]string{
		"/a": `<!doctype html><title>a</title><body style="background:#fff">A`,
		"/b": `<!doctype html><title>b</title><body style="background:#0f0">B`,
		"/c": `<!doctype html><title>c</title><body style="background:#00f">C`,
	})
	bs := newBrowserSession(t)
	pageA := openPage(t, bs, base+"/a")
	s := NewSession(SessionConfig{RunID: "run-1", MaxWidth: 640, MaxHeight: 400})
	defer s.Close()
	s.PageChanged(pageA)

	// A subscriber that never reads holds one stale frame and blocks
	// nobody.
	_, cancelSlow := s.Subscribe()
	defer cancelSlow()
	frames, cancel := s.Subscribe()
	defer cancel()
	first := receive(t, frames)
	require.Equal(t, base+"/a", first.URL)
	require.Equal(t, [2]int{1280, 800}, [2]int{first.Width, first.Height})
	img, err := jpeg.Decode(bytes.NewReader(first.JPEG))
	require.NoError(t, err)
	require.Equal(t, 640, img.Bounds().Dx())

	// Repaints keep coming to the reading subscriber.
	last := first
	for i := range 3 {
		ok, err := pageA.Truthy(context.Background(), fmt.Sprintf(`(document.body.textContent = 'A%d', true)`, i))
		require.NoError(t, err)
		require.True(t, ok)
		f := receive(t, frames)
		require.Greater(t, f.Seq, last.Seq)
		last = f
	}

	// A late subscriber gets the newest frame at once.
	late, cancelLate := s.Subscribe()
	select {
	case f := <-late:
		require.GreaterOrEqual(t, f.Seq, last.Seq)
	default:
		t.Fatal("no frame at once")
	}
	cancelLate()
	requireClosed(t, late)

	// The screencast follows the run's page: pageA moves on to /b, but
	// only pageB's /c is shown once the run's page is pageB.
	require.NoError(t, pageA.Navigate(context.Background(), base+"/b", 20*time.Second))
	pageB := openPage(t, bs, base+"/c")
	s.PageChanged(pageB)
	deadline := time.After(wait)
	for f := last; f.URL != base+"/c"; {
		select {
		case f = <-frames:
			require.Greater(t, f.Seq, last.Seq)
			last = f
		case <-deadline:
			t.Fatalf("no frame of the new page; the last showed %s", f.URL)
		}
	}

	cancel()
	cancelSlow()
	s.Close()
	requireClosed(t, frames)
	require.Eventually(t, func() bool { return !leftBehind() }, wait, 10*time.Millisecond, "goroutines left: %s", stacks())
}

// requireClosed drains ch (a frame may still be buffered when its
// subscription ends) and fails unless it is closed within wait.
func requireClosed(t *testing.T, ch <-chan Frame) {
	t.Helper()
	deadline := time.After(wait)
	for {
		select {
		case _, open := <-ch:
			if !open {
				return
			}
		case <-deadline:
			t.Fatal("the channel was not closed")
		}
	}
}

func stacks() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}

// leftBehind reports whether a goroutine of a Session or of a screencast
// still runs.
func leftBehind() bool {
	all := stacks()
	return strings.Contains(all, "live.(*Session)") || strings.Contains(all, "(*Page).StartScreencast")
}

// Characters a keyboard layout makes of a chord (AltGr arrives as
// Control+Alt, macOS's Option as Alt) and key values of several code
// points are typed and counted, never written down; a chord that is no
// text names no character.
func TestSessionTakeoverLayoutKeys(t *testing.T) {
	t.Parallel()
	base := serveHTML(t, map[string]string{"/": gesturePage})
	page := openPage(t, newBrowserSession(t), base+"/")
	ctx := context.Background()
	s, c := newTestSession(t, SessionConfig{})
	s.PageChanged(page)
	require.NoError(t, s.Request(takeover("t1")))
	done := pauseAsync(ctx, s)
	c.waitFor("ACTIVE t1")

	const altGr = 2 | 1 // Control+Alt
	in := clickIn(150, 15)
	in = append(in, keyIn("@", "KeyQ", altGr)...)
	in = append(in, keyIn("€", "KeyE", altGr)...)
	in = append(in, keyIn("ø", "KeyO", 1)...)
	in = append(in, keyIn("e\u0301", "", 0)...)
	in = append(in, keyIn("§", "Digit3", 4)...)   // Meta: a shortcut
	in = append(in, keyIn("-", "Minus", 2)...)    // Control: a shortcut
	in = append(in, keyIn("s", "KeyS", 2|4|8)...) // a named shortcut
	require.NoError(t, s.Input(ctx, "t1", in))
	requireTruthy(t, page, `user.value === '@€øe\u0301'`)
	require.NoError(t, s.HandBack("t1", ""))

	res := receive(t, done)
	require.True(t, res.ok)
	var got []string
	for _, a := range res.turn.Actions {
		got = append(got, fmt.Sprintf("%s %v %v", a.Tool, a.Arguments["characters"], a.Arguments["key"]))
	}
	require.Equal(t, []string{"human_click <nil> <nil>", "human_type 5 <nil>",
		"human_key <nil> Meta+character", "human_key <nil> Control+character", "human_key <nil> Control+Meta+Shift+S"}, got)
	all := fmt.Sprintf("%+v", res.turn.Actions)
	for _, secret := range []string{"@", "€", "ø", "\u0301", "§", "-"} {
		require.NotContains(t, all, secret)
	}
}

// Frames reuse the page's URL for a while instead of asking the browser
// for it once per frame (each frame waits for it before it is
// acknowledged); a new page's URL is read at once.
func TestSessionFrameURLReused(t *testing.T) {
	t.Parallel()
	base := serveHTML(t, map[string]string{
		"/a": `<!doctype html><title>a</title>A`,
		"/b": `<!doctype html><title>b</title>B`,
	})
	bs := newBrowserSession(t)
	pageA := openPage(t, bs, base+"/a")
	s, _ := newTestSession(t, SessionConfig{})
	var mu sync.Mutex
	calls := map[*browser.Page]int{}
	read := s.location
	s.location = func(ctx context.Context, pg *browser.Page) (string, error) {
		mu.Lock()
		calls[pg]++
		mu.Unlock()
		return read(ctx, pg)
	}
	s.urlTTL = time.Hour
	count := func(pg *browser.Page) int {
		mu.Lock()
		defer mu.Unlock()
		return calls[pg]
	}
	s.PageChanged(pageA)
	frames, cancel := s.Subscribe()
	defer cancel()
	const n = 4
	var last Frame
	for i := range n {
		ok, err := pageA.Truthy(context.Background(), fmt.Sprintf(`(document.body.textContent = 'A%d', true)`, i))
		require.NoError(t, err)
		require.True(t, ok)
		last = receive(t, frames)
		require.Equal(t, base+"/a", last.URL)
	}
	require.Equal(t, 1, count(pageA), "one URL read for %d frames", n)

	pageB := openPage(t, bs, base+"/b")
	s.PageChanged(pageB)
	for f := last; f.URL != base+"/b"; {
		f = receive(t, frames)
	}
	require.Equal(t, 1, count(pageB))
}
