package browser_test

import (
	"bytes"
	"image/png"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/browser"
)

func TestDialogs(t *testing.T) {
	t.Parallel()
	env := newActionEnv(t)
	t.Run("answered by the default policy", func(t *testing.T) {
		pg := env.page(t, "/dialogs.html")
		res := ok(t, pg, browser.Action{Kind: browser.ActionClick, Target: &browser.Target{CSS: "#alert"}})
		require.Equal(t, []browser.DialogEvent{{Type: "alert", Message: "Saved!", Accepted: true, URL: env.base + "/dialogs.html"}}, res.Dialogs)
		require.Equal(t, res.Dialogs, res.Snapshot.Dialogs)
		res = ok(t, pg, browser.Action{Kind: browser.ActionClick, Target: &browser.Target{CSS: "#confirm"}})
		require.Len(t, res.Dialogs, 1)
		require.Equal(t, "confirm", res.Dialogs[0].Type)
		res = ok(t, pg, browser.Action{Kind: browser.ActionClick, Target: &browser.Target{CSS: "#prompt"}})
		require.Equal(t, "Ann", res.Dialogs[0].PromptText)
		require.Equal(t, `["after-alert","confirm:true","prompt:Ann"]`, js(t, pg, "JSON.stringify(log)").Str())
	})
	t.Run("answered by the action's policy", func(t *testing.T) {
		pg := env.page(t, "/dialogs.html")
		res := ok(t, pg, browser.Action{Kind: browser.ActionClick, Target: &browser.Target{CSS: "#confirm"}, Dialog: &browser.DialogPolicy{Dismiss: true}})
		require.False(t, res.Dialogs[0].Accepted)
		res = ok(t, pg, browser.Action{Kind: browser.ActionClick, Target: &browser.Target{CSS: "#prompt"}, Dialog: &browser.DialogPolicy{PromptText: "Bob"}})
		require.Equal(t, "Bob", res.Dialogs[0].PromptText)
		ok(t, pg, browser.Action{Kind: browser.ActionClick, Target: &browser.Target{CSS: "#prompt"}, Dialog: &browser.DialogPolicy{Dismiss: true}})
		require.Equal(t, `["confirm:false","prompt:Bob","prompt:null"]`, js(t, pg, "JSON.stringify(log)").Str())
	})
	t.Run("beforeunload accepted lets the page go", func(t *testing.T) {
		pg := env.page(t, "/dialogs.html")
		ok(t, pg, browser.Action{Kind: browser.ActionClick, Target: &browser.Target{CSS: "#leave"}})
		res := ok(t, pg, browser.Action{Kind: browser.ActionClick, Target: &browser.Target{Role: "link", Name: "Next page"}})
		require.Len(t, res.Dialogs, 1)
		require.Equal(t, "beforeunload", res.Dialogs[0].Type)
		require.Equal(t, env.base+"/nav-b.html", res.URL)
	})
	t.Run("beforeunload dismissed keeps the page", func(t *testing.T) {
		env := newActionEnv(t)
		env.s.SetActionOptions(browser.ActionOptions{Dialogs: browser.DialogPolicy{Dismiss: true}})
		pg := env.page(t, "/dialogs.html")
		ok(t, pg, browser.Action{Kind: browser.ActionClick, Target: &browser.Target{CSS: "#leave"}})
		res := ok(t, pg, browser.Action{Kind: browser.ActionClick, Target: &browser.Target{Role: "link", Name: "Next page"}})
		require.Len(t, res.Dialogs, 1)
		require.False(t, res.Dialogs[0].Accepted)
		require.Equal(t, env.base+"/dialogs.html", res.URL)
	})
}

