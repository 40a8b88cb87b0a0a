package browser_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

const indicatorPage = `<!doctype html><title>Order</title>
<h1 id="done">Order   PLACED</h1>
<p id="hidden" style="display:none">Payment failed</p>
<div id="host"></div>
<script>
  window.orderState = {status: "placed"};
  document.getElementById('host').attachShadow({mode: 'open'}).innerHTML = '<span class="shadowed">In the shadow</span>';
</script>`

func TestIndicators(t *testing.T) {
	t.Parallel()
	page := newPage(t, serve(t, map[string]string{"/": indicatorPage})+"/")
	ctx := context.Background()
	type eval func(ctx context.Context, arg string) (bool, error)
	tests := []struct {
		name    string
		eval    eval
		arg     string
		want    bool
		wantErr string
	}{
		{"element visible", page.ElementPresent, "h1#done", true, ""},
		{"element hidden", page.ElementPresent, "#hidden", false, ""},
		{"element missing", page.ElementPresent, ".nope", false, ""},
		{"element in a shadow root", page.ElementPresent, ".shadowed", true, ""},
		{"invalid selector", page.ElementPresent, "[[", false, "page script failed"},
		{"text present, any case and spacing", page.TextPresent, "order placed", true, ""},
		{"hidden text is not present", page.TextPresent, "Payment failed", false, ""},
		{"text missing", page.TextPresent, "cancelled", false, ""},
		{"script sees the page's globals", page.Truthy, `window.orderState.status === "placed"`, true, ""},
		{"falsy result", page.Truthy, `document.querySelectorAll("h2").length`, false, ""},
		{"promise is awaited", page.Truthy, `new Promise(r => setTimeout(() => r("yes"), 50))`, true, ""},
		{"trailing comment", page.Truthy, `1 // one`, true, ""},
		{"script throws", page.Truthy, `window.missing.field`, false, "page script failed"},
		{"syntax error", page.Truthy, `)(`, false, "page script failed"},
		{"endless loop is stopped", page.Truthy, `(() => { for (;;) {} })()`, false, ""},
		{"promise that never settles", page.Truthy, `new Promise(() => {})`, false, "no result within"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.eval(ctx, tc.arg)
			if tc.name == "endless loop is stopped" {
				require.Error(t, err)
				return
			}
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
	ok, err := page.Truthy(ctx, `document.title === "Order"`)
	require.NoError(t, err)
	require.True(t, ok, "the page still answers after a script was stopped")
}
