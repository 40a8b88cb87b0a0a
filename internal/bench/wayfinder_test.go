package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/browser"
	"github.com/wayfinder/wayfinder/internal/pool"
)

// newWayfinderDriver opens a page in a context of a pool of its own (one
// Chromium process), closed when t ends.
func newWayfinderDriver(t *testing.T) *wayfinderDriver {
	t.Helper()
	ctx := context.Background()
	p, err := pool.New(pool.Config{Capacity: 1, WorkDir: t.TempDir(), HealthInterval: time.Hour})
	require.NoError(t, err)
	require.NoError(t, p.Start(ctx))
	t.Cleanup(p.Close)
	lease, err := p.Lease(ctx, browser.SessionOptions{})
	require.NoError(t, err)
	t.Cleanup(lease.Release)
	page, err := lease.Session().NewPage(ctx, browser.PageOptions{})
	require.NoError(t, err)
	return &wayfinderDriver{page: page}
}

// TestWayfinderDriver runs the benchmark's own side on every benchmark
// page: each opens, snapshots with its click target listed, and captures.
func TestWayfinderDriver(t *testing.T) {
	t.Parallel()
	site, err := StartSite()
	require.NoError(t, err)
	t.Cleanup(site.Close)
	d := newWayfinderDriver(t)
	ctx := context.Background()

	_, err = findElement(nil, Target{Role: "button", Name: "Save draft"})
	require.Error(t, err, "no snapshot yet")

	for _, p := range Pages() {
		require.NoError(t, d.open(ctx, site.URL+p.Path), p.Name)
		text, err := d.snapshot(ctx)
		require.NoError(t, err, p.Name)
		require.Contains(t, text, p.Click.Role+" "+`"`+p.Click.Name+`"`, p.Name)
		ref, err := findElement(d.last, p.Click)
		require.NoError(t, err, p.Name)
		require.Regexp(t, `^@e\d+$`, ref)

		png, err := d.screenshot(ctx)
		require.NoError(t, err, p.Name)
		require.Equal(t, "\x89PNG", string(png[:4]))

		// Every click moves the page's counter: the action reached the
		// element the page set up.
		for n := 1; n <= 2; n++ {
			require.NoError(t, d.click(ctx, p.Click), p.Name)
			snap, err := d.page.Snapshot(ctx, browser.SnapshotOptions{VisibleText: true})
			require.NoError(t, err)
			require.Contains(t, snap.VisibleText, clickStatus(p.Name, n), p.Name)
			d.last = snap
		}
	}

	_, err = findElement(d.last, Target{Role: "button", Name: "No such button"})
	require.ErrorIs(t, err, errNoTarget)
}

// clickStatus is the status line each page's click handler writes, after
// n clicks.
func clickStatus(page string, n int) string {
	return map[string]string{
		"form":    fmt.Sprintf("Draft saved (%d).", n),
		"table":   fmt.Sprintf("Editing order #100500 (%d).", n),
		"many":    fmt.Sprintf("Refreshed %d times.", n),
		"shadow":  fmt.Sprintf("Follow clicked %d times (last: Ada Lovelace).", n),
		"iframes": fmt.Sprintf("Sign-in attempt %d.", n),
		"article": fmt.Sprintf("%d likes", n),
	}[page]
}
