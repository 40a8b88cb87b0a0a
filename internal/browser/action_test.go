package browser_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/ysmood/gson"

	"github.com/wayfinder/wayfinder/internal/browser"
)

// actionEnv is the fixture server of the action tests (testdata/actions,
// plus /slow, which answers after 200 ms) and a browser session. Subtests
// sharing an env run one after the other, as a session's actions do: only
// the tab in front renders, and each action brings its own tab there.
type actionEnv struct {
	base string
	s    *browser.Session
}

func newActionEnv(t *testing.T) *actionEnv {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/", http.FileServer(http.Dir("testdata/actions")))
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(200 * time.Millisecond):
		case <-r.Context().Done():
			return
		}
		_, _ = w.Write([]byte("done"))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &actionEnv{base: srv.URL, s: newSession(t)}
}

// page opens path of the fixture server in a new tab.
func (e *actionEnv) page(t *testing.T, path string) *browser.Page {
	t.Helper()
	ctx := context.Background()
	pg, err := e.s.NewPage(ctx, browser.PageOptions{})
	require.NoError(t, err)
	require.NoError(t, pg.Navigate(ctx, e.base+path, 20*time.Second))
	return pg
}

// do runs a, which must not fail at the Go level.
func do(t *testing.T, pg *browser.Page, a browser.Action) *browser.ActionResult {
	t.Helper()
	res, err := pg.Do(context.Background(), a)
	require.NoError(t, err)
	return res
}

// ok runs a and requires it to succeed and to report a fresh snapshot.
func ok(t *testing.T, pg *browser.Page, a browser.Action) *browser.ActionResult {
	t.Helper()
	res := do(t, pg, a)
	require.Truef(t, res.Success, "%s failed: %+v", a.Kind, res.Error)
	require.NotNil(t, res.Snapshot, res.SnapshotError)
	require.Equal(t, res.Page.SnapshotID(), res.Snapshot.ID)
	return res
}

// failsWith runs a and requires it to fail with code.
func failsWith(t *testing.T, pg *browser.Page, a browser.Action, code browser.ErrorCode) *browser.ActionResult {
	t.Helper()
	res := do(t, pg, a)
	require.False(t, res.Success, "%s succeeded", a.Kind)
	require.NotNil(t, res.Error)
	require.Equalf(t, code, res.Error.Code, "message: %s", res.Error.Message)
	require.NotEmpty(t, res.Error.Message)
	require.NotNil(t, res.Snapshot, "a failed action reports a fresh snapshot too: %s", res.SnapshotError)
	return res
}

// js evaluates expr in pg.
func js(t *testing.T, pg *browser.Page, expr string) gson.JSON {
	t.Helper()
	v, err := browser.ActionEval(context.Background(), pg, expr)
	require.NoError(t, err)
	return v
}

// snap takes a snapshot of pg.
func snap(t *testing.T, pg *browser.Page) *browser.Snapshot {
	t.Helper()
	s, err := pg.Snapshot(context.Background(), browser.SnapshotOptions{})
	require.NoError(t, err)
	return s
}

// ref returns the ref of the element of s with role and name.
func ref(t *testing.T, s *browser.Snapshot, role, name string) string {
	t.Helper()
	for _, e := range s.Elements {
		if e.Role == role && e.Name == name {
			return e.Ref
		}
	}
	require.Failf(t, "no such element", "%s %q in\n%s", role, name, s.Text())
	return ""
}

// refOf snapshots pg and returns the ref of the element with role and name.
func refOf(t *testing.T, pg *browser.Page, role, name string) string {
	t.Helper()
	return ref(t, snap(t, pg), role, name)
}

func TestPointerActions(t *testing.T) {
	t.Parallel()
	env := newActionEnv(t)
	for _, tc := range []struct {
		name   string
		kind   browser.ActionKind
		button string
		expect string // JS expression that must be true afterwards
	}{
		{"click", browser.ActionClick, "Click me", "log.click === 1"},
		{"double click", browser.ActionDoubleClick, "Double me", "log.dbl === 1"},
		{"right click", browser.ActionRightClick, "Right me", "log.ctx === 1"},
		{"hover", browser.ActionHover, "Hover me", "log.hover === 1"},
		{"click scrolls into view", browser.ActionClick, "Far away", "log.far === 1 && scrollY > 1000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pg := env.page(t, "/pointer.html")
			s := snap(t, pg)
			res := ok(t, pg, browser.Action{Kind: tc.kind, Ref: ref(t, s, "button", tc.button), SnapshotID: s.ID})
			require.Equal(t, browser.StrategyRef, res.Strategy)
			require.NotEmpty(t, res.Element)
			require.True(t, js(t, pg, tc.expect).Bool(), "expected %s; log %s", tc.expect, js(t, pg, "JSON.stringify(log)").Str())
		})
	}
}

