package browser_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/browser"
	"github.com/wayfinder/wayfinder/internal/guard"
)

// reportPage reports what a page sees to the server: its localStorage
// token and its cookies.
const reportPage = `<!doctype html><title>report</title><script>
	fetch("/report?token=" + encodeURIComponent(localStorage.getItem("token")) +
		"&cookie=" + encodeURIComponent(document.cookie));
</script>`

// headerRules: X-Auth for api.test, X-Corp for subdomains of corp.test.
var headerRules = []browser.HeaderRule{
	{Domains: []string{"api.test"}, Headers: map[string]string{"X-Auth": "secret", "User-Agent": "wayfinder-test"}},
	{Domains: []string{"*.corp.test"}, Headers: map[string]string{"x-corp": "1"}},
}

func TestNetworkHeadersOnlyForTheirDomains(t *testing.T) {
	t.Parallel()
	var site *recorder
	redirect := func(host, path string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, site.at(host, path), http.StatusFound)
		})
	}
	site = newRecorder(t, map[string]string{
		"/blank": `<!doctype html><title>blank</title>`,
		"/echo":  `<!doctype html><title>echo</title>`,
	}, map[string]http.Handler{
		"/to-other": redirect("other.test", "/echo?via=api"),
		"/to-api":   redirect("api.test", "/echo?via=other"),
		"/cross-origin": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			_, _ = fmt.Fprintf(w, `<!doctype html><script>fetch(%q, {mode: "no-cors"})</script>`,
				site.at("api.test", "/echo?from=other"))
		}),
	})
	at := site.at

	g := newGuarded(t, netPool(t, 1), []string{"*.test", "api.test", "other.test", "corp.test", "a.corp.test"}, nil)
	ctx := context.Background()
	n, err := g.session.StartNetwork(ctx, browser.NetworkRules{
		Headers: headerRules,
		Cookies: []browser.NetworkCookie{{Name: "sid", Value: "s1", URL: at("api.test", "/")}},
	})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, n.Close()) })
	pg := g.page(t)

	cases := []struct {
		name     string
		navigate string // URL to open in pg; empty: open a popup
		popup    string
		wantHost string
		wantReq  string
		headers  map[string]string // expected value; "" means absent
	}{
		{name: "navigation to the domain", navigate: at("api.test", "/echo?n=1"), wantHost: "api.test", wantReq: "/echo?n=1",
			headers: map[string]string{"X-Auth": "secret", "User-Agent": "wayfinder-test", "Cookie": "sid=s1", "X-Corp": ""}},
		{name: "another domain", navigate: at("other.test", "/echo?n=2"), wantHost: "other.test", wantReq: "/echo?n=2",
			headers: map[string]string{"X-Auth": "", "X-Corp": "", "Cookie": ""}},
		{name: "subresource from another origin", navigate: at("other.test", "/cross-origin"), wantHost: "api.test", wantReq: "/echo?from=other",
			headers: map[string]string{"X-Auth": "secret"}},
		{name: "redirect away from the domain", navigate: at("api.test", "/to-other"), wantHost: "other.test", wantReq: "/echo?via=api",
			headers: map[string]string{"X-Auth": ""}},
		{name: "redirect into the domain", navigate: at("other.test", "/to-api"), wantHost: "api.test", wantReq: "/echo?via=other",
			headers: map[string]string{"X-Auth": "secret"}},
		{name: "wildcard subdomain", navigate: at("a.corp.test", "/echo?n=3"), wantHost: "a.corp.test", wantReq: "/echo?n=3",
			headers: map[string]string{"X-Corp": "1", "X-Auth": ""}},
		{name: "wildcard apex", navigate: at("corp.test", "/echo?n=4"), wantHost: "corp.test", wantReq: "/echo?n=4",
			headers: map[string]string{"X-Corp": ""}},
		{name: "popup to the domain", popup: at("api.test", "/echo?popup=1"), wantHost: "api.test", wantReq: "/echo?popup=1",
			headers: map[string]string{"X-Auth": "secret"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.popup != "" {
				require.NoError(t, pg.Navigate(ctx, at("other.test", "/blank"), 20*time.Second))
				_, err := browser.NetworkEvalByUser(ctx, pg, `(u) => { window.open(u); return "" }`, tc.popup)
				require.NoError(t, err)
			} else {
				require.NoError(t, pg.Navigate(ctx, tc.navigate, 20*time.Second))
			}
			req := site.waitFor(t, tc.wantHost, tc.wantReq)
			for name, want := range tc.headers {
				require.Equal(t, want, req.Header.Get(name), "header %s", name)
			}
		})
	}

	t.Run("after Close", func(t *testing.T) {
		require.NoError(t, n.Close())
		pg := g.page(t) // a new page is not left paused
		require.NoError(t, pg.Navigate(ctx, at("api.test", "/echo?closed=1"), 20*time.Second))
		req := site.waitFor(t, "api.test", "/echo?closed=1")
		require.Empty(t, req.Header.Get("X-Auth"))
	})
}

