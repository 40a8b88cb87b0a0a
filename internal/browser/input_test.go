package browser_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/browser"
)

const inputPage = `<!doctype html><title>input</title>
<style>body{margin:0} * {box-sizing:border-box}</style>
<form id=f style="position:absolute;left:0;top:0" onsubmit="event.preventDefault(); out.textContent = 'submitted ' + q.value">
  <label for=q>Query</label>
  <input id=q style="position:absolute;left:100px;top:0;width:200px;height:30px">
  <input id=r aria-label="Second" style="position:absolute;left:100px;top:40px;width:200px;height:30px">
  <button style="position:absolute;left:320px;top:0">Go</button>
</form>
<button id=b style="position:absolute;left:0;top:100px;width:120px;height:40px" onclick="out.textContent = 'clicked'"><span>Save <b>draft</b></span></button>
<p id=out style="position:absolute;left:0;top:160px;margin:0;width:400px;height:20px">Nothing yet</p>
<div style="position:absolute;left:0;top:200px;height:3000px;width:10px"></div>`

// click presses and releases the left button at (x, y).
func click(t *testing.T, page *browser.Page, x, y float64) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, page.DispatchMouse(ctx, browser.MouseEvent{Type: browser.MouseMove, X: x, Y: y}))
	require.NoError(t, page.DispatchMouse(ctx, browser.MouseEvent{Type: browser.MouseDown, X: x, Y: y, Button: browser.ButtonLeft, Buttons: 1, ClickCount: 1}))
	require.NoError(t, page.DispatchMouse(ctx, browser.MouseEvent{Type: browser.MouseUp, X: x, Y: y, Button: browser.ButtonLeft, ClickCount: 1}))
}

// press presses and releases one key.
func press(t *testing.T, page *browser.Page, key, code string, mods int) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, page.DispatchKey(ctx, browser.KeyEvent{Key: key, Code: code, Modifiers: mods}))
	require.NoError(t, page.DispatchKey(ctx, browser.KeyEvent{Up: true, Key: key, Code: code, Modifiers: mods}))
}

// requireTrue waits until the page's expression is true.
func requireTrue(t *testing.T, page *browser.Page, expr string) {
	t.Helper()
	require.Eventually(t, func() bool {
		ok, err := page.Truthy(context.Background(), expr)
		require.NoError(t, err)
		return ok
	}, 20*time.Second, 10*time.Millisecond, expr)
}

func TestInputMouseAndKeys(t *testing.T) {
	t.Parallel()
	base := serve(t, map[string]string{"/": inputPage})
	page := newPage(t, base+"/")
	ctx := context.Background()

	click(t, page, 60, 120)
	requireTrue(t, page, `out.textContent === 'clicked'`)

	click(t, page, 150, 15)
	requireTrue(t, page, `document.activeElement === q`)
	for _, k := range []string{"a", "b", "c"} {
		press(t, page, k, "", 0)
	}
	press(t, page, "Backspace", "Backspace", 0)
	// Shift+x types "X": the dashboard sends the shifted key.
	require.NoError(t, page.DispatchKey(ctx, browser.KeyEvent{Key: "Shift", Code: "ShiftLeft", Modifiers: browser.ModShift}))
	press(t, page, "X", "KeyX", browser.ModShift)
	require.NoError(t, page.DispatchKey(ctx, browser.KeyEvent{Up: true, Key: "Shift", Code: "ShiftLeft"}))
	press(t, page, " ", "Space", 0)
	require.NoError(t, page.InsertText(ctx, "é✓"))
	requireTrue(t, page, `q.value === 'abX é✓'`)

	// Ctrl+A is a shortcut, not an "a".
	press(t, page, "a", "KeyA", browser.ModCtrl)
	requireTrue(t, page, `q.selectionStart === 0 && q.selectionEnd === q.value.length`)
	press(t, page, "ArrowRight", "ArrowRight", 0)
	press(t, page, "!", "Digit1", browser.ModShift)
	requireTrue(t, page, `q.value === 'abX é✓!'`)

	press(t, page, "Tab", "Tab", 0)
	requireTrue(t, page, `document.activeElement === r`)
	press(t, page, "Tab", "Tab", browser.ModShift)
	requireTrue(t, page, `document.activeElement === q`)

	press(t, page, "Enter", "Enter", 0)
	requireTrue(t, page, `out.textContent === 'submitted abX é✓!'`)

	// The wheel scrolls.
	require.NoError(t, page.DispatchMouse(ctx, browser.MouseEvent{Type: browser.MouseWheel, X: 400, Y: 400, DeltaY: 300}))
	requireTrue(t, page, `window.scrollY > 0`)
}