func TestPointerPrechecks(t *testing.T) {
	t.Parallel()
	env := newActionEnv(t)
	for _, tc := range []struct {
		name     string
		button   string
		change   string // what the page does after the snapshot
		code     browser.ErrorCode
		covering string
		unclick  string // a JS expression that must stay true: the click did not happen
	}{
		{"disabled", "Disabled", "", browser.CodeElementDisabled, "", "log.disabled === 0"},
		{"aria-disabled", "Aria disabled", "", browser.CodeElementDisabled, "", "log.ariadis === 0"},
		{"display none", "Click me", "document.getElementById('click').style.display = 'none'", browser.CodeElementNotVisible, "", "log.click === 0"},
		{"visibility hidden", "Click me", "document.getElementById('click').style.visibility = 'hidden'", browser.CodeElementNotVisible, "", "log.click === 0"},
		{"covered by an overlay", "Covered", "document.getElementById('overlay').style.display = 'block'",
			browser.CodeElementObscured, `div#overlay "We use cookies. Accept"`, "log.covered === 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pg := env.page(t, "/pointer.html")
			r := refOf(t, pg, "button", tc.button)
			if tc.change != "" {
				js(t, pg, tc.change)
			}
			res := failsWith(t, pg, browser.Action{Kind: browser.ActionClick, Ref: r}, tc.code)
			require.Equal(t, tc.covering, res.Error.Covering)
			require.True(t, js(t, pg, tc.unclick).Bool())
			require.Zero(t, res.Settle.Duration, "nothing happened, so nothing to settle")
		})
	}
}

func TestClickWaitsForAnimation(t *testing.T) {
	t.Parallel()
	env := newActionEnv(t)
	pg := env.page(t, "/pointer.html")
	r := refOf(t, pg, "button", "Sliding")
	// The button starts sliding 500 px to the left: clicking where it was
	// would miss it.
	js(t, pg, "document.getElementById('slider').classList.add('in')")
	ok(t, pg, browser.Action{Kind: browser.ActionClick, Ref: r})
	require.Equal(t, 1, js(t, pg, "log.slider").Int())
}

func TestClickAtCoordinates(t *testing.T) {
	t.Parallel()
	env := newActionEnv(t)
	pg := env.page(t, "/pointer.html")
	res := ok(t, pg, browser.Action{Kind: browser.ActionClick, Target: &browser.Target{Point: &browser.Point{X: 650, Y: 60}}})
	require.Equal(t, browser.StrategyCoordinates, res.Strategy)
	require.Contains(t, res.Element, "div#spot")
	require.Equal(t, "[[650,60]]", js(t, pg, "JSON.stringify(log.spot)").Str())

	failsWith(t, pg, browser.Action{Kind: browser.ActionClick, Target: &browser.Target{Point: &browser.Point{X: 5000, Y: 60}}}, browser.CodeInvalidParams)
}

