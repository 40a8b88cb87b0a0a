package live

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/browser"
	"github.com/wayfinder/wayfinder/internal/fault"
	"github.com/wayfinder/wayfinder/internal/runner"
)

// Tools of the gestures a person's turn records (runner.HumanTurn).
const (
	toolClick    = "human_click"
	toolType     = "human_type"
	toolKey      = "human_key"
	toolScroll   = "human_scroll"
	toolNavigate = "human_navigate"
)

// recorder describes a person's gestures as runner actions: a click names
// its element, typing says how many characters went into which element
// (never what they were), other keys are named, scrolls and typing
// coalesce.
type recorder struct {
	actions []runner.Action
	// typing: the last action is a human_type still growing.
	typing bool
	// buttons are the mouse buttons held (MouseEvent.Buttons bits).
	buttons int
	lastURL string
}

func (r *recorder) add(a runner.Action) {
	a.Outcome = "ok"
	r.actions = append(r.actions, a)
	r.typing = false
}

func (r *recorder) lastTool(tool string) *runner.Action {
	if n := len(r.actions); n > 0 && r.actions[n-1].Tool == tool {
		return &r.actions[n-1]
	}
	return nil
}

func (r *recorder) click(x, y float64, button, target string, count int) {
	if count > 1 {
		if a := r.lastTool(toolClick); a != nil {
			a.Arguments["count"] = count
			return
		}
	}
	args := map[string]any{"x": int(math.Round(x)), "y": int(math.Round(y)), "button": button}
	if target != "" {
		args["target"] = target
	}
	r.add(runner.Action{Tool: toolClick, Arguments: args})
}

// typed counts n characters typed into target ("" when unknown); the
// target is asked only when a new run of typing starts.
func (r *recorder) typed(n int, target func() string) {
	if a := r.lastTool(toolType); a != nil && r.typing {
		a.Arguments["characters"] = a.Arguments["characters"].(int) + n
		return
	}
	args := map[string]any{"characters": n}
	if t := target(); t != "" {
		args["target"] = t
	}
	r.add(runner.Action{Tool: toolType, Arguments: args})
	r.typing = true
}

func (r *recorder) key(name string) {
	if a := r.lastTool(toolKey); a != nil && a.Arguments["key"] == name {
		c, _ := a.Arguments["count"].(int)
		a.Arguments["count"] = max(c, 1) + 1
		return
	}
	r.add(runner.Action{Tool: toolKey, Arguments: map[string]any{"key": name}})
}

func (r *recorder) scroll(dx, dy float64) {
	if a := r.lastTool(toolScroll); a != nil {
		a.Arguments["dx"] = a.Arguments["dx"].(int) + int(math.Round(dx))
		a.Arguments["dy"] = a.Arguments["dy"].(int) + int(math.Round(dy))
		return
	}
	r.add(runner.Action{Tool: toolScroll, Arguments: map[string]any{"dx": int(math.Round(dx)), "dy": int(math.Round(dy))}})
}

// navigated notes the page's (redacted) URL; a change is a navigation.
func (r *recorder) navigated(url string) {
	if url == "" || url == r.lastURL {
		return
	}
	first := r.lastURL == ""
	r.lastURL = url
	if !first {
		r.add(runner.Action{Tool: toolNavigate, Arguments: map[string]any{"url": url}})
	}
}

// modifierKeys are keys that only modify others; pressing one alone is not
// a gesture.
var modifierKeys = map[string]bool{"Shift": true, "Control": true, "Alt": true, "Meta": true, "AltGraph": true, "CapsLock": true}

