package trace_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/browser"
	"github.com/wayfinder/wayfinder/internal/pool"
	"github.com/wayfinder/wayfinder/internal/pool/pooltest"
	"github.com/wayfinder/wayfinder/internal/trace"
)

// newPage opens a blank page in a browser context of a pool of its own
// (one Chromium process), released when tb ends.
func newPage(tb testing.TB) *browser.Page {
	tb.Helper()
	p, err := pool.New(pool.Config{Capacity: 1, WorkDir: tb.TempDir(), HealthInterval: time.Hour})
	require.NoError(tb, err)
	require.NoError(tb, p.Start(context.Background()))
	tb.Cleanup(p.Close)
	lease, err := p.Lease(context.Background(), browser.SessionOptions{})
	require.NoError(tb, err)
	tb.Cleanup(lease.Release)
	page, err := lease.Session().NewPage(context.Background(), browser.PageOptions{})
	require.NoError(tb, err)
	return page
}

// look navigates page to url and returns a snapshot of up to max elements
// with the details of all of them.
func look(tb testing.TB, page *browser.Page, url string, max int) (*browser.Snapshot, map[string]browser.ElementDetails) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(tb, page.Navigate(ctx, url, 20*time.Second))
	snap, err := page.Snapshot(ctx, browser.SnapshotOptions{MaxElements: max})
	require.NoError(tb, err)
	refs := make([]string, len(snap.Elements))
	for i, e := range snap.Elements {
		refs[i] = e.Ref
	}
	details, err := page.ElementDetails(ctx, refs...)
	require.NoError(tb, err)
	return snap, details
}

// element finds the element of snap with role and name (and context,
// when not empty); the test fails when there is not exactly one.
func element(tb testing.TB, snap *browser.Snapshot, role, name, context string) browser.Element {
	tb.Helper()
	var found []browser.Element
	for _, e := range snap.Elements {
		if e.Role == role && e.Name == name && (context == "" || e.Context == context) {
			found = append(found, e)
		}
	}
	require.Len(tb, found, 1, "%s %q (%s) in:\n%s", role, name, context, snap.Text())
	return found[0]
}

// capture fingerprints the element of role, name and context in snap.
func capture(tb testing.TB, snap *browser.Snapshot, details map[string]browser.ElementDetails, role, name, context string) trace.Fingerprint {
	tb.Helper()
	e := element(tb, snap, role, name, context)
	fp, err := trace.Capture(snap, e.Ref, details[e.Ref])
	require.NoError(tb, err)
	return fp
}

func serve(tb testing.TB, pages map[string]string) string {
	tb.Helper()
	return pooltest.ServeHTML(tb, pages)
}
