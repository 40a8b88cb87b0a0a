package netguard_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/wayfinder/wayfinder/internal/guard"
	"github.com/wayfinder/wayfinder/internal/netguard"
)

// publicIP is a public-looking address the fake dialer maps to loopback, so
// tests can prove which address the proxy connected to.
const publicIP = "93.184.215.14"

// fakeResolver answers from a table; a host with several answers gives
// them in turn (the last one repeats), which simulates DNS rebinding.
type fakeResolver struct {
	mu      sync.Mutex
	answers map[string][]string // host → successive answers ("" = NXDOMAIN)
	calls   map[string]int
}

func newFakeResolver(answers map[string][]string) *fakeResolver {
	return &fakeResolver{answers: answers, calls: map[string]int{}}
}

func (r *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	seq, ok := r.answers[host]
	n := r.calls[host]
	r.calls[host]++
	if !ok || len(seq) == 0 {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	a := seq[min(n, len(seq)-1)]
	if a == "" {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return []netip.Addr{netip.MustParseAddr(a)}, nil
}

func (r *fakeResolver) lookups(host string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[host]
}

// recordingDialer records every address the proxy dials and connects
// publicIP to loopback (same port).
type recordingDialer struct {
	mu    sync.Mutex
	addrs []string
}

func (d *recordingDialer) dial(ctx context.Context, network, address string) (net.Conn, error) {
	d.mu.Lock()
	d.addrs = append(d.addrs, address)
	d.mu.Unlock()
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	if host == publicIP {
		host = "127.0.0.1"
	}
	var nd net.Dialer
	return nd.DialContext(ctx, network, net.JoinHostPort(host, port))
}

func (d *recordingDialer) dialed() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.addrs...)
}

// origin is a test server that counts the requests it receives.
type origin struct {
	*httptest.Server
	hits atomic.Int64
	port string
}

func newOrigin(t *testing.T, h http.Handler) *origin {
	t.Helper()
	o := &origin{}
	o.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.hits.Add(1)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(o.Close)
	u, err := url.Parse(o.URL)
	require.NoError(t, err)
	o.port = u.Port()
	return o
}

// at returns the URL of path on o under another host name.
func (o *origin) at(host, path string) string {
	return "http://" + net.JoinHostPort(host, o.port) + path
}

// bundle is a proxy under test with its collaborators.
type bundle struct {
	proxy    *netguard.Proxy
	resolver *fakeResolver
	dialer   *recordingDialer
	client   *http.Client
}

// setup starts a proxy for the policy (allowed, blocked) with a fake
// resolver and a recording dialer, closed when t ends. opts adjust the
// configuration.
func setup(t *testing.T, allowed, blocked []string, answers map[string][]string, opts ...func(*netguard.Config)) *bundle {
	t.Helper()
	pol, err := guard.New(allowed, blocked, false)
	require.NoError(t, err)
	b := &bundle{resolver: newFakeResolver(answers), dialer: &recordingDialer{}}
	cfg := netguard.Config{Policy: pol, Resolver: b.resolver, Dial: b.dialer.dial}
	for _, o := range opts {
		o(&cfg)
	}
	b.proxy, err = netguard.Start(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.proxy.Close()) })
	pu, err := url.Parse(b.proxy.URL())
	require.NoError(t, err)
	tr := &http.Transport{Proxy: http.ProxyURL(pu)}
	t.Cleanup(tr.CloseIdleConnections)
	b.client = &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
	return b
}

// noDNSCache makes the proxy resolve for every request.
func noDNSCache(c *netguard.Config) { c.DNSCacheTTL = -1 }
