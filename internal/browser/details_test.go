package browser_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/browser"
)

const detailsPage = `<!doctype html><title>Sign up</title>
<main>
  <form id="signup">
    <div><label for="email">Email</label><input id="email" name="email" type="email" placeholder="you@example.com" value="secret@example.com"></div>
    <div><button type="submit" data-testid="signup-submit" title="Create it">Create   account</button></div>
  </form>
  <ul>
    <li><a href="/orders/1?x=1" data-qa="order">Order one</a></li>
    <li><a href="/orders/2" aria-label="Second order" data-cy="order-2">Order two</a></li>
  </ul>
  <div role="button" data-test="fancy" tabindex="0">` + "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud exercitation ullamco laboris nisi ut aliquip ex ea commodo consequat." + `</div>
</main>`

func TestElementDetails(t *testing.T) {
	t.Parallel()
	base := serve(t, map[string]string{"/": detailsPage})
	page := newPage(t, base+"/")
	s := snapshot(t, page, browser.SnapshotOptions{})
	email := mustFind(t, s, "textbox", "Email")
	submit := mustFind(t, s, "button", "Create account")
	one := mustFind(t, s, "link", "Order one")
	two := mustFind(t, s, "link", "Second order")
	var fancy *browser.Element
	for i := range s.Elements {
		if s.Elements[i].Role == "button" && s.Elements[i].Ref != submit.Ref {
			fancy = &s.Elements[i]
		}
	}
	require.NotNil(t, fancy, s.Text())

	got, err := page.ElementDetails(context.Background(), email.Ref, submit.Ref, one.Ref, two.Ref, fancy.Ref, submit.Ref)
	require.NoError(t, err)
	require.Len(t, got, 5)

	tests := []struct {
		ref  string
		want browser.ElementDetails
	}{
		{email.Ref, browser.ElementDetails{Tag: "input", Path: "main > form#signup > div:nth-of-type(1) > input#email",
			Attrs: map[string]string{"id": "email", "name": "email", "type": "email", "placeholder": "you@example.com"}}},
		{submit.Ref, browser.ElementDetails{Tag: "button", Path: "main > form#signup > div:nth-of-type(2) > button", Text: "Create account",
			Attrs: map[string]string{"type": "submit", "data-testid": "signup-submit", "title": "Create it"}}},
		{one.Ref, browser.ElementDetails{Tag: "a", Path: "main > ul > li:nth-of-type(1) > a", Text: "Order one",
			Attrs: map[string]string{"href": "/orders/1?x=1", "data-qa": "order"}}},
		{two.Ref, browser.ElementDetails{Tag: "a", Path: "main > ul > li:nth-of-type(2) > a", Text: "Order two",
			Attrs: map[string]string{"href": "/orders/2", "aria-label": "Second order", "data-cy": "order-2"}}},
	}
	for _, tc := range tests {
		require.Equal(t, tc.want, got[tc.ref], tc.ref)
	}
	f := got[fancy.Ref]
	require.Equal(t, "div", f.Tag)
	require.Equal(t, "main > div", f.Path)
	require.Equal(t, map[string]string{"role": "button", "data-test": "fancy"}, f.Attrs)
	require.Len(t, []rune(f.Text), 200)
	require.Contains(t, f.Text, "Lorem ipsum")

	// The typed value is never read.
	require.NotContains(t, got[email.Ref].Text, "secret")

	t.Run("no refs", func(t *testing.T) {
		got, err := page.ElementDetails(context.Background())
		require.NoError(t, err)
		require.Empty(t, got)
	})
	t.Run("unknown ref", func(t *testing.T) {
		_, err := page.ElementDetails(context.Background(), submit.Ref, "@e999")
		require.ErrorIs(t, err, browser.ErrRefInvalid)
	})
	t.Run("removed node is left out", func(t *testing.T) {
		eval(t, page, `() => { document.querySelector("ul").remove(); }`)
		got, err := page.ElementDetails(context.Background(), submit.Ref, one.Ref)
		require.NoError(t, err)
		require.Contains(t, got, submit.Ref)
		require.NotContains(t, got, one.Ref)
	})
	t.Run("cancelled context", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := page.ElementDetails(ctx, submit.Ref)
		require.ErrorIs(t, err, context.Canceled)
	})
}

func TestElementDetailsShadowAndFrames(t *testing.T) {
	t.Parallel()
	t.Run("shadow roots", func(t *testing.T) {
		t.Parallel()
		page, _ := fixturePage(t, "shadow.html")
		s := snapshot(t, page, browser.SnapshotOptions{})
		open := mustFind(t, s, "button", "Open shadow button")
		nested := mustFind(t, s, "link", "Nested shadow link")
		closed := mustFind(t, s, "button", "Closed shadow button")
		light := mustFind(t, s, "button", "Light DOM button")
		got, err := page.ElementDetails(context.Background(), open.Ref, nested.Ref, closed.Ref, light.Ref)
		require.NoError(t, err)
		require.Equal(t, "open-widget#open-host >> button#open-btn", got[open.Ref].Path)
		require.Equal(t, "open-widget#open-host >> inner-widget >> a", got[nested.Ref].Path)
		require.Equal(t, "/nested", got[nested.Ref].Attrs["href"])
		require.Equal(t, "closed-widget#closed-host >> button#closed-btn", got[closed.Ref].Path)
		require.Equal(t, "Closed shadow button", got[closed.Ref].Text)
		require.Equal(t, "button#light", got[light.Ref].Path)
	})
	t.Run("frames", func(t *testing.T) {
		t.Parallel()
		page, _ := fixturePage(t, "frames.html")
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		// The cross-origin frame may load after the top page's load event.
		var s *browser.Snapshot
		for {
			s = snapshot(t, page, browser.SnapshotOptions{})
			if find(s, "button", "Cross-origin frame button") != nil && find(s, "button", "Same-origin frame button") != nil {
				break
			}
			require.NoError(t, ctx.Err(), s.Text())
			time.Sleep(50 * time.Millisecond)
		}
		top := mustFind(t, s, "button", "Top page button")
		same := mustFind(t, s, "button", "Same-origin frame button")
		cross := mustFind(t, s, "button", "Cross-origin frame button")
		street := mustFind(t, s, "textbox", "Street")
		got, err := page.ElementDetails(ctx, top.Ref, same.Ref, cross.Ref, street.Ref)
		require.NoError(t, err)
		require.Equal(t, "button#top-btn", got[top.Ref].Path)
		require.Equal(t, "button#same-btn", got[same.Ref].Path)
		require.Equal(t, "Same-origin frame button", got[same.Ref].Text)
		require.Equal(t, "button#cross-btn", got[cross.Ref].Path)
		require.Equal(t, "Cross-origin frame button", got[cross.Ref].Text)
		require.Equal(t, browser.ElementDetails{Tag: "input", Path: "input", Attrs: map[string]string{"aria-label": "Street"}}, got[street.Ref])
	})
}
