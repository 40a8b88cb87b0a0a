package steps

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/llm"
)

type el = llm.ObservedElement

func TestResolveTarget(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		step string
		els  []el
		want string // the ref chosen; "" when nothing matches
	}{
		{"exact beats prefix", `Click Sign in`, []el{
			{Ref: "@e1", Role: "button", Name: "Sign in now"},
			{Ref: "@e2", Role: "link", Name: "sign  IN"},
		}, "@e2"},
		{"exact beats a fuzzy match of the named role", `Click the Sign in link`, []el{
			{Ref: "@e1", Role: "link", Name: "Sign in help"},
			{Ref: "@e2", Role: "button", Name: "Sign in"},
		}, "@e2"},
		{"the named role breaks a tie", `Click the Sign in link`, []el{
			{Ref: "@e1", Role: "button", Name: "Sign in"},
			{Ref: "@e2", Role: "link", Name: "Sign in"},
		}, "@e2"},
		{"click prefers a button to a field", `Click Search`, []el{
			{Ref: "@e1", Role: "searchbox", Name: "Search"},
			{Ref: "@e2", Role: "button", Name: "Search"},
		}, "@e2"},
		{"fill prefers a field to a button", `Type shoes into Search`, []el{
			{Ref: "@e1", Role: "button", Name: "Search"},
			{Ref: "@e2", Role: "searchbox", Name: "Search"},
		}, "@e2"},
		{"check prefers a checkbox", `Check Subscribe`, []el{
			{Ref: "@e1", Role: "button", Name: "Subscribe"},
			{Ref: "@e2", Role: "checkbox", Name: "Subscribe"},
		}, "@e2"},
		{"select prefers the field that has the option", `Select Large from Size`, []el{
			{Ref: "@e1", Role: "button", Name: "Size guide"},
			{Ref: "@e2", Role: "combobox", Name: "Size (kids)", Options: []string{"XS", "S"}},
			{Ref: "@e3", Role: "combobox", Name: "Size (adults)", Options: []string{"Small", "Large"}},
		}, "@e3"},
		{"disabled loses", `Click Continue`, []el{
			{Ref: "@e1", Role: "button", Name: "Continue", State: []string{"disabled"}},
			{Ref: "@e2", Role: "button", Name: "Continue"},
		}, "@e2"},
		{"disabled exact loses to an enabled close match", `Click Continue`, []el{
			{Ref: "@e1", Role: "button", Name: "Continue", State: []string{"disabled"}},
			{Ref: "@e2", Role: "button", Name: "Continue to payment"},
		}, "@e2"},
		{"a disabled element is still chosen when it is the only one", `Click Continue`, []el{
			{Ref: "@e1", Role: "button", Name: "Continue", State: []string{"disabled"}},
		}, "@e1"},
		{"context tells identical buttons apart", `Click "Remove" next to "Red mug"`, []el{
			{Ref: "@e1", Role: "button", Name: "Remove", Context: "Blue cup"},
			{Ref: "@e2", Role: "button", Name: "Remove", Context: "Red mug"},
		}, "@e2"},
		{"a label in the context names a field", `Type a@b.c into Email`, []el{
			{Ref: "@e1", Role: "textbox", Name: "Search"},
			{Ref: "@e2", Role: "textbox", Name: "", Context: "Email address"},
		}, "@e2"},
		{"a label's colon and required marker", `Fill Username with alice`, []el{
			{Ref: "@e1", Role: "textbox", Name: "Username for recovery"},
			{Ref: "@e2", Role: "textbox", Name: "Username: *"},
		}, "@e2"},
		{"an icon button's hint", `Click Close`, []el{
			{Ref: "@e1", Role: "link", Name: "Closed tickets"},
			{Ref: "@e2", Role: "button", Hint: "closeBtn"},
		}, "@e2"},
		{"spacing inside a word", `Click Login`, []el{
			{Ref: "@e1", Role: "link", Name: "Logout"},
			{Ref: "@e2", Role: "button", Name: "Log in"},
		}, "@e2"},
		{"a typo", `Type x into Pasword`, []el{
			{Ref: "@e1", Role: "textbox", Name: "Username"},
			{Ref: "@e2", Role: "textbox", Name: "Password"},
		}, "@e2"},
		{"shared words", `Click Submit order`, []el{
			{Ref: "@e1", Role: "button", Name: "Cancel order"},
			{Ref: "@e2", Role: "button", Name: "Submit your order"},
		}, "@e2"},
		{"the role noun may be part of the name", `Click the Shopping list`, []el{
			{Ref: "@e1", Role: "link", Name: "Shopping cart"},
			{Ref: "@e2", Role: "link", Name: "Shopping list"},
		}, "@e2"},
		{"no match", `Click Checkout`, []el{
			{Ref: "@e1", Role: "button", Name: "Sign in"},
			{Ref: "@e2", Role: "link", Name: "Help"},
		}, ""},
		{"a different word is no match", `Click Sign in`, []el{
			{Ref: "@e1", Role: "button", Name: "Sign up"},
		}, ""},
		{"no elements", `Click Save`, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			steps, err := Parse(tt.step)
			require.NoError(t, err)
			eligible, _ := rank(steps[0], tt.els)
			if tt.want == "" {
				require.Empty(t, eligible)
				return
			}
			require.NotEmpty(t, eligible)
			require.Equal(t, tt.want, eligible[0].el.Ref, "ranking %+v", eligible)
		})
	}
}

