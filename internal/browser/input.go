package browser

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/go-rod/rod/lib/proto"
	"github.com/ysmood/gson"
)

// Raw input: a person's mouse and keyboard passed through to a page (the
// live view's takeover), as opposed to the actions of Do, which find their
// element first.

// ErrPageClosed: the page's tab was closed.
var ErrPageClosed = errors.New("page closed")

// Modifier bits of input events (CDP's): held Alt, Control, Meta, Shift.
const (
	ModAlt   = modAlt
	ModCtrl  = modControl
	ModMeta  = modMeta
	ModShift = modShift
)

// MouseEventType is what a mouse event does.
type MouseEventType int

// Mouse event types.
const (
	MouseMove MouseEventType = iota
	MouseDown
	MouseUp
	MouseWheel
)

// MouseButton names a mouse button.
type MouseButton int

// Mouse buttons.
const (
	ButtonNone MouseButton = iota
	ButtonLeft
	ButtonMiddle
	ButtonRight
)

// MouseEvent is one pointer event in the viewport's CSS pixels.
type MouseEvent struct {
	Type MouseEventType
	X, Y float64
	// Button is the button pressed or released (MouseDown, MouseUp).
	Button MouseButton
	// Buttons are the buttons held during the event, a bit field: Left=1,
	// Right=2, Middle=4 (a move with the left button held drags).
	Buttons int
	// ClickCount is 1 for a click, 2 for the second press of a double
	// click. Default 1 for MouseDown and MouseUp.
	ClickCount int
	// DeltaX and DeltaY are a MouseWheel's scroll in CSS pixels.
	DeltaX, DeltaY float64
	// Modifiers held: ModAlt | ModCtrl | ModMeta | ModShift.
	Modifiers int
}

// KeyEvent is one key going down or up, named as DOM KeyboardEvents name
// keys.
type KeyEvent struct {
	// Up is true for a release, false for a press.
	Up bool
	// Key is KeyboardEvent.key: "a", "A", "Enter", "Backspace", "ArrowLeft".
	Key string
	// Code is KeyboardEvent.code ("KeyA", "Enter"); default the US
	// keyboard's code for Key.
	Code string
	// Modifiers held: ModAlt | ModCtrl | ModMeta | ModShift.
	Modifiers int
}

// Text returns the characters a press of the key types, "" for none: a
// named key ("Enter", "Tab", "ArrowLeft"), a modifier, or a shortcut. A
// printable key value types itself, whatever its length in code points (a
// layout or an input method can produce a cluster), alone or with Shift,
// with Alt (macOS's Option), or with Control and Alt together (AltGr on
// Windows) — but never with Meta, nor with Control alone: those are
// shortcuts.
func (k KeyEvent) Text() string {
	ctrl, alt, meta := k.Modifiers&ModCtrl != 0, k.Modifiers&ModAlt != 0, k.Modifiers&ModMeta != 0
	if meta || (ctrl && !alt) || !textKey(k.Key) {
		return ""
	}
	return k.Key
}

// textKey reports whether a KeyboardEvent.key value is text rather than a
// key's name: names ("Enter", "F5", "Dead") are ASCII letters and digits
// longer than one character; text has no control characters and at least
// one visible one.
func textKey(key string) bool {
	if key == "" || !utf8.ValidString(key) {
		return false
	}
	if utf8.RuneCountInString(key) > 1 && isKeyName(key) {
		return false
	}
	visible := false
	for _, r := range key {
		switch {
		case unicode.IsControl(r):
			return false
		case unicode.IsPrint(r):
			visible = true
		}
	}
	return visible
}

