package browser_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/browser"
)

// find returns the listed element with role and name, nil when none.
func find(s *browser.Snapshot, role, name string) *browser.Element {
	for i := range s.Elements {
		if e := &s.Elements[i]; e.Role == role && e.Name == name {
			return e
		}
	}
	return nil
}

// mustFind is find that fails the test when the element is not listed.
func mustFind(t *testing.T, s *browser.Snapshot, role, name string) *browser.Element {
	t.Helper()
	e := find(s, role, name)
	require.NotNil(t, e, "%s %q not in snapshot:\n%s", role, name, s.Text())
	return e
}

func refNumber(t *testing.T, ref string) int {
	t.Helper()
	require.True(t, strings.HasPrefix(ref, "@e"), ref)
	n, err := strconv.Atoi(ref[2:])
	require.NoError(t, err, ref)
	return n
}

// resolve checks that ref resolves to a live node and returns its "id|TAG".
func resolve(t *testing.T, page *browser.Page, s *browser.Snapshot, ref string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nr, desc, err := browser.ResolveRef(ctx, page, s.ID, ref)
	require.NoError(t, err)
	require.Equal(t, ref, nr.Ref)
	require.NotZero(t, nr.BackendNodeID)
	require.NotEmpty(t, nr.FrameID)
	return desc
}

// eval runs a JS function expression in the page and returns its value.
func eval(t *testing.T, page *browser.Page, js string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, err := browser.EvalJS(ctx, page, js)
	require.NoError(t, err)
	return v.JSON("", "")
}

type rect struct{ X, Y, Width, Height float64 }

func evalRect(t *testing.T, page *browser.Page, js string) rect {
	t.Helper()
	var r rect
	require.NoError(t, json.Unmarshal([]byte(eval(t, page, js)), &r))
	return r
}

func requireBox(t *testing.T, want rect, got browser.Rect) {
	t.Helper()
	const tol = 1.0
	require.InDelta(t, want.X, got.X, tol, "x: want %+v got %+v", want, got)
	require.InDelta(t, want.Y, got.Y, tol, "y: want %+v got %+v", want, got)
	require.InDelta(t, want.Width, got.Width, tol, "width: want %+v got %+v", want, got)
	require.InDelta(t, want.Height, got.Height, tol, "height: want %+v got %+v", want, got)
}