func TestTargetStrategies(t *testing.T) {
	t.Parallel()
	env := newActionEnv(t)
	short := 100 * time.Millisecond
	for _, tc := range []struct {
		name     string
		target   browser.Target
		strategy browser.Strategy
		tried    []browser.Strategy
		expect   string
	}{
		{"css", browser.Target{CSS: "#click", Role: "button", Name: "Double me"}, browser.StrategyCSS, nil, "log.click === 1"},
		{"role after css", browser.Target{CSS: "#nope", Role: "button", Name: "Double me", Timeout: short},
			browser.StrategyRole, []browser.Strategy{browser.StrategyCSS}, "log.dbl === 0 && log.click === 0"},
		{"role by partial name", browser.Target{Role: "button", Name: "hover"}, browser.StrategyRole, nil, "log.hover === 1"},
		{"text after role", browser.Target{CSS: "#nope", Role: "button", Name: "Nope", Text: "right ME", Timeout: short},
			browser.StrategyText, []browser.Strategy{browser.StrategyCSS, browser.StrategyRole}, "log.ctx === 0"},
		{"coordinates last", browser.Target{CSS: "#nope", Text: "no such text", Point: &browser.Point{X: 650, Y: 60}, Timeout: short},
			browser.StrategyCoordinates, []browser.Strategy{browser.StrategyCSS, browser.StrategyText}, "log.spot.length === 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pg := env.page(t, "/pointer.html")
			target := tc.target
			res := ok(t, pg, browser.Action{Kind: browser.ActionClick, Target: &target})
			require.Equal(t, tc.strategy, res.Strategy)
			var tried []browser.Strategy
			for _, a := range res.Attempts {
				tried = append(tried, a.Strategy)
				require.NotEmpty(t, a.Error)
			}
			require.Equal(t, tc.tried, tried)
			require.True(t, js(t, pg, tc.expect).Bool(), "log %s", js(t, pg, "JSON.stringify(log)").Str())
		})
	}

	t.Run("nothing matches", func(t *testing.T) {
		pg := env.page(t, "/pointer.html")
		res := failsWith(t, pg, browser.Action{Kind: browser.ActionClick, Target: &browser.Target{CSS: ".missing", Text: "missing", Timeout: short}}, browser.CodeActionFailed)
		require.Len(t, res.Attempts, 2)
		require.Contains(t, res.Error.Message, "css")
	})
	t.Run("css waits for the element", func(t *testing.T) {
		pg := env.page(t, "/wait.html")
		ok(t, pg, browser.Action{Kind: browser.ActionClick, Target: &browser.Target{CSS: "#start"}})
		res := ok(t, pg, browser.Action{Kind: browser.ActionClick, Target: &browser.Target{CSS: "#late", Timeout: 5 * time.Second}})
		require.Equal(t, browser.StrategyCSS, res.Strategy)
	})
	t.Run("invalid css", func(t *testing.T) {
		pg := env.page(t, "/pointer.html")
		failsWith(t, pg, browser.Action{Kind: browser.ActionClick, Target: &browser.Target{CSS: "button[", Text: "Click me"}}, browser.CodeInvalidParams)
	})
	t.Run("shadow dom", func(t *testing.T) {
		pg := env.page(t, "/shadow.html")
		ok(t, pg, browser.Action{Kind: browser.ActionClick, Target: &browser.Target{CSS: "button.inner"}})
		res := ok(t, pg, browser.Action{Kind: browser.ActionClick, Target: &browser.Target{Text: "shadow button"}})
		require.Equal(t, browser.StrategyText, res.Strategy)
		res = ok(t, pg, browser.Action{Kind: browser.ActionClick, Target: &browser.Target{Role: "button", Name: "Shadow button"}})
		require.Equal(t, browser.StrategyRole, res.Strategy)
		require.Equal(t, `["shadow","shadow","shadow"]`, js(t, pg, "JSON.stringify(log)").Str())
	})
}

func TestInvalidParams(t *testing.T) {
	t.Parallel()
	env := newActionEnv(t)
	pg := env.page(t, "/pointer.html")
	for _, a := range []browser.Action{
		{Kind: "fly"},
		{Kind: browser.ActionClick},
		{Kind: browser.ActionClick, Ref: "@e0", Target: &browser.Target{CSS: "#click"}},
		{Kind: browser.ActionClick, Target: &browser.Target{}},
		{Kind: browser.ActionClick, Ref: "@e0", URL: "http://x/"},
		{Kind: browser.ActionScroll},
		{Kind: browser.ActionScroll, Direction: "sideways"},
		{Kind: browser.ActionScroll, Direction: "top", Amount: 10},
		{Kind: browser.ActionPress, Keys: "Control+Banana"},
		{Kind: browser.ActionPress, Keys: "A+B"},
		{Kind: browser.ActionWait, Text: "x", Duration: time.Second},
		{Kind: browser.ActionWait},
		{Kind: browser.ActionWait, Duration: 2 * time.Minute},
		{Kind: browser.ActionNavigate},
		{Kind: browser.ActionNavigate, URL: "ftp://example.com/"},
		{Kind: browser.ActionSelect, Ref: "@e0"},
		{Kind: browser.ActionDrag, Ref: "@e0"},
		{Kind: browser.ActionUpload, Ref: "@e0"},
		{Kind: browser.ActionExtract, Extract: &browser.ExtractSpec{Rows: "li"}},
		{Kind: browser.ActionSetCookies, Cookies: []browser.Cookie{{Name: "a"}}},
		{Kind: browser.ActionSwitchTab},
		{Kind: browser.ActionSwitchTab, Tab: "t99"},
	} {
		res := failsWith(t, pg, a, browser.CodeInvalidParams)
		require.Equal(t, a.Kind, res.Kind)
	}
	require.Equal(t, "0", js(t, pg, "String(log.click)").Str())
}

