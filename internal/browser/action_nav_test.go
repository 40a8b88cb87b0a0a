package browser_test

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/browser"
)

// hostPolicy refuses every host named blocked.example.
type hostPolicy struct{}

func (hostPolicy) Check(_ context.Context, raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	if strings.HasSuffix(u.Hostname(), "blocked.example") {
		return errors.New("blocked by the run's domain policy")
	}
	return nil
}

func TestNavigation(t *testing.T) {
	t.Parallel()
	env := newActionEnv(t)
	env.s.SetActionOptions(browser.ActionOptions{Policy: hostPolicy{}})
	pg := env.page(t, "/nav-a.html")

	res := ok(t, pg, browser.Action{Kind: browser.ActionNavigate, URL: "/nav-b.html"})
	require.Equal(t, env.base+"/nav-b.html", res.URL)
	require.True(t, res.Navigated)
	require.Equal(t, "Page B", res.Snapshot.Page.Title)

	res = ok(t, pg, browser.Action{Kind: browser.ActionBack})
	require.Equal(t, env.base+"/nav-a.html", res.URL)
	require.Equal(t, "Page A", res.Snapshot.Page.Title)
	res = ok(t, pg, browser.Action{Kind: browser.ActionForward})
	require.Equal(t, env.base+"/nav-b.html", res.URL)
	failsWith(t, pg, browser.Action{Kind: browser.ActionForward}, browser.CodeActionFailed)
	ok(t, pg, browser.Action{Kind: browser.ActionBack})

	before := js(t, pg, "document.getElementById('loaded').textContent").Str()
	res = ok(t, pg, browser.Action{Kind: browser.ActionReload})
	require.True(t, res.Navigated)
	require.NotEqual(t, before, js(t, pg, "document.getElementById('loaded').textContent").Str())

	// A link click that navigates, and one that only changes the hash.
	res = ok(t, pg, browser.Action{Kind: browser.ActionClick, Ref: refOf(t, pg, "link", "To B")})
	require.True(t, res.Navigated)
	require.Equal(t, "Page B", res.Snapshot.Page.Title)
	ok(t, pg, browser.Action{Kind: browser.ActionBack})
	res = ok(t, pg, browser.Action{Kind: browser.ActionClick, Target: &browser.Target{Role: "link", Name: "Section"}})
	require.True(t, res.Navigated)
	require.Equal(t, env.base+"/nav-a.html#section", res.URL)

	res = failsWith(t, pg, browser.Action{Kind: browser.ActionNavigate, URL: "http://blocked.example/page"}, browser.CodeDomainBlocked)
	require.Contains(t, res.Error.Message, "blocked by the run's domain policy")
	require.Equal(t, env.base+"/nav-a.html#section", res.URL)

	// Nothing listens on port 9 (discard) of 127.0.0.2.
	res = failsWith(t, pg, browser.Action{Kind: browser.ActionNavigate, URL: "http://127.0.0.2:9/"}, browser.CodeActionFailed)
	require.Contains(t, res.Error.Message, "net::ERR_")
}

func TestScroll(t *testing.T) {
	t.Parallel()
	env := newActionEnv(t)
	t.Run("page by direction", func(t *testing.T) {
		pg := env.page(t, "/scroll.html")
		res := ok(t, pg, browser.Action{Kind: browser.ActionScroll, Direction: "down"})
		require.Equal(t, "page", res.Scroll.Container)
		require.Equal(t, 300.0, res.Scroll.Y)
		res = ok(t, pg, browser.Action{Kind: browser.ActionScroll, Direction: "down", Amount: 500})
		require.Equal(t, 800.0, res.Scroll.Y)
		require.Equal(t, 800.0, res.Snapshot.Viewport.ScrollY)
		res = ok(t, pg, browser.Action{Kind: browser.ActionScroll, Direction: "bottom"})
		require.Equal(t, res.Scroll.MaxY, res.Scroll.Y)
		res = ok(t, pg, browser.Action{Kind: browser.ActionScroll, Direction: "down"})
		require.Contains(t, res.Note, "cannot scroll down any further")
		res = ok(t, pg, browser.Action{Kind: browser.ActionScroll, Direction: "top"})
		require.Zero(t, res.Scroll.Y, "%+v %s", res.Scroll, js(t, pg, "String(scrollY)").Str())
	})
	t.Run("element into view", func(t *testing.T) {
		pg := env.page(t, "/scroll.html")
		res := ok(t, pg, browser.Action{Kind: browser.ActionScroll, Target: &browser.Target{Role: "button", Name: "At the bottom"}})
		require.Greater(t, res.Scroll.Y, 2000.0)
		require.True(t, js(t, pg, "(r => r.top >= 0 && r.bottom <= innerHeight)(document.getElementById('bottom').getBoundingClientRect())").Bool())
	})
	t.Run("inside a scroll container", func(t *testing.T) {
		pg := env.page(t, "/scroll.html")
		res := ok(t, pg, browser.Action{Kind: browser.ActionScroll, Target: &browser.Target{CSS: "#box"}, Direction: "down", Amount: 50})
		require.Equal(t, "div#box", strings.Fields(res.Scroll.Container)[0])
		require.Equal(t, 50, js(t, pg, "document.getElementById('box').scrollTop").Int())
		require.Zero(t, js(t, pg, "scrollY").Int())
	})
	t.Run("app shell whose body does not scroll", func(t *testing.T) {
		pg := env.page(t, "/shell.html")
		res := ok(t, pg, browser.Action{Kind: browser.ActionScroll, Direction: "down"})
		require.Contains(t, res.Scroll.Container, "div#main")
		require.Equal(t, 300, js(t, pg, "document.getElementById('main').scrollTop").Int())
	})
	t.Run("nothing to scroll", func(t *testing.T) {
		pg := env.page(t, "/nav-b.html")
		res := ok(t, pg, browser.Action{Kind: browser.ActionScroll, Direction: "down"})
		require.Contains(t, res.Note, "nothing to scroll")
	})
}

