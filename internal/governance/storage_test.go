package governance

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/browser"
)

func TestReadLocalStorage(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	site := func(script string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/favicon.ico" { // the browser's own, at its own time
				hits.Add(1)
			}
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte(`<!doctype html><title>t</title><script>` + script + `</script>`))
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	a := site(`localStorage.setItem('token', 'abc'); localStorage.setItem('theme', 'dark');`)
	b := site(`localStorage.setItem('cart', '[1,2]');`)
	empty := site(``)

	ctx := context.Background()
	page := openPage(t, a+"/")
	_, err := page.Do(ctx, browser.Action{Kind: browser.ActionNavigate, URL: b + "/"})
	require.NoError(t, err)
	_, err = page.Do(ctx, browser.Action{Kind: browser.ActionNavigate, URL: empty + "/"})
	require.NoError(t, err)
	before := hits.Load()

	got, err := ReadLocalStorage(ctx, page, []string{a, b + "/", empty, a, "file:///etc", "not a url"})
	require.NoError(t, err)
	require.Equal(t, []OriginStorage{
		{Origin: a, Items: map[string]string{"token": "abc", "theme": "dark"}},
		{Origin: b, Items: map[string]string{"cart": "[1,2]"}},
	}, got)
	require.Equal(t, before, hits.Load(), "no request reached the sites")

	// The page the run was on is still there and usable.
	loc, _, err := page.Location(ctx)
	require.NoError(t, err)
	require.Equal(t, empty+"/", loc)

	none, err := ReadLocalStorage(ctx, page, nil)
	require.NoError(t, err)
	require.Empty(t, none)

	cctx, cancel := context.WithTimeout(ctx, time.Nanosecond)
	defer cancel()
	<-cctx.Done()
	_, err = ReadLocalStorage(cctx, page, []string{a})
	require.Error(t, err)
}