func TestElementAt(t *testing.T) {
	t.Parallel()
	base := serve(t, map[string]string{"/": inputPage})
	page := newPage(t, base+"/")
	ctx := context.Background()

	for _, tc := range []struct {
		name string
		x, y float64
		want string
	}{
		{"button through its inner text", 90, 120, `button "Save draft"`},
		{"labelled input", 150, 15, `textbox "Query"`},
		{"aria-labelled input", 150, 55, `textbox "Second"`},
		{"paragraph", 20, 170, `p "Nothing yet"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info, err := page.ElementAt(ctx, tc.x, tc.y)
			require.NoError(t, err)
			require.Equal(t, tc.want, info.String())
		})
	}

	// A page that rewrites its DOM APIs cannot change what is reported.
	ok, err := page.Truthy(ctx, `(Object.defineProperty(Document.prototype, 'activeElement', {get() { return out; }}), true)`)
	require.NoError(t, err)
	require.True(t, ok)
	click(t, page, 150, 55)
	info, err := page.FocusedElement(ctx)
	require.NoError(t, err)
	require.Equal(t, browser.ElementInfo{Role: "textbox", Name: "Second", Tag: "input"}, info)

	// Coordinates are the viewport's, after a scroll too.
	require.NoError(t, page.DispatchMouse(ctx, browser.MouseEvent{Type: browser.MouseWheel, X: 400, Y: 400, DeltaY: 100}))
	requireTrue(t, page, `window.scrollY === 100`)
	info, err = page.ElementAt(ctx, 90, 20)
	require.NoError(t, err)
	require.Equal(t, `button "Save draft"`, info.String())
}

// Characters a keyboard layout makes of a chord type: AltGr arrives as
// Control+Alt (Windows), Option as Alt (macOS). Meta, or Control alone,
// makes a shortcut; key values of several code points type too.
func TestInputKeyText(t *testing.T) {
	t.Parallel()
	base := serve(t, map[string]string{"/": inputPage})
	page := newPage(t, base+"/")
	click(t, page, 150, 15)
	requireTrue(t, page, `document.activeElement === q`)

	press(t, page, "@", "KeyQ", browser.ModCtrl|browser.ModAlt)   // AltGr+Q, German
	press(t, page, "€", "KeyE", browser.ModCtrl|browser.ModAlt)   // AltGr+E
	press(t, page, "{", "Digit7", browser.ModCtrl|browser.ModAlt) // AltGr+7
	press(t, page, "å", "KeyA", browser.ModAlt)                   // Option+A
	press(t, page, "e\u0301", "KeyE", 0)                          // a cluster
	press(t, page, "👩\u200d👩\u200d👧", "", 0)                      // longer than a key event's text
	press(t, page, "x", "KeyX", browser.ModMeta)                  // a shortcut
	press(t, page, "€", "KeyE", browser.ModCtrl|browser.ModAlt|browser.ModMeta)
	requireTrue(t, page, `q.value === '@€{åe\u0301👩\u200d👩\u200d👧'`)

	for _, tc := range []struct {
		key  string
		mods int
		want string
	}{
		{"@", browser.ModCtrl | browser.ModAlt, "@"},
		{"å", browser.ModAlt, "å"},
		{"ä", browser.ModShift, "ä"},
		{"e\u0301", 0, "e\u0301"},
		{"a", browser.ModCtrl, ""},
		{"a", browser.ModMeta, ""},
		{"@", browser.ModCtrl | browser.ModAlt | browser.ModMeta, ""},
		{"Enter", 0, ""},
		{"F5", browser.ModAlt, ""},
		{"\u0007", 0, ""},
	} {
		require.Equal(t, tc.want, browser.KeyEvent{Key: tc.key, Modifiers: tc.mods}.Text(), "%q %d", tc.key, tc.mods)
	}
}

// A failed key event names a named key, never a character (a password's).
func TestInputKeyErrorHidesText(t *testing.T) {
	t.Parallel()
	base := serve(t, map[string]string{"/": inputPage})
	page := newPage(t, base+"/")
	click(t, page, 150, 15) // the page is in front: the key event is the call that fails
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := page.DispatchKey(ctx, browser.KeyEvent{Key: "ж", Code: "KeyZ"})
	require.Error(t, err)
	require.NotContains(t, err.Error(), "ж")
	err = page.DispatchKey(ctx, browser.KeyEvent{Key: "Enter"})
	require.Error(t, err)
	require.Contains(t, err.Error(), "Enter")
}
