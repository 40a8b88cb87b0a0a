package browser_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/browser"
)

// TestSnapshotOfBackgroundTab: a tab behind another still gets a full
// snapshot (the browser renders and answers accessibility queries only for
// the tab in front).
func TestSnapshotOfBackgroundTab(t *testing.T) {
	t.Parallel()
	base := serve(t, map[string]string{
		"/one": `<!doctype html><title>One</title><button>First</button>`,
		"/two": `<!doctype html><title>Two</title><button>Second</button>`,
	})
	ctx := context.Background()
	s := newSession(t)
	first, err := s.NewPage(ctx, browser.PageOptions{})
	require.NoError(t, err)
	require.NoError(t, first.Navigate(ctx, base+"/one", 20*time.Second))
	second, err := s.NewPage(ctx, browser.PageOptions{})
	require.NoError(t, err)
	require.NoError(t, second.Navigate(ctx, base+"/two", 20*time.Second))
	// Acting on the second tab puts it in front of the first.
	res, err := second.Do(ctx, browser.Action{Kind: browser.ActionClick, Target: &browser.Target{CSS: "button"}})
	require.NoError(t, err)
	require.True(t, res.Success, "%v", res.Error)

	snap, err := first.Snapshot(ctx, browser.SnapshotOptions{})
	require.NoError(t, err)
	require.Empty(t, snap.Degraded)
	require.Contains(t, snap.Text(), `button "First"`)
}
