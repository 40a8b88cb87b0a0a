package trace_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/trace"
)

func TestURLPattern(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"https://Shop.example.com/orders/123?tab=items#top", "https://shop.example.com/orders/*"},
		{"https://shop.example.com/orders/456", "https://shop.example.com/orders/*"},
		{"https://x.test/u/7f3c2a1e-9b4d-4c1a-8e2f-0a1b2c3d4e5f/edit", "https://x.test/u/*/edit"},
		{"https://x.test/blob/0123456789abcdef0123", "https://x.test/blob/*"},
		{"https://x.test/docs/v2/deadbeef", "https://x.test/docs/v2/deadbeef"},
		{"https://x.test/", "https://x.test/"},
		{"http://127.0.0.1:8080/a/b", "http://127.0.0.1:8080/a/b"},
	}
	for _, tc := range tests {
		require.Equal(t, tc.want, trace.URLPattern(tc.in), tc.in)
	}
}

func ordersPage(title string, rows int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `<!doctype html><title>%s</title><nav><a href="/">Home</a> <a href="/orders">Orders</a></nav><main><h1>%s</h1>
<h2>Items</h2><table>`, title, title)
	for i := range rows {
		fmt.Fprintf(&b, `<tr><td><a href="/items/%d">Item %d</a></td><td><input aria-label="Quantity %d" type="number" value="%d"></td><td><button>Remove</button></td></tr>`, i, i, i, i+1)
	}
	b.WriteString(`</table><h2>Shipping</h2><label>Address <input name="addr"></label><button>Place order</button></main>`)
	return b.String()
}

const loginPage = `<!doctype html><title>Sign in</title><main><h1>Sign in</h1><form>
<label>Email <input type="email"></label><label>Password <input type="password"></label>
<label><input type="checkbox"> Remember me</label><button>Sign in</button></form></main>`

func TestPageSignature(t *testing.T) {
	t.Parallel()
	base := serve(t, map[string]string{
		"/orders/123":  ordersPage("Order 123", 2),
		"/orders/456":  ordersPage("Order 456 for Bob", 5),
		"/orders/789":  strings.Replace(ordersPage("Order 789", 3), "<main>", `<main><div role="alert">Shipping is delayed <button>Dismiss</button></div>`, 1),
		"/login":       loginPage,
		"/orders/999/": loginPage,
	})
	page := newPage(t)
	sig := func(path string) trace.Signature {
		snap, _ := look(t, page, base+path, 0)
		return trace.PageSignature(snap)
	}
	a := sig("/orders/123")
	require.Equal(t, "http://"+strings.TrimPrefix(base, "http://")+"/orders/*", a.URLPattern)
	require.NotEmpty(t, a.Structure)
	require.Equal(t, 1, a.Roles["heading/1"])
	require.Equal(t, 2, a.Roles["heading/2"])

	tests := []struct {
		name  string
		path  string
		match bool
	}{
		{"same page, other data", "/orders/456", true},
		{"same page, a banner added", "/orders/789", true},
		{"another page", "/login", false},
		{"another page under the same pattern", "/orders/999/", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := sig(tc.path)
			ok, sim := a.Matches(b)
			t.Logf("%s: %.2f %v / %v", tc.path, sim, a.Roles, b.Roles)
			require.Equal(t, tc.match, ok, "similarity %.2f", sim)
			ok2, sim2 := b.Matches(a)
			require.Equal(t, ok, ok2)
			require.InDelta(t, sim, sim2, 1e-12)
		})
	}
	same, sim := a.Matches(a)
	require.True(t, same)
	require.Equal(t, 1.0, sim)
	require.Equal(t, trace.URLPattern(base+"/orders/123"), sig("/orders/456").URLPattern)

	other := a
	other.URLPattern = "http://other.test/orders/*"
	ok, _ := a.Matches(other)
	require.False(t, ok, "another host")
}
