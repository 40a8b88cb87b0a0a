package live

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	wfv1 "github.com/wayfinder/wayfinder/api/gen/wayfinder/v1"
	"github.com/wayfinder/wayfinder/internal/browser"
	"github.com/wayfinder/wayfinder/internal/pool"
	"github.com/wayfinder/wayfinder/internal/pool/pooltest"
)

// newBrowserSession leases a browser context for t from a Chromium of its
// own, released when t ends.
func newBrowserSession(t *testing.T) *browser.Session {
	t.Helper()
	p, err := pool.New(pool.Config{Capacity: 1, WorkDir: t.TempDir(), HealthInterval: time.Hour, MemoryLimit: -1})
	require.NoError(t, err)
	require.NoError(t, p.Start(context.Background()))
	t.Cleanup(p.Close)
	lease, err := p.Lease(context.Background(), browser.SessionOptions{})
	require.NoError(t, err)
	t.Cleanup(lease.Release)
	return lease.Session()
}

// openPage opens a page in bs at url.
func openPage(t *testing.T, bs *browser.Session, url string) *browser.Page {
	t.Helper()
	ctx := context.Background()
	page, err := bs.NewPage(ctx, browser.PageOptions{})
	require.NoError(t, err)
	require.NoError(t, page.Navigate(ctx, url, 20*time.Second))
	return page
}

// serveHTML serves pages (path → HTML) on 127.0.0.1 until t ends.
func serveHTML(t *testing.T, pages map[string]string) string {
	t.Helper()
	return pooltest.ServeHTML(t, pages)
}

// Input events for tests.

func mouseIn(typ wfv1.MouseInput_Type, x, y float64, b wfv1.MouseInput_Button) *wfv1.LiveInput {
	m := &wfv1.MouseInput{Type: typ, X: x, Y: y, Button: b}
	if typ == wfv1.MouseInput_TYPE_DOWN || typ == wfv1.MouseInput_TYPE_UP {
		m.ClickCount = 1
	}
	return &wfv1.LiveInput{Event: &wfv1.LiveInput_Mouse{Mouse: m}}
}

// clickIn is a left click at (x, y).
func clickIn(x, y float64) []*wfv1.LiveInput {
	return []*wfv1.LiveInput{
		mouseIn(wfv1.MouseInput_TYPE_MOVE, x, y, wfv1.MouseInput_BUTTON_UNSPECIFIED),
		mouseIn(wfv1.MouseInput_TYPE_DOWN, x, y, wfv1.MouseInput_BUTTON_LEFT),
		mouseIn(wfv1.MouseInput_TYPE_UP, x, y, wfv1.MouseInput_BUTTON_LEFT),
	}
}

func wheelIn(x, y, dx, dy float64) *wfv1.LiveInput {
	return &wfv1.LiveInput{Event: &wfv1.LiveInput_Mouse{Mouse: &wfv1.MouseInput{Type: wfv1.MouseInput_TYPE_WHEEL, X: x, Y: y, DeltaX: dx, DeltaY: dy}}}
}

// keyIn presses and releases key.
func keyIn(key, code string, mods int32) []*wfv1.LiveInput {
	return []*wfv1.LiveInput{
		{Event: &wfv1.LiveInput_Key{Key: &wfv1.KeyInput{Type: wfv1.KeyInput_TYPE_DOWN, Key: key, Code: code, Modifiers: mods}}},
		{Event: &wfv1.LiveInput_Key{Key: &wfv1.KeyInput{Type: wfv1.KeyInput_TYPE_UP, Key: key, Code: code, Modifiers: mods}}},
	}
}

// typeIn types s key by key (lower-case letters and digits).
func typeIn(s string) []*wfv1.LiveInput {
	var out []*wfv1.LiveInput
	for _, r := range s {
		out = append(out, keyIn(string(r), "", 0)...)
	}
	return out
}

func textIn(s string) *wfv1.LiveInput {
	return &wfv1.LiveInput{Event: &wfv1.LiveInput_Text{Text: s}}
}