func TestTabs(t *testing.T) {
	t.Parallel()
	env := newActionEnv(t)
	pg := env.page(t, "/tabs.html")
	require.Equal(t, "t1", pg.TabID())

	res := ok(t, pg, browser.Action{Kind: browser.ActionClick, Target: &browser.Target{Role: "button", Name: "Open popup"}})
	require.True(t, res.OpenedTab)
	popup := res.Page
	require.NotSame(t, pg, popup)
	require.Equal(t, "t2", res.Tab)
	require.Equal(t, env.base+"/nav-b.html", res.URL)
	require.Equal(t, "Page B", res.Snapshot.Page.Title)
	require.Equal(t, []browser.TabInfo{
		{ID: "t1", URL: env.base + "/tabs.html", Title: "Tabs"},
		{ID: "t2", URL: env.base + "/nav-b.html", Title: "Page B", Active: true, Opener: "t1"},
	}, env.s.Tabs())
	require.Len(t, res.Snapshot.Tabs, 2)
	// The popup has the opener's viewport.
	require.Equal(t, 1280, js(t, popup, "innerWidth").Int())
	// The popup is a page like any other.
	res = ok(t, popup, browser.Action{Kind: browser.ActionClick, Target: &browser.Target{Role: "link", Name: "To A"}})
	require.Equal(t, "Page A", res.Snapshot.Page.Title)

	res = ok(t, popup, browser.Action{Kind: browser.ActionSwitchTab, Tab: "t1"})
	require.Same(t, pg, res.Page)
	require.Equal(t, "Tabs", res.Snapshot.Page.Title)
	require.Same(t, pg, env.s.ActivePage())

	// A target=_blank link opens a tab that is followed too.
	res = ok(t, pg, browser.Action{Kind: browser.ActionClick, Target: &browser.Target{Role: "link", Name: "New tab"}})
	require.True(t, res.OpenedTab)
	require.Equal(t, "t3", res.Tab)
	require.Equal(t, "Page A", res.Snapshot.Page.Title)

	// Closing the active tab goes back to its opener.
	closed := res.Page
	res = ok(t, closed, browser.Action{Kind: browser.ActionCloseTab})
	require.Same(t, pg, res.Page)
	require.Len(t, res.Tabs, 2)
	// An action on a closed tab says so and hands over the active one.
	res = failsWith(t, closed, browser.Action{Kind: browser.ActionClick, Target: &browser.Target{CSS: "a"}}, browser.CodeActionFailed)
	require.Same(t, pg, res.Page)
	require.Equal(t, "Tabs", res.Snapshot.Page.Title)
	res = ok(t, pg, browser.Action{Kind: browser.ActionCloseTab, Tab: "t2"})
	require.Same(t, pg, res.Page)
	require.Equal(t, []browser.TabInfo{{ID: "t1", URL: env.base + "/tabs.html", Title: "Tabs", Active: true}}, res.Tabs)
	failsWith(t, pg, browser.Action{Kind: browser.ActionCloseTab}, browser.CodeInvalidParams)
	failsWith(t, pg, browser.Action{Kind: browser.ActionCloseTab, Tab: "t2"}, browser.CodeInvalidParams)

	// A popup that greets with an alert: answered, and reported.
	res = ok(t, pg, browser.Action{Kind: browser.ActionClick, Target: &browser.Target{Role: "button", Name: "Open alerting popup"}})
	require.True(t, res.OpenedTab)
	require.Equal(t, "after alert", js(t, res.Page, "document.getElementById('after').textContent").Str())
	require.Len(t, res.Dialogs, 1)
	require.Equal(t, "Welcome from the popup", res.Dialogs[0].Message)
}

func TestExtract(t *testing.T) {
	t.Parallel()
	env := newActionEnv(t)
	pg := env.page(t, "/extract.html")
	res := ok(t, pg, browser.Action{Kind: browser.ActionExtract, Extract: &browser.ExtractSpec{
		Rows:   "li.item",
		Fields: map[string]string{"name": ".title", "link": "a.title@href", "rating": ".rating", "id": "@data-id", "address": ".addr"},
		Limit:  3,
	}})
	require.Equal(t, 30, res.RowsMatched)
	require.Equal(t, []map[string]string{
		{"name": "Place 1", "link": env.base + "/place/1", "rating": "1.5", "id": "r1", "address": "Street 1"},
		{"name": "Place 2", "link": env.base + "/place/2", "rating": "2.5", "id": "r2", "address": ""},
		{"name": "Place 3", "link": env.base + "/place/3", "rating": "3.5", "id": "r3", "address": "Street 3"},
	}, res.Rows)

	res = ok(t, pg, browser.Action{Kind: browser.ActionExtract, Extract: &browser.ExtractSpec{Rows: "li.item", Fields: map[string]string{"text": ""}}})
	require.Len(t, res.Rows, 30)
	require.Equal(t, "Place 1 1.5 Street 1", res.Rows[0]["text"])

	res = ok(t, pg, browser.Action{Kind: browser.ActionExtract, Extract: &browser.ExtractSpec{Rows: ".none", Fields: map[string]string{"a": "b"}}})
	require.Empty(t, res.Rows)
	failsWith(t, pg, browser.Action{Kind: browser.ActionExtract, Extract: &browser.ExtractSpec{Rows: "li[", Fields: map[string]string{"a": "b"}}}, browser.CodeInvalidParams)
	failsWith(t, pg, browser.Action{Kind: browser.ActionExtract, Extract: &browser.ExtractSpec{Rows: "li", Fields: map[string]string{"a": "b["}}}, browser.CodeInvalidParams)
}