// isKeyName reports whether key looks like a DOM key name: ASCII letters
// and digits only.
func isKeyName(key string) bool {
	for i := 0; i < len(key); i++ {
		c := key[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// maxKeyText is the longest text (UTF-16 units) Chromium takes with a key
// event; longer text is inserted after the key's press.
const maxKeyText = 4

// DispatchMouse passes one mouse event to the page. It brings the page's
// tab to the front first (only that tab gets input and paints).
func (pg *Page) DispatchMouse(ctx context.Context, e MouseEvent) error {
	ev := proto.InputDispatchMouseEvent{
		X: e.X, Y: e.Y, Modifiers: e.Modifiers, Buttons: gson.Int(e.Buttons),
	}
	switch e.Button {
	case ButtonLeft:
		ev.Button = proto.InputMouseButtonLeft
	case ButtonMiddle:
		ev.Button = proto.InputMouseButtonMiddle
	case ButtonRight:
		ev.Button = proto.InputMouseButtonRight
	default:
		ev.Button = proto.InputMouseButtonNone
	}
	switch e.Type {
	case MouseDown, MouseUp:
		ev.Type = proto.InputDispatchMouseEventTypeMousePressed
		if e.Type == MouseUp {
			ev.Type = proto.InputDispatchMouseEventTypeMouseReleased
		}
		ev.ClickCount = max(e.ClickCount, 1)
	case MouseWheel:
		ev.Type = proto.InputDispatchMouseEventTypeMouseWheel
		ev.DeltaX, ev.DeltaY = e.DeltaX, e.DeltaY
	default:
		ev.Type = proto.InputDispatchMouseEventTypeMouseMoved
	}
	return pg.input(ctx, func() error {
		if err := ev.Call(pg.p.Context(ctx)); err != nil {
			return classify(fmt.Errorf("mouse %s at (%.0f, %.0f): %w", ev.Type, e.X, e.Y, err))
		}
		return nil
	})
}

// DispatchKey passes one key press or release to the page, with the
// virtual key code and text a real US keyboard gives it, so that Enter
// submits a form, Backspace deletes, Tab moves the focus and characters
// type. Keys the US keyboard does not have are passed by name (and type
// their character when they are one).
func (pg *Page) DispatchKey(ctx context.Context, e KeyEvent) error {
	k, ok := lookupKey(e.Key)
	if !ok || (utf8.RuneCountInString(e.Key) > 1 && !strings.EqualFold(k.key, e.Key)) {
		// Unknown, or an alias ("esc") DOM never uses: pass it as named.
		k = keyDef{key: e.Key}
	}
	if e.Code != "" && e.Code != k.code {
		k.code = e.Code
		if k.modifier != 0 && strings.HasSuffix(e.Code, "Right") {
			k.location = 2
		}
	}
	text, mods := e.Text(), e.Modifiers
	if text != "" {
		// The person's keyboard made a character of the chord (AltGr,
		// Option): the page gets the character, not a shortcut (Chromium
		// inserts nothing with Control held).
		mods &^= ModCtrl | ModAlt
	} else if strings.EqualFold(k.key, "Enter") && e.Modifiers&(ModCtrl|ModAlt|ModMeta) == 0 {
		text = "\r"
	}
	if e.Up {
		text = ""
	}
	long := len(utf16.Encode([]rune(text))) > maxKeyText
	typ := proto.InputDispatchKeyEventTypeRawKeyDown
	switch {
	case e.Up:
		typ = proto.InputDispatchKeyEventTypeKeyUp
	case text != "" && !long:
		typ = proto.InputDispatchKeyEventTypeKeyDown
	}
	return pg.input(ctx, func() error {
		if long {
			if err := pg.keyEvent(ctx, typ, k, mods, ""); err != nil {
				return err
			}
			if err := (proto.InputInsertText{Text: text}).Call(pg.p.Context(ctx)); err != nil {
				return classify(fmt.Errorf("insert text: %w", err))
			}
			return nil
		}
		return pg.keyEvent(ctx, typ, k, mods, text)
	})
}

// InsertText inserts text at the focus, as an input method or a paste
// does (no key events).
func (pg *Page) InsertText(ctx context.Context, text string) error {
	return pg.input(ctx, func() error {
		if err := (proto.InputInsertText{Text: text}).Call(pg.p.Context(ctx)); err != nil {
			return classify(fmt.Errorf("insert text: %w", err))
		}
		return nil
	})
}

// input runs f with the session's input to itself (as an action holds it),
// the page in front.
func (pg *Page) input(ctx context.Context, f func() error) error {
	t := pg.tab.tracker
	t.act.Lock()
	defer t.act.Unlock()
	if pg.tab.isClosed() {
		return fmt.Errorf("tab %s: %w", pg.tab.id, ErrPageClosed)
	}
	if err := t.bringToFront(ctx, pg); err != nil {
		return err
	}
	return f()
}

// ElementInfo describes an element for a person's gesture: its accessible
// role and name as the snapshot would show them, or its tag and a little of
// its text when it has no role worth naming.
type ElementInfo struct {
	// Role is the accessible role of the nearest control or heading around
	// the point ("button", "textbox", "link"), "" when none.
	Role string
	// Name is that element's accessible name (at most 100 bytes).
	Name string
	// Tag is the lower-case tag name of the element itself.
	Tag string
	// Text is a short piece of the element's text, when Role is "".
	Text string
}

// String describes the element as `button "Save"`, `textbox`, or
// `p "Some text..."`; "" for nothing.
func (e ElementInfo) String() string {
	what, label := e.Role, e.Name
	if what == "" {
		what, label = e.Tag, e.Text
	}
	if label == "" {
		return what
	}
	return fmt.Sprintf("%s %q", what, label)
}

// ElementAt describes the element at a point of the viewport (CSS
// pixels). It reads the browser's hit test and accessibility tree, not
// the page's scripts, so a page cannot easily misname its elements.
func (pg *Page) ElementAt(ctx context.Context, x, y float64) (ElementInfo, error) {
	var info ElementInfo
	err := pg.input(ctx, func() error {
		p := pg.p.Context(ctx)
		m, err := proto.PageGetLayoutMetrics{}.Call(p)
		if err != nil {
			return classify(fmt.Errorf("layout metrics: %w", err))
		}
		// DOM.getNodeForLocation takes document coordinates.
		dx, dy := x+float64(m.CSSLayoutViewport.PageX), y+float64(m.CSSLayoutViewport.PageY)
		hit, err := proto.DOMGetNodeForLocation{X: int(dx), Y: int(dy)}.Call(p)
		if err != nil {
			return classify(fmt.Errorf("element at (%.0f, %.0f): %w", x, y, err))
		}
		info, err = pg.describeNode(ctx, hit.BackendNodeID)
		return err
	})
	return info, err
}

// FocusedElement describes the element that has the keyboard focus (the
// body when none), looking into open shadow roots. The focus is read in an
// isolated world, where the page's scripts cannot redefine it.
func (pg *Page) FocusedElement(ctx context.Context) (ElementInfo, error) {
	var info ElementInfo
	err := pg.input(ctx, func() error {
		p := pg.p.Context(ctx)
		w, err := proto.PageCreateIsolatedWorld{FrameID: proto.PageFrameID(pg.p.TargetID), WorldName: "wayfinder-live"}.Call(p)
		if err != nil {
			return classify(fmt.Errorf("focused element: %w", err))
		}
		r, err := proto.RuntimeEvaluate{ContextID: w.ExecutionContextID,
			Expression: `(() => { let a = document.activeElement; while (a && a.shadowRoot && a.shadowRoot.activeElement) a = a.shadowRoot.activeElement; return a || document.body; })()`,
		}.Call(p)
		if err != nil {
			return classify(fmt.Errorf("focused element: %w", err))
		}
		if r.ExceptionDetails != nil || r.Result.ObjectID == "" {
			return nil
		}
		defer release(ctx, pg.p, r.Result.ObjectID)
		n, err := proto.DOMDescribeNode{ObjectID: r.Result.ObjectID}.Call(p)
		if err != nil {
			return classify(fmt.Errorf("focused element: %w", err))
		}
		info, err = pg.describeNode(ctx, n.Node.BackendNodeID)
		return err
	})
	return info, err
}

// describeNode describes a DOM node by its accessibility node and those of
// its ancestors: the nearest control (or heading) names it; else its tag
// and text do.
func (pg *Page) describeNode(ctx context.Context, id proto.DOMBackendNodeID) (ElementInfo, error) {
	p := pg.p.Context(ctx)
	var info ElementInfo
	d, err := proto.DOMDescribeNode{BackendNodeID: id}.Call(p)
	if err != nil {
		return info, classify(fmt.Errorf("describe node: %w", err))
	}
	node := d.Node
	if node.NodeType == nodeText {
		// A text node: its element names it.
		info.Text = truncate(collapse(node.NodeValue), 60)
	}
	info.Tag = strings.ToLower(node.LocalName)
	tree, err := proto.AccessibilityGetPartialAXTree{BackendNodeID: id, FetchRelatives: true}.Call(p)
	if err != nil {
		return info, classify(fmt.Errorf("accessibility of node: %w", err))
	}
	byID := make(map[proto.AccessibilityAXNodeID]*proto.AccessibilityAXNode, len(tree.Nodes))
	var self *proto.AccessibilityAXNode
	for _, n := range tree.Nodes {
		byID[n.NodeID] = n
		if n.BackendDOMNodeID == id && self == nil {
			self = n
		}
	}
	for n, depth := self, 0; n != nil && depth < 64; n, depth = byID[n.ParentID], depth+1 {
		if n.Ignored {
			continue
		}
		if r := axString(n.Role); interactiveRoles[r] || r == "heading" {
			info.Role, info.Name = r, truncate(collapse(axString(n.Name)), 100)
			return info, nil
		}
		if info.Tag == "" && n.BackendDOMNodeID != 0 {
			if d, err := (proto.DOMDescribeNode{BackendNodeID: n.BackendDOMNodeID}).Call(p); err == nil {
				info.Tag = strings.ToLower(d.Node.LocalName)
			}
		}
	}
	if info.Text == "" && self != nil {
		text := axString(self.Name)
		if text == "" {
			var parts []string
			for _, c := range self.ChildIDs {
				if cn := byID[c]; cn != nil && !cn.Ignored {
					parts = append(parts, axString(cn.Name))
				}
			}
			text = strings.Join(parts, " ")
		}
		info.Text = truncate(collapse(text), 60)
	}
	return info, nil
}
