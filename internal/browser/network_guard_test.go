package browser_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/net/websocket"

	"github.com/wayfinder/wayfinder/internal/browser"
	"github.com/wayfinder/wayfinder/internal/guard"
	"github.com/wayfinder/wayfinder/internal/netguard"
)

// countingListener accepts TCP connections, counts them and closes them: a
// blocked site that must never be reached, even for a TLS handshake.
func countingListener(t *testing.T) (port string, accepted *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	accepted = &atomic.Int64{}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			_ = c.Close()
		}
	}()
	_, port, err = net.SplitHostPort(ln.Addr().String())
	require.NoError(t, err)
	return port, accepted
}

// TestGuardCoversEveryRequestKind drives a real Chromium through the run
// proxy: site.test is allowed, evil.test is blocked (both are this
// machine). Every way a page can reach evil.test is refused, recorded with
// its kind, and evil.test receives nothing; site.test keeps working.
func TestGuardCoversEveryRequestKind(t *testing.T) {
	t.Parallel()
	tlsPort, tlsAccepted := countingListener(t)
	evil := newRecorder(t, nil, nil)
	e := func(path string) string { return evil.at("evil.test", path) }
	site := newRecorder(t, map[string]string{
		"/blank":    `<!doctype html><title>blank</title>`,
		"/redirect": "redirect:" + e("/redirected"),
		"/sub":      fmt.Sprintf(`<!doctype html><img src=%q><script src=%q></script>`, e("/img.png"), e("/s.js")),
		"/fetch": fmt.Sprintf(`<!doctype html><script>
			fetch(%q).catch(() => {});
			const x = new XMLHttpRequest(); x.open("GET", %q); x.send();
		</script>`, e("/api"), e("/xhr")),
		"/form": fmt.Sprintf(`<!doctype html><form method=post action=%q><input name=a value=1></form>
			<script>document.forms[0].submit()</script>`, e("/submit")),
		"/ws":     fmt.Sprintf(`<!doctype html><script>new WebSocket(%q)</script>`, strings.Replace(e("/ws"), "http:", "ws:", 1)),
		"/wss":    fmt.Sprintf(`<!doctype html><script>new WebSocket("wss://evil.test:%s/ws")</script>`, tlsPort),
		"/iframe": fmt.Sprintf(`<!doctype html><iframe src=%q></iframe>`, e("/frame")),
		"/ok": `<!doctype html><img src="/ok.png"><script>
			fetch("/ok-fetch");
			const ws = new WebSocket("ws://" + location.host + "/echo");
			ws.onopen = () => ws.send("hi");
			ws.onmessage = (m) => fetch("/got?" + m.data);
		</script>`,
	}, map[string]http.Handler{"/echo": websocket.Handler(func(c *websocket.Conn) {
		var msg string
		if websocket.Message.Receive(c, &msg) == nil {
			_ = websocket.Message.Send(c, msg)
		}
	})})
	s := func(path string) string { return site.at("site.test", path) }

	g := newGuarded(t, netPool(t, 1), []string{"site.test", "evil.test"}, []string{"evil.test"})
	ctx := context.Background()

	t.Run("allowed requests pass, websockets included", func(t *testing.T) {
		pg := g.page(t)
		require.NoError(t, pg.Navigate(ctx, s("/ok"), 20*time.Second))
		site.waitFor(t, "site.test", "/ok.png")
		site.waitFor(t, "site.test", "/ok-fetch")
		site.waitFor(t, "site.test", "/got?hi")
	})

	cases := []struct {
		name    string
		run     func(t *testing.T, pg *browser.Page)
		blocked string // URL the proxy must refuse
		kind    netguard.Kind
	}{
		{"navigation", func(t *testing.T, pg *browser.Page) {
			// Plain HTTP: Chromium shows the proxy's 403 page.
			require.NoError(t, pg.Navigate(ctx, e("/page"), 20*time.Second))
		}, e("/page"), netguard.KindNavigation},
		{"https navigation", func(t *testing.T, pg *browser.Page) {
			err := pg.Navigate(ctx, "https://evil.test:"+tlsPort+"/", 20*time.Second)
			require.ErrorIs(t, err, browser.ErrNavigation)
			require.Contains(t, err.Error(), "ERR_TUNNEL_CONNECTION_FAILED")
		}, "evil.test:" + tlsPort, netguard.KindConnect},
		{"redirect", func(t *testing.T, pg *browser.Page) {
			require.NoError(t, pg.Navigate(ctx, s("/redirect"), 20*time.Second))
		}, e("/redirected"), netguard.KindNavigation},
		{"image", func(t *testing.T, pg *browser.Page) {
			require.NoError(t, pg.Navigate(ctx, s("/sub"), 20*time.Second))
		}, e("/img.png"), netguard.KindSubresource},
		{"script", func(t *testing.T, pg *browser.Page) {
			require.NoError(t, pg.Navigate(ctx, s("/sub"), 20*time.Second))
		}, e("/s.js"), netguard.KindSubresource},
		{"fetch", func(t *testing.T, pg *browser.Page) {
			require.NoError(t, pg.Navigate(ctx, s("/fetch"), 20*time.Second))
		}, e("/api"), netguard.KindSubresource},
		{"xhr", func(t *testing.T, pg *browser.Page) {
			require.NoError(t, pg.Navigate(ctx, s("/fetch"), 20*time.Second))
		}, e("/xhr"), netguard.KindSubresource},
		{"form post", func(t *testing.T, pg *browser.Page) {
			// The form submits itself while Navigate waits for the load,
			// which can make Navigate fail; the block is what matters.
			_ = pg.Navigate(ctx, s("/form"), 20*time.Second)
		}, e("/submit"), netguard.KindNavigation},
		// Chromium tunnels every websocket through CONNECT, ws:// too.
		{"websocket", func(t *testing.T, pg *browser.Page) {
			require.NoError(t, pg.Navigate(ctx, s("/ws"), 20*time.Second))
		}, "evil.test:" + evil.port, netguard.KindConnect},
		{"secure websocket", func(t *testing.T, pg *browser.Page) {
			require.NoError(t, pg.Navigate(ctx, s("/wss"), 20*time.Second))
		}, "evil.test:" + tlsPort, netguard.KindConnect},
		{"iframe", func(t *testing.T, pg *browser.Page) {
			require.NoError(t, pg.Navigate(ctx, s("/iframe"), 20*time.Second))
		}, e("/frame"), netguard.KindNavigation},
		{"popup", func(t *testing.T, pg *browser.Page) {
			require.NoError(t, pg.Navigate(ctx, s("/blank"), 20*time.Second))
			_, err := browser.NetworkEvalByUser(ctx, pg, `(u) => { window.open(u); return "" }`, e("/popup"))
			require.NoError(t, err)
		}, e("/popup"), netguard.KindNavigation},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t, g.page(t))
			b := g.waitBlock(t, tc.blocked)
			require.Equal(t, guard.ReasonBlocked, b.Reason)
			require.Equal(t, tc.kind, b.Kind)
			require.Equal(t, "evil.test", b.Host)
		})
	}
	require.Zero(t, evil.count(), "a blocked request reached evil.test: %v", evil.requests())
	require.Zero(t, tlsAccepted.Load(), "a blocked tunnel reached evil.test")
}

// TestGuardResolvedAddresses: a name the policy allows by wildcard but that
// resolves to loopback is refused as private; named explicitly, it loads.
func TestGuardResolvedAddresses(t *testing.T) {
	t.Parallel()
	site := newRecorder(t, map[string]string{"/": `<!doctype html><title>trick</title>`}, nil)
	p := netPool(t, 2)
	ctx := context.Background()

	wild := newGuarded(t, p, []string{"*.test"}, nil)
	pg := wild.page(t)
	require.NoError(t, pg.Navigate(ctx, site.at("trick.test", "/"), 20*time.Second))
	b := wild.waitBlock(t, site.at("trick.test", "/"))
	require.Equal(t, guard.ReasonPrivate, b.Reason)
	require.Contains(t, b.Message, "127.0.0.1")
	require.Zero(t, site.count())

	explicit := newGuarded(t, p, []string{"trick.test"}, nil)
	pg = explicit.page(t)
	require.NoError(t, pg.Navigate(ctx, site.at("trick.test", "/"), 20*time.Second))
	_, title, err := pg.Location(ctx)
	require.NoError(t, err)
	require.Equal(t, "trick", title)
	require.Empty(t, explicit.proxy.Log().Blocks())
}