func TestRefs(t *testing.T) {
	t.Parallel()
	env := newActionEnv(t)
	t.Run("unknown and outdated refs", func(t *testing.T) {
		pg := env.page(t, "/replace.html")
		res := failsWith(t, pg, browser.Action{Kind: browser.ActionClick, Ref: "@e0"}, browser.CodeRefInvalid)
		require.Contains(t, res.Error.Message, "no snapshot")
		old := res.Snapshot
		fresh := snap(t, pg)
		failsWith(t, pg, browser.Action{Kind: browser.ActionClick, Ref: "@e99"}, browser.CodeRefInvalid)
		failsWith(t, pg, browser.Action{Kind: browser.ActionClick, Ref: ref(t, fresh, "button", "Save"), SnapshotID: old.ID}, browser.CodeRefInvalid)
		require.Equal(t, "[]", js(t, pg, "JSON.stringify(log)").Str())
	})
	t.Run("element removed", func(t *testing.T) {
		pg := env.page(t, "/replace.html")
		r := refOf(t, pg, "button", "Remove")
		js(t, pg, "drop()")
		res := failsWith(t, pg, browser.Action{Kind: browser.ActionClick, Ref: r}, browser.CodeRefInvalid)
		require.Contains(t, res.Error.Message, "no longer in the page")
		require.Equal(t, "[]", js(t, pg, "JSON.stringify(log)").Str())
	})
	t.Run("element replaced by an equivalent", func(t *testing.T) {
		pg := env.page(t, "/replace.html")
		r := refOf(t, pg, "button", "Save")
		js(t, pg, "rerender()")
		res := ok(t, pg, browser.Action{Kind: browser.ActionClick, Ref: r})
		require.Equal(t, browser.StrategyRef, res.Strategy)
		require.Contains(t, res.Note, "replaced")
		require.Equal(t, `["save-2"]`, js(t, pg, "JSON.stringify(log)").Str())
		// The result's snapshot serves the next action.
		ok(t, pg, browser.Action{Kind: browser.ActionClick, Ref: ref(t, res.Snapshot, "button", "Remove"), SnapshotID: res.Snapshot.ID})
		require.Equal(t, `["save-2","remove"]`, js(t, pg, "JSON.stringify(log)").Str())
	})
}

func TestFrames(t *testing.T) {
	t.Parallel()
	env := newActionEnv(t)
	pg := env.page(t, "/frames.html")
	// The cross-origin frame loads after the top page's load event.
	ok(t, pg, browser.Action{Kind: browser.ActionWait, NetworkIdle: true})
	s := snap(t, pg)
	for _, which := range []string{"same", "cross"} {
		ok(t, pg, browser.Action{Kind: browser.ActionClick, Ref: ref(t, s, "button", which+" button"), SnapshotID: s.ID})
		s = snap(t, pg)
		res := ok(t, pg, browser.Action{Kind: browser.ActionFill, Ref: ref(t, s, "textbox", which+" field"), Value: "in " + which})
		require.Equal(t, "in "+which, res.Value)
		s = res.Snapshot
	}
	require.Equal(t, `["same:1","cross:1"]`, js(t, pg, "JSON.stringify(log)").Str())
	require.Equal(t, "blocked", js(t, pg, "(() => { try { return document.getElementById('cross').contentDocument.title } catch (e) { return 'blocked' } })() || 'blocked'").Str(),
		"the second frame is another origin")
	for _, e := range s.Elements {
		if e.Role == "button" {
			require.Contains(t, []string{"same button", "cross button"}, e.Name)
		}
	}
}