func TestWait(t *testing.T) {
	t.Parallel()
	env := newActionEnv(t)
	t.Run("text and element", func(t *testing.T) {
		pg := env.page(t, "/wait.html")
		// The text appears 300 ms after the click, which may or may not
		// have settled by then; the wait holds either way.
		ok(t, pg, browser.Action{Kind: browser.ActionClick, Target: &browser.Target{CSS: "#start"}})
		ok(t, pg, browser.Action{Kind: browser.ActionWait, Text: "order CONFIRMED"})
		res := ok(t, pg, browser.Action{Kind: browser.ActionWait, Target: &browser.Target{Role: "button", Name: "Late button"}})
		require.Equal(t, browser.StrategyRole, res.Strategy)
	})
	t.Run("text that never comes", func(t *testing.T) {
		pg := env.page(t, "/wait.html")
		res := failsWith(t, pg, browser.Action{Kind: browser.ActionWait, Text: "never", Timeout: 500 * time.Millisecond}, browser.CodeTimeout)
		require.Contains(t, res.Error.Message, `"never"`)
		failsWith(t, pg, browser.Action{Kind: browser.ActionWait, Target: &browser.Target{CSS: "#never"}, Timeout: 300 * time.Millisecond}, browser.CodeTimeout)
	})
	t.Run("navigation", func(t *testing.T) {
		pg := env.page(t, "/wait.html")
		js(t, pg, "setTimeout(() => location.href = '/nav-b.html', 200)")
		res := ok(t, pg, browser.Action{Kind: browser.ActionWait, Navigation: true})
		require.True(t, res.Navigated)
		require.Equal(t, "Page B", res.Snapshot.Page.Title)
		failsWith(t, pg, browser.Action{Kind: browser.ActionWait, Navigation: true, Timeout: 200 * time.Millisecond}, browser.CodeTimeout)
	})
	t.Run("network idle and duration", func(t *testing.T) {
		pg := env.page(t, "/wait.html")
		js(t, pg, "window.done = false; fetch('/slow').then(r => r.text()).then(() => { window.done = true; })")
		ok(t, pg, browser.Action{Kind: browser.ActionWait, NetworkIdle: true})
		require.True(t, js(t, pg, "window.done").Bool())
		res := ok(t, pg, browser.Action{Kind: browser.ActionWait, Duration: 50 * time.Millisecond})
		require.GreaterOrEqual(t, res.Duration, 50*time.Millisecond)
		failsWith(t, pg, browser.Action{Kind: browser.ActionWait, Duration: 2 * time.Second, Timeout: time.Second}, browser.CodeInvalidParams)
	})
}

func TestSettleWaitsForXHR(t *testing.T) {
	t.Parallel()
	env := newActionEnv(t)
	for _, button := range []string{"Load data", "Load later"} {
		t.Run(button, func(t *testing.T) {
			pg := env.page(t, "/settle.html")
			res := ok(t, pg, browser.Action{Kind: browser.ActionClick, Target: &browser.Target{Role: "button", Name: button}})
			// /slow answers after 200 ms; the click returned only once the
			// answer was in the page.
			require.Equal(t, "done", js(t, pg, "document.getElementById('out').textContent").Str())
			require.False(t, res.Settle.Capped, "busy: %s", res.Settle.Busy)
		})
	}
	t.Run("capped on a page that never stops changing", func(t *testing.T) {
		env := newActionEnv(t)
		env.s.SetActionOptions(browser.ActionOptions{Settle: browser.SettleOptions{Max: 500 * time.Millisecond}})
		pg := env.page(t, "/settle.html")
		js(t, pg, "setInterval(() => document.getElementById('out').textContent = String(Math.random()), 50)")
		res := ok(t, pg, browser.Action{Kind: browser.ActionClick, Target: &browser.Target{CSS: "#static"}})
		require.True(t, res.Settle.Capped)
		require.Equal(t, "dom", res.Settle.Busy)
	})
}