func TestSnapshotFormRefsValuesAndJSON(t *testing.T) {
	t.Parallel()
	page, _ := fixturePage(t, "form.html")
	s := snapshot(t, page, browser.SnapshotOptions{HTML: true, VisibleText: true})

	t.Run("refs in document order and resolvable", func(t *testing.T) {
		require.NotEmpty(t, s.Elements)
		last := -1
		for _, e := range s.Elements {
			n := refNumber(t, e.Ref)
			require.Greater(t, n, last, "refs out of document order")
			last = n
			require.NotEmpty(t, resolve(t, page, s, e.Ref))
		}
		require.Equal(t, "email|INPUT", resolve(t, page, s, mustFind(t, s, "textbox", "Email").Ref))
		require.Equal(t, s.ID, page.SnapshotID())
		// Boxes follow the document: the header links come before the form.
		require.Less(t, mustFind(t, s, "link", "Home").Box.Y, mustFind(t, s, "button", "Create account").Box.Y)
	})

	t.Run("values states and options", func(t *testing.T) {
		cases := []struct {
			role, name, value string
			states            []string
		}{
			{"textbox", "First name", "Ada", nil},
			{"textbox", "Last name", "", nil},
			{"textbox", "Email", "", []string{"required"}},
			{"textbox", "Password", "", []string{"required", "filled"}},
			{"combobox", "Country", "France", []string{"collapsed"}},
			{"textbox", "About you", "I like engines.", nil},
			{"radio", "Free", "", []string{"checked"}},
			{"radio", "Pro", "", nil},
			{"radio", "Team (sold out)", "", []string{"disabled"}},
			{"checkbox", "Newsletter", "", []string{"checked"}},
			{"checkbox", "Product tips", "", nil},
			{"button", "Save draft", "", []string{"disabled"}},
		}
		for _, c := range cases {
			e := mustFind(t, s, c.role, c.name)
			require.Equal(t, c.value, e.Value, c.name)
			for _, st := range c.states {
				require.Contains(t, e.State, st, c.name)
			}
			require.NotContains(t, e.State, "enabled", c.name)
		}
		country := mustFind(t, s, "combobox", "Country")
		require.Len(t, country.Options, 11)
		require.Equal(t, "Austria", country.Options[0])
		require.Equal(t, "+2", country.Options[10])
		h := mustFind(t, s, "heading", "Create your account")
		require.Equal(t, 1, h.Level)
		require.Equal(t, "/pricing", mustFind(t, s, "link", "Pricing").URL)
	})

	t.Run("password and hidden inputs never leak", func(t *testing.T) {
		js, err := json.Marshal(s)
		require.NoError(t, err)
		for _, out := range []string{s.Text(), string(js)} {
			require.NotContains(t, out, "hunter2")
			require.NotContains(t, out, "tok-123")
		}
	})

	t.Run("json shape", func(t *testing.T) {
		js, err := json.Marshal(s)
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(js, &m))
		for _, k := range []string{"snapshot_id", "timestamp", "page", "viewport", "elements", "total", "remaining"} {
			require.Contains(t, m, k)
		}
		require.Equal(t, s.Page.URL, m["page"].(map[string]any)["url"])
		vp := m["viewport"].(map[string]any)
		require.EqualValues(t, 1280, vp["width"])
		require.EqualValues(t, 800, vp["height"])
		require.Contains(t, vp, "scroll_y")
		el := m["elements"].([]any)[0].(map[string]any)
		for _, k := range []string{"ref", "role", "name", "bbox"} {
			require.Contains(t, el, k)
		}
		require.Contains(t, el["bbox"].(map[string]any), "width")
	})

	t.Run("text rendering", func(t *testing.T) {
		text := s.Text()
		for _, want := range []string{
			`page: "Create your account" ` + s.Page.URL,
			"viewport: 1280x800 scroll 0,0 of 1280x",
			`textbox "First name" = "Ada"`,
			`textbox "Password" required filled`,
			`combobox "Country" = "France" {Austria|Belgium|`,
			`h1 "Create your account"`,
			`radio "Free" checked`,
			`button "Save draft" disabled`,
		} {
			require.Contains(t, text, want)
		}
		require.Regexp(t, `\n@e\d+ button "Reset"\noffscreen \(scroll to reach\):\n@e\d+ link "Sign in instead"\n`, text)
		plain := snapshot(t, page, browser.SnapshotOptions{}).Text()
		for _, unwanted := range []string{"enabled", "unchecked", "visible", "(336,", "bbox", "html:", "Sign in instead\" offscreen"} {
			require.NotContains(t, plain, unwanted)
		}
		withBoxes := snapshot(t, page, browser.SnapshotOptions{Boxes: true}).Text()
		require.Regexp(t, `button "Create account" \(\d+,\d+ \d+x\d+\)`, withBoxes)
	})

	t.Run("multi-modal extras", func(t *testing.T) {
		require.Contains(t, s.VisibleText, "Create your account")
		require.Contains(t, s.VisibleText, "Profile")
		require.Contains(t, s.HTML, `<button type="submit">Create account</button>`)
		require.Contains(t, s.HTML, `<input id="password" name="password" type="password" value="***" required>`)
		require.Contains(t, s.HTML, `<option selected>France`)
		small := snapshot(t, page, browser.SnapshotOptions{VisibleText: true, MaxTextChars: 40, HTML: true, MaxHTMLChars: 100})
		require.LessOrEqual(t, len(small.VisibleText), 40)
		require.LessOrEqual(t, len(small.HTML), 100)
		require.Empty(t, snapshot(t, page, browser.SnapshotOptions{}).HTML)
	})

	t.Run("focused element", func(t *testing.T) {
		eval(t, page, `() => document.getElementById("email").focus()`)
		s := snapshot(t, page, browser.SnapshotOptions{})
		email := mustFind(t, s, "textbox", "Email")
		require.Equal(t, email.Ref, s.Focused)
		require.Contains(t, email.State, "focused")
		require.Contains(t, s.Text(), "focus: "+email.Ref)
	})
}

