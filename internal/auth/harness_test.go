package auth

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/browser"
	"github.com/wayfinder/wayfinder/internal/guard"
	"github.com/wayfinder/wayfinder/internal/netguard"
	"github.com/wayfinder/wayfinder/internal/pool"
	"github.com/wayfinder/wayfinder/internal/pool/pooltest"
	"github.com/wayfinder/wayfinder/internal/runner"
)

// shared is the Chromium pool the tests share, started by the first test
// that needs it and closed by TestMain.
var shared = pooltest.New("auth", 8)

// TestMain closes the shared pool and fails the package when a test leaves
// a goroutine behind.
func TestMain(m *testing.M) { pooltest.Main(m, shared, true) }

// sharedPool returns the shared pool.
func sharedPool(t *testing.T) *pool.Pool { return shared.Pool(t) }

// loopbackResolver resolves every name to 127.0.0.1: the test origins
// (app.test, api.test, other.test, sso.test) are one loopback server
// reached through the run's proxy under different host names.
type loopbackResolver struct{}

func (loopbackResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
}

// site is a multi-origin test site: handlers by path, every request
// recorded with its host.
type site struct {
	srv  *httptest.Server
	port string

	mu       sync.Mutex
	seen     []*http.Request
	handlers map[string]http.HandlerFunc
}

func newSite(t *testing.T) *site {
	t.Helper()
	s := &site{handlers: map[string]http.HandlerFunc{}}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.seen = append(s.seen, r.Clone(context.Background()))
		h := s.handlers[hostOf(r)+r.URL.Path]
		if h == nil {
			h = s.handlers[r.URL.Path]
		}
		s.mu.Unlock()
		if h == nil {
			html(w, http.StatusOK, `<!doctype html><title>`+r.URL.Path+`</title><p>`+hostOf(r)+r.URL.Path)
			return
		}
		h(w, r)
	}))
	t.Cleanup(s.srv.Close)
	_, s.port, _ = net.SplitHostPort(s.srv.Listener.Addr().String())
	return s
}

// handle serves pattern: "/path" on every host, "host/path" on one.
func (s *site) handle(pattern string, h http.HandlerFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handlers[pattern] = h
}

// at is the URL of path on host.
func (s *site) at(host, path string) string {
	return "http://" + net.JoinHostPort(host, s.port) + path
}

// requests returns the recorded requests to host with path.
func (s *site) requests(host, path string) []*http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*http.Request
	for _, r := range s.seen {
		if hostOf(r) == host && r.URL.Path == path {
			out = append(out, r)
		}
	}
	return out
}

// last returns the last request to host with path, failing without one.
func (s *site) last(t *testing.T, host, path string) *http.Request {
	t.Helper()
	var got *http.Request
	require.Eventually(t, func() bool {
		rs := s.requests(host, path)
		if len(rs) == 0 {
			return false
		}
		got = rs[len(rs)-1]
		return true
	}, 20*time.Second, 10*time.Millisecond, "no request to %s%s", host, path)
	return got
}

func hostOf(r *http.Request) string {
	h, _, err := net.SplitHostPort(r.Host)
	if err != nil {
		return r.Host
	}
	return h
}

func html(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}

// testRun is a run's browser context with its Auth: the network rules on
// a context behind a proxy, a page, and the hooks called as the runner
// calls them.
type testRun struct {
	auth    *Auth
	session *browser.Session
	page    *browser.Page

	mu      sync.Mutex
	applied []Applied
	failed  []Failure
}

// newRun builds cfg's Auth with opts (OnApplied and OnFailed recorded)
// and a browser context of the shared pool with its rules.
func newRun(t *testing.T, cfg Config, opts Options) *testRun {
	t.Helper()
	r := &testRun{}
	opts.OnApplied = func(_ context.Context, a Applied) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.applied = append(r.applied, a)
	}
	opts.OnFailed = func(_ context.Context, f Failure) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.failed = append(r.failed, f)
	}
	if opts.RunID == "" {
		opts.RunID = "run-1"
	}
	a, err := New(cfg, opts)
	require.NoError(t, err)
	r.auth = a
	r.session = newContext(t, a)
	page, err := r.session.NewPage(context.Background(), browser.PageOptions{})
	require.NoError(t, err)
	r.page = page
	return r
}

// newContext leases a context behind its own proxy (every name on
// loopback) and starts a's network rules in it.
func newContext(t *testing.T, a *Auth) *browser.Session {
	t.Helper()
	pol, err := guard.New(nil, nil, true)
	require.NoError(t, err)
	proxy, err := netguard.Start(netguard.Config{Policy: pol, Resolver: loopbackResolver{}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, proxy.Close()) })
	lease, err := sharedPool(t).Lease(context.Background(), browser.SessionOptions{ProxyServer: proxy.URL()})
	require.NoError(t, err)
	t.Cleanup(lease.Release)
	var rules browser.NetworkRules
	if a != nil {
		a.NetworkRules(&rules)
	}
	n, err := lease.Session().StartNetwork(context.Background(), rules)
	require.NoError(t, err)
	t.Cleanup(func() { _ = n.Close() })
	lease.Session().SetActionOptions(browser.ActionOptions{Timeout: 10 * time.Second})
	return lease.Session()
}

// visit navigates the run's page to url the way the runner does: the
// BeforeAction hook, the navigation, the AfterAction hook.
func (r *testRun) visit(t *testing.T, url string) (runner.HookResult, error) {
	t.Helper()
	ctx := context.Background()
	act := browser.Action{Kind: browser.ActionNavigate, URL: url}
	if err := r.auth.BeforeAction(ctx, r.page, &act); err != nil {
		return runner.HookResult{}, err
	}
	require.NoError(t, r.page.Navigate(ctx, url, 20*time.Second))
	return r.auth.AfterAction(ctx, r.page, act, nil)
}

// mustVisit is visit that must succeed.
func (r *testRun) mustVisit(t *testing.T, url string) runner.HookResult {
	t.Helper()
	hr, err := r.visit(t, url)
	require.NoError(t, err)
	return hr
}

// title is the page's title.
func (r *testRun) title(t *testing.T) string {
	t.Helper()
	_, title, err := r.page.Location(context.Background())
	require.NoError(t, err)
	return title
}

func (r *testRun) appliedEvents() []Applied {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Applied(nil), r.applied...)
}

func (r *testRun) failures() []Failure {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Failure(nil), r.failed...)
}

// requireNoSecret fails when s contains any of the secrets.
func requireNoSecret(t *testing.T, s string, secrets ...string) {
	t.Helper()
	for _, v := range secrets {
		require.NotContains(t, s, v)
	}
}

// authError asserts err is a run-ending authentication error.
func authError(t *testing.T, err error) *runner.Error {
	t.Helper()
	var re *runner.Error
	require.ErrorAs(t, err, &re)
	require.Equal(t, runner.CategoryAuthentication, re.Category)
	return re
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if strings.Contains(v, s) {
			return true
		}
	}
	return false
}
