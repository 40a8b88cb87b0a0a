package browser

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/go-rod/rod/lib/proto"
)

// keyDef is one key of a US keyboard as DOM KeyboardEvents describe it.
type keyDef struct {
	key      string // KeyboardEvent.key
	code     string // KeyboardEvent.code
	keyCode  int    // legacy keyCode, Windows virtual key code
	text     string // text the key inserts, if any
	location int
	modifier int // CDP modifier bit, for modifier keys
}

// CDP modifier bits.
const (
	modAlt     = 1
	modControl = 2
	modMeta    = 4
	modShift   = 8
)

// namedKeys are the keys press accepts by name (lower case; aliases
// included).
var namedKeys = map[string]keyDef{}

// charKeys maps each character a US keyboard types to its key; shifted
// characters are typed with their key's shifted text.
var charKeys = map[rune]keyDef{}

func init() {
	named := []keyDef{
		{key: "Enter", code: "Enter", keyCode: 13, text: "\r"},
		{key: "Tab", code: "Tab", keyCode: 9},
		{key: "Backspace", code: "Backspace", keyCode: 8},
		{key: "Delete", code: "Delete", keyCode: 46},
		{key: "Escape", code: "Escape", keyCode: 27},
		{key: " ", code: "Space", keyCode: 32, text: " "},
		{key: "ArrowUp", code: "ArrowUp", keyCode: 38},
		{key: "ArrowDown", code: "ArrowDown", keyCode: 40},
		{key: "ArrowLeft", code: "ArrowLeft", keyCode: 37},
		{key: "ArrowRight", code: "ArrowRight", keyCode: 39},
		{key: "Home", code: "Home", keyCode: 36},
		{key: "End", code: "End", keyCode: 35},
		{key: "PageUp", code: "PageUp", keyCode: 33},
		{key: "PageDown", code: "PageDown", keyCode: 34},
		{key: "Insert", code: "Insert", keyCode: 45},
		{key: "CapsLock", code: "CapsLock", keyCode: 20},
		{key: "ContextMenu", code: "ContextMenu", keyCode: 93},
		{key: "Shift", code: "ShiftLeft", keyCode: 16, location: 1, modifier: modShift},
		{key: "Control", code: "ControlLeft", keyCode: 17, location: 1, modifier: modControl},
		{key: "Alt", code: "AltLeft", keyCode: 18, location: 1, modifier: modAlt},
		{key: "Meta", code: "MetaLeft", keyCode: 91, location: 1, modifier: modMeta},
	}
	for i := 1; i <= 12; i++ {
		named = append(named, keyDef{key: fmt.Sprintf("F%d", i), code: fmt.Sprintf("F%d", i), keyCode: 111 + i})
	}
	for _, k := range named {
		namedKeys[strings.ToLower(k.key)] = k
	}
	namedKeys["space"] = namedKeys[" "]
	for alias, name := range map[string]string{
		"return": "enter", "esc": "escape", "del": "delete", "up": "arrowup", "down": "arrowdown",
		"left": "arrowleft", "right": "arrowright", "ctrl": "control", "controlormeta": "control",
		"option": "alt", "cmd": "meta", "command": "meta", "super": "meta",
	} {
		namedKeys[alias] = namedKeys[name]
	}

	for i := 0; i < 26; i++ {
		lower, upper := rune('a'+i), rune('A'+i)
		k := keyDef{key: string(lower), code: "Key" + string(upper), keyCode: 65 + i, text: string(lower)}
		charKeys[lower] = k
		k.key, k.text = string(upper), string(upper)
		charKeys[upper] = k
	}
	row := []struct {
		plain, shifted rune
		code           string
		keyCode        int
	}{
		{'1', '!', "Digit1", 49}, {'2', '@', "Digit2", 50}, {'3', '#', "Digit3", 51}, {'4', '$', "Digit4", 52},
		{'5', '%', "Digit5", 53}, {'6', '^', "Digit6", 54}, {'7', '&', "Digit7", 55}, {'8', '*', "Digit8", 56},
		{'9', '(', "Digit9", 57}, {'0', ')', "Digit0", 48}, {'`', '~', "Backquote", 192}, {'-', '_', "Minus", 189},
		{'=', '+', "Equal", 187}, {'\\', '|', "Backslash", 220}, {'[', '{', "BracketLeft", 219},
		{']', '}', "BracketRight", 221}, {';', ':', "Semicolon", 186}, {'\'', '"', "Quote", 222},
		{',', '<', "Comma", 188}, {'.', '>', "Period", 190}, {'/', '?', "Slash", 191},
	}
	for _, r := range row {
		charKeys[r.plain] = keyDef{key: string(r.plain), code: r.code, keyCode: r.keyCode, text: string(r.plain)}
		charKeys[r.shifted] = keyDef{key: string(r.shifted), code: r.code, keyCode: r.keyCode, text: string(r.shifted)}
	}
	charKeys[' '] = namedKeys[" "]
	charKeys['\n'] = namedKeys["enter"]
	charKeys['\r'] = namedKeys["enter"]
	charKeys['\t'] = namedKeys["tab"]
}

