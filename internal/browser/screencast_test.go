package browser_test

import (
	"bytes"
	"context"
	"image"
	"image/jpeg"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/browser"
)

// frameLog collects a screencast's frames for a test.
type frameLog struct {
	mu     sync.Mutex
	frames []browser.ScreencastFrame
	calls  atomic.Int64
}

func (l *frameLog) add(f browser.ScreencastFrame) {
	l.calls.Add(1)
	l.mu.Lock()
	l.frames = append(l.frames, f)
	l.mu.Unlock()
}

// waitFor waits until a frame after the first skip ones satisfies ok and
// returns it with its decoded picture.
func (l *frameLog) waitFor(t *testing.T, skip int, ok func(browser.ScreencastFrame, image.Image) bool) (browser.ScreencastFrame, image.Image) {
	t.Helper()
	var got browser.ScreencastFrame
	var img image.Image
	require.Eventually(t, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, f := range l.frames[min(skip, len(l.frames)):] {
			im, err := jpeg.Decode(bytes.NewReader(f.JPEG))
			require.NoError(t, err)
			if ok(f, im) {
				got, img = f, im
				return true
			}
		}
		return false
	}, 30*time.Second, 20*time.Millisecond)
	return got, img
}

func (l *frameLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.frames)
}

// redAt reports whether the picture is mostly red at (x, y).
func redAt(img image.Image, x, y int) bool {
	r, g, b, _ := img.At(x, y).RGBA()
	return r > 0xc000 && g < 0x4000 && b < 0x4000
}

const screencastPage = `<!doctype html><title>cast</title>
<style>html,body{margin:0;height:100%;background:#fff}</style>
<button id=b style="position:absolute;left:10px;top:10px;width:120px;height:40px"
  onclick="document.body.style.background='#f00'">Paint red</button>`

func TestScreencastFrames(t *testing.T) {
	t.Parallel()
	base := serve(t, map[string]string{"/": screencastPage})
	page := newPage(t, base+"/")
	ctx := context.Background()

	var log frameLog
	stop, err := page.StartScreencast(ctx, browser.ScreencastOptions{Quality: 50, MaxWidth: 640, MaxHeight: 400}, log.add)
	require.NoError(t, err)
	defer stop()

	// The first frame: the viewport in CSS px, the picture scaled down.
	first, img := log.waitFor(t, 0, func(browser.ScreencastFrame, image.Image) bool { return true })
	require.Equal(t, 1280, first.Width)
	require.Equal(t, 800, first.Height)
	require.Equal(t, image.Rect(0, 0, 640, 400), img.Bounds())
	require.False(t, first.Time.IsZero())
	require.False(t, redAt(img, 320, 300))

	// A repaint brings a new frame showing it.
	n := log.count()
	require.NoError(t, page.DispatchMouse(ctx, browser.MouseEvent{Type: browser.MouseDown, X: 50, Y: 25, Button: browser.ButtonLeft, Buttons: 1}))
	require.NoError(t, page.DispatchMouse(ctx, browser.MouseEvent{Type: browser.MouseUp, X: 50, Y: 25, Button: browser.ButtonLeft}))
	log.waitFor(t, n, func(_ browser.ScreencastFrame, img image.Image) bool { return redAt(img, 320, 300) })

	// After stop, fn is never called again, even when the page paints.
	stop()
	calls := log.calls.Load()
	ok, err := page.Truthy(ctx, `(document.body.style.background = '#00f', true)`)
	require.NoError(t, err)
	require.True(t, ok)
	_, _, err = page.Location(ctx)
	require.NoError(t, err)
	require.Equal(t, calls, log.calls.Load())
	stop() // idempotent
}

func TestScreencastEndsWithItsPage(t *testing.T) {
	t.Parallel()
	base := serve(t, map[string]string{"/": screencastPage})
	ctx := context.Background()
	sess := newSession(t)
	first, err := sess.NewPage(ctx, browser.PageOptions{})
	require.NoError(t, err)
	second, err := sess.NewPage(ctx, browser.PageOptions{Width: 800, Height: 600})
	require.NoError(t, err)
	require.NoError(t, second.Navigate(ctx, base+"/", 20*time.Second))

	var log frameLog
	stop, err := second.StartScreencast(ctx, browser.ScreencastOptions{}, log.add)
	require.NoError(t, err)
	f, _ := log.waitFor(t, 0, func(browser.ScreencastFrame, image.Image) bool { return true })
	require.Equal(t, [2]int{800, 600}, [2]int{f.Width, f.Height})

	res, err := first.Do(ctx, browser.Action{Kind: browser.ActionCloseTab, Tab: second.TabID()})
	require.NoError(t, err)
	require.True(t, res.Success, "%v", res.Error)
	stop() // returns: the closed page ended the screencast quietly

	// A screencast of a closed page fails to start.
	_, err = second.StartScreencast(ctx, browser.ScreencastOptions{}, log.add)
	require.Error(t, err)

	// ctx ending stops it too.
	cctx, cancel := context.WithCancel(ctx)
	stop, err = first.StartScreencast(cctx, browser.ScreencastOptions{}, func(browser.ScreencastFrame) {})
	require.NoError(t, err)
	cancel()
	stop()
}
