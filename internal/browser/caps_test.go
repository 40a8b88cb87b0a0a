package browser_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/browser"
)

// TestCaps checks the caps that keep a hostile page from growing what a
// session holds and reports: dialogs per action and tabs per session.
func TestCaps(t *testing.T) {
	t.Parallel()
	env := newActionEnv(t)
	t.Run("dialogs per action", func(t *testing.T) {
		pg := env.page(t, "/caps.html")
		res := ok(t, pg, browser.Action{Kind: browser.ActionClick, Target: &browser.Target{CSS: "#alerts"}})
		require.Len(t, res.Dialogs, browser.MaxDialogsPerAction)
		require.Equal(t, "alert 0", res.Dialogs[0].Message)
		last := res.Dialogs[browser.MaxDialogsPerAction-1]
		require.Equal(t, fmt.Sprintf("alert %d", browser.MaxDialogsPerAction-1), last.Message)
		require.Equal(t, 50-browser.MaxDialogsPerAction, last.Omitted)
		require.Contains(t, res.Snapshot.Text(), fmt.Sprintf("%d more dialogs answered and not listed", 50-browser.MaxDialogsPerAction))
		require.Equal(t, "alerts done", js(t, pg, "document.getElementById('done').textContent").Str(), "every dialog was answered")
	})
	t.Run("tabs per session", func(t *testing.T) {
		env := newActionEnv(t)
		pg := env.page(t, "/caps.html")
		click := func() *browser.ActionResult {
			ok(t, pg, browser.Action{Kind: browser.ActionSwitchTab, Tab: pg.TabID()})
			return ok(t, pg, browser.Action{Kind: browser.ActionClick, Target: &browser.Target{CSS: "#popup"}})
		}
		for len(env.s.Tabs()) < browser.MaxTabs {
			res := click()

			require.True(t, res.OpenedTab, "tab %d", len(env.s.Tabs()))
			require.Empty(t, res.Note)
		}
		res := click()
		require.False(t, res.OpenedTab)
		require.Contains(t, res.Note, fmt.Sprintf("the page tried to open 1 more tabs; they were closed (at most %d tabs", browser.MaxTabs))
		require.Len(t, env.s.Tabs(), browser.MaxTabs)
		// Closing one makes room again.
		ok(t, pg, browser.Action{Kind: browser.ActionCloseTab, Tab: env.s.Tabs()[1].ID})
		res = click()
		require.True(t, res.OpenedTab)
		require.Len(t, env.s.Tabs(), browser.MaxTabs)
	})
}