// chord is modifiers held while one key is pressed.
type chord struct {
	mods []keyDef
	key  keyDef
}

// KeyChords splits the actions' key syntax ("Control+Shift+ArrowLeft
// Enter": chords separated by spaces, keys of a chord by "+", a "+" key
// written "Shift++" or "+") into each chord's key names, modifiers first.
// The names are not checked.
func KeyChords(s string) [][]string {
	var out [][]string
	for _, tok := range strings.Fields(s) {
		switch {
		case tok == "+":
			out = append(out, []string{"+"})
		case strings.HasSuffix(tok, "++"):
			out = append(out, append(strings.Split(strings.TrimSuffix(tok, "++"), "+"), "+"))
		default:
			out = append(out, strings.Split(tok, "+"))
		}
	}
	return out
}

// parseKeys parses "Control+Shift+ArrowLeft Enter": chords separated by
// spaces, keys of a chord by "+" (a "+" key is written "Shift++" or "+").
func parseKeys(s string) ([]chord, error) {
	var out []chord
	for _, parts := range KeyChords(s) {
		var c chord
		for i, p := range parts {
			k, ok := lookupKey(p)
			if !ok {
				return nil, fail(CodeInvalidParams, "unknown key %q in %q (use names like Enter, Tab, Escape, ArrowDown, Control, Shift, or single characters)", p, s)
			}
			if i < len(parts)-1 {
				if k.modifier == 0 {
					return nil, fail(CodeInvalidParams, "%q in %q is not a modifier (Control, Shift, Alt, Meta)", p, s)
				}
				c.mods = append(c.mods, k)
				continue
			}
			c.key = k
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fail(CodeInvalidParams, "no keys given")
	}
	return out, nil
}

func lookupKey(name string) (keyDef, bool) {
	if utf8.RuneCountInString(name) == 1 {
		r, _ := utf8.DecodeRuneInString(name)
		k, ok := charKeys[r]
		return k, ok
	}
	k, ok := namedKeys[strings.ToLower(name)]
	return k, ok
}

// keyEvent sends one key event with the modifiers held.
func (pg *Page) keyEvent(ctx context.Context, typ proto.InputDispatchKeyEventType, k keyDef, mods int, text string) error {
	err := proto.InputDispatchKeyEvent{
		Type: typ, Modifiers: mods, WindowsVirtualKeyCode: k.keyCode, NativeVirtualKeyCode: k.keyCode,
		Code: k.code, Key: k.key, Text: text, UnmodifiedText: text, Location: &k.location,
	}.Call(pg.p.Context(ctx))
	if err != nil {
		// A character is what a person typed (a password's, perhaps): only
		// a named key is named in the error.
		if textKey(k.key) {
			return classify(fmt.Errorf("key event: %w", err))
		}
		return classify(fmt.Errorf("key %s: %w", k.key, err))
	}
	return nil
}

// pressChord presses a chord: modifiers down, key down and up, modifiers
// up. The key inserts its text only when no Control, Alt or Meta is held,
// as on a real keyboard; with Shift, letters are upper case.
func (pg *Page) pressChord(ctx context.Context, c chord) error {
	mods := 0
	for _, m := range c.mods {
		mods |= m.modifier
		if err := pg.keyEvent(ctx, proto.InputDispatchKeyEventTypeRawKeyDown, m, mods, ""); err != nil {
			return err
		}
	}
	k := c.key
	if len(k.key) == 1 && k.key[0] >= 'A' && k.key[0] <= 'Z' && mods&modShift == 0 && mods != 0 {
		// "Control+A" means the A key, which reports "a" without Shift.
		k = charKeys[rune(k.key[0]-'A'+'a')]
	} else if mods&modShift != 0 && len(k.key) == 1 && k.key[0] >= 'a' && k.key[0] <= 'z' {
		k = charKeys[rune(k.key[0]-'a'+'A')]
	}
	text := k.text
	if mods&(modControl|modAlt|modMeta) != 0 {
		text = ""
	}
	down := proto.InputDispatchKeyEventTypeRawKeyDown
	if text != "" {
		down = proto.InputDispatchKeyEventTypeKeyDown
	}
	if err := pg.keyEvent(ctx, down, k, mods, text); err != nil {
		return err
	}
	if err := pg.keyEvent(ctx, proto.InputDispatchKeyEventTypeKeyUp, k, mods, ""); err != nil {
		return err
	}
	for i := len(c.mods) - 1; i >= 0; i-- {
		mods &^= c.mods[i].modifier
		if err := pg.keyEvent(ctx, proto.InputDispatchKeyEventTypeKeyUp, c.mods[i], mods, ""); err != nil {
			return err
		}
	}
	return nil
}

// typeText types s key by key; characters with no key on a US keyboard are
// inserted as text input, as an input method would.
func (pg *Page) typeText(ctx context.Context, s string) error {
	for _, r := range s {
		if k, ok := charKeys[r]; ok {
			if err := pg.pressChord(ctx, chord{key: k}); err != nil {
				return err
			}
			continue
		}
		if err := (proto.InputInsertText{Text: string(r)}).Call(pg.p.Context(ctx)); err != nil {
			return classify(fmt.Errorf("insert %q: %w", r, err))
		}
	}
	return nil
}

// focusTarget focuses the action's element, if it names one, after checking
// it can take input; it returns the element (nil when none is named).
func (pg *Page) focusTarget(ctx context.Context, a Action, opts ActionOptions, out *outcome, needEditable bool) (*element, error) {
	if a.Ref == "" && a.Target == nil {
		return nil, nil
	}
	el, err := pg.locate(ctx, a.Ref, a.SnapshotID, a.Target, opts, out.res)
	if err != nil {
		return nil, err
	}
	if el.point != nil {
		// A point: click there to focus what is under it.
		out.acted = true
		return el, pg.click(ctx, *el.point, proto.InputMouseButtonLeft, 1)
	}
	st, err := el.state(ctx)
	if err != nil {
		return nil, err
	}
	if err := el.checkVisible(st); err != nil {
		return nil, err
	}
	if st.Disabled {
		return nil, fail(CodeElementDisabled, "%s is disabled", el.desc)
	}
	if needEditable && st.Readonly {
		return nil, fail(CodeElementDisabled, "%s is read-only", el.desc)
	}
	var focused bool
	if err := el.call(ctx, jsFocus, &focused); err != nil {
		return nil, err
	}
	if !focused {
		return nil, fail(CodeActionFailed, "%s cannot take the keyboard focus", el.desc)
	}
	return el, nil
}

// doType types a.Value key by key into the element or the focused one.
func (pg *Page) doType(ctx context.Context, a Action, opts ActionOptions, out *outcome) error {
	el, err := pg.focusTarget(ctx, a, opts, out, true)
	if err != nil {
		return err
	}
	out.acted = true
	if err := pg.typeText(ctx, a.Value); err != nil {
		return err
	}
	return pg.readValue(ctx, el, out.res)
}

// doPress presses a.Keys, on the element when one is named.
func (pg *Page) doPress(ctx context.Context, a Action, opts ActionOptions, out *outcome) error {
	chords, err := parseKeys(a.Keys)
	if err != nil {
		return err
	}
	if _, err := pg.focusTarget(ctx, a, opts, out, false); err != nil {
		return err
	}
	out.acted = true
	for _, c := range chords {
		if err := pg.pressChord(ctx, c); err != nil {
			return err
		}
	}
	return nil
}

// readValue reports the value of el, or of the focused element when el is
// nil, in res.Value.
func (pg *Page) readValue(ctx context.Context, el *element, res *ActionResult) error {
	if el == nil || el.obj == "" {
		obj, err := evalObject(ctx, pg.p, `function() { let a = document.activeElement; while (a && a.shadowRoot && a.shadowRoot.activeElement) a = a.shadowRoot.activeElement; return a; }`)
		if err != nil || obj == "" {
			return err
		}
		defer release(ctx, pg.p, obj)
		return callOn(ctx, pg.p, obj, jsValue, &res.Value)
	}
	return el.call(ctx, jsValue, &res.Value)
}