func TestNameScoreOrder(t *testing.T) {
	t.Parallel()
	// Each is a better match for "Sign in" than the next.
	names := []string{"Sign In", "Signin", "Sign in now", "Please sign in", "Sign-in options and help", "Sign up", "Cancel"}
	prev := 2.0
	for _, n := range names {
		s := nameScore("Sign in", n)
		require.Less(t, s, prev, "%q scored %v", n, s)
		prev = s
	}
}

func TestURLMatches(t *testing.T) {
	t.Parallel()
	const u = "https://app.example.com/reports/weekly?week=12#top"
	tests := []struct {
		pattern string
		want    bool
	}{
		{"/reports/weekly", true},
		{"REPORTS", true},
		{"week=12", true},
		{"/dashboard", false},
		{"https://*.example.com/*", true},
		{"*/reports/*", true},
		{"/reports/*", true},
		{"/reports/weekly?week=*", true},
		{"*/weekly", true},
		{"/dashboard/*", false},
		{"http://*", false},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, urlMatches(u, tt.pattern), tt.pattern)
	}
}

func TestResolveURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		page, target, want string
		fails              bool
	}{
		{"https://app.test/a/b?x=1", "/reports", "https://app.test/reports", false},
		{"https://app.test/a/b", "c", "https://app.test/a/c", false},
		{"https://app.test/a/b", "../c?d=1", "https://app.test/c?d=1", false},
		{"http://127.0.0.1:8080/x", "?q=go", "http://127.0.0.1:8080/x?q=go", false},
		{"http://127.0.0.1:8080/x", "example.com/p", "http://example.com/p", false},
		{"about:blank", "example.com", "https://example.com", false},
		{"about:blank", "https://example.com/a", "https://example.com/a", false},
		{"about:blank", "/reports", "", true},
		{"", "/reports", "", true},
	}
	for _, tt := range tests {
		got, err := resolveURL(tt.page, tt.target)
		if tt.fails {
			require.Error(t, err, tt.target)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, tt.want, got)
	}
}

// A field whose section is called like the button must not win the click:
// the context bonus is for words the name lacks, not for a name that
// matches nothing (stopwords aside).
func TestRankButtonBeatsFieldInItsSection(t *testing.T) {
	st, err := Parse("Click Sign in")
	if err != nil {
		t.Fatal(err)
	}
	els := []llm.ObservedElement{
		{Ref: "@e0", Role: "heading", Name: "Sign in"},
		{Ref: "@e1", Role: "textbox", Name: "Username", Context: "Sign in"},
		{Ref: "@e2", Role: "textbox", Name: "Password", Context: "Sign in"},
		{Ref: "@e3", Role: "button", Name: "Sign in"},
	}
	eligible, _ := rank(st[0], els)
	if len(eligible) == 0 || eligible[0].el.Ref != "@e3" {
		t.Fatalf("best match = %+v, want the Sign in button @e3", eligible)
	}
}
