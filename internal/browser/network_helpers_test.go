package browser_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/browser"
	"github.com/wayfinder/wayfinder/internal/guard"
	"github.com/wayfinder/wayfinder/internal/netguard"
	"github.com/wayfinder/wayfinder/internal/pool"
)

// loopbackResolver resolves every name to 127.0.0.1, so that test servers
// on loopback can be reached under any host name through the proxy.
type loopbackResolver struct{}

func (loopbackResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
}

// netPool starts a pool of one Chromium process for t, closed when t ends.
func netPool(t *testing.T, capacity int) *pool.Pool {
	t.Helper()
	p, err := pool.New(pool.Config{Capacity: capacity, WorkDir: t.TempDir(), HealthInterval: time.Hour})
	require.NoError(t, err)
	require.NoError(t, p.Start(context.Background()))
	t.Cleanup(p.Close)
	return p
}

// guarded is a browser context whose traffic goes through a run proxy.
type guarded struct {
	proxy   *netguard.Proxy
	session *browser.Session
}

// newGuarded starts a proxy for the policy (every name resolving to
// loopback) and leases a context of p that uses it; both end with t.
func newGuarded(t *testing.T, p *pool.Pool, allowed, blocked []string) *guarded {
	t.Helper()
	pol, err := guard.New(allowed, blocked, false)
	require.NoError(t, err)
	proxy, err := netguard.Start(netguard.Config{Policy: pol, Resolver: loopbackResolver{}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, proxy.Close()) })
	lease, err := p.Lease(context.Background(), browser.SessionOptions{ProxyServer: proxy.URL()})
	require.NoError(t, err)
	t.Cleanup(lease.Release)
	return &guarded{proxy: proxy, session: lease.Session()}
}

// page opens a page in the guarded context.
func (g *guarded) page(t *testing.T) *browser.Page {
	t.Helper()
	pg, err := g.session.NewPage(context.Background(), browser.PageOptions{})
	require.NoError(t, err)
	return pg
}

// waitBlock waits for the proxy to record a block of rawURL and returns it.
func (g *guarded) waitBlock(t *testing.T, rawURL string) netguard.Block {
	t.Helper()
	var found netguard.Block
	require.Eventually(t, func() bool {
		for _, b := range g.proxy.Log().Blocks() {
			if b.URL == rawURL {
				found = b
				return true
			}
		}
		return false
	}, 20*time.Second, 10*time.Millisecond, "no block recorded for %s; have %v", rawURL, g.proxy.Log().Blocks())
	return found
}

// recorder is a test site that serves fixed pages and records every request
// it receives (host, path, headers).
type recorder struct {
	srv   *httptest.Server
	port  string
	mu    sync.Mutex
	seen  []*http.Request
	pages map[string]string
}

// newRecorder serves pages (path → HTML; a value starting with
// "redirect:" redirects there) until t ends.
func newRecorder(t *testing.T, pages map[string]string, extra map[string]http.Handler) *recorder {
	t.Helper()
	r := &recorder{pages: pages}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.seen = append(r.seen, req.Clone(context.Background()))
		r.mu.Unlock()
		if h, ok := extra[req.URL.Path]; ok {
			h.ServeHTTP(w, req)
			return
		}
		body, ok := r.pages[req.URL.Path]
		switch {
		case !ok:
			w.WriteHeader(http.StatusNoContent)
		case strings.HasPrefix(body, "redirect:"):
			http.Redirect(w, req, strings.TrimPrefix(body, "redirect:"), http.StatusFound)
		default:
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = w.Write([]byte(body))
		}
	}))
	t.Cleanup(r.srv.Close)
	u, err := url.Parse(r.srv.URL)
	require.NoError(t, err)
	r.port = u.Port()
	return r
}

// at is the URL of path on the recorder under host.
func (r *recorder) at(host, path string) string {
	return "http://" + net.JoinHostPort(host, r.port) + path
}

// requests returns the requests received so far.
func (r *recorder) requests() []*http.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*http.Request(nil), r.seen...)
}

// count returns how many requests were received.
func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen)
}

// waitFor waits for a request to host with path and query (the query is
// compared only when want has one) and returns it.
func (r *recorder) waitFor(t *testing.T, host, pathQuery string) *http.Request {
	t.Helper()
	var found *http.Request
	require.Eventually(t, func() bool {
		for _, req := range r.requests() {
			if hostname(req.Host) == host && (req.URL.RequestURI() == pathQuery || req.URL.Path == pathQuery) {
				found = req
				return true
			}
		}
		return false
	}, 20*time.Second, 10*time.Millisecond, "no request for %s%s", host, pathQuery)
	return found
}

func hostname(hostport string) string {
	h, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return hostport
	}
	return h
}