func TestSnapshotInclusionRules(t *testing.T) {
	t.Parallel()
	page, _ := fixturePage(t, "messy.html")
	s := snapshot(t, page, browser.SnapshotOptions{})

	included := []struct{ role, name, why string }{
		{"heading", "Account settings", "h1"},
		{"heading", "Starter", "h3"},
		{"alert", "Your session expires in 5 minutes", "alert landmark, named by its text"},
		{"link", "Profile", "link"},
		{"clickable", "Archive", "div with a click handler"},
		{"clickable", "Share", "span with a pointer cursor"},
		{"button", "Export CSV", "focusable button under a wrongly aria-hidden wrapper"},
		{"clickable", "Open usage report", "clickable tile without controls"},
		{"checkbox", "Dark mode", "label standing in for a hidden checkbox"},
		{"combobox", "City", "ARIA combobox"},
		{"listbox", "Cities", "ARIA listbox"},
		{"option", "Paris", "ARIA option"},
		{"tab", "Security", "tab"},
		{"dialog", "Cookie preferences", "dialog landmark"},
	}
	for _, c := range included {
		e := find(s, c.role, c.name)
		require.NotNil(t, e, "%s %q (%s) missing:\n%s", c.role, c.name, c.why, s.Text())
		require.NotEmpty(t, resolve(t, page, s, e.Ref))
	}
	require.Contains(t, mustFind(t, s, "checkbox", "Dark mode").State, "checked")
	require.Contains(t, mustFind(t, s, "option", "Paris").State, "selected")
	require.Contains(t, mustFind(t, s, "combobox", "City").State, "expanded")
	require.Equal(t, "export|BUTTON", resolve(t, page, s, mustFind(t, s, "button", "Export CSV").Ref))

	text := s.Text()
	for _, excluded := range []string{
		"Decorative duplicate", // aria-hidden, tabindex=-1
		"Ghost display",        // display:none
		"Ghost visibility",     // visibility:hidden
		"Skip to content",      // parked at left:-9999px
		"Small print",          // h4
		"We use cookies",       // plain text
		"For teams",            // text of a clickable card (its button is the target)
	} {
		require.NotContains(t, text, excluded)
	}

	t.Run("icon button named by its class", func(t *testing.T) {
		var icon *browser.Element
		for i := range s.Elements {
			if s.Elements[i].Hint == ".icon-close" {
				icon = &s.Elements[i]
			}
		}
		require.NotNil(t, icon, s.Text())
		require.Equal(t, "button", icon.Role)
		require.Contains(t, text, icon.Ref+" button .icon-close")
	})

	t.Run("identical buttons told apart by context", func(t *testing.T) {
		var contexts []string
		for _, e := range s.Elements {
			if e.Role == "button" && e.Name == "Choose" {
				contexts = append(contexts, e.Context)
			}
		}
		require.Equal(t, []string{"Starter", "Business"}, contexts)
		require.Contains(t, text, `button "Choose" [Starter]`)
		require.Contains(t, text, `button "Choose" [Business]`)
		// A unique name needs no context in the text.
		require.NotRegexp(t, `button "Export CSV" \[`, text)
	})
}