// chordName names a key pressed with the modifiers held, for the record:
// "Enter", "Control+A", "Shift+Tab". It names only named keys and Control
// or Meta with an ASCII letter or digit; any other character is never
// written down (a chord a keyboard layout did not make text of, such as
// Meta+€, is "Meta+character").
func chordName(key string, mods int) string {
	var b strings.Builder
	for _, m := range []struct {
		bit  int
		name string
	}{{browser.ModCtrl, "Control"}, {browser.ModAlt, "Alt"}, {browser.ModMeta, "Meta"}, {browser.ModShift, "Shift"}} {
		if mods&m.bit != 0 && key != m.name {
			b.WriteString(m.name + "+")
		}
	}
	switch {
	case key == " ":
		key = "Space"
	case utf8.RuneCountInString(key) == 1:
		c := key[0]
		shortcut := mods&(browser.ModCtrl|browser.ModMeta) != 0
		if shortcut && ('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			key = strings.ToUpper(key)
		} else {
			key = "character"
		}
	case !isKeyName(key):
		key = "character"
	}
	b.WriteString(key)
	return b.String()
}

// isKeyName reports whether key is a DOM key name ("Enter", "F5"): ASCII
// letters and digits only.
func isKeyName(key string) bool {
	for i := 0; i < len(key); i++ {
		c := key[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return key != ""
}

// Input applies a person's input to the run's page, in order, and records
// their gestures. Only the ACTIVE takeover's ID is accepted: any other is
// an error wrapping fault.ErrFailedPrecondition (so is a takeover that
// ends during the batch: the rest is dropped). Coordinates are the
// viewport's CSS pixels.
func (s *Session) Input(ctx context.Context, takeoverID string, in []*wfv1.LiveInput) error {
	s.inputMu.Lock()
	defer s.inputMu.Unlock()
	pg, tn, err := s.activeTurn(takeoverID)
	if err != nil {
		return err
	}
	if pg == nil {
		return fmt.Errorf("run %s has no page yet: %w", s.cfg.RunID, fault.ErrFailedPrecondition)
	}
	s.noteURL(ctx, pg, tn)
	for i, ev := range in {
		if i > 0 {
			if _, _, err := s.activeTurn(takeoverID); err != nil {
				return err
			}
		}
		if err := s.apply(ctx, pg, tn, ev); err != nil {
			return fmt.Errorf("live input %d: %w", i, err)
		}
	}
	s.noteURL(ctx, pg, tn)
	return nil
}

// activeTurn returns the page and turn of takeover id when it is ACTIVE,
// and counts the call as input (for the idle limit).
func (s *Session) activeTurn(id string) (*browser.Page, *turn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.turn == nil || s.turn.id != id {
		return nil, nil, fmt.Errorf("run %s: takeover %s is not active: %w", s.cfg.RunID, id, fault.ErrFailedPrecondition)
	}
	s.turn.lastInput = time.Now()
	return s.page, s.turn, nil
}

// record runs f on tn's recorder under the Session's lock, while tn is
// the ACTIVE turn: once it ended, its actions belong to Pause's caller.
func (s *Session) record(tn *turn, f func(r *recorder)) {
	s.mu.Lock()
	if s.turn == tn {
		f(&tn.rec)
	}
	s.mu.Unlock()
}

// noteURL records a navigation when the page's URL changed.
func (s *Session) noteURL(ctx context.Context, pg *browser.Page, tn *turn) {
	url, err := s.pageURL(ctx, pg, true)
	if err != nil {
		return
	}
	s.record(tn, func(r *recorder) { r.navigated(url) })
}

// describe names an element for the record, redacted; "" when it cannot.
func (s *Session) describe(ctx context.Context, f func(context.Context) (browser.ElementInfo, error)) string {
	cctx, cancel := context.WithTimeout(ctx, cdpCall)
	defer cancel()
	info, err := f(cctx)
	if err != nil {
		s.log.Debug("live: element not described", "err", err)
		return ""
	}
	return s.cfg.Redact(info.String())
}

// apply passes one input event to pg and records it.
func (s *Session) apply(ctx context.Context, pg *browser.Page, tn *turn, in *wfv1.LiveInput) error {
	switch {
	case in.GetMouse() != nil:
		return s.applyMouse(ctx, pg, tn, in.GetMouse())
	case in.GetKey() != nil:
		return s.applyKey(ctx, pg, tn, in.GetKey())
	default:
		text, ok := in.GetEvent().(*wfv1.LiveInput_Text)
		if !ok || text.Text == "" {
			return nil
		}
		target := func() string { return s.describe(ctx, pg.FocusedElement) }
		n := utf8.RuneCountInString(text.Text)
		s.typed(tn, n, target)
		return pg.InsertText(ctx, text.Text)
	}
}

// typed records n typed characters; the target is looked up (a browser
// call) outside the lock, only when a new run of typing starts.
func (s *Session) typed(tn *turn, n int, target func() string) {
	s.mu.Lock()
	growing := tn.rec.typing && tn.rec.lastTool(toolType) != nil
	s.mu.Unlock()
	name := ""
	if !growing {
		name = target()
	}
	s.record(tn, func(r *recorder) { r.typed(n, func() string { return name }) })
}

var buttonNames = map[wfv1.MouseInput_Button]struct {
	b    browser.MouseButton
	bit  int
	name string
}{
	wfv1.MouseInput_BUTTON_LEFT:   {browser.ButtonLeft, 1, "left"},
	wfv1.MouseInput_BUTTON_RIGHT:  {browser.ButtonRight, 2, "right"},
	wfv1.MouseInput_BUTTON_MIDDLE: {browser.ButtonMiddle, 4, "middle"},
}

func (s *Session) applyMouse(ctx context.Context, pg *browser.Page, tn *turn, m *wfv1.MouseInput) error {
	btn := buttonNames[m.GetButton()]
	ev := browser.MouseEvent{
		X: m.GetX(), Y: m.GetY(), Button: btn.b, ClickCount: int(m.GetClickCount()),
		DeltaX: m.GetDeltaX(), DeltaY: m.GetDeltaY(), Modifiers: int(m.GetModifiers()),
	}
	s.mu.Lock()
	held := tn.rec.buttons
	s.mu.Unlock()
	switch m.GetType() {
	case wfv1.MouseInput_TYPE_DOWN:
		ev.Type = browser.MouseDown
		held |= btn.bit
		if btn.name != "" {
			target := ""
			if ev.ClickCount <= 1 {
				target = s.describe(ctx, func(c context.Context) (browser.ElementInfo, error) { return pg.ElementAt(c, ev.X, ev.Y) })
			}
			s.record(tn, func(r *recorder) { r.click(ev.X, ev.Y, btn.name, target, ev.ClickCount) })
		}
	case wfv1.MouseInput_TYPE_UP:
		ev.Type = browser.MouseUp
		held &^= btn.bit
	case wfv1.MouseInput_TYPE_WHEEL:
		ev.Type = browser.MouseWheel
		s.record(tn, func(r *recorder) { r.scroll(ev.DeltaX, ev.DeltaY) })
	default:
		ev.Type = browser.MouseMove
	}
	ev.Buttons = held
	s.record(tn, func(r *recorder) { r.buttons = held })
	return pg.DispatchMouse(ctx, ev)
}

func (s *Session) applyKey(ctx context.Context, pg *browser.Page, tn *turn, k *wfv1.KeyInput) error {
	ev := browser.KeyEvent{
		Up: k.GetType() == wfv1.KeyInput_TYPE_UP, Key: k.GetKey(), Code: k.GetCode(), Modifiers: int(k.GetModifiers()),
	}
	if !ev.Up && ev.Key != "" && !modifierKeys[ev.Key] {
		if text := ev.Text(); text != "" {
			n := utf8.RuneCountInString(text)
			s.typed(tn, n, func() string { return s.describe(ctx, pg.FocusedElement) })
		} else {
			name := chordName(ev.Key, ev.Modifiers)
			s.record(tn, func(r *recorder) { r.key(name) })
		}
	}
	return pg.DispatchKey(ctx, ev)
}
