package browser_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/browser"
	"github.com/wayfinder/wayfinder/internal/pool"
	"github.com/wayfinder/wayfinder/internal/pool/pooltest"
)

// newSession leases an isolated browser context for t from a pool of its
// own (one Chromium process), released when t ends.
func newSession(t *testing.T) *browser.Session {
	t.Helper()
	p, err := pool.New(pool.Config{Capacity: 1, WorkDir: t.TempDir(), HealthInterval: time.Hour})
	require.NoError(t, err)
	require.NoError(t, p.Start(context.Background()))
	t.Cleanup(p.Close)
	lease, err := p.Lease(context.Background(), browser.SessionOptions{})
	require.NoError(t, err)
	t.Cleanup(lease.Release)
	return lease.Session()
}

// newPage opens a page in a fresh session and navigates it to url.
func newPage(t *testing.T, url string) *browser.Page {
	t.Helper()
	ctx := context.Background()
	page, err := newSession(t).NewPage(ctx, browser.PageOptions{})
	require.NoError(t, err)
	require.NoError(t, page.Navigate(ctx, url, 20*time.Second))
	return page
}

// serve serves pages (path → HTML) on 127.0.0.1 until t ends.
func serve(t *testing.T, pages map[string]string) string {
	t.Helper()
	return pooltest.ServeHTML(t, pages)
}

func TestNavigateAndScreenshot(t *testing.T) {
	t.Parallel()
	base := serve(t, map[string]string{"/": `<!doctype html><title>Hello</title><h1>Hi</h1>`})
	page := newPage(t, base+"/")
	ctx := context.Background()
	url, title, err := page.Location(ctx)
	require.NoError(t, err)
	require.Equal(t, base+"/", url)
	require.Equal(t, "Hello", title)
	png, err := page.Screenshot(ctx)
	require.NoError(t, err)
	require.Equal(t, "\x89PNG", string(png[:4]))
}