func TestSnapshotShadowDOM(t *testing.T) {
	t.Parallel()
	page, _ := fixturePage(t, "shadow.html")
	s := snapshot(t, page, browser.SnapshotOptions{})
	cases := []struct{ role, name, resolved string }{
		{"button", "Open shadow button", "open-btn|BUTTON"},
		{"link", "Nested shadow link", "|A"},
		{"heading", "Closed widget", "|H2"},
		{"textbox", "Coupon", "coupon|INPUT"},
		{"button", "Closed shadow button", "closed-btn|BUTTON"},
		{"button", "Light DOM button", "light|BUTTON"},
	}
	last := -1
	for _, c := range cases {
		e := mustFind(t, s, c.role, c.name)
		require.Equal(t, c.resolved, resolve(t, page, s, e.Ref), c.name)
		n := refNumber(t, e.Ref)
		require.Greater(t, n, last, "%s out of document order", c.name)
		last = n
	}
	require.Equal(t, "SAVE10", mustFind(t, s, "textbox", "Coupon").Value)
	requireBox(t, evalRect(t, page, `() => window.__closedButtonRect()`), mustFind(t, s, "button", "Closed shadow button").Box)
	requireBox(t,
		evalRect(t, page, `() => document.getElementById("open-host").shadowRoot.getElementById("open-btn").getBoundingClientRect().toJSON()`),
		mustFind(t, s, "button", "Open shadow button").Box)
}

func TestSnapshotFrames(t *testing.T) {
	t.Parallel()
	page, f := fixturePage(t, "frames.html")
	require.NotEqual(t, f.base, f.other)
	s := snapshot(t, page, browser.SnapshotOptions{})
	require.Empty(t, s.Degraded)

	same := mustFind(t, s, "button", "Same-origin frame button")
	cross := mustFind(t, s, "button", "Cross-origin frame button")
	require.Equal(t, "same-btn|BUTTON", resolve(t, page, s, same.Ref))
	require.Equal(t, "cross-btn|BUTTON", resolve(t, page, s, cross.Ref))
	require.Equal(t, "1 Main St", mustFind(t, s, "textbox", "Street").Value)
	mustFind(t, s, "textbox", "Card number")
	require.Less(t, refNumber(t, mustFind(t, s, "button", "Top page button").Ref), refNumber(t, same.Ref))
	require.Less(t, refNumber(t, same.Ref), refNumber(t, cross.Ref))

	// Same origin: the button's rect in its frame plus the frame's content
	// box (border and padding included) in the top page.
	requireBox(t, evalRect(t, page, `() => {
		const f = document.getElementById("same"), cs = getComputedStyle(f), fr = f.getBoundingClientRect();
		const b = f.contentDocument.getElementById("same-btn").getBoundingClientRect();
		return {x: fr.x + f.clientLeft + parseFloat(cs.paddingLeft) + b.x, y: fr.y + f.clientTop + parseFloat(cs.paddingTop) + b.y, width: b.width, height: b.height};
	}`), same.Box)
	// Cross origin: the page cannot look inside; the fixture places the
	// button at (61, 71) in a borderless frame.
	frame := evalRect(t, page, `() => document.getElementById("cross").getBoundingClientRect().toJSON()`)
	got := cross.Box
	require.InDelta(t, frame.X+61, got.X, 1)
	require.InDelta(t, frame.Y+71, got.Y, 1)

	t.Run("after scrolling the frames keep top-page boxes", func(t *testing.T) {
		eval(t, page, `() => { document.body.style.height = "3000px"; window.scrollTo(0, 120); }`)
		s2 := snapshot(t, page, browser.SnapshotOptions{})
		require.EqualValues(t, 120, s2.Viewport.ScrollY)
		require.InDelta(t, cross.Box.Y-120, mustFind(t, s2, "button", "Cross-origin frame button").Box.Y, 1)
		require.InDelta(t, same.Box.Y-120, mustFind(t, s2, "button", "Same-origin frame button").Box.Y, 1)
	})
}

