package browser_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/browser"
)

func TestTextRendering(t *testing.T) {
	t.Parallel()
	s := &browser.Snapshot{
		Page:     browser.PageInfo{URL: "https://shop.example/cart", Title: `Cart "3"`},
		Viewport: browser.ViewportInfo{Width: 1280, Height: 800, ScrollY: 400.4, ContentWidth: 1280, ContentHeight: 3000},
		Focused:  "@e2",
		Tabs: []browser.TabInfo{
			{ID: "t1", Title: "Cart", Active: true},
			{ID: "t2", Title: "Help center"},
		},
		Dialogs: []browser.DialogEvent{{Type: "confirm", Message: "Remove item?", Accepted: true}},
		Elements: []browser.Element{
			{Ref: "@e0", Role: "heading", Name: "Your cart", Level: 1},
			{Ref: "@e1", Role: "button", Name: "Remove", Context: "Blue mug"},
			{Ref: "@e2", Role: "textbox", Name: "Coupon", Value: "SAVE10", State: []string{"focused"}},
			{Ref: "@e3", Role: "button", Name: "Remove", Context: "Red mug", State: []string{"disabled"}},
			{Ref: "@e4", Role: "button", Hint: ".icon-close"},
			{Ref: "@e5", Role: "combobox", Name: "Country", Value: "France", Options: []string{"France", "Spain", "+3"}},
			{Ref: "@e9", Role: "link", Name: "Checkout", Context: "Totals", State: []string{"offscreen"}},
		},
		Total:     12,
		Remaining: 5,
	}
	want := `page: "Cart \"3\"" https://shop.example/cart
viewport: 1280x800 scroll 0,400 of 1280x3000
js confirm "Remove item?": accepted
tabs: t1* "Cart"; t2 "Help center";
focus: @e2
@e0 h1 "Your cart"
@e1 button "Remove" [Blue mug]
@e2 textbox "Coupon" = "SAVE10" focused
@e3 button "Remove" [Red mug] disabled
@e4 button .icon-close
@e5 combobox "Country" = "France" {France|Spain|+3}
offscreen (scroll to reach):
@e9 link "Checkout"
(7 of 12 elements shown; 5 more: ask with offset=7 or a filter)
`
	require.Equal(t, want, s.Text())

	// One tab is not worth a line; a unique name needs no context.
	s.Tabs = s.Tabs[:1]
	s.Elements[3].Name = "Remove all"
	text := s.Text()
	require.NotContains(t, text, "tabs:")
	require.NotContains(t, text, "[Blue mug]")
	require.NotContains(t, text, "[Totals]")
}

func TestSnapshotListsTabs(t *testing.T) {
	t.Parallel()
	base := serve(t, map[string]string{"/": `<!doctype html><title>One</title><a href="/">Self</a>`})
	session := newSession(t)
	ctx := context.Background()
	first, err := session.NewPage(ctx, browser.PageOptions{})
	require.NoError(t, err)
	require.NoError(t, first.Navigate(ctx, base+"/", benchNavTimeout))
	second, err := session.NewPage(ctx, browser.PageOptions{})
	require.NoError(t, err)
	require.NoError(t, second.Navigate(ctx, base+"/", benchNavTimeout))
	s := snapshot(t, first, browser.SnapshotOptions{})
	require.Len(t, s.Tabs, 2)
	require.True(t, strings.HasPrefix(strings.Split(s.Text(), "\n")[2], "tabs: "), s.Text())
}