func TestNetworkCookiesAndLocalStorage(t *testing.T) {
	t.Parallel()
	site := newRecorder(t, map[string]string{"/": reportPage, "/blank": `<!doctype html>`}, nil)
	at := site.at
	g := newGuarded(t, netPool(t, 1), []string{"*.test", "app.test", "other.test", "corp.test", "www.corp.test"}, nil)
	ctx := context.Background()
	n, err := g.session.StartNetwork(ctx, browser.NetworkRules{
		Cookies: []browser.NetworkCookie{
			{Name: "host", Value: "h", URL: at("app.test", "/")},
			{Name: "dom", Value: "d", Domain: "corp.test"},
		},
		LocalStorage: []browser.OriginStorage{{Origin: at("app.test", ""), Items: map[string]string{"token": "abc"}}},
		// Header rules for the seeded origin pause its requests too.
		Headers: []browser.HeaderRule{{Domains: []string{"app.test"}, Headers: map[string]string{"X-App": "1"}}},
	})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, n.Close()) })
	require.Zero(t, site.count(), "seeding localStorage reached the network")

	pg := g.page(t)
	cases := []struct {
		host, token, cookie string
	}{
		{"app.test", "abc", "host=h"},
		{"other.test", "null", ""},
		{"corp.test", "null", "dom=d"},
		{"www.corp.test", "null", "dom=d"},
	}
	for _, tc := range cases {
		require.NoError(t, pg.Navigate(ctx, at(tc.host, "/"), 20*time.Second))
		q := site.waitFor(t, tc.host, "/report").URL.Query()
		require.Equal(t, tc.token, q.Get("token"), tc.host)
		require.Equal(t, tc.cookie, q.Get("cookie"), tc.host)
	}
	require.Equal(t, "1", site.waitFor(t, "app.test", "/report").Header.Get("X-App"))

	// A popup sees the entries too.
	require.NoError(t, pg.Navigate(ctx, at("other.test", "/blank"), 20*time.Second))
	_, err = browser.NetworkEvalByUser(ctx, pg, `(u) => { window.open(u); return "" }`, at("app.test", "/?popup=1"))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		n := 0
		for _, r := range site.requests() {
			if hostname(r.Host) == "app.test" && r.URL.Query().Get("token") == "abc" {
				n++
			}
		}
		return n == 2
	}, 20*time.Second, 10*time.Millisecond)
}