// TestSnapshotCrossSiteFrame embeds a frame from another site (localhost
// in a 127.0.0.1 page). Under site isolation Chromium runs it in another
// renderer: the snapshot then lists the iframe itself and says its content
// is out of reach; with site isolation off (the pool's flags) the frame's
// controls are listed like any other.
func TestSnapshotCrossSiteFrame(t *testing.T) {
	t.Parallel()
	f := serveFixtures(t)
	other := strings.Replace(f.other, "127.0.0.1", "localhost", 1)
	base := serve(t, map[string]string{"/": `<!doctype html><title>Cross site</title><h1>Outer</h1>
<iframe id="f" src="` + other + `/frame-cross.html" title="Card details" style="border:0;width:400px;height:150px"></iframe>`})
	page := newPage(t, base+"/")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The frame loads after the top page's load event on some runs.
	for {
		s := snapshot(t, page, browser.SnapshotOptions{})
		if e := find(s, "button", "Cross-origin frame button"); e != nil {
			require.Empty(t, s.Degraded)
			require.Equal(t, "cross-btn|BUTTON", resolve(t, page, s, e.Ref))
			t.Log("cross-site frame in the page's renderer: content listed")
			return
		}
		if e := find(s, "iframe", "Card details"); e != nil {
			require.Contains(t, s.Degraded, "out of process")
			require.Contains(t, s.Text(), `iframe "Card details"`)
			t.Log("cross-site frame out of process: iframe listed, snapshot degraded")
			return
		}
		require.NoError(t, ctx.Err(), "neither the frame nor its content listed:\n%s", s.Text())
		time.Sleep(50 * time.Millisecond)
	}
}