func TestCookies(t *testing.T) {
	t.Parallel()
	env := newActionEnv(t)
	env.s.SetActionOptions(browser.ActionOptions{Policy: hostPolicy{}})
	pg := env.page(t, "/nav-a.html")
	expires := time.Now().Add(time.Hour).UTC().Truncate(time.Second)
	ok(t, pg, browser.Action{Kind: browser.ActionSetCookies, Cookies: []browser.Cookie{
		{Name: "session", Value: "abc", URL: env.base + "/", HTTPOnly: true},
		{Name: "pref", Value: "dark", Domain: "127.0.0.1", Path: "/", Expires: expires, SameSite: "Lax"},
	}})
	res := ok(t, pg, browser.Action{Kind: browser.ActionGetCookies})
	byName := map[string]browser.Cookie{}
	for _, c := range res.Cookies {
		byName[c.Name] = c
	}
	require.Equal(t, "abc", byName["session"].Value)
	require.True(t, byName["session"].HTTPOnly)
	require.True(t, byName["session"].Expires.IsZero())
	require.Equal(t, expires, byName["pref"].Expires.Truncate(time.Second))
	require.Equal(t, "Lax", byName["pref"].SameSite)
	// The page sees the cookie that is not HTTP-only.
	require.Equal(t, "pref=dark", js(t, pg, "document.cookie").Str())

	res = ok(t, pg, browser.Action{Kind: browser.ActionGetCookies, URL: "http://other.test/"})
	require.Empty(t, res.Cookies)
	failsWith(t, pg, browser.Action{Kind: browser.ActionSetCookies, Cookies: []browser.Cookie{{Name: "x", Value: "1", Domain: "blocked.example"}}}, browser.CodeDomainBlocked)
	failsWith(t, pg, browser.Action{Kind: browser.ActionSetCookies, Cookies: []browser.Cookie{{Name: "x", Value: "1", Domain: "a.test", SameSite: "Sometimes"}}}, browser.CodeInvalidParams)
}

func TestDrag(t *testing.T) {
	t.Parallel()
	env := newActionEnv(t)
	pg := env.page(t, "/drag.html")
	ok(t, pg, browser.Action{Kind: browser.ActionDrag, Target: &browser.Target{Text: "Card"}, ToTarget: &browser.Target{Text: "Bin"}})
	require.Equal(t, "card-1", js(t, pg, "log.dropped").Str())

	ok(t, pg, browser.Action{Kind: browser.ActionDrag, Target: &browser.Target{CSS: "#knob"}, ToTarget: &browser.Target{Point: &browser.Point{X: 230, Y: 220}}})
	require.Greater(t, js(t, pg, "log.knob").Int(), 150)
	require.Greater(t, js(t, pg, "log.moves").Int(), 2)
}

func TestScreenshotAction(t *testing.T) {
	t.Parallel()
	env := newActionEnv(t)
	pg := env.page(t, "/scroll.html")
	res := ok(t, pg, browser.Action{Kind: browser.ActionScreenshot})
	require.Equal(t, browser.FormatPNG, res.Screenshot.Format)
	img, err := png.DecodeConfig(bytes.NewReader(res.Screenshot.Data))
	require.NoError(t, err)
	require.Equal(t, 800, img.Height)
	res = ok(t, pg, browser.Action{Kind: browser.ActionScreenshot, FullPage: true, Format: "jpeg", Quality: 50})
	require.Equal(t, "image/jpeg", http.DetectContentType(res.Screenshot.Data))
	require.Greater(t, res.Screenshot.Height, 3000)
}