func TestNetworkRefusesFileURLs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret.txt")
	require.NoError(t, os.WriteFile(secret, []byte("TOP-SECRET-CONTENT"), 0o600))
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))

	g := newGuarded(t, netPool(t, 1), nil, nil)
	ctx := context.Background()
	var mu sync.Mutex
	var blocked []browser.BlockedRequest
	n, err := g.session.StartNetwork(ctx, browser.NetworkRules{OnBlock: func(b browser.BlockedRequest) {
		mu.Lock()
		defer mu.Unlock()
		blocked = append(blocked, b)
	}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, n.Close()) })
	pg := g.page(t)

	for _, target := range []string{"file://" + secret, "view-source:file://" + secret, "file://" + fifo} {
		err := pg.Navigate(ctx, target, 20*time.Second)
		require.ErrorIs(t, err, browser.ErrNavigation, target)
		require.Contains(t, err.Error(), "ERR_BLOCKED_BY_CLIENT")
		text, err := browser.NetworkEvalByUser(ctx, pg, `() => document.documentElement.innerText`)
		require.NoError(t, err)
		require.NotContains(t, text, "TOP-SECRET")
	}
	// Nobody opened the FIFO for reading: opening its write end without
	// blocking fails with ENXIO while there is no reader.
	_, err = syscall.Open(fifo, syscall.O_WRONLY|syscall.O_NONBLOCK, 0)
	require.True(t, errors.Is(err, syscall.ENXIO), "the browser opened the file: %v", err)

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, blocked, 3)
	for _, b := range blocked {
		require.Equal(t, guard.ReasonScheme, b.Err.Reason)
		require.True(t, b.Navigation)
	}
	require.Equal(t, "file://"+secret, blocked[0].URL)
}

// TestNetworkLeavesOtherContextsAlone: the rules of one context pause and
// release every new page of the browser (Chromium has no per-context
// auto-attach). Another context's pages and popups still run, without
// the rules' headers.
func TestNetworkLeavesOtherContextsAlone(t *testing.T) {
	t.Parallel()
	site := newRecorder(t, map[string]string{"/blank": `<!doctype html>`, "/echo": `<!doctype html>`}, nil)
	p := netPool(t, 2)
	ruled := newGuarded(t, p, []string{"api.test", "other.test"}, nil)
	other := newGuarded(t, p, []string{"api.test", "other.test"}, nil)
	ctx := context.Background()
	n, err := ruled.session.StartNetwork(ctx, browser.NetworkRules{Headers: headerRules})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, n.Close()) })

	pg := other.page(t)
	require.NoError(t, pg.Navigate(ctx, site.at("api.test", "/echo?ctx=other"), 20*time.Second))
	require.Empty(t, site.waitFor(t, "api.test", "/echo?ctx=other").Header.Get("X-Auth"))
	_, err = browser.NetworkEvalByUser(ctx, pg, `(u) => { window.open(u); return "" }`, site.at("api.test", "/echo?ctx=other-popup"))
	require.NoError(t, err)
	require.Empty(t, site.waitFor(t, "api.test", "/echo?ctx=other-popup").Header.Get("X-Auth"))

	pg = ruled.page(t)
	require.NoError(t, pg.Navigate(ctx, site.at("api.test", "/echo?ctx=ruled"), 20*time.Second))
	require.Equal(t, "secret", site.waitFor(t, "api.test", "/echo?ctx=ruled").Header.Get("X-Auth"))
}

func TestNetworkRulesValidation(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		rules browser.NetworkRules
		want  string
	}{
		{"header rule without domains", browser.NetworkRules{Headers: []browser.HeaderRule{{Headers: map[string]string{"A": "b"}}}}, "no domains"},
		{"bad domain pattern", browser.NetworkRules{Headers: []browser.HeaderRule{{Domains: []string{"a.*.com"}}}}, "a.*.com"},
		{"bad header name", browser.NetworkRules{Headers: []browser.HeaderRule{{Domains: []string{"a.com"}, Headers: map[string]string{"X Bad": "1"}}}}, "X Bad"},
		{"header value with a newline", browser.NetworkRules{Headers: []browser.HeaderRule{{Domains: []string{"a.com"}, Headers: map[string]string{"X": "1\r\nY: 2"}}}}, "invalid header"},
		{"cookie without a place", browser.NetworkRules{Cookies: []browser.NetworkCookie{{Name: "a"}}}, "cookies[0]"},
		{"origin with a path", browser.NetworkRules{LocalStorage: []browser.OriginStorage{{Origin: "https://a.com/x"}}}, "local_storage[0]"},
		{"origin with another scheme", browser.NetworkRules{LocalStorage: []browser.OriginStorage{{Origin: "file:///x"}}}, "local_storage[0]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// Validation happens before the session is touched.
			_, err := (&browser.Session{}).StartNetwork(context.Background(), tc.rules)
			require.ErrorIs(t, err, browser.ErrNetworkRules)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}