func TestSnapshotTablePagingAndFilter(t *testing.T) {
	t.Parallel()
	page, _ := fixturePage(t, "table.html")
	s := snapshot(t, page, browser.SnapshotOptions{})
	require.Len(t, s.Elements, 100)
	require.Greater(t, s.Total, 600)
	require.Equal(t, s.Total-100, s.Remaining)
	require.Contains(t, s.Text(), fmt.Sprintf("(100 of %d elements shown; %d more: ask with offset=100 or a filter)", s.Total, s.Remaining))

	t.Run("identical buttons distinguishable", func(t *testing.T) {
		seen := map[string]bool{}
		for _, e := range s.Elements {
			if e.Name != "Delete" {
				continue
			}
			require.NotEmpty(t, e.Context, e.Ref)
			require.False(t, seen[e.Context], "two Delete buttons with context %q", e.Context)
			seen[e.Context] = true
		}
		require.True(t, seen["Alice Smith"])
		require.Contains(t, s.Text(), `button "Delete" [Alice Smith]`)
	})

	t.Run("priority: everything in the viewport before anything offscreen", func(t *testing.T) {
		all := snapshot(t, page, browser.SnapshotOptions{MaxElements: 10000})
		inView := 0
		for _, e := range all.Elements {
			if !contains(e.State, "offscreen") {
				inView++
				require.NotNil(t, find(s, e.Role, e.Name), "%s %q in the viewport but not listed", e.Role, e.Name)
			}
		}
		require.Less(t, inView, 100)
		small := snapshot(t, page, browser.SnapshotOptions{MaxElements: 3})
		require.Len(t, small.Elements, 3)
		for _, e := range small.Elements {
			require.Contains(t, []string{"button", "link"}, e.Role, "role priority: %s", e.Role)
		}
	})

	t.Run("paging", func(t *testing.T) {
		next := snapshot(t, page, browser.SnapshotOptions{Offset: 100})
		require.Equal(t, 100, next.Offset)
		require.Len(t, next.Elements, 100)
		require.Equal(t, s.Total-200, next.Remaining)
		first := map[string]bool{}
		for _, e := range s.Elements {
			first[e.Ref] = true
		}
		for _, e := range next.Elements {
			require.False(t, first[e.Ref], "%s on both pages", e.Ref)
		}
		// Refs of the page are stored; the first page's are not.
		resolve(t, page, next, next.Elements[0].Ref)
		_, _, err := browser.ResolveRef(context.Background(), page, next.ID, s.Elements[0].Ref)
		require.ErrorIs(t, err, browser.ErrRefInvalid)
		_, _, err = browser.ResolveRef(context.Background(), page, s.ID, s.Elements[0].Ref)
		require.ErrorIs(t, err, browser.ErrRefInvalid, "an older snapshot's ref")
	})

	t.Run("filter", func(t *testing.T) {
		f := snapshot(t, page, browser.SnapshotOptions{Filter: "delete olivia"})
		require.NotEmpty(t, f.Elements)
		for _, e := range f.Elements {
			require.Equal(t, "Delete", e.Name)
			require.Contains(t, e.Context, "Olivia")
		}
		next := snapshot(t, page, browser.SnapshotOptions{Filter: "Next"})
		link := mustFind(t, next, "link", "Next")
		require.Contains(t, link.State, "offscreen")
		resolve(t, page, next, link.Ref)
		none := snapshot(t, page, browser.SnapshotOptions{Filter: "no such thing"})
		require.Empty(t, none.Elements)
		require.Contains(t, none.Text(), `(no element matches "no such thing")`)
	})

	t.Run("viewport only and scrolling", func(t *testing.T) {
		eval(t, page, `() => window.scrollTo(0, 2000)`)
		v := snapshot(t, page, browser.SnapshotOptions{ViewportOnly: true})
		require.EqualValues(t, 2000, v.Viewport.ScrollY)
		require.Greater(t, v.Viewport.ContentHeight, 5000.0)
		require.NotEmpty(t, v.Elements)
		for _, e := range v.Elements {
			require.NotContains(t, e.State, "offscreen")
			require.Less(t, e.Box.Y, 800.0)
			require.Greater(t, e.Box.Y+e.Box.Height, 0.0)
		}
		eval(t, page, `() => window.scrollTo(0, 0)`)
	})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestSnapshotCoveredElements(t *testing.T) {
	t.Parallel()
	page, _ := fixturePage(t, "overlay.html")
	s := snapshot(t, page, browser.SnapshotOptions{})
	require.Nil(t, find(s, "button", "Read more"))
	require.Nil(t, find(s, "link", "Archive"))
	require.Equal(t, 4, s.Covered)
	mustFind(t, s, "button", "Subscribe")
	mustFind(t, s, "button", "Close")
	mustFind(t, s, "dialog", "Subscribe to our newsletter")
	require.Contains(t, s.Text(), "(4 elements hidden under an overlay)")

	all := snapshot(t, page, browser.SnapshotOptions{IncludeCovered: true})
	require.Contains(t, mustFind(t, all, "button", "Read more").State, "covered")
	require.NotContains(t, mustFind(t, all, "button", "Subscribe").State, "covered")

	eval(t, page, `() => { document.querySelector(".backdrop").remove(); document.querySelector(".modal").remove(); }`)
	open := snapshot(t, page, browser.SnapshotOptions{})
	require.Zero(t, open.Covered)
	mustFind(t, open, "button", "Read more")
}

func TestSnapshotModalDialog(t *testing.T) {
	t.Parallel()
	page, _ := fixturePage(t, "modal.html")
	s := snapshot(t, page, browser.SnapshotOptions{})
	// showModal() makes the rest of the page inert, without any backdrop
	// element to cover it.
	require.Nil(t, find(s, "button", "Rename project"), s.Text())
	require.Nil(t, find(s, "link", "All projects"))
	dialog := mustFind(t, s, "dialog", "Delete this project?")
	require.Equal(t, "confirm|DIALOG", resolve(t, page, s, dialog.Ref))
	mustFind(t, s, "button", "Delete")
	require.Equal(t, mustFind(t, s, "button", "Delete").Ref, s.Focused)

	eval(t, page, `() => { const d = document.getElementById("confirm"); d.close(); d.show(); }`)
	s = snapshot(t, page, browser.SnapshotOptions{})
	mustFind(t, s, "button", "Rename project")
	mustFind(t, s, "dialog", "Delete this project?")
	mustFind(t, s, "button", "Cancel")
}

func TestSnapshotScrollContainers(t *testing.T) {
	t.Parallel()
	page, _ := fixturePage(t, "scroller.html")
	s := snapshot(t, page, browser.SnapshotOptions{})
	// The folder list shows 10 of its 30 links; the rest sit inside the
	// viewport's coordinates but need the list scrolled.
	require.NotContains(t, mustFind(t, s, "link", "Folder 1").State, "offscreen")
	require.NotContains(t, mustFind(t, s, "link", "Folder 10").State, "offscreen")
	hidden := mustFind(t, s, "link", "Folder 20")
	require.Contains(t, hidden.State, "offscreen")
	require.Less(t, hidden.Box.Y, 800.0)
	// A fixed button escapes its clipping parent.
	require.NotContains(t, mustFind(t, s, "button", "Compose").State, "offscreen")

	eval(t, page, `() => { document.getElementById("folders").scrollTop = 600; }`)
	s = snapshot(t, page, browser.SnapshotOptions{})
	require.NotContains(t, mustFind(t, s, "link", "Folder 25").State, "offscreen")
	require.Contains(t, mustFind(t, s, "link", "Folder 1").State, "offscreen")
}

func TestSnapshotLargePage(t *testing.T) {
	t.Parallel()
	page, _ := fixturePage(t, "big.html")
	s := snapshot(t, page, browser.SnapshotOptions{})
	require.Len(t, s.Elements, 100)
	require.GreaterOrEqual(t, s.Total, 5000)
	mustFind(t, s, "searchbox", "Search the catalogue")
	wish := mustFind(t, s, "button", "Wish 0-4")
	require.Equal(t, "|SPAN", resolve(t, page, s, wish.Ref))
	require.Equal(t, "1", mustFind(t, s, "textbox", "Quantity 0-3").Value)
	// Far below the fold, found by filter.
	f := snapshot(t, page, browser.SnapshotOptions{Filter: "add 99-46"})
	require.Len(t, f.Elements, 1)
	require.Equal(t, "Add 99-46 to cart", f.Elements[0].Name)
	require.Contains(t, f.Elements[0].State, "offscreen")
}

func TestSnapshotDegradesWithoutAccessibilityTree(t *testing.T) {
	t.Parallel()
	page, _ := fixturePage(t, "form.html")
	// An accessibility read that cannot finish in time, as on a huge or
	// wedged page.
	s := snapshot(t, page, browser.SnapshotOptions{AXTimeout: time.Nanosecond})
	require.Contains(t, s.Degraded, "accessibility tree unavailable")
	require.Contains(t, s.Text(), "degraded: accessibility tree unavailable")
	require.NotEmpty(t, s.HTML)
	require.NotNil(t, s.Screenshot)
	require.Equal(t, browser.FormatJPEG, s.Screenshot.Format)
	// The DOM still names and places the controls.
	email := mustFind(t, s, "textbox", "Email")
	require.Contains(t, email.State, "required")
	require.Equal(t, "email|INPUT", resolve(t, page, s, email.Ref))
	require.Contains(t, mustFind(t, s, "checkbox", "Newsletter").State, "checked")
	require.Contains(t, mustFind(t, s, "button", "Save draft").State, "disabled")
}

func TestSnapshotContextEnds(t *testing.T) {
	t.Parallel()
	page, _ := fixturePage(t, "form.html")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := page.Snapshot(ctx, browser.SnapshotOptions{})
	require.ErrorIs(t, err, context.Canceled)
}
